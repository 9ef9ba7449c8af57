/* test_llm_sharded.c — sharded data parallelism and context parallelism, each on a small case
 * worked by hand in the comments: ZeRO-0/1/2/3 bytes per GPU, FSDP's gathers per block and what
 * overlaps them, the distributed optimizer's exposed last bucket and first gather, ring
 * attention's messages (count and size), PyTorch's ring (its gathers and memory passes) and causal
 * load balancing, and optimizer_sharding true
 * being zero_stage 1.
 *
 * The tiny model (llm_test_util.h) has 34,944 parameters per block and 197,952 in all. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "llm_codec.h"
#include "llm_internal.h"
#include "llm_test_util.h"
#include "test_util.h"

static llm_execution_t layout(int64_t dp, int64_t cp, int zero)
{
    llm_execution_t e = test_layout(1, 1, dp);
    e.context_par = cp;
    e.num_procs = dp * cp;
    e.attention_kernel = LLM_ATTN_KERNEL_FUSED;
    e.zero_stage = zero;
    e.optimizer_sharding = zero >= 1;
    return e;
}

static void estimate(const fathom_model_t *m, const llm_system_t *s, const llm_execution_t *e,
                     llm_result_t *r)
{
    fathom_error_t err;
    if (llm_estimate(m, s, e, r, &err))
        fail_msg("estimate: %s: %s", err.field, err.message);
}

static double state_bytes(const llm_result_t *r)
{
    const llm_stage_memory_t *f = &r->extra.stages[0];
    return f->weights + f->gradients + f->optimizer;
}

/* 197,952 parameters on each of 4 data-parallel GPUs:
 *   ZeRO-0  18 bytes each (2 + 4 + 12)                     3,563,136
 *   ZeRO-1  2 + 4 + 12/4 = 9 (Megatron's 6 + 12/DP)        1,781,568
 *   ZeRO-2  2 + 4/4 + 3 = 6, + one block's fp32 gradients
 *           being reduced, 34,944·4 = 139,776              1,327,488
 *   ZeRO-3  2/4 + 1 + 3 = 4.5, + two gathered blocks (the one computing and the one prefetched)
 *           2·34,944·2 = 139,776, + the gradient bucket     1,170,336 */
static void zero_bytes_per_gpu(void **state)
{
    (void)state;
    fathom_model_t m = tiny_model();
    llm_system_t s = unit_system(1e6);
    static const double want[4] = {3563136, 1781568, 1327488, 1170336};
    for (int zero = 0; zero <= 3; zero++) {
        llm_execution_t e = layout(4, 1, zero);
        llm_result_t r;
        estimate(&m, &s, &e, &r);
        assert_close(state_bytes(&r), want[zero], 1e-12);
    }
    /* HSDP: shards over 2 of the 4 (two replicas): ZeRO-3 bytes 2/2 + 4/2 + 12/2 = 9 per
     * parameter, + the same gathered blocks and bucket: 1,781,568 + 279,552 = 2,061,120 */
    llm_execution_t e = layout(4, 1, 3);
    e.shard_group = 2;
    llm_result_t r;
    estimate(&m, &s, &e, &r);
    assert_close(state_bytes(&r), 2061120, 1e-12);
}

/* Gradients in bfloat16 (low_precision_gradients): 2 bytes per parameter in place of 4, the
 * rest unchanged. Over the same 197,952 parameters on 4 GPUs:
 *   ZeRO-0  2 + 2 + 12 = 16 bytes each                     3,167,232
 *   ZeRO-1  2 + 2 + 3 = 7                                  1,385,664
 *   ZeRO-2  2 + 2/4 + 3 = 5.5, + one block's bf16 gradients
 *           being reduced, 34,944·2 = 69,888               1,158,624
 * and the summary's bytes per parameter says 2 (ZeRO-1) and 0.5 (ZeRO-2). Without the flag the
 * gradients are fp32 (zero_bytes_per_gpu). */
static void low_precision_gradient_bytes(void **state)
{
    (void)state;
    fathom_model_t m = tiny_model();
    llm_system_t s = unit_system(1e6);
    static const double want[3] = {3167232, 1385664, 1158624};
    static const double per_param[3] = {2, 2, 0.5};
    for (int zero = 0; zero <= 2; zero++) {
        llm_execution_t e = layout(4, 1, zero);
        e.low_precision_gradients = true;
        llm_result_t r;
        estimate(&m, &s, &e, &r);
        assert_close(state_bytes(&r), want[zero], 1e-12);
        assert_close(r.extra.grad_bytes_per_param, per_param[zero], 1e-12);
        assert_close(llm_gradient_bytes_per_param(&e), 2, 0);
    }
    /* float32 training holds 4-byte gradients either way */
    llm_execution_t e = layout(4, 1, 1);
    e.low_precision_gradients = true;
    e.datatype = LLM_DT_FLOAT32;
    assert_close(llm_gradient_bytes_per_param(&e), 4, 0);
}

/* FSDP on a network much faster than the compute: each block's gather hides behind the block
 * before it and its reduce-scatter behind the block after it, so per microbatch only the first
 * gather and the last reduce-scatter are exposed. One block's weights are 34,944·2 = 69,888
 * bytes; at 1e6 GB/s a gather or reduce-scatter over 4 (Calculon's cost: bytes/bandwidth) takes
 * 6.9888e-11 s; 2 microbatches (batch 8 over 4): exposed 2·(2·6.9888e-11) = 2.79552e-10 s.
 * Gathered per microbatch: 2 blocks forward, 1 backward (the last block is still gathered when
 * backward starts) = 3; in all 6 gathers = 4.19328e-10 s; 4 reduce-scatters. */
static void fsdp_gathers_per_block(void **state)
{
    (void)state;
    fathom_model_t m = tiny_model();
    m.vocab_size = 0; /* the blocks alone */
    llm_system_t s = unit_system(1e6);
    llm_execution_t e = layout(4, 1, 3);
    llm_result_t r;
    estimate(&m, &s, &e, &r);
    const double ag = 69888 / 1e15;
    assert_close(r.extra.dp_param_gather, 6 * ag, 1e-9);
    assert_close(r.extra.dp_grad_reduce, 4 * ag, 1e-9);
    assert_close(r.stats.dp_comm_exposed_time, 2 * (ag + ag), 1e-9);
    assert_close(r.extra.dp_exposed_first_gather, ag, 1e-9);
    assert_close(r.extra.dp_exposed_last_bucket, ag, 1e-9);
    /* On a network 1e9 times slower nothing hides: per microbatch 3 gathers and 2
     * reduce-scatters of 69,888 bytes at 1e6 bytes/s, less the microseconds of compute beside
     * them: 2 × 5 × 0.069888 s. */
    s = unit_system(1e-3);
    estimate(&m, &s, &e, &r);
    const double slow = 69888 / 1e6;
    assert_close(r.stats.dp_comm_exposed_time, 2 * 5 * slow, 1e-3);
}

/* The distributed optimizer (ZeRO-1) with data_par_overlap: gradients reduce-scattered bucket
 * by bucket (a block each) under the backward, parameters gathered under the next forward; on a
 * fast network only the last bucket (6.9888e-11 s) and the first gather are exposed. Without
 * the overlap every bucket is: 2 blocks × (reduce-scatter + gather). */
static void distributed_optimizer_buckets(void **state)
{
    (void)state;
    fathom_model_t m = tiny_model();
    m.vocab_size = 0;
    llm_system_t s = unit_system(1e6);
    llm_execution_t e = layout(4, 1, 1);
    e.data_par_overlap = true;
    llm_result_t r;
    estimate(&m, &s, &e, &r);
    const double x = 69888 / 1e15;
    assert_close(r.stats.dp_comm_exposed_time, 2 * x, 1e-9);
    e.data_par_overlap = false;
    estimate(&m, &s, &e, &r);
    assert_close(r.stats.dp_comm_exposed_time, 2 * (x + x), 1e-9);
}

/* The ring cases: the tiny model's blocks alone (no vocabulary, so only their messages count)
 * over 4 context-parallel ranks on the slow tier (1e-3 GB/s = 1e6 bytes/s) under `stack`,
 * estimated once; a test changes the execution and estimates again. */
typedef struct {
    fathom_model_t m;
    llm_system_t s;
    llm_execution_t e;
    llm_result_t r;
} ring_case_t;

static void ring_of_4(ring_case_t *t, llm_stack_t stack)
{
    t->m = tiny_model();
    t->m.vocab_size = 0;
    t->s = unit_system(1e-3);
    t->e = layout(1, 4, 0);
    t->e.stack = stack;
    estimate(&t->m, &t->s, &t->e, &t->r);
}

/* Ring attention over 4 ranks of a 16-token sequence: 4 tokens per rank, one K/V chunk is
 * 2·4 tokens·2 heads·8·2 bytes = 256 bytes. Forward passes 3 chunks, backward 3 double chunks
 * (K/V and their gradients) and hands the last dK/dV back: 3·256 + 3·512 + 256 = 2,560 bytes per
 * block and microbatch. At 1e-3 GB/s (1e6 bytes/s) that is 2.56 ms, against attention compute
 * of about a microsecond; 2 blocks × 2 microbatches → 10.24 ms exposed. Full recompute rings
 * the forward again: 2·3·256 + 3·512 + 256 = 3,328 bytes, 13.312 ms; recomputing one block of
 * the two (recompute_blocks 1) rings it again for half the blocks: 1.5·3·256 + 3·512 + 256 =
 * 2,944 bytes, 11.776 ms. */
static void ring_attention_messages(void **state)
{
    (void)state;
    ring_case_t t;
    ring_of_4(&t, LLM_STACK_MEGATRON);
    assert_close(t.r.extra.cp_comm_exposed, 4 * 2.56e-3, 1e-3);
    /* the breakdown carries it and still sums to the step */
    json_t *sum = codec_llm_summary_encode(&t.m, &t.e, &t.r);
    const json_t *b = json_object_get(sum, "time_breakdown_s");
    double total = 0;
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)b, key, v) total += json_number_value(v);
    assert_close(total, t.r.stats.total_time, 1e-12);
    assert_close(json_number_value(json_object_get(b, "context_parallel_comm")),
                 t.r.extra.cp_comm_exposed, 0);
    json_decref(sum);
    t.e.activation_recompute = LLM_RECOMPUTE_FULL;
    estimate(&t.m, &t.s, &t.e, &t.r);
    assert_close(t.r.extra.cp_comm_exposed, 4 * 3.328e-3, 1e-3);
    t.e.recompute_blocks = 1;
    estimate(&t.m, &t.s, &t.e, &t.r);
    assert_close(t.r.extra.cp_comm_exposed, 4 * 2.944e-3, 1e-3);
}

/* PyTorch's ring (llm_ring.c) on the same 4 ranks under torchtitan: repeat_kv widens K and V to
 * the 8 query heads, so a rank's K and V are 2·4 tokens·8 heads·8·2 bytes = 1,024 bytes. Forward
 * all-gathers all four ranks' (4,096 bytes: 4.096 ms at 1e6 bytes/s) and waits after step 0,
 * whose attention (about a microsecond) hides nothing; backward gathers them again (4.096 ms)
 * and passes the fp32 dK, dV (2·4·8·8·4 = 2,048 bytes, 2.048 ms) after each of the 4 steps, 3
 * of them under a step's kernel (hiding nothing) and the last waited for: 4.096 + 4·2.048 =
 * 12.288 ms. Per block and microbatch 16.384 ms; 2 blocks × 2 microbatches → 65.536 ms. Full
 * recompute gathers the forward's again: 20.48 ms → 81.92 ms. */
static void torch_ring_messages(void **state)
{
    (void)state;
    ring_case_t t;
    ring_of_4(&t, LLM_STACK_TORCHTITAN);
    assert_close(t.r.extra.cp_comm_exposed, 65.536e-3, 1e-3);
    t.e.activation_recompute = LLM_RECOMPUTE_FULL;
    estimate(&t.m, &t.s, &t.e, &t.r);
    assert_close(t.r.extra.cp_comm_exposed, 81.92e-3, 1e-3);
}

/* The ring's exposed time lengthens the pipeline bubble as block time does (llm_stages.c,
 * ring_in_bubble). Megatron's ring over 2 ranks of the 16-token sequence on the slow tier: 8
 * tokens a rank, one K/V chunk 2·8·2 heads·8·2 bytes = 512 bytes; per block and microbatch the
 * forward sends one chunk (0.512 ms at 1e6 bytes/s), the backward one double chunk and hands
 * the last dK/dV back (1.024 + 0.512 ms): x = 2.048 ms, against microseconds of compute. Two
 * pipeline stages of one block each (sends on a tier too fast to count), 1F1B: the bubble is
 * (pp − 1) = 1 pass of the stage's one block, so it grows by x to 2.048 ms (plus the block's few
 * microseconds of compute). */
static void ring_lengthens_bubble(void **state)
{
    (void)state;
    fathom_model_t m = tiny_model();
    m.vocab_size = 0;
    llm_system_t s = unit_system(1e-3);
    s.num_networks = 2;
    s.networks[1] = s.networks[0];
    s.networks[1].bandwidth_gbps = 1e9;
    llm_execution_t e = test_layout(1, 2, 1);
    e.context_par = 2;
    e.num_procs = 4;
    e.pipeline_par_net = 1;
    e.attention_kernel = LLM_ATTN_KERNEL_FUSED;
    llm_result_t r;
    estimate(&m, &s, &e, &r);
    assert_close(r.stats.bubble_time, 2.048e-3, 5e-3);
}

/* The memory passes PyTorch's ring adds to one attention pass (llm_ring.c), for 4 ranks in
 * bfloat16 (b = 2) and E = 1,000 elements of a query-shaped tensor, counted from the loop of
 * _templated_ring_attention and its backward, on the last rank (every later step whole-Q):
 *   forward, eager: 3 later steps, each Q read and O written again (4), the block output's
 *     upcast (2 + 4), the three fp32 merge ops (12 + 8 + 12), the cat of K and V (2·2·2·2 = 8):
 *     3·(4 + 6 + 32 + 8) = 150, + step 0's upcast 6 and the final downcast 6 = 162 → 162,000 B
 *   forward, compiled: 3·(4 + 4 + 2 + 4) = 42 (the call, one fused merge reading fp32 out and the
 *     bf16 block out and writing fp32 out), + 6 + 6 + one cat 8 = 62 → 62,000 B
 *   backward, eager: 3·(Q, O, dO in, dQ out 8 + dQ += 10 + two half accumulations 10 + the cat
 *     of the halves 16 + the send cat 16 + the K/V cat 8) = 3·68 = 204; step 0: zeros 12, three
 *     accumulations 30, the send cat 16 = 58; the final casts of dQ (4 + 2) and dK, dV (8 + 4)
 *     = 18 → 280 → 280,000 B
 *   backward, compiled: 3·(8 + 10 + (8 + 8 + 2)) = 108; step 0 (4 + 2) + (8 + 4) = 18; casts
 *     18; one K/V cat 8 → 152 → 152,000 B
 * and nothing for Megatron's ring, one rank or the weight-gradient pass. */
static void torch_ring_passes(void **state)
{
    (void)state;
    llm__ctx_t c = {.stack = LLM_STACK_TORCHTITAN, .context_par = 4, .bpe = 2}; /* rest 0 */
    assert_close(llm__torch_ring_bytes(&c, LLM__FW, 1000), 162000, 0);
    assert_close(llm__torch_ring_bytes(&c, LLM__AGRAD, 1000), 280000, 0);
    c.compile = true;
    assert_close(llm__torch_ring_bytes(&c, LLM__FW, 1000), 62000, 0);
    assert_close(llm__torch_ring_bytes(&c, LLM__AGRAD, 1000), 152000, 0);
    assert_close(llm__torch_ring_bytes(&c, LLM__WGRAD, 1000), 0, 0);
    c.context_par = 1;
    assert_close(llm__torch_ring_bytes(&c, LLM__FW, 1000), 0, 0);
    c.context_par = 4;
    c.stack = LLM_STACK_MEGATRON;
    assert_close(llm__torch_ring_bytes(&c, LLM__FW, 1000), 0, 0);
}

/* Causal load balancing: each rank holds two chunks (one early, one late), so every rank does
 * the same share of the causal triangle: at sequence 256 (two 128-token tiles, causal fraction
 * 3/4) a rank of 2 computes 4·1·8·128·256·8·3/4 = 6,291,456 forward FLOPs, half of one rank's
 * 12,582,912 without context parallelism; its activations are the rank's 128 tokens. */
static void causal_load_balance(void **state)
{
    (void)state;
    fathom_model_t m = tiny_model();
    m.seq_size = 256;
    llm_system_t s = unit_system(1e6);
    static const double want[2] = {12582912, 6291456};
    for (int cp = 1; cp <= 2; cp++) {
        llm_execution_t e = layout(1, cp, 0);
        llm__sizes_t z = {.batch_seq = 256 / cp};
        z.activation_size = z.batch_seq * m.hidden;
        z.seq_par_activation_size = z.activation_size;
        llm__block_t b;
        llm__build_block(&m, &s, &e, &z, &b);
        for (int i = 0; i < b.num_layers; i++)
            if (b.layers[i].kind == LLM__FUSED_ATTENTION)
                assert_close(b.layers[i].fw_flops, want[cp - 1], 0);
    }
    /* a sequence two chunks per rank cannot split is refused, naming the field */
    llm_execution_t e = layout(1, 3, 0);
    llm_result_t r;
    fathom_error_t err;
    assert_int_equal(llm_estimate(&m, &s, &e, &r, &err), -1);
    assert_string_equal(err.field, "execution.context_par");
}

/* optimizer_sharding true and zero_stage 1 read the same (the codec writes both). */
static void sharding_is_stage_one(void **state)
{
    (void)state;
    json_t *a = json_pack("{s:i,s:i,s:b}", "batch_size", 8, "num_procs", 4, "optimizer_sharding",
                          1);
    json_t *b = json_pack("{s:i,s:i,s:i}", "batch_size", 8, "num_procs", 4, "zero_stage", 1);
    json_t *c = json_pack("{s:i,s:i,s:i,s:b}", "batch_size", 8, "num_procs", 4, "zero_stage", 2,
                          "optimizer_sharding", 0);
    llm_execution_t ea, eb, ec;
    fathom_error_t err;
    assert_int_equal(codec_llm_execution_decode(a, "execution", &ea, &err), 0);
    assert_int_equal(codec_llm_execution_decode(b, "execution", &eb, &err), 0);
    assert_int_equal(memcmp(&ea, &eb, sizeof ea), 0);
    json_t *na = codec_llm_execution_encode(&ea), *nb = codec_llm_execution_encode(&eb);
    assert_true(json_equal(na, nb));
    assert_int_equal(codec_llm_execution_decode(c, "execution", &ec, &err), -1);
    assert_string_equal(err.field, "execution.zero_stage");
    json_decref(na);
    json_decref(nb);
    json_decref(a);
    json_decref(b);
    json_decref(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(zero_bytes_per_gpu),
        cmocka_unit_test(low_precision_gradient_bytes),
        cmocka_unit_test(fsdp_gathers_per_block),
        cmocka_unit_test(distributed_optimizer_buckets),
        cmocka_unit_test(ring_attention_messages),
        cmocka_unit_test(torch_ring_messages),
        cmocka_unit_test(torch_ring_passes),
        cmocka_unit_test(ring_lengthens_bubble),
        cmocka_unit_test(causal_load_balance),
        cmocka_unit_test(sharding_is_stage_one),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

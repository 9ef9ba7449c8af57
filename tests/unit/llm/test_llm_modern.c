/* test_llm_modern.c — the modern block's physical terms, each on a small case worked by hand in
 * the comments (not printed by the code): grouped-query K/V widths, gated-MLP FLOPs, fused
 * attention bytes and FLOPs, the output layer on the last stage and the pipeline imbalance it
 * causes, FP8 weight copies, Megatron's bytes per parameter, parameter counts of the presets
 * (exact, from /v1/transformer's analytic model and from the step model's weights), and that a
 * model giving none of the new fields is Calculon's block.
 *
 * The tiny system runs everything at 1 TFLOP/s with efficiency 1 and memory and networks so fast
 * that their time vanishes, so a stage's time is its FLOPs / 1e12. */
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
#include "model_codec.h"
#include "test_util.h"
#include "llm_test_util.h"
#include "transformer.h"

static llm_execution_t one_gpu(void)
{
    llm_execution_t e = test_layout(1, 1, 1);
    e.batch_size = 4;
    e.fused_activation = true;
    return e;
}

static void build(const fathom_model_t *m, const llm_system_t *s, const llm_execution_t *e,
                  llm__block_t *b)
{
    llm__sizes_t z = {.batch_seq = e->microbatch_size * m->seq_size};
    z.activation_size = z.batch_seq * m->hidden;
    z.seq_par_activation_size = z.batch_seq / e->tensor_par * m->hidden;
    llm__build_block(m, s, e, &z, b);
}

static const llm__layer_t *find(const llm__block_t *b, llm__kind_t kind, int nth)
{
    for (int i = 0; i < b->num_layers; i++)
        if (b->layers[i].kind == kind && nth-- == 0)
            return &b->layers[i];
    fail_msg("layer kind %d #%d not in the block", (int)kind, nth);
    return NULL;
}

/* K and V with 2 key/value heads of 8 on tensor_par 2: one head per rank, so K is 64×8 = 512
 * weights per rank and Q is 64×(8·8/2) = 2048. On tensor_par 4 the two heads cannot be split
 * four ways: each rank keeps one (replicated), still 512. Multi-query (attention_type) is 1. */
static void gqa_kv_widths(void **state)
{
    (void)state;
    fathom_model_t m = tiny_model();
    llm_system_t s = unit_system(1e15);
    llm_execution_t e = one_gpu();
    llm__block_t b;
    e.tensor_par = e.num_procs = 2;
    build(&m, &s, &e, &b);
    assert_close(find(&b, LLM__LINEAR, 0)->weight_space, 2048, 0);
    assert_close(find(&b, LLM__LINEAR, 1)->weight_space, 512, 0);
    assert_close(find(&b, LLM__LINEAR, 2)->weight_space, 512, 0);
    e.tensor_par = e.num_procs = 4;
    build(&m, &s, &e, &b);
    assert_int_equal(llm__kv_heads_per_rank(&m, &e), 1);
    assert_close(find(&b, LLM__LINEAR, 1)->weight_space, 512, 0);
    e.tensor_par = e.num_procs = 1;
    build(&m, &s, &e, &b);
    assert_close(find(&b, LLM__LINEAR, 1)->weight_space, 64 * 16, 0); /* 2 heads of 8 */
}

/* Gated MLP, 16 tokens: the fused gate+up GEMM is 2·16·64·256 = 524,288 FLOPs, the down GEMM
 * 2·16·128·64 = 262,144, SwiGLU 6·16·128 = 12,288 forward and 12·2048 = 24,576 backward; its
 * weights 64·256 + 128·64 = 24,576 (3 matrices of 64×128). */
static void gated_mlp_flops(void **state)
{
    (void)state;
    fathom_model_t m = tiny_model();
    llm_system_t s = unit_system(1e15);
    llm_execution_t e = one_gpu();
    llm__block_t b;
    build(&m, &s, &e, &b);
    const llm__layer_t *up = find(&b, LLM__LINEAR, 4), *down = find(&b, LLM__LINEAR, 5);
    const llm__layer_t *act = find(&b, LLM__GATED_ACT, 0);
    assert_close(up->fw_flops, 524288, 0);
    assert_close(down->fw_flops, 262144, 0);
    assert_close(act->fw_flops, 12288, 0);
    assert_close(act->agrad_flops, 24576, 0);
    assert_close(up->weight_space + down->weight_space, 24576, 0);
}

/* Fused attention, batch 1, s 16, 8 query heads and 2 key/value heads of 8, bf16:
 *   Q = O = 16·8·8 = 1024 elements, K = V = 16·2·8 = 256, LSE = 8·16 fp32 = 512 bytes
 *   forward bytes (1024 + 256 + 256 + 1024)·2 + 512 = 5,632 (no 16×16 score tensor)
 *   backward bytes (Q,K,V,O,dO,dQ,dK,dV) (4·1024 + 4·256)·2 + 512 = 10,752
 *   forward FLOPs 4·8·16·16·8 = 65,536 (one 128-token tile: the causal mask saves nothing),
 *   backward 2.5× = 163,840; at s = 256 (2 tiles) the causal fraction is 3/4. */
static void fused_attention_bytes(void **state)
{
    (void)state;
    fathom_model_t m = tiny_model();
    llm_system_t s = unit_system(1e15);
    llm_execution_t e = one_gpu();
    e.attention_kernel = LLM_ATTN_KERNEL_FUSED;
    llm__block_t b;
    build(&m, &s, &e, &b);
    const llm__layer_t *fa = find(&b, LLM__FUSED_ATTENTION, 0);
    llm__ctx_t c = {.sys = &s, .bpe = 2, .optim_shards = 1};
    assert_close(llm__layer_mem_accessed(fa, &c, LLM__FW), 5632, 0);
    assert_close(llm__layer_mem_accessed(fa, &c, LLM__AGRAD), 10752, 0);
    assert_close(fa->fw_flops, 65536, 0);
    assert_close(fa->agrad_flops, 163840, 0);
    for (int i = 0; i < b.num_layers; i++)
        assert_true(b.layers[i].kind != LLM__SOFTMAX && b.layers[i].kind != LLM__BATCH_MATMUL);
    m.seq_size = 256;
    assert_close(llm__causal_fraction(&m), 0.75, 0);
}

/* The output layer on the last stage and the imbalance: with vocab 1000 and RMSNorm the last
 * stage adds per microbatch (16 tokens)
 *   final norm 4·1024 + 8·1024 + 2·1024 = 14,336; output GEMM 3 × 2·16·64·1000 = 6,144,000;
 *   cross-entropy 5·16,000 + 2·16,000 = 112,000    → t_L = 6,270,336 FLOPs = 6.270336 µs
 * and the first stage's embedding a scatter-add of 16·64 = 1,024 gradients → t_F = 1.024 ns.
 * With pipeline_par 2 and 4 microbatches the last stage sets the pace:
 *   Δstep = 4·t_L + t_F + max(optimizer_F, optimizer_L)
 * with the optimizer at 11 FLOPs per parameter: L holds 64 + 64,000, F 64,000 → 704,704 FLOPs.
 * With pipeline_par 1 both sit on the one stage: Δ = 4·(t_L + t_F) + 11·(128,064) FLOPs. */
static double step(const fathom_model_t *m, const llm_execution_t *e, llm_result_t *r)
{
    llm_system_t s = unit_system(1e15);
    fathom_error_t err;
    if (llm_estimate(m, &s, e, r, &err))
        fail_msg("estimate: %s: %s", err.field, err.message);
    return r->stats.total_time;
}

static void output_layer_imbalance(void **state)
{
    (void)state;
    fathom_model_t m = tiny_model(), bare = tiny_model();
    bare.vocab_size = 0;
    llm_execution_t e = one_gpu();
    e.pipeline_par = e.num_procs = 2;
    llm_result_t r, r0;
    double delta = step(&m, &e, &r) - step(&bare, &e, &r0);
    assert_close(delta, 4 * 6.270336e-6 + 1.024e-9 + 704704e-12, 1e-9);
    assert_int_equal(r.extra.heaviest_stage, 1);
    /* the last stage keeps the fp32 logits (16·1000·4 bytes) of its one microbatch in flight */
    assert_true(r.extra.stages[1].activations - r0.extra.stages[1].activations >= 64000);
    e.pipeline_par = e.num_procs = 1;
    delta = step(&m, &e, &r) - step(&bare, &e, &r0);
    assert_close(delta, 4 * (6.270336e-6 + 1.024e-9) + 11 * 128064e-12, 1e-9);
}

/* FP8: GEMMs at the FP8 rate (2 TFLOP/s here) and two FP8 copies (weight and transpose) of every
 * block linear's weights. Per block the linears hold 64·(64 + 16 + 16) + 64·64 = 10,240
 * attention and 24,576 MLP weights = 34,816; two blocks 69,632 → +139,264 bytes. */
static void fp8_weights(void **state)
{
    (void)state;
    fathom_model_t m = tiny_model();
    llm_execution_t e = one_gpu();
    llm_result_t r8, r16;
    step(&m, &e, &r16);
    e.fp8 = true;
    step(&m, &e, &r8);
    assert_close(r8.extra.stages[0].weights - r16.extra.stages[0].weights, 139264, 0);
    assert_true(r8.stats.fw_time < r16.stats.fw_time);
    /* FP8 primary weights: the 69,632 linear weights lose their bf16 copy (2 bytes each,
     * 139,264 bytes) and keep the two FP8 ones: 2 + 2 bytes become 2, as many bytes as bf16
     * alone; gradients, optimizer and time unchanged. */
    llm_result_t rp;
    e.fp8_params = true;
    step(&m, &e, &rp);
    assert_close(r8.extra.stages[0].weights - rp.extra.stages[0].weights, 139264, 0);
    assert_close(rp.extra.stages[0].weights, r16.extra.stages[0].weights, 0);
    assert_close(rp.extra.stages[0].gradients, r8.extra.stages[0].gradients, 0);
    assert_close(rp.extra.stages[0].optimizer, r8.extra.stages[0].optimizer, 0);
    assert_close(rp.stats.total_time, r8.stats.total_time, 0);
    /* without FP8 training there are no FP8 weights to hold */
    fathom_error_t err;
    llm_system_t s = unit_system(1e15);
    e.fp8 = false;
    assert_int_equal(llm_estimate(&m, &s, &e, &rp, &err), -1);
    assert_string_equal(err.field, "execution.fp8_params");
}

/* Megatron's mixed-precision bytes per parameter: 2 (bf16 weights) + 4 (fp32 gradients) + 12
 * (fp32 master, two moments) = 18 without the distributed optimizer; 6 + 12/DP with it. */
static void bytes_per_parameter(void **state)
{
    (void)state;
    fathom_model_t m = tiny_model();
    llm_execution_t e = one_gpu();
    llm_result_t r;
    step(&m, &e, &r);
    assert_close(r.extra.weight_bytes_per_param + r.extra.grad_bytes_per_param +
                     r.extra.optimizer_bytes_per_param, 18, 0);
    e.data_par = e.num_procs = 4;
    e.batch_size = 8;
    e.optimizer_sharding = true;
    step(&m, &e, &r);
    assert_close(r.extra.weight_bytes_per_param + r.extra.grad_bytes_per_param +
                     r.extra.optimizer_bytes_per_param, 6 + 12.0 / 4, 0);
    /* and the stage's weights are exactly the model's parameters (one GPU holds them all) */
    tf_params_t p;
    tf_params(&m, &p);
    assert_close(r.extra.stages[0].weights / 2, p.total, 0);
    m.tied_embeddings = true;
    e = one_gpu();
    step(&m, &e, &r);
    tf_params(&m, &p);
    assert_close(r.extra.stages[0].weights / 2, p.total, 0);
}

/* The six presets' parameter counts, exact, from the analytic model and from an estimate's
 * summary (the published configs' totals). */
static void preset_parameters(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        double total;
    } want[] = {{"llama3-8B", 8030261248.0},       {"llama3-70B", 70553706496.0},
                {"llama3.1-405B", 405853388800.0}, {"mistral-7B-v0.3", 7248023552.0},
                {"qwen2.5-7B", 7615616512.0},      {"qwen2.5-72B", 72706203648.0}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        fathom_model_t m;
        fathom_error_t err;
        json_t *name = json_string(want[i].name);
        assert_int_equal(codec_model_decode(name, "model", presets, &m, &err), 0);
        json_decref(name);
        tf_params_t p;
        tf_params(&m, &p);
        assert_close(p.total, want[i].total, 0);
        /* the step model holds the same count on one processor */
        llm_system_t s = unit_system(1e15);
        llm_execution_t e = one_gpu();
        e.batch_size = 1;
        llm_result_t r;
        assert_int_equal(llm_estimate(&m, &s, &e, &r, &err), 0);
        assert_close(r.extra.stages[0].weights / 2, want[i].total, 0);
        json_t *summary = codec_llm_summary_encode(&m, &e, &r);
        assert_close(json_number_value(json_object_get(summary, "parameters_total")),
                     want[i].total, 0);
        json_decref(summary);
    }
}

/* A model object with none of the new fields decodes as Calculon's block and encodes back
 * without them; one new field makes it modern. */
static void calculon_block_reading(void **state)
{
    (void)state;
    fathom_model_t m;
    fathom_error_t err;
    json_t *v = json_pack("{s:i,s:i,s:i,s:i}", "hidden", 64, "seq_size", 16, "attn_heads", 8,
                          "num_blocks", 2);
    assert_int_equal(codec_model_decode(v, "model", presets, &m, &err), 0);
    assert_true(m.calculon_block);
    json_t *enc = codec_model_encode(&m);
    assert_null(json_object_get(enc, "kv_heads"));
    json_decref(enc);
    json_object_set_new(v, "kv_heads", json_integer(2));
    assert_int_equal(codec_model_decode(v, "model", presets, &m, &err), 0);
    assert_false(m.calculon_block);
    enc = codec_model_encode(&m);
    assert_int_equal(json_integer_value(json_object_get(enc, "kv_heads")), 2);
    assert_string_equal(json_string_value(json_object_get(enc, "norm")), "layernorm");
    json_decref(enc);
    json_object_set_new(v, "kv_heads", json_integer(3));
    assert_int_equal(codec_model_decode(v, "model", presets, &m, &err), -1);
    assert_string_equal(err.field, "model.kv_heads");
    json_decref(v);
}

/* Full recompute of one block in four (recompute_blocks 1, tiny model with 4 blocks, one stage,
 * 4 microbatches of 1, one in flight), worked from the block's own figures:
 *   recompute   one block per microbatch reruns its forward: 4 · block_fw_time (every block:
 *               16 · block_fw_time)
 *   checkpoint  a recomputed block keeps its input, s·h·2 bytes = 16·64·2 = 2048; one of them
 *   storage     the 3 others keep what a block without recompute keeps (S, with no recompute):
 *               activations = W + 2048 + (3/4)·S·(4 − 1) = W + 2048 + 2.25·S
 *               (Calculon's stage formula with its − 1 for the block being computed). */
static void partial_block_recompute(void **state)
{
    (void)state;
    fathom_model_t m = tiny_model();
    m.num_blocks = 4;
    llm_system_t s = unit_system(100);
    llm_execution_t e = one_gpu();
    llm_result_t none, full, part;
    fathom_error_t err;
    assert_int_equal(llm_estimate(&m, &s, &e, &none, &err), 0);
    e.activation_recompute = LLM_RECOMPUTE_FULL;
    assert_int_equal(llm_estimate(&m, &s, &e, &full, &err), 0);
    e.recompute_blocks = 1;
    assert_int_equal(llm_estimate(&m, &s, &e, &part, &err), 0);

    const double block_fw = none.stats.block_fw_time;
    assert_true(block_fw > 0);
    assert_close(full.stats.recompute_time, 16 * block_fw, 1e-12);
    assert_close(part.stats.recompute_time, 4 * block_fw, 1e-12);
    assert_close(full.stats.block_act_checkpoint_size, 2048, 0);
    const double W = none.stats.block_act_working_space, S = none.stats.block_act_storage_space;
    assert_true(S > 2048);
    assert_close(full.stats.act_space + full.stats.act_checkpoint_size, W + 4 * 2048, 1e-12);
    assert_close(part.stats.act_space + part.stats.act_checkpoint_size, W + 2048 + 2.25 * S,
                 1e-12);
    /* the stage table says the same, the outer layers' working space aside */
    const double outer = full.extra.stages[0].activations - (W + 4 * 2048);
    assert_close(part.extra.stages[0].activations, W + 2048 + 2.25 * S + outer, 1e-12);
    /* the rest of the step is untouched: only the recompute line moves */
    assert_close(part.stats.total_time - full.stats.total_time, -12 * block_fw, 1e-9);

    /* refusals, each naming the field */
    const struct {
        llm_recompute_t rec;
        int64_t n;
        bool offload, calculon;
        fathom_code_t code;
    } bad[] = {
        {LLM_RECOMPUTE_FULL, 5, false, false, FATHOM_E_INFEASIBLE_EXECUTION}, /* > 4 per chunk */
        {LLM_RECOMPUTE_NONE, 1, false, false, FATHOM_E_INVALID_FIELD},
        {LLM_RECOMPUTE_ATTN_ONLY, 1, false, false, FATHOM_E_INVALID_FIELD},
        {LLM_RECOMPUTE_FULL, 1, true, false, FATHOM_E_INVALID_FIELD},
        {LLM_RECOMPUTE_FULL, 1, false, true, FATHOM_E_INVALID_FIELD},
        {LLM_RECOMPUTE_FULL, -1, false, false, FATHOM_E_INVALID_FIELD},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fathom_model_t mm = m;
        llm_execution_t ee = e;
        ee.activation_recompute = bad[i].rec;
        ee.recompute_blocks = bad[i].n;
        ee.activations_offload = bad[i].offload;
        if (bad[i].calculon) {
            mm.calculon_block = true;
            mm.kv_heads = 0;
            mm.gated_mlp = false;
            mm.norm = MODEL_NORM_LAYERNORM;
            mm.vocab_size = 0;
        }
        llm_result_t r;
        assert_int_equal(llm_estimate(&mm, &s, &ee, &r, &err), -1);
        assert_int_equal(err.code, bad[i].code);
        assert_string_equal(err.field, "execution.recompute_blocks");
    }
}

/* Uneven interleaved chunks (modern block): 14 blocks on 2 stages are 7 per stage, in 2 chunks
 * of 4 and 3 (Megatron's uneven pipeline layouts). No output layer (vocab 0) and 4 microbatches
 * of 1 (a multiple of the stages), on the unit system with a fast network, so with B the
 * forward plus backward time of one block:
 *   compute     the stage runs 7 blocks per microbatch whatever the chunks: the forward and
 *               backward lines equal the uninterleaved run's
 *   bubble      (pp − 1) chunks of the mean 7/2 blocks: (2 − 1)·3.5·B, half the 7·B of vp 1
 *   recompute   the first N blocks of each chunk: N = 2 reruns 2 + 2 = 4 of the 7 blocks, 4/7
 *               of full recompute's line; N = 4 reruns 4 + 3 = 7, all of it; N = 5 is more than
 *               the largest chunk holds and is refused
 * Calculon's block keeps Calculon's rule that the chunks divide the stage. */
static void uneven_interleaved_chunks(void **state)
{
    (void)state;
    fathom_model_t m = tiny_model();
    m.num_blocks = 14;
    m.vocab_size = 0;
    llm_system_t s = unit_system(1e15);
    llm_execution_t e = test_layout(1, 2, 1);
    e.batch_size = 4;
    e.fused_activation = true;
    llm_result_t flat, inter, full, two, four;
    fathom_error_t err;
    assert_int_equal(llm_estimate(&m, &s, &e, &flat, &err), 0);
    e.pipeline_interleaving = 2;
    assert_int_equal(llm_estimate(&m, &s, &e, &inter, &err), 0);
    assert_int_equal(inter.blocks_per_proc, 7);

    const double B = flat.stats.block_fw_time + flat.stats.block_agrad_time +
                     flat.stats.block_wgrad_time;
    assert_true(B > 0);
    assert_close(inter.stats.fw_time, flat.stats.fw_time, 1e-12);
    assert_close(inter.stats.bw_time, flat.stats.bw_time, 1e-12);
    assert_close(flat.stats.bubble_time, 7 * B, 1e-9);
    assert_close(inter.stats.bubble_time, 3.5 * B, 1e-9);

    e.activation_recompute = LLM_RECOMPUTE_FULL;
    assert_int_equal(llm_estimate(&m, &s, &e, &full, &err), 0);
    e.recompute_blocks = 2;
    assert_int_equal(llm_estimate(&m, &s, &e, &two, &err), 0);
    e.recompute_blocks = 4;
    assert_int_equal(llm_estimate(&m, &s, &e, &four, &err), 0);
    assert_true(full.stats.recompute_time > 0);
    assert_close(two.stats.recompute_time, full.stats.recompute_time * 4 / 7, 1e-12);
    assert_close(four.stats.recompute_time, full.stats.recompute_time, 1e-12);
    e.recompute_blocks = 5;
    assert_int_equal(llm_estimate(&m, &s, &e, &four, &err), -1);
    assert_string_equal(err.field, "execution.recompute_blocks");

    fathom_model_t c = m;
    c.calculon_block = true;
    c.kv_heads = 0;
    c.gated_mlp = false;
    c.norm = MODEL_NORM_LAYERNORM;
    llm_execution_t ce = test_layout(1, 2, 1);
    ce.batch_size = 4;
    ce.pipeline_interleaving = 2;
    assert_int_equal(llm_estimate(&c, &s, &ce, &four, &err), -1);
    assert_string_equal(err.field, "execution.pipeline_interleaving");
    ce.pipeline_interleaving = 7; /* 7 chunks of one block each divide the stage */
    assert_int_equal(llm_estimate(&c, &s, &ce, &four, &err), 0);
}

/* Sliding-window attention, sequence 1024 (8 tiles of 128), 4 blocks, window 128 with every 2nd
 * block full (GPT-OSS's pattern): a windowed block's query tile i computes its own tile and the
 * one before (the tile's first query looks 127 tokens back), 1 + 7·2 = 15 of 64 tiles; a causal
 * block 8·9/2 = 36. Averaged: (2·36 + 2·15)/(4·64) = 102/256, so the fused kernel's forward
 * FLOPs are 4·8·1024·1024·8·102/256 = 106,954,752. A window of 1 token keeps 8 tiles of 64 in
 * every block (full_attention_every 0); one as long as the sequence is causal. */
static void sliding_window_tiles(void **state)
{
    (void)state;
    fathom_model_t m = tiny_model();
    m.seq_size = 1024;
    m.num_blocks = 4;
    m.sliding_window = 128;
    m.full_attention_every = 2;
    assert_close(llm__causal_fraction(&m), 102.0 / 256, 1e-15);
    llm_system_t s = unit_system(1e15);
    llm_execution_t e = one_gpu();
    e.attention_kernel = LLM_ATTN_KERNEL_FUSED;
    llm__block_t b;
    build(&m, &s, &e, &b);
    assert_close(find(&b, LLM__FUSED_ATTENTION, 0)->fw_flops, 106954752, 1e-15);
    m.sliding_window = 1;
    m.full_attention_every = 0;
    assert_close(llm__causal_fraction(&m), 8.0 / 64, 1e-15);
    m.sliding_window = 1024;
    assert_close(llm__causal_fraction(&m), 36.0 / 64, 1e-15);
    /* the model FLOPs stay Megatron's (num_floating_point_operations counts the causal
     * triangle whatever the window) */
    fathom_model_t causal = m;
    causal.sliding_window = 0;
    m.sliding_window = 128;
    assert_true(llm_model_flops(&m, 4, true) == llm_model_flops(&causal, 4, true));
    /* and the step is faster than without the window */
    llm_result_t rw, rc;
    fathom_error_t err;
    assert_int_equal(llm_estimate(&m, &s, &e, &rw, &err), 0);
    assert_int_equal(llm_estimate(&causal, &s, &e, &rc, &err), 0);
    assert_true(rw.stats.total_time < rc.stats.total_time);
    /* ring attention over a window is refused, naming the field */
    e.context_par = 2;
    e.num_procs = 2;
    assert_int_equal(llm_estimate(&m, &s, &e, &rw, &err), -1);
    assert_string_equal(err.field, "execution.context_par");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gqa_kv_widths),          cmocka_unit_test(gated_mlp_flops),
        cmocka_unit_test(fused_attention_bytes),  cmocka_unit_test(output_layer_imbalance),
        cmocka_unit_test(fp8_weights),            cmocka_unit_test(bytes_per_parameter),
        cmocka_unit_test(preset_parameters),      cmocka_unit_test(calculon_block_reading),
        cmocka_unit_test(partial_block_recompute),
        cmocka_unit_test(uneven_interleaved_chunks), cmocka_unit_test(sliding_window_tiles),
    };
    return cmocka_run_group_tests(tests, load_presets, free_presets);
}

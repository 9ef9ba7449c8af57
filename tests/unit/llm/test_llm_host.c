/* test_llm_host.c — the host launch model (core/llm/llm_host.c): launches counted per block and
 * part, their host time under each CUDA-graph scope, and a step that waits on its host, each
 * worked by hand in the comments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "llm_codec.h"
#include "llm_host.h"
#include "llm_internal.h"
#include "llm_test_util.h"
#include "test_util.h"

static fathom_model_t tiny_moe(void)
{
    fathom_model_t m = tiny_model();
    m.moe = (model_moe_t){.num_experts = 8, .top_k = 2, .expert_feedforward = 128, .every = 1};
    return m;
}

static double sum(const llm_host_pass_t *p)
{
    double n = 0;
    for (int i = 0; i < LLM_HOST__PARTS; i++)
        n += p->launches[i];
    return n;
}

/* Launches per block and microbatch (llm_host.c's table), Megatron with Transformer Engine:
 *   dense, TP 1, BF16: forward attention 6 + MLP 5 = 11, backward 10 + 10 = 20; FP8 adds 2 each
 *   way (one to each part: 13, 22); TP 2 adds the all-gathers and reduce-scatters, 4 each way.
 *   MoE with 8 experts over EP 2 (4 local), alltoall dispatcher, BF16: forward attention 6,
 *   router 7, preprocessing 4 + 1 (the counts copied to the host), rest 9 + 4·2 = 17: 35;
 *   backward 10 + 4 + 0 + (10 + 4·4) = 40. FP8 (current scaling, the default): rest
 *   9 + 4·2 + 4·8 = 49 forward, 10 + 4·4 + 4·8 = 58 backward (fp8_expert_quantization),
 *   attention 7 and 11. The flex dispatcher copies nothing to the host: 4.
 *   Multi-latent attention adds 5 forward and 10 backward to the attention. */
static void launch_counts(void **state)
{
    (void)state;
    fathom_model_t dense = tiny_model(), moe = tiny_moe();
    llm_execution_t e = test_layout(1, 1, 2);
    e.expert_par = 2;
    llm_host_pass_t p;
    llm_host_block_pass(&dense, &e, false, false, &p);
    assert_close(p.launches[LLM_HOST_ATTENTION], 6, 0);
    assert_close(p.launches[LLM_HOST_REST], 5, 0);
    assert_close(sum(&p), 11, 0);
    llm_host_block_pass(&dense, &e, false, true, &p);
    assert_close(sum(&p), 20, 0);
    e.fp8 = true;
    llm_host_block_pass(&dense, &e, false, false, &p);
    assert_close(sum(&p), 13, 0);
    llm_host_block_pass(&dense, &e, false, true, &p);
    assert_close(sum(&p), 22, 0);
    e.fp8 = false;
    e.tensor_par = 2;
    llm_host_block_pass(&dense, &e, false, false, &p);
    assert_close(sum(&p), 15, 0);
    e.tensor_par = 1;

    llm_host_block_pass(&moe, &e, true, false, &p);
    assert_close(p.launches[LLM_HOST_ATTENTION], 6, 0);
    assert_close(p.launches[LLM_HOST_ROUTER], 7, 0);
    assert_close(p.launches[LLM_HOST_PREPROCESS], 5, 0);
    assert_close(p.launches[LLM_HOST_REST], 17, 0);
    llm_host_block_pass(&moe, &e, true, true, &p);
    assert_close(p.launches[LLM_HOST_PREPROCESS], 0, 0);
    assert_close(sum(&p), 40, 0);
    e.fp8 = true;
    llm_host_block_pass(&moe, &e, true, false, &p);
    assert_close(p.launches[LLM_HOST_REST], 49, 0);
    assert_close(p.launches[LLM_HOST_ATTENTION], 7, 0);
    llm_host_block_pass(&moe, &e, true, true, &p);
    assert_close(p.launches[LLM_HOST_REST], 58, 0);
    assert_close(p.launches[LLM_HOST_ATTENTION], 11, 0);
    e.moe_dispatcher = LLM_MOE_DISPATCH_FLEX;
    llm_host_block_pass(&moe, &e, true, false, &p);
    assert_close(p.launches[LLM_HOST_PREPROCESS], 4, 0);
    /* an MoE model's dense block counts as a dense block */
    llm_host_block_pass(&moe, &e, false, false, &p);
    assert_close(sum(&p), 13, 0);
    /* multi-latent attention: its six projections and norms for the QKV GEMM, 5 more forward
     * and 10 more backward, all in the attention (BF16: 6 + 5 = 11 and 10 + 10 = 20) */
    fathom_model_t mla = tiny_model();
    mla.mla.present = true;
    e.fp8 = false;
    llm_host_block_pass(&mla, &e, false, false, &p);
    assert_close(p.launches[LLM_HOST_ATTENTION], 11, 0);
    assert_close(p.launches[LLM_HOST_REST], 5, 0);
    llm_host_block_pass(&mla, &e, false, true, &p);
    assert_close(p.launches[LLM_HOST_ATTENTION], 20, 0);
}

/* FP8 quantization of the experts' inputs and output gradients by recipe (Transformer Engine's
 * GroupedLinear at 2.9–2.14), the MoE block's rest with 4 local experts (8 over EP 2), forward
 * 9 + 4·2 GEMMs = 17 and backward 10 + 4·4 = 26 before it:
 *   current    4 kernels a linear and expert (zero amax, amax, scale, cast-transpose), two
 *              linears: 4·8 = 32 each way: 49 forward, 58 backward
 *   mxfp8      one kernel a linear and expert: 4·2 = 8: 25 and 34; blockwise the same
 *   delayed    one multi-tensor cast-transpose a linear for up to 64 experts: 2: 19 and 28;
 *              with 256 experts over EP 2 (128 local) 2·ceil(128/64) = 4: forward
 *              9 + 128·2 + 4 = 269
 * On a host of 1 ms a launch, current scaling's forward rest is 49 ms against MXFP8's 25 ms. */
static void fp8_expert_quantization(void **state)
{
    (void)state;
    fathom_model_t moe = tiny_moe();
    llm_execution_t e = test_layout(1, 1, 2);
    e.expert_par = 2;
    e.fp8 = true;
    llm_host_pass_t p;
    const struct {
        llm_fp8_recipe_t recipe;
        double fw, bw;
    } cases[] = {{LLM_FP8_CURRENT, 49, 58},
                 {LLM_FP8_MXFP8, 25, 34},
                 {LLM_FP8_BLOCKWISE, 25, 34},
                 {LLM_FP8_DELAYED, 19, 28}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        e.fp8_recipe = cases[i].recipe;
        llm_host_block_pass(&moe, &e, true, false, &p);
        assert_close(p.launches[LLM_HOST_REST], cases[i].fw, 0);
        llm_host_block_pass(&moe, &e, true, true, &p);
        assert_close(p.launches[LLM_HOST_REST], cases[i].bw, 0);
    }
    llm_system_t s = unit_system(1e15);
    s.host_launch_s = 1e-3;
    llm_host_pass_t only_rest = {0};
    e.fp8_recipe = LLM_FP8_CURRENT;
    llm_host_block_pass(&moe, &e, true, false, &p);
    only_rest.launches[LLM_HOST_REST] = p.launches[LLM_HOST_REST];
    assert_close(llm_host_pass_time(&s, LLM_GRAPHS_NONE, &only_rest), 49e-3, 1e-12);
    e.fp8_recipe = LLM_FP8_MXFP8;
    llm_host_block_pass(&moe, &e, true, false, &p);
    only_rest.launches[LLM_HOST_REST] = p.launches[LLM_HOST_REST];
    assert_close(llm_host_pass_time(&s, LLM_GRAPHS_NONE, &only_rest), 25e-3, 1e-12);
    /* 128 local experts: two multi-tensor launches for each linear */
    moe.moe.num_experts = 256;
    e.fp8_recipe = LLM_FP8_DELAYED;
    llm_host_block_pass(&moe, &e, true, false, &p);
    assert_close(p.launches[LLM_HOST_REST], 269, 0);
    /* BF16 quantizes nothing */
    e.fp8 = false;
    e.fp8_recipe = LLM_FP8_CURRENT;
    llm_host_block_pass(&moe, &e, true, false, &p);
    assert_close(p.launches[LLM_HOST_REST], 9 + 128 * 2, 0);
}

/* The MoE block's BF16 alltoall forward (6 attention, 7 router, 5 preprocessing, 17 rest: 35
 * launches) on a host of 10 µs an eager launch and 1 µs a replayed one:
 *   none       35·1e-5                    = 3.5e-4 s
 *   attention  29·1e-5 + 6·1e-6           = 2.96e-4
 *   router     23·1e-5 + 12·1e-6          = 2.42e-4   (router and preprocessing replayed)
 *   partial    17·1e-5 + 18·1e-6          = 1.88e-4
 *   full       35·1e-6                    = 3.5e-5 */
static void graph_scopes(void **state)
{
    (void)state;
    fathom_model_t m = tiny_moe();
    llm_execution_t e = test_layout(1, 1, 2);
    e.expert_par = 2;
    llm_host_pass_t p;
    llm_host_block_pass(&m, &e, true, false, &p);
    llm_system_t s = unit_system(1e15);
    s.host_launch_s = 1e-5;
    s.graph_launch_s = 1e-6;
    assert_close(llm_host_pass_time(&s, LLM_GRAPHS_NONE, &p), 3.5e-4, 1e-12);
    assert_close(llm_host_pass_time(&s, LLM_GRAPHS_ATTENTION, &p), 2.96e-4, 1e-12);
    assert_close(llm_host_pass_time(&s, LLM_GRAPHS_ROUTER, &p), 2.42e-4, 1e-12);
    assert_close(llm_host_pass_time(&s, LLM_GRAPHS_PARTIAL, &p), 1.88e-4, 1e-12);
    assert_close(llm_host_pass_time(&s, LLM_GRAPHS_FULL, &p), 3.5e-5, 1e-12);
}

/* A host-bound block: the tiny dense model (2 blocks, one stage, 2 microbatches) on the unit
 * system, whose GPU runs a block in a few microseconds, with a host of 1 ms a launch. Per
 * block and microbatch the host takes 11 ms forward and 20 ms backward; the step waits
 * 2 blocks · 2 microbatches · (31 ms − the block's GPU time) on it: 0.124 s less 4 GPU passes.
 * CUDA graphs over the attention (replayed for free here) leave 5 + 10 = 15 eager launches:
 * 4·(15 ms − GPU). A host of 1 ps a launch never holds the GPU up. */
static void host_bound_block(void **state)
{
    (void)state;
    fathom_model_t m = tiny_model();
    llm_system_t s = unit_system(1e15);
    llm_execution_t e = test_layout(1, 1, 1);
    llm_result_t r0, r;
    fathom_error_t err;
    assert_int_equal(llm_estimate(&m, &s, &e, &r0, &err), 0);
    assert_close(r0.extra.host_exposed, 0, 0);
    const double gpu = r0.stats.block_fw_time + r0.stats.block_agrad_time +
                       r0.stats.block_wgrad_time;
    assert_true(gpu < 1e-5);
    s.host_launch_s = 1e-3;
    assert_int_equal(llm_estimate(&m, &s, &e, &r, &err), 0);
    assert_close(r.extra.host_block_fw, 11e-3, 1e-12);
    assert_close(r.extra.host_block_bw, 20e-3, 1e-12);
    assert_close(r.extra.host_exposed, 4 * (31e-3 - gpu), 1e-12);
    assert_close(r.stats.total_time - r0.stats.total_time, r.extra.host_exposed, 1e-9);
    assert_close(r.stats.sample_rate, 2 / r.stats.total_time, 1e-15);
    e.cuda_graphs = LLM_GRAPHS_ATTENTION;
    assert_int_equal(llm_estimate(&m, &s, &e, &r, &err), 0);
    assert_close(r.extra.host_exposed, 4 * (15e-3 - gpu), 1e-12);
    s.host_launch_s = 1e-12;
    assert_int_equal(llm_estimate(&m, &s, &e, &r, &err), 0);
    assert_close(r.extra.host_exposed, 0, 0);
    /* Calculon's block never waits on a host */
    m.calculon_block = true;
    s.host_launch_s = 1e-3;
    assert_int_equal(llm_estimate(&m, &s, &e, &r, &err), 0);
    assert_close(r.extra.host_exposed, 0, 0);
}

/* Data parallelism's overlapped reduction hides behind a block's backward as long as it lasts,
 * host-bound or not. The tiny model without embeddings (2 blocks) on 2 data-parallel ranks, 2
 * microbatches, ZeRO-0: a block's gradients are 64·64 (Q) + 2·64·16 (K, V) + 64·64 (O) +
 * 3·64·128 (gated MLP) + 2·64 (norms) = 34,944 BF16 parameters, 69,888 B, all-reduced in 10 ms
 * on a 0.0069888 GB/s network (Calculon's cost: bytes / bandwidth). Exposed: the last bucket's
 * 10 ms, and the other block's reduction beyond its window. With a GPU taking microseconds per
 * backward the window hides next to nothing: 20 ms − the backward. With a host of 1 ms a launch
 * the backward lasts its 20 launches, 20 ms, and hides the whole 10 ms: 10 ms exposed.
 * Recomputing the MLP (it launches nothing more here) then fills only GPU idle time: the step
 * is not faster than without it (counting the window as compute alone made it faster by the
 * recompute's seconds, which hid both the host wait and the reduction). */
static void host_hides_reduction(void **state)
{
    (void)state;
    fathom_model_t m = tiny_model();
    m.vocab_size = 0;
    llm_system_t s = unit_system(0.0069888);
    llm_execution_t e = test_layout(1, 1, 2);
    e.data_par_overlap = true;
    llm_result_t r, re;
    fathom_error_t err;
    assert_int_equal(llm_estimate(&m, &s, &e, &r, &err), 0);
    assert_close(r.stats.block_dp_size, 69888, 1e-15);
    const double bw = r.stats.block_agrad_time + r.stats.block_wgrad_time;
    assert_true(bw < 1e-5);
    assert_close(r.stats.dp_comm_exposed_time, 20e-3 - bw, 1e-12);
    s.host_launch_s = 1e-3;
    assert_int_equal(llm_estimate(&m, &s, &e, &r, &err), 0);
    assert_close(r.extra.host_block_bw, 20e-3, 1e-12);
    assert_close(r.stats.dp_comm_exposed_time, 10e-3, 1e-12);
    e.recompute_modules = LLM_RECOMPUTE_MLP;
    assert_int_equal(llm_estimate(&m, &s, &e, &re, &err), 0);
    assert_true(re.stats.recompute_time > 0);
    assert_close(re.stats.dp_comm_exposed_time, 10e-3, 1e-12);
    assert_true(re.stats.total_time >= r.stats.total_time * (1 - 1e-12));
}

/* The window is the compute and the idle time the host adds, no more: launches hidden behind
 * the block's exposed all-to-alls are charged nothing, so they widen no window. The tiny MoE
 * (2 blocks, no embeddings) on 2 data-parallel ranks with EP 2 and the overlapped reduction
 * on host_hides_reduction's 0.0069888 GB/s network: each all-to-all sends 16·64·2·2 = 4,096 B,
 * half leaving, 0.293 ms, so a block's backward pass is its microseconds of compute and 0.586 ms
 * of all-to-all. A host between the two (2–10 µs a launch: its 40 backward launches take
 * 0.08–0.4 ms) waits on nothing, and the reduction stays as exposed as with no host; past the
 * pass (1 ms a launch) the idle time widens the window. So a slower host never makes the step
 * faster, nor does graphing a part (counting the launches against the compute alone hid more of
 * the reduction at 2 µs a launch than with no host: 62.09 against 62.14 ms exposed). */
static void host_window(void **state)
{
    (void)state;
    fathom_model_t m = tiny_moe();
    m.vocab_size = 0;
    llm_system_t s = unit_system(0.0069888);
    llm_execution_t e = test_layout(1, 1, 2);
    e.expert_par = 2;
    e.data_par_overlap = true;
    llm_result_t r;
    fathom_error_t err;
    const double host[] = {0, 2e-6, 5e-6, 1e-5, 2e-5, 5e-5, 1e-4, 1e-3};
    double last = 0, none = 0;
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++) {
        s.host_launch_s = host[i];
        s.graph_launch_s = host[i] / 10;
        e.cuda_graphs = LLM_GRAPHS_NONE;
        if (llm_estimate(&m, &s, &e, &r, &err))
            fail_msg("%s: %s", err.field, err.message);
        if (i == 0)
            none = r.stats.dp_comm_exposed_time;
        if (host[i] <= 1e-5) /* hidden behind the all-to-alls: the reduction as without a host */
            assert_close(r.stats.dp_comm_exposed_time, none, 1e-12);
        assert_true(r.stats.total_time >= last * (1 - 1e-12));
        last = r.stats.total_time;
        e.cuda_graphs = LLM_GRAPHS_PARTIAL;
        llm_result_t g;
        if (llm_estimate(&m, &s, &e, &g, &err))
            fail_msg("%s: %s", err.field, err.message);
        assert_true(g.stats.total_time <= r.stats.total_time * (1 + 1e-12));
    }
}

/* execution.cuda_graphs through the codec: written back when given, left out when not, refused
 * when unknown with the field named; the Grace presets' host costs (an eager launch x2.75 the x86
 * host's; a replayed kernel the GPU's 1.0 µs, as on x86). */
static void codec_fields(void **state)
{
    (void)state;
    fathom_error_t err;
    llm_system_t s;
    json_t *name = json_string("gb200_nvl72");
    assert_int_equal(codec_llm_system_decode(name, "system", presets, &s, &err), 0);
    json_decref(name);
    assert_close(s.host_launch_s, 1.82e-5, 0);
    assert_close(s.graph_launch_s, 1.0e-6, 0);
    name = json_string("h100_sxm");
    assert_int_equal(codec_llm_system_decode(name, "system", presets, &s, &err), 0);
    json_decref(name);
    assert_close(s.host_launch_s, 6.62e-6, 0);

    llm_execution_t e = test_layout(1, 1, 1), eb;
    json_t *je = codec_llm_execution_encode(&e);
    assert_null(json_object_get(je, "cuda_graphs"));
    json_object_set_new(je, "cuda_graphs", json_string("partial"));
    assert_int_equal(codec_llm_execution_decode(je, "execution", &eb, &err), 0);
    assert_int_equal(eb.cuda_graphs, LLM_GRAPHS_PARTIAL);
    json_decref(je);
    je = codec_llm_execution_encode(&eb);
    assert_string_equal(json_string_value(json_object_get(je, "cuda_graphs")), "partial");
    json_object_set_new(je, "cuda_graphs", json_string("moe"));
    assert_int_equal(codec_llm_execution_decode(je, "execution", &eb, &err), -1);
    assert_string_equal(err.field, "execution.cuda_graphs");
    json_decref(je);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(launch_counts),
        cmocka_unit_test(fp8_expert_quantization),
        cmocka_unit_test(graph_scopes),
        cmocka_unit_test(host_bound_block),
        cmocka_unit_test(host_hides_reduction),
        cmocka_unit_test(host_window),
        cmocka_unit_test(codec_fields),
    };
    return cmocka_run_group_tests(tests, load_presets, free_presets);
}

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

/* Launches per block and microbatch (llm_host.c's table):
 *   dense, TP 1, BF16: forward attention 7 + MLP 5 = 12, backward 11 + 8 = 19; FP8 adds 2 to each
 *   part (16, 23); TP 2 adds the all-gather and reduce-scatter to each part (16, 23).
 *   MoE with 8 experts over EP 2 (4 local), alltoall dispatcher, BF16: forward attention 7,
 *   router 7, preprocessing 4 + 1 (the counts copied to the host), rest 9 + 4·2 = 17: 36;
 *   backward 11 + 4 + 0 + (10 + 4·4) = 41. FP8: rest 9 + 4·4 = 25 forward, 10 + 4·6 = 34
 *   backward, attention 9 and 13. The flex dispatcher copies nothing to the host: 4. */
static void launch_counts(void **state)
{
    (void)state;
    fathom_model_t dense = tiny_model(), moe = tiny_moe();
    llm_execution_t e = test_layout(1, 1, 2);
    e.expert_par = 2;
    llm_host_pass_t p;
    llm_host_block_pass(&dense, &e, false, false, &p);
    assert_close(p.launches[LLM_HOST_ATTENTION], 7, 0);
    assert_close(p.launches[LLM_HOST_REST], 5, 0);
    assert_close(sum(&p), 12, 0);
    llm_host_block_pass(&dense, &e, false, true, &p);
    assert_close(sum(&p), 19, 0);
    e.fp8 = true;
    llm_host_block_pass(&dense, &e, false, false, &p);
    assert_close(sum(&p), 16, 0);
    llm_host_block_pass(&dense, &e, false, true, &p);
    assert_close(sum(&p), 23, 0);
    e.fp8 = false;
    e.tensor_par = 2;
    llm_host_block_pass(&dense, &e, false, false, &p);
    assert_close(sum(&p), 16, 0);
    e.tensor_par = 1;

    llm_host_block_pass(&moe, &e, true, false, &p);
    assert_close(p.launches[LLM_HOST_ATTENTION], 7, 0);
    assert_close(p.launches[LLM_HOST_ROUTER], 7, 0);
    assert_close(p.launches[LLM_HOST_PREPROCESS], 5, 0);
    assert_close(p.launches[LLM_HOST_REST], 17, 0);
    llm_host_block_pass(&moe, &e, true, true, &p);
    assert_close(p.launches[LLM_HOST_PREPROCESS], 0, 0);
    assert_close(sum(&p), 41, 0);
    e.fp8 = true;
    llm_host_block_pass(&moe, &e, true, false, &p);
    assert_close(p.launches[LLM_HOST_REST], 25, 0);
    assert_close(p.launches[LLM_HOST_ATTENTION], 9, 0);
    llm_host_block_pass(&moe, &e, true, true, &p);
    assert_close(p.launches[LLM_HOST_REST], 34, 0);
    e.moe_dispatcher = LLM_MOE_DISPATCH_FLEX;
    llm_host_block_pass(&moe, &e, true, false, &p);
    assert_close(p.launches[LLM_HOST_PREPROCESS], 4, 0);
    /* an MoE model's dense block counts as a dense block */
    llm_host_block_pass(&moe, &e, false, false, &p);
    assert_close(sum(&p), 16, 0);
}

/* The MoE block's BF16 alltoall forward (7 attention, 7 router, 5 preprocessing, 17 rest: 36
 * launches) on a host of 10 µs an eager launch and 1 µs a replayed one:
 *   none       36·1e-5                    = 3.6e-4 s
 *   attention  29·1e-5 + 7·1e-6           = 2.97e-4
 *   router     24·1e-5 + 12·1e-6          = 2.52e-4   (router and preprocessing replayed)
 *   partial    17·1e-5 + 19·1e-6          = 1.89e-4
 *   full       36·1e-6                    = 3.6e-5 */
static void graph_scopes(void **state)
{
    (void)state;
    fathom_model_t m = tiny_moe();
    llm_execution_t e = test_layout(1, 1, 2);
    e.expert_par = 2;
    llm_host_pass_t p;
    llm_host_block_pass(&m, &e, true, false, &p);
    const llm_host_t h = {.launch_s = 1e-5, .graph_launch_s = 1e-6};
    assert_close(llm_host_pass_time(&h, LLM_GRAPHS_NONE, &p), 3.6e-4, 1e-12);
    assert_close(llm_host_pass_time(&h, LLM_GRAPHS_ATTENTION, &p), 2.97e-4, 1e-12);
    assert_close(llm_host_pass_time(&h, LLM_GRAPHS_ROUTER, &p), 2.52e-4, 1e-12);
    assert_close(llm_host_pass_time(&h, LLM_GRAPHS_PARTIAL, &p), 1.89e-4, 1e-12);
    assert_close(llm_host_pass_time(&h, LLM_GRAPHS_FULL, &p), 3.6e-5, 1e-12);
    assert_close(llm_host_exposed(3e-4, 1e-4), 2e-4, 1e-12);
    assert_close(llm_host_exposed(1e-4, 3e-4), 0, 0);
}

/* A host-bound block: the tiny dense model (2 blocks, one stage, 2 microbatches) on the unit
 * system, whose GPU runs a block in a few microseconds, with a host of 1 ms a launch.
 * Per block and microbatch the host takes 12 ms forward and 19 ms backward; the step waits
 * 2 blocks · 2 microbatches · (31 ms − the block's GPU time) on it: 0.124 s less 4 GPU passes.
 * CUDA graphs over the attention leave 5 + 8 = 13 eager launches: 4·13 ms. A host of 1 ps a
 * launch never holds the GPU up. */
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
    s.host.launch_s = 1e-3;
    assert_int_equal(llm_estimate(&m, &s, &e, &r, &err), 0);
    assert_close(r.extra.host_block_fw, 12e-3, 1e-12);
    assert_close(r.extra.host_block_bw, 19e-3, 1e-12);
    assert_close(r.extra.host_exposed, 4 * (31e-3 - gpu), 1e-12);
    assert_close(r.stats.total_time - r0.stats.total_time, r.extra.host_exposed, 1e-9);
    assert_close(r.stats.sample_rate, 2 / r.stats.total_time, 1e-15);
    e.cuda_graphs = LLM_GRAPHS_ATTENTION;
    assert_int_equal(llm_estimate(&m, &s, &e, &r, &err), 0);
    assert_close(r.extra.host_exposed, 4 * (13e-3 - gpu), 1e-12);
    s.host.launch_s = 1e-12;
    assert_int_equal(llm_estimate(&m, &s, &e, &r, &err), 0);
    assert_close(r.extra.host_exposed, 0, 0);
    /* Calculon's block never waits on a host */
    m.calculon_block = true;
    s.host.launch_s = 1e-3;
    assert_int_equal(llm_estimate(&m, &s, &e, &r, &err), 0);
    assert_close(r.extra.host_exposed, 0, 0);
}

/* system.host and execution.cuda_graphs through the codec: written back when given, left out
 * when not, refused out of range with the field named. */
static void codec_fields(void **state)
{
    (void)state;
    fathom_error_t err;
    llm_system_t s;
    assert_int_equal(codec_llm_system_decode(json_string("h100_sxm"), "system", presets, &s, &err),
                     0);
    assert_close(s.host.launch_s, 6.62e-6, 0);
    assert_close(s.host.graph_launch_s, 1e-6, 0);
    json_t *enc = codec_llm_system_encode(&s);
    json_t *h = json_object_get(enc, "host");
    assert_non_null(h);
    json_object_set_new(h, "launch_s", json_real(-1));
    assert_int_equal(codec_llm_system_decode(enc, "system", presets, &s, &err), -1);
    assert_string_equal(err.field, "system.host.launch_s");
    json_object_set_new(h, "launch_s", json_real(1e-5));
    json_object_set_new(h, "module_s", json_real(1e-5));
    assert_int_equal(codec_llm_system_decode(enc, "system", presets, &s, &err), -1);
    assert_string_equal(err.field, "system.host.module_s");
    json_object_del(h, "module_s");
    assert_int_equal(codec_llm_system_decode(enc, "system", presets, &s, &err), 0);
    assert_close(s.host.launch_s, 1e-5, 0);
    json_object_del(enc, "host");
    assert_int_equal(codec_llm_system_decode(enc, "system", presets, &s, &err), 0);
    assert_close(s.host.launch_s, 0, 0);
    json_t *back = codec_llm_system_encode(&s);
    assert_null(json_object_get(back, "host"));
    json_decref(back);
    json_decref(enc);

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
        cmocka_unit_test(graph_scopes),
        cmocka_unit_test(host_bound_block),
        cmocka_unit_test(codec_fields),
    };
    return cmocka_run_group_tests(tests, load_presets, free_presets);
}

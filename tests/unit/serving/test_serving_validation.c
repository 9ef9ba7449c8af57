/* test_serving_validation.c — how a validation row becomes a request: trtllm-bench's dataset
 * size when a row gives none (the 1.1 page's 1000/1000 rows), read off the pages' request
 * tables, and that such a row is estimated as the finite run with that count; the layout a MoE
 * row of a 1.x page runs when it leaves attention DP unstated; the L40S server's PCIe all-reduce. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <string.h>

#include "llm_codec.h"
#include "presets_test_util.h"
#include "serving_codec.h"

/* The pages' "Number of Requests" tables: 1024/1024 3,000, 1024/8192 1,500, 32768/1024 1,000
 * (1.1, commit 585c756); 1000/1000 3,000, 128/128 30,000, 20000/2000 1,000 (1.0, commit
 * 00f3768); a pair neither page lists: 0 (the steady state). */
static void bench_requests(void **state)
{
    (void)state;
    assert_true(serving_validation_bench_requests(1024, 1024) == 3000);
    assert_true(serving_validation_bench_requests(1024, 8192) == 1500);
    assert_true(serving_validation_bench_requests(32768, 1024) == 1000);
    assert_true(serving_validation_bench_requests(1000, 1000) == 3000);
    assert_true(serving_validation_bench_requests(128, 128) == 30000);
    assert_true(serving_validation_bench_requests(20000, 2000) == 1000);
    assert_true(serving_validation_bench_requests(1000, 1024) == 0);
    assert_true(serving_validation_bench_requests(777, 333) == 0);
}

/* The report's line for one row (a new reference). */
static json_t *report_of(const codec_presets_t *p, json_t *row)
{
    fathom_error_t err;
    json_t *rows = json_pack("[O]", row);
    json_t *rep = codec_serving_validation_rows(rows, "test", p, &err);
    json_decref(rows);
    assert_non_null(rep);
    json_t *r0 = json_incref(json_array_get(json_object_get(rep, "rows"), 0));
    json_decref(rep);
    return r0;
}

static double estimate_of(const codec_presets_t *p, json_t *row)
{
    json_t *r0 = report_of(p, row);
    const double e = json_number_value(json_object_get(r0, "estimated_tokens_per_s_per_gpu"));
    json_decref(r0);
    return e;
}

/* A 1000/1000 trtllm-bench row without num_requests is estimated as the same row with 3,000
 * requests, not as the steady state (which a run of 3,000 with 100+ in flight never reaches:
 * its ramp-up and drain weigh in, so the two estimates differ). */
static void row_without_count(void **state)
{
    (void)state;
    codec_presets_t *p = shipped_presets();
    json_t *row = json_pack("{s:s,s:s,s:s,s:s,s:i,s:i,s:i,s:i,s:i,s:i,s:f}", "id", "t", "model",
                            "Llama-3.3-70B", "gpu", "H200", "precision_weights", "FP8", "tp", 2,
                            "pp", 1, "isl", 1000, "osl", 1000, "ep", 1, "dp_attention", 1,
                            "output_tokens_per_s_per_gpu", 2587.0);
    const double bare = estimate_of(p, row);
    json_object_set_new(row, "num_requests", json_integer(3000));
    const double listed = estimate_of(p, row);
    json_object_set_new(row, "num_requests", json_integer(1000000));
    const double steady = estimate_of(p, row);
    json_decref(row);
    codec_presets_free(p);
    assert_true(bare > 0);
    assert_true(fabs(bare - listed) <= 1e-9 * listed);
    assert_true(fabs(bare - steady) > 1e-3 * steady);
}

static json_t *layout_of_row(const codec_presets_t *p, json_t *row)
{
    json_t *r0 = report_of(p, row);
    json_t *l = json_incref(json_object_get(r0, "layout"));
    json_decref(r0);
    return l;
}

static int64_t layout_int(const json_t *l, const char *k)
{
    return (int64_t)json_integer_value(json_object_get(l, k));
}

/* A MoE row of a 1.x page that leaves dp_attention unstated ran the page's MoE options (attention
 * DP on): TP8 becomes tp 1, dp_attention 8, ep 1 (experts split 8 ways by TP); stated, or a dense
 * model, or a 0.x page, it is read as given. */
static void moe_attention_dp(void **state)
{
    (void)state;
    codec_presets_t *p = shipped_presets();
    json_t *row = json_pack("{s:s,s:s,s:s,s:s,s:i,s:i,s:i,s:i,s:n,s:n,s:s,s:f}", "id", "t",
                            "model", "Qwen3-30B-A3B", "gpu", "RTX6000PRO", "precision_weights",
                            "FP4", "tp", 8, "pp", 1, "isl", 128, "osl", 128, "ep", "dp_attention",
                            "doc_revision", "1.0", "output_tokens_per_s_per_gpu", 4936.25);
    json_t *l = layout_of_row(p, row);
    assert_true(layout_int(l, "tp") == 1 && layout_int(l, "dp_attention") == 8 &&
                layout_int(l, "ep") == 1);
    json_decref(l);
    json_object_set_new(row, "dp_attention", json_integer(1));
    l = layout_of_row(p, row);
    assert_true(layout_int(l, "tp") == 8 && layout_int(l, "dp_attention") == 1);
    json_decref(l);
    json_object_set_new(row, "dp_attention", json_null());
    json_object_set_new(row, "doc_revision", json_string("0.17"));
    l = layout_of_row(p, row);
    assert_true(layout_int(l, "tp") == 8 && layout_int(l, "dp_attention") == 1);
    json_decref(l);
    json_object_set_new(row, "doc_revision", json_string("1.0"));
    json_object_set_new(row, "model", json_string("Llama-3.3-70B"));
    l = layout_of_row(p, row);
    assert_true(layout_int(l, "tp") == 8 && layout_int(l, "dp_attention") == 1);
    json_decref(l);
    json_decref(row);
    codec_presets_free(p);
}

/* The L40S server's tier 0 (presets/systems/l40s.json, $comment_pcie): GPUs on the CPUs' root
 * ports, no P2P on Intel hosts, NCCL's ring through host memory at 0.5 of PCIe Gen4's 32 GB/s a
 * direction = 16 GB/s (nccl-tests on switchless PCIe servers: 0.44 on 8 GPUs, 0.55 on 4). A
 * 1 MB all-reduce over TP 8 (ops [2, -1]) moves 2·(1 - 1/8)·1 MB = 1.75 MB a GPU:
 *   1.75e6 / 16e9 = 109.375 µs, + the tier's 20 µs = 129.375 µs
 * (0.8 of the link, the earlier figure, gave 1.75e6 / 25.6e9 + 20 µs = 88.359 µs). */
static void l40s_pcie_all_reduce(void **state)
{
    (void)state;
    codec_presets_t *p = shipped_presets();
    json_t *name = json_string("l40s");
    llm_system_t s;
    fathom_error_t err;
    assert_int_equal(codec_llm_system_decode(name, "system", p, &s, &err), 0);
    assert_true(fabs(llm_net_op_time(&s, 0, LLM_OP_ALL_REDUCE, 1e6, 8) - 129.375e-6) < 1e-12);
    json_decref(name);
    codec_presets_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bench_requests),
        cmocka_unit_test(row_without_count),
        cmocka_unit_test(moe_attention_dp),
        cmocka_unit_test(l40s_pcie_all_reduce),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

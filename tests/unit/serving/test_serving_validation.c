/* test_serving_validation.c — how a validation row becomes a request: trtllm-bench's dataset
 * size when a row gives none (the 1.1 page's 1000/1000 rows), read off the pages' request
 * tables, and that such a row is estimated as the finite run with that count. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <string.h>

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

static double estimate_of(const codec_presets_t *p, json_t *row)
{
    fathom_error_t err;
    json_t *rows = json_pack("[O]", row);
    json_t *rep = codec_serving_validation_rows(rows, "test", p, &err);
    json_decref(rows);
    assert_non_null(rep);
    const json_t *r0 = json_array_get(json_object_get(rep, "rows"), 0);
    const double e = json_number_value(json_object_get(r0, "estimated_tokens_per_s_per_gpu"));
    json_decref(rep);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bench_requests),
        cmocka_unit_test(row_without_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_search_codec.c — the search request's strict decoding (each refusal names its field),
 * its normalization (presets resolved, defaults explicit, idempotent) and the shape of the
 * result document of a whole search run through its sweep kind (codec_sweep_run). */
#include <time.h>

#include "search_test_util.h"

#define BASE "\"model\":\"turing-530B\",\"system\":\"a100_80g\",\"num_procs\":5128,\"max_batch_size\":2520"

static void expect_field_error(const char *json, const char *field)
{
    json_error_t jerr;
    json_t *body = json_loads(json, 0, &jerr);
    assert_non_null(body);
    fathom_error_t err;
    fathom_error_clear(&err);
    codec_ctx_t ctx = {test_presets};
    json_t *norm = codec_search_normalize(body, &ctx, &err);
    json_decref(body);
    if (norm) {
        json_decref(norm);
        print_error("accepted %s, expected an error on %s\n", json, field);
        fail();
    }
    if (err.code != FATHOM_E_INVALID_FIELD || strcmp(err.field, field) != 0) {
        print_error("%s: got %s on \"%s\" (%s), expected invalid_field on \"%s\"\n", json,
                    fathom_code_name(err.code), err.field, err.message, field);
        fail();
    }
}

static void test_refusals(void **state)
{
    (void)state;
    expect_field_error("[]", "");
    expect_field_error("{" BASE ",\"bogus\":1}", "bogus");
    expect_field_error("{\"system\":\"a100_80g\",\"num_procs\":8,\"max_batch_size\":8}", "model");
    expect_field_error("{\"model\":\"turing-530B\",\"num_procs\":8,\"max_batch_size\":8}",
                       "system");
    expect_field_error("{\"model\":\"turing-530B\",\"system\":\"a100_80g\",\"max_batch_size\":8}",
                       "num_procs");
    expect_field_error("{\"model\":\"turing-530B\",\"system\":\"a100_80g\",\"num_procs\":8}",
                       "max_batch_size");
    expect_field_error("{\"model\":\"turing-530B\",\"system\":\"a100_80g\",\"num_procs\":0,"
                       "\"max_batch_size\":8}", "num_procs");
    expect_field_error("{\"model\":\"turing-530B\",\"system\":\"a100_80g\",\"num_procs\":2097152,"
                       "\"max_batch_size\":8}", "num_procs");
    expect_field_error("{" BASE ",\"kind\":\"grid\"}", "kind");
    expect_field_error("{" BASE ",\"datatype\":\"float64\"}", "datatype");
    expect_field_error("{" BASE ",\"options\":[]}", "options");
    expect_field_error("{" BASE ",\"options\":{\"bogus\":true}}", "options.bogus");
    expect_field_error("{" BASE ",\"options\":{\"top_n\":101}}", "options.top_n");
    expect_field_error("{" BASE ",\"options\":{\"top_n\":0}}", "options.top_n");
    expect_field_error("{" BASE ",\"options\":{\"mbs_break\":1}}", "options.mbs_break");
    expect_field_error("{" BASE ",\"options\":{\"fused_activation\":\"both\"}}",
                       "options.fused_activation");
    expect_field_error("{" BASE ",\"options\":{\"no_tp_overlap\":\"yes\"}}",
                       "options.no_tp_overlap");
    /* the options that fix an execution field: their values, and what they need */
#define MOE_BASE                                                                               \
    "\"model\":{\"hidden\":1024,\"seq_size\":2048,\"attn_heads\":16,\"kv_heads\":4,"       \
    "\"num_blocks\":8,\"vocab_size\":32000,\"gated_mlp\":true,"                              \
    "\"moe\":{\"num_experts\":8,\"top_k\":2,\"expert_feedforward\":1024}},"                  \
    "\"system\":\"h100_sxm\",\"num_procs\":16,\"max_batch_size\":64"
    expect_field_error("{" MOE_BASE ",\"options\":{\"pipeline_schedule\":\"gpipe\"}}",
                       "options.pipeline_schedule");
    expect_field_error("{" MOE_BASE ",\"options\":{\"moe_a2a_overlap\":1}}",
                       "options.moe_a2a_overlap");
    expect_field_error("{" MOE_BASE ",\"options\":{\"fp8\":false,\"fp8_params\":true}}",
                       "options.fp8_params");
    expect_field_error("{" MOE_BASE ",\"options\":{\"fp8\":false,\"fp8_activation_cache\":true}}",
                       "options.fp8_activation_cache");
    expect_field_error("{" MOE_BASE ",\"options\":{\"optimizer_state_datatype\":\"fp8\"}}",
                       "options.optimizer_state_datatype");
    /* Calculon's block: no DualPipe, no 16-bit moments, and turing has no experts to overlap */
    expect_field_error("{" BASE ",\"options\":{\"pipeline_schedule\":\"dualpipe\"}}",
                       "options.pipeline_schedule");
    expect_field_error("{" BASE ",\"options\":{\"optimizer_state_datatype\":\"bfloat16\"}}",
                       "options.optimizer_state_datatype");
    expect_field_error("{" BASE ",\"options\":{\"moe_a2a_overlap\":true}}",
                       "options.moe_a2a_overlap");
}

static json_t *normalize_text(const char *json)
{
    json_error_t jerr;
    json_t *body = json_loads(json, 0, &jerr);
    assert_non_null(body);
    fathom_error_t err;
    codec_ctx_t ctx = {test_presets};
    json_t *norm = codec_search_normalize(body, &ctx, &err);
    json_decref(body);
    if (!norm) {
        print_error("refused %s: %s: %s\n", json, err.field, err.message);
        fail();
    }
    return norm;
}

static void test_normalize(void **state)
{
    (void)state;
    json_t *a = normalize_text("{" BASE "}");
    json_t *b = normalize_text("{" BASE ",\"kind\":\"optimal_execution\",\"datatype\":\"float16\","
                               "\"options\":{\"mbs_break\":false,\"top_n\":1,"
                               "\"fused_activation\":true}}");
    assert_true(json_equal(a, b));
    /* Defaults are explicit and presets resolved to objects. */
    assert_string_equal(json_string_value(json_object_get(a, "kind")), "optimal_execution");
    assert_string_equal(json_string_value(json_object_get(a, "datatype")), "float16");
    assert_true(json_is_object(json_object_get(a, "model")));
    assert_true(json_is_object(json_object_get(a, "system")));
    const json_t *o = json_object_get(a, "options");
    assert_int_equal(json_integer_value(json_object_get(o, "top_n")), 1);
    assert_true(json_is_false(json_object_get(o, "mbs_break")));
    assert_true(json_is_false(json_object_get(o, "no_tp_overlap")));
    assert_true(json_is_false(json_object_get(o, "no_dp_overlap")));
    assert_string_equal(json_string_value(json_object_get(o, "fused_activation")), "true");
    /* Normalizing the normalized form changes nothing. */
    char *text = json_dumps(a, JSON_SORT_KEYS);
    json_t *c = normalize_text(text);
    free(text);
    assert_true(json_equal(a, c));
    json_decref(a);
    json_decref(b);
    json_decref(c);

    /* the fixed execution fields appear only when set, and round-trip */
    json_t *f = normalize_text("{" MOE_BASE ",\"options\":{\"pipeline_schedule\":\"dualpipe\","
                               "\"moe_a2a_overlap\":true,\"fp8\":true,\"fp8_params\":true,"
                               "\"fp8_activation_cache\":true,"
                               "\"optimizer_state_datatype\":\"bfloat16\"}}");
    const json_t *fo = json_object_get(f, "options");
    assert_string_equal(json_string_value(json_object_get(fo, "pipeline_schedule")), "dualpipe");
    assert_true(json_is_true(json_object_get(fo, "moe_a2a_overlap")));
    assert_true(json_is_true(json_object_get(fo, "fp8_params")));
    assert_true(json_is_true(json_object_get(fo, "fp8_activation_cache")));
    assert_string_equal(json_string_value(json_object_get(fo, "optimizer_state_datatype")),
                        "bfloat16");
    text = json_dumps(f, JSON_SORT_KEYS);
    json_t *g = normalize_text(text);
    free(text);
    assert_true(json_equal(f, g));
    json_decref(f);
    json_decref(g);
    json_t *h = normalize_text("{" MOE_BASE ",\"options\":{\"pipeline_schedule\":\"1f1b\","
                               "\"moe_a2a_overlap\":false,\"optimizer_state_datatype\":\"float32\"}}");
    fo = json_object_get(h, "options");
    assert_null(json_object_get(fo, "pipeline_schedule"));
    assert_null(json_object_get(fo, "moe_a2a_overlap"));
    assert_null(json_object_get(fo, "optimizer_state_datatype"));
    json_decref(h);

    json_t *d = normalize_text("{" BASE ",\"options\":{\"fused_activation\":false}}");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(d, "options"), "fused_activation")),
        "false");
    json_decref(d);
}

static int progress_calls;
static sweep_progress_t last_progress;
static void on_progress(const sweep_progress_t *p, void *user)
{
    (void)user;
    assert_true(p->units_done <= p->units_total);
    last_progress = *p;
    progress_calls++;
}

static void test_result_document(void **state)
{
    (void)state;
    json_t *norm = normalize_text("{" BASE ",\"options\":{\"top_n\":3,\"mbs_break\":true}}");
    fathom_error_t err;
    codec_ctx_t ctx = {test_presets};
    progress_calls = 0;
    json_t *doc = codec_sweep_run(&codec_search_kind, norm, &ctx, 2, NULL, on_progress, NULL,
                                  SWEEP_RESULT_SAMPLE, &err);
    /* The same search on one thread through the decoded request: its estimate count is what the
     * progress reports at the end, whatever the threads. */
    search_request_t req;
    search_result_t one;
    assert_int_equal(codec_search_decode(norm, &ctx, &req, &err), 0);
    assert_int_equal(search_result_init(&one, req.options.top_n, &err), 0);
    assert_int_equal(codec_search_run_request(&req, 1, NULL, NULL, NULL, &one, &err), 0);
    json_decref(norm);
    if (!doc) {
        print_error("search failed: %s\n", err.message);
        fail();
    }
    assert_true(progress_calls >= 1); /* at least the final call */
    assert_int_equal(last_progress.units_done, last_progress.units_total);
    /* Every estimate of the search made by then; fewer than the 8112 executions (below): the
     * walk skips estimates whose verdict it already knows (search.c). */
    assert_int_equal(last_progress.evaluations, one.estimated);
    assert_true(one.estimated > 0 && one.estimated <= 8112);
    search_result_close(&one);
    const json_t *best = json_object_get(doc, "best");
    assert_int_equal(json_array_size(best), 3);
    for (size_t i = 0; i < 3; i++) {
        const json_t *item = json_array_get(best, i);
        assert_int_equal(json_object_size(json_object_get(item, "execution")), 29);
        assert_int_equal(json_object_size(json_object_get(item, "stats")), 96);
        assert_true(json_is_object(json_object_get(item, "summary")));
    }
    /* Golden counts of this search (tests/data/search/turing-530B_5128_a100_80g_m.log). */
    const json_t *counts = json_object_get(doc, "counts");
    assert_int_equal(json_integer_value(json_object_get(counts, "total")), 8112);
    assert_int_equal(json_integer_value(json_object_get(counts, "good")), 1080);
    assert_int_equal(json_integer_value(json_object_get(counts, "bad")), 7032);
    json_decref(doc);
}

/* The progress callback cancels the 7-million-execution gpt3-175B search once it is under way
 * (some executions walked): the run must stop within a second, long before it could finish. */
static void cancel_on_progress(const sweep_progress_t *p, void *user)
{
    if (p->units_done > 0)
        *(volatile int *)user = 1;
}

static void test_cancel_mid_run(void **state)
{
    (void)state;
    json_t *norm = normalize_text("{\"model\":\"gpt3-175B\",\"system\":\"a100_80g\","
                                  "\"num_procs\":1024,\"max_batch_size\":1024}");
    fathom_error_t err;
    fathom_error_clear(&err);
    codec_ctx_t ctx = {test_presets};
    volatile int cancel = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    json_t *doc = codec_sweep_run(&codec_search_kind, norm, &ctx, 2, &cancel, cancel_on_progress,
                                  (void *)&cancel, 0, &err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    json_decref(norm);
    double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    assert_null(doc);
    assert_int_equal(err.code, FATHOM_E_CANCELLED);
    if (wall > 1.0) {
        print_error("cancelled search took %.3f s to stop\n", wall);
        fail();
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_normalize),
        cmocka_unit_test(test_result_document),
        cmocka_unit_test(test_cancel_mid_run),
    };
    return cmocka_run_group_tests(tests, test_load_presets, test_free_presets);
}

/* test_goodput_codec.c — the three goodput endpoints over JSON: the seed's reference cases sent
 * as requests (normalize + evaluate, as the server and CLI run them), normalization, tables and
 * curves, and a 422 naming the field for every class of bad input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "canonical.h"
#include "endpoint.h"
#include "goodput_codec.h"
#include "presets.h"

#define CASES_PATH "tests/data/goodput/cases.jsonl"
#define FIT_CASES_PATH "tests/data/goodput/fit_cases.jsonl"

static codec_presets_t *presets;

static int setup(void **state)
{
    (void)state;
    presets = codec_presets_empty();
    return presets ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    codec_presets_free(presets);
    return 0;
}

static json_t *parse(const char *text)
{
    json_error_t jerr;
    json_t *v = json_loads(text, 0, &jerr);
    if (!v)
        fail_msg("test JSON does not parse: %s: %s", jerr.text, text);
    return v;
}

/* normalize + evaluate; NULL with err filled on a refusal at either step. */
static json_t *run(const codec_endpoint_t *ep, const json_t *body, fathom_error_t *err)
{
    codec_ctx_t ctx = {presets};
    fathom_error_clear(err);
    json_t *norm = ep->normalize(body, &ctx, err);
    if (!norm)
        return NULL;
    /* Normalizing a normalized request changes nothing (one request, one hash). */
    json_t *again = ep->normalize(norm, &ctx, err);
    if (!again)
        fail_msg("%s: the normalized request is refused: %s %s", ep->name, err->field,
                 err->message);
    char *a = codec_canonical_dump(norm), *b = codec_canonical_dump(again);
    if (strcmp(a, b) != 0)
        fail_msg("%s: normalization is not idempotent:\n%s\n%s", ep->name, a, b);
    free(a);
    free(b);
    json_decref(again);
    json_t *out = ep->evaluate(norm, &ctx, err);
    json_decref(norm);
    return out;
}

static json_t *run_ok(const codec_endpoint_t *ep, const json_t *body)
{
    fathom_error_t err;
    json_t *out = run(ep, body, &err);
    if (!out) {
        char *t = json_dumps(body, JSON_COMPACT);
        fail_msg("%s refused %s: %s: %s", ep->name, t, err.field, err.message);
    }
    return out;
}

static void expect_422(const codec_endpoint_t *ep, const char *body_text, const char *field)
{
    json_t *body = parse(body_text);
    fathom_error_t err;
    json_t *out = run(ep, body, &err);
    if (out)
        fail_msg("%s accepted %s; expected 422 on %s", ep->name, body_text, field);
    if (fathom_code_http_status(err.code) != 422 || strcmp(err.field, field) != 0)
        fail_msg("%s: %s → %d on \"%s\" (%s); expected 422 on \"%s\"", ep->name, body_text,
                 fathom_code_http_status(err.code), err.field, err.message, field);
    json_decref(body);
}

static double num(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_number(v))
        fail_msg("missing number \"%s\"", key);
    return json_number_value(v);
}

static void expect_rel(size_t idx, const char *what, double got, double want)
{
    if (!(fabs(got - want) <= 1e-9 * fabs(want)))
        fail_msg("case %zu %s: got %.17g, expected %.17g", idx, what, got, want);
}

static void expect_same_int(size_t idx, const char *what, const json_t *got, const json_t *want)
{
    if (!json_is_integer(got) || json_integer_value(got) != json_integer_value(want))
        fail_msg("case %zu %s: got %lld, expected %lld", idx, what,
                 (long long)json_integer_value(got), (long long)json_integer_value(want));
}

/* Every reference case, written as the endpoint's request. */
static void test_golden_cases(void **state)
{
    (void)state;
    FILE *f = fopen(CASES_PATH, "r");
    assert_non_null(f);
    char line[1 << 14];
    size_t idx = 0;
    while (fgets(line, sizeof line, f)) {
        json_t *c = parse(line);
        const json_t *e = json_object_get(c, "expected");
        json_t *body = json_pack("{s:O,s:O,s:O,s:O,s:O}", "perf_params",
                                 json_object_get(c, "perf_params"), "grad_params",
                                 json_object_get(c, "grad_params"), "init_batch_size",
                                 json_object_get(c, "init_batch_size"), "num_nodes",
                                 json_object_get(c, "num_nodes"), "num_replicas",
                                 json_object_get(c, "num_replicas"));
        if (strcmp(json_string_value(json_object_get(c, "kind")), "evaluate") == 0) {
            json_object_set(body, "atomic_bsz", json_object_get(c, "atomic_bsz"));
            json_object_set(body, "accum_steps", json_object_get(c, "accum_steps"));
            json_t *out = run_ok(&codec_goodput_evaluate_endpoint, body);
            expect_rel(idx, "throughput", num(out, "throughput_samples_per_s"),
                       num(e, "throughput"));
            expect_rel(idx, "efficiency", num(out, "efficiency"), num(e, "efficiency"));
            expect_rel(idx, "goodput", num(out, "goodput_samples_per_s"), num(e, "goodput"));
            json_decref(out);
        } else {
            json_object_update(body, json_object_get(c, "options"));
            json_t *out = run_ok(&codec_goodput_optimize_endpoint, body);
            expect_rel(idx, "goodput", num(out, "goodput_samples_per_s"), num(e, "goodput"));
            expect_same_int(idx, "atomic_bsz", json_object_get(out, "atomic_bsz"),
                            json_object_get(e, "atomic_bsz"));
            expect_same_int(idx, "accum_steps", json_object_get(out, "accum_steps"),
                            json_object_get(e, "accum_steps"));
            json_decref(out);
        }
        json_decref(body);
        json_decref(c);
        idx++;
    }
    fclose(f);
    assert_int_equal(idx, 300);
}

static void test_fit_endpoint(void **state)
{
    (void)state;
    FILE *f = fopen(FIT_CASES_PATH, "r");
    assert_non_null(f);
    char line[1 << 16];
    for (int k = 0; k < 5 && fgets(line, sizeof line, f); k++) {
        json_t *c = parse(line);
        json_t *body = json_pack("{s:O}", "measurements", json_object_get(c, "measurements"));
        json_t *out = run_ok(&codec_goodput_fit_endpoint, body);
        double want = num(json_object_get(c, "expected"), "objective");
        double got = num(out, "objective");
        if (!(got <= want + 1e-6))
            fail_msg("fit %d: objective %.17g is worse than the seed's %.17g", k, got, want);
        const json_t *p = json_object_get(out, "perf_params");
        assert_int_equal(json_object_size(p), 7);
        assert_true(num(p, "gamma") >= 1.0 && num(p, "gamma") <= 10.0);
        assert_true(json_is_array(json_object_get(out, "fixed_params")));
        json_decref(out);
        json_decref(body);
        json_decref(c);
    }
    fclose(f);

    /* Single node, one batch size: the response says what the data could not determine. */
    json_t *body = parse("{\"measurements\":[{\"num_nodes\":1,\"num_replicas\":1,\"atomic_bsz\":32,"
                         "\"accum_step_time\":0.5,\"optim_step_time\":0.52},"
                         "{\"num_nodes\":1,\"num_replicas\":2,\"atomic_bsz\":32,"
                         "\"accum_step_time\":0.51,\"optim_step_time\":0.6}]}");
    json_t *out = run_ok(&codec_goodput_fit_endpoint, body);
    char *fixed = json_dumps(json_object_get(out, "fixed_params"), JSON_COMPACT);
    assert_string_equal(fixed, "[\"alpha_c\",\"alpha_n\",\"beta_n\",\"beta_r\"]");
    free(fixed);
    /* alpha_c = mean(accum_step_time) / 2 */
    assert_true(num(json_object_get(out, "perf_params"), "alpha_c") == (0.5 + 0.51) / 2 / 2);
    json_decref(out);
    json_decref(body);
}

#define MODEL                                                                                    \
    "\"perf_params\":{\"alpha_c\":0.1,\"beta_c\":0.01,\"alpha_n\":0.05,\"beta_n\":0.01,"         \
    "\"alpha_r\":0.02,\"beta_r\":0.004,\"gamma\":1.5},\"grad_params\":{\"sqr\":0.01,\"var\":0.1}," \
    "\"init_batch_size\":32"

static void test_arrays_and_tables(void **state)
{
    (void)state;
    /* Evaluate: scalars repeat along the arrays; one row per index. */
    json_t *body = parse("{" MODEL ",\"num_nodes\":1,\"num_replicas\":[1,2,4],\"atomic_bsz\":32}");
    json_t *out = run_ok(&codec_goodput_evaluate_endpoint, body);
    const json_t *rows = json_object_get(out, "results");
    assert_int_equal(json_array_size(rows), 3);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(rows, 2), "batch_size")),
                     128);
    /* The row equals the same configuration asked alone. */
    json_t *single =
        parse("{" MODEL ",\"num_nodes\":1,\"num_replicas\":4,\"atomic_bsz\":32,\"accum_steps\":0}");
    json_t *one = run_ok(&codec_goodput_evaluate_endpoint, single);
    assert_true(num(one, "goodput_samples_per_s") ==
                num(json_array_get(rows, 2), "goodput_samples_per_s"));
    json_decref(one);
    json_decref(single);
    json_decref(out);
    json_decref(body);

    /* Optimize: a table over every pair with nodes <= replicas, nodes-major. */
    body = parse("{" MODEL ",\"num_nodes\":[1,2,4],\"num_replicas\":[1,2,4,8],"
                 "\"max_batch_size\":1024,\"accumulation\":true}");
    out = run_ok(&codec_goodput_optimize_endpoint, body);
    rows = json_object_get(out, "results");
    assert_int_equal(json_array_size(rows), 4 + 3 + 2);
    const json_t *last = json_array_get(rows, 8);
    assert_int_equal(json_integer_value(json_object_get(last, "num_nodes")), 4);
    assert_int_equal(json_integer_value(json_object_get(last, "num_replicas")), 8);
    assert_null(json_object_get(last, "curve"));
    json_decref(out);
    json_decref(body);

    /* Curve: the 50 candidates, and the optimum is the best of them. */
    body = parse("{" MODEL ",\"num_nodes\":1,\"num_replicas\":4,\"max_batch_size\":2048,"
                 "\"atomic_bsz_range\":[null,256],\"curve\":true}");
    out = run_ok(&codec_goodput_optimize_endpoint, body);
    const json_t *curve = json_object_get(out, "curve");
    assert_int_equal(json_array_size(curve), GOODPUT_NUM_CANDIDATES);
    double best = 0;
    for (size_t i = 0; i < json_array_size(curve); i++)
        best = fmax(best, num(json_array_get(curve, i), "goodput_samples_per_s"));
    assert_true(best == num(out, "goodput_samples_per_s"));
    assert_true(num(json_array_get(curve, 0), "target_batch_size") == 32.0);
    assert_true(num(json_array_get(curve, 49), "target_batch_size") == 2048.0);
    json_decref(out);
    json_decref(body);
}

static void test_normalized_form(void **state)
{
    (void)state;
    codec_ctx_t ctx = {presets};
    fathom_error_t err;
    json_t *body = parse("{" MODEL ",\"num_nodes\":2,\"num_replicas\":8}");
    json_t *norm = codec_goodput_optimize_endpoint.normalize(body, &ctx, &err);
    assert_non_null(norm);
    json_t *opts = json_pack("{s:O,s:O,s:O,s:O}", "max_batch_size",
                             json_object_get(norm, "max_batch_size"), "atomic_bsz_range",
                             json_object_get(norm, "atomic_bsz_range"), "accumulation",
                             json_object_get(norm, "accumulation"), "curve",
                             json_object_get(norm, "curve"));
    char *text = json_dumps(opts, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(opts);
    assert_string_equal(text, "{\"accumulation\":false,\"atomic_bsz_range\":[1,32],"
                              "\"curve\":false,\"max_batch_size\":32}");
    free(text);
    json_decref(norm);
    json_decref(body);

    /* Defaults written out and null bounds filled hash like the explicit request. */
    json_t *a = parse("{" MODEL ",\"num_nodes\":1,\"num_replicas\":2,\"max_batch_size\":256,"
                      "\"atomic_bsz_range\":[null,null]}");
    json_t *b = parse("{" MODEL ",\"num_nodes\":1,\"num_replicas\":2,\"max_batch_size\":256,"
                      "\"atomic_bsz_range\":[1,256],\"accumulation\":false,\"curve\":false}");
    json_t *na = codec_goodput_optimize_endpoint.normalize(a, &ctx, &err);
    json_t *nb = codec_goodput_optimize_endpoint.normalize(b, &ctx, &err);
    char ha[CODEC_HASH_HEX_LEN + 1], hb[CODEC_HASH_HEX_LEN + 1];
    assert_int_equal(codec_config_hash("goodput_optimize", na, ha), 0);
    assert_int_equal(codec_config_hash("goodput_optimize", nb, hb), 0);
    assert_string_equal(ha, hb);
    json_decref(na);
    json_decref(nb);
    json_decref(a);
    json_decref(b);

    /* Evaluate with one array: the normalized form has four arrays of one length. */
    body = parse("{" MODEL ",\"num_nodes\":1,\"num_replicas\":[1,2],\"atomic_bsz\":32}");
    norm = codec_goodput_evaluate_endpoint.normalize(body, &ctx, &err);
    assert_non_null(norm);
    text = json_dumps(json_object_get(norm, "accum_steps"), JSON_COMPACT);
    assert_string_equal(text, "[0,0]");
    free(text);
    json_decref(norm);
    json_decref(body);
}

static const codec_endpoint_t *const ev = &codec_goodput_evaluate_endpoint;
static const codec_endpoint_t *const op = &codec_goodput_optimize_endpoint;
static const codec_endpoint_t *const fit = &codec_goodput_fit_endpoint;

/* More nodes than replicas. */
static void test_bad_topology(void **state)
{
    (void)state;
    expect_422(ev, "{" MODEL ",\"num_nodes\":4,\"num_replicas\":2,\"atomic_bsz\":32}", "num_nodes");
    expect_422(ev, "{" MODEL ",\"num_nodes\":[1,4],\"num_replicas\":2,\"atomic_bsz\":32}",
               "num_nodes[1]");
    expect_422(op, "{" MODEL ",\"num_nodes\":4,\"num_replicas\":2}", "num_nodes");
    expect_422(op, "{" MODEL ",\"num_nodes\":[4,8],\"num_replicas\":[1,2]}", "num_nodes");
    expect_422(fit,
               "{\"measurements\":[{\"num_nodes\":1,\"num_replicas\":1,\"atomic_bsz\":8,"
               "\"accum_step_time\":0.1,\"optim_step_time\":0.1},"
               "{\"num_nodes\":3,\"num_replicas\":2,\"atomic_bsz\":8,"
               "\"accum_step_time\":0.1,\"optim_step_time\":0.1}]}",
               "measurements[1].num_nodes");
}

/* Zero or negative parameters, and gamma outside [1, 10]. */
static void test_bad_parameters(void **state)
{
    (void)state;
    expect_422(ev,
               "{\"perf_params\":{\"alpha_c\":0.1,\"beta_c\":0,\"alpha_n\":0.05,\"beta_n\":0.01,"
               "\"alpha_r\":0.02,\"beta_r\":0.004,\"gamma\":1.5},\"grad_params\":{\"sqr\":0.01,"
               "\"var\":0.1},\"init_batch_size\":32,\"num_nodes\":1,\"num_replicas\":1,"
               "\"atomic_bsz\":32}",
               "perf_params.beta_c");
    expect_422(op,
               "{\"perf_params\":{\"alpha_c\":0.1,\"beta_c\":0.01,\"alpha_n\":-0.05,"
               "\"beta_n\":0.01,"
               "\"alpha_r\":0.02,\"beta_r\":0.004,\"gamma\":1.5},\"grad_params\":{\"sqr\":0.01,"
               "\"var\":0.1},\"init_batch_size\":32,\"num_nodes\":1,\"num_replicas\":1}",
               "perf_params.alpha_n");
    expect_422(ev,
               "{\"perf_params\":{\"alpha_c\":0.1,\"beta_c\":0.01,\"alpha_n\":0.05,\"beta_n\":0.01,"
               "\"alpha_r\":0.02,\"beta_r\":0.004,\"gamma\":1.5},\"grad_params\":{\"sqr\":-1,"
               "\"var\":0.1},\"init_batch_size\":32,\"num_nodes\":1,\"num_replicas\":1,"
               "\"atomic_bsz\":32}",
               "grad_params.sqr");
    expect_422(ev,
               "{\"perf_params\":{\"alpha_c\":0.1,\"beta_c\":0.01,\"alpha_n\":0.05,\"beta_n\":0.01,"
               "\"alpha_r\":0.02,\"beta_r\":0.004,\"gamma\":1.5},\"grad_params\":{\"sqr\":0.01,"
               "\"var\":0.1},\"init_batch_size\":0,\"num_nodes\":1,\"num_replicas\":1,"
               "\"atomic_bsz\":32}",
               "init_batch_size");
    expect_422(ev, "{" MODEL ",\"num_nodes\":0,\"num_replicas\":1,\"atomic_bsz\":32}", "num_nodes");
    expect_422(ev, "{" MODEL ",\"num_nodes\":1,\"num_replicas\":1,\"atomic_bsz\":[64,-1]}",
               "atomic_bsz[1]");
    expect_422(ev, "{" MODEL ",\"num_nodes\":1,\"num_replicas\":1,\"atomic_bsz\":32,"
                   "\"accum_steps\":-1}",
               "accum_steps");
    expect_422(fit,
               "{\"measurements\":[{\"num_nodes\":1,\"num_replicas\":1,\"atomic_bsz\":8,"
               "\"accum_step_time\":0,\"optim_step_time\":0.1}]}",
               "measurements[0].accum_step_time");
    expect_422(fit,
               "{\"measurements\":[{\"num_nodes\":1,\"num_replicas\":1,\"atomic_bsz\":8,"
               "\"accum_step_time\":0.1,\"optim_step_time\":-2}]}",
               "measurements[0].optim_step_time");
    /* gamma outside [1, 10] */
    expect_422(ev,
               "{\"perf_params\":{\"alpha_c\":0.1,\"beta_c\":0.01,\"alpha_n\":0.05,\"beta_n\":0.01,"
               "\"alpha_r\":0.02,\"beta_r\":0.004,\"gamma\":0.5},\"grad_params\":{\"sqr\":0.01,"
               "\"var\":0.1},\"init_batch_size\":32,\"num_nodes\":1,\"num_replicas\":1,"
               "\"atomic_bsz\":32}",
               "perf_params.gamma");
    expect_422(op,
               "{\"perf_params\":{\"alpha_c\":0.1,\"beta_c\":0.01,\"alpha_n\":0.05,\"beta_n\":0.01,"
               "\"alpha_r\":0.02,\"beta_r\":0.004,\"gamma\":10.5},\"grad_params\":{\"sqr\":0.01,"
               "\"var\":0.1},\"init_batch_size\":32,\"num_nodes\":1,\"num_replicas\":1}",
               "perf_params.gamma");
}

/* A batch below the initial batch. */
static void test_bad_batches(void **state)
{
    (void)state;
    expect_422(ev, "{" MODEL ",\"num_nodes\":1,\"num_replicas\":2,\"atomic_bsz\":8}", "atomic_bsz");
    expect_422(ev,
               "{" MODEL ",\"num_nodes\":1,\"num_replicas\":2,\"atomic_bsz\":[16,32,8],"
               "\"accum_steps\":[0,1,0]}",
               "atomic_bsz[2]");
    expect_422(op, "{" MODEL ",\"num_nodes\":1,\"num_replicas\":2,\"max_batch_size\":16}",
               "max_batch_size");
}

/* No measurements; unknown members, wrong types, shapes. */
static void test_bad_shapes(void **state)
{
    (void)state;
    expect_422(fit, "{\"measurements\":[]}", "measurements");
    expect_422(fit, "{}", "measurements");
    /* strictness: unknown members, wrong types, shapes */
    expect_422(ev, "{" MODEL ",\"num_nodes\":1,\"num_replicas\":1,\"atomic_bsz\":32,\"x\":1}", "x");
    expect_422(op, "{" MODEL ",\"num_nodes\":\"1\",\"num_replicas\":1}", "num_nodes");
    expect_422(ev, "{" MODEL ",\"num_nodes\":[1,1],\"num_replicas\":[1,2,4],\"atomic_bsz\":32}",
               "num_replicas");
    expect_422(ev, "{" MODEL ",\"num_nodes\":[],\"num_replicas\":1,\"atomic_bsz\":32}",
               "num_nodes");
    expect_422(op, "{" MODEL ",\"num_nodes\":1,\"num_replicas\":1,\"atomic_bsz_range\":[64,32],"
                   "\"max_batch_size\":128}",
               "atomic_bsz_range[1]");
    expect_422(op, "{" MODEL ",\"num_nodes\":1,\"num_replicas\":1,\"atomic_bsz_range\":[0,null]}",
               "atomic_bsz_range[0]");
    expect_422(op, "{" MODEL ",\"num_nodes\":1,\"num_replicas\":1,\"atomic_bsz_range\":[8]}",
               "atomic_bsz_range");
    expect_422(fit,
               "{\"measurements\":[{\"num_nodes\":1,\"num_replicas\":1,\"atomic_bsz\":8,"
               "\"accum_step_time\":0.1}]}",
               "measurements[0].optim_step_time");
    expect_422(ev, "[]", "");
}

/* Over the caps: 10001 rows; a curve for more pairs than allowed. */
static void test_over_caps(void **state)
{
    (void)state;
    json_t *rows = json_array();
    for (int i = 0; i < GOODPUT_MAX_MEASUREMENTS + 1; i++)
        json_array_append_new(rows, json_pack("{s:i,s:i,s:i,s:f,s:f}", "num_nodes", 1,
                                              "num_replicas", 1, "atomic_bsz", 8,
                                              "accum_step_time", 0.1, "optim_step_time", 0.1));
    json_t *big = json_pack("{s:o}", "measurements", rows);
    fathom_error_t err;
    assert_null(run(fit, big, &err));
    assert_int_equal(err.code, FATHOM_E_LIMIT_EXCEEDED);
    assert_string_equal(err.field, "measurements");
    json_decref(big);
    json_t *body = parse("{" MODEL ",\"curve\":true}");
    json_t *reps = json_array();
    for (int i = 1; i <= 200; i++)
        json_array_append_new(reps, json_integer(i));
    json_object_set_new(body, "num_replicas", reps);
    json_object_set_new(body, "num_nodes", json_integer(1));
    assert_null(run(op, body, &err));
    assert_int_equal(err.code, FATHOM_E_LIMIT_EXCEEDED);
    assert_string_equal(err.field, "curve");
    json_decref(body);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_cases),      cmocka_unit_test(test_fit_endpoint),
        cmocka_unit_test(test_arrays_and_tables), cmocka_unit_test(test_normalized_form),
        cmocka_unit_test(test_bad_topology), cmocka_unit_test(test_bad_parameters),
        cmocka_unit_test(test_bad_batches),  cmocka_unit_test(test_bad_shapes),
        cmocka_unit_test(test_over_caps),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

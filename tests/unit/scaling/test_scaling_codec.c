/* test_scaling_codec.c — POST /v1/scaling and /v1/scaling/fit through their codec (normalize then
 * evaluate, as the server and the CLI call them), the "training"/"run" codec, and a 422 naming
 * the field for each class of bad input. The fit must reproduce the calculator's constants from
 * its own CSV (tests/data/scaling/). */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "endpoint.h"
#include "scaling_codec.h"
#include "scaling_run_codec.h"
#include "test_util.h"

#define CSV "tests/data/scaling/loss_vs_compute.csv"
#define FIT_EXPECTED "tests/data/scaling/fit_expected.json"

static const codec_ctx_t *ctx(void)
{
    static codec_presets_t *presets;
    static codec_ctx_t c;
    if (!presets)
        presets = codec_presets_empty();
    c.presets = presets;
    return &c;
}

/* normalize + evaluate; returns the response (or NULL with err filled). */
static json_t *call(const codec_endpoint_t *ep, json_t *body, fathom_error_t *err)
{
    fathom_error_clear(err);
    json_t *norm = ep->normalize(body, ctx(), err);
    json_decref(body);
    if (!norm)
        return NULL;
    json_t *out = ep->evaluate(norm, ctx(), err);
    json_decref(norm);
    return out;
}

static json_t *call_str(const codec_endpoint_t *ep, const char *text, fathom_error_t *err)
{
    json_error_t jerr;
    json_t *body = json_loads(text, 0, &jerr);
    if (!body)
        fail_msg("bad test JSON %s: %s", text, jerr.text);
    return call(ep, body, err);
}

static void expect_422(const codec_endpoint_t *ep, const char *text, const char *field)
{
    fathom_error_t err;
    json_t *out = call_str(ep, text, &err);
    if (out)
        fail_msg("%s was accepted", text);
    if (fathom_code_http_status(err.code) != 422 || strcmp(err.field, field) != 0)
        fail_msg("%s: got %d %s (%s), expected 422 naming %s", text,
                 fathom_code_http_status(err.code), err.field, err.message, field);
}

static double get(const json_t *o, const char *path)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    const json_t *v = o;
    for (char *tok = strtok(buf, "."); tok; tok = strtok(NULL, "."))
        v = json_object_get(v, tok);
    if (!json_is_number(v))
        fail_msg("%s is not a number in the response", path);
    return json_number_value(v);
}

static void test_thirty_dollars(void **state)
{
    (void)state;
    fathom_error_t err;
    json_t *out = call_str(&codec_scaling_endpoint, "{\"gpu\":\"V100\",\"dollars\":30}", &err);
    if (!out)
        fail_msg("%s: %s", err.field, err.message);
    assert_close(get(out, "width"), 1042.95, 0.005 / 1042.95);
    assert_close(get(out, "loss"), 3.134, 0.0005 / 3.134);
    assert_close(get(out, "hours"), 14.963, 0.0005 / 14.963);
    assert_close(get(out, "dollars"), 30, 1e-15);
    assert_close(get(out, "optimal_shape.depth"), 8, 0);
    assert_close(get(out, "optimal_shape.width"), 1056, 0);
    assert_close(get(out, "alternate_shape.depth"), 13, 0);
    assert_close(get(out, "alternate_shape.width"), 824, 0);
    assert_close(get(out, "tipping_point.width"), 109.08514740244281, 1e-4);
    assert_close(get(out, "co2_kg"), get(out, "kwh") * 0.534, 1e-15);
    assert_int_equal(json_array_size(json_object_get(out, "warnings")), 0);
    json_decref(out);
}

static void test_normalization(void **state)
{
    (void)state;
    fathom_error_t err;
    json_error_t jerr;
    json_t *body = json_loads("{\"gpu\":\"P4\",\"hours\":100}", 0, &jerr);
    json_t *a = codec_scaling_endpoint.normalize(body, ctx(), &err);
    json_decref(body);
    assert_non_null(a);
    /* Defaults explicit, GPU spelled out. */
    assert_string_equal(json_string_value(json_object_get(a, "amp_mode")), "O0");
    assert_string_equal(json_string_value(json_object_get(a, "law")), "hf2020");
    assert_close(get(a, "co2_kg_per_kwh"), 0.534, 0);
    assert_close(get(a, "gpu.price_per_hour"), 0.689, 0);
    assert_close(get(a, "loss_fit.a"), 28.678776896926124, 0);
    /* The same GPU as an object normalizes to the same request. */
    char *dump = json_dumps(a, JSON_COMPACT);
    json_t *again = json_loads(dump, 0, &jerr);
    free(dump);
    json_t *b = codec_scaling_endpoint.normalize(again, ctx(), &err);
    assert_non_null(b);
    assert_true(json_equal(a, b));
    json_decref(again);
    json_decref(a);
    json_decref(b);
    /* A body that is the normalized form already (gpu object) evaluates. */
    json_t *out = call_str(&codec_scaling_endpoint,
                           "{\"gpu\":{\"k\":2.21527743e7,\"k1\":1.18538628,\"k2\":1.43150104,"
                           "\"b\":1.66015023,\"c\":1.32808220,\"layer_base\":5.91503856,"
                           "\"price_per_hour\":2.005,\"power_kw\":0.1193495934959,"
                           "\"batch_size\":64},\"amp_mode\":\"O0\",\"width\":2010.7101615660974}",
                           &err);
    if (!out)
        fail_msg("%s: %s", err.field, err.message);
    assert_close(get(out, "hours"), 61.47806563615798, 1e-6); /* a golden width case */
    json_decref(out);
}

static void test_below_tip_warns(void **state)
{
    (void)state;
    fathom_error_t err;
    json_t *out = call_str(&codec_scaling_endpoint, "{\"gpu\":\"V100\",\"hours\":0.1}", &err);
    assert_non_null(out);
    assert_int_equal(json_array_size(json_object_get(out, "warnings")), 1);
    assert_close(get(out, "width"), get(out, "tipping_point.width"), 1e-12);
    json_decref(out);
    out = call_str(&codec_scaling_endpoint, "{\"gpu\":\"K80\",\"amp_mode\":\"O2\",\"width\":32}",
                   &err);
    assert_non_null(out);
    assert_int_equal(json_array_size(json_object_get(out, "warnings")), 1);
    json_decref(out);
}

/* Epoch AI's fit (test_scaling_core.c works the numbers by hand): 1e21 FLOPs split into 2.7785e9
 * parameters on 5.9985e10 tokens, 21.59 a parameter, loss 2.3057; the answer names the fit. */
static void test_chinchilla(void **state)
{
    (void)state;
    fathom_error_t err;
    json_t *out =
        call_str(&codec_scaling_endpoint, "{\"law\":\"chinchilla\",\"flops\":1e21}", &err);
    if (!out)
        fail_msg("%s: %s", err.field, err.message);
    assert_close(get(out, "params"), 2.7785e9, 2e-4);
    assert_close(get(out, "tokens"), 5.9985e10, 2e-4);
    assert_close(get(out, "tokens_per_param"), 21.59, 5e-4);
    assert_close(get(out, "loss"), 2.3057, 1e-4);
    assert_string_equal(json_string_value(json_object_get(out, "fit")), "besiroglu2024");
    json_decref(out);
    out = call_str(&codec_scaling_endpoint,
                   "{\"law\":\"chinchilla\",\"params\":70e9,\"tokens\":1.4e12}", &err);
    assert_non_null(out);
    assert_close(get(out, "loss"), 1.973882, 1e-6);
    assert_close(get(out, "flops"), 5.88e23, 1e-12);
    assert_true(json_is_false(json_object_get(out, "compute_optimal")));
    json_decref(out);
    /* params alone: that size's compute-optimal tokens, 2.2703e10 for 1e9 */
    out = call_str(&codec_scaling_endpoint, "{\"law\":\"chinchilla\",\"params\":1e9}", &err);
    if (!out)
        fail_msg("%s: %s", err.field, err.message);
    assert_close(get(out, "tokens"), 2.2703e10, 2e-4);
    assert_true(json_is_true(json_object_get(out, "compute_optimal")));
    json_decref(out);
}

static void test_scaling_refusals(void **state)
{
    (void)state;
    const codec_endpoint_t *ep = &codec_scaling_endpoint;
    expect_422(ep, "{\"gpu\":\"V100\",\"hours\":0}", "hours");
    expect_422(ep, "{\"gpu\":\"V100\",\"hours\":-2}", "hours");
    expect_422(ep, "{\"gpu\":\"V100\",\"dollars\":-30}", "dollars");
    expect_422(ep, "{\"gpu\":\"V100\",\"dollars\":0}", "dollars");
    expect_422(ep, "{\"gpu\":\"V100\",\"width\":15.9}", "width");
    expect_422(ep, "{\"gpu\":\"V100\",\"width\":-128}", "width");
    expect_422(ep, "{\"gpu\":\"H100\",\"hours\":3}", "gpu");
    expect_422(ep, "{\"gpu\":{\"k\":1},\"hours\":3}", "gpu.k1");
    expect_422(ep, "{\"gpu\":\"V100\",\"amp_mode\":\"O3\",\"hours\":3}", "amp_mode");
    expect_422(ep, "{\"gpu\":\"V100\",\"hours\":3,\"dollars\":30}", "dollars");
    expect_422(ep, "{\"gpu\":\"V100\",\"hours\":3,\"width\":512}", "width");
    expect_422(ep, "{\"gpu\":\"V100\",\"dollars\":3,\"width\":512}", "width");
    expect_422(ep, "{\"gpu\":\"V100\"}", "hours");
    expect_422(ep, "{\"hours\":3}", "gpu");
    expect_422(ep, "{\"gpu\":\"V100\",\"hours\":3,\"speed\":1}", "speed");
    expect_422(ep, "{\"gpu\":\"V100\",\"hours\":3,\"loss_fit\":{\"a\":1,\"b\":0.1}}", "loss_fit.c");
    expect_422(ep, "{\"gpu\":\"V100\",\"hours\":3,\"co2_kg_per_kwh\":-1}", "co2_kg_per_kwh");
    expect_422(ep, "{\"gpu\":\"V100\",\"hours\":3,\"law\":\"kaplan\"}", "law");
    expect_422(ep, "{\"law\":\"chinchilla\",\"flops\":1e21,\"gpu\":\"V100\"}", "gpu");
    expect_422(ep, "{\"law\":\"chinchilla\",\"flops\":1e21,\"params\":1e9}", "params");
    expect_422(ep, "{\"law\":\"chinchilla\",\"tokens\":1e9}", "params");
    expect_422(ep, "{\"law\":\"chinchilla\",\"params\":1e9,\"flops\":1e21}", "params");
    expect_422(ep, "{\"law\":\"chinchilla\",\"flops\":0}", "flops");
    expect_422(ep, "{\"law\":\"chinchilla\"}", "flops");
    expect_422(ep, "{\"gpu\":\"V100\",\"flops\":1e21,\"hours\":1}", "flops");
}

/* Odd but valid GPU constants: an answer or a 422, never a crash (GSL's error handler aborts). */
static void test_odd_gpus(void **state)
{
    (void)state;
    const char *bodies[] = {
        "{\"gpu\":{\"k\":1e7,\"k1\":1,\"k2\":1,\"b\":0,\"c\":0,\"layer_base\":5,"
        "\"price_per_hour\":1,\"power_kw\":0.1,\"batch_size\":16},\"hours\":5}",
        "{\"gpu\":{\"k\":1e7,\"k1\":1,\"k2\":1,\"b\":10,\"c\":-10,\"layer_base\":0,"
        "\"price_per_hour\":0,\"power_kw\":0,\"batch_size\":1},\"width\":16}",
        "{\"gpu\":{\"k\":1e-30,\"k1\":1,\"k2\":1,\"b\":1,\"c\":1,\"layer_base\":1e6,"
        "\"price_per_hour\":1,\"power_kw\":1,\"batch_size\":1},\"dollars\":1e12}",
        "{\"gpu\":\"K80\",\"hours\":1e9,\"param_fit\":{\"d\":1e-9,\"e\":10,\"f\":0}}",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        fathom_error_t err;
        json_t *out = call_str(&codec_scaling_endpoint, bodies[i], &err);
        if (!out && fathom_code_http_status(err.code) != 422)
            fail_msg("%s: %d %s %s", bodies[i], fathom_code_http_status(err.code), err.field,
                     err.message);
        json_decref(out);
    }
}

/* ---- fit ---- */

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s (tests run from the repository root)", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static void test_fit_csv_reproduces_constants(void **state)
{
    (void)state;
    size_t len;
    char *csv = read_file(CSV, &len);
    json_t *body = json_pack("{s:s#}", "csv", csv, len);
    free(csv);
    fathom_error_t err;
    json_t *out = call(&codec_scaling_fit_endpoint, body, &err);
    if (!out)
        fail_msg("%s: %s", err.field, err.message);
    json_error_t jerr;
    json_t *want = json_load_file(FIT_EXPECTED, 0, &jerr);
    assert_non_null(want);
    const char *keys[] = {"loss_fit.a", "loss_fit.b", "loss_fit.c",
                          "param_fit.d", "param_fit.e", "param_fit.f"};
    for (size_t i = 0; i < 6; i++) {
        double g = get(out, keys[i]), w = get(want, keys[i]);
        if (!(fabs(g - w) <= 1e-4 * fabs(w)))
            fail_msg("%s = %.17g, expected %.17g (1e-4 relative)", keys[i], g, w);
    }
    /* What the calculator's Qhull frontier holds on this CSV: 21 points over 12 runs. */
    assert_int_equal(json_array_size(json_object_get(out, "frontier")), 21);
    assert_close(get(out, "frontier_runs"), 12, 0);
    assert_close(get(out, "runs_used"), 27, 0);
    json_decref(want);
    json_decref(out);
}

static void test_fit_json_runs(void **state)
{
    (void)state;
    /* The CSV converted to runs and sent as JSON gives the same fit. */
    size_t len;
    char *csv = read_file(CSV, &len);
    fathom_error_t err;
    json_t *runs = codec_scaling_csv_to_runs(csv, len, "csv", &err);
    free(csv);
    assert_non_null(runs);
    assert_int_equal(json_array_size(runs), 28);
    json_t *out = call(&codec_scaling_fit_endpoint, json_pack("{s:o}", "runs", runs), &err);
    if (!out)
        fail_msg("%s: %s", err.field, err.message);
    assert_close(get(out, "loss_fit.a"), 28.678776896926124, 1e-4);
    assert_close(get(out, "param_fit.e"), 0.7211575502975575, 1e-4);
    json_decref(out);
}

static void test_fit_refusals(void **state)
{
    (void)state;
    const codec_endpoint_t *ep = &codec_scaling_fit_endpoint;
    expect_422(ep, "{}", "runs");
    expect_422(ep, "{\"runs\":[],\"csv\":\"\"}", "csv");
    expect_422(ep, "{\"runs\":[]}", "runs");
    expect_422(ep, "{\"runs\":[{\"points\":[[1e9,4],[2e9,-1]]}]}", "runs[0].points[1][1]");
    expect_422(ep, "{\"runs\":[{\"points\":[[1e9,4,5]]}]}", "runs[0].points[0]");
    expect_422(ep, "{\"runs\":[{\"points\":[[1e9,4]],\"colour\":1}]}", "runs[0].colour");
    /* Fewer usable runs than the procedure needs, and fewer points than parameters. */
    expect_422(ep,
               "{\"runs\":[{\"points\":[[1e9,5],[2e9,4.5],[3e9,4.2],[4e9,4],[5e9,3.9],[6e9,3.8]]},"
               "{\"points\":[[2e9,5],[3e9,4.4],[4e9,4.1],[5e9,3.9],[6e9,3.8],[7e9,3.7]]}]}",
               "runs");
    expect_422(ep,
               "{\"runs\":[{\"points\":[[1e9,5],[2e9,4.5]]},{\"points\":[[2e9,5],[3e9,4.4]]},"
               "{\"points\":[[3e9,5],[4e9,4.4]]},{\"points\":[[4e9,5],[5e9,4.4]]}]}",
               "runs");
    expect_422(ep, "{\"csv\":\"a,b\\n1,2\\n\"}", "csv");
    expect_422(ep, "{\"csv\":\"\\\"global_step\\\",\\\"r - valid_loss\\\"\\n1,x\\n\"}", "csv");
    expect_422(ep, "{\"csv\":42}", "csv");
}

/* ---- training / run ---- */

static void test_training_codec(void **state)
{
    (void)state;
    json_error_t jerr;
    fathom_error_t err;
    json_t *v = json_loads("{\"tokens\":3e11,\"gpu_hour_price\":2,\"gpu_power_kw\":0.7}", 0,
                           &jerr);
    scaling_training_t t;
    assert_int_equal(codec_training_decode(v, "training", NULL, &t, &err), 0);
    assert_close(t.pue, 1.0, 0);
    assert_close(t.co2_kg_per_kwh, 0.534, 0);
    json_t *enc = codec_training_encode(&t);
    scaling_training_t t2;
    assert_int_equal(codec_training_decode(enc, "training", NULL, &t2, &err), 0);
    assert_memory_equal(&t, &t2, sizeof t);
    json_decref(enc);
    json_decref(v);

    scaling_run_cost_t r;
    assert_int_equal(scaling_run_cost(10.0, 1536, 2048, 1024, &t, &r, &err), 0);
    json_t *run = codec_run_encode(&r);
    assert_true(json_is_integer(json_object_get(run, "steps")));
    assert_close(get(run, "steps"), 95368, 0);
    assert_close(get(run, "gpu_hours"), 95368 * 10.0 / 3600 * 1024, 1e-12);
    json_decref(run);

    const char *bad[][2] = {
        {"{\"gpu_hour_price\":2,\"gpu_power_kw\":0.7}", "training.tokens"},
        {"{\"tokens\":0,\"gpu_hour_price\":2,\"gpu_power_kw\":0.7}", "training.tokens"},
        {"{\"tokens\":1e9,\"gpu_hour_price\":-2,\"gpu_power_kw\":0.7}", "training.gpu_hour_price"},
        {"{\"tokens\":1e9,\"gpu_hour_price\":2,\"gpu_power_kw\":0.7,\"pue\":0.5}", "training.pue"},
        {"{\"tokens\":1e9,\"gpu_hour_price\":2,\"gpu_power_kw\":0.7,\"gpus\":8}", "training.gpus"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *b = json_loads(bad[i][0], 0, &jerr);
        assert_int_equal(codec_training_decode(b, "training", NULL, &t, &err), -1);
        if (strcmp(err.field, bad[i][1]) != 0)
            fail_msg("%s: field %s, expected %s", bad[i][0], err.field, bad[i][1]);
        json_decref(b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_thirty_dollars),
        cmocka_unit_test(test_normalization),
        cmocka_unit_test(test_below_tip_warns),
        cmocka_unit_test(test_chinchilla),
        cmocka_unit_test(test_scaling_refusals),
        cmocka_unit_test(test_odd_gpus),
        cmocka_unit_test(test_fit_csv_reproduces_constants),
        cmocka_unit_test(test_fit_json_runs),
        cmocka_unit_test(test_fit_refusals),
        cmocka_unit_test(test_training_codec),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

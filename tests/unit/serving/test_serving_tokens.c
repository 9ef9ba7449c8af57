/* test_serving_tokens.c — a request's token count (codec_serving_token_count): a number, a mean
 * with a spread given as a standard deviation or as a 90th percentile, or uniform lengths
 * between a low and a high, the forms both POST /v1/inference and the serving plan take; every
 * bad count names its field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <math.h>

#include "serving_codec.h"

/* The standard normal's 90th percentile from the tables (Abramowitz and Stegun 26.2, table
 * 26.5: x = 1.281551566 for Q = 0.10). */
#define Z90 1.281551566

/* Decodes {"tokens": <text>} under path "traffic"; the return, mean, spread and uniform bounds
 * (into bounds[2] when given) as given back. */
static int count_in(const char *text, double *mean, double *spread, double *bounds,
                    fathom_error_t *err)
{
    json_error_t jerr;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &jerr);
    assert_non_null(v);
    json_t *obj = json_pack("{s:o}", "tokens", v);
    fathom_error_clear(err);
    *mean = *spread = -1;
    double low = -1, high = -1;
    int rc = codec_serving_token_count(obj, "traffic", "tokens", mean, spread, &low, &high, err);
    if (bounds)
        bounds[0] = low, bounds[1] = high;
    json_decref(obj);
    return rc;
}

static int count_of(const char *text, double *mean, double *spread, fathom_error_t *err)
{
    return count_in(text, mean, spread, NULL, err);
}

static void numbers_and_spreads(void **state)
{
    (void)state;
    fathom_error_t err;
    double mean, spread;
    assert_int_equal(count_of("2000", &mean, &spread, &err), 0);
    assert_float_equal(mean, 2000, 0);
    assert_float_equal(spread, 0, 0);
    assert_int_equal(count_of("{\"mean\": 1000}", &mean, &spread, &err), 0);
    assert_float_equal(spread, 0, 0);
    assert_int_equal(count_of("{\"mean\": 1000, \"spread\": 250}", &mean, &spread, &err), 0);
    assert_float_equal(mean, 1000, 0);
    assert_float_equal(spread, 250, 0);
    /* p90 = 1000 + 1.281551566 · 250 = 1320.3878915: the same spread of 250 */
    assert_int_equal(count_of("{\"mean\": 1000, \"p90\": 1320.3878915}", &mean, &spread, &err), 0);
    assert_float_equal(spread, 250, 1e-6);
    assert_float_equal(codec_serving_z90(), Z90, 1e-9);
    /* a p90 at the mean: no spread */
    assert_int_equal(count_of("{\"mean\": 1000, \"p90\": 1000}", &mean, &spread, &err), 0);
    assert_float_equal(spread, 0, 0);
}

/* Uniform lengths between 500 and 1,500 (vLLM's random dataset at 1,000 and range ratio 0.5):
 * mean 1,000, spread 1,000/√12 = 288.675; the bounds given back for the encoder. One length
 * (low = high) is a plain count; a number or a normal spread has no bounds. */
static void uniform_counts(void **state)
{
    (void)state;
    fathom_error_t err;
    double mean, spread, b[2];
    assert_int_equal(count_in("{\"low\": 500, \"high\": 1500}", &mean, &spread, b, &err), 0);
    assert_float_equal(mean, 1000, 0);
    assert_float_equal(spread, 288.67513459481287, 1e-9);
    assert_float_equal(b[0], 500, 0);
    assert_float_equal(b[1], 1500, 0);
    assert_int_equal(count_in("{\"low\": 700, \"high\": 700}", &mean, &spread, b, &err), 0);
    assert_float_equal(mean, 700, 0);
    assert_float_equal(spread, 0, 0);
    assert_float_equal(b[1], 0, 0);
    assert_int_equal(count_in("{\"mean\": 10, \"spread\": 2}", &mean, &spread, b, &err), 0);
    assert_float_equal(b[0], 0, 0);
    assert_float_equal(b[1], 0, 0);
    json_t *enc = codec_serving_token_count_encode(1000, 288.67513459481287, 500, 1500);
    assert_float_equal(json_number_value(json_object_get(enc, "low")), 500, 0);
    assert_float_equal(json_number_value(json_object_get(enc, "high")), 1500, 0);
    assert_null(json_object_get(enc, "mean"));
    json_decref(enc);
}

static void bad_counts_name_their_field(void **state)
{
    (void)state;
    static const struct {
        const char *text, *field;
    } cases[] = {
        {"0", "traffic.tokens"},
        {"\"200\"", "traffic.tokens"},
        {"{\"spread\": 5}", "traffic.tokens.mean"},
        {"{\"mean\": 1000, \"spread\": -1}", "traffic.tokens.spread"},
        {"{\"mean\": 1000, \"p90\": 900}", "traffic.tokens.p90"},
        {"{\"mean\": 1000, \"spread\": 10, \"p90\": 1100}", "traffic.tokens.p90"},
        {"{\"mean\": 1000, \"sd\": 10}", "traffic.tokens.sd"},
        {"{\"low\": 500}", "traffic.tokens.high"},
        {"{\"high\": 500}", "traffic.tokens.low"},
        {"{\"low\": 500, \"high\": 400}", "traffic.tokens.high"},
        {"{\"low\": 0, \"high\": 400}", "traffic.tokens.low"},
        {"{\"low\": 100, \"high\": 400, \"mean\": 250}", "traffic.tokens.mean"},
        {"{\"low\": 100, \"high\": 400, \"p90\": 350}", "traffic.tokens.p90"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        fathom_error_t err;
        double mean, spread;
        assert_int_equal(count_of(cases[k].text, &mean, &spread, &err), -1);
        assert_int_equal(err.code, FATHOM_E_INVALID_FIELD);
        assert_string_equal(err.field, cases[k].field);
    }
    /* absent */
    fathom_error_t err;
    double mean, spread;
    json_t *obj = json_object();
    double low, high;
    assert_int_equal(
        codec_serving_token_count(obj, "traffic", "tokens", &mean, &spread, &low, &high, &err), -1);
    assert_string_equal(err.field, "traffic.tokens");
    json_decref(obj);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(numbers_and_spreads),
        cmocka_unit_test(uniform_counts),
        cmocka_unit_test(bad_counts_name_their_field),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

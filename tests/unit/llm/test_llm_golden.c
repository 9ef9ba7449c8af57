/* test_llm_golden.c — the LLM model against Calculon's own outputs: the 800 cases of
 * tests/data/llm/ (copied from the golden data, Calculon commit caa4b11). Each case must give
 * the same verdict (ok / does not fit memory / infeasible) and, when estimated, all 96
 * statistics within 1e-9 relative (1e-9 absolute where Calculon's value is 0). On failure the
 * worst deviation of each statistic is printed with both values. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "llm.h"
#include "llm_codec.h"
#include "model_codec.h"

#define CASES "tests/data/llm/cases.jsonl"
#define EXPECTED "tests/data/llm/expected.jsonl"
#define TOL 1e-9

typedef struct {
    double dev; /* worst relative (or absolute at 0) deviation */
    double got, want;
    char case_name[128];
} worst_t;

static json_t *load_lines(const char *path, size_t *n)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fail_msg("cannot open %s (run from the repository root)", path);
        return NULL;
    }
    json_t *arr = json_array();
    json_error_t jerr;
    json_t *v;
    while ((v = json_loadf(f, JSON_DISABLE_EOF_CHECK | JSON_DECODE_ANY, &jerr)) != NULL)
        json_array_append_new(arr, v);
    fclose(f);
    *n = json_array_size(arr);
    return arr;
}

static void test_golden_cases(void **state)
{
    (void)state;
    size_t nc = 0, ne = 0;
    json_t *cases = load_lines(CASES, &nc);
    json_t *expected = load_lines(EXPECTED, &ne);
    assert_int_equal(nc, 800);
    assert_int_equal(ne, nc);
    codec_presets_t *presets = codec_presets_empty();
    static worst_t worst[LLM_STAT__COUNT];
    memset(worst, 0, sizeof worst);
    int verdict_failures = 0, stat_failures = 0, checked = 0;
    for (size_t i = 0; i < nc; i++) {
        const json_t *c = json_array_get(cases, i), *x = json_array_get(expected, i);
        const char *name = json_string_value(json_object_get(c, "name"));
        fathom_model_t m;
        llm_system_t s;
        llm_execution_t e;
        fathom_error_t err;
        fathom_error_clear(&err);
        if (codec_model_decode(json_object_get(c, "model"), "model", presets, &m, &err) ||
            codec_llm_system_decode(json_object_get(c, "system"), "system", presets, &s, &err) ||
            codec_llm_execution_decode(json_object_get(c, "execution"), "execution", &e, &err)) {
            printf("case %zu %s: decode failed: %s: %s\n", i, name, err.field, err.message);
            verdict_failures++;
            continue;
        }
        llm_result_t r;
        int rc = llm_estimate(&m, &s, &e, &r, &err);
        bool ok = json_is_true(json_object_get(x, "ok"));
        const char *kind = ok ? "ok" : json_string_value(json_object_get(x, "kind"));
        const char *got = rc != 0 ? (err.code == FATHOM_E_INFEASIBLE_EXECUTION ? "infeasible"
                                                                                : "error")
                          : r.fits_memory ? "ok"
                                          : "memory";
        if (strcmp(got, kind) != 0) {
            printf("case %zu %s: verdict %s, Calculon says %s (%s) [%s: %s]\n", i, name, got, kind,
                   json_string_value(json_object_get(x, "error")), err.field, err.message);
            verdict_failures++;
            continue;
        }
        if (rc != 0)
            continue;
        const json_t *stats = json_object_get(x, "stats");
        checked++;
        bool case_bad = false;
        for (int k = 0; k < LLM_STAT__COUNT; k++) {
            const json_t *w = json_object_get(stats, llm_stat_name((llm_stat_t)k));
            double want = json_is_number(w) ? json_number_value(w) : 0.0; /* null → 0 */
            double have = llm_stat_value(&r.stats, (llm_stat_t)k);
            double dev = want == 0 ? fabs(have) : fabs(have - want) / fabs(want);
            if (isnan(have) || isnan(dev))
                dev = INFINITY;
            if (dev > worst[k].dev || (isinf(dev) && !isinf(worst[k].dev))) {
                worst[k].dev = dev;
                worst[k].got = have;
                worst[k].want = want;
                snprintf(worst[k].case_name, sizeof worst[k].case_name, "%zu %s", i, name);
            }
            if (dev > TOL)
                case_bad = true;
        }
        if (case_bad)
            stat_failures++;
    }
    int bad_stats = 0;
    for (int k = 0; k < LLM_STAT__COUNT; k++)
        if (worst[k].dev > TOL) {
            bad_stats++;
            printf("stat %-36s worst dev %.3g: got %.17g want %.17g (case %s)\n",
                   llm_stat_name((llm_stat_t)k), worst[k].dev, worst[k].got, worst[k].want,
                   worst[k].case_name);
        }
    printf("golden: %zu cases, %d estimated and compared, %d verdict mismatches, %d cases with "
           "statistics off, %d statistics off\n",
           nc, checked, verdict_failures, stat_failures, bad_stats);
    codec_presets_free(presets);
    json_decref(cases);
    json_decref(expected);
    assert_int_equal(verdict_failures, 0);
    assert_int_equal(stat_failures, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_cases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

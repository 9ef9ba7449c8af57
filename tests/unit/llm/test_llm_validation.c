/* test_llm_validation.c — Calculon's validation against the sequence-parallelism paper:
 * Table 5's mean and worst error must be Calculon's 3.65% and 8.87% (golden README), and the
 * whole report rendered as text must equal what Calculon printed (tests/data/llm/
 * validation_calculon.txt, the output of `calculon llm-validation` at commit caa4b11). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "llm_codec.h"
#include "llm_validation.h"
#include "presets_test_util.h"

static void test_table5(void **state)
{
    (void)state;
    codec_presets_t *p = shipped_presets();
    fathom_error_t err;
    json_t *rep = codec_llm_validation_report(p, &err);
    if (!rep)
        fail_msg("validation: %s", err.message);
    const json_t *tab5 = NULL;
    size_t i;
    const json_t *t;
    json_array_foreach(json_object_get(rep, "tables"), i, t)
        if (strcmp(json_string_value(json_object_get(t, "name")), "tab5") == 0)
            tab5 = t;
    assert_non_null(tab5);
    double mean = json_number_value(json_object_get(tab5, "mean_abs_error_pct"));
    double worst = json_number_value(json_object_get(tab5, "max_abs_error_pct"));
    char m[32], w[32];
    snprintf(m, sizeof m, "%.2f", mean);
    snprintf(w, sizeof w, "%.2f", worst);
    printf("Table 5: mean %s%%, worst %s%% (Calculon: 3.65%%, 8.87%%)\n", m, w);
    assert_string_equal(m, "3.65");
    assert_string_equal(w, "8.87");
    json_decref(rep);
    codec_presets_free(p);
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

static void test_printout_matches_calculon(void **state)
{
    (void)state;
    codec_presets_t *p = shipped_presets();
    fathom_error_t err;
    json_t *rep = codec_llm_validation_report(p, &err);
    assert_non_null(rep);
    char *text = codec_llm_validation_text(rep);
    assert_non_null(text);
    const char *want = read_file("tests/data/llm/validation_calculon.txt");
    assert_non_null(want);
    if (strcmp(text, want) != 0)
        printf("--- got\n%s--- Calculon printed\n%s", text, want);
    assert_string_equal(text, want);
    free(text);
    json_decref(rep);
    codec_presets_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table5),
        cmocka_unit_test(test_printout_matches_calculon),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

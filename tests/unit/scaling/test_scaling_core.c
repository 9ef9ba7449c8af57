/* test_scaling_core.c — core/scaling against the reference: every case of the calculator's
 * golden file (tests/data/scaling/cases.jsonl), the calculator's printed $30 example, the
 * Chinchilla figures of the issue, and the run-cost arithmetic. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "scaling.h"
#include "scaling_internal.h"
#include "test_util.h"

#define CASES "tests/data/scaling/cases.jsonl"
#define TOL_SOLVER 1e-6 /* widths, hours, flos, params, loss */
#define TOL_MONEY 1e-9  /* dollars, kWh, CO2 */
#define TOL_TIP 1e-4    /* tipping points */

static scaling_amp_t amp_of(const char *s)
{
    return s[1] == '1' ? SCALING_AMP_O1 : s[1] == '2' ? SCALING_AMP_O2 : SCALING_AMP_O0;
}

static double num(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    if (!json_is_number(v))
        fail_msg("case member %s missing", key);
    return json_number_value(v);
}

static void check_shape(const char *what, scaling_shape_t got, const json_t *want, int line)
{
    int64_t d = json_integer_value(json_array_get(want, 0));
    int64_t w = json_integer_value(json_array_get(want, 1));
    if (got.depth != d || got.width != w)
        fail_msg("line %d: %s = (%lld, %lld), expected (%lld, %lld)", line, what,
                 (long long)got.depth, (long long)got.width, (long long)d, (long long)w);
}

static void run_case(const json_t *c, int line, int *counts)
{
    const char *kind = json_string_value(json_object_get(c, "kind"));
    const scaling_gpu_t *gpu = scaling_gpu_find(json_string_value(json_object_get(c, "gpu")));
    assert_non_null(gpu);
    scaling_amp_t amp = amp_of(json_string_value(json_object_get(c, "amp_mode")));
    const json_t *e = json_object_get(c, "expected");
    fathom_error_t err;
    if (strcmp(kind, "tipping_point") == 0) {
        scaling_tip_t tip;
        assert_int_equal(scaling_tipping_point(gpu, amp, &scaling_hf2020_param_fit, &tip, &err), 0);
        assert_close(tip.width, num(e, "width"), TOL_TIP);
        assert_close(tip.hours, num(e, "hours"), TOL_TIP);
        counts[0]++;
        return;
    }
    if (strcmp(kind, "width") == 0) {
        assert_close(scaling_width_to_hours(gpu, amp, &scaling_hf2020_param_fit, num(c, "width")),
                     num(e, "hours"), TOL_SOLVER);
        counts[1]++;
        return;
    }
    scaling_plan_request_t req = {*gpu,
                                  amp,
                                  strcmp(kind, "hours") == 0 ? SCALING_BUDGET_HOURS
                                                             : SCALING_BUDGET_DOLLARS,
                                  num(c, kind),
                                  SCALING_DEFAULT_CO2_KG_PER_KWH,
                                  scaling_hf2020_loss_fit,
                                  scaling_hf2020_param_fit};
    scaling_plan_t p;
    if (scaling_plan(&req, &p, &err))
        fail_msg("line %d: %s: %s", line, err.field, err.message);
    assert_false(p.below_tip);
    assert_close(p.width, num(e, "width"), TOL_SOLVER);
    assert_close(p.model_params, num(e, "model_params"), TOL_SOLVER);
    assert_close(p.flos, num(e, "flos"), TOL_SOLVER);
    assert_close(p.optimal_params, num(e, "optimal_params"), TOL_SOLVER);
    assert_close(p.loss, num(e, "loss"), TOL_SOLVER);
    check_shape("optimal_shape", p.optimal_shape, json_object_get(e, "optimal_shape"), line);
    check_shape("alternate_shape", p.alternate_shape, json_object_get(e, "alternate_shape"), line);
    assert_close(p.dollars, num(e, "dollars"), TOL_MONEY);
    assert_close(p.kwh, num(e, "kwh"), TOL_MONEY);
    assert_close(p.co2_kg, num(e, "co2_kg"), TOL_MONEY);
    if (json_object_get(e, "hours"))
        assert_close(p.hours, num(e, "hours"), TOL_SOLVER);
    counts[2]++;
}

static void test_golden_cases(void **state)
{
    (void)state;
    FILE *f = fopen(CASES, "r");
    if (!f)
        fail_msg("cannot open %s (tests run from the repository root)", CASES);
    char buf[8192];
    int line = 0, counts[3] = {0, 0, 0};
    while (fgets(buf, sizeof buf, f)) {
        line++;
        json_error_t jerr;
        json_t *c = json_loads(buf, 0, &jerr);
        if (!c)
            fail_msg("line %d: %s", line, jerr.text);
        run_case(c, line, counts);
        json_decref(c);
    }
    fclose(f);
    /* 15 tipping points, 60 widths, 140 hour and dollar budgets */
    assert_int_equal(counts[0], 15);
    assert_int_equal(counts[1], 60);
    assert_int_equal(counts[2], 140);
}

/* "$30 on a V100 in O0 → 14.963 h, width 1042.95, 4.7280e17 FLOs, 6.2112e7 optimal parameters,
 * loss 3.134, optimal shape (8, 1056), alternate (13, 824)" (the calculator's own example). */
static void test_thirty_dollars(void **state)
{
    (void)state;
    scaling_plan_request_t req = {*scaling_gpu_find("V100"), SCALING_AMP_O0,
                                  SCALING_BUDGET_DOLLARS,    30.0,
                                  SCALING_DEFAULT_CO2_KG_PER_KWH, scaling_hf2020_loss_fit,
                                  scaling_hf2020_param_fit};
    scaling_plan_t p;
    fathom_error_t err;
    assert_int_equal(scaling_plan(&req, &p, &err), 0);
    assert_close(p.hours, 14.963, 0.0005 / 14.963);
    assert_close(p.width, 1042.95, 0.005 / 1042.95);
    assert_close(p.flos, 4.7280e17, 0.00005 / 4.7280);
    assert_close(p.optimal_params, 6.2112e7, 0.00005 / 6.2112);
    assert_close(p.loss, 3.134, 0.0005 / 3.134);
    assert_int_equal(p.optimal_shape.depth, 8);
    assert_int_equal(p.optimal_shape.width, 1056);
    assert_int_equal(p.alternate_shape.depth, 13);
    assert_int_equal(p.alternate_shape.width, 824);
}

static void test_below_tipping_point(void **state)
{
    (void)state;
    const scaling_gpu_t *v100 = scaling_gpu_find("V100");
    scaling_tip_t tip;
    fathom_error_t err;
    assert_int_equal(scaling_tipping_point(v100, SCALING_AMP_O0, &scaling_hf2020_param_fit, &tip,
                                           &err),
                     0);
    scaling_plan_request_t req = {*v100,      SCALING_AMP_O0, SCALING_BUDGET_HOURS,
                                  0.5 * tip.hours, 0.534,    scaling_hf2020_loss_fit,
                                  scaling_hf2020_param_fit};
    scaling_plan_t p;
    assert_int_equal(scaling_plan(&req, &p, &err), 0);
    assert_true(p.below_tip);
    assert_close(p.width, tip.width, 1e-12);
    assert_close(p.hours, tip.hours, 1e-12);

    double w;
    assert_int_equal(scaling_hours_to_width(v100, SCALING_AMP_O0, &scaling_hf2020_param_fit,
                                            0.5 * tip.hours, "hours", &w, &err),
                     -1);
    assert_int_equal(err.code, FATHOM_E_NO_CONVERGENCE);
    assert_string_equal(err.field, "hours");

    /* A budget just above the tip still lands on the larger root. */
    assert_int_equal(scaling_hours_to_width(v100, SCALING_AMP_O0, &scaling_hf2020_param_fit,
                                            tip.hours * 1.0001, "hours", &w, &err),
                     0);
    assert_true(w >= tip.width);
    assert_close(scaling_width_to_hours(v100, SCALING_AMP_O0, &scaling_hf2020_param_fit, w),
                 tip.hours * 1.0001, 1e-9);
}

static void test_inverses(void **state)
{
    (void)state;
    const double widths[] = {16, 128, 1042.95, 4096, 20000};
    for (size_t i = 0; i < sizeof widths / sizeof widths[0]; i++)
        assert_close(scaling_params_to_width(scaling_param_polynomial(widths[i])), widths[i],
                     1e-12);
    const double xs[] = {1e6, 1e9, 1e12};
    for (size_t i = 0; i < 3; i++) {
        assert_close(scaling_loss_to_compute(&scaling_hf2020_loss_fit,
                                             scaling_compute_to_loss(&scaling_hf2020_loss_fit,
                                                                     xs[i])),
                     xs[i], 1e-9);
        assert_close(scaling_params_to_compute(&scaling_hf2020_param_fit,
                                               scaling_compute_to_params(
                                                   &scaling_hf2020_param_fit, xs[i])),
                     xs[i], 1e-9);
    }
    assert_null(scaling_gpu_find("H100"));
    assert_string_equal(scaling_gpu_name(0), "V100");
    assert_null(scaling_gpu_name(5));
}

/* Fathom's one Chinchilla rule: Epoch AI's fit (Besiroglu et al. 2024), E 1.8172, A 482.01,
 * B 2085.43, α 0.3478, β 0.3658. By hand:
 *   a = β/(α+β) = 0.3658/0.7136 = 0.51261
 *   G = (αA/(βB))^(1/(α+β)) = (167.6431/762.8503)^(1/0.7136) = 0.219759^1.40135 = 0.11963
 *   C = 1e21: C/6 = 1.6667e20, ln = 46.5624, ·a = 23.8684, e^ = 2.3226e10,
 *             N = 0.11963·2.3226e10 = 2.7785e9, D = 1.6667e20/2.7785e9 = 5.9985e10 (21.59 a
 *             parameter), L = 1.8172 + 482.01/1924.3 + 2085.43/8762 = 1.8172 + 0.25049 + 0.23801
 *             = 2.3057. */
static void test_chinchilla(void **state)
{
    (void)state;
    const scaling_chinchilla_t *law = &scaling_chinchilla_law;
    scaling_chinchilla_point_t p = scaling_chinchilla_optimal(law, 1e21);
    assert_close(p.params, 2.7785e9, 2e-4);
    assert_close(p.tokens, 5.9985e10, 2e-4);
    assert_close(p.tokens / p.params, 21.59, 5e-4);
    assert_close(p.loss, 2.3057, 1e-4);
    assert_close(6.0 * p.params * p.tokens, 1e21, 1e-12);
    /* The optimum is a minimum along 6ND = C. */
    for (double k = 0.5; k <= 2.0; k *= 2.0) {
        scaling_chinchilla_point_t q = scaling_chinchilla_loss(law, p.params * k,
                                                               p.tokens / k);
        assert_true(q.loss >= p.loss);
    }
    /* Chinchilla itself, 70e9 parameters on 1.4e12 tokens: 482.01/70e9^0.3478 = 482.01/5914.6
     * = 0.081495, 2085.43/1.4e12^0.3658 = 2085.43/27737 = 0.075187, L = 1.973882. */
    scaling_chinchilla_point_t c = scaling_chinchilla_loss(law, 70e9, 1.4e12);
    assert_close(c.loss, 1.973882, 1e-6);
    assert_close(c.flos, 6.0 * 70e9 * 1.4e12, 1e-15);
    /* Read backwards: a model of 1e9 parameters is optimal at C/6 = (1e9/G)^(1/a) =
     * (8.3591e9)^1.95079 = e^(22.8466·1.95079) = e^44.5690 = 2.2703e19, so D = 2.2703e10 (22.7 a
     * parameter); and its optimum read forwards is the same model. */
    scaling_chinchilla_point_t n = scaling_chinchilla_optimal_for_params(law, 1e9);
    assert_close(n.params, 1e9, 1e-15);
    assert_close(n.tokens, 2.2703e10, 2e-4);
    assert_close(scaling_chinchilla_optimal(law, n.flos).params, 1e9, 1e-12);
}

static void test_run_cost(void **state)
{
    (void)state;
    /* 1000 tokens in batches of 3 × 100: 3.33 → 4 steps (rounded up). */
    scaling_training_t t = {1000, 2.5, 0.4, 1.2, 0.5};
    scaling_run_cost_t r;
    fathom_error_t err;
    assert_int_equal(scaling_run_cost(1.5, 3, 100, 8, &t, &r, &err), 0);
    assert_close(r.steps, 4, 0);
    assert_close(r.wall_time_s, 6.0, 1e-15);
    assert_close(r.days, 6.0 / 86400, 1e-15);
    assert_close(r.gpu_hours, 6.0 / 3600 * 8, 1e-15);
    assert_close(r.dollars, 6.0 / 3600 * 8 * 2.5, 1e-15);
    assert_close(r.kwh, 0.4 * 8 * 6.0 / 3600 * 1.2, 1e-15);
    assert_close(r.co2_kg, 0.4 * 8 * 6.0 / 3600 * 1.2 * 0.5, 1e-15);

    /* GPT-3-like: 300e9 tokens, 1536 × 2048 per step, 10 s a step on 1024 GPUs. */
    scaling_training_t g = {300e9, 2.0, 0.7, 1.1, SCALING_DEFAULT_CO2_KG_PER_KWH};
    assert_int_equal(scaling_run_cost(10.0, 1536, 2048, 1024, &g, &r, &err), 0);
    assert_close(r.steps, 95368, 0); /* ceil(300e9 / 3145728) = ceil(95367.43) */
    assert_close(r.days, 95368 * 10.0 / 86400, 1e-12);

    t.pue = 0.9;
    assert_int_equal(scaling_run_cost(1.5, 3, 100, 8, &t, &r, &err), -1);
    assert_string_equal(err.field, "training.pue");
    t.pue = 1.0;
    t.tokens = 0;
    assert_int_equal(scaling_run_cost(1.5, 3, 100, 8, &t, &r, &err), -1);
    assert_string_equal(err.field, "training.tokens");
    t.tokens = 10;
    assert_int_equal(scaling_run_cost(0.0, 3, 100, 8, &t, &r, &err), -1);
    assert_string_equal(err.field, "step_time_s");
    assert_int_equal(scaling_run_cost(1.0, 3, 100, 0, &t, &r, &err), -1);
    assert_string_equal(err.field, "num_gpus");
}

static void test_plan_refusals(void **state)
{
    (void)state;
    scaling_plan_request_t req = {*scaling_gpu_find("P100"), SCALING_AMP_O1,
                                  SCALING_BUDGET_WIDTH,      8.0,
                                  0.534,                     scaling_hf2020_loss_fit,
                                  scaling_hf2020_param_fit};
    scaling_plan_t p;
    fathom_error_t err;
    assert_int_equal(scaling_plan(&req, &p, &err), -1);
    assert_string_equal(err.field, "width");
    req.budget_kind = SCALING_BUDGET_DOLLARS;
    req.budget = -3;
    assert_int_equal(scaling_plan(&req, &p, &err), -1);
    assert_string_equal(err.field, "dollars");
    req.budget_kind = SCALING_BUDGET_HOURS;
    req.budget = 0;
    assert_int_equal(scaling_plan(&req, &p, &err), -1);
    assert_string_equal(err.field, "hours");
    /* A width below the tipping width is evaluated, with a warning flag. */
    req.budget_kind = SCALING_BUDGET_WIDTH;
    req.budget = 64;
    assert_int_equal(scaling_plan(&req, &p, &err), 0);
    assert_true(p.below_tip);
    assert_close(p.width, 64, 0);
}

/* The frontier replay against vertices Qhull itself computed on a data set that needs a
 * pre-merge (tests/data/scaling/qhull_merge_case.json). */
static void test_qhull_replay(void **state)
{
    (void)state;
    json_error_t jerr;
    json_t *doc = json_load_file("tests/data/scaling/qhull_merge_case.json", 0, &jerr);
    if (!doc)
        fail_msg("qhull_merge_case.json: %s", jerr.text);
    const json_t *pts = json_object_get(doc, "points");
    size_t n = json_array_size(pts);
    double *x = calloc(n, sizeof *x), *y = calloc(n, sizeof *y);
    bool *good = calloc(n, sizeof *good);
    bool *want = calloc(n, sizeof *want);
    assert_true(x && y && good && want);
    for (size_t i = 0; i < n; i++) {
        x[i] = json_number_value(json_array_get(json_array_get(pts, i), 0));
        y[i] = json_number_value(json_array_get(json_array_get(pts, i), 1));
    }
    const json_t *gv = json_object_get(doc, "good_vertices");
    for (size_t i = 0; i < json_array_size(gv); i++)
        want[json_integer_value(json_array_get(gv, i))] = true;
    const json_t *anchor = json_object_get(doc, "anchor");
    size_t ngood = 0;
    assert_int_equal(scaling__qhull_frontier(x, y, n,
                                             json_number_value(json_array_get(anchor, 0)),
                                             json_number_value(json_array_get(anchor, 1)), good,
                                             &ngood),
                     0);
    for (size_t i = 0; i < n; i++)
        if (good[i] != want[i])
            fail_msg("point %zu (%.17g, %.17g): replay says %s, Qhull says %s", i, x[i], y[i],
                     good[i] ? "frontier" : "not frontier", want[i] ? "frontier" : "not");
    assert_int_equal(ngood, json_array_size(gv));
    free(x);
    free(y);
    free(good);
    free(want);
    json_decref(doc);
}

static void test_fit_refusals_core(void **state)
{
    (void)state;
    /* Collinear points span no hull; too few runs; flat losses at a huge compute scale. */
    double x[6] = {1, 2, 3, 4, 5, 6}, l[6] = {6, 5, 4, 3, 2, 1};
    scaling_run_t runs[3] = {{x, l, 6, 0}, {x, l, 6, 0}, {x, l, 6, 0}};
    scaling_fit_result_t r;
    fathom_error_t err;
    assert_int_equal(scaling_fit(runs, 2, "runs", &r, &err), -1);
    assert_string_equal(err.field, "runs");
    assert_int_equal(scaling_fit(runs, 3, "runs", &r, &err), -1);
    assert_string_equal(err.field, "runs");
    double bad[6] = {1, 2, -3, 4, 5, 6};
    runs[1].x = bad;
    assert_int_equal(scaling_fit(runs, 3, "csv", &r, &err), -1);
    assert_string_equal(err.field, "csv");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_cases),   cmocka_unit_test(test_thirty_dollars),
        cmocka_unit_test(test_below_tipping_point), cmocka_unit_test(test_inverses),
        cmocka_unit_test(test_chinchilla),     cmocka_unit_test(test_run_cost),
        cmocka_unit_test(test_plan_refusals), cmocka_unit_test(test_qhull_replay),
        cmocka_unit_test(test_fit_refusals_core),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

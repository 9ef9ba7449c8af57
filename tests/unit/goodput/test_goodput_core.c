/* test_goodput_core.c — the goodput model, optimizer and fit (core/goodput) against the seed's
 * reference outputs in tests/data/goodput/ (copied from shared/golden/goodput; see its README):
 * 300 evaluate/optimize cases to 1e-9 relative with exact integers, and 40 fits whose objective
 * must be no worse than the seed's. Plus the fixing rules on synthetic measurements, the
 * analytic gradient against finite differences, and the model's refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "goodput.h"

#define CASES_PATH "tests/data/goodput/cases.jsonl"
#define FIT_CASES_PATH "tests/data/goodput/fit_cases.jsonl"
#define REL_TOL 1e-9

/* Every line of a JSONL file as an array (new reference); fails the test if unreadable. */
static json_t *load_jsonl(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("cannot open %s (tests run from the repository root)", path);
    json_t *all = json_array();
    char line[1 << 16];
    int lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (line[0] == '\n' || line[0] == '\0')
            continue;
        json_error_t jerr;
        json_t *v = json_loads(line, 0, &jerr);
        if (!v)
            fail_msg("%s:%d: %s", path, lineno, jerr.text);
        json_array_append_new(all, v);
    }
    fclose(f);
    return all;
}

static double num(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    if (!json_is_number(v))
        fail_msg("missing number \"%s\"", key);
    return json_number_value(v);
}

static int64_t integer(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    if (!json_is_integer(v))
        fail_msg("missing integer \"%s\"", key);
    return (int64_t)json_integer_value(v);
}

static goodput_perf_params_t perf_from(const json_t *o)
{
    return (goodput_perf_params_t){num(o, "alpha_c"), num(o, "beta_c"), num(o, "alpha_n"),
                                   num(o, "beta_n"),  num(o, "alpha_r"), num(o, "beta_r"),
                                   num(o, "gamma")};
}

static goodput_model_t model_from(const json_t *c)
{
    const json_t *g = json_object_get(c, "grad_params");
    return (goodput_model_t){perf_from(json_object_get(c, "perf_params")),
                             {num(g, "sqr"), num(g, "var")},
                             integer(c, "init_batch_size")};
}

static void expect_rel(const char *what, size_t idx, double got, double want)
{
    double tol = REL_TOL * fabs(want);
    if (!(fabs(got - want) <= tol))
        fail_msg("case %zu %s: got %.17g, expected %.17g (rel err %.3g)", idx, what, got, want,
                 want != 0 ? fabs(got - want) / fabs(want) : fabs(got));
}

static void expect_int(const char *what, size_t idx, int64_t got, int64_t want)
{
    if (got != want)
        fail_msg("case %zu %s: got %lld, expected %lld", idx, what, (long long)got,
                 (long long)want);
}

static void test_evaluate_cases(void **state)
{
    (void)state;
    json_t *cases = load_jsonl(CASES_PATH);
    size_t i, count = 0;
    json_t *c;
    json_array_foreach(cases, i, c) {
        if (strcmp(json_string_value(json_object_get(c, "kind")), "evaluate") != 0)
            continue;
        goodput_model_t m = model_from(c);
        goodput_config_t cfg = {integer(c, "num_nodes"), integer(c, "num_replicas"),
                                integer(c, "atomic_bsz"), integer(c, "accum_steps")};
        goodput_eval_t ev;
        fathom_error_t err;
        fathom_error_clear(&err);
        if (goodput_evaluate(&m, &cfg, &ev, &err))
            fail_msg("case %zu refused: %s %s", i, err.field, err.message);
        const json_t *e = json_object_get(c, "expected");
        expect_rel("throughput", i, ev.throughput, num(e, "throughput"));
        expect_rel("efficiency", i, ev.efficiency, num(e, "efficiency"));
        expect_rel("goodput", i, ev.goodput, num(e, "goodput"));
        count++;
    }
    json_decref(cases);
    assert_int_equal(count, 123);
}

static int64_t range_bound(const json_t *options, int which)
{
    const json_t *r = json_object_get(options, "atomic_bsz_range");
    const json_t *v = r ? json_array_get(r, (size_t)which) : NULL;
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : 0;
}

static void test_optimize_cases(void **state)
{
    (void)state;
    json_t *cases = load_jsonl(CASES_PATH);
    size_t i, count = 0;
    json_t *c;
    json_array_foreach(cases, i, c) {
        if (strcmp(json_string_value(json_object_get(c, "kind")), "optimize") != 0)
            continue;
        goodput_model_t m = model_from(c);
        const json_t *o = json_object_get(c, "options");
        const json_t *mb = json_object_get(o, "max_batch_size");
        goodput_optimize_opts_t opts = {
            .max_batch_size = json_is_integer(mb) ? (int64_t)json_integer_value(mb) : 0,
            .min_atomic_bsz = range_bound(o, 0),
            .max_atomic_bsz = range_bound(o, 1),
            .accumulation = json_is_true(json_object_get(o, "accumulation")),
        };
        goodput_optimum_t best;
        fathom_error_t err;
        fathom_error_clear(&err);
        if (goodput_optimize(&m, integer(c, "num_nodes"), integer(c, "num_replicas"), &opts, &best,
                             &err))
            fail_msg("case %zu refused: %s %s", i, err.field, err.message);
        const json_t *e = json_object_get(c, "expected");
        expect_rel("goodput", i, best.best.goodput, num(e, "goodput"));
        expect_int("atomic_bsz", i, best.best.atomic_bsz, integer(e, "atomic_bsz"));
        expect_int("accum_steps", i, best.best.accum_steps, integer(e, "accum_steps"));
        expect_int("batch_size", i, best.best.batch_size,
                   integer(c, "num_replicas") * integer(e, "atomic_bsz") *
                       (integer(e, "accum_steps") + 1));
        count++;
    }
    json_decref(cases);
    assert_int_equal(count, 177);
}

/* The seed's objective written out independently of the core, to check the reported value. */
static double reference_objective(const goodput_perf_params_t *p, const goodput_measurement_t *r,
                                  size_t n)
{
    double s1 = 0, s2 = 0;
    for (size_t i = 0; i < n; i++) {
        double pa = p->alpha_c + p->beta_c * (double)r[i].atomic_bsz;
        double a = 1e-8, b = 1e-8;
        if (r[i].num_nodes > 1) {
            a = p->alpha_n;
            b = p->beta_n;
        } else if (r[i].num_replicas > 1) {
            a = p->alpha_r;
            b = p->beta_r;
        }
        double net = a + b * fmax((double)r[i].num_replicas - 2, 1e-8);
        double lo = log(pow(pa, p->gamma) + pow(net, p->gamma)) / p->gamma;
        s1 += pow(log(pa) - log(r[i].accum_step_time), 2);
        s2 += pow(lo - log(r[i].optim_step_time), 2);
    }
    return sqrt(s1 / (double)n) + sqrt(s2 / (double)n) + 1e-3 * pow(p->gamma - 1, 2) +
           1e-2 * (pow(p->beta_n / p->alpha_n, 2) + pow(p->beta_r / p->alpha_r, 2));
}

/* Bounds, and the fixing rules and prior of the seed, checked from the data alone. */
static void check_fit_rules(size_t idx, const goodput_measurement_t *r, size_t n,
                            const goodput_fit_t *fit)
{
    const goodput_perf_params_t *p = &fit->params;
    const double vals[6] = {p->alpha_c, p->beta_c, p->alpha_n, p->beta_n, p->alpha_r, p->beta_r};
    for (int j = 0; j < 6; j++)
        if (!(vals[j] >= 1e-8) || !isfinite(vals[j]))
            fail_msg("fit %zu: parameter %d = %.17g is outside [1e-8, inf)", idx, j, vals[j]);
    if (!(p->gamma >= 1.0 && p->gamma <= 10.0))
        fail_msg("fit %zu: gamma = %.17g is outside [1, 10]", idx, p->gamma);
    bool multi = false, single_multi = false, over_two = false, one_bsz = true;
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        multi |= r[i].num_nodes > 1;
        single_multi |= r[i].num_nodes == 1 && r[i].num_replicas > 1;
        over_two |= r[i].num_replicas > 2;
        one_bsz &= r[i].atomic_bsz == r[0].atomic_bsz;
        sum += r[i].accum_step_time;
    }
    if (one_bsz) {
        double want = sum / (double)n / 2;
        if (fabs(p->alpha_c - want) > 1e-15 * want)
            fail_msg("fit %zu: alpha_c %.17g, expected fixed at mean/2 = %.17g", idx, p->alpha_c,
                     want);
        assert_true(fit->fixed.alpha_c);
    } else {
        assert_false(fit->fixed.alpha_c);
    }
    double beta_r_fixed = (!single_multi || !over_two) ? 1e-8 : p->beta_r;
    if (!single_multi && p->alpha_r != 1e-8)
        fail_msg("fit %zu: alpha_r %.17g, expected fixed at 1e-8", idx, p->alpha_r);
    if (p->beta_r != beta_r_fixed)
        fail_msg("fit %zu: beta_r %.17g, expected fixed at 1e-8", idx, p->beta_r);
    if (!multi) {
        /* Fixed at the lower bound during the fit, then raised by the prior. */
        double an = fmax(1e-8, p->alpha_r * 1.1), bn = fmax(1e-8, p->beta_r * 1.1);
        if (p->alpha_n != an || p->beta_n != bn)
            fail_msg("fit %zu: alpha_n, beta_n = %.17g, %.17g; prior expects %.17g, %.17g", idx,
                     p->alpha_n, p->beta_n, an, bn);
    } else if (!over_two && p->beta_n != 1e-8) {
        fail_msg("fit %zu: beta_n %.17g, expected fixed at 1e-8", idx, p->beta_n);
    }
    assert_int_equal(fit->fixed.alpha_n, !multi);
    assert_int_equal(fit->fixed.beta_n, !multi || !over_two);
    assert_int_equal(fit->fixed.alpha_r, !single_multi);
    assert_int_equal(fit->fixed.beta_r, !single_multi || !over_two);
    double obj = reference_objective(p, r, n);
    if (fabs(obj - fit->objective) > 1e-12 * obj)
        fail_msg("fit %zu: reported objective %.17g, recomputed %.17g", idx, fit->objective, obj);
}

static void test_fit_cases(void **state)
{
    (void)state;
    json_t *cases = load_jsonl(FIT_CASES_PATH);
    size_t i;
    json_t *c;
    double worst = -1;
    json_array_foreach(cases, i, c) {
        const json_t *ms = json_object_get(c, "measurements");
        size_t n = json_array_size(ms);
        goodput_measurement_t rows[64];
        assert_true(n <= 64);
        for (size_t k = 0; k < n; k++) {
            const json_t *m = json_array_get(ms, k);
            rows[k] = (goodput_measurement_t){integer(m, "num_nodes"), integer(m, "num_replicas"),
                                              integer(m, "atomic_bsz"),
                                              num(m, "accum_step_time"),
                                              num(m, "optim_step_time")};
        }
        goodput_fit_t fit;
        fathom_error_t err;
        fathom_error_clear(&err);
        if (goodput_fit_perf_params(rows, n, &fit, &err))
            fail_msg("fit %zu refused: %s %s", i, err.field, err.message);
        double want = num(json_object_get(c, "expected"), "objective");
        if (!(fit.objective <= want + 1e-6))
            fail_msg("fit %zu: objective %.17g is worse than the seed's %.17g", i, fit.objective,
                     want);
        if (fit.objective - want > worst)
            worst = fit.objective - want;
        check_fit_rules(i, rows, n, &fit);
    }
    print_message("fit: worst objective − reference = %.3g\n", worst);
    assert_int_equal(json_array_size(cases), 40);
    json_decref(cases);
}

/* Synthetic step times from known parameters, with a deterministic ±3% wobble. */
static size_t synth(goodput_measurement_t *rows, const int64_t (*cfg)[3], size_t n)
{
    goodput_perf_params_t p = {0.1, 0.005, 0.05, 0.01, 0.02, 0.004, 1.5};
    for (size_t i = 0; i < n; i++) {
        goodput_config_t c = {cfg[i][0], cfg[i][1], cfg[i][2], 0};
        double accum = goodput_accum_time(&p, (double)c.atomic_bsz);
        double net = goodput_network_time(&p, (double)c.num_nodes, (double)c.num_replicas);
        double optim = exp(goodput_log_optim_time(&p, accum, net));
        double wobble = 1 + 0.03 * sin(1.7 * (double)i + 0.3);
        rows[i] = (goodput_measurement_t){c.num_nodes, c.num_replicas, c.atomic_bsz,
                                          accum * wobble, optim / wobble};
    }
    return n;
}

static void run_synthetic(size_t idx, const int64_t (*cfg)[3], size_t n)
{
    goodput_measurement_t rows[16];
    synth(rows, cfg, n);
    goodput_fit_t fit;
    fathom_error_t err;
    fathom_error_clear(&err);
    if (goodput_fit_perf_params(rows, n, &fit, &err))
        fail_msg("synthetic fit %zu refused: %s %s", idx, err.field, err.message);
    check_fit_rules(idx, rows, n, &fit);
}

static void test_fit_fixing_rules(void **state)
{
    (void)state;
    /* One atomic batch size, one replica: alpha_c, and all network terms fixed. */
    static const int64_t one_bsz[][3] = {{1, 1, 64}, {1, 1, 64}, {1, 1, 64}};
    /* Single node, at most two replicas: alpha_n/beta_n fixed (then prior), beta_r fixed. */
    static const int64_t two_rep[][3] = {{1, 1, 16}, {1, 2, 32}, {1, 2, 64}, {1, 1, 128}};
    /* Multi-node but no single-node multi-replica row: alpha_r and beta_r fixed. */
    static const int64_t no_intra[][3] = {{1, 1, 16}, {2, 4, 32}, {4, 8, 64}, {2, 2, 128}};
    /* Multi-node, nothing above two replicas: both betas fixed. */
    static const int64_t two_max[][3] = {{1, 1, 16}, {2, 2, 32}, {1, 2, 64}, {2, 2, 128}};
    /* Single node only, many replicas: inter-node terms fixed, then the prior. */
    static const int64_t one_node[][3] = {{1, 1, 16}, {1, 4, 32}, {1, 8, 64}, {1, 2, 128}};
    run_synthetic(100, one_bsz, 3);
    run_synthetic(101, two_rep, 4);
    run_synthetic(102, no_intra, 4);
    run_synthetic(103, two_max, 4);
    run_synthetic(104, one_node, 4);
}

static void test_fit_gradient(void **state)
{
    (void)state;
    static const int64_t cfg[][3] = {{1, 1, 16}, {1, 4, 32}, {2, 8, 64}, {1, 2, 128}, {4, 16, 8}};
    goodput_measurement_t rows[5];
    synth(rows, cfg, 5);
    goodput_perf_params_t p = {0.08, 0.004, 0.06, 0.02, 0.03, 0.002, 2.2};
    double g[GOODPUT_NUM_PERF_PARAMS];
    goodput_fit_objective(&p, rows, 5, g);
    double *v = &p.alpha_c;
    for (int j = 0; j < GOODPUT_NUM_PERF_PARAMS; j++) {
        double save = v[j], h = 1e-6 * fabs(save);
        v[j] = save + h;
        double fp = goodput_fit_objective(&p, rows, 5, NULL);
        v[j] = save - h;
        double fm = goodput_fit_objective(&p, rows, 5, NULL);
        v[j] = save;
        double fd = (fp - fm) / (2 * h);
        if (fabs(fd - g[j]) > 1e-6 * fmax(1.0, fabs(fd)))
            fail_msg("gradient %d: analytic %.12g, central difference %.12g", j, g[j], fd);
    }
}

static void expect_refusal(int rc, const fathom_error_t *err, const char *field)
{
    assert_int_equal(rc, -1);
    assert_int_equal(fathom_code_http_status(err->code), 422);
    assert_string_equal(err->field, field);
}

static void test_refusals(void **state)
{
    (void)state;
    const goodput_model_t good = {{0.1, 0.01, 0.05, 0.01, 0.02, 0.004, 1.5}, {0.01, 0.1}, 32};
    goodput_eval_t ev;
    goodput_optimum_t opt;
    fathom_error_t err;
    goodput_model_t m = good;
    m.perf.gamma = 10.5;
    expect_refusal(goodput_evaluate(&m, &(goodput_config_t){1, 1, 32, 0}, &ev, &err), &err,
                   "perf_params.gamma");
    m = good;
    m.perf.gamma = 0.99;
    expect_refusal(goodput_evaluate(&m, &(goodput_config_t){1, 1, 32, 0}, &ev, &err), &err,
                   "perf_params.gamma");
    m = good;
    m.perf.beta_r = 0;
    expect_refusal(goodput_evaluate(&m, &(goodput_config_t){1, 1, 32, 0}, &ev, &err), &err,
                   "perf_params.beta_r");
    m = good;
    m.perf.alpha_c = -1;
    expect_refusal(goodput_evaluate(&m, &(goodput_config_t){1, 1, 32, 0}, &ev, &err), &err,
                   "perf_params.alpha_c");
    m = good;
    m.grad.var = -0.1;
    expect_refusal(goodput_evaluate(&m, &(goodput_config_t){1, 1, 32, 0}, &ev, &err), &err,
                   "grad_params.var");
    expect_refusal(goodput_evaluate(&good, &(goodput_config_t){3, 2, 32, 0}, &ev, &err), &err,
                   "num_nodes");
    expect_refusal(goodput_evaluate(&good, &(goodput_config_t){1, 1, 16, 0}, &ev, &err), &err,
                   "atomic_bsz");
    expect_refusal(goodput_evaluate(&good, &(goodput_config_t){1, 1, 0, 3}, &ev, &err), &err,
                   "atomic_bsz");
    expect_refusal(goodput_evaluate(&good, &(goodput_config_t){1, 1, 32, -1}, &ev, &err), &err,
                   "accum_steps");
    expect_refusal(goodput_optimize(&good, 4, 2, &(goodput_optimize_opts_t){0}, &opt, &err), &err,
                   "num_nodes");
    expect_refusal(goodput_optimize(&good, 1, 2, &(goodput_optimize_opts_t){.max_batch_size = 16},
                                    &opt, &err),
                   &err, "max_batch_size");
    expect_refusal(goodput_optimize(&good, 1, 2,
                                    &(goodput_optimize_opts_t){.max_batch_size = 64,
                                                               .min_atomic_bsz = 32,
                                                               .max_atomic_bsz = 16},
                                    &opt, &err),
                   &err, "atomic_bsz_range[1]");
    /* 1e-300 s to the 10th is below the smallest double: the step time is 0 s and the
     * throughput 32 / 0 would be infinite (and, as JSON, missing). */
    m = (goodput_model_t){{1e-300, 1e-300, 1e-300, 1e-300, 1e-300, 1e-300, 10}, {1, 1}, 32};
    expect_refusal(goodput_evaluate(&m, &(goodput_config_t){1, 4, 8, 0}, &ev, &err), &err,
                   "perf_params");
    expect_refusal(goodput_optimize(&m, 1, 4, &(goodput_optimize_opts_t){.max_batch_size = 1024},
                                    &opt, &err),
                   &err, "perf_params");
    goodput_fit_t fit;
    expect_refusal(goodput_fit_perf_params(NULL, 0, &fit, &err), &err, "measurements");
    goodput_measurement_t rows[4] = {{1, 1, 8, 0.1, 0.1},
                                     {1, 2, 8, 0.1, 0.1},
                                     {1, 4, 8, 0.1, 0.2},
                                     {8, 4, 8, 0.1, 0.2}};
    expect_refusal(goodput_fit_perf_params(rows, 4, &fit, &err), &err,
                   "measurements[3].num_nodes");
    rows[3].num_nodes = 2;
    rows[1].optim_step_time = 0;
    expect_refusal(goodput_fit_perf_params(rows, 4, &fit, &err), &err,
                   "measurements[1].optim_step_time");
}

/* The curve is what the optimum was picked from, and invalid atomic batches score 0. */
static void test_curve(void **state)
{
    (void)state;
    const goodput_model_t m = {{0.1, 0.01, 0.05, 0.01, 0.02, 0.004, 1.5}, {0.01, 0.1}, 32};
    goodput_optimum_t opt;
    fathom_error_t err;
    goodput_optimize_opts_t o = {.max_batch_size = 4096, .max_atomic_bsz = 100,
                                 .accumulation = false};
    assert_int_equal(goodput_optimize(&m, 1, 4, &o, &opt, &err), 0);
    assert_true(opt.curve[0].target_batch_size == 32.0);
    assert_true(opt.curve[GOODPUT_NUM_CANDIDATES - 1].target_batch_size == 4096.0);
    double best = 0;
    for (int i = 0; i < GOODPUT_NUM_CANDIDATES; i++) {
        if (i > 0)
            assert_true(opt.curve[i].target_batch_size > opt.curve[i - 1].target_batch_size);
        if (opt.curve[i].atomic_bsz > 100)
            assert_true(opt.curve[i].goodput == 0.0);
        best = fmax(best, opt.curve[i].goodput);
    }
    assert_true(opt.best.goodput == best);
    assert_true(opt.best.atomic_bsz <= 100);

    /* A max atomic batch 1e8 times the local batch: the seed's accumulation formula gives −1
     * steps and an infinite atomic batch there; the core means 0 steps. */
    o = (goodput_optimize_opts_t){.max_batch_size = 512, .min_atomic_bsz = 8,
                                  .max_atomic_bsz = GOODPUT_MAX_BATCH, .accumulation = true};
    assert_int_equal(goodput_optimize(&m, 1, 2, &o, &opt, &err), 0);
    for (int i = 0; i < GOODPUT_NUM_CANDIDATES; i++) {
        assert_int_equal(opt.curve[i].accum_steps, 0);
        assert_true(opt.curve[i].atomic_bsz >= 16 && opt.curve[i].atomic_bsz <= 256);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_evaluate_cases),   cmocka_unit_test(test_optimize_cases),
        cmocka_unit_test(test_fit_cases),        cmocka_unit_test(test_fit_fixing_rules),
        cmocka_unit_test(test_fit_gradient),     cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_curve),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

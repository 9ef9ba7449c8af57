/* scaling_speed.c — the 2020 Hugging Face calculator's speed model and its solvers: the GPU
 * table, the parameter polynomial, width ↔ hours (GSL hybrid root finder with the seed's restart
 * strategy), the tipping point (GSL Brent minimizer), the shapes (GSL quadratic roots), and a
 * whole plan from a budget.
 *
 * GSL reports some misuse through its global error handler (which aborts by default); the calls
 * here are arranged so that no such path is reachable: functions handed to GSL return a status
 * instead of a non-finite value, and brackets are checked before gsl_min_fminimizer_set and
 * gsl_root_fsolver_set. */
#include "scaling.h"

#include <math.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_min.h>
#include <gsl/gsl_multiroots.h>
#include <gsl/gsl_poly.h>
#include <gsl/gsl_roots.h>

const scaling_loss_fit_t scaling_hf2020_loss_fit = {28.678776896926124, 0.10858627469751919,
                                                    1.9472408621762696};
const scaling_param_fit_t scaling_hf2020_param_fit = {0.04048254990660259, 0.7211575502975575,
                                                      -45459.5300801673};

static const struct {
    const char *name;
    scaling_gpu_t gpu;
} gpu_table[] = {
    {"V100",
     {2.21527743e+07, 1.18538628e+00, 1.43150104e+00, 1.66015023e+00, 1.32808220e+00,
      5.91503856e+00, 2.005, 119.3495934959e-3, 64}},
    {"V100 (without tensor cores and cudnn.benchmark)",
     {1.82997989e+07, 1.05349588e+00, 1.25312127e+00, 1.67071294e+00, 1.44610885e+00,
      5.55824273e+00, 2.005, 119.3495934959e-3, 64}},
    {"P100",
     {6.01863899e+07, 9.23656025e-01, 1.03230702e+00, 1.46733667e+00, 1.03031298e+00,
      5.38021875e+00, 1.416, 139.65e-3, 64}},
    {"P4",
     {4.84472202e+07, 9.86822195e-01, 1.23474901e+00, 1.38493518e+00, 1.04630858e+00,
      1.03572754e+01, 0.689, 55.27e-3, 16}},
    {"K80",
     {2.58592374e+07, 6.42050890e-01, 7.06115162e-01, 1.44360777e+00, 7.50695980e-01,
      6.25951436e+00, 0.584, 142.42e-3, 16}},
};
#define GPU_COUNT (sizeof gpu_table / sizeof gpu_table[0])

const scaling_gpu_t *scaling_gpu_find(const char *name)
{
    for (size_t i = 0; i < GPU_COUNT; i++)
        if (strcmp(gpu_table[i].name, name) == 0)
            return &gpu_table[i].gpu;
    return NULL;
}

const char *scaling_gpu_name(size_t i)
{
    return i < GPU_COUNT ? gpu_table[i].name : NULL;
}

double scaling_flo_speed(const scaling_gpu_t *gpu, scaling_amp_t amp, double width)
{
    double depth = width / SCALING_DEPTH_WIDTH_RATIO;
    double amp_factor = amp == SCALING_AMP_O1 ? gpu->k1 : amp == SCALING_AMP_O2 ? gpu->k2 : 1.0;
    return gpu->k * amp_factor * depth / (depth + gpu->layer_base) * pow(width, gpu->b) *
           pow(log(gpu->batch_size + 1.0), gpu->c);
}

double scaling_param_polynomial(double width)
{
    const double r = SCALING_DEPTH_WIDTH_RATIO;
    return 7.0 / r * width * width * width + 8.0 / r * width * width + 3.0 * width + 3.0;
}

double scaling_params_to_width(double params)
{
    /* 7/128 w³ + 8/128 w² + 3w + (3 − N) = 0, made monic for GSL. */
    const double lead = 7.0 / SCALING_DEPTH_WIDTH_RATIO;
    double r[3];
    int n = gsl_poly_solve_cubic(8.0 / SCALING_DEPTH_WIDTH_RATIO / lead, 3.0 / lead,
                                 (3.0 - params) / lead, &r[0], &r[1], &r[2]);
    double best = r[0];
    for (int i = 1; i < n; i++)
        if (r[i] > best)
            best = r[i];
    return best;
}

double scaling_compute_to_loss(const scaling_loss_fit_t *fit, double x)
{
    return fit->a * pow(x, -fit->b) + fit->c;
}

double scaling_loss_to_compute(const scaling_loss_fit_t *fit, double loss)
{
    return pow((loss - fit->c) / fit->a, -1.0 / fit->b);
}

double scaling_compute_to_params(const scaling_param_fit_t *fit, double x)
{
    return fit->d * pow(x, fit->e) + fit->f;
}

double scaling_params_to_compute(const scaling_param_fit_t *fit, double params)
{
    return pow((params - fit->f) / fit->d, 1.0 / fit->e);
}

double scaling_width_to_flos(const scaling_param_fit_t *fit, double width)
{
    return scaling_params_to_compute(fit, scaling_param_polynomial(width)) * SCALING_DAY_S;
}

double scaling_width_to_hours(const scaling_gpu_t *gpu, scaling_amp_t amp,
                              const scaling_param_fit_t *fit, double width)
{
    return scaling_width_to_flos(fit, width) / scaling_flo_speed(gpu, amp, width) / 3600.0;
}

double scaling_hours_to_dollars(const scaling_gpu_t *gpu, double hours)
{
    return hours * gpu->price_per_hour;
}

double scaling_dollars_to_hours(const scaling_gpu_t *gpu, double dollars)
{
    return dollars / gpu->price_per_hour;
}

double scaling_hours_to_kwh(const scaling_gpu_t *gpu, double hours)
{
    return hours * gpu->power_kw;
}

double scaling_kwh_to_co2(double kwh, double co2_kg_per_kwh)
{
    return kwh * co2_kg_per_kwh;
}

/* ---- tipping point ---- */

typedef struct {
    const scaling_gpu_t *gpu;
    scaling_amp_t amp;
    const scaling_param_fit_t *fit;
    double seconds; /* target, for the root finder */
} hours_ctx_t;

static double hours_of(double width, void *p)
{
    const hours_ctx_t *c = p;
    return scaling_width_to_hours(c->gpu, c->amp, c->fit, width);
}

/* Hours fall as the width grows from 0 (the speed vanishes with depth) until the tipping width,
 * then rise again. A geometric scan finds the lowest sample; its neighbours bracket the minimum,
 * which Brent's method then refines. */
#define TIP_SCAN_LO 1.0
#define TIP_SCAN_HI 1.0e5
#define TIP_SCAN_STEPS 200
#define TIP_MAX_ITER 200

int scaling_tipping_point(const scaling_gpu_t *gpu, scaling_amp_t amp,
                          const scaling_param_fit_t *fit, scaling_tip_t *out, fathom_error_t *err)
{
    hours_ctx_t ctx = {gpu, amp, fit, 0.0};
    double ratio = pow(TIP_SCAN_HI / TIP_SCAN_LO, 1.0 / TIP_SCAN_STEPS);
    size_t best = 0;
    double best_h = INFINITY;
    for (size_t i = 0; i <= TIP_SCAN_STEPS; i++) {
        double h = hours_of(TIP_SCAN_LO * pow(ratio, (double)i), &ctx);
        if (isfinite(h) && h < best_h) {
            best_h = h;
            best = i;
        }
    }
    if (best == 0 || best == TIP_SCAN_STEPS)
        return fathom_error_set(err, FATHOM_E_NO_CONVERGENCE, "gpu",
                                "hours to the compute optimum have no minimum between widths "
                                "%g and %g for these speed constants and param_fit",
                                TIP_SCAN_LO, TIP_SCAN_HI);
    double lo = TIP_SCAN_LO * pow(ratio, (double)(best - 1));
    double hi = TIP_SCAN_LO * pow(ratio, (double)(best + 1));
    double mid = TIP_SCAN_LO * pow(ratio, (double)best);
    double h_lo = hours_of(lo, &ctx), h_hi = hours_of(hi, &ctx);
    /* GSL aborts (through its error handler) on a bracket that does not enclose a minimum. */
    if (!(best_h < h_lo && best_h < h_hi))
        return fathom_error_set(err, FATHOM_E_NO_CONVERGENCE, "gpu",
                                "hours to the compute optimum are flat near width %g", mid);

    int rc = -1;
    gsl_min_fminimizer *s = gsl_min_fminimizer_alloc(gsl_min_fminimizer_brent);
    if (!s)
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    gsl_function f = {hours_of, &ctx};
    if (gsl_min_fminimizer_set_with_values(s, &f, mid, best_h, lo, h_lo, hi, h_hi) !=
        GSL_SUCCESS)
        goto out;
    for (int iter = 0; iter < TIP_MAX_ITER; iter++) {
        if (gsl_min_fminimizer_iterate(s) != GSL_SUCCESS)
            break;
        if (gsl_min_test_interval(gsl_min_fminimizer_x_lower(s), gsl_min_fminimizer_x_upper(s),
                                  0.0, 1e-10) == GSL_SUCCESS)
            break;
    }
    out->width = gsl_min_fminimizer_x_minimum(s);
    out->hours = gsl_min_fminimizer_f_minimum(s);
    rc = 0;
out:
    gsl_min_fminimizer_free(s);
    if (rc)
        fathom_error_set(err, FATHOM_E_NO_CONVERGENCE, "gpu", "tipping point: Brent failed");
    return rc;
}

/* ---- hours → width ---- */

static int hours_residual(const gsl_vector *x, void *p, gsl_vector *f)
{
    const hours_ctx_t *c = p;
    double w = gsl_vector_get(x, 0);
    if (!(w > 0.0))
        return GSL_EDOM; /* the speed model has no meaning there; the solver backs off */
    double r = hours_of(w, p) * 3600.0 - c->seconds;
    if (!isfinite(r))
        return GSL_EDOM;
    gsl_vector_set(f, 0, r);
    return GSL_SUCCESS;
}

static double hours_residual_1d(double w, void *p)
{
    const hours_ctx_t *c = p;
    return hours_of(w, p) * 3600.0 - c->seconds;
}

/* One hybrid solve from `guess` (MINPACK's hybr, as scipy.optimize.root uses: xtol 1.49e-8,
 * at most 200·(n+1) evaluations). Returns the last iterate, NAN if the solver could not start. */
#define HYBR_XTOL 1.49012e-08
#define HYBR_MAX_ITER 400

static double hybrid_solve(hours_ctx_t *ctx, double guess)
{
    gsl_multiroot_fsolver *s = gsl_multiroot_fsolver_alloc(gsl_multiroot_fsolver_hybrids, 1);
    gsl_vector *x0 = gsl_vector_alloc(1);
    double w = NAN;
    if (!s || !x0)
        goto out;
    gsl_vector_set(x0, 0, guess);
    gsl_multiroot_function f = {hours_residual, 1, ctx};
    if (gsl_multiroot_fsolver_set(s, &f, x0) != GSL_SUCCESS)
        goto out;
    for (int iter = 0; iter < HYBR_MAX_ITER; iter++) {
        if (gsl_multiroot_fsolver_iterate(s) != GSL_SUCCESS)
            break;
        if (gsl_multiroot_test_delta(s->dx, s->x, 0.0, HYBR_XTOL) == GSL_SUCCESS)
            break;
    }
    w = gsl_vector_get(s->x, 0);
out:
    gsl_vector_free(x0);
    gsl_multiroot_fsolver_free(s);
    return w;
}

/* The larger root, bracketed between the tipping width and a width whose hours exceed the
 * target (Brent's root bracketing). */
static double bracket_solve(hours_ctx_t *ctx, double tip_width)
{
    double lo = tip_width, hi = tip_width * 2.0;
    while (hours_residual_1d(hi, ctx) < 0.0 && hi < SCALING_MAX_WIDTH * 16.0)
        hi *= 2.0;
    /* GSL refuses (and by default aborts on) a bracket with a non-finite end: a user's own
     * fit can make hours infinite or NaN there, which is an unsolvable budget, not a crash. */
    const double flo = hours_residual_1d(lo, ctx), fhi = hours_residual_1d(hi, ctx);
    if (!isfinite(flo) || !isfinite(fhi) || !(flo <= 0.0 && fhi >= 0.0))
        return NAN;
    gsl_root_fsolver *s = gsl_root_fsolver_alloc(gsl_root_fsolver_brent);
    if (!s)
        return NAN;
    gsl_function f = {hours_residual_1d, ctx};
    double w = NAN;
    if (gsl_root_fsolver_set(s, &f, lo, hi) == GSL_SUCCESS) {
        for (int iter = 0; iter < 200; iter++) {
            if (gsl_root_fsolver_iterate(s) != GSL_SUCCESS)
                break;
            if (gsl_root_test_interval(gsl_root_fsolver_x_lower(s), gsl_root_fsolver_x_upper(s),
                                       0.0, 1e-14) == GSL_SUCCESS)
                break;
        }
        w = gsl_root_fsolver_root(s);
    }
    gsl_root_fsolver_free(s);
    return w;
}

int scaling_hours_to_width(const scaling_gpu_t *gpu, scaling_amp_t amp,
                           const scaling_param_fit_t *fit, double hours, const char *field,
                           double *width, fathom_error_t *err)
{
    scaling_tip_t tip;
    if (scaling_tipping_point(gpu, amp, fit, &tip, err))
        return -1;
    if (hours < tip.hours)
        return fathom_error_set(err, FATHOM_E_NO_CONVERGENCE, field,
                                "%.6g h is below the tipping point (%.6g h at width %.6g): no "
                                "model reaches its compute optimum that fast",
                                hours, tip.hours, tip.width);
    hours_ctx_t ctx = {gpu, amp, fit, hours * 3600.0};
    double w = NAN;
    /* The seed: start at 128, halve the guess until the residual is under one second. */
    for (double guess = 128.0; guess > SCALING_MIN_WIDTH; guess *= 0.5) {
        w = hybrid_solve(&ctx, guess);
        if (w > 0.0 && fabs(hours_residual_1d(w, &ctx)) < 1.0)
            break;
        w = NAN;
    }
    /* The seed always lands on the larger root in the reference cases; make sure of it. */
    if (!(w >= tip.width))
        w = bracket_solve(&ctx, tip.width);
    if (!isfinite(w))
        return fathom_error_set(err, FATHOM_E_NO_CONVERGENCE, field,
                                "no width takes %.6g h to reach its compute optimum", hours);
    *width = w;
    return 0;
}

/* ---- shapes ---- */

static scaling_shape_t shape_at_depth(int64_t depth, double params)
{
    /* 7·d·W² + (8d + 3)·W + (3 − N) = 0; the larger root, to the nearest multiple of 8 (ties to
     * even, as Python's round). */
    double d = (double)depth, r0 = NAN, r1 = NAN;
    int n = gsl_poly_solve_quadratic(7.0 * d, 8.0 * d + 3.0, 3.0 - params, &r0, &r1);
    double root = n == 2 ? fmax(r0, r1) : r0;
    /* Guard the conversion (out-of-range float → integer is undefined behaviour); a plan with
     * such a root is refused by scaling_plan anyway. */
    if (!(fabs(root) < 1e15))
        root = 0.0;
    scaling_shape_t s = {depth, (int64_t)(8.0 * nearbyint(root / 8.0))};
    return s;
}

/* Depths are clamped to what an int64_t holds; widths past SCALING_MAX_WIDTH are not plans. */
static double clamp_depth(double d)
{
    return isnan(d) || d < 1.0 ? 1.0 : d > 1e15 ? 1e15 : d;
}

scaling_shape_t scaling_optimal_shape(double width, double params)
{
    double depth = clamp_depth(floor(width / SCALING_DEPTH_WIDTH_RATIO));
    return shape_at_depth((int64_t)depth, params);
}

scaling_shape_t scaling_alternate_shape(double width, double params)
{
    double linear = clamp_depth(floor(width / SCALING_DEPTH_WIDTH_RATIO));
    double deeper = floor(0.3 * pow(width, 1.25) / SCALING_DEPTH_WIDTH_RATIO);
    return shape_at_depth((int64_t)clamp_depth(fmax(linear + 1.0, deeper)), params);
}

/* ---- a plan ---- */

static int fill_from_width(const scaling_plan_request_t *req, double width, scaling_plan_t *out,
                           fathom_error_t *err)
{
    out->width = width;
    out->model_params = scaling_param_polynomial(width);
    out->flos = scaling_width_to_flos(&req->param_fit, width);
    double x = out->flos / SCALING_DAY_S;
    out->optimal_params = scaling_compute_to_params(&req->param_fit, x);
    out->loss = scaling_compute_to_loss(&req->loss_fit, x);
    if (!isfinite(out->flos) || !isfinite(out->optimal_params) || !isfinite(out->loss) ||
        !(out->optimal_params > 0.0))
        return fathom_error_set(err, FATHOM_E_NO_CONVERGENCE, "param_fit",
                                "gives no finite compute-optimal model at width %g", width);
    out->optimal_shape = scaling_optimal_shape(width, out->optimal_params);
    out->alternate_shape = scaling_alternate_shape(width, out->optimal_params);
    return 0;
}

static void fill_costs(const scaling_plan_request_t *req, double hours, scaling_plan_t *out)
{
    out->hours = hours;
    out->dollars = scaling_hours_to_dollars(&req->gpu, hours);
    out->kwh = scaling_hours_to_kwh(&req->gpu, hours);
    out->co2_kg = scaling_kwh_to_co2(out->kwh, req->co2_kg_per_kwh);
}

int scaling_plan(const scaling_plan_request_t *req, scaling_plan_t *out, fathom_error_t *err)
{
    static const char *const budget_field[] = {"hours", "dollars", "width"};
    const char *field = budget_field[req->budget_kind];
    if (!(req->budget > 0.0) || !isfinite(req->budget))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, field, "must be positive");
    if (req->budget_kind == SCALING_BUDGET_WIDTH && req->budget < SCALING_MIN_WIDTH)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, field, "must be at least %g",
                                SCALING_MIN_WIDTH);
    if (req->budget_kind == SCALING_BUDGET_DOLLARS && !(req->gpu.price_per_hour > 0.0))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, field,
                                "needs a GPU with a price_per_hour above 0");
    memset(out, 0, sizeof *out);
    if (scaling_tipping_point(&req->gpu, req->amp, &req->param_fit, &out->tip, err))
        return -1;

    if (req->budget_kind == SCALING_BUDGET_WIDTH) {
        if (fill_from_width(req, req->budget, out, err))
            return -1;
        fill_costs(req, scaling_width_to_hours(&req->gpu, req->amp, &req->param_fit, req->budget),
                   out);
        out->below_tip = req->budget < out->tip.width;
        return 0;
    }
    double hours = req->budget_kind == SCALING_BUDGET_HOURS
                       ? req->budget
                       : scaling_dollars_to_hours(&req->gpu, req->budget);
    if (hours < out->tip.hours) {
        if (fill_from_width(req, out->tip.width, out, err))
            return -1;
        fill_costs(req, out->tip.hours, out);
        out->below_tip = true;
        return 0;
    }
    double width;
    if (scaling_hours_to_width(&req->gpu, req->amp, &req->param_fit, hours, field, &width, err))
        return -1;
    if (fill_from_width(req, width, out, err))
        return -1;
    fill_costs(req, hours, out);
    if (req->budget_kind == SCALING_BUDGET_DOLLARS)
        out->dollars = req->budget; /* the budget as given, not hours × price rounded back */
    return 0;
}

/* scaling_fit.c — fitting the calculator's two laws from loss-versus-compute curves, the way the
 * 2020 calculator does it when it starts (golden/scaling/README.md):
 *
 *   1. keep runs with more than 5 points, ordered by parameter count;
 *   2. keep the points strictly between the smallest x of the third-smallest run and the largest
 *      x of the second-largest run (the extremes are too sparse to trust);
 *   3. the compute frontier: vertices of the convex-hull edges visible from the anchor point
 *      (1e9, 3), which sits below and left of the curves. The calculator asks Qhull for this
 *      with option "QG0" (the anchor is point 0, left out of the hull, and "good" facets are
 *      those it sees); scaling_hull.c replays what Qhull does, round-off thresholds included;
 *   4. loss = a·x^(−b) + c on the frontier points, least squares from (1, 1, 1);
 *   5. for each frontier run, the point where it touches the frontier (argmax over its points of
 *      −ln(loss − c) + ln a − b·ln x), giving (x, params) pairs; ln N = ln(d·x^e + f) fitted to
 *      them from (1, 1, 1).
 * Both fits use GSL's trust-region Levenberg–Marquardt with Moré scaling (what MINPACK, and so
 * scipy's curve_fit, does). */
#include "scaling_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_blas.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <gsl/gsl_vector.h>

#define ANCHOR_X 1e9 /* the calculator's (10e8, 3) */
#define ANCHOR_LOSS 3.0
#define FIT_PARAMS 3
/* A trial point of the parameter fit where d·x^e + f <= 0 has no logarithm: this residual makes
 * the trust region reject the step (MINPACK rejects the NaN scipy would produce). */
#define DOMAIN_PENALTY 1e6

typedef struct {
    size_t index; /* into the caller's runs */
    double params;
    double x_min, x_max;
} kept_run_t;

static int by_params(const void *pa, const void *pb)
{
    const kept_run_t *a = pa, *b = pb;
    if (a->params != b->params)
        return a->params < b->params ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index; /* stable, as Python's sorted */
}

static int by_x_then_loss(const void *pa, const void *pb)
{
    const scaling_point_t *a = pa, *b = pb;
    if (a->x != b->x)
        return a->x < b->x ? -1 : 1;
    if (a->loss != b->loss)
        return a->loss < b->loss ? -1 : 1;
    return 0;
}

/* ---- least squares ---- */

typedef struct {
    const double *x, *y;
} fit_data_t;

static int loss_f(const gsl_vector *p, void *data, gsl_vector *f)
{
    const fit_data_t *d = data;
    double a = gsl_vector_get(p, 0), b = gsl_vector_get(p, 1), c = gsl_vector_get(p, 2);
    for (size_t i = 0; i < f->size; i++) {
        double r = a * pow(d->x[i], -b) + c - d->y[i];
        gsl_vector_set(f, i, isfinite(r) ? r : DOMAIN_PENALTY);
    }
    return GSL_SUCCESS;
}

static int loss_df(const gsl_vector *p, void *data, gsl_matrix *J)
{
    const fit_data_t *d = data;
    double a = gsl_vector_get(p, 0), b = gsl_vector_get(p, 1);
    for (size_t i = 0; i < J->size1; i++) {
        double xb = pow(d->x[i], -b);
        gsl_matrix_set(J, i, 0, xb);
        gsl_matrix_set(J, i, 1, -a * log(d->x[i]) * xb);
        gsl_matrix_set(J, i, 2, 1.0);
    }
    return GSL_SUCCESS;
}

static int param_f(const gsl_vector *p, void *data, gsl_vector *f)
{
    const fit_data_t *d = data;
    double dd = gsl_vector_get(p, 0), e = gsl_vector_get(p, 1), ff = gsl_vector_get(p, 2);
    for (size_t i = 0; i < f->size; i++) {
        double g = dd * pow(d->x[i], e) + ff;
        double r = g > 0.0 ? log(g) - log(d->y[i]) : DOMAIN_PENALTY;
        gsl_vector_set(f, i, isfinite(r) ? r : DOMAIN_PENALTY);
    }
    return GSL_SUCCESS;
}

static int param_df(const gsl_vector *p, void *data, gsl_matrix *J)
{
    const fit_data_t *d = data;
    double dd = gsl_vector_get(p, 0), e = gsl_vector_get(p, 1), ff = gsl_vector_get(p, 2);
    for (size_t i = 0; i < J->size1; i++) {
        double xe = pow(d->x[i], e);
        double g = dd * xe + ff;
        if (!(g > 0.0))
            g = 1.0; /* only reached from an accepted point, which has g > 0; keep J finite */
        gsl_matrix_set(J, i, 0, xe / g);
        gsl_matrix_set(J, i, 1, dd * xe * log(d->x[i]) / g);
        gsl_matrix_set(J, i, 2, 1.0 / g);
    }
    return GSL_SUCCESS;
}

#define LSQ_MAX_ITER 2000

/* Least squares of n residuals in 3 parameters from (1, 1, 1); 0 and out[] on convergence. */
static int least_squares(gsl_multifit_nlinear_fdf *fdf, size_t n, double out[FIT_PARAMS])
{
    gsl_multifit_nlinear_parameters params = gsl_multifit_nlinear_default_parameters();
    params.scale = gsl_multifit_nlinear_scale_more;
    gsl_multifit_nlinear_workspace *w =
        gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &params, n, FIT_PARAMS);
    gsl_vector *x0 = gsl_vector_alloc(FIT_PARAMS);
    int rc = -1;
    if (!w || !x0)
        goto out;
    gsl_vector_set_all(x0, 1.0);
    fdf->n = n;
    fdf->p = FIT_PARAMS;
    if (gsl_multifit_nlinear_init(x0, fdf, w) != GSL_SUCCESS)
        goto out;
    int info = 0;
    int status = gsl_multifit_nlinear_driver(LSQ_MAX_ITER, 1e-15, 1e-15, 1e-15, NULL, NULL, &info,
                                             w);
    /* No progress possible means the minimum is reached to machine precision. */
    if (status != GSL_SUCCESS && status != GSL_ENOPROG)
        goto out;
    const gsl_vector *p = gsl_multifit_nlinear_position(w);
    for (size_t i = 0; i < FIT_PARAMS; i++) {
        out[i] = gsl_vector_get(p, i);
        if (!isfinite(out[i]))
            goto out;
    }
    rc = 0;
out:
    gsl_vector_free(x0);
    if (w)
        gsl_multifit_nlinear_free(w);
    return rc;
}

/* ---- the procedure ---- */

double scaling_run_default_params(double x0)
{
    /* Python's round: ties to even, which nearbyint does in the default rounding mode. */
    return nearbyint(x0 / 4000.0 / 150.0 / 60.0 / 6.0 * SCALING_DAY_S);
}

/* Index of the point of run r where it touches the frontier; NaN scores win first, as
 * numpy.argmax does. */
static size_t tangent_point(const scaling_run_t *r, const scaling_loss_fit_t *lf)
{
    size_t best = 0;
    double best_v = -INFINITY;
    for (size_t i = 0; i < r->n; i++) {
        double v = -log(r->loss[i] - lf->c) + log(lf->a) - lf->b * log(r->x[i]);
        if (isnan(v))
            return i;
        if (v > best_v) {
            best_v = v;
            best = i;
        }
    }
    return best;
}

/* Every run within the limits, every point positive and finite; *total counts the points. */
static int check_runs(const scaling_run_t *runs, size_t n_runs, const char *field, size_t *total,
                      fathom_error_t *err)
{
    if (n_runs > SCALING_FIT_MAX_RUNS)
        return fathom_error_set(err, FATHOM_E_LIMIT_EXCEEDED, field,
                                "%zu runs; the limit is %d", n_runs, SCALING_FIT_MAX_RUNS);
    *total = 0;
    for (size_t r = 0; r < n_runs; r++) {
        if (runs[r].n > SCALING_FIT_MAX_POINTS - *total)
            return fathom_error_set(err, FATHOM_E_LIMIT_EXCEEDED, field,
                                    "more than %d points in all", SCALING_FIT_MAX_POINTS);
        *total += runs[r].n;
        for (size_t i = 0; i < runs[r].n; i++)
            if (!(runs[r].x[i] > 0.0) || !isfinite(runs[r].x[i]) || !isfinite(runs[r].loss[i]) ||
                !(runs[r].loss[i] > 0.0))
                return fathom_error_set(err, FATHOM_E_INVALID_FIELD, field,
                                        "run %zu point %zu: compute and loss must be positive "
                                        "and finite", r, i);
    }
    return 0;
}

/* The runs with enough points, with their parameters and compute range, by parameters. */
static size_t keep_runs(const scaling_run_t *runs, size_t n_runs, kept_run_t *kept)
{
    size_t nk = 0;
    for (size_t r = 0; r < n_runs; r++) {
        if (runs[r].n < SCALING_FIT_MIN_RUN_POINTS)
            continue;
        double params =
            runs[r].params > 0.0 ? runs[r].params : scaling_run_default_params(runs[r].x[0]);
        kept_run_t k = {r, params, INFINITY, -INFINITY};
        for (size_t i = 0; i < runs[r].n; i++) {
            k.x_min = fmin(k.x_min, runs[r].x[i]);
            k.x_max = fmax(k.x_max, runs[r].x[i]);
        }
        kept[nk++] = k;
    }
    qsort(kept, nk, sizeof *kept, by_params);
    return nk;
}

/* The compute frontier: the kept runs' points strictly inside the compute bounds (the third
 * smallest run's first point, the second largest's last), the lower hull of them in Qhull's
 * way (scaling_hull.c), sorted by compute into pts[0..*nf). hx, hy and good are scratch of np
 * entries. */
static int compute_frontier(const scaling_run_t *runs, const kept_run_t *kept, size_t nk,
                            const char *field, scaling_point_t *pts, double *hx, double *hy,
                            bool *good, size_t *nf, fathom_error_t *err)
{
    double lo = kept[2].x_min, hi = kept[nk - 2].x_max;
    size_t np = 0;
    for (size_t k = 0; k < nk; k++) {
        const scaling_run_t *r = &runs[kept[k].index];
        for (size_t i = 0; i < r->n; i++)
            if (lo < r->x[i] && r->x[i] < hi)
                pts[np++] = (scaling_point_t){r->x[i], r->loss[i], kept[k].index};
    }
    /* pts keeps the calculator's point order (runs by parameters, then their points), which
     * Qhull's choices depend on. */
    for (size_t i = 0; i < np; i++) {
        hx[i] = pts[i].x;
        hy[i] = pts[i].loss;
    }
    *nf = 0;
    int hr = scaling__qhull_frontier(hx, hy, np, ANCHOR_X, ANCHOR_LOSS, good, nf);
    if (hr < 0)
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    if (hr == 1)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, field,
                                "the points inside the compute bounds (%g, %g) FLOs do not span "
                                "a hull", lo * SCALING_DAY_S, hi * SCALING_DAY_S);
    if (hr == 2)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, field,
                                "the losses vary too little for the compute range: the "
                                "calculator's hull (Qhull) cannot separate them from round-off "
                                "(give compute as FLOs / 86400)");
    *nf = 0;
    for (size_t i = 0; i < np; i++)
        if (good[i])
            pts[(*nf)++] = pts[i];
    qsort(pts, *nf, sizeof *pts, by_x_then_loss);
    if (*nf < FIT_PARAMS)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, field,
                                "the compute frontier has %zu points, fewer than the %d "
                                "parameters of the loss fit", *nf, FIT_PARAMS);
    return 0;
}

/* One (x at the tangent point, params) pair per run with a frontier vertex, in run order, into
 * fx and fy; returns how many. */
static size_t tangent_pairs(const scaling_run_t *runs, const kept_run_t *kept, size_t nk,
                            const scaling_point_t *frontier, size_t nf,
                            const scaling_loss_fit_t *lf, double *fx, double *fy)
{
    size_t npairs = 0;
    for (size_t k = 0; k < nk; k++) {
        bool frontier_run = false;
        for (size_t i = 0; i < nf && !frontier_run; i++)
            frontier_run = frontier[i].run == kept[k].index;
        if (!frontier_run)
            continue;
        const scaling_run_t *r = &runs[kept[k].index];
        fx[npairs] = r->x[tangent_point(r, lf)];
        fy[npairs] = kept[k].params;
        npairs++;
    }
    return npairs;
}

int scaling_fit(const scaling_run_t *runs, size_t n_runs, const char *field,
                scaling_fit_result_t *out, fathom_error_t *err)
{
    memset(out, 0, sizeof *out);
    size_t total = 0;
    if (check_runs(runs, n_runs, field, &total, err))
        return -1;

    int rc = -1;
    kept_run_t *kept = calloc(n_runs ? n_runs : 1, sizeof *kept);
    scaling_point_t *pts = calloc(total + 1, sizeof *pts);
    double *hx = calloc(total + 1, sizeof *hx), *hy = calloc(total + 1, sizeof *hy);
    bool *good = calloc(total + 1, sizeof *good);
    double *fx = NULL, *fy = NULL;
    if (!kept || !pts || !hx || !hy || !good) {
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
        goto out;
    }

    size_t nk = keep_runs(runs, n_runs, kept);
    if (nk < 3) {
        fathom_error_set(err, FATHOM_E_INVALID_FIELD, field,
                         "needs at least 3 runs of more than %d points (got %zu)",
                         SCALING_FIT_MIN_RUN_POINTS - 1, nk);
        goto out;
    }
    out->n_runs_used = nk;
    size_t nf = 0;
    if (compute_frontier(runs, kept, nk, field, pts, hx, hy, good, &nf, err))
        goto out;

    /* Room for the frontier points, then for one pair per run. */
    fx = malloc((nf + nk) * sizeof *fx);
    fy = malloc((nf + nk) * sizeof *fy);
    if (!fx || !fy) {
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < nf; i++) {
        fx[i] = pts[i].x;
        fy[i] = pts[i].loss;
    }
    fit_data_t data = {fx, fy};
    gsl_multifit_nlinear_fdf fdf = {0};
    fdf.f = loss_f;
    fdf.df = loss_df;
    fdf.params = &data;
    double p[FIT_PARAMS];
    if (least_squares(&fdf, nf, p)) {
        fathom_error_set(err, FATHOM_E_NO_CONVERGENCE, field, "the loss fit did not converge");
        goto out;
    }
    out->loss_fit = (scaling_loss_fit_t){p[0], p[1], p[2]};

    size_t npairs = tangent_pairs(runs, kept, nk, pts, nf, &out->loss_fit, fx, fy);
    out->n_param_pairs = npairs;
    if (npairs < FIT_PARAMS) {
        fathom_error_set(err, FATHOM_E_INVALID_FIELD, field,
                         "only %zu runs touch the compute frontier, fewer than the %d parameters "
                         "of the parameter fit", npairs, FIT_PARAMS);
        goto out;
    }
    fdf.f = param_f;
    fdf.df = param_df;
    if (least_squares(&fdf, npairs, p)) {
        fathom_error_set(err, FATHOM_E_NO_CONVERGENCE, field,
                         "the parameter fit did not converge");
        goto out;
    }
    out->param_fit = (scaling_param_fit_t){p[0], p[1], p[2]};

    out->frontier = pts; /* the first nf points; the rest of the block is unused */
    pts = NULL;
    out->n_frontier = nf;
    rc = 0;
out:
    free(kept);
    free(pts);
    free(hx);
    free(hy);
    free(good);
    free(fx);
    free(fy);
    return rc;
}

void scaling_fit_result_close(scaling_fit_result_t *r)
{
    free(r->frontier);
    r->frontier = NULL;
    r->n_frontier = 0;
}

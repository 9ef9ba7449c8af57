/* goodput_fit.c — fitting the performance parameters to measured step times (the seed's
 * fit_perf_params), by bounded minimization with NLopt's L-BFGS on analytic gradients.
 *
 * The seed runs scipy's L-BFGS-B once from a fixed start. One local run of a different L-BFGS
 * can stop in a different place on this objective (its valleys are long and flat in gamma and
 * in the network terms), so the fit runs from the seed's start and a few others, restarts each
 * run from where it stopped until it stops improving (fresh curvature memory), and keeps the
 * best. Parameters the data cannot determine are fixed as the seed fixes them (lower bound =
 * upper bound = value) and are left out of the vector NLopt sees. Everything is deterministic. */
#include "goodput.h"
#include "goodput_internal.h"

#include <math.h>
#include <nlopt.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define PARAM_LOWER 1e-8 /* the seed's lower bound for the six times: slack above 0 */
#define MAX_EVALS_PER_RUN 20000
#define MAX_EVALS_TOTAL GOODPUT_FIT_MAX_EVALS
#define MAX_RESTARTS 20
#define RESTART_GAIN 1e-13 /* a restart that gains less than this ends the polishing */
#define RANDOM_STARTS 20   /* drawn starts, after the five fixed ones */

enum { P_ALPHA_C, P_BETA_C, P_ALPHA_N, P_BETA_N, P_ALPHA_R, P_BETA_R, P_GAMMA };

static goodput_perf_params_t from_vector(const double v[GOODPUT_NUM_PERF_PARAMS])
{
    return (goodput_perf_params_t){v[P_ALPHA_C], v[P_BETA_C], v[P_ALPHA_N], v[P_BETA_N],
                                   v[P_ALPHA_R], v[P_BETA_R], v[P_GAMMA]};
}

int goodput_measurements_check(const goodput_measurement_t *rows, size_t n, fathom_error_t *err)
{
    if (n == 0)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "measurements",
                                "must have at least 1 row");
    if (n > GOODPUT_MAX_MEASUREMENTS)
        return fathom_error_set(err, FATHOM_E_LIMIT_EXCEEDED, "measurements",
                                "has %zu rows; the limit is %d", n, GOODPUT_MAX_MEASUREMENTS);
    for (size_t i = 0; i < n; i++) {
        const goodput_measurement_t *r = &rows[i];
        char f_nodes[FATHOM_ERROR_FIELD_MAX], f_replicas[FATHOM_ERROR_FIELD_MAX],
            f[FATHOM_ERROR_FIELD_MAX];
        snprintf(f_nodes, sizeof f_nodes, "measurements[%zu].num_nodes", i);
        snprintf(f_replicas, sizeof f_replicas, "measurements[%zu].num_replicas", i);
        if (goodput__check_allocation(r->num_nodes, r->num_replicas, f_nodes, f_replicas, err))
            return -1;
        if (r->atomic_bsz < 1 || r->atomic_bsz > GOODPUT_MAX_BATCH) {
            snprintf(f, sizeof f, "measurements[%zu].atomic_bsz", i);
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, f,
                                    "must be between 1 and %lld, got %lld", GOODPUT_MAX_BATCH,
                                    (long long)r->atomic_bsz);
        }
        if (!isfinite(r->accum_step_time) || !(r->accum_step_time > 0)) {
            snprintf(f, sizeof f, "measurements[%zu].accum_step_time", i);
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, f,
                                    "must be finite and greater than 0, got %.17g",
                                    r->accum_step_time);
        }
        if (!isfinite(r->optim_step_time) || !(r->optim_step_time > 0)) {
            snprintf(f, sizeof f, "measurements[%zu].optim_step_time", i);
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, f,
                                    "must be finite and greater than 0, got %.17g",
                                    r->optim_step_time);
        }
    }
    return 0;
}

double goodput_fit_objective(const goodput_perf_params_t *p, const goodput_measurement_t *rows,
                             size_t n, double grad[GOODPUT_NUM_PERF_PARAMS])
{
    /* Sums of squared residuals and of residual · d(residual)/d(param) for both error terms. */
    double ss1 = 0, ss2 = 0;
    double g1[GOODPUT_NUM_PERF_PARAMS] = {0}, g2[GOODPUT_NUM_PERF_PARAMS] = {0};
    const double g = p->gamma;
    for (size_t i = 0; i < n; i++) {
        const goodput_measurement_t *r = &rows[i];
        double bsz = (double)r->atomic_bsz, replicas = (double)r->num_replicas;
        double accum = goodput_accum_time(p, bsz);
        double net = goodput_network_time(p, (double)r->num_nodes, replicas);
        double pa = pow(accum, g), pn = pow(net, g), s = pa + pn;
        double log_optim = log(s) / g;
        double r1 = log(accum) - log(r->accum_step_time);
        double r2 = log_optim - log(r->optim_step_time);
        ss1 += r1 * r1;
        ss2 += r2 * r2;
        if (!grad)
            continue;
        /* d log(accum) = d accum / accum; d log_optim = (accum^(g-1) d accum + net^(g-1) d net)/s
         * for fixed gamma, written as (pa/accum) and (pn/net) to share the powers. */
        double d_accum_1 = 1.0 / accum;
        double d_accum_2 = pa / accum / s;
        double d_net_2 = pn / net / s;
        g1[P_ALPHA_C] += r1 * d_accum_1;
        g1[P_BETA_C] += r1 * d_accum_1 * bsz;
        g2[P_ALPHA_C] += r2 * d_accum_2;
        g2[P_BETA_C] += r2 * d_accum_2 * bsz;
        double retro = fmax(replicas - 2, 1e-8);
        if (r->num_nodes > 1) {
            g2[P_ALPHA_N] += r2 * d_net_2;
            g2[P_BETA_N] += r2 * d_net_2 * retro;
        } else if (r->num_replicas > 1) {
            g2[P_ALPHA_R] += r2 * d_net_2;
            g2[P_BETA_R] += r2 * d_net_2 * retro;
        }
        double d_gamma = (pa * log(accum) + pn * log(net)) / s / g - log(s) / (g * g);
        g2[P_GAMMA] += r2 * d_gamma;
    }
    double nn = (double)n;
    double err1 = sqrt(ss1 / nn), err2 = sqrt(ss2 / nn);
    double reg1 = 1e-3 * (g - 1) * (g - 1);
    double qn = p->beta_n / p->alpha_n, qr = p->beta_r / p->alpha_r;
    double reg2 = 1e-2 * (qn * qn + qr * qr);
    if (grad) {
        /* d sqrt(mean r²) = (Σ r dr) / (n · sqrt(mean r²)); at an exact fit (err = 0) the term
         * has no gradient and 0 is a valid subgradient. */
        double k1 = err1 > 0 ? 1.0 / (nn * err1) : 0.0;
        double k2 = err2 > 0 ? 1.0 / (nn * err2) : 0.0;
        for (int j = 0; j < GOODPUT_NUM_PERF_PARAMS; j++)
            grad[j] = k1 * g1[j] + k2 * g2[j];
        grad[P_GAMMA] += 2e-3 * (g - 1);
        grad[P_BETA_N] += 2e-2 * qn / p->alpha_n;
        grad[P_ALPHA_N] -= 2e-2 * qn * qn / p->alpha_n;
        grad[P_BETA_R] += 2e-2 * qr / p->alpha_r;
        grad[P_ALPHA_R] -= 2e-2 * qr * qr / p->alpha_r;
    }
    return err1 + err2 + reg1 + reg2;
}

/* Sum of the accum times as numpy's pairwise summation forms it (np.mean on a contiguous
 * array), so that a fixed alpha_c is the very double the seed fixes: blocks of at most 128 are
 * summed with eight interleaved accumulators, larger ranges split near the middle on a multiple
 * of 8. n <= GOODPUT_MAX_MEASUREMENTS keeps the recursion shallow. */
static double sum_accum_time(const goodput_measurement_t *rows, size_t n)
{
    if (n < 8) {
        double s = 0.;
        for (size_t i = 0; i < n; i++)
            s += rows[i].accum_step_time;
        return s;
    }
    if (n <= 128) {
        double r[8];
        size_t i;
        for (int j = 0; j < 8; j++)
            r[j] = rows[j].accum_step_time;
        for (i = 8; i < n - (n % 8); i += 8)
            for (size_t j = 0; j < 8; j++)
                r[j] += rows[i + j].accum_step_time;
        double s = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++)
            s += rows[i].accum_step_time;
        return s;
    }
    size_t n2 = n / 2;
    n2 -= n2 % 8;
    return sum_accum_time(rows, n2) + sum_accum_time(rows + n2, n - n2);
}

typedef struct {
    const goodput_measurement_t *rows;
    size_t n;
    double full[GOODPUT_NUM_PERF_PARAMS]; /* fixed values, and scratch for the free ones */
    int free_idx[GOODPUT_NUM_PERF_PARAMS];
    unsigned nfree;
    long evals; /* objective evaluations so far, over every run */
} fit_problem_t;

static double nlopt_objective(unsigned nfree, const double *x, double *grad, void *data)
{
    fit_problem_t *fp = data;
    fp->evals++;
    for (unsigned k = 0; k < nfree; k++)
        fp->full[fp->free_idx[k]] = x[k];
    goodput_perf_params_t p = from_vector(fp->full);
    double g7[GOODPUT_NUM_PERF_PARAMS];
    double f = goodput_fit_objective(&p, fp->rows, fp->n, grad ? g7 : NULL);
    if (grad)
        for (unsigned k = 0; k < nfree; k++)
            grad[k] = g7[fp->free_idx[k]];
    /* NLopt treats a non-finite value as a failure of the step; make it a wall instead. */
    return isfinite(f) ? f : HUGE_VAL;
}

/* One L-BFGS run from x (free variables) polished by restarts; x is updated to the best point
 * found. Returns its objective (HUGE_VAL if nothing finite was found). */
static double local_fit(fit_problem_t *fp, const double *lower, const double *upper, double *x)
{
    nlopt_opt opt = nlopt_create(NLOPT_LD_LBFGS, fp->nfree);
    double best = HUGE_VAL;
    if (!opt)
        return best;
    if (nlopt_set_lower_bounds(opt, lower) < 0 || nlopt_set_upper_bounds(opt, upper) < 0 ||
        nlopt_set_min_objective(opt, nlopt_objective, fp) < 0 ||
        nlopt_set_ftol_rel(opt, 1e-15) < 0 || nlopt_set_xtol_rel(opt, 1e-13) < 0)
        goto out;
    double trial[GOODPUT_NUM_PERF_PARAMS];
    for (int round = 0; round < MAX_RESTARTS; round++) {
        long left = MAX_EVALS_TOTAL - fp->evals;
        if (left <= 0 ||
            nlopt_set_maxeval(opt, (int)(left < MAX_EVALS_PER_RUN ? left : MAX_EVALS_PER_RUN)) < 0)
            break;
        memcpy(trial, x, fp->nfree * sizeof *x);
        double f = HUGE_VAL;
        nlopt_result rc = nlopt_optimize(opt, trial, &f);
        /* A failed run may still have moved to a better point (ROUNDOFF_LIMITED is common at
         * the optimum); keep anything finite that improves. */
        (void)rc;
        if (!(isfinite(f) && f < best))
            break;
        double gain = best - f;
        best = f;
        memcpy(x, trial, fp->nfree * sizeof *x);
        if (gain < RESTART_GAIN)
            break;
    }
out:
    nlopt_destroy(opt);
    return best;
}

/* Which parameters the measurements can determine (the others are fixed: at an even split of
 * the time for a single batch size, at their lower bound for network terms no row exercises),
 * and every parameter's start and bounds. */
static void choose_free(const goodput_measurement_t *rows, size_t n, double *start, double *lo,
                        double *hi, bool *is_fixed, goodput_fixed_t *fixed)
{
    bool multi_node = false, single_node_multi = false, over_two = false, one_bsz = true;
    for (size_t i = 0; i < n; i++) {
        multi_node |= rows[i].num_nodes > 1;
        single_node_multi |= rows[i].num_nodes == 1 && rows[i].num_replicas > 1;
        over_two |= rows[i].num_replicas > 2;
        one_bsz &= rows[i].atomic_bsz == rows[0].atomic_bsz;
    }
    static const double seed[GOODPUT_NUM_PERF_PARAMS] = {1e-1, 1e-2, 1e-1, 1e-2,
                                                         1e-1, 1e-2, 1.0 + 1e-3};
    memcpy(start, seed, sizeof seed);
    for (int j = 0; j < P_GAMMA; j++) {
        lo[j] = PARAM_LOWER;
        hi[j] = HUGE_VAL;
    }
    lo[P_GAMMA] = GOODPUT_GAMMA_MIN;
    hi[P_GAMMA] = GOODPUT_GAMMA_MAX;
    if (one_bsz) {
        /* One batch size cannot separate the constant from the slope: split the time evenly. */
        start[P_ALPHA_C] = sum_accum_time(rows, n) / (double)n / 2;
        is_fixed[P_ALPHA_C] = fixed->alpha_c = true;
    }
    if (!multi_node)
        is_fixed[P_ALPHA_N] = is_fixed[P_BETA_N] = fixed->alpha_n = fixed->beta_n = true;
    if (!single_node_multi)
        is_fixed[P_ALPHA_R] = is_fixed[P_BETA_R] = fixed->alpha_r = fixed->beta_r = true;
    if (!over_two)
        is_fixed[P_BETA_N] = is_fixed[P_BETA_R] = fixed->beta_n = fixed->beta_r = true;
    for (int j = P_ALPHA_N; j <= P_BETA_R; j++)
        if (is_fixed[j])
            start[j] = lo[j];
}

/* Starts: the seed's; the seed's with the network and overlap terms moved, since those are
 * where single runs stall; then RANDOM_STARTS points drawn log-uniformly within a factor
 * 10^1.5 of the seed's (gamma uniform in [1, 5]) by a fixed linear congruential sequence, so
 * the fit stays deterministic. Separate basins differ mostly in how the network time splits
 * between alpha_n/beta_n and alpha_r/beta_r, which only independent draws explore. The best
 * local fit's free parameters into best_x; its objective returned (HUGE_VAL: none finite). */
static double multistart(fit_problem_t *fp, const double *start, const double *flo,
                         const double *fhi, double *best_x)
{
    static const struct {
        double compute, network, gamma;
    } starts[] = {{1, 1, 1.001}, {1, 0.1, 1.001}, {1, 1, 2.0}, {0.5, 0.3, 1.5}, {2, 3, 3.0}};
    const size_t n_fixed = sizeof starts / sizeof starts[0];
    uint32_t lcg = 12345u;
    double best_f = HUGE_VAL;
    for (size_t s = 0; s < n_fixed + RANDOM_STARTS; s++) {
        double x[GOODPUT_NUM_PERF_PARAMS];
        for (unsigned k = 0; k < fp->nfree; k++) {
            int j = fp->free_idx[k];
            double v = start[j];
            if (s >= n_fixed) {
                lcg = lcg * 1103515245u + 12345u;
                double u = (double)(lcg >> 8) / 16777216.0; /* [0, 1) from the high 24 bits */
                v = j == P_GAMMA ? 1 + 4 * u : v * pow(10, 3 * u - 1.5);
            } else if (j == P_GAMMA) {
                v = starts[s].gamma;
            } else if (j <= P_BETA_C) {
                v *= starts[s].compute;
            } else {
                v *= starts[s].network;
            }
            x[k] = v;
        }
        double f = local_fit(fp, flo, fhi, x);
        if (f < best_f) {
            best_f = f;
            memcpy(best_x, x, sizeof x);
        }
    }
    return best_f;
}

int goodput_fit_perf_params(const goodput_measurement_t *rows, size_t n, goodput_fit_t *out,
                            fathom_error_t *err)
{
    if (goodput_measurements_check(rows, n, err))
        return -1;
    goodput_fixed_t fixed = {0};
    double start[GOODPUT_NUM_PERF_PARAMS], lo[GOODPUT_NUM_PERF_PARAMS],
        hi[GOODPUT_NUM_PERF_PARAMS];
    bool is_fixed[GOODPUT_NUM_PERF_PARAMS] = {false};
    choose_free(rows, n, start, lo, hi, is_fixed, &fixed);

    fit_problem_t fp = {.rows = rows, .n = n};
    memcpy(fp.full, start, sizeof start);
    double flo[GOODPUT_NUM_PERF_PARAMS], fhi[GOODPUT_NUM_PERF_PARAMS];
    for (int j = 0; j < GOODPUT_NUM_PERF_PARAMS; j++) {
        if (is_fixed[j])
            continue;
        flo[fp.nfree] = lo[j];
        fhi[fp.nfree] = hi[j];
        fp.free_idx[fp.nfree++] = j;
    }
    double best_x[GOODPUT_NUM_PERF_PARAMS] = {0}, best_full[GOODPUT_NUM_PERF_PARAMS];
    const double best_f = multistart(&fp, start, flo, fhi, best_x);
    if (!isfinite(best_f))
        return fathom_error_set(err, FATHOM_E_NO_CONVERGENCE, "measurements",
                                "the fit found no parameters with a finite objective");
    memcpy(best_full, start, sizeof start);
    for (unsigned k = 0; k < fp.nfree; k++)
        best_full[fp.free_idx[k]] = best_x[k];

    if (fixed.alpha_n) {
        /* No row spans nodes. Prior: inter-node links are no faster than intra-node ones. */
        best_full[P_ALPHA_N] = fmax(best_full[P_ALPHA_N], best_full[P_ALPHA_R] * 1.1);
        best_full[P_BETA_N] = fmax(best_full[P_BETA_N], best_full[P_BETA_R] * 1.1);
    }
    out->params = from_vector(best_full);
    out->objective = goodput_fit_objective(&out->params, rows, n, NULL);
    out->fixed = fixed;
    return 0;
}

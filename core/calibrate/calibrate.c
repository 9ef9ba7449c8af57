/* calibrate.c — fitting a system to measurements (calibrate.h has the model and the bounds).
 *
 * DESIGN. The free parameters are a list of (kind, index) entries built from what the input
 * measures; a candidate vector y of NLopt's is mapped to a system by copying the base system and
 * writing θ_k = y_k · scale_k into it (scale_k = |θ_base| so that every coordinate is of order 1
 * for BOBYQA; a latency of 0 uses 1 µs, an efficiency below the fit's lower bound that bound).
 * Each objective evaluation predicts every measurement with that system (llm_estimate for runs,
 * the closed forms below for microbenchmarks). The fit starts at the base system
 * (y = θ_base/scale), so it is deterministic; leave-one-out refits the same way with one run
 * masked. Nothing here allocates: the fit's state lives on the stack. */
#include "calibrate.h"

#include <math.h>
#include <nlopt.h>
#include <stdio.h>
#include <string.h>

#include "llm_collective.h"

const char *const calibrate_collective_names[] = {"all_reduce", "all_gather", "reduce_scatter",
                                                  "alltoall", "sendrecv", NULL};

#define EFF_LOWER 0.05
#define LAT_UPPER 1e-3  /* s */
#define LAT_SCALE 1e-6  /* s: the unit of a latency whose base value is 0 */
#define SCALE_LOWER 0.25
#define SCALAR_RANGE 4.0 /* an op scalar moves within [base/4, base·4] */
#define FAILED_RUN_PENALTY 1e6 /* a run the candidate system cannot estimate */

typedef enum { K_MATRIX_POINT, K_MATRIX_SCALE, K_VECTOR_SCALE, K_MEM1_SCALE, K_NET_EFF,
               K_NET_LAT, K_NET_SCALAR, K_ATTN } kind_t;

typedef struct {
    kind_t kind;
    int a, b; /* datatype and point, or network index */
    double scale;
} pdesc_t;

typedef struct {
    const llm_system_t *base;
    const calibrate_input_t *in;
    int n;
    pdesc_t desc[CALIBRATE_MAX_PARAMS];
    double y0[CALIBRATE_MAX_PARAMS];
    long skip_run; /* run left out (leave-one-out), or -1 */
    int max_evals; /* per fit */
    int evals;
    /* The best point seen in the current fit (in NLopt's scaled coordinates), kept by the
     * objective itself so that a fit NLopt stops early still answers with it. */
    double best_f;
    double best_y[CALIBRATE_MAX_PARAMS];
} fit_t;

/* ---- predictions ---- */

/* First point whose threshold (GFLOP) the operation reaches, as llm_system.c reads a curve;
 * -1 when none covers it. */
static int curve_point(const llm_curve_t *c, double gflop)
{
    for (int i = 0; i < c->num_points; i++)
        if (gflop * 1e9 >= c->points[i].threshold * 1e9)
            return i;
    return -1;
}

double calibrate_gemm_tflops(const llm_system_t *s, const calibrate_gemm_t *g)
{
    /* A GEMM of m×k by k×n does 2mnk FLOP and runs at peak × the curve's efficiency for its
     * size: achieved TFLOP/s = peak · efficiency(2mnk / 1e9 GFLOP). */
    const llm_rate_t *r = &s->matrix.rate[g->datatype];
    int j = curve_point(&r->gflops_efficiency, 2.0 * g->m * g->n * g->k / 1e9);
    return j < 0 ? NAN : r->tflops * r->gflops_efficiency.points[j].efficiency;
}

/* Fathom's op for an nccl-tests collective and the bytes it passes to the network formula. */
static llm_net_op_t coll_op(calibrate_collective_t op, double bytes, int64_t n, double *fbytes)
{
    *fbytes = bytes;
    switch (op) {
    case CAL_COLL_ALL_REDUCE: return LLM_OP_ALL_REDUCE;
    case CAL_COLL_ALL_GATHER: return LLM_OP_ALL_GATHER;     /* S = the gathered buffer */
    case CAL_COLL_REDUCE_SCATTER: return LLM_OP_REDUCE_SCATTER; /* S = the input buffer */
    case CAL_COLL_ALLTOALL:
        /* Each rank sends (n−1)/n of its S bytes to the others: priced as point-to-point
         * traffic of that many bytes (Fathom has no all-to-all op). */
        *fbytes = bytes * (double)(n - 1) / (double)n;
        return LLM_OP_P2P;
    default: return LLM_OP_P2P; /* sendrecv: S bytes to one peer */
    }
}

/* The collective of an nccl-tests row under a system with the NCCL model: the ranks packed
 * (nccl-tests' -npernode fills each node), on the row's tier. */
static double nccl_model_time(const llm_system_t *s, const calibrate_coll_row_t *c)
{
    static const llm_coll_t kinds[] = {[CAL_COLL_ALL_REDUCE] = LLM_COLL_ALL_REDUCE,
                                       [CAL_COLL_ALL_GATHER] = LLM_COLL_ALL_GATHER,
                                       [CAL_COLL_REDUCE_SCATTER] = LLM_COLL_REDUCE_SCATTER,
                                       [CAL_COLL_ALLTOALL] = LLM_COLL_ALL_TO_ALL,
                                       [CAL_COLL_SENDRECV] = LLM_COLL_P2P};
    const llm_group_t g = {(double)c->procs, 1, c->network};
    return llm_collective_time(s, kinds[c->op], c->bytes, &g);
}

double calibrate_collective_time(const llm_system_t *s, const calibrate_coll_row_t *c)
{
    if (s->collectives == LLM_COLLECTIVES_NCCL) /* the step model's collectives (doc/collectives.md) */
        return nccl_model_time(s, c);
    /* Fathom's network cost (llm__net_time): latency + size·scalar·(1 + offset/peers) /
     * (bandwidth · efficiency), bandwidth in GB/s per processor. With the presets' all_reduce
     * scalar 2 and offset −1 this is latency + S·2(n−1)/n / (bw·eff): nccl-tests' busbw is then
     * bw·eff for large S. */
    const llm_network_t *n = &s->networks[c->network];
    double bytes;
    llm_net_op_t op = coll_op(c->op, c->bytes, c->procs, &bytes);
    double size = bytes * n->ops[op].scalar;
    size += size / (double)c->procs * n->ops[op].offset;
    return n->latency_s + size / (n->bandwidth_gbps * 1e9 * n->efficiency);
}

double calibrate_run_time(const llm_system_t *s, const calibrate_run_t *r)
{
    llm_result_t res;
    if (llm_estimate(r->model, s, &r->execution, &res, NULL))
        return NAN;
    return res.stats.total_time;
}

double calibrate_busbw_factor(calibrate_collective_t op, int64_t n)
{
    double dn = (double)n;
    switch (op) {
    case CAL_COLL_ALL_REDUCE: return 2.0 * (dn - 1) / dn;
    case CAL_COLL_SENDRECV: return 1.0;
    default: return (dn - 1) / dn;
    }
}

/* ---- parameters ---- */

static double curve_max(const llm_curve_t *c)
{
    double m = 0;
    for (int i = 0; i < c->num_points; i++)
        m = fmax(m, c->points[i].efficiency);
    return m;
}

static double vector_max(const llm_system_t *s)
{
    double m = 0;
    for (int dt = 0; dt < LLM_DT__COUNT; dt++)
        if (s->vector.rate[dt].present)
            m = fmax(m, curve_max(&s->vector.rate[dt].gflops_efficiency));
    return m;
}

static double base_value(const llm_system_t *s, const pdesc_t *d)
{
    switch (d->kind) {
    case K_MATRIX_POINT: return s->matrix.rate[d->a].gflops_efficiency.points[d->b].efficiency;
    case K_NET_EFF: return s->networks[d->a].efficiency;
    case K_NET_LAT: return s->networks[d->a].latency_s;
    case K_NET_SCALAR: return s->networks[d->a].ops[d->b].scalar;
    case K_ATTN: return s->attention_efficiency;
    default: return 1.0; /* scales */
    }
}

static void bounds(const llm_system_t *s, const pdesc_t *d, double *lo, double *hi)
{
    switch (d->kind) {
    case K_MATRIX_POINT: case K_NET_EFF: case K_ATTN: *lo = EFF_LOWER; *hi = 1.0; return;
    case K_NET_LAT: *lo = 0; *hi = fmax(LAT_UPPER, s->networks[d->a].latency_s); return;
    case K_NET_SCALAR:
        *lo = s->networks[d->a].ops[d->b].scalar / SCALAR_RANGE;
        *hi = s->networks[d->a].ops[d->b].scalar * SCALAR_RANGE;
        return;
    case K_MATRIX_SCALE:
        *lo = SCALE_LOWER;
        *hi = 1.0 / curve_max(&s->matrix.rate[d->a].gflops_efficiency);
        return;
    case K_VECTOR_SCALE: *lo = SCALE_LOWER; *hi = 1.0 / vector_max(s); return;
    case K_MEM1_SCALE: *lo = SCALE_LOWER; *hi = 1.0 / curve_max(&s->mem1.mb_efficiency); return;
    }
}

static void param_name(const pdesc_t *d, char *buf, size_t len)
{
    switch (d->kind) {
    case K_MATRIX_POINT:
        snprintf(buf, len, "matrix.%s.gflops_efficiency[%d]", llm_datatype_names[d->a], d->b);
        return;
    case K_MATRIX_SCALE: snprintf(buf, len, "matrix.%s.scale", llm_datatype_names[d->a]); return;
    case K_VECTOR_SCALE: snprintf(buf, len, "vector.scale"); return;
    case K_MEM1_SCALE: snprintf(buf, len, "mem1.scale"); return;
    case K_NET_EFF: snprintf(buf, len, "networks[%d].efficiency", d->a); return;
    case K_NET_LAT: snprintf(buf, len, "networks[%d].latency", d->a); return;
    case K_NET_SCALAR:
        snprintf(buf, len, "networks[%d].ops.%s.scalar", d->a, llm_net_op_names[d->b]);
        return;
    case K_ATTN: snprintf(buf, len, "attention_efficiency"); return;
    }
}

static void scale_curve(llm_curve_t *c, double f)
{
    for (int i = 0; i < c->num_points; i++)
        c->points[i].efficiency = fmin(1.0, c->points[i].efficiency * f);
}

/* The system of a parameter vector θ (not y): the base with each parameter written in. */
static void apply(const fit_t *f, const double *theta, llm_system_t *s)
{
    *s = *f->base;
    for (int k = 0; k < f->n; k++) {
        const pdesc_t *d = &f->desc[k];
        switch (d->kind) {
        case K_MATRIX_POINT:
            s->matrix.rate[d->a].gflops_efficiency.points[d->b].efficiency = theta[k];
            break;
        case K_MATRIX_SCALE: scale_curve(&s->matrix.rate[d->a].gflops_efficiency, theta[k]); break;
        case K_VECTOR_SCALE:
            for (int dt = 0; dt < LLM_DT__COUNT; dt++)
                if (s->vector.rate[dt].present)
                    scale_curve(&s->vector.rate[dt].gflops_efficiency, theta[k]);
            break;
        case K_MEM1_SCALE: scale_curve(&s->mem1.mb_efficiency, theta[k]); break;
        case K_NET_EFF: s->networks[d->a].efficiency = theta[k]; break;
        case K_NET_LAT: s->networks[d->a].latency_s = theta[k]; break;
        case K_NET_SCALAR: s->networks[d->a].ops[d->b].scalar = theta[k]; break;
        case K_ATTN: s->attention_efficiency = theta[k]; break;
        }
    }
}

static int add_param(fit_t *f, kind_t kind, int a, int b)
{
    for (int k = 0; k < f->n; k++)
        if (f->desc[k].kind == kind && f->desc[k].a == a && f->desc[k].b == b)
            return 0;
    if (f->n >= CALIBRATE_MAX_PARAMS)
        return -1;
    pdesc_t *d = &f->desc[f->n];
    *d = (pdesc_t){kind, a, b, 1.0};
    double v = base_value(f->base, d);
    /* An efficiency's box is [EFF_LOWER, 1]: scaled by a base far below it (a curve point of
     * 1e-300, which the system schema allows), the box would be [5e298, 1e300] in NLopt's units
     * and the pull ((θ − θ_base)/scale)² infinite, so the fit had no finite point to answer
     * with. Scaled by at least EFF_LOWER, every coordinate of the box stays within [1, 20]. */
    bool efficiency = kind == K_MATRIX_POINT || kind == K_NET_EFF || kind == K_ATTN;
    d->scale = kind == K_NET_LAT ? fmax(v, LAT_SCALE) : efficiency ? fmax(v, EFF_LOWER) : fabs(v);
    f->y0[f->n] = v / d->scale;
    f->n++;
    return 0;
}

static int build_params(fit_t *f)
{
    const calibrate_input_t *in = f->in;
    bool gemm_dt[LLM_DT__COUNT] = {false};
    for (size_t i = 0; i < in->n_gemms; i++) {
        const calibrate_gemm_t *g = &in->gemms[i];
        int j = curve_point(&f->base->matrix.rate[g->datatype].gflops_efficiency,
                            2.0 * g->m * g->n * g->k / 1e9);
        gemm_dt[g->datatype] = true;
        if (add_param(f, K_MATRIX_POINT, g->datatype, j))
            return -1;
    }
    for (size_t i = 0; i < in->n_collectives; i++)
        if (add_param(f, K_NET_EFF, in->collectives[i].network, 0) ||
            add_param(f, K_NET_LAT, in->collectives[i].network, 0))
            return -1;
    /* Op scalars: a collective's time depends on scalar/efficiency only, so one op per tier (its
     * reference: all_reduce when measured, else the first op measured) keeps its scalar and
     * sets the efficiency; every other op measured on the tier gets its scalar fitted. Under
     * the NCCL model (doc/collectives.md) the ops differ by their algorithms, not by scalars:
     * efficiency and latency are all it fits. */
    for (int net = 0; f->base->collectives != LLM_COLLECTIVES_NCCL && net < f->base->num_networks;
         net++) {
        bool measured[LLM_OP__COUNT] = {false};
        int ref = -1;
        for (size_t i = 0; i < in->n_collectives; i++) {
            if (in->collectives[i].network != net)
                continue;
            double bytes;
            llm_net_op_t op = coll_op(in->collectives[i].op, 1, 2, &bytes);
            measured[op] = true;
            if (ref < 0)
                ref = (int)op;
        }
        if (measured[LLM_OP_ALL_REDUCE])
            ref = LLM_OP_ALL_REDUCE;
        for (int op = 0; op < LLM_OP__COUNT; op++)
            if (measured[op] && op != ref && add_param(f, K_NET_SCALAR, net, op))
                return -1;
    }
    if (in->n_runs == 0)
        return 0;
    bool fused = false;
    for (size_t i = 0; i < in->n_runs; i++) {
        const llm_execution_t *e = &in->runs[i].execution;
        fused |= llm_attention_fused(e); /* fused, or a named kernel the system has no table of */
        if (!gemm_dt[e->datatype] && add_param(f, K_MATRIX_SCALE, e->datatype, 0))
            return -1;
        if (e->fp8 && !gemm_dt[LLM_DT_FLOAT8] && add_param(f, K_MATRIX_SCALE, LLM_DT_FLOAT8, 0))
            return -1;
    }
    if ((fused && add_param(f, K_ATTN, 0, 0)) || add_param(f, K_VECTOR_SCALE, 0, 0) ||
        add_param(f, K_MEM1_SCALE, 0, 0))
        return -1;
    return 0;
}

/* ---- objective ---- */

/* ρ(r) = 2c²(√(1 + (r/c)²) − 1) of the log error r = ln(predicted/measured), c =
 * CALIBRATE_LOSS_SCALE: r² while |r| is well under c, 2c|r| − 2c² far above it. Written as
 * 2r²/(√(1 + (r/c)²) + 1), the same value without the cancellation of √(1 + x) − 1 at small r.
 * The log error is symmetric: a measurement three times slower than predicted costs what one three
 * times faster does. The relative error predicted/measured − 1 is not: it cannot fall below −1,
 * so a collective or a run measured far slower than predicted cost at most ρ(1) and barely moved
 * the fit, which then leaned toward predicting too fast. Near 0 the two agree (ln(1 + x) ≈ x).
 * Linear in |ln(predicted/measured)|, the loss stays finite (under 2c·ln(DBL_MAX/DBL_TRUE_MIN),
 * about 300) and below a run the system cannot estimate for any finite ratio, yet still falls
 * as the prediction comes nearer, so a fit can always tell which way a wild measurement points
 * (a hard cap would leave the objective flat there, and the fit where it started). */
double calibrate_loss(double predicted, double measured)
{
    const double r = fabs(log(predicted / measured)), c = CALIBRATE_LOSS_SCALE;
    if (!isfinite(r))
        return FAILED_RUN_PENALTY;
    return 2 * r * (r / (hypot(1, r / c) + 1));
}

static double objective_of(const fit_t *f, const double *theta)
{
    llm_system_t s;
    apply(f, theta, &s);
    const calibrate_input_t *in = f->in;
    double sum = 0;
    /* Σ ρ(ln(predicted/measured)) over every measurement the fit sees. */
    for (size_t i = 0; i < in->n_gemms; i++)
        sum += calibrate_loss(calibrate_gemm_tflops(&s, &in->gemms[i]), in->gemms[i].tflops);
    for (size_t i = 0; i < in->n_collectives; i++)
        sum += calibrate_loss(calibrate_collective_time(&s, &in->collectives[i]),
                      in->collectives[i].time_s);
    for (size_t i = 0; i < in->n_runs; i++)
        if ((long)i != f->skip_run)
            sum += calibrate_loss(calibrate_run_time(&s, &in->runs[i]), in->runs[i].step_time_s);
    /* + λ Σ ((θ − θ_base)/scale)²: the pull toward the base system. */
    for (int k = 0; k < f->n; k++) {
        double d = (theta[k] - base_value(f->base, &f->desc[k])) / f->desc[k].scale;
        sum += CALIBRATE_LAMBDA * d * d;
    }
    return sum;
}

static double nlopt_objective(unsigned n, const double *y, double *grad, void *data)
{
    (void)grad; /* BOBYQA is derivative-free */
    fit_t *f = data;
    double theta[CALIBRATE_MAX_PARAMS];
    for (unsigned k = 0; k < n; k++)
        theta[k] = y[k] * f->desc[k].scale;
    f->evals++;
    double value = objective_of(f, theta);
    if (value < f->best_f) {
        f->best_f = value;
        memcpy(f->best_y, y, n * sizeof *y);
    }
    return value;
}

const char *const calibrate_stop_names[] = {"converged", "evaluation_budget", "stalled", NULL};

/* One bounded BOBYQA run from the base system; theta gets the minimiser and *stopped (when not
 * NULL) why the run ended. BOBYQA can end with NLOPT_ROUNDOFF_LIMITED when the measurements pull parameters to
 * their bounds and its quadratic model degenerates (an nccl-tests row that is physically
 * impossible, say); the best point seen is a valid, bounded answer, so it is kept and the stop
 * reported. Only a misuse of NLopt or memory running out is an error. */
static int run_fit(fit_t *f, double *theta, double *fbest, calibrate_stop_t *stopped,
                   fathom_error_t *err)
{
    double lo[CALIBRATE_MAX_PARAMS], hi[CALIBRATE_MAX_PARAMS], y[CALIBRATE_MAX_PARAMS],
        step[CALIBRATE_MAX_PARAMS];
    for (int k = 0; k < f->n; k++) {
        double l, h;
        bounds(f->base, &f->desc[k], &l, &h);
        lo[k] = l / f->desc[k].scale;
        hi[k] = h / f->desc[k].scale;
        y[k] = fmin(fmax(f->y0[k], lo[k]), hi[k]);
        /* A first step of 5% of the coordinate, inside the box. */
        step[k] = fmin(0.05 * fmax(fabs(y[k]), 1.0), 0.5 * (hi[k] - lo[k]));
    }
    f->evals = 0;
    f->best_f = HUGE_VAL;
    nlopt_opt opt = nlopt_create(NLOPT_LN_BOBYQA, (unsigned)f->n);
    if (!opt)
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory (NLopt)");
    nlopt_set_lower_bounds(opt, lo);
    nlopt_set_upper_bounds(opt, hi);
    nlopt_set_min_objective(opt, nlopt_objective, f);
    nlopt_set_initial_step(opt, step);
    nlopt_set_xtol_rel(opt, 1e-9);
    nlopt_set_ftol_abs(opt, 1e-16);
    nlopt_set_maxeval(opt, f->max_evals);
    double best = 0;
    nlopt_result rc = nlopt_optimize(opt, y, &best);
    nlopt_destroy(opt);
    if (rc == NLOPT_INVALID_ARGS || rc == NLOPT_OUT_OF_MEMORY || !isfinite(f->best_f))
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "NLopt failed (%d)", (int)rc);
    if (stopped)
        *stopped = rc == NLOPT_MAXEVAL_REACHED ? CAL_STOP_BUDGET
                   : rc < 0                    ? CAL_STOP_STALLED
                                               : CAL_STOP_CONVERGED;
    if (rc < 0) {
        memcpy(y, f->best_y, (size_t)f->n * sizeof *y);
        best = f->best_f;
    }
    for (int k = 0; k < f->n; k++)
        theta[k] = y[k] * f->desc[k].scale;
    *fbest = best;
    return 0;
}

/* ---- checks and the fit ---- */

int calibrate_check(const llm_system_t *base, const calibrate_input_t *in, fathom_error_t *err)
{
    char p[FATHOM_ERROR_FIELD_MAX];
    if (in->n_gemms + in->n_collectives + in->n_runs == 0)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "runs",
                                "no measurement: give runs, gemms or collectives");
    if (in->n_gemms > CALIBRATE_MAX_GEMMS)
        return fathom_error_set(err, FATHOM_E_LIMIT_EXCEEDED, "gemms", "more than %d rows",
                                CALIBRATE_MAX_GEMMS);
    if (in->n_collectives > CALIBRATE_MAX_COLLECTIVE_ROWS)
        return fathom_error_set(err, FATHOM_E_LIMIT_EXCEEDED, "collectives",
                                "more than %d rows in all", CALIBRATE_MAX_COLLECTIVE_ROWS);
    if (in->n_runs > CALIBRATE_MAX_RUNS)
        return fathom_error_set(err, FATHOM_E_LIMIT_EXCEEDED, "runs", "more than %d runs",
                                CALIBRATE_MAX_RUNS);
    for (size_t i = 0; i < in->n_gemms; i++) {
        const calibrate_gemm_t *g = &in->gemms[i];
        snprintf(p, sizeof p, "gemms[%zu].datatype", i);
        if ((unsigned)g->datatype >= LLM_DT__COUNT || !base->matrix.rate[g->datatype].present)
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p,
                                    "the system's matrix engine has no such datatype");
        /* The fit can raise an efficiency to 1, no further: a row above the peak is no dense
         * GEMM on this system (a FLOP/s slip, a sparse kernel, another GPU). Left in, its error
         * (predicted/measured − 1) sits near −1 whatever the fit does, and the row is ignored
         * without a word. */
        const double peak = base->matrix.rate[g->datatype].tflops;
        if (g->tflops > peak) {
            snprintf(p, sizeof p, "gemms[%zu].tflops", i);
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p,
                                    "%g TFLOP/s is above the system's %s matrix peak (%g TFLOP/s): "
                                    "no GEMM runs faster than its peak; check the unit (TFLOP/s) "
                                    "and the system",
                                    g->tflops, llm_datatype_name(g->datatype), peak);
        }
        if (!isfinite(calibrate_gemm_tflops(base, g))) {
            snprintf(p, sizeof p, "gemms[%zu].m", i);
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p,
                                    "no point of the matrix curve covers 2mnk = %g FLOP",
                                    2.0 * g->m * g->n * g->k);
        }
    }
    for (size_t i = 0; i < in->n_collectives; i++) {
        const calibrate_coll_row_t *c = &in->collectives[i];
        if (c->network < 0 || c->network >= base->num_networks) {
            snprintf(p, sizeof p, "collectives[%zu].network", i);
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p,
                                    "the system has %d network tiers, got index %d",
                                    base->num_networks, c->network);
        }
        const int64_t size = base->networks[c->network].size;
        if (size > 0 && c->procs > size) {
            snprintf(p, sizeof p, "collectives[%zu].procs", i);
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p,
                                    "network tier %d connects %lld processors, got %lld ranks",
                                    c->network, (long long)size, (long long)c->procs);
        }
        if (c->procs < 2 || !(c->bytes > 0) || !(c->time_s > 0)) {
            snprintf(p, sizeof p, "collectives[%zu]", i);
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p,
                                    "needs at least 2 ranks, bytes and a time > 0");
        }
    }
    for (size_t i = 0; i < in->n_runs; i++) {
        llm_result_t r;
        fathom_error_t e2;
        if (llm_estimate(in->runs[i].model, base, &in->runs[i].execution, &r, &e2)) {
            /* A refusal of the system ("system", "system.networks[0]…") names the request's
             * one base system, which no run holds: "runs[0].system" is no path of the request.
             * Anything else is the run's: runs[i] + the estimate's own path
             * ("execution.tensor_par"), cut if too long. */
            const bool of_system = strncmp(e2.field, "system", 6) == 0 &&
                                   (e2.field[6] == 0 || e2.field[6] == '.');
            if (of_system)
                return fathom_error_set(err, e2.code, e2.field, "runs[%zu]: %s", i,
                                        e2.message);
            char q[FATHOM_ERROR_FIELD_MAX + 32];
            snprintf(q, sizeof q, "runs[%zu].%s", i, e2.field[0] ? e2.field : "execution");
            q[FATHOM_ERROR_FIELD_MAX - 1] = 0;
            return fathom_error_set(err, e2.code, q, "%s", e2.message);
        }
    }
    return 0;
}

/* The main fit into out (f set up for it, theta0 the base values, theta the fitted ones).
 * loo_fits: how many leave-one-out fits will follow, for the evaluation budget. */
static int fit_main(const llm_system_t *base, const calibrate_input_t *in, int loo_fits, fit_t *f,
                    double *theta0, double *theta, calibrate_result_t *out, fathom_error_t *err)
{
    if (calibrate_check(base, in, err))
        return -1;
    memset(f, 0, sizeof *f);
    f->base = base;
    f->in = in;
    f->skip_run = -1;
    if (build_params(f))
        return fathom_error_set(err, FATHOM_E_LIMIT_EXCEEDED, "gemms",
                                "more than %d free parameters", CALIBRATE_MAX_PARAMS);
    /* Evaluations per fit: the work budget over (fits × work of one evaluation), where a fit is
     * the main one plus one per run left out, and an evaluation predicts every row (1 unit) and
     * estimates every run (100 units). */
    const double fits = 1.0 + (double)loo_fits;
    const double work = 100.0 * (double)in->n_runs + (double)(in->n_gemms + in->n_collectives);
    f->max_evals = (int)fmin(CALIBRATE_MAX_EVALS,
                             fmax(CALIBRATE_MIN_EVALS, CALIBRATE_WORK_BUDGET / (fits * work)));
    double fmin_ = 0;
    for (int k = 0; k < f->n; k++)
        theta0[k] = base_value(base, &f->desc[k]);
    memset(out, 0, sizeof *out);
    out->objective_before = objective_of(f, theta0);
    if (run_fit(f, theta, &fmin_, &out->stopped, err))
        return -1;
    out->objective_after = fmin_;
    out->evaluations = f->evals;
    apply(f, theta, &out->system);
    out->n_params = f->n;
    for (int k = 0; k < f->n; k++) {
        calibrate_param_t *p = &out->params[k];
        param_name(&f->desc[k], p->name, sizeof p->name);
        p->base = theta0[k];
        p->fitted = theta[k];
        bounds(base, &f->desc[k], &p->lower, &p->upper);
        /* At a bound: within 0.1% of the box's width. */
        double w = 1e-3 * (p->upper - p->lower);
        p->at_bound = theta[k] <= p->lower + w ? -1 : theta[k] >= p->upper - w ? 1 : 0;
    }
    return 0;
}

int calibrate_fit_system(const llm_system_t *base, const calibrate_input_t *in,
                         calibrate_result_t *out, fathom_error_t *err)
{
    fit_t f;
    double theta0[CALIBRATE_MAX_PARAMS], theta[CALIBRATE_MAX_PARAMS];
    return fit_main(base, in, 0, &f, theta0, theta, out, err);
}

int calibrate_fit(const llm_system_t *base, const calibrate_input_t *in, calibrate_result_t *out,
                  calibrate_prediction_t *gemm_pred, calibrate_prediction_t *coll_pred,
                  calibrate_prediction_t *run_pred, fathom_error_t *err)
{
    fit_t f;
    double theta0[CALIBRATE_MAX_PARAMS], theta[CALIBRATE_MAX_PARAMS];
    if (fit_main(base, in, in->n_runs >= 2 ? (int)in->n_runs : 0, &f, theta0, theta, out, err))
        return -1;
    for (size_t i = 0; i < in->n_gemms; i++)
        gemm_pred[i] = (calibrate_prediction_t){in->gemms[i].tflops,
                                                calibrate_gemm_tflops(base, &in->gemms[i]),
                                                calibrate_gemm_tflops(&out->system, &in->gemms[i]),
                                                NAN};
    for (size_t i = 0; i < in->n_collectives; i++)
        coll_pred[i] = (calibrate_prediction_t){
            in->collectives[i].time_s, calibrate_collective_time(base, &in->collectives[i]),
            calibrate_collective_time(&out->system, &in->collectives[i]), NAN};
    for (size_t i = 0; i < in->n_runs; i++) {
        run_pred[i] = (calibrate_prediction_t){in->runs[i].step_time_s,
                                               calibrate_run_time(base, &in->runs[i]),
                                               calibrate_run_time(&out->system, &in->runs[i]),
                                               NAN};
        if (in->n_runs < 2)
            continue;
        /* Leave-one-out: the same fit without run i, then run i predicted by it. */
        fit_t g = f;
        g.skip_run = (long)i;
        double th[CALIBRATE_MAX_PARAMS], fm;
        if (run_fit(&g, th, &fm, NULL, err))
            return -1;
        llm_system_t s;
        apply(&g, th, &s);
        run_pred[i].loo = calibrate_run_time(&s, &in->runs[i]);
    }
    return 0;
}

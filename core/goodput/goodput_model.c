/* goodput_model.c — the Pollux throughput/efficiency/goodput model and its batch-size optimizer
 * (see goodput.h for the formulas).
 *
 * The reference outputs were computed by the seed's numpy code, and the optimizer's answer is an
 * integer atomic batch chosen through ceil(): to land on the same integers, the candidate batch
 * sizes are built exactly as np.geomspace builds them (a linspace of log10 endpoints, i·step +
 * start, the last point set to the stop, 10^y, then both endpoints overwritten by the exact
 * inputs), and every formula keeps the seed's order of operations. */
#include "goodput.h"
#include "goodput_internal.h"

#include <math.h>

#define CEIL_EPS 1e-8   /* the seed's tolerance for ceil() of a ratio that should be an integer */
#define NO_LINK_TIME 1e-8 /* network time terms when a single replica has no link */

static int check_positive(double x, const char *field, fathom_error_t *err)
{
    if (!isfinite(x) || !(x > 0))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, field,
                                "must be finite and greater than 0, got %.17g", x);
    return 0;
}

int goodput_model_check(const goodput_model_t *m, fathom_error_t *err)
{
    const goodput_perf_params_t *p = &m->perf;
    if (check_positive(p->alpha_c, "perf_params.alpha_c", err) ||
        check_positive(p->beta_c, "perf_params.beta_c", err) ||
        check_positive(p->alpha_n, "perf_params.alpha_n", err) ||
        check_positive(p->beta_n, "perf_params.beta_n", err) ||
        check_positive(p->alpha_r, "perf_params.alpha_r", err) ||
        check_positive(p->beta_r, "perf_params.beta_r", err))
        return -1;
    if (!isfinite(p->gamma) || p->gamma < GOODPUT_GAMMA_MIN || p->gamma > GOODPUT_GAMMA_MAX)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "perf_params.gamma",
                                "must be between 1 and 10, got %.17g", p->gamma);
    if (!isfinite(m->grad.sqr) || m->grad.sqr < 0)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "grad_params.sqr",
                                "must be finite and at least 0, got %.17g", m->grad.sqr);
    if (!isfinite(m->grad.var) || m->grad.var < 0)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "grad_params.var",
                                "must be finite and at least 0, got %.17g", m->grad.var);
    if (m->init_batch_size < 1 || m->init_batch_size > GOODPUT_MAX_BATCH)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "init_batch_size",
                                "must be between 1 and %lld, got %lld", GOODPUT_MAX_BATCH,
                                (long long)m->init_batch_size);
    return 0;
}

/* Nodes and replicas of an allocation; shared by configurations, optimize and the fit. */
static int check_allocation(int64_t nodes, int64_t replicas, const char *nodes_field,
                            const char *replicas_field, fathom_error_t *err)
{
    if (nodes < 1 || nodes > GOODPUT_MAX_NODES)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, nodes_field,
                                "must be between 1 and %lld, got %lld", GOODPUT_MAX_NODES,
                                (long long)nodes);
    if (replicas < 1 || replicas > GOODPUT_MAX_REPLICAS)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, replicas_field,
                                "must be between 1 and %lld, got %lld", GOODPUT_MAX_REPLICAS,
                                (long long)replicas);
    if (nodes > replicas)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, nodes_field,
                                "must not exceed num_replicas (%lld), got %lld",
                                (long long)replicas, (long long)nodes);
    return 0;
}

int goodput__check_allocation(int64_t nodes, int64_t replicas, const char *nodes_field,
                              const char *replicas_field, fathom_error_t *err)
{
    return check_allocation(nodes, replicas, nodes_field, replicas_field, err);
}

int goodput_config_check(const goodput_model_t *m, const goodput_config_t *c, fathom_error_t *err)
{
    if (check_allocation(c->num_nodes, c->num_replicas, "num_nodes", "num_replicas", err))
        return -1;
    if (c->atomic_bsz < 1 || c->atomic_bsz > GOODPUT_MAX_BATCH)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "atomic_bsz",
                                "must be between 1 and %lld, got %lld", GOODPUT_MAX_BATCH,
                                (long long)c->atomic_bsz);
    if (c->accum_steps < 0 || c->accum_steps > GOODPUT_MAX_BATCH)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "accum_steps",
                                "must be between 0 and %lld, got %lld", GOODPUT_MAX_BATCH,
                                (long long)c->accum_steps);
    /* Computed in double first: the product of three in-range integers can exceed int64. */
    double batch = (double)c->num_replicas * (double)c->atomic_bsz * (double)(c->accum_steps + 1);
    if (batch > (double)GOODPUT_MAX_BATCH)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "atomic_bsz",
                                "total batch num_replicas * atomic_bsz * (accum_steps + 1) = %.17g "
                                "exceeds the limit %lld",
                                batch, GOODPUT_MAX_BATCH);
    if (batch < (double)m->init_batch_size)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "atomic_bsz",
                                "total batch num_replicas * atomic_bsz * (accum_steps + 1) = %lld "
                                "is below init_batch_size (%lld)",
                                (long long)batch, (long long)m->init_batch_size);
    return 0;
}

double goodput_accum_time(const goodput_perf_params_t *p, double atomic_bsz)
{
    return p->alpha_c + p->beta_c * atomic_bsz;
}

double goodput_network_time(const goodput_perf_params_t *p, double num_nodes, double num_replicas)
{
    /* The most significant link sets the cost: inter-node if any, else intra-node if more than
     * one replica, else none. */
    double bottleneck = NO_LINK_TIME, retrogress = NO_LINK_TIME;
    if (num_nodes > 1) {
        bottleneck = p->alpha_n;
        retrogress = p->beta_n;
    } else if (num_replicas > 1) {
        bottleneck = p->alpha_r;
        retrogress = p->beta_r;
    }
    return bottleneck + retrogress * fmax(num_replicas - 2, 1e-8);
}

double goodput_log_optim_time(const goodput_perf_params_t *p, double accum_time,
                              double network_time)
{
    return log(pow(accum_time, p->gamma) + pow(network_time, p->gamma)) / p->gamma;
}

static int64_t total_batch(const goodput_config_t *c)
{
    return c->num_replicas * c->atomic_bsz * (c->accum_steps + 1);
}

double goodput_throughput(const goodput_perf_params_t *p, const goodput_config_t *c)
{
    double accum_time = goodput_accum_time(p, (double)c->atomic_bsz);
    double network_time =
        goodput_network_time(p, (double)c->num_nodes, (double)c->num_replicas);
    double optim_time = exp(goodput_log_optim_time(p, accum_time, network_time));
    double total_time = (double)c->accum_steps * accum_time + optim_time;
    return (double)total_batch(c) / total_time;
}

double goodput_efficiency(const goodput_model_t *m, double batch_size)
{
    double scale = batch_size / (double)m->init_batch_size;
    double denom = m->grad.var / scale + m->grad.sqr;
    double gain = denom > 0 ? (m->grad.var + m->grad.sqr) / denom : 1.0;
    return gain / scale;
}

/* The formulas without checks, for configurations the optimizer built itself. */
static void evaluate_unchecked(const goodput_model_t *m, const goodput_config_t *c,
                               goodput_eval_t *out)
{
    out->batch_size = total_batch(c);
    out->throughput = goodput_throughput(&m->perf, c);
    out->efficiency = goodput_efficiency(m, (double)out->batch_size);
    out->goodput = out->throughput * out->efficiency;
}

/* The optimizer time exp(log(Ta^γ + Tn^γ)/γ) underflows to 0 s when the fitted times are tiny
 * (1e-300 s and γ = 10: Ta^γ is below the smallest double), and batch / 0 s is infinite. No
 * cluster has such times, and an answer cannot carry Infinity: the parameters are refused. */
static int check_finite(const goodput_model_t *m, const goodput_eval_t *ev, fathom_error_t *err)
{
    if (isfinite(ev->throughput) && isfinite(ev->goodput))
        return 0;
    return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "perf_params",
                            "give a step time that underflows to 0 s (times this small, raised "
                            "to gamma = %g, are below the smallest double), so the throughput "
                            "would be infinite; give the times fitted to a real cluster",
                            m->perf.gamma);
}

int goodput_evaluate(const goodput_model_t *m, const goodput_config_t *c, goodput_eval_t *out,
                     fathom_error_t *err)
{
    if (goodput_model_check(m, err) || goodput_config_check(m, c, err))
        return -1;
    evaluate_unchecked(m, c, out);
    return check_finite(m, out, err);
}

/* np.geomspace(start, stop, 50) for positive start and stop, step for step. */
static void geomspace(double start, double stop, double out[GOODPUT_NUM_CANDIDATES])
{
    const int n = GOODPUT_NUM_CANDIDATES;
    double log_start = log10(start), log_stop = log10(stop);
    double step = (log_stop - log_start) / (double)(n - 1);
    for (int i = 0; i < n; i++) {
        /* numpy divides before multiplying when the step underflows to 0; both give start. */
        double y = step == 0 ? (double)i / (double)(n - 1) * (log_stop - log_start) + log_start
                             : (double)i * step + log_start;
        if (i == n - 1)
            y = log_stop;
        out[i] = pow(10.0, y);
    }
    out[0] = start;
    out[n - 1] = stop;
}

/* The options with the seed's defaults filled in. */
static void resolve_opts(const goodput_model_t *m, const goodput_optimize_opts_t *opts,
                         int64_t *max_batch, int64_t *min_atomic, int64_t *max_atomic)
{
    *max_batch = opts->max_batch_size ? opts->max_batch_size : m->init_batch_size;
    *min_atomic = opts->min_atomic_bsz ? opts->min_atomic_bsz : 1;
    *max_atomic = opts->max_atomic_bsz ? opts->max_atomic_bsz : *max_batch;
}

int goodput_optimize_check(const goodput_model_t *m, const goodput_optimize_opts_t *opts,
                           fathom_error_t *err)
{
    if (goodput_model_check(m, err))
        return -1;
    int64_t max_batch, min_atomic, max_atomic;
    resolve_opts(m, opts, &max_batch, &min_atomic, &max_atomic);
    if (max_batch < m->init_batch_size || max_batch > GOODPUT_MAX_BATCH)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "max_batch_size",
                                "must be between init_batch_size (%lld) and %lld, got %lld",
                                (long long)m->init_batch_size, GOODPUT_MAX_BATCH,
                                (long long)max_batch);
    if (min_atomic < 1 || min_atomic > GOODPUT_MAX_BATCH)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "atomic_bsz_range[0]",
                                "must be between 1 and %lld, got %lld", GOODPUT_MAX_BATCH,
                                (long long)min_atomic);
    if (max_atomic < min_atomic || max_atomic > GOODPUT_MAX_BATCH)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "atomic_bsz_range[1]",
                                "must be between the minimum atomic batch (%lld) and %lld, "
                                "got %lld",
                                (long long)min_atomic, GOODPUT_MAX_BATCH, (long long)max_atomic);
    return 0;
}

int goodput_optimize(const goodput_model_t *m, int64_t num_nodes, int64_t num_replicas,
                     const goodput_optimize_opts_t *opts, goodput_optimum_t *out,
                     fathom_error_t *err)
{
    if (goodput_optimize_check(m, opts, err) ||
        check_allocation(num_nodes, num_replicas, "num_nodes", "num_replicas", err))
        return -1;
    int64_t max_batch, min_atomic, max_atomic;
    resolve_opts(m, opts, &max_batch, &min_atomic, &max_atomic);

    double replicas = (double)num_replicas;
    double init = (double)m->init_batch_size;
    /* Both factors are at most 2^40 and 10^6, so the product is exact. */
    int64_t min_batch = min_atomic * num_replicas;
    if (min_batch < m->init_batch_size)
        min_batch = m->init_batch_size;
    double targets[GOODPUT_NUM_CANDIDATES];
    geomspace((double)min_batch, (double)max_batch, targets);

    int best = 0;
    for (int i = 0; i < GOODPUT_NUM_CANDIDATES; i++) {
        double local = targets[i] / replicas;
        double accum = 0;
        if (opts->accumulation) {
            accum = ceil(local / (double)max_atomic - CEIL_EPS) - 1;
            /* The seed's formula gives −1 (and then an infinite atomic batch) when local is
             * below 1e-8 · max_atomic; no accumulation is what it means there. */
            if (accum < 0)
                accum = 0;
            /* With one replica, the gradient statistics that scale the learning rate need at
             * least two micro-batches to be estimated. */
            if (num_replicas == 1 && local > init + CEIL_EPS && accum < 1)
                accum = 1;
        }
        double atomic = ceil(local / (accum + 1) - CEIL_EPS);
        goodput_candidate_t *cand = &out->curve[i];
        goodput_config_t c = {num_nodes, num_replicas, (int64_t)atomic, (int64_t)accum};
        goodput_eval_t ev;
        evaluate_unchecked(m, &c, &ev);
        if (check_finite(m, &ev, err))
            return -1;
        cand->target_batch_size = targets[i];
        cand->batch_size = ev.batch_size;
        cand->atomic_bsz = c.atomic_bsz;
        cand->accum_steps = c.accum_steps;
        bool in_range = c.atomic_bsz >= min_atomic && c.atomic_bsz <= max_atomic;
        cand->goodput = in_range ? ev.goodput : 0.0;
        if (cand->goodput > out->curve[best].goodput)
            best = i;
    }
    out->best = out->curve[best];
    return 0;
}

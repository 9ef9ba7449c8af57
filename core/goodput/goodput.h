/* goodput.h — the Pollux goodput model (OSDI'21, AdaptDL's goodput.py as seed 001 has it): system
 * throughput times statistical efficiency, the batch-size/accumulation optimizer built on it, and
 * the fit of the performance parameters from measured step times.
 *
 * Model, in the seed's terms:
 *   accum time      T_a = alpha_c + beta_c · atomic_bsz                       (one micro-step)
 *   network time    T_n = alpha_n + beta_n · max(replicas − 2, 1e-8)  if nodes > 1
 *                       = alpha_r + beta_r · max(replicas − 2, 1e-8)  if one node, replicas > 1
 *                       = 1e-8 + 1e-8 · max(replicas − 2, 1e-8)       otherwise
 *   optim step      T_o = (T_a^gamma + T_n^gamma)^(1/gamma)   (overlap of compute and network)
 *   throughput      replicas · atomic_bsz · (accum_steps + 1) / (accum_steps · T_a + T_o)
 *   efficiency      (PGNS + B0) / (PGNS + B), PGNS = var / sqr · B0, B0 = init_batch_size
 *   goodput         throughput · efficiency(B), B = replicas · atomic_bsz · (accum_steps + 1)
 * Times are in seconds, throughput and goodput in samples per second, batch sizes in samples.
 *
 * Limits (every array a caller passes is bounded by these; larger requests are refused with
 * FATHOM_E_LIMIT_EXCEEDED before anything is allocated):
 *   GOODPUT_MAX_MEASUREMENTS  rows given to goodput_fit_perf_params
 *   GOODPUT_MAX_NODES / GOODPUT_MAX_REPLICAS / GOODPUT_MAX_BATCH  ranges of the integer inputs,
 *   chosen so that every product below stays exact in a double.
 * Callers that evaluate or optimize many configurations call the single-configuration functions
 * in a loop and bound their own arrays (the codec caps them at GOODPUT_MAX_CONFIGS).
 *
 * Field names in errors are the JSON member names of the request ("perf_params.gamma",
 * "num_nodes", "atomic_bsz"); a caller that reads arrays prefixes them with the element path. */
#ifndef FATHOM_GOODPUT_H
#define FATHOM_GOODPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fathom_error.h"

#define GOODPUT_NUM_CANDIDATES 50     /* total batch sizes tried by goodput_optimize */
#define GOODPUT_MAX_CONFIGS 10000      /* per request: evaluate rows, optimize pairs */
#define GOODPUT_MAX_MEASUREMENTS 10000 /* rows given to a fit */
#define GOODPUT_MAX_NODES 100000LL
#define GOODPUT_MAX_REPLICAS 1000000LL
#define GOODPUT_MAX_BATCH 1099511627776LL /* 2^40 samples */
#define GOODPUT_GAMMA_MIN 1.0
#define GOODPUT_GAMMA_MAX 10.0
#define GOODPUT_NUM_PERF_PARAMS 7
#define GOODPUT_FIT_MAX_EVALS 100000 /* objective evaluations per fit, over all starts */

/* Performance parameters, in the seed's order (the fit's vector uses this order too). */
typedef struct {
    double alpha_c; /* s: constant term of the accum (forward/backward) time */
    double beta_c;  /* s per sample: slope of the accum time in the atomic batch */
    double alpha_n; /* s: constant term of inter-node network time */
    double beta_n;  /* s per replica: inter-node retrogression */
    double alpha_r; /* s: constant term of intra-node network time */
    double beta_r;  /* s per replica: intra-node retrogression */
    double gamma;   /* overlap exponent in [1, 10]: 1 = no overlap, 10 ≈ max() */
} goodput_perf_params_t;

/* Gradient statistics: squared norm of the true gradient and the per-sample variance, both
 * measured at init_batch_size. */
typedef struct {
    double sqr;
    double var;
} goodput_grad_params_t;

typedef struct {
    goodput_perf_params_t perf;
    goodput_grad_params_t grad;
    int64_t init_batch_size; /* B0, samples */
} goodput_model_t;

/* One allocation and batch configuration. */
typedef struct {
    int64_t num_nodes;
    int64_t num_replicas;
    int64_t atomic_bsz;  /* samples per replica per micro-step */
    int64_t accum_steps; /* micro-steps accumulated before each optimizer step (0 = none) */
} goodput_config_t;

typedef struct {
    int64_t batch_size;  /* replicas · atomic_bsz · (accum_steps + 1), samples */
    double throughput;   /* samples / s */
    double efficiency;   /* dimensionless, 1 at init_batch_size */
    double goodput;      /* samples / s, throughput · efficiency */
} goodput_eval_t;

/* Checks parameters: every perf parameter finite and > 0, gamma in [1, 10], grad parameters
 * finite and >= 0, init_batch_size in [1, GOODPUT_MAX_BATCH]. */
int goodput_model_check(const goodput_model_t *m, fathom_error_t *err);

/* Checks one configuration against a checked model: 1 <= nodes <= replicas, atomic_bsz >= 1,
 * accum_steps >= 0, all within the limits, and a total batch of at least init_batch_size. */
int goodput_config_check(const goodput_model_t *m, const goodput_config_t *c, fathom_error_t *err);

/* The model's pieces, for a checked model (no checks here: these are the formulas). */
double goodput_accum_time(const goodput_perf_params_t *p, double atomic_bsz);
double goodput_network_time(const goodput_perf_params_t *p, double num_nodes, double num_replicas);
double goodput_log_optim_time(const goodput_perf_params_t *p, double accum_time,
                              double network_time);
double goodput_throughput(const goodput_perf_params_t *p, const goodput_config_t *c);
double goodput_efficiency(const goodput_model_t *m, double batch_size);

/* Throughput, efficiency and goodput of one configuration (checks model and configuration). */
int goodput_evaluate(const goodput_model_t *m, const goodput_config_t *c, goodput_eval_t *out,
                     fathom_error_t *err);

typedef struct {
    int64_t max_batch_size; /* largest total batch; 0 = init_batch_size (the seed's default) */
    int64_t min_atomic_bsz; /* 0 = 1 */
    int64_t max_atomic_bsz; /* 0 = max_batch_size */
    bool accumulation;      /* allow gradient accumulation */
} goodput_optimize_opts_t;

/* One of the 50 candidates. goodput is 0 when its atomic batch falls outside the range. */
typedef struct {
    double target_batch_size; /* the geometric sample, samples (not an integer) */
    int64_t batch_size;       /* replicas · atomic_bsz · (accum_steps + 1) */
    int64_t atomic_bsz;
    int64_t accum_steps;
    double goodput;           /* samples / s */
} goodput_candidate_t;

typedef struct {
    goodput_candidate_t best; /* the first candidate of greatest goodput (numpy argmax) */
    goodput_candidate_t curve[GOODPUT_NUM_CANDIDATES]; /* in order of target batch size */
} goodput_optimum_t;

/* Checks a model and the options of goodput_optimize (the checks it makes before searching):
 * max_batch_size in [init_batch_size, GOODPUT_MAX_BATCH], 1 <= min_atomic <= max_atomic. */
int goodput_optimize_check(const goodput_model_t *m, const goodput_optimize_opts_t *opts,
                           fathom_error_t *err);

/* The seed's optimize for one (num_nodes, num_replicas): 50 total batch sizes geometrically
 * spaced from max(B0, min_atomic_bsz · replicas) to max_batch_size; with accumulation, the
 * fewest accumulation steps that keep the atomic batch at most max_atomic_bsz, and at least one
 * when a single replica goes above B0; atomic batch ceil(local / (accum_steps + 1) − 1e-8).
 * Refuses nodes > replicas, max_batch_size < B0, an empty atomic_bsz_range. */
int goodput_optimize(const goodput_model_t *m, int64_t num_nodes, int64_t num_replicas,
                     const goodput_optimize_opts_t *opts, goodput_optimum_t *out,
                     fathom_error_t *err);

/* ---- fit (goodput_fit.c) ---- */

typedef struct {
    int64_t num_nodes;
    int64_t num_replicas;
    int64_t atomic_bsz;
    double accum_step_time; /* s, measured time of one accumulation micro-step */
    double optim_step_time; /* s, measured time of one optimizer step */
} goodput_measurement_t;

/* Which parameters the data cannot determine and the fit therefore fixes (seed's rules). */
typedef struct {
    bool alpha_c; /* a single atomic batch size observed: alpha_c = mean(accum_step_time) / 2 */
    bool alpha_n, beta_n; /* no multi-node row (beta_n also: no row with more than 2 replicas) */
    bool alpha_r, beta_r; /* no single-node multi-replica row (beta_r also: <= 2 replicas) */
} goodput_fixed_t;

typedef struct {
    goodput_perf_params_t params; /* after the prior alpha_n >= 1.1 alpha_r, beta_n >= 1.1 beta_r
                                     (applied when no multi-node row was measured) */
    double objective;             /* the seed's objective at params */
    goodput_fixed_t fixed;
} goodput_fit_t;

/* Checks every row: 1 <= nodes <= replicas, atomic_bsz >= 1, times finite and > 0. Fields are
 * "measurements[i].<member>"; an empty set is refused on "measurements". */
int goodput_measurements_check(const goodput_measurement_t *rows, size_t n, fathom_error_t *err);

/* The seed's objective: RMS log error of accum times + RMS log error of optimizer-step times +
 * 1e-3 (gamma − 1)^2 + 1e-2 ((beta_n / alpha_n)^2 + (beta_r / alpha_r)^2). When grad is not NULL
 * it receives the 7 partial derivatives in parameter order. */
double goodput_fit_objective(const goodput_perf_params_t *p, const goodput_measurement_t *rows,
                             size_t n, double grad[GOODPUT_NUM_PERF_PARAMS]);

/* fit_perf_params of the seed: bounded minimization (lower 1e-8 for the six times, gamma in
 * [1, 10]) of the objective from (0.1, 0.01, 0.1, 0.01, 0.1, 0.01, 1.001), with the fixing rules
 * and the prior. Uses NLopt's L-BFGS with analytic gradients from 25 deterministic starts (the
 * seed's among them), each polished by restarts; the best local minimum wins. At most
 * GOODPUT_FIT_MAX_EVALS objective evaluations in all (each O(n)), so one fit's time is bounded
 * (about 2 s for 10,000 rows). FATHOM_E_NO_CONVERGENCE when no run gives a
 * finite objective. */
int goodput_fit_perf_params(const goodput_measurement_t *rows, size_t n, goodput_fit_t *out,
                            fathom_error_t *err);

#endif

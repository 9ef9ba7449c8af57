/* calibrate.h — fitting a system's free parameters to what was measured on a cluster.
 *
 * A base system (llm.h) plus three kinds of measurements:
 *   - GEMM microbenchmarks (m, n, k, datatype, achieved TFLOP/s);
 *   - collective microbenchmarks (one row of nccl-tests' table: collective, processors, network
 *     tier, bytes, seconds);
 *   - whole runs (model, execution, measured step time).
 * calibrate_fit moves the system's free parameters (below) to minimise
 *     Σ_measurements ρ(ln(predicted/measured))  +  λ Σ_params ((θ − θ_base)/scale_θ)²
 * with NLopt's BOBYQA (derivative-free, bounded) from the base system, a fixed evaluation budget
 * and no randomness: the same input gives the same answer. λ = CALIBRATE_LAMBDA. ρ is the
 * pseudo-Huber loss ρ(r) = 2c²(√(1 + (r/c)²) − 1), c = CALIBRATE_LOSS_SCALE, of the log error
 * (symmetric: 3× too slow costs what 3× too fast does): an error
 * well under c counts as r² (least squares), one far above it only linearly, so a measurement
 * the model cannot meet (a run with a term the step model lacks, a bad paste) pulls the shared
 * parameters no harder than its error warrants instead of dominating the fit.
 *
 * Free parameters and their bounds (only those some measurement informs are freed):
 *   matrix.<dt>.gflops_efficiency[j]  each point of the matrix curve of a datatype that has GEMM
 *       rows and whose size band holds at least one row: [0.05, 1] (thresholds kept);
 *   networks[i].efficiency            a tier with collective rows: [0.05, 1];
 *   networks[i].latency               a tier with collective rows: [0, max(1 ms, base)] s;
 *   attention_efficiency              when a run uses fused attention: [0.05, 1];
 *   mem1.scale, vector.scale          when runs are given: a factor on every point of the
 *       curve, [0.25, 1/largest point] (so no point passes 1);
 *   matrix.<dt>.scale                 when runs use a datatype that has no GEMM rows: likewise.
 *   networks[i].ops.<op>.scalar       a tier where two or more ops were measured: every op but
 *       the reference one, [base/4, base·4].
 * A collective's time depends on scalar/efficiency only, so one op per tier cannot tell its scalar
 * from the tier's efficiency: the reference op (all_reduce when measured, else the first op
 * measured on the tier) keeps the base system's scalar and sets the efficiency; each other op's
 * scalar then absorbs how that op differs (e.g. a preset pricing all_gather like all_reduce).
 * Offsets are kept.
 *
 * Pure C, no allocation beyond the caller's arrays, thread-safe. */
#ifndef FATHOM_CALIBRATE_H
#define FATHOM_CALIBRATE_H

#include <stddef.h>
#include <stdint.h>

#include "fathom_error.h"
#include "llm.h"
#include "model.h"

#define CALIBRATE_MAX_PARAMS 160  /* free parameters */
#define CALIBRATE_MAX_GEMMS 4096
#define CALIBRATE_MAX_COLLECTIVE_ROWS 8192
/* Runs: each objective evaluation estimates every run, and leave-one-out refits once per run, so
 * the work grows as runs²; 32 keeps a request within a few seconds. */
#define CALIBRATE_MAX_RUNS 32
#define CALIBRATE_LAMBDA 1e-3     /* weight of the pull toward the base system */
/* Where the loss turns from squared to linear: a log error of 0.1 (about 10 %), about three times
 * the run-to-run noise of whole-run throughput (the calibration test perturbs its inputs by 3 %). */
#define CALIBRATE_LOSS_SCALE 0.1
#define CALIBRATE_MAX_EVALS 20000 /* per fit */
#define CALIBRATE_MIN_EVALS 300   /* per fit, whatever the work budget says */
/* Work budget of one request, in units of one microbenchmark prediction (a run's estimate counts
 * 100): the evaluations per fit are cut to fit it, so that no request takes more than a few
 * seconds however many rows and runs it has (within the caps). */
#define CALIBRATE_WORK_BUDGET 1e8

/* nccl-tests' collectives. */
typedef enum {
    CAL_COLL_ALL_REDUCE = 0,
    CAL_COLL_ALL_GATHER = 1,
    CAL_COLL_REDUCE_SCATTER = 2,
    CAL_COLL_ALLTOALL = 3,
    CAL_COLL_SENDRECV = 4,
    CAL_COLL__COUNT
} calibrate_collective_t;
extern const char *const calibrate_collective_names[]; /* "all_reduce", …, NULL */

typedef struct {
    double m, n, k;
    llm_datatype_t datatype;
    double tflops; /* measured, > 0 */
} calibrate_gemm_t;

/* One row of an nccl-tests table: `bytes` is its size column (the whole buffer: nccl-tests'
 * S, the larger of the send and receive buffers), time_s its out-of-place time. */
typedef struct {
    calibrate_collective_t op;
    int network;   /* tier index in the system */
    int64_t procs; /* ranks, >= 2 */
    double bytes;
    double time_s;
} calibrate_coll_row_t;

typedef struct {
    const fathom_model_t *model;
    llm_execution_t execution;
    double step_time_s; /* measured (the codec converts tokens/s or TFLOP/s to it) */
} calibrate_run_t;

typedef struct {
    const calibrate_gemm_t *gemms;
    size_t n_gemms;
    const calibrate_coll_row_t *collectives;
    size_t n_collectives;
    const calibrate_run_t *runs;
    size_t n_runs;
} calibrate_input_t;

/* A free parameter as fitted. */
typedef struct {
    char name[64]; /* "networks[1].latency", "matrix.float16.gflops_efficiency[2]" */
    double base, fitted, lower, upper;
    int at_bound; /* -1 lower, +1 upper, 0 inside */
} calibrate_param_t;

/* Predictions of one measurement, in its own unit (TFLOP/s, seconds, step seconds). */
typedef struct {
    double measured;
    double before; /* base system */
    double after;  /* calibrated system */
    double loo;    /* runs: fit without this run (NaN for GEMMs and collectives, or 1 run) */
} calibrate_prediction_t;

/* Why the main fit stopped. */
typedef enum {
    CAL_STOP_CONVERGED = 0, /* step or change in objective under its tolerance */
    CAL_STOP_BUDGET = 1,    /* the evaluation budget ran out */
    CAL_STOP_STALLED = 2    /* NLopt could not go on (rounding): the best point seen is kept */
} calibrate_stop_t;
extern const char *const calibrate_stop_names[]; /* "converged", "evaluation_budget", "stalled" */

typedef struct {
    llm_system_t system; /* the calibrated system */
    int n_params;
    calibrate_param_t params[CALIBRATE_MAX_PARAMS];
    double objective_before, objective_after;
    int evaluations; /* of the main fit */
    calibrate_stop_t stopped; /* of the main fit */
} calibrate_result_t;

/* Checks the input against the base system (indices, ranges, caps): 0 or -1 with err naming the
 * field ("gemms[3].datatype", "collectives[0].network", "runs[2].execution…"). */
int calibrate_check(const llm_system_t *base, const calibrate_input_t *in, fathom_error_t *err);

/* Fits. gemm_pred, coll_pred and run_pred have n_gemms, n_collectives and n_runs entries (may be
 * NULL when the count is 0). Returns 0, or -1 with err (FATHOM_E_INVALID_FIELD: no measurement;
 * a run the base system cannot estimate names it; FATHOM_E_INTERNAL: NLopt failed). */
int calibrate_fit(const llm_system_t *base, const calibrate_input_t *in, calibrate_result_t *out,
                  calibrate_prediction_t *gemm_pred, calibrate_prediction_t *coll_pred,
                  calibrate_prediction_t *run_pred, fathom_error_t *err);

/* The same fit without predictions or leave-one-out (one fit, the whole evaluation budget):
 * out->system is the calibrated system. Returns 0, or -1 with err as calibrate_fit. */
int calibrate_fit_system(const llm_system_t *base, const calibrate_input_t *in,
                         calibrate_result_t *out, fathom_error_t *err);

/* Predictions with a given system (also used by the tests). */
double calibrate_gemm_tflops(const llm_system_t *s, const calibrate_gemm_t *g);
double calibrate_collective_time(const llm_system_t *s, const calibrate_coll_row_t *c);
/* Step time of a run, or NaN when the system cannot estimate it. */
double calibrate_run_time(const llm_system_t *s, const calibrate_run_t *r);

/* ρ of one measurement (the objective's term; CALIBRATE_LOSS_SCALE): finite for every finite
 * positive ratio predicted/measured, a run's failure penalty for 0, an infinite or NaN one. */
double calibrate_loss(double predicted, double measured);

/* nccl-tests' bus-bandwidth factor of a collective on n ranks: all_reduce 2(n−1)/n, all_gather,
 * reduce_scatter and alltoall (n−1)/n, sendrecv 1 (busbw = algbw · factor). */
double calibrate_busbw_factor(calibrate_collective_t op, int64_t n);

#endif

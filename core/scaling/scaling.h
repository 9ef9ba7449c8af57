/* scaling.h — scaling-law solvers and the cost of a training run (the whole API of core/scaling).
 *
 * Four concepts, one file each (plus the frontier's hull):
 *  - scaling_speed.c: the 2020 Hugging Face calculator ("How big should my language model be?",
 *    Le Scao 2020): a per-GPU speed model of Transformer-XL (non-embedding FLOs per second as a
 *    function of width, depth = width/128, batch and AMP mode), the parameter polynomial, and the
 *    solvers between a budget (hours, dollars) and a model width, with the compute-optimal loss,
 *    parameters and shapes that follow;
 *  - scaling_fit.c: fitting the two laws of that calculator (loss and optimal parameters versus
 *    compute) from loss-versus-compute curves, the way the calculator does it; its compute
 *    frontier is scaling_hull.c, a replay of the Qhull hull the calculator asks scipy for
 *    (private: scaling_internal.h);
 *  - scaling_chinchilla.c: the Chinchilla parametric law, Epoch AI's fit (Besiroglu et al. 2024);
 *  - scaling_run.c: days, GPU-hours, dollars, kWh and CO2 of a run from its step time.
 *
 * Units. The calculator measures compute as "x" = FLOs / 86400, i.e. FLOP/s-days (OpenAI's unit;
 * it keeps the numbers small enough for the hull and the fits); loss_fit and param_fit take x, and
 * every field named `x` below is in that unit. Fields named `flos` are plain FLOs. Hours are wall
 * hours on one GPU (the calculator models a single GPU). */
#ifndef FATHOM_SCALING_H
#define FATHOM_SCALING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fathom_error.h"

#define SCALING_DAY_S 86400.0        /* the calculator's compute unit: FLOs per this many */
#define SCALING_DEPTH_WIDTH_RATIO 128.0 /* depth = width / 128 in the speed model */
#define SCALING_MIN_WIDTH 16.0       /* the seed's solver gives up below this width */
#define SCALING_MAX_WIDTH 1.0e6      /* beyond any model the 2020 fit can speak for */
#define SCALING_DEFAULT_CO2_KG_PER_KWH 0.534

/* ---- the 2020 calculator: GPUs and laws ---- */

typedef enum { SCALING_AMP_O0 = 0, SCALING_AMP_O1 = 1, SCALING_AMP_O2 = 2 } scaling_amp_t;

/* One GPU of the speed model: flo_speed = k · k1^o1 · k2^o2 · depth/(depth + layer_base)
 * · width^b · ln(batch + 1)^c, with (o0,o1,o2) = (1,0,0)/(0,1,0)/(0,0,1) for O0/O1/O2. */
typedef struct {
    double k, k1, k2, b, c, layer_base; /* speed constants */
    double price_per_hour;              /* dollars per GPU-hour */
    double power_kw;                    /* average draw of one GPU, kW */
    double batch_size;                  /* the batch the speed model assumes */
} scaling_gpu_t;

/* loss = a · x^(−b) + c (x = FLOs / 86400). */
typedef struct {
    double a, b, c;
} scaling_loss_fit_t;

/* optimal non-embedding parameters N = d · x^e + f. */
typedef struct {
    double d, e, f;
} scaling_param_fit_t;

/* The calculator's fits of its own CSV (golden/scaling/README.md). */
extern const scaling_loss_fit_t scaling_hf2020_loss_fit;
extern const scaling_param_fit_t scaling_hf2020_param_fit;

/* The seed's GPUs, by exact name ("V100", "V100 (without tensor cores and cudnn.benchmark)",
 * "P100", "P4", "K80"). Returns NULL when the name is unknown. */
const scaling_gpu_t *scaling_gpu_find(const char *name);
/* Name of the i-th GPU of the table, NULL past the end (for listings and error messages). */
const char *scaling_gpu_name(size_t i);

/* Non-embedding FLOs per second of one GPU on a model of this width (depth = width / 128). */
double scaling_flo_speed(const scaling_gpu_t *gpu, scaling_amp_t amp, double width);
/* Non-embedding parameters of the calculator's Transformer-XL shape of this width:
 * 7/128·w³ + 8/128·w² + 3w + 3. */
double scaling_param_polynomial(double width);
/* Largest real width whose polynomial equals `params` (GSL cubic roots). */
double scaling_params_to_width(double params);

/* The laws, in both directions (x = FLOs / 86400). */
double scaling_compute_to_loss(const scaling_loss_fit_t *fit, double x);
double scaling_loss_to_compute(const scaling_loss_fit_t *fit, double loss);
double scaling_compute_to_params(const scaling_param_fit_t *fit, double x);
double scaling_params_to_compute(const scaling_param_fit_t *fit, double params);

/* FLOs at which a model of this width is compute-optimal, and the wall hours one GPU needs to
 * perform them. */
double scaling_width_to_flos(const scaling_param_fit_t *fit, double width);
double scaling_width_to_hours(const scaling_gpu_t *gpu, scaling_amp_t amp,
                              const scaling_param_fit_t *fit, double width);

/* The width whose compute-optimal training takes `hours`: the seed's strategy (a hybrid root
 * finder started at width 128, restarted from half the guess while the residual is 1 s or more
 * and the guess above 16), which lands on the larger of the two roots; if it ever lands below
 * the tipping width the larger root is bracketed instead. Fails (FATHOM_E_NO_CONVERGENCE, field
 * `field`) when hours is below the tipping point's hours (no width takes that little time). */
int scaling_hours_to_width(const scaling_gpu_t *gpu, scaling_amp_t amp,
                           const scaling_param_fit_t *fit, double hours, const char *field,
                           double *width, fathom_error_t *err);

double scaling_hours_to_dollars(const scaling_gpu_t *gpu, double hours);
double scaling_dollars_to_hours(const scaling_gpu_t *gpu, double dollars);
double scaling_hours_to_kwh(const scaling_gpu_t *gpu, double hours);
double scaling_kwh_to_co2(double kwh, double co2_kg_per_kwh);

/* The width that minimizes width_to_hours (GSL Brent minimizer): below it a smaller model is
 * slower to reach its optimum, so its hours are the smallest sensible budget. */
typedef struct {
    double width, hours;
} scaling_tip_t;
int scaling_tipping_point(const scaling_gpu_t *gpu, scaling_amp_t amp,
                          const scaling_param_fit_t *fit, scaling_tip_t *out, fathom_error_t *err);

/* A concrete shape for `params` parameters: depth, and the width (a multiple of 8) that gives
 * that many parameters at that depth. Optimal: depth = max(1, floor(w/128)); alternate (deeper
 * and narrower): depth = max(optimal + 1, floor(0.3 · w^1.25 / 128)). */
typedef struct {
    int64_t depth, width;
} scaling_shape_t;
scaling_shape_t scaling_optimal_shape(double width, double params);
scaling_shape_t scaling_alternate_shape(double width, double params);

/* ---- a whole plan: budget in, everything the calculator shows out ---- */

typedef enum { SCALING_BUDGET_HOURS = 0, SCALING_BUDGET_DOLLARS = 1, SCALING_BUDGET_WIDTH = 2 }
    scaling_budget_kind_t;

typedef struct {
    scaling_gpu_t gpu;
    scaling_amp_t amp;
    scaling_budget_kind_t budget_kind;
    double budget; /* hours, dollars or width, by budget_kind; > 0 (width >= 16) */
    double co2_kg_per_kwh;
    scaling_loss_fit_t loss_fit;
    scaling_param_fit_t param_fit;
} scaling_plan_request_t;

typedef struct {
    double hours, dollars, kwh, co2_kg;
    double width;          /* continuous width (the speed model's) */
    double model_params;   /* parameter polynomial at width */
    double flos;           /* compute-optimal FLOs for that width */
    double optimal_params; /* param_fit at those FLOs */
    double loss;           /* loss_fit at those FLOs */
    scaling_shape_t optimal_shape, alternate_shape;
    scaling_tip_t tip;
    bool below_tip;        /* budget under the tipping point: figures are those of the tip */
} scaling_plan_t;

/* Solves a plan. A time or dollar budget below the tipping point's has no solution; the plan is
 * then that of the tipping point (the cheapest sensible run) with below_tip set. A width below
 * the tipping width is evaluated as asked, with below_tip set. */
int scaling_plan(const scaling_plan_request_t *req, scaling_plan_t *out, fathom_error_t *err);

/* ---- fitting the two laws from loss-versus-compute curves (scaling_fit.c) ---- */

#define SCALING_FIT_MAX_RUNS 1024      /* runs accepted by scaling_fit */
#define SCALING_FIT_MAX_POINTS 200000  /* points over all runs */
#define SCALING_FIT_MIN_RUN_POINTS 6   /* the calculator keeps runs with more than 5 points */

typedef struct {
    const double *x;    /* compute, FLOs / 86400, one per point */
    const double *loss; /* validation loss, one per point */
    size_t n;
    /* Non-embedding parameters of the run; <= 0 derives them as the calculator does from the
     * first point: round(x0 / 4000 / 150 / 60 / 6 · 86400). */
    double params;
} scaling_run_t;

typedef struct {
    double x, loss;
    size_t run; /* index into the runs given to scaling_fit */
} scaling_point_t;

typedef struct {
    scaling_loss_fit_t loss_fit;
    scaling_param_fit_t param_fit;
    scaling_point_t *frontier; /* owned; ordered by x; freed by scaling_fit_result_close */
    size_t n_frontier;
    size_t n_runs_used;        /* runs with more than 5 points */
    size_t n_param_pairs;      /* runs on the frontier (points of the param fit) */
} scaling_fit_result_t;

/* The calculator's procedure (golden/scaling/README.md): runs with more than 5 points, ordered
 * by parameters; points strictly between the smallest x of the third-smallest run and the
 * largest x of the second-largest run; the lower-left convex frontier as the vertices of the
 * hull facets visible from the anchor (1e9, 3) (Qhull "QG0"); loss_fit by nonlinear least squares
 * from (1,1,1); then ln N = ln(d·x^e + f) on the runs' tangent points, also from (1,1,1).
 * Errors name `field` (the caller's JSON path of the runs): fewer than 3 usable runs, or fewer
 * frontier points / frontier runs than the 3 parameters of a fit, are FATHOM_E_INVALID_FIELD;
 * over the caps FATHOM_E_LIMIT_EXCEEDED; a fit that does not converge FATHOM_E_NO_CONVERGENCE. */
/* The calculator's parameter count of a run from its first compute value:
 * round(x0 / 4000 / 150 / 60 / 6 · 86400) (an evaluation every 4000 steps; ties to even). */
double scaling_run_default_params(double x0);

int scaling_fit(const scaling_run_t *runs, size_t n_runs, const char *field,
                scaling_fit_result_t *out, fathom_error_t *err);
void scaling_fit_result_close(scaling_fit_result_t *r);

/* ---- the Chinchilla law (scaling_chinchilla.c) ---- */

/* L(N, D) = E + A/N^α + B/D^β, compute C ≈ 6·N·D. */
typedef struct {
    double E, A, B, alpha, beta;
} scaling_chinchilla_t;
/* Fathom's one Chinchilla fit: Epoch AI's replication of Hoffmann et al. 2022's approach 3
 * (Besiroglu et al. 2024, arXiv:2404.10102), about 20 tokens per parameter at the optimum. */
extern const scaling_chinchilla_t scaling_chinchilla_law;

typedef struct {
    double flos, params, tokens, loss;
} scaling_chinchilla_point_t;

/* The compute-optimal split of `flos` (closed form of min L subject to 6ND = C). */
scaling_chinchilla_point_t scaling_chinchilla_optimal(const scaling_chinchilla_t *law,
                                                      double flos);
/* The loss of N parameters trained on D tokens (flos = 6ND). */
scaling_chinchilla_point_t scaling_chinchilla_loss(const scaling_chinchilla_t *law, double params,
                                                   double tokens);
/* The compute-optimal point of a model of N parameters: the budget whose optimum is N, and its
 * tokens (the plan's "chinchilla" tokens). */
scaling_chinchilla_point_t scaling_chinchilla_optimal_for_params(const scaling_chinchilla_t *law,
                                                                 double params);

/* ---- the cost of a run (scaling_run.c) ---- */

/* What a caller knows about the run besides its step time (the "training" object). */
typedef struct {
    double tokens;          /* tokens to train on, > 0 */
    double gpu_hour_price;  /* dollars per GPU-hour, >= 0 */
    double gpu_power_kw;    /* average draw of one GPU, kW, >= 0 */
    double pue;             /* datacenter power usage effectiveness, >= 1 (default 1.0) */
    double co2_kg_per_kwh;  /* grid intensity, >= 0 (default 0.534) */
} scaling_training_t;

typedef struct {
    double steps;       /* ceil(tokens / (batch × seq)): the last partial batch is a full step */
    double wall_time_s; /* steps × step time */
    double days;
    double gpu_hours;   /* wall hours × GPUs */
    double dollars;     /* gpu_hours × price */
    double kwh;         /* gpu_power_kw × GPUs × wall hours × PUE */
    double co2_kg;      /* kwh × intensity */
} scaling_run_cost_t;

/* The bill of a run of training->tokens tokens at step_time_s per step of batch_size sequences
 * of seq_size tokens on num_gpus GPUs. Refuses non-positive or non-finite inputs (fields named
 * "training.*" for the training members, "step_time_s", "batch_size", "seq_size", "num_gpus"
 * otherwise). */
int scaling_run_cost(double step_time_s, int64_t batch_size, int64_t seq_size, int64_t num_gpus,
                     const scaling_training_t *training, scaling_run_cost_t *out,
                     fathom_error_t *err);

#endif

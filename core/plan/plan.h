/* plan.h — the arithmetic of a cluster plan (the whole API of core/plan): what failures,
 * checkpoints and the rest of a run's losses add to it, the batch a run would use, the range
 * published whole runs put around a plan's figures, and which of a plan's candidates are on the
 * days/dollars Pareto front, cheapest within a deadline or fastest within a budget. Pure C: no
 * I/O, no JSON.
 *
 * Failures and checkpoints (plan_failures.c). Symbols: λ failures per GPU-hour, N GPUs,
 * C checkpoint bytes, B storage bandwidth (bytes/s), R restart time (s), T ideal wall time (s).
 *   M = 3600 / (λ·N)                 the job's mean time between interruptions, s
 *   δ = C / B                        time to write one checkpoint, s
 *   τ = sqrt(2·δ·M)                  Young's optimal interval between checkpoints (Young 1974,
 *                                    "A first order approximation to the optimum checkpoint
 *                                    interval"; Daly 2006 gives the same first-order term)
 *   w = δ/τ + (τ/2 + R)/M            fraction of wall time lost: writing checkpoints, plus per
 *                                    interruption half an interval of lost work and a restart
 *   goodput g = 1 − w                (0 when w ≥ 1: the run never finishes)
 *   expected wall time = T / g;  expected interruptions = (T / g) / M.
 * The default failure rate is the Llama 3 405B run's (Llama Team 2024, "The Llama 3 Herd of
 * Models", §3.3.4: 419 unexpected interruptions in 54 days of pre-training on 16,384 H100s),
 * 419 / (54·24·16384) per GPU-hour ≈ 1.97e-5. */
#ifndef FATHOM_PLAN_H
#define FATHOM_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fathom_error.h"

#define PLAN_DEFAULT_FAILURES_PER_GPU_HOUR (419.0 / (54.0 * 24.0 * 16384.0))

typedef struct {
    double failures_per_gpu_hour; /* λ, >= 0 (0: no failures) */
    double checkpoint_bytes;      /* C, >= 0 */
    double storage_bytes_per_s;   /* B, > 0 */
    double restart_s;             /* R, >= 0 */
} plan_failure_params_t;

typedef struct {
    double mtbf_s;                /* M (infinite when λ = 0) */
    double checkpoint_write_s;    /* δ */
    double checkpoint_interval_s; /* τ (infinite when λ = 0: no checkpoint needed) */
    double overhead;              /* w, in [0, 1] */
    double goodput;               /* g = 1 − w, in [0, 1] */
    double expected_wall_s;       /* T / g (infinite when g = 0) */
    double expected_interruptions;
} plan_failures_t;

/* The cost of interruptions for a run of ideal_wall_s seconds on num_gpus GPUs. Refuses
 * non-finite or negative inputs (fields "failures.per_gpu_hour", "failures.storage_gbps",
 * "failures.restart_minutes", "checkpoint_bytes", "num_gpus", "wall_time_s"). */
int plan_failures(const plan_failure_params_t *p, int64_t num_gpus, double ideal_wall_s,
                  plan_failures_t *out, fathom_error_t *err);

/* ---- what a run loses besides the step (plan_losses.c) ----
 * Each a fraction of wall time or a rate, with its source (the defaults the plan codec gives):
 *   unexpected interruptions λ per GPU-hour, each costing half a checkpoint interval of lost
 *     work (Young's τ above), a restart R and a wait for capacity Q: (τ/2 + R + Q) / M
 *     (Llama 3: 419 unexpected in 54 days on 16,384 GPUs, PLAN_DEFAULT_FAILURES_PER_GPU_HOUR);
 *   checkpoint writes δ/τ (Young);
 *   planned interruptions λp per GPU-hour (maintenance, upgrades: checkpointed first, so only a
 *     restart each): R / Mp, Mp = 3600 / (λp·N) (Llama 3: 47 planned in the same 54 days);
 *   evaluation stalls e: eval_iters forward passes every eval_interval steps, a forward pass a
 *     third of a step's FLOPs (2 of 6 per parameter and token): e = eval_iters / (3 ·
 *     eval_interval) (Megatron-LM's example recipes: --eval-interval 1000 --eval-iters 10,
 *     e = 0.0033);
 *   slow nodes and stragglers s: a step waits for its slowest GPU (Llama 3 §3.3.4: a diurnal
 *     1-2% throughput variation from mid-day temperatures throttling GPU clocks; 0.015);
 *   data-loader stalls d (0 by default: tuned stacks read and tokenize the next batches in
 *     worker processes while the GPUs step; give a measured fraction).
 * goodput g = (1 − δ/τ − (τ/2 + R + Q)/M − R/Mp) · (1 − e) · (1 − s) · (1 − d), 0 when the first
 * factor is not positive; expected wall time = T / g. */
#define PLAN_DEFAULT_PLANNED_PER_GPU_HOUR (47.0 / (54.0 * 24.0 * 16384.0))
#define PLAN_DEFAULT_EVAL_FRACTION (10.0 / (3.0 * 1000.0))
#define PLAN_DEFAULT_SLOW_FRACTION 0.015

typedef struct {
    plan_failure_params_t failures; /* λ, C, B, R */
    double queue_s;                 /* Q, >= 0 */
    double planned_per_gpu_hour;    /* λp, >= 0 */
    double eval_fraction;           /* e, in [0, 1) */
    double slow_fraction;           /* s, in [0, 1) */
    double data_fraction;           /* d, in [0, 1) */
} plan_loss_params_t;

typedef struct {
    plan_failures_t failures; /* Young's interval and the job MTBF (restart R + Q) */
    /* fractions of wall time */
    double checkpoint_writes, lost_work, restarts, planned_restarts, evaluation, slow_nodes,
        data_loader;
    double goodput;           /* g above, in [0, 1] */
    double expected_wall_s;   /* T / g (infinite when g = 0) */
    double planned_mtbf_s;    /* Mp (infinite when λp = 0) */
    /* over expected_wall_s until plan_losses_count_over moves them to the plan's wall time */
    double expected_interruptions, expected_planned;
} plan_losses_t;

/* Everything a run of ideal_wall_s seconds on num_gpus GPUs loses besides the step. Refuses
 * what plan_failures refuses and fractions outside [0, 1) ("losses.<name>"), a negative queue
 * or planned rate. */
int plan_losses(const plan_loss_params_t *p, int64_t num_gpus, double ideal_wall_s,
                plan_losses_t *out, fathom_error_t *err);

/* Counts the interruptions of a run that takes wall_s seconds: W/M unexpected and W/Mp planned
 * (0 where the rate is 0, infinite for a run that never finishes). A plan reports its days with
 * what published runs paid over the modelled wall time; its counts are over those days, the
 * time a cluster is exposed to failures. */
void plan_losses_count_over(plan_losses_t *pl, double wall_s);

/* ---- the batch a run would use (plan_batch.c) ----
 * DeepSeek LLM's batch-size law (DeepSeek-AI 2024, "DeepSeek LLM: Scaling Open-Source Language
 * Models with Longtermism", arXiv:2401.02954, §3.1): fitted on their runs' near-optimal
 * batches, B_opt = 0.2920 · C^0.3271 tokens for a compute budget C = M·D FLOPs, where M is the
 * non-embedding FLOPs per token, 72·n_layer·d_model² + 6·n_layer·d_model·l_seq for their dense
 * blocks — for any model 6·N + 6·n_layer·d_model·l_seq with N the parameters a token meets
 * outside the embedding and output layer. */
double plan_batch_flops_per_token(double nonembedding_active_params, int64_t num_blocks,
                                  int64_t hidden, int64_t seq_size);
double plan_batch_law_tokens(double compute_flops);

/* ---- an honest range (plan_range.c) ----
 * Published whole pre-training runs: GPU-hours as their authors state them, for their tokens,
 * on their GPU type and count. Whole-run efficiency η = 6·N·D / (GPU-hours · 3600 · P) with N
 * the active parameters, D the tokens and P the GPU's dense BF16 peak (whatever precision the
 * run computed in), so that runs compare on one scale. The published figures are measured data,
 * never adjusted; beside each, the plan's own figure for the run (the tuned stack over its
 * goodput, planned as tests/data/plans/published_runs.json states the run), so that
 * k = published / tuned says how much more the run paid than the plan's tuned stack.
 * test_plan_published holds the ratios the stored figures imply within 2% of the live plans. */
typedef struct {
    const char *model, *gpu;
    double peak_flops;      /* P: the GPU's dense BF16 peak, FLOP/s */
    int64_t gpus;
    double tokens;          /* D */
    double active_params;   /* N */
    double gpu_hours;       /* published */
    double tuned_gpu_hours; /* the plan's tuned stack over its goodput for the run */
    const char *source;
} plan_published_run_t;

extern const plan_published_run_t plan_published_runs[];
extern const size_t plan_published_runs_count;

double plan_published_efficiency(const plan_published_run_t *r);

/* What the published runs predict for a run of a model of N active parameters on num_gpus GPUs
 * of dense BF16 peak P, validated leave-one-out (doc/plan.md): a published run the plan
 * reproduces (the same generation and GPU count, its model's N within 10%) is left out, so that
 * it is never its own evidence. The match leaves the tokens out: a plan's figures then scale with
 * its tokens, where a match on compute 6·N·D left a run out of a plan of another model whose
 * tokens happened to give its compute, and one more token past the match made the run cheaper.
 * Over the other runs of the candidate's GPU generation (peaks within 1.5x; every other run when
 * its generation has none):
 *   k̄ = the geometric mean of k = published / tuned GPU-hours;
 *   η̄ = the geometric mean of η (reported beside it);
 *   σ = the pooled within-generation standard deviation of ln k over every other run,
 *       sqrt(Σ (ln k_i − mean ln k of i's generation)² / (runs − generations)). */
typedef struct {
    double ratio;         /* k̄ */
    double efficiency;    /* η̄ */
    double sigma;         /* σ */
    int runs;             /* how many runs k̄ and η̄ come from */
    const char *left_out; /* the model of the run left out, NULL when none */
} plan_published_fit_t;

void plan_published_fit(double peak_flops, int64_t num_gpus, double active_params,
                        plan_published_fit_t *out);

/* A range and the point estimate inside it. */
typedef struct {
    double low, point, high;
} plan_range_t;

/* The range is P10–P90: ln k taken as normal about ln k̄ with the pooled σ, a published run of
 * the generation should land inside it four times in five. */
#define PLAN_RANGE_HIGH_PERCENTILE 0.9
#define PLAN_RANGE_COVERAGE (2 * PLAN_RANGE_HIGH_PERCENTILE - 1)
/* z = Φ⁻¹(PLAN_RANGE_HIGH_PERCENTILE), the standard normal quantile (GSL) */
double plan_range_z(void);

/* The GPU-hours of a candidate: the point is the tuned stack over its goodput (expected) times
 * k̄, never below the tuned stack with nothing lost (ideal); the range is point · e^(±z·σ), its
 * low end never below ideal. */
void plan_gpu_hours_range(double ideal, double expected, const plan_published_fit_t *fit,
                          plan_range_t *out);

/* A deadline's or a budget's verdict on a range: within (high <= limit), misses (low > limit),
 * else at risk; within when limit <= 0 (none). */
typedef enum { PLAN_WITHIN = 0, PLAN_AT_RISK = 1, PLAN_MISSES = 2 } plan_verdict_t;
extern const char *const plan_verdict_names[]; /* "within", "at risk", "misses" */
plan_verdict_t plan_verdict(const plan_range_t *r, double limit);

/* ---- choosing among candidates (plan_select.c) ---- */

/* One candidate as the choice sees it: usable (a layout fits and the run finishes), its
 * expected days and dollars. */
typedef struct {
    bool usable;
    double days, dollars;
} plan_choice_t;

/* on_front[i]: usable and no usable candidate is at most as long and as costly and strictly
 * better in one (equal candidates are all on the front). */
void plan_pareto(const plan_choice_t *c, size_t n, bool *on_front);

/* The cheapest usable candidate with days <= deadline_days (deadline <= 0: no deadline); ties
 * go to the faster, then the earlier. -1 when none. */
long plan_cheapest_within(const plan_choice_t *c, size_t n, double deadline_days);
/* The fastest usable candidate with dollars <= budget (budget <= 0: no budget); ties go to the
 * cheaper, then the earlier. -1 when none. */
long plan_fastest_within(const plan_choice_t *c, size_t n, double budget_dollars);

#endif

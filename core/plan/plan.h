/* plan.h — the arithmetic of a cluster plan (the whole API of core/plan): what failures and
 * checkpoints add to a run, and which of a plan's candidates are on the days/dollars Pareto
 * front, cheapest within a deadline or fastest within a budget. Pure C: no I/O, no JSON.
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

/* plan_failures.c — expected interruptions, the checkpoint interval and goodput of a run (the
 * formulas, symbol by symbol, are in plan.h; each line below is one of them). */
#include <math.h>

#include "plan.h"

int plan_failures(const plan_failure_params_t *p, int64_t num_gpus, double ideal_wall_s,
                  plan_failures_t *out, fathom_error_t *err)
{
    if (!isfinite(p->failures_per_gpu_hour) || p->failures_per_gpu_hour < 0)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "failures.per_gpu_hour",
                                "must be zero or positive");
    if (!isfinite(p->storage_bytes_per_s) || !(p->storage_bytes_per_s > 0))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "failures.storage_gbps",
                                "must be positive");
    if (!isfinite(p->restart_s) || p->restart_s < 0)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "failures.restart_minutes",
                                "must be zero or positive");
    if (!isfinite(p->checkpoint_bytes) || p->checkpoint_bytes < 0)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "checkpoint_bytes",
                                "must be zero or positive");
    if (num_gpus < 1)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "num_gpus", "must be positive");
    if (!isfinite(ideal_wall_s) || ideal_wall_s < 0)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "wall_time_s",
                                "must be zero or positive");

    double delta = p->checkpoint_bytes / p->storage_bytes_per_s; /* δ = C / B */
    out->checkpoint_write_s = delta;
    if (p->failures_per_gpu_hour == 0) { /* nothing fails: no checkpoint is needed */
        out->mtbf_s = INFINITY;
        out->checkpoint_interval_s = INFINITY;
        out->overhead = 0;
        out->goodput = 1;
        out->expected_wall_s = ideal_wall_s;
        out->expected_interruptions = 0;
        return 0;
    }
    double m = 3600.0 / (p->failures_per_gpu_hour * (double)num_gpus); /* M = 3600/(λN) */
    double tau = sqrt(2.0 * delta * m);                                 /* τ = sqrt(2δM) */
    double w = (tau > 0 ? delta / tau : 0) + (tau / 2.0 + p->restart_s) / m;
    out->mtbf_s = m;
    out->checkpoint_interval_s = tau;
    if (w >= 1.0) { /* interrupted faster than it progresses */
        out->overhead = 1;
        out->goodput = 0;
        out->expected_wall_s = INFINITY;
        out->expected_interruptions = INFINITY;
        return 0;
    }
    out->overhead = w;
    out->goodput = 1.0 - w;
    out->expected_wall_s = ideal_wall_s / out->goodput;
    out->expected_interruptions = out->expected_wall_s / m;
    return 0;
}

/* scaling_run.c — the bill of a training run: steps, wall time, GPU-hours, dollars, energy and
 * CO2 from a step time and the "training" figures (tokens, prices, power, PUE, grid intensity).
 *
 * Steps are rounded up: a run that needs a fraction of a batch more still runs a whole step. */
#include "scaling.h"

#include <math.h>

static int positive(double v, const char *field, fathom_error_t *err)
{
    if (!isfinite(v) || !(v > 0.0))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, field, "must be positive (got %g)",
                                v);
    return 0;
}

static int non_negative(double v, const char *field, fathom_error_t *err)
{
    if (!isfinite(v) || v < 0.0)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, field,
                                "must be zero or positive (got %g)", v);
    return 0;
}

int scaling_run_cost(double step_time_s, int64_t batch_size, int64_t seq_size, int64_t num_gpus,
                     const scaling_training_t *t, scaling_run_cost_t *out, fathom_error_t *err)
{
    if (positive(step_time_s, "step_time_s", err) ||
        positive((double)batch_size, "batch_size", err) ||
        positive((double)seq_size, "seq_size", err) ||
        positive((double)num_gpus, "num_gpus", err) ||
        positive(t->tokens, "training.tokens", err) ||
        non_negative(t->gpu_hour_price, "training.gpu_hour_price", err) ||
        non_negative(t->gpu_power_kw, "training.gpu_power_kw", err) ||
        non_negative(t->co2_kg_per_kwh, "training.co2_kg_per_kwh", err))
        return -1;
    if (!isfinite(t->pue) || t->pue < 1.0)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "training.pue",
                                "must be at least 1 (got %g)", t->pue);
    double tokens_per_step = (double)batch_size * (double)seq_size;
    out->steps = ceil(t->tokens / tokens_per_step);
    out->wall_time_s = out->steps * step_time_s;
    out->days = out->wall_time_s / 86400.0;
    double wall_hours = out->wall_time_s / 3600.0;
    out->gpu_hours = wall_hours * (double)num_gpus;
    out->dollars = out->gpu_hours * t->gpu_hour_price;
    out->kwh = t->gpu_power_kw * out->gpu_hours * t->pue;
    out->co2_kg = out->kwh * t->co2_kg_per_kwh;
    return 0;
}

/* plan_losses.c — what a run loses besides the step: interruptions (Young's checkpointing,
 * plan_failures.c), planned restarts, evaluation, slow nodes and data-loader stalls, each a
 * fraction of wall time; the formulas and the sources of their defaults are in plan.h. */
#include <math.h>

#include "plan.h"

static int check_fraction(double x, const char *field, fathom_error_t *err)
{
    if (!isfinite(x) || x < 0 || x >= 1)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, field,
                                "must be a fraction in [0, 1), got %g", x);
    return 0;
}

int plan_losses(const plan_loss_params_t *p, int64_t num_gpus, double ideal_wall_s,
                plan_losses_t *out, fathom_error_t *err)
{
    if (!isfinite(p->queue_s) || p->queue_s < 0)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "failures.queue_minutes",
                                "must be zero or positive");
    if (!isfinite(p->planned_per_gpu_hour) || p->planned_per_gpu_hour < 0)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "failures.planned_per_gpu_hour",
                                "must be zero or positive");
    if (check_fraction(p->eval_fraction, "losses.evaluation", err) ||
        check_fraction(p->slow_fraction, "losses.slow_nodes", err) ||
        check_fraction(p->data_fraction, "losses.data_loader", err))
        return -1;
    /* Young's interval with the whole cost of an interruption: restart R and queue Q */
    plan_failure_params_t f = p->failures;
    f.restart_s += p->queue_s;
    if (plan_failures(&f, num_gpus, ideal_wall_s, &out->failures, err))
        return -1;
    const double m = out->failures.mtbf_s, tau = out->failures.checkpoint_interval_s;
    const bool fails = isfinite(m);
    out->checkpoint_writes = fails && tau > 0 ? out->failures.checkpoint_write_s / tau : 0;
    out->lost_work = fails ? tau / 2.0 / m : 0;                  /* (τ/2)/M */
    out->restarts = fails ? f.restart_s / m : 0;                  /* (R + Q)/M */
    const double mp = p->planned_per_gpu_hour > 0
                          ? 3600.0 / (p->planned_per_gpu_hour * (double)num_gpus) /* 3600/(λp·N) */
                          : INFINITY;
    out->planned_mtbf_s = mp;
    out->planned_restarts = isfinite(mp) ? p->failures.restart_s / mp : 0; /* R/Mp */
    out->evaluation = p->eval_fraction;
    out->slow_nodes = p->slow_fraction;
    out->data_loader = p->data_fraction;
    double interrupted = 1.0 - out->checkpoint_writes - out->lost_work - out->restarts -
                         out->planned_restarts;
    if (!(interrupted > 0) || out->failures.goodput <= 0) {
        out->goodput = 0;
        out->expected_wall_s = INFINITY;
        plan_losses_count_over(out, INFINITY);
        return 0;
    }
    out->goodput = interrupted * (1.0 - p->eval_fraction) * (1.0 - p->slow_fraction) *
                   (1.0 - p->data_fraction);
    out->expected_wall_s = ideal_wall_s / out->goodput;
    plan_losses_count_over(out, out->expected_wall_s);
    return 0;
}

void plan_losses_count_over(plan_losses_t *pl, double wall_s)
{
    const double m = pl->failures.mtbf_s, mp = pl->planned_mtbf_s;
    if (!isfinite(wall_s)) {
        pl->expected_interruptions = pl->expected_planned = INFINITY;
        return;
    }
    pl->expected_interruptions = isfinite(m) ? wall_s / m : 0; /* W/M */
    pl->expected_planned = isfinite(mp) ? wall_s / mp : 0;     /* W/Mp */
}

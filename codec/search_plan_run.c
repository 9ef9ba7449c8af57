/* search_plan_run.c — a cluster plan's candidates and its answer (see search_plan_codec.h). A
 * candidate is one optimal-execution search per batch on its system and GPU count, built as the
 * search sweep's own request and decoded by codec_search_decode, so the plan's options are
 * exactly the search's; the fastest run is priced by scaling_run_cost and its interruptions by
 * plan_failures (core/plan), and the answer's front and picks are plan_pareto,
 * plan_cheapest_within and plan_fastest_within. The plan row of the sweep-kind table (search_plan_kind.c) runs one
 * candidate a unit, on the server's pool or the CLI's threads. */
#include "search_plan_codec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm_codec.h"
#include "plan.h"
#include "scaling_run_codec.h"
#include "search.h"
#include "search_codec.h"
#include "search_plan_internal.h"

const char *const codec_plan_csv_columns[] = {
    "index", "system", "num_procs", "fits", "rejected", "reason", "price_per_gpu_hour",
    "power_per_gpu_kw", "batch_tokens", "step_time_s", "tokens_per_s", "mfu", "steps",
    "days_ideal", "days", "gpu_hours_ideal", "gpu_hours", "dollars_ideal", "dollars", "mwh",
    "co2_tonnes", "failures.mtbf_hours", "failures.checkpoint_write_s",
    "failures.checkpoint_interval_s", "failures.goodput", "failures.expected_interruptions",
    "execution.tensor_par", "execution.pipeline_par", "execution.data_par",
    "execution.context_par", "execution.microbatch_size", "execution.pipeline_interleaving",
    "execution.activation_recompute", "execution.zero_stage", "execution.attention_kernel",
    "execution.fp8", NULL};

/* ------------------------------------------------------------------- candidates ---- */

/* The fastest run of one candidate over its batches. */
typedef struct {
    bool found;
    search_request_t req;  /* of the winning batch (model, system, options) */
    search_entry_t best;   /* its fastest execution */
    scaling_run_cost_t run; /* ideal */
    uint64_t total, good, pruned, estimated;
} best_run_t;

/* Searches every batch of the candidate; 0, or -1 with err (cancelled or out of memory). */
static int search_candidate(const json_t *spec, const codec_ctx_t *ctx, const json_t *sysobj,
                            int64_t n, const scaling_training_t *training, volatile int *cancel,
                            best_run_t *out, fathom_error_t *err)
{
    const json_t *batches = json_object_get(spec, "batch_tokens");
    memset(out, 0, sizeof *out);
    for (size_t b = 0; b < json_array_size(batches); b++) {
        json_t *body = codec_plan__search_body(spec, json_object_get(sysobj, "system"), n,
                                               json_integer_value(json_array_get(batches, b)),
                                               json_object_get(spec, "options"));
        search_request_t req;
        fathom_error_t e2;
        if (!body)
            return codec_plan__oom(err);
        int bad = codec_search_decode(body, ctx, &req, &e2);
        json_decref(body);
        search_plan_t *plan = bad ? NULL : search_plan_create(&req, &e2);
        if (!plan)
            continue; /* this batch has no layout on n GPUs */
        search_result_t res;
        if (search_result_init(&res, 1, err)) {
            search_plan_free(plan);
            return -1;
        }
        int cancelled = search_run_all(plan, &res, cancel);
        search_plan_free(plan);
        out->total += res.total;
        out->good += res.good;
        out->estimated += res.estimated;
        out->pruned += res.pruned;
        scaling_run_cost_t run;
        if (!cancelled && res.n_best > 0 &&
            scaling_run_cost(res.best[0].result.stats.total_time, res.best[0].execution.batch_size,
                             req.model.seq_size, n, training, &run, &e2) == 0 &&
            (!out->found || run.wall_time_s < out->run.wall_time_s)) {
            out->found = true;
            out->req = req;
            out->best = res.best[0];
            out->run = run;
        }
        search_result_close(&res);
        if (cancelled)
            return fathom_error_set(err, FATHOM_E_CANCELLED, NULL, "cancelled");
    }
    return 0;
}

static json_t *num_or_null(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

/* Adds the priced figures of a found run to c. */
static int add_figures(json_t *c, const best_run_t *r, const json_t *spec,
                       const scaling_training_t *t, double n, fathom_error_t *err)
{
    llm_params_t params;
    llm_parameters(&r->req.model, &params);
    const llm_execution_t *e = &r->best.execution;
    double ckpt = params.total * (llm_datatype_bytes(e->datatype) +
                                  llm_optimizer_bytes_per_param(e->datatype));
    const json_t *f = json_object_get(spec, "failures");
    plan_failure_params_t fp = {
        json_real_value(json_object_get(f, "per_gpu_hour")), ckpt,
        json_real_value(json_object_get(f, "storage_gbps")) * 1e9,
        json_real_value(json_object_get(f, "restart_minutes")) * 60.0};
    plan_failures_t pf;
    if (plan_failures(&fp, (int64_t)n, r->run.wall_time_s, &pf, err))
        return -1;
    double g = pf.goodput > 0 ? pf.goodput : 0;
    double wall = g > 0 ? r->run.wall_time_s / g : INFINITY;
    double gpu_hours = wall / 3600.0 * n, kwh = gpu_hours * t->gpu_power_kw * t->pue;
    json_t *summary = codec_llm_summary_encode(&r->req.model, e, &r->best.result);
    json_t *fails = json_pack(
        "{s:o,s:f,s:f,s:o,s:f,s:f,s:o}", "mtbf_hours", num_or_null(pf.mtbf_s / 3600.0),
        "checkpoint_bytes", ckpt, "checkpoint_write_s", pf.checkpoint_write_s,
        "checkpoint_interval_s", num_or_null(pf.checkpoint_interval_s), "overhead", pf.overhead,
        "goodput", pf.goodput, "expected_interruptions", num_or_null(pf.expected_interruptions));
    json_t *fig = json_pack(
        "{s:o,s:I,s:f,s:O,s:O,s:o,s:f,s:o,s:f,s:o,s:f,s:o,s:o,s:o,s:o,s:o}", "execution",
        codec_llm_execution_encode(e), "batch_tokens",
        (json_int_t)(e->batch_size * r->req.model.seq_size), "step_time_s",
        r->best.result.stats.total_time, "tokens_per_s", json_object_get(summary, "tokens_per_s"),
        "mfu", json_object_get(summary, "mfu"), "steps", json_real(r->run.steps), "days_ideal",
        r->run.days, "days", num_or_null(wall / 86400.0), "gpu_hours_ideal", r->run.gpu_hours,
        "gpu_hours", num_or_null(gpu_hours), "dollars_ideal", r->run.dollars, "dollars",
        num_or_null(gpu_hours * t->gpu_hour_price), "mwh", num_or_null(kwh / 1000.0),
        "co2_tonnes", num_or_null(kwh * t->co2_kg_per_kwh / 1000.0), "failures", fails,
        "warnings",
        codec_llm_warnings_encode(&r->req.model, &r->req.system, e, &r->best.result));
    json_decref(summary);
    int rc = !fig || json_object_update(c, fig) ? codec_plan__oom(err) : 0;
    json_decref(fig);
    return rc;
}

/* Rejection reasons of a candidate, judged on its expected figures. */
static int add_verdict(json_t *c, const json_t *spec, bool over_max, bool found,
                       fathom_error_t *err)
{
    json_t *reasons = json_array();
    char text[256] = "";
    double days = json_number_value(json_object_get(c, "days"));
    double dollars = json_number_value(json_object_get(c, "dollars"));
    double deadline = json_number_value(json_object_get(spec, "deadline_days"));
    double budget = json_number_value(json_object_get(spec, "budget_dollars"));
    bool finishes = found && json_is_number(json_object_get(c, "days"));
    int rc = reasons ? 0 : -1;
    if (over_max) {
        rc |= json_array_append_new(reasons, json_string("over_max_gpus"));
        snprintf(text, sizeof text, "more GPUs than max_gpus (%lld)",
                 (long long)json_integer_value(json_object_get(spec, "max_gpus")));
    } else if (!found) {
        rc |= json_array_append_new(reasons, json_string("does_not_fit"));
        snprintf(text, sizeof text, "no layout of this model fits in memory on %lld GPUs",
                 (long long)json_integer_value(json_object_get(c, "num_procs")));
    } else if (!finishes) {
        rc |= json_array_append_new(reasons, json_string("never_finishes"));
        snprintf(text, sizeof text, "interruptions and checkpoints take all the time (goodput 0)");
    } else {
        size_t len = 0;
        if (deadline > 0 && days > deadline) {
            rc |= json_array_append_new(reasons, json_string("misses_deadline"));
            len += (size_t)snprintf(text, sizeof text, "%.1f days, over the %.1f-day deadline",
                                    days, deadline);
        }
        if (budget > 0 && dollars > budget) {
            rc |= json_array_append_new(reasons, json_string("over_budget"));
            snprintf(text + len, sizeof text - len, "%s$%.0f, over the $%.0f budget",
                     len ? "; " : "", dollars, budget);
        }
    }
    rc |= json_object_set_new(c, "fits", json_boolean(found));
    rc |= json_object_set_new(c, "rejected", reasons);
    rc |= json_object_set_new(c, "reason", text[0] ? json_string(text) : json_null());
    return rc ? codec_plan__oom(err) : 0;
}

static int add_empty_figures(json_t *c, fathom_error_t *err)
{
    static const char *const keys[] = {
        "execution", "batch_tokens", "step_time_s", "tokens_per_s", "mfu", "steps",
        "days_ideal", "days", "gpu_hours_ideal", "gpu_hours", "dollars_ideal", "dollars", "mwh",
        "co2_tonnes", "failures", NULL};
    for (int i = 0; keys[i]; i++)
        if (json_object_set_new(c, keys[i], json_null()))
            return codec_plan__oom(err);
    return json_object_set_new(c, "warnings", json_array()) ? codec_plan__oom(err) : 0;
}

json_t *codec_plan_candidate(const json_t *spec, const codec_ctx_t *ctx, uint64_t index,
                             volatile int *cancel, uint64_t *evaluations, fathom_error_t *err)
{
    const json_t *counts = json_object_get(spec, "gpu_counts");
    size_t ncounts = json_array_size(counts);
    if (ncounts == 0 || index >= codec_plan_size(spec))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, NULL, "no such candidate"), NULL;
    const json_t *sys = json_array_get(json_object_get(spec, "systems"), index / ncounts);
    int64_t n = json_integer_value(json_array_get(counts, index % ncounts));
    int64_t max_gpus = json_integer_value(json_object_get(spec, "max_gpus"));
    bool over_max = max_gpus > 0 && n > max_gpus;
    scaling_training_t t = {json_real_value(json_object_get(spec, "tokens")),
                            json_real_value(json_object_get(sys, "price_per_gpu_hour")),
                            json_real_value(json_object_get(sys, "power_per_gpu_kw")),
                            json_real_value(json_object_get(spec, "pue")),
                            json_real_value(json_object_get(spec, "co2_kg_per_kwh"))};
    best_run_t r;
    memset(&r, 0, sizeof r);
    if (!over_max && search_candidate(spec, ctx, sys, n, &t, cancel, &r, err))
        return NULL;
    *evaluations += r.estimated;
    json_t *c = json_pack("{s:I,s:O,s:I,s:f,s:f,s:{s:I,s:I,s:I,s:I}}", "index",
                          (json_int_t)index, "system", json_object_get(sys, "name"),
                          "num_procs", (json_int_t)n,
                          "price_per_gpu_hour", t.gpu_hour_price, "power_per_gpu_kw",
                          t.gpu_power_kw, "search", "total", (json_int_t)r.total, "good",
                          (json_int_t)r.good, "pruned", (json_int_t)r.pruned, "estimated",
                          (json_int_t)r.estimated);
    if (!c)
        return codec_plan__oom(err), NULL;
    if ((r.found ? add_figures(c, &r, spec, &t, (double)n, err) : add_empty_figures(c, err)) ||
        add_verdict(c, spec, over_max, r.found, err)) {
        json_decref(c);
        return NULL;
    }
    return c;
}

/* -------------------------------------------------------------------- the answer ---- */

json_t *codec_plan_summarize(const json_t *spec, const json_t *candidates)
{
    size_t n = json_array_size(candidates);
    plan_choice_t *ch = calloc(n ? n : 1, sizeof *ch);
    bool *front = calloc(n ? n : 1, sizeof *front);
    json_t *pareto = json_array(), *out = NULL;
    if (!ch || !front || !pareto)
        goto out;
    for (size_t i = 0; i < n; i++) {
        const json_t *c = json_array_get(candidates, i);
        const json_t *days = json_object_get(c, "days"), *dollars = json_object_get(c, "dollars");
        const json_t *why = json_array_get(json_object_get(c, "rejected"), 0);
        bool excluded = why && (strcmp(json_string_value(why), "over_max_gpus") == 0 ||
                                strcmp(json_string_value(why), "does_not_fit") == 0 ||
                                strcmp(json_string_value(why), "never_finishes") == 0);
        ch[i].usable = !excluded && json_is_number(days) && json_is_number(dollars);
        ch[i].days = json_number_value(days);
        ch[i].dollars = json_number_value(dollars);
    }
    plan_pareto(ch, n, front);
    /* the front, fastest first (ties: the earlier candidate) */
    for (;;) {
        long pick = -1;
        for (size_t i = 0; i < n; i++)
            if (front[i] && (pick < 0 || ch[i].days < ch[pick].days))
                pick = (long)i;
        if (pick < 0)
            break;
        front[pick] = false;
        if (json_array_append(pareto, json_array_get(candidates, (size_t)pick)))
            goto out;
    }
    double deadline = json_number_value(json_object_get(spec, "deadline_days"));
    double budget = json_number_value(json_object_get(spec, "budget_dollars"));
    long cheap = plan_cheapest_within(ch, n, deadline);
    long fast = plan_fastest_within(ch, n, budget);
    out = json_pack("{s:O,s:O,s:O*,s:O*,s:o,s:o,s:O}", "candidates", candidates, "pareto", pareto,
                    "cheapest_within_deadline",
                    cheap >= 0 ? json_array_get(candidates, (size_t)cheap) : json_null(),
                    "fastest_within_budget",
                    fast >= 0 ? json_array_get(candidates, (size_t)fast) : json_null(),
                    "deadline_days", deadline > 0 ? json_real(deadline) : json_null(),
                    "budget_dollars", budget > 0 ? json_real(budget) : json_null(), "tokens",
                    json_object_get(spec, "tokens"));
out:
    free(ch);
    free(front);
    json_decref(pareto);
    return out;
}

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
#include "goodput.h"
#include "json_read.h"
#include "search_plan_internal.h"

const char *const codec_plan_csv_columns[] = {
    "index", "system", "num_procs", "fits", "rejected", "reason", "price_per_gpu_hour",
    "power_per_gpu_kw", "batch_tokens", "step_time_s", "tokens_per_s", "mfu", "steps",
    "days_ideal", "days", "gpu_hours_ideal", "gpu_hours", "dollars_ideal", "dollars", "mwh",
    "co2_tonnes", "gpu_hours_range", "days_range", "dollars_range", "published.efficiency",
    "deadline_verdict", "budget_verdict", "batch.rule", "batch.law_tokens",
    "batch.statistical_efficiency", "failures.mtbf_hours", "failures.checkpoint_write_s",
    "failures.checkpoint_interval_s", "failures.goodput", "failures.expected_interruptions",
    "losses.checkpoint_writes", "losses.lost_work", "losses.restarts",
    "losses.planned_restarts", "losses.evaluation", "losses.slow_nodes", "losses.data_loader",
    "execution.tensor_par", "execution.pipeline_par", "execution.data_par",
    "execution.context_par", "execution.microbatch_size", "execution.pipeline_interleaving",
    "execution.activation_recompute", "execution.zero_stage", "execution.attention_kernel",
    "execution.fp8", NULL};

/* ------------------------------------------------------------------- candidates ---- */

/* One segment of a run: a batch of `batch` sequences stepping `step_s` seconds, training
 * `tokens` tokens (the schedule's stages, then the main batch). */
typedef struct {
    int64_t batch;
    double step_s, tokens, efficiency;
    scaling_run_cost_t cost; /* of tokens / efficiency */
} segment_t;

/* The run of one candidate at one batch: its fastest execution and the run it makes. */
typedef struct {
    bool found;
    search_request_t req;   /* of the batch (model, system, options) */
    search_entry_t best;    /* its fastest execution, at the main batch */
    int64_t tried_tokens;   /* the batch tried (the search's target for "auto") */
    size_t n_segments;      /* the schedule's stages, then the main batch */
    segment_t segment[PLAN_MAX_STAGES + 1];
    scaling_run_cost_t run; /* ideal: every segment */
    double tokens_trained;  /* Σ tokens / efficiency */
} batch_run_t;

/* The best run of a candidate over its batches, and what its searches did. */
typedef struct {
    batch_run_t best;
    int64_t tried[PLAN_MAX_BATCHES];
    size_t n_tried;
    bool fed;
    uint64_t total, good, pruned, estimated;
    int stages; /* 2 when any batch's search ran in two stages, else 1 */
} candidate_run_t;

/* Pollux's statistical efficiency of a batch of b tokens against init_batch_tokens B0, with the
 * critical batch φ = var/sqr·B0 (core/goodput's goodput_efficiency, in tokens):
 * (φ + B0) / (φ + b); 1 without goodput statistics. */
static double statistical_efficiency(const json_t *spec, double b)
{
    const json_t *g = json_object_get(spec, "goodput");
    if (!json_is_object(g))
        return 1.0;
    double b0 = json_number_value(json_object_get(g, "init_batch_tokens"));
    double crit = json_number_value(json_object_get(g, "critical_batch_tokens"));
    goodput_model_t m = {.grad = {.sqr = 1.0, .var = crit / b0}, .init_batch_size = 1};
    return goodput_efficiency(&m, b / b0);
}

/* A stage's step on the main batch's layout: the batch rounded to a multiple of data_par (at
 * least one sequence a replica), the largest microbatch size up to the layout's that divides
 * what a replica gets. 0 when the model refuses it or it does not fit. */
static double stage_step(const search_request_t *req, const llm_execution_t *main_e,
                         int64_t batch, int64_t *used)
{
    llm_execution_t e = *main_e;
    int64_t per = (batch + e.data_par / 2) / e.data_par;
    if (per < 1)
        per = 1;
    e.batch_size = per * e.data_par;
    while (e.microbatch_size > 1 && per % e.microbatch_size != 0)
        e.microbatch_size--;
    *used = e.batch_size;
    llm_result_t res;
    if (llm_estimate(&req->model, &req->system, &e, &res, NULL) != 0 || !res.fits_memory)
        return 0;
    return res.stats.total_time;
}

/* The segments of a run whose main batch runs best: the schedule's stages on its layout, then
 * the rest of the tokens. -1 with err when a stage cannot run on the layout. */
static int cost_run(const json_t *spec, int64_t n, const scaling_training_t *training,
                    batch_run_t *r, fathom_error_t *err)
{
    const json_t *schedule = json_object_get(spec, "batch_schedule");
    const int64_t seq = r->req.model.seq_size;
    double rest = training->tokens;
    r->n_segments = 0;
    for (size_t i = 0; i <= json_array_size(schedule); i++) {
        segment_t *g = &r->segment[r->n_segments];
        if (i < json_array_size(schedule)) {
            const json_t *st = json_array_get(schedule, i);
            g->tokens = json_number_value(json_object_get(st, "tokens"));
            g->step_s = stage_step(&r->req, &r->best.execution,
                                   json_integer_value(json_object_get(st, "batch_tokens")) / seq,
                                   &g->batch);
            if (!(g->step_s > 0)) {
                char p[JR_PATH_MAX];
                jr_path_index(p, sizeof p, "batch_schedule", i);
                return fathom_error_set(err, FATHOM_E_INFEASIBLE_EXECUTION, p,
                                        "the layout of the main batch cannot run this stage");
            }
            rest -= g->tokens;
        } else {
            g->tokens = rest;
            g->step_s = r->best.result.stats.total_time;
            g->batch = r->best.execution.batch_size;
        }
        g->efficiency = statistical_efficiency(spec, (double)(g->batch * seq));
        scaling_training_t t = *training;
        t.tokens = g->tokens / g->efficiency;
        if (scaling_run_cost(g->step_s, g->batch, seq, n, &t, &g->cost, err))
            return -1;
        r->n_segments++;
    }
    memset(&r->run, 0, sizeof r->run);
    r->tokens_trained = 0;
    for (size_t i = 0; i < r->n_segments; i++) {
        const scaling_run_cost_t *c = &r->segment[i].cost;
        r->run.steps += c->steps;
        r->run.wall_time_s += c->wall_time_s;
        r->run.gpu_hours += c->gpu_hours;
        r->run.dollars += c->dollars;
        r->run.kwh += c->kwh;
        r->run.co2_kg += c->co2_kg;
        r->tokens_trained += r->segment[i].tokens / r->segment[i].efficiency;
    }
    r->run.days = r->run.wall_time_s / 86400.0;
    return 0;
}

/* Searches every batch of the candidate and keeps the run that finishes first (with goodput
 * statistics: the one with the best goodput, since its tokens are divided by the batch's
 * statistical efficiency). 0, or -1 with err (cancelled, out of memory, a stage the layout
 * cannot run). */
static int search_candidate(const json_t *spec, const codec_ctx_t *ctx, const json_t *sysobj,
                            int64_t n, const scaling_training_t *training, volatile int *cancel,
                            candidate_run_t *out, fathom_error_t *err)
{
    memset(out, 0, sizeof *out);
    out->stages = 1;
    out->n_tried = codec_plan__batches(spec, out->tried, &out->fed);
    for (size_t b = 0; b < out->n_tried; b++) {
        batch_run_t r;
        memset(&r, 0, sizeof r);
        fathom_error_t e2;
        fathom_error_clear(&e2);
        uint64_t ex, exhaustive;
        if (codec_plan__search_request(spec, ctx, json_object_get(sysobj, "system"), n,
                                       out->tried[b], out->fed, &r.req, &ex, &exhaustive, &e2)) {
            if (e2.code == FATHOM_E_INTERNAL)
                return *err = e2, -1;
            continue; /* refused for this batch (normalizing checked every one): no layout */
        }
        search_plan_t *plan = ex > 0 ? search_plan_create(&r.req, &e2) : NULL;
        if (!plan)
            continue; /* this batch has no layout on n GPUs */
        if (r.req.options.refine_units > 0)
            out->stages = 2;
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
        if (!cancelled && res.n_best > 0) {
            r.best = res.best[0];
            r.tried_tokens = out->tried[b];
            r.found = true;
            int rc = cost_run(spec, n, training, &r, err);
            if (rc) {
                search_result_close(&res);
                return -1;
            }
            if (!out->best.found || r.run.wall_time_s < out->best.run.wall_time_s)
                out->best = r;
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

static json_t *range_json(double low, double high)
{
    return json_pack("[o,o]", num_or_null(low), num_or_null(high));
}

/* What a candidate loses besides the step (plan_losses) for its ideal wall time. */
static int candidate_losses(const json_t *spec, const candidate_run_t *c, double n,
                            plan_losses_t *out, double *ckpt, fathom_error_t *err)
{
    const batch_run_t *r = &c->best;
    llm_params_t params;
    llm_parameters(&r->req.model, &params);
    const llm_execution_t *e = &r->best.execution;
    *ckpt = params.total * (llm_datatype_bytes(e->datatype) +
                            llm_optimizer_bytes_per_param(e));
    const json_t *f = json_object_get(spec, "failures"), *l = json_object_get(spec, "losses");
    const json_t *gbps = json_object_get(f, "storage_gbps");
    double bandwidth = gbps ? json_number_value(gbps) * 1e9
                            : json_number_value(json_object_get(f, "storage_gbps_per_gpu")) *
                                  1e9 * n;
    plan_loss_params_t p = {
        {json_number_value(json_object_get(f, "per_gpu_hour")), *ckpt, bandwidth,
         json_number_value(json_object_get(f, "restart_minutes")) * 60.0},
        json_number_value(json_object_get(f, "queue_minutes")) * 60.0,
        json_number_value(json_object_get(f, "planned_per_gpu_hour")),
        json_number_value(json_object_get(l, "evaluation")),
        json_number_value(json_object_get(l, "slow_nodes")),
        json_number_value(json_object_get(l, "data_loader"))};
    return plan_losses(&p, (int64_t)n, r->run.wall_time_s, out, err);
}

/* The batch block: which batch ran, how it was chosen, and the schedule's stages. */
static json_t *batch_json(const json_t *spec, const candidate_run_t *c)
{
    const batch_run_t *r = &c->best;
    const int64_t seq = r->req.model.seq_size;
    const bool goodput = json_is_object(json_object_get(spec, "goodput"));
    json_t *tried = json_array(), *stages = json_array();
    for (size_t i = 0; tried && i < c->n_tried; i++)
        json_array_append_new(tried, json_integer((json_int_t)c->tried[i]));
    for (size_t i = 0; stages && i + 1 < r->n_segments; i++) {
        const segment_t *g = &r->segment[i];
        json_array_append_new(stages, json_pack("{s:I,s:f,s:f,s:f,s:f}", "batch_tokens",
                                                (json_int_t)(g->batch * seq), "tokens",
                                                g->tokens, "step_time_s", g->step_s, "steps",
                                                g->cost.steps, "days", g->cost.days));
    }
    const segment_t *main_seg = &r->segment[r->n_segments - 1];
    return json_pack("{s:s,s:o,s:o,s:s,s:o,s:f,s:f,s:o}", "rule", c->fed ? "auto" : "given",
                     "law_tokens",
                     c->fed ? json_real(json_number_value(
                                  json_object_get(spec, "batch_law_tokens")))
                            : json_null(),
                     "tried", tried ? tried : json_array(), "chosen_by",
                     c->n_tried < 2 ? "only" : goodput ? "goodput" : "fastest", "target_tokens",
                     json_integer((json_int_t)r->tried_tokens), "statistical_efficiency",
                     main_seg->efficiency, "tokens_trained", r->tokens_trained, "schedule",
                     stages ? stages : json_array());
}

/* What the published runs say about a candidate (plan_published_fit) and its GPU-hours: the
 * point and its range (plan_gpu_hours_range). */
typedef struct {
    plan_published_fit_t fit;
    plan_range_t gpu_hours;
    double compute, peak, published_gh;
} published_view_t;

static void published_view(const batch_run_t *r, double ideal_gh, double expected_gh, double n,
                           published_view_t *v)
{
    llm_params_t params;
    llm_parameters(&r->req.model, &params);
    const llm_system_t *s = &r->req.system;
    const llm_rate_t *bf16 = &s->matrix.rate[LLM_DT_BFLOAT16];
    v->peak = (bf16->present ? bf16->tflops : s->matrix.rate[LLM_DT_FLOAT16].tflops) * 1e12;
    v->compute = 6.0 * params.active * r->tokens_trained; /* the table's 6·N·D */
    plan_published_fit(v->peak, (int64_t)n, params.active, &v->fit);
    v->published_gh = v->compute / (v->fit.efficiency * v->peak * 3600.0);
    plan_gpu_hours_range(ideal_gh, expected_gh, &v->fit, &v->gpu_hours);
}

/* The range of a candidate's GPU-hours, days and dollars, and the verdicts on them. A run that
 * never finishes (goodput 0: no finite range) misses every deadline and budget, as one that
 * does not fit (add_empty_figures): it was "at risk", which told a planner it might make it. */
static int add_range(json_t *c, const json_t *spec, const published_view_t *v,
                     double expected_gh, double n, double price, fathom_error_t *err)
{
    const plan_range_t gh = v->gpu_hours;
    plan_range_t days = {gh.low / n / 24.0, gh.point / n / 24.0, gh.high / n / 24.0};
    plan_range_t dollars = {gh.low * price, gh.point * price, gh.high * price};
    double deadline = json_number_value(json_object_get(spec, "deadline_days"));
    double budget = json_number_value(json_object_get(spec, "budget_dollars"));
    json_t *fig = json_pack(
        "{s:o,s:o,s:o,s:{s:f,s:f,s:f,s:f,s:i,s:o,s:f,s:o,s:f},s:s,s:s}", "gpu_hours_range",
        range_json(gh.low, gh.high), "days_range", range_json(days.low, days.high),
        "dollars_range", range_json(dollars.low, dollars.high), "published", "ratio",
        v->fit.ratio, "efficiency", v->fit.efficiency, "sigma", v->fit.sigma, "range_coverage",
        PLAN_RANGE_COVERAGE, "runs", v->fit.runs, "left_out",
        v->fit.left_out ? json_string(v->fit.left_out) : json_null(), "gpu_hours",
        v->published_gh, "gpu_hours_tuned", num_or_null(expected_gh), "mfu_6nd_expected",
        isfinite(gh.point) ? v->compute / (gh.point * 3600.0 * v->peak) : 0,
        "deadline_verdict",
        plan_verdict_names[isfinite(gh.high) ? plan_verdict(&days, deadline) : PLAN_MISSES],
        "budget_verdict",
        plan_verdict_names[isfinite(gh.high) ? plan_verdict(&dollars, budget) : PLAN_MISSES]);
    int rc = !fig || json_object_update(c, fig) ? codec_plan__oom(err) : 0;
    json_decref(fig);
    return rc;
}

/* Adds the priced figures of a found run to c: the expected GPU-hours are the point of
 * published_view (the tuned stack over its goodput times what published runs paid over it);
 * days, dollars and energy follow from them. */
static int add_figures(json_t *c, const candidate_run_t *cr, const json_t *spec,
                       const scaling_training_t *t, double n, fathom_error_t *err)
{
    const batch_run_t *r = &cr->best;
    plan_losses_t pl;
    double ckpt;
    if (candidate_losses(spec, cr, n, &pl, &ckpt, err))
        return -1;
    const plan_failures_t *pf = &pl.failures;
    double g = pl.goodput;
    double tuned_gh = g > 0 ? r->run.wall_time_s / g / 3600.0 * n : INFINITY;
    published_view_t v;
    published_view(r, r->run.gpu_hours, tuned_gh, n, &v);
    double gpu_hours = v.gpu_hours.point, wall = gpu_hours * 3600.0 / n;
    plan_losses_count_over(&pl, wall);
    double kwh = gpu_hours * t->gpu_power_kw * t->pue;
    const llm_execution_t *e = &r->best.execution;
    json_t *summary = codec_llm_summary_encode(&r->req.model, e, &r->best.result);
    json_t *fails = json_pack(
        "{s:o,s:f,s:f,s:o,s:f,s:f,s:o,s:o}", "mtbf_hours", num_or_null(pf->mtbf_s / 3600.0),
        "checkpoint_bytes", ckpt, "checkpoint_write_s", pf->checkpoint_write_s,
        "checkpoint_interval_s", num_or_null(pf->checkpoint_interval_s), "overhead", 1.0 - g,
        "goodput", g, "expected_interruptions", num_or_null(pl.expected_interruptions),
        "expected_planned", num_or_null(pl.expected_planned));
    json_t *losses = json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "checkpoint_writes",
                               pl.checkpoint_writes, "lost_work", pl.lost_work, "restarts",
                               pl.restarts, "planned_restarts", pl.planned_restarts,
                               "evaluation", pl.evaluation, "slow_nodes", pl.slow_nodes,
                               "data_loader", pl.data_loader, "goodput", g);
    json_t *fig = json_pack(
        "{s:o,s:I,s:f,s:O,s:O,s:f,s:f,s:o,s:f,s:o,s:f,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "execution",
        codec_llm_execution_encode(e), "batch_tokens",
        (json_int_t)(e->batch_size * r->req.model.seq_size), "step_time_s",
        r->best.result.stats.total_time, "tokens_per_s", json_object_get(summary, "tokens_per_s"),
        "mfu", json_object_get(summary, "mfu"), "steps", r->run.steps, "days_ideal", r->run.days,
        "days", num_or_null(wall / 86400.0), "gpu_hours_ideal", r->run.gpu_hours, "gpu_hours",
        num_or_null(gpu_hours), "dollars_ideal", r->run.dollars, "dollars",
        num_or_null(gpu_hours * t->gpu_hour_price), "mwh", num_or_null(kwh / 1000.0),
        "co2_tonnes", num_or_null(kwh * t->co2_kg_per_kwh / 1000.0), "failures", fails, "losses",
        losses, "batch", batch_json(spec, cr), "warnings",
        codec_llm_warnings_encode(&r->req.model, &r->req.system, e, &r->best.result));
    json_decref(summary);
    int rc = !fig || json_object_update(c, fig) ? codec_plan__oom(err) : 0;
    json_decref(fig);
    if (rc == 0)
        rc = add_range(c, spec, &v, tuned_gh, n, t->gpu_hour_price, err);
    return rc;
}
/* Why no execution of a candidate's searches fit, from what the walks counted: no layout at
 * all (every split's batch is past the search's limits), layouts none of whose groups a
 * network tier holds (each refused by the network rule before any estimate), or layouts
 * estimated that did not fit in memory. */
static void no_fit_reason(const json_t *spec, const json_t *sys, const candidate_run_t *r,
                          int64_t n, char *text, size_t cap)
{
    const json_t *nets = json_object_get(json_object_get(sys, "system"), "networks");
    const json_t *sched = json_object_get(json_object_get(spec, "options"), "pipeline_schedule");
    int64_t largest = 0;
    for (size_t i = 0; i < json_array_size(nets); i++) {
        int64_t size = json_integer_value(json_object_get(json_array_get(nets, i), "size"));
        largest = size > largest ? size : largest;
    }
    if (r->total == 0)
        snprintf(text, cap,
                 "no split of this model over %lld GPUs has a batch the search takes (one "
                 "sequence at least per data-parallel replica, %lld at most in all)%s%s",
                 (long long)n, (long long)SEARCH_MAX_BATCH,
                 sched ? " or runs the pipeline schedule " : "",
                 sched ? json_string_value(sched) : "");
    else if (r->estimated == 0)
        snprintf(text, cap,
                 "no layout of this model on %lld GPUs has its parallel groups on network tiers "
                 "that hold them (the system's largest tier has %lld GPUs): nothing was "
                 "estimated",
                 (long long)n, (long long)largest);
    else
        snprintf(text, cap, "no layout of this model fits in memory on %lld GPUs%s%s",
                 (long long)n, sched ? " or runs the pipeline schedule " : "",
                 sched ? json_string_value(sched) : "");
}

/* Rejection reasons of a candidate, judged on its expected figures. */
static int add_verdict(json_t *c, const json_t *spec, const json_t *sys,
                       const candidate_run_t *run, bool over_max, fathom_error_t *err)
{
    const bool found = run->best.found;
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
        no_fit_reason(spec, sys, run,
                      (int64_t)json_integer_value(json_object_get(c, "num_procs")), text,
                      sizeof text);
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
        "co2_tonnes", "failures", "losses", "batch", "gpu_hours_range", "days_range",
        "dollars_range", "published", "mfu_6nd_expected", NULL};
    for (int i = 0; keys[i]; i++)
        if (json_object_set_new(c, keys[i], json_null()))
            return codec_plan__oom(err);
    /* nothing runs: no deadline or budget is met */
    return json_object_set_new(c, "warnings", json_array()) ||
                   json_object_set_new(c, "deadline_verdict",
                                       json_string(plan_verdict_names[PLAN_MISSES])) ||
                   json_object_set_new(c, "budget_verdict",
                                       json_string(plan_verdict_names[PLAN_MISSES]))
               ? codec_plan__oom(err)
               : 0;
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
    candidate_run_t r;
    memset(&r, 0, sizeof r);
    r.stages = 1;
    if (!over_max && search_candidate(spec, ctx, sys, n, &t, cancel, &r, err))
        return NULL;
    *evaluations += r.estimated;
    json_t *c = json_pack("{s:I,s:O,s:I,s:f,s:f,s:{s:I,s:I,s:I,s:I,s:i}}", "index",
                          (json_int_t)index, "system", json_object_get(sys, "name"),
                          "num_procs", (json_int_t)n,
                          "price_per_gpu_hour", t.gpu_hour_price, "power_per_gpu_kw",
                          t.gpu_power_kw, "search", "total", (json_int_t)r.total, "good",
                          (json_int_t)r.good, "pruned", (json_int_t)r.pruned, "estimated",
                          (json_int_t)r.estimated, "stages", r.stages);
    if (!c)
        return codec_plan__oom(err), NULL;
    if ((r.best.found ? add_figures(c, &r, spec, &t, (double)n, err)
                      : add_empty_figures(c, err)) ||
        add_verdict(c, spec, sys, &r, over_max, err)) {
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

/* search_plan_codec.c — the cluster plan's request, its candidates and its answer (see
 * search_plan_codec.h). A candidate is one optimal-execution search per batch on its system and
 * GPU count, built as the search sweep's own request and decoded by codec_search_decode, so the
 * plan's options are exactly the search's; the run is priced by scaling_run_cost and its
 * interruptions by plan_failures. */
#include "search_plan_codec.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_read.h"
#include "llm_codec.h"
#include "model_codec.h"
#include "plan.h"
#include "scaling_run_codec.h"
#include "search.h"
#include "search_codec.h"

static const char *const plan_keys[] = {
    "kind",     "model",         "tokens",        "seq_size",       "batch_tokens",
    "datatype", "systems",       "gpu_counts",    "max_gpus",       "deadline_days",
    "budget_dollars", "options", "failures",      "pue",            "co2_kg_per_kwh",
    NULL};
static const char *const system_keys[] = {"name", "system", "price_per_gpu_hour",
                                          "power_per_gpu_kw", NULL};
static const char *const failure_keys[] = {"per_gpu_hour", "storage_gbps", "restart_minutes",
                                           NULL};
static const char *const range_keys[] = {"from", "to", "step", "factor", NULL};

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

static int oom(fathom_error_t *err)
{
    return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
}

/* ------------------------------------------------------------------ normalizing ---- */

/* "tokens": a number, "chinchilla" or {"flops": F}. */
static int decode_tokens(const json_t *body, const fathom_model_t *m, double *out,
                         fathom_error_t *err)
{
    const json_t *v = json_object_get(body, "tokens");
    llm_params_t p;
    llm_parameters(m, &p);
    if (json_is_string(v)) {
        if (strcmp(json_string_value(v), "chinchilla") != 0)
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "tokens",
                                    "must be a number, \"chinchilla\" or {\"flops\": F}");
        *out = PLAN_CHINCHILLA_TOKENS_PER_PARAM * p.total;
    } else if (json_is_object(v)) {
        static const char *const flops_keys[] = {"flops", NULL};
        double flops;
        if (jr_check_keys(v, "tokens", flops_keys, err) ||
            jr_positive(v, "tokens", "flops", JR_REQUIRED, 0, 1e40, &flops, err))
            return -1;
        *out = flops / (6.0 * p.active);
    } else if (jr_positive(body, "", "tokens", JR_REQUIRED, 0, 1e40, out, err)) {
        return -1;
    }
    if (!(*out >= 1) || *out > TRAINING_MAX_TOKENS)
        return fathom_error_set(err, FATHOM_E_LIMIT_EXCEEDED, "tokens",
                                "%g tokens: a plan takes 1 to %g", *out, TRAINING_MAX_TOKENS);
    *out = floor(*out);
    return 0;
}

/* "batch_tokens": a number or a list, each rounded down to whole sequences. */
static json_t *decode_batches(const json_t *body, int64_t seq, fathom_error_t *err)
{
    const json_t *v = json_object_get(body, "batch_tokens");
    json_t *list = v && json_is_array(v) ? json_incref((json_t *)v) : NULL;
    if (!v)
        list = json_pack("[I]", (json_int_t)PLAN_DEFAULT_BATCH_TOKENS);
    else if (!list)
        list = json_pack("[O]", v);
    json_t *out = json_array();
    if (!list || !out)
        goto fail_oom;
    if (jr_expect_array(list, "batch_tokens", 1, PLAN_MAX_BATCHES, err))
        goto fail;
    for (size_t i = 0; i < json_array_size(list); i++) {
        char p[JR_PATH_MAX];
        if (json_is_array(v))
            jr_path_index(p, sizeof p, "batch_tokens", i);
        else
            snprintf(p, sizeof p, "batch_tokens");
        int64_t tokens;
        if (jr_value_int(json_array_get(list, i), p, 1, (int64_t)SEARCH_MAX_BATCH * seq, &tokens,
                         err))
            goto fail;
        int64_t batch = tokens / seq;
        if (batch < 1) {
            fathom_error_set(err, FATHOM_E_INVALID_FIELD, p,
                             "%lld tokens is less than one sequence of %lld", (long long)tokens,
                             (long long)seq);
            goto fail;
        }
        if (json_array_append_new(out, json_integer((json_int_t)(batch * seq))))
            goto fail_oom;
    }
    json_decref(list);
    return out;
fail_oom:
    oom(err);
fail:
    json_decref(list);
    json_decref(out);
    return NULL;
}

/* One entry of "systems": {"name","system","price_per_gpu_hour","power_per_gpu_kw"}. */
static json_t *decode_system(const json_t *v, size_t i, const codec_ctx_t *ctx,
                             fathom_error_t *err)
{
    char p[JR_PATH_MAX], sp[JR_PATH_MAX];
    jr_path_index(p, sizeof p, "systems", i);
    const char *name = NULL;
    const json_t *sys = v;
    if (json_is_object(v)) {
        if (jr_check_keys(v, p, system_keys, err) ||
            jr_string(v, p, "name", JR_REQUIRED, NULL, 64, &name, err))
            return NULL;
        sys = json_object_get(v, "system");
        if (!sys)
            sys = json_object_get(v, "name");
        jr_path(sp, sizeof sp, p, json_object_get(v, "system") ? "system" : "name");
    } else if (json_is_string(v)) {
        name = json_string_value(v);
        snprintf(sp, sizeof sp, "%s", p);
    } else {
        fathom_error_set(err, FATHOM_E_INVALID_FIELD, p,
                         "must be a system preset name or {\"name\", \"price_per_gpu_hour\", "
                         "\"power_per_gpu_kw\"}");
        return NULL;
    }
    llm_system_t s;
    codec_gpu_cost_t cost;
    if (codec_llm_system_decode(sys, sp, ctx->presets, &s, err) ||
        codec_llm_system_cost_decode(sys, sp, ctx->presets, &cost, err))
        return NULL;
    double price = cost.price_per_gpu_hour, power = cost.power_per_gpu_kw;
    json_t *empty = json_object(); /* a bare name overrides nothing */
    const json_t *o = json_is_object(v) ? v : empty;
    int bad = !o || jr_real(o, p, "price_per_gpu_hour",
                            cost.has_price ? JR_OPTIONAL : JR_REQUIRED, price, 0,
                            TRAINING_MAX_PRICE, &price, err) ||
              jr_real(o, p, "power_per_gpu_kw", cost.has_power ? JR_OPTIONAL : JR_REQUIRED,
                      power, 0, TRAINING_MAX_POWER_KW, &power, err);
    json_decref(empty);
    if (bad)
        return NULL;
    return json_pack("{s:s,s:o,s:f,s:f}", "name", name, "system", codec_llm_system_encode(&s),
                     "price_per_gpu_hour", price, "power_per_gpu_kw", power);
}

static int by_value(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* "gpu_counts": a list, or a range {"from","to","step"} / {"from","to","factor"}; sorted,
 * without repeats, into counts (room for PLAN_MAX_COUNTS). */
static int decode_counts(const json_t *body, int64_t *counts, size_t *n, fathom_error_t *err)
{
    const json_t *v = json_object_get(body, "gpu_counts");
    *n = 0;
    if (json_is_object(v)) {
        int64_t from, to, step = 0, factor = 0;
        if (jr_check_keys(v, "gpu_counts", range_keys, err) ||
            jr_int(v, "gpu_counts", "from", JR_REQUIRED, 0, 1, SEARCH_MAX_PROCS, &from, err) ||
            jr_int(v, "gpu_counts", "to", JR_REQUIRED, 0, from, SEARCH_MAX_PROCS, &to, err) ||
            jr_int(v, "gpu_counts", "step", JR_OPTIONAL, 0, 1, SEARCH_MAX_PROCS, &step, err) ||
            jr_int(v, "gpu_counts", "factor", JR_OPTIONAL, 0, 2, 1024, &factor, err))
            return -1;
        if ((step > 0) == (factor > 0))
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "gpu_counts",
                                    "a range gives one of step or factor");
        for (int64_t c = from; c <= to; c = step ? c + step : c * factor) {
            if (*n == PLAN_MAX_COUNTS)
                return fathom_error_set(err, FATHOM_E_LIMIT_EXCEEDED, "gpu_counts",
                                        "more than %d counts", PLAN_MAX_COUNTS);
            counts[(*n)++] = c;
        }
    } else {
        if (jr_expect_array(v, "gpu_counts", 1, PLAN_MAX_COUNTS, err))
            return -1;
        for (size_t i = 0; i < json_array_size(v); i++) {
            char p[JR_PATH_MAX];
            jr_path_index(p, sizeof p, "gpu_counts", i);
            if (jr_value_int(json_array_get(v, i), p, 1, SEARCH_MAX_PROCS, &counts[i], err))
                return -1;
        }
        *n = json_array_size(v);
    }
    qsort(counts, *n, sizeof *counts, by_value);
    size_t k = 0;
    for (size_t i = 0; i < *n; i++)
        if (k == 0 || counts[i] != counts[k - 1])
            counts[k++] = counts[i];
    *n = k;
    return 0;
}

/* The search sweep's request for one candidate and batch (new reference). */
static json_t *search_body(const json_t *spec, const json_t *system, int64_t num_procs,
                           int64_t batch_tokens, const json_t *options)
{
    int64_t seq = json_integer_value(json_object_get(json_object_get(spec, "model"), "seq_size"));
    return json_pack("{s:s,s:O,s:O,s:I,s:I,s:O,s:O}", "kind", "optimal_execution", "model",
                     json_object_get(spec, "model"), "system", system, "num_procs",
                     (json_int_t)num_procs, "max_batch_size", (json_int_t)(batch_tokens / seq),
                     "datatype", json_object_get(spec, "datatype"), "options", options);
}

/* The plan's search options: its defaults, the request's over them, exact batch and top 1;
 * checked and normalized by the search's own decoder (errors name "options.<key>"). */
static json_t *normalize_options(const json_t *body, json_t *spec, const codec_ctx_t *ctx,
                                 fathom_error_t *err)
{
    const json_t *given = json_object_get(body, "options");
    if (given && jr_expect_object(given, "options", err))
        return NULL;
    json_t *o = json_pack("{s:s,s:b,s:b}", "attention_kernel", "fused", "no_offload", 1, "fp8", 0);
    if (!o || (given && json_object_update(o, (json_t *)given)) ||
        json_object_set_new(o, "exact_batch", json_true()) ||
        json_object_set_new(o, "top_n", json_integer(1))) {
        json_decref(o);
        return oom(err), NULL;
    }
    const json_t *sys0 = json_object_get(json_array_get(json_object_get(spec, "systems"), 0),
                                         "system");
    int64_t bt = json_integer_value(json_array_get(json_object_get(spec, "batch_tokens"), 0));
    json_t *body1 = search_body(spec, sys0, 1, bt, o);
    json_decref(o);
    search_request_t req;
    json_t *enc = NULL;
    if (body1 && codec_search_decode(body1, ctx, &req, err) == 0) {
        enc = codec_search_request_encode(&req);
        if (!enc)
            oom(err);
    } else if (!body1) {
        oom(err);
    }
    json_decref(body1);
    json_t *opts = enc ? json_incref(json_object_get(enc, "options")) : NULL;
    json_decref(enc);
    return opts;
}

static int decode_failures(const json_t *body, json_t **out, fathom_error_t *err)
{
    const json_t *f = json_object_get(body, "failures");
    double rate = PLAN_DEFAULT_FAILURES_PER_GPU_HOUR, gbps = PLAN_DEFAULT_STORAGE_GBPS,
           restart = PLAN_DEFAULT_RESTART_MINUTES;
    if (f && (jr_expect_object(f, "failures", err) ||
              jr_check_keys(f, "failures", failure_keys, err) ||
              jr_real(f, "failures", "per_gpu_hour", JR_OPTIONAL, rate, 0, 1, &rate, err) ||
              jr_positive(f, "failures", "storage_gbps", JR_OPTIONAL, gbps, 1e9, &gbps, err) ||
              jr_real(f, "failures", "restart_minutes", JR_OPTIONAL, restart, 0, 1e6, &restart,
                      err)))
        return -1;
    *out = json_pack("{s:f,s:f,s:f}", "per_gpu_hour", rate, "storage_gbps", gbps,
                     "restart_minutes", restart);
    return *out ? 0 : oom(err);
}

/* Refuses a count no layout of any system and batch can use, and a candidate whose search is
 * past the server's limit. */
static int check_counts(json_t *spec, const codec_ctx_t *ctx, uint64_t max_exec, bool listed,
                        fathom_error_t *err)
{
    const json_t *counts = json_object_get(spec, "gpu_counts");
    const json_t *systems = json_object_get(spec, "systems");
    const json_t *batches = json_object_get(spec, "batch_tokens");
    int64_t max_gpus = json_integer_value(json_object_get(spec, "max_gpus"));
    for (size_t c = 0; c < json_array_size(counts); c++) {
        int64_t n = json_integer_value(json_array_get(counts, c));
        if (max_gpus > 0 && n > max_gpus)
            continue; /* rejected without a search */
        char p[JR_PATH_MAX];
        if (listed)
            jr_path_index(p, sizeof p, "gpu_counts", c);
        else
            snprintf(p, sizeof p, "gpu_counts");
        bool usable = false;
        for (size_t s = 0; s < json_array_size(systems); s++) {
            for (size_t b = 0; b < json_array_size(batches); b++) {
                json_t *body = search_body(
                    spec, json_object_get(json_array_get(systems, s), "system"), n,
                    json_integer_value(json_array_get(batches, b)),
                    json_object_get(spec, "options"));
                search_request_t req;
                fathom_error_t e2;
                search_plan_t *plan = NULL;
                if (!body)
                    return oom(err);
                int bad = codec_search_decode(body, ctx, &req, &e2);
                json_decref(body);
                if (bad) /* not the count's fault: the datatype on this system, say */
                    return fathom_error_set(err, e2.code, e2.field, "%s (systems[%zu], %s)",
                                            e2.message, s,
                                            json_string_value(json_object_get(
                                                json_array_get(systems, s), "name")));
                plan = search_plan_create(&req, &e2);
                uint64_t ex = plan ? search_plan_max_executions(plan) : 0;
                search_plan_free(plan);
                if (ex > max_exec)
                    return fathom_error_set(err, FATHOM_E_LIMIT_EXCEEDED, p,
                                            "the search of %lld GPUs would try %llu executions; "
                                            "the limit of this server is %llu "
                                            "(--max-search-executions)",
                                            (long long)n, (unsigned long long)ex,
                                            (unsigned long long)max_exec);
                usable = usable || ex > 0;
            }
        }
        if (!usable)
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p,
                                    "no layout of the model uses %lld GPUs with these batches "
                                    "(no split into tensor, pipeline and data parallelism fits "
                                    "its heads, its blocks and a data-parallel degree dividing "
                                    "the batch)",
                                    (long long)n);
    }
    return 0;
}

/* Reads the constraints and energy figures into spec. */
static int decode_constraints(const json_t *body, json_t *spec, fathom_error_t *err)
{
    int64_t max_gpus;
    double deadline, budget, pue, co2;
    json_t *failures = NULL;
    if (jr_int(body, "", "max_gpus", JR_OPTIONAL, 0, 1, SEARCH_MAX_PROCS, &max_gpus, err) ||
        jr_positive(body, "", "deadline_days", JR_OPTIONAL, 0, 1e6, &deadline, err) ||
        jr_positive(body, "", "budget_dollars", JR_OPTIONAL, 0, 1e15, &budget, err) ||
        jr_real(body, "", "pue", JR_OPTIONAL, 1.0, 1.0, TRAINING_MAX_PUE, &pue, err) ||
        jr_real(body, "", "co2_kg_per_kwh", JR_OPTIONAL, SCALING_DEFAULT_CO2_KG_PER_KWH, 0,
                TRAINING_MAX_CO2, &co2, err) ||
        decode_failures(body, &failures, err))
        return -1;
    if (json_object_set_new(spec, "failures", failures) ||
        json_object_set_new(spec, "pue", json_real(pue)) ||
        json_object_set_new(spec, "co2_kg_per_kwh", json_real(co2)) ||
        (max_gpus && json_object_set_new(spec, "max_gpus", json_integer(max_gpus))) ||
        (deadline > 0 && json_object_set_new(spec, "deadline_days", json_real(deadline))) ||
        (budget > 0 && json_object_set_new(spec, "budget_dollars", json_real(budget))))
        return oom(err);
    return 0;
}

/* model, tokens, datatype, batches and systems into spec. */
static int decode_workload(const json_t *body, json_t *spec, const codec_ctx_t *ctx,
                           fathom_error_t *err)
{
    fathom_model_t m;
    int64_t seq;
    int dt;
    double tokens;
    if (!jr_has(body, "model"))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "model", "is required");
    if (codec_model_decode(json_object_get(body, "model"), "model", ctx->presets, &m, err) ||
        jr_int(body, "", "seq_size", JR_OPTIONAL, m.seq_size, 1, 1 << 24, &seq, err) ||
        jr_enum(body, "", "datatype", JR_OPTIONAL, LLM_DT_BFLOAT16, llm_datatype_names, &dt,
                err))
        return -1;
    m.seq_size = seq;
    if (decode_tokens(body, &m, &tokens, err))
        return -1;
    json_t *batches = decode_batches(body, seq, err);
    if (!batches)
        return -1;
    if (json_object_set_new(spec, "model", codec_model_encode(&m)) ||
        json_object_set_new(spec, "tokens", json_real(tokens)) ||
        json_object_set_new(spec, "datatype", json_string(llm_datatype_name(dt))) ||
        json_object_set_new(spec, "batch_tokens", batches))
        return oom(err);
    const json_t *systems = json_object_get(body, "systems");
    json_t *nsys = json_array();
    if (!nsys || json_object_set_new(spec, "systems", nsys))
        return oom(err);
    if (jr_expect_array(systems, "systems", 1, PLAN_MAX_SYSTEMS, err))
        return -1;
    for (size_t i = 0; i < json_array_size(systems); i++) {
        json_t *s = decode_system(json_array_get(systems, i), i, ctx, err);
        if (!s)
            return err->code ? -1 : oom(err);
        for (size_t k = 0; k < i; k++)
            if (strcmp(json_string_value(json_object_get(json_array_get(nsys, k), "name")),
                       json_string_value(json_object_get(s, "name"))) == 0) {
                char p[JR_PATH_MAX];
                jr_path_index(p, sizeof p, "systems", i);
                json_decref(s);
                return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p,
                                        "names a system twice; give each a name of its own");
            }
        if (json_array_append_new(nsys, s))
            return oom(err);
    }
    return 0;
}

json_t *codec_plan_normalize(const json_t *body, const codec_ctx_t *ctx,
                             uint64_t max_search_executions, uint64_t *size, fathom_error_t *err)
{
    if (jr_expect_object(body, "", err) || jr_check_keys(body, "", plan_keys, err))
        return NULL;
    json_t *spec = json_pack("{s:s}", "kind", "plan");
    int64_t counts[PLAN_MAX_COUNTS];
    size_t n = 0;
    if (!spec)
        return oom(err), NULL;
    if (decode_workload(body, spec, ctx, err) || decode_counts(body, counts, &n, err) ||
        decode_constraints(body, spec, err))
        goto fail;
    json_t *list = json_array();
    for (size_t i = 0; list && i < n; i++)
        if (json_array_append_new(list, json_integer((json_int_t)counts[i])))
            break;
    if (!list || json_array_size(list) != n || json_object_set_new(spec, "gpu_counts", list)) {
        oom(err);
        goto fail;
    }
    json_t *options = normalize_options(body, spec, ctx, err);
    if (!options || json_object_set_new(spec, "options", options))
        goto fail;
    if (check_counts(spec, ctx, max_search_executions,
                     json_is_array(json_object_get(body, "gpu_counts")), err))
        goto fail;
    *size = codec_plan_size(spec);
    return spec;
fail:
    if (!err->code)
        oom(err);
    json_decref(spec);
    return NULL;
}

uint64_t codec_plan_size(const json_t *spec)
{
    return (uint64_t)json_array_size(json_object_get(spec, "systems")) *
           (uint64_t)json_array_size(json_object_get(spec, "gpu_counts"));
}

/* ------------------------------------------------------------------- candidates ---- */

/* The fastest run of one candidate over its batches. */
typedef struct {
    bool found;
    search_request_t req;  /* of the winning batch (model, system, options) */
    search_entry_t best;   /* its fastest execution */
    scaling_run_cost_t run; /* ideal */
    uint64_t total, good, estimated;
} best_run_t;

/* Searches every batch of the candidate; 0, or -1 with err (cancelled or out of memory). */
static int search_candidate(const json_t *spec, const codec_ctx_t *ctx, const json_t *sysobj,
                            int64_t n, const scaling_training_t *training, volatile int *cancel,
                            best_run_t *out, fathom_error_t *err)
{
    const json_t *batches = json_object_get(spec, "batch_tokens");
    memset(out, 0, sizeof *out);
    for (size_t b = 0; b < json_array_size(batches); b++) {
        json_t *body = search_body(spec, json_object_get(sysobj, "system"), n,
                                   json_integer_value(json_array_get(batches, b)),
                                   json_object_get(spec, "options"));
        search_request_t req;
        fathom_error_t e2;
        if (!body)
            return oom(err);
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
            return fathom_error_set(err, FATHOM_E_UNAVAILABLE, NULL, "cancelled");
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
    int rc = !fig || json_object_update(c, fig) ? oom(err) : 0;
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
    return rc ? oom(err) : 0;
}

static int add_empty_figures(json_t *c, fathom_error_t *err)
{
    static const char *const keys[] = {
        "execution", "batch_tokens", "step_time_s", "tokens_per_s", "mfu", "steps",
        "days_ideal", "days", "gpu_hours_ideal", "gpu_hours", "dollars_ideal", "dollars", "mwh",
        "co2_tonnes", "failures", NULL};
    for (int i = 0; keys[i]; i++)
        if (json_object_set_new(c, keys[i], json_null()))
            return oom(err);
    return json_object_set_new(c, "warnings", json_array()) ? oom(err) : 0;
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
    json_t *c = json_pack("{s:I,s:O,s:I,s:f,s:f,s:{s:I,s:I,s:I}}", "index", (json_int_t)index,
                          "system", json_object_get(sys, "name"), "num_procs", (json_int_t)n,
                          "price_per_gpu_hour", t.gpu_hour_price, "power_per_gpu_kw",
                          t.gpu_power_kw, "search", "total", (json_int_t)r.total, "good",
                          (json_int_t)r.good, "estimated", (json_int_t)r.estimated);
    if (!c)
        return oom(err), NULL;
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

/* ------------------------------------------------------- every candidate, on threads ---- */

typedef struct {
    const json_t *spec;
    const codec_ctx_t *ctx;
    json_t **out;       /* one slot a candidate */
    uint64_t n;
    uint64_t next;      /* __atomic: the next candidate to take */
    int failed;         /* __atomic */
    pthread_mutex_t lock; /* guards err */
    fathom_error_t err;
} plan_run_t;

static void *run_thread(void *arg)
{
    plan_run_t *pr = arg;
    for (;;) {
        uint64_t i = __atomic_fetch_add(&pr->next, 1, __ATOMIC_RELAXED);
        if (i >= pr->n || __atomic_load_n(&pr->failed, __ATOMIC_RELAXED))
            return NULL;
        uint64_t evaluations = 0;
        fathom_error_t e;
        fathom_error_clear(&e);
        pr->out[i] = codec_plan_candidate(pr->spec, pr->ctx, i, NULL, &evaluations, &e);
        if (!pr->out[i]) {
            pthread_mutex_lock(&pr->lock);
            if (!pr->failed)
                pr->err = e;
            __atomic_store_n(&pr->failed, 1, __ATOMIC_RELAXED);
            pthread_mutex_unlock(&pr->lock);
        }
    }
}

json_t *codec_plan_run(const json_t *normalized, const codec_ctx_t *ctx, int threads,
                       fathom_error_t *err)
{
    if (threads < 1 || threads > CODEC_SEARCH_MAX_THREADS)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "threads", "must be 1 to %d",
                                CODEC_SEARCH_MAX_THREADS),
               NULL;
    plan_run_t pr = {.spec = normalized, .ctx = ctx, .n = codec_plan_size(normalized)};
    pr.out = calloc(pr.n ? pr.n : 1, sizeof *pr.out);
    pthread_t tid[CODEC_SEARCH_MAX_THREADS];
    int started = 0;
    json_t *doc = NULL, *arr = NULL;
    if (!pr.out)
        return oom(err), NULL;
    pthread_mutex_init(&pr.lock, NULL);
    for (; started < threads; started++)
        if (pthread_create(&tid[started], NULL, run_thread, &pr))
            break;
    if (started == 0)
        run_thread(&pr);
    for (int t = 0; t < started; t++)
        pthread_join(tid[t], NULL);
    if (pr.failed) {
        *err = pr.err;
        goto out;
    }
    arr = json_array();
    for (uint64_t i = 0; arr && i < pr.n; i++)
        if (json_array_append(arr, pr.out[i])) {
            json_decref(arr);
            arr = NULL;
        }
    doc = arr ? codec_plan_summarize(normalized, arr) : NULL;
    if (!doc)
        oom(err);
out:
    for (uint64_t i = 0; i < pr.n; i++)
        json_decref(pr.out[i]);
    free(pr.out);
    json_decref(arr);
    pthread_mutex_destroy(&pr.lock);
    return doc;
}

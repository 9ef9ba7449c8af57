/* search_plan_codec.c — a cluster plan's request (see search_plan_codec.h): decoded strictly,
 * normalized (presets resolved, tokens a number, counts a sorted list, the search options
 * normalized by the search's own decoder), and checked: a count no layout can use and a search
 * past the server's limit are refused here, naming the field. Candidates and the answer are in
 * search_plan_run.c. */
#include "search_plan_codec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_read.h"
#include "llm_codec.h"
#include "model_codec.h"
#include "plan.h"
#include "scaling.h"
#include "scaling_run_codec.h"
#include "search.h"
#include "search_codec.h"
#include "search_plan_internal.h"

static const char *const plan_keys[] = {
    "kind",           "model",          "tokens",     "seq_size",       "batch_tokens",
    "batch_schedule", "goodput",        "datatype",   "systems",        "gpu_counts",
    "max_gpus",       "deadline_days",  "budget_dollars", "options",    "failures",
    "losses",         "pue",            "co2_kg_per_kwh", "finetune",   "batch_law_tokens",
    NULL};
static const char *const system_keys[] = {"name", "system", "price_per_gpu_hour",
                                          "power_per_gpu_kw", NULL};
static const char *const failure_keys[] = {"per_gpu_hour",         "planned_per_gpu_hour",
                                           "storage_gbps",         "storage_gbps_per_gpu",
                                           "restart_minutes",      "queue_minutes",
                                           NULL};
static const char *const loss_keys[] = {"evaluation", "slow_nodes", "data_loader", NULL};
static const char *const goodput_keys[] = {"init_batch_tokens", "critical_batch_tokens",
                                           "grad_params", NULL};
static const char *const grad_keys[] = {"sqr", "var", NULL};
static const char *const stage_keys[] = {"batch_tokens", "tokens", NULL};
static const char *const range_keys[] = {"from", "to", "step", "factor", NULL};

int codec_plan__oom(fathom_error_t *err)
{
    return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
}

/* The first of the plan's datatypes (best first) that the system has matrix and vector rates
 * for; the first of all when it has none (the search then names the missing rate). */
static const json_t *system_datatype(const json_t *spec, const json_t *system)
{
    const json_t *list = json_object_get(spec, "datatype"), *dt;
    size_t i;
    json_array_foreach(list, i, dt)
    {
        const char *name = json_string_value(dt);
        if (json_object_get(json_object_get(system, "matrix"), name) &&
            json_object_get(json_object_get(system, "vector"), name))
            return dt;
    }
    return json_array_get(list, 0);
}

json_t *codec_plan__search_body(const json_t *spec, const json_t *system, int64_t num_procs,
                                int64_t batch_tokens, const json_t *options)
{
    int64_t seq = json_integer_value(json_object_get(json_object_get(spec, "model"), "seq_size"));
    json_t *body = json_pack("{s:s,s:O,s:O,s:I,s:I,s:O,s:O}", "kind", "optimal_execution",
                             "model", json_object_get(spec, "model"), "system", system,
                             "num_procs", (json_int_t)num_procs, "max_batch_size",
                             (json_int_t)(batch_tokens / seq), "datatype",
                             system_datatype(spec, system), "options", options);
    const json_t *ft = json_object_get(spec, "finetune");
    if (body && ft && json_object_set(body, "finetune", (json_t *)ft)) {
        json_decref(body);
        return NULL;
    }
    return body;
}

/* "datatype": one name or a list, best first; each candidate runs at the first its system
 * supports. Default bfloat16, then float16 (a system without bfloat16, as V100 or a preset that
 * lists float16 alone, still plans). Normalized to the list. */
static json_t *decode_datatypes(const json_t *body, fathom_error_t *err)
{
    const json_t *v = json_object_get(body, "datatype");
    json_t *out = json_array();
    if (!out)
        return codec_plan__oom(err), NULL;
    if (!v) {
        if (json_array_append_new(out, json_string("bfloat16")) ||
            json_array_append_new(out, json_string("float16"))) {
            json_decref(out);
            return codec_plan__oom(err), NULL;
        }
        return out;
    }
    const bool one = json_is_string(v);
    if (!one && jr_expect_array(v, "datatype", 1, LLM_DT__COUNT, err)) {
        json_decref(out);
        return NULL;
    }
    for (size_t i = 0; i < (one ? 1 : json_array_size(v)); i++) {
        const json_t *d = one ? v : json_array_get(v, i);
        char p[JR_PATH_MAX];
        if (one)
            snprintf(p, sizeof p, "datatype");
        else
            jr_path_index(p, sizeof p, "datatype", i);
        int k = -1;
        for (int t = 0; json_is_string(d) && llm_datatype_names[t]; t++)
            if (strcmp(json_string_value(d), llm_datatype_names[t]) == 0)
                k = t;
        bool twice = false;
        for (size_t j = 0; k >= 0 && j < json_array_size(out); j++)
            twice |= strcmp(json_string_value(json_array_get(out, j)), llm_datatype_names[k]) == 0;
        if (k < 0 || twice) {
            json_decref(out);
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p,
                                    twice ? "names a datatype twice"
                                          : "must be one of float8, float16, bfloat16, float32"),
                   NULL;
        }
        if (json_array_append_new(out, json_string(llm_datatype_names[k]))) {
            json_decref(out);
            return codec_plan__oom(err), NULL;
        }
    }
    return out;
}

size_t codec_plan__batches(const json_t *spec, int64_t *out, bool *fed)
{
    const json_t *b = json_object_get(spec, "batch_tokens");
    *fed = json_is_string(b);
    if (!*fed) {
        size_t n = json_array_size(b);
        for (size_t i = 0; i < n; i++)
            out[i] = json_integer_value(json_array_get(b, i));
        return n;
    }
    const int64_t seq =
        json_integer_value(json_object_get(json_object_get(spec, "model"), "seq_size"));
    const double law = json_number_value(json_object_get(spec, "batch_law_tokens"));
    static const double factors[] = PLAN_AUTO_GOODPUT_FACTORS;
    const bool goodput = json_is_object(json_object_get(spec, "goodput"));
    size_t n = 0;
    for (size_t i = 0; i < sizeof factors / sizeof factors[0]; i++) {
        if (!goodput && factors[i] != 1.0)
            continue;
        double seqs = fmax(1.0, round(law * factors[i] / (double)seq));
        int64_t tokens = (int64_t)fmin(seqs, (double)SEARCH_MAX_BATCH) * seq;
        if (n == 0 || out[n - 1] != tokens)
            out[n++] = tokens;
    }
    return n;
}

int codec_plan__search_request(const json_t *spec, const codec_ctx_t *ctx, const json_t *system,
                               int64_t num_procs, int64_t batch_tokens, bool fed,
                               search_request_t *req, uint64_t *executions, uint64_t *exhaustive,
                               fathom_error_t *err)
{
    json_t *body = codec_plan__search_body(spec, system, num_procs, batch_tokens,
                                           json_object_get(spec, "options"));
    if (!body)
        return codec_plan__oom(err);
    int bad = codec_search_decode(body, ctx, req, err);
    json_decref(body);
    if (bad)
        return -1;
    if (fed) { /* "auto": the law's batch rounded to each layout */
        req->options.exact_batch = false;
        req->options.fed_batch = true;
    }
    uint64_t two_stage;
    codec_search_size(req, exhaustive, &two_stage);
    *executions = *exhaustive;
    if (*exhaustive > PLAN_EXHAUSTIVE_MAX) {
        req->options.refine_units = SEARCH_REFINE_UNITS;
        *executions = two_stage;
    }
    return 0;
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
        /* Fathom's one Chinchilla rule (core/scaling/scaling_chinchilla.c): the compute-optimal
         * tokens of the model's total parameters under Epoch AI's fit, about 20 a parameter */
        *out = scaling_chinchilla_optimal_for_params(&scaling_chinchilla_law, p.total).tokens;
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

/* "batch_tokens": "auto" (the default), a number or a list, each number rounded down to whole
 * sequences. */
static json_t *decode_batches(const json_t *body, int64_t seq, fathom_error_t *err)
{
    const json_t *v = json_object_get(body, "batch_tokens");
    if (!v || json_is_string(v)) {
        if (v && strcmp(json_string_value(v), "auto") != 0) {
            fathom_error_set(err, FATHOM_E_INVALID_FIELD, "batch_tokens",
                             "must be \"auto\", a number of tokens or a list of them");
            return NULL;
        }
        json_t *a = json_string("auto");
        return a ? a : (codec_plan__oom(err), NULL);
    }
    json_t *list = json_is_array(v) ? json_incref((json_t *)v) : json_pack("[O]", v);
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
    codec_plan__oom(err);
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

/* A plan keeps the one fastest layout of each candidate, at exactly its batch: options.top_n
 * and options.exact_batch may only say so. */
static int check_forced_options(const json_t *given, fathom_error_t *err)
{
    const json_t *top_n = json_object_get(given, "top_n");
    const json_t *exact = json_object_get(given, "exact_batch");
    if (top_n && json_integer_value(top_n) != 1)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "options.top_n",
                                "a plan keeps the one fastest layout of each candidate: leave "
                                "it out (or 1)");
    if (exact && !json_is_true(exact))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "options.exact_batch",
                                "a plan runs each candidate at exactly its batch: leave it out "
                                "(or true)");
    return 0;
}

/* The plan's search options: its defaults, the request's over them, exact batch and top 1. The
 * request's are checked first as given, by the one decoder of every sweep's options (the
 * search's, codec_search_decode: errors name "options.<key>"), so a bad value is refused
 * rather than overridden; then normalized with the plan's forced values. */
static json_t *normalize_options(const json_t *body, json_t *spec, const codec_ctx_t *ctx,
                                 fathom_error_t *err)
{
    const json_t *given = json_object_get(body, "options");
    if (given && jr_expect_object(given, "options", err))
        return NULL;
    json_t *o = json_pack("{s:s,s:b,s:b}", "attention_kernel", "fused", "no_offload", 1, "fp8", 0);
    if (!o || (given && json_object_update(o, (json_t *)given)))
        return json_decref(o), codec_plan__oom(err), NULL;
    const json_t *sys0 = json_object_get(json_array_get(json_object_get(spec, "systems"), 0),
                                         "system");
    int64_t batches[PLAN_MAX_BATCHES];
    bool fed;
    codec_plan__batches(spec, batches, &fed);
    const int64_t bt = batches[0];
    json_t *as_given = codec_plan__search_body(spec, sys0, 1, bt, o);
    search_request_t req;
    int bad = !as_given || codec_search_decode(as_given, ctx, &req, err) ||
              check_forced_options(given, err);
    if (!as_given)
        codec_plan__oom(err);
    json_decref(as_given);
    if (bad && strcmp(err->field, "datatype") != 0) {
        json_decref(o);
        return NULL;
    }
    if (json_object_set_new(o, "exact_batch", json_true()) ||
        json_object_set_new(o, "top_n", json_integer(1))) {
        json_decref(o);
        return codec_plan__oom(err), NULL;
    }
    json_t *body1 = codec_plan__search_body(spec, sys0, 1, bt, o);
    json_decref(o);
    json_t *enc = NULL;
    if (body1 && codec_search_decode(body1, ctx, &req, err) == 0) {
        enc = codec_search_request_encode(&req);
        if (!enc)
            codec_plan__oom(err);
    } else if (!body1) {
        codec_plan__oom(err);
    } else if (strcmp(err->field, "datatype") == 0) { /* say which system lacks it */
        size_t len = strlen(err->message);
        snprintf(err->message + len, sizeof err->message - len, " (systems[0], %.64s)",
                 json_string_value(json_object_get(
                     json_array_get(json_object_get(spec, "systems"), 0), "name")));
    }
    json_decref(body1);
    json_t *opts = enc ? json_incref(json_object_get(enc, "options")) : NULL;
    json_decref(enc);
    return opts;
}

/* "failures": rates of interruptions, the checkpoint store and what a restart costs. The
 * store's bandwidth is storage_gbps for the whole cluster, or storage_gbps_per_gpu times each
 * candidate's GPUs (the default: Llama 3's 2 TB/s sustained for 16,384 GPUs). */
static int decode_failures(const json_t *body, json_t **out, fathom_error_t *err)
{
    const json_t *f = json_object_get(body, "failures");
    const json_t *empty = json_object();
    double rate = PLAN_DEFAULT_FAILURES_PER_GPU_HOUR, planned = PLAN_DEFAULT_PLANNED_PER_GPU_HOUR,
           gbps = 0, per_gpu = PLAN_DEFAULT_STORAGE_GBPS_PER_GPU,
           restart = PLAN_DEFAULT_RESTART_MINUTES, queue = 0;
    if (!f)
        f = empty;
    int bad = !empty || jr_expect_object(f, "failures", err) ||
              jr_check_keys(f, "failures", failure_keys, err) ||
              jr_real(f, "failures", "per_gpu_hour", JR_OPTIONAL, rate, 0, 1, &rate, err) ||
              jr_real(f, "failures", "planned_per_gpu_hour", JR_OPTIONAL, planned, 0, 1, &planned,
                      err) ||
              jr_positive(f, "failures", "storage_gbps", JR_OPTIONAL, 0, 1e9, &gbps, err) ||
              jr_positive(f, "failures", "storage_gbps_per_gpu", JR_OPTIONAL, per_gpu, 1e6,
                          &per_gpu, err) ||
              jr_real(f, "failures", "restart_minutes", JR_OPTIONAL, restart, 0, 1e6, &restart,
                      err) ||
              jr_real(f, "failures", "queue_minutes", JR_OPTIONAL, queue, 0, 1e6, &queue, err);
    if (!bad && jr_has(f, "storage_gbps") && jr_has(f, "storage_gbps_per_gpu"))
        bad = fathom_error_set(err, FATHOM_E_INVALID_FIELD, "failures.storage_gbps_per_gpu",
                               "give the store's bandwidth once: storage_gbps for the cluster "
                               "or storage_gbps_per_gpu");
    json_decref((json_t *)empty);
    if (bad)
        return err->code ? -1 : codec_plan__oom(err);
    *out = json_pack("{s:f,s:f,s:f,s:f}", "per_gpu_hour", rate, "planned_per_gpu_hour", planned,
                     "restart_minutes", restart, "queue_minutes", queue);
    if (*out && json_object_set_new(*out, gbps > 0 ? "storage_gbps" : "storage_gbps_per_gpu",
                                    json_real(gbps > 0 ? gbps : per_gpu))) {
        json_decref(*out);
        *out = NULL;
    }
    return *out ? 0 : codec_plan__oom(err);
}

/* "losses": the fractions of wall time a run loses besides interruptions (core/plan plan.h). */
static int decode_losses(const json_t *body, json_t **out, fathom_error_t *err)
{
    const json_t *l = json_object_get(body, "losses");
    double eval = PLAN_DEFAULT_EVAL_FRACTION, slow = PLAN_DEFAULT_SLOW_FRACTION, data = 0;
    if (l && (jr_expect_object(l, "losses", err) || jr_check_keys(l, "losses", loss_keys, err) ||
              jr_real(l, "losses", "evaluation", JR_OPTIONAL, eval, 0, 0.99, &eval, err) ||
              jr_real(l, "losses", "slow_nodes", JR_OPTIONAL, slow, 0, 0.99, &slow, err) ||
              jr_real(l, "losses", "data_loader", JR_OPTIONAL, data, 0, 0.99, &data, err)))
        return -1;
    *out = json_pack("{s:f,s:f,s:f}", "evaluation", eval, "slow_nodes", slow, "data_loader", data);
    return *out ? 0 : codec_plan__oom(err);
}

/* "goodput": Pollux's gradient statistics measured at init_batch_tokens ({"grad_params":
 * {"sqr", "var"}}), or the critical batch they give, var/sqr · init_batch_tokens (McCandlish
 * et al. 2018's noise scale). Normalized to {"init_batch_tokens", "critical_batch_tokens"};
 * null when absent. */
static int decode_goodput(const json_t *body, json_t **out, fathom_error_t *err)
{
    const json_t *g = json_object_get(body, "goodput");
    *out = NULL;
    if (!g || json_is_null(g)) {
        *out = json_null();
        return 0;
    }
    double b0, crit = 0;
    if (jr_expect_object(g, "goodput", err) || jr_check_keys(g, "goodput", goodput_keys, err) ||
        jr_positive(g, "goodput", "init_batch_tokens", JR_REQUIRED, 0, 1e12, &b0, err))
        return -1;
    const json_t *gp = json_object_get(g, "grad_params");
    if (jr_has(g, "critical_batch_tokens") == (gp != NULL))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "goodput",
                                "give one of grad_params {sqr, var} (Pollux's gradient "
                                "statistics at init_batch_tokens) or critical_batch_tokens");
    if (gp) {
        double sqr, var;
        if (jr_expect_object(gp, "goodput.grad_params", err) ||
            jr_check_keys(gp, "goodput.grad_params", grad_keys, err) ||
            jr_positive(gp, "goodput.grad_params", "sqr", JR_REQUIRED, 0, 1e300, &sqr, err) ||
            jr_real(gp, "goodput.grad_params", "var", JR_REQUIRED, 0, 0, 1e300, &var, err))
            return -1;
        crit = var / sqr * b0; /* the gradient noise scale, in tokens */
        if (!isfinite(crit) || crit > 1e15)
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "goodput.grad_params",
                                    "var/sqr · init_batch_tokens must stay below 1e15 tokens");
    } else if (jr_real(g, "goodput", "critical_batch_tokens", JR_REQUIRED, 0, 0, 1e15, &crit,
                       err)) {
        return -1;
    }
    *out = json_pack("{s:f,s:f}", "init_batch_tokens", b0, "critical_batch_tokens", crit);
    return *out ? 0 : codec_plan__oom(err);
}

/* "batch_schedule": up to PLAN_MAX_STAGES stages run before the main batch, each
 * {"batch_tokens" (rounded down to whole sequences), "tokens"}; together fewer tokens than the
 * run's. */
static json_t *decode_schedule(const json_t *body, int64_t seq, double tokens, fathom_error_t *err)
{
    const json_t *v = json_object_get(body, "batch_schedule");
    json_t *out = json_array();
    if (!out)
        return codec_plan__oom(err), NULL;
    if (!v)
        return out;
    double sum = 0;
    if (jr_expect_array(v, "batch_schedule", 0, PLAN_MAX_STAGES, err))
        goto fail;
    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *st = json_array_get(v, i);
        char p[JR_PATH_MAX];
        jr_path_index(p, sizeof p, "batch_schedule", i);
        int64_t bt;
        double t;
        if (jr_expect_object(st, p, err) || jr_check_keys(st, p, stage_keys, err) ||
            jr_int(st, p, "batch_tokens", JR_REQUIRED, 0, seq, (int64_t)SEARCH_MAX_BATCH * seq,
                   &bt, err) ||
            jr_positive(st, p, "tokens", JR_REQUIRED, 0, TRAINING_MAX_TOKENS, &t, err))
            goto fail;
        sum += t;
        if (json_array_append_new(out, json_pack("{s:I,s:f}", "batch_tokens",
                                                 (json_int_t)(bt / seq * seq), "tokens", t))) {
            codec_plan__oom(err);
            goto fail;
        }
    }
    if (sum >= tokens) {
        fathom_error_set(err, FATHOM_E_INVALID_FIELD, "batch_schedule",
                         "its stages take %g tokens, not fewer than the run's %g", sum, tokens);
        goto fail;
    }
    return out;
fail:
    json_decref(out);
    return NULL;
}

/* The 422 of a candidate whose search is too large even in two stages, in a planner's words:
 * what makes each candidate's search smaller. */
static int too_large(const char *field, int64_t n, const char *system, uint64_t executions,
                     uint64_t limit, fathom_error_t *err)
{
    return fathom_error_set(
        err, FATHOM_E_LIMIT_EXCEEDED, field,
        "the layout search on %lld %s GPUs would try %llu executions even in two stages, "
        "more than this server takes (%llu). To make each search smaller: cap tensor or pipeline parallelism "
        "(options.max_tensor_par, options.max_pipeline_par), leave tensor-parallel overlap out "
        "(options.no_tp_overlap: true), give one batch_tokens value instead of a list, keep "
        "fp8, attention_kernel, zero_stage and context_par at one value each, or plan fewer "
        "GPUs per candidate",
        (long long)n, system, (unsigned long long)executions, (unsigned long long)limit);
}

/* Whether some system and batch of spec has a layout on n GPUs (*usable); -1 with err set
 * when a search is refused for another reason or past the server's limit even in two stages
 * (path p names the count). */
static int count_usable(const json_t *spec, const codec_ctx_t *ctx, int64_t n, uint64_t max_exec,
                        const char *p, bool *usable, fathom_error_t *err)
{
    const json_t *systems = json_object_get(spec, "systems");
    int64_t batches[PLAN_MAX_BATCHES];
    bool fed;
    const size_t nb = codec_plan__batches(spec, batches, &fed);
    *usable = false;
    for (size_t s = 0; s < json_array_size(systems); s++) {
        const json_t *sys = json_array_get(systems, s);
        const char *name = json_string_value(json_object_get(sys, "name"));
        for (size_t b = 0; b < nb; b++) {
            search_request_t req;
            fathom_error_t e2;
            fathom_error_clear(&e2);
            uint64_t ex = 0, exhaustive = 0;
            if (codec_plan__search_request(spec, ctx, json_object_get(sys, "system"),
                                           n, batches[b], fed, &req, &ex, &exhaustive, &e2))
                /* not the count's fault: the datatype on this system, say */
                return e2.code == FATHOM_E_INTERNAL
                           ? fathom_error_set(err, e2.code, NULL, "%s", e2.message)
                           : fathom_error_set(err, e2.code, e2.field, "%s (systems[%zu], %s)",
                                              e2.message, s, name);
            if (ex > max_exec)
                return too_large(p, n, name, ex, max_exec, err);
            *usable = *usable || ex > 0;
        }
    }
    return 0;
}

/* Whether n GPUs have a layout at all once options.pipeline_schedule is left to its default:
 * a count where only the schedule rules every layout out (DualPipe on one GPU or on an odd
 * pipeline) is a candidate that does not fit, not a refused plan. */
static int usable_but_for_schedule(const json_t *spec, const codec_ctx_t *ctx, int64_t n,
                                   uint64_t max_exec, const char *p, bool *usable,
                                   fathom_error_t *err)
{
    *usable = false;
    const json_t *sched = json_object_get(json_object_get(spec, "options"), "pipeline_schedule");
    if (!sched)
        return 0;
    json_t *plain = json_deep_copy(spec);
    json_t *opts = plain ? json_object_get(plain, "options") : NULL;
    if (!opts || json_object_del(opts, "pipeline_schedule")) {
        json_decref(plain);
        return codec_plan__oom(err), -1;
    }
    const int rc = count_usable(plain, ctx, n, max_exec, p, usable, err);
    json_decref(plain);
    return rc;
}

/* Refuses a count no layout of any system and batch can use, and a candidate whose search is
 * past the server's limit even in two stages. */
static int check_counts(json_t *spec, const codec_ctx_t *ctx, uint64_t max_exec, bool listed,
                        fathom_error_t *err)
{
    const json_t *counts = json_object_get(spec, "gpu_counts");
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
        if (count_usable(spec, ctx, n, max_exec, p, &usable, err) ||
            (!usable && usable_but_for_schedule(spec, ctx, n, max_exec, p, &usable, err)))
            return -1;
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
    json_t *failures = NULL, *losses = NULL;
    if (jr_int(body, "", "max_gpus", JR_OPTIONAL, 0, 1, SEARCH_MAX_PROCS, &max_gpus, err) ||
        jr_positive(body, "", "deadline_days", JR_OPTIONAL, 0, 1e6, &deadline, err) ||
        jr_positive(body, "", "budget_dollars", JR_OPTIONAL, 0, 1e15, &budget, err) ||
        jr_real(body, "", "pue", JR_OPTIONAL, 1.0, 1.0, TRAINING_MAX_PUE, &pue, err) ||
        jr_real(body, "", "co2_kg_per_kwh", JR_OPTIONAL, SCALING_DEFAULT_CO2_KG_PER_KWH, 0,
                TRAINING_MAX_CO2, &co2, err) ||
        decode_failures(body, &failures, err))
        return -1;
    if (decode_losses(body, &losses, err)) {
        json_decref(failures);
        return -1;
    }
    if (json_object_set_new(spec, "failures", failures) ||
        json_object_set_new(spec, "losses", losses) ||
        json_object_set_new(spec, "pue", json_real(pue)) ||
        json_object_set_new(spec, "co2_kg_per_kwh", json_real(co2)) ||
        (max_gpus && json_object_set_new(spec, "max_gpus", json_integer(max_gpus))) ||
        (deadline > 0 && json_object_set_new(spec, "deadline_days", json_real(deadline))) ||
        (budget > 0 && json_object_set_new(spec, "budget_dollars", json_real(budget))))
        return codec_plan__oom(err);
    return 0;
}

/* DeepSeek LLM's batch for the run's compute budget (plan.h), in tokens: C = M·D with M the
 * FLOPs per token outside the embedding and the output layer. */
static double batch_law(const fathom_model_t *m, double tokens)
{
    llm_params_t p;
    llm_parameters(m, &p);
    double embeddings = (double)m->vocab_size * (double)m->hidden * (m->tied_embeddings ? 1 : 2);
    double flops = plan_batch_flops_per_token(fmax(p.active - embeddings, 0), m->num_blocks,
                                              m->hidden, m->seq_size);
    return plan_batch_law_tokens(flops * tokens);
}

static llm_datatype_t llm_datatype_of(const char *name)
{
    for (int t = 0; llm_datatype_names[t]; t++)
        if (strcmp(name, llm_datatype_names[t]) == 0)
            return (llm_datatype_t)t;
    return LLM_DT_BFLOAT16;
}

/* model, tokens, datatype, batches and systems into spec. */
static int decode_workload(const json_t *body, json_t *spec, const codec_ctx_t *ctx,
                           fathom_error_t *err)
{
    fathom_model_t m;
    int64_t seq;
    double tokens;
    if (!jr_has(body, "model"))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "model", "is required");
    if (codec_model_decode(json_object_get(body, "model"), "model", ctx->presets, &m, err) ||
        jr_int(body, "", "seq_size", JR_OPTIONAL, m.seq_size, 1, 1 << 24, &seq, err))
        return -1;
    json_t *datatypes = decode_datatypes(body, err);
    if (!datatypes || json_object_set_new(spec, "datatype", datatypes))
        return -1;
    llm_finetune_t ft;
    if (codec_llm_finetune_decode(json_object_get(body, "finetune"), "finetune",
                                  llm_datatype_of(json_string_value(json_array_get(datatypes, 0))),
                                  &ft, err) ||
        codec_llm_finetune_check_request(&m, &ft, err))
        return -1;
    if (ft.method != LLM_FINETUNE_NONE &&
        json_object_set_new(spec, "finetune", codec_llm_finetune_encode(&ft)))
        return codec_plan__oom(err);
    m.seq_size = seq;
    if (decode_tokens(body, &m, &tokens, err))
        return -1;
    json_t *batches = decode_batches(body, seq, err), *goodput = NULL;
    if (!batches)
        return -1;
    json_t *schedule = decode_schedule(body, seq, tokens, err);
    if (!schedule || decode_goodput(body, &goodput, err)) {
        json_decref(batches);
        json_decref(schedule);
        return -1;
    }
    if (json_object_set_new(spec, "model", codec_model_encode(&m)) ||
        json_object_set_new(spec, "tokens", json_real(tokens)) ||
        json_object_set_new(spec, "batch_tokens", batches) ||
        json_object_set_new(spec, "batch_schedule", schedule) ||
        json_object_set_new(spec, "goodput", goodput))
        return codec_plan__oom(err);
    /* The normalized plan carries the law's batch, and a normalized plan must normalize to
     * itself (fuzz_sweep): the member is taken back only as the law gives it. */
    const double law = batch_law(&m, tokens);
    const json_t *given = json_object_get(body, "batch_law_tokens");
    if (given && !(json_is_string(batches) && json_is_number(given) &&
                   fabs(json_number_value(given) - law) <= 1e-12 * law))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "batch_law_tokens",
                                "is computed from the model and the tokens (%.17g with "
                                "batch_tokens \"auto\"); leave it out",
                                law);
    if (json_is_string(batches) &&
        json_object_set_new(spec, "batch_law_tokens", json_real(law)))
        return codec_plan__oom(err);
    const json_t *systems = json_object_get(body, "systems");
    json_t *nsys = json_array();
    if (!nsys || json_object_set_new(spec, "systems", nsys))
        return codec_plan__oom(err);
    if (jr_expect_array(systems, "systems", 1, PLAN_MAX_SYSTEMS, err))
        return -1;
    for (size_t i = 0; i < json_array_size(systems); i++) {
        json_t *s = decode_system(json_array_get(systems, i), i, ctx, err);
        if (!s)
            return err->code ? -1 : codec_plan__oom(err);
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
            return codec_plan__oom(err);
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
        return codec_plan__oom(err), NULL;
    if (decode_workload(body, spec, ctx, err) || decode_counts(body, counts, &n, err) ||
        decode_constraints(body, spec, err))
        goto fail;
    json_t *list = json_array();
    for (size_t i = 0; list && i < n; i++)
        if (json_array_append_new(list, json_integer((json_int_t)counts[i])))
            break;
    if (!list || json_array_size(list) != n || json_object_set_new(spec, "gpu_counts", list)) {
        codec_plan__oom(err);
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
        codec_plan__oom(err);
    json_decref(spec);
    return NULL;
}

uint64_t codec_plan_size(const json_t *spec)
{
    return (uint64_t)json_array_size(json_object_get(spec, "systems")) *
           (uint64_t)json_array_size(json_object_get(spec, "gpu_counts"));
}


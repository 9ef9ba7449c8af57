/* serving_plan.c — the serving plan's request, units and result (kind "serving_plan"): for a
 * model, a traffic level and latency targets, over a list of systems, each system's cheapest
 * fleet, aggregated or disaggregated, with $/Mtok, GPUs and the Pareto front of cost against
 * TPOT (core/serving/serving_plan.c does the arithmetic).
 *
 * Request {"kind": "serving_plan", "model", "traffic": {"requests_per_s", "input_tokens",
 *          "output_tokens"} (token counts a number, {"mean", "p90"}, {"mean", "spread"} or
 *          {"low", "high"}, uniform),
 *          "slo": {"ttft_ms_p50"?, "ttft_ms_p99"?, "tpot_ms"?} (at least one), "systems": [preset name |
 *          {"name", "price_per_gpu_hour"?}] (1..16), "engine"? ("vllm"), "weights_datatypes"?
 *          (default bf16, and fp8 on GPUs with an FP8 rate; "mxfp4" only on a model with routed
 *          experts), "modes"? (["aggregated", "disaggregated"]), "max_gpus_per_replica"?}.
 * A {mean, p90} count is read as a normal spread, σ = (p90 − mean)/z₀.₉, z₀.₉ = 1.2816
 * (codec_serving_token_count); the normalized request gives every normal spread as its p90 and
 * uniform lengths as their bounds.
 * Units: one per (system, layout), in system order (codec_serving_plan_units). Each unit's
 * result is its candidate; the assembled result lists every candidate, each system's cheapest
 * ("best": the candidate, with "request", the body of POST /v1/inference that re-estimates it)
 * and the Pareto front. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_read.h"
#include "json_write.h"
#include "model_codec.h"
#include "serving_codec.h"
#include "serving_plan_codec.h"

static const char *const plan_keys[] = {"kind",    "model",  "traffic",          "slo",
                                        "systems", "engine", "weights_datatypes", "modes",
                                        "max_gpus_per_replica", NULL};
static const char *const traffic_keys[] = {"requests_per_s", "input_tokens", "output_tokens",
                                           NULL};
static const char *const slo_keys[] = {"ttft_ms_p50", "ttft_ms_p99", "tpot_ms", NULL};
static const char *const system_keys[] = {"name", "price_per_gpu_hour", NULL};
static const char *const mode_names[] = {"aggregated", "disaggregated", NULL};

#define num(x) jw_num(x)

void codec_serving_plan_free(codec_serving_plan_t *p)
{
    if (!p)
        return;
    json_decref(p->system_json);
    free(p->layouts);
    free(p->layout_system);
    free(p);
}

static int decode_systems(const json_t *v, const codec_presets_t *presets,
                          codec_serving_plan_t *p, fathom_error_t *err)
{
    if (jr_expect_array(v, "systems", 1, SERVING_PLAN_MAX_SYSTEMS, err))
        return -1;
    p->num_systems = (int)json_array_size(v);
    for (int i = 0; i < p->num_systems; i++) {
        /* q names the entry, qn its name (the entry itself when it is a string), qp its price */
        char q[JR_PATH_MAX], qn[JR_PATH_MAX], qp[JR_PATH_MAX];
        jr_path_index(q, sizeof q, "systems", (size_t)i);
        snprintf(qn, sizeof qn, "%s", q);
        snprintf(qp, sizeof qp, "%s", q);
        const json_t *e = json_array_get(v, (size_t)i);
        const char *name = NULL;
        double price = -1;
        if (json_is_string(e)) {
            name = json_string_value(e);
        } else if (json_is_object(e)) {
            if (jr_check_keys(e, q, system_keys, err) ||
                jr_string(e, q, "name", JR_REQUIRED, NULL, CODEC_PRESET_NAME_MAX, &name, err) ||
                jr_positive(e, q, "price_per_gpu_hour", JR_OPTIONAL, -1, 1e6, &price, err))
                return -1;
            jr_path(qn, sizeof qn, q, "name");
            jr_path(qp, sizeof qp, q, "price_per_gpu_hour");
        } else {
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, q,
                                    "must be a system preset name or {\"name\", "
                                    "\"price_per_gpu_hour\"}");
        }
        /* a system twice would be planned twice under one name (and its candidates merged) */
        for (int j = 0; j < i; j++)
            if (strcmp(p->system_names[j], name) == 0)
                return fathom_error_set(err, FATHOM_E_INVALID_FIELD, q,
                                        "repeats \"%s\" (systems[%d])", name, j);
        json_t *sname = json_string(name);
        const int bad =
            !sname || codec_serving_system_decode(sname, qn, presets, &p->systems[i], err);
        json_decref(sname);
        if (bad)
            return -1;
        snprintf(p->system_names[i], sizeof p->system_names[i], "%s", name);
        if (price > 0)
            p->systems[i].price_per_gpu_hour = price;
        if (!(p->systems[i].price_per_gpu_hour > 0))
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, qp,
                                    "%s has no price: give {\"name\", \"price_per_gpu_hour\"}",
                                    name);
        json_t *enc = codec_serving_system_encode(&p->systems[i]);
        if (!enc || json_array_append_new(p->system_json, enc))
            return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    }
    return 0;
}

/* "traffic": the fleet's request rate and the token counts (numbers or distributions). */
static int decode_traffic(const json_t *body, serving_plan_spec_t *s, fathom_error_t *err)
{
    const json_t *traffic = json_object_get(body, "traffic");
    if (!traffic)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "traffic", "is required");
    return jr_expect_object(traffic, "traffic", err) ||
                   jr_check_keys(traffic, "traffic", traffic_keys, err) ||
                   jr_positive(traffic, "traffic", "requests_per_s", JR_REQUIRED, 0,
                               SERVING_MAX_RATE, &s->requests_per_s, err) ||
                   codec_serving_token_count(traffic, "traffic", "input_tokens", &s->input_tokens,
                                             &s->input_spread, &s->input_low, &s->input_high,
                                             err) ||
                   codec_serving_token_count(traffic, "traffic", "output_tokens",
                                             &s->output_tokens, &s->output_spread, &s->output_low,
                                             &s->output_high, err)
               ? -1
               : 0;
}

/* "slo": at least one of the latency targets, in milliseconds (kept in seconds). */
static int decode_slo(const json_t *body, serving_plan_spec_t *s, fathom_error_t *err)
{
    const json_t *slo = json_object_get(body, "slo");
    if (!slo)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "slo", "is required");
    double p50 = 0, p99 = 0, tpot = 0;
    if (jr_expect_object(slo, "slo", err) || jr_check_keys(slo, "slo", slo_keys, err) ||
        jr_positive(slo, "slo", "ttft_ms_p50", JR_OPTIONAL, 0, 1e9, &p50, err) ||
        jr_positive(slo, "slo", "ttft_ms_p99", JR_OPTIONAL, 0, 1e9, &p99, err) ||
        jr_positive(slo, "slo", "tpot_ms", JR_OPTIONAL, 0, 1e9, &tpot, err))
        return -1;
    if (!json_object_get(slo, "ttft_ms_p50") && !json_object_get(slo, "ttft_ms_p99") &&
        !json_object_get(slo, "tpot_ms"))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "slo",
                                "needs at least one of ttft_ms_p50, ttft_ms_p99, tpot_ms");
    s->ttft_p50_s = p50 / 1e3, s->ttft_p99_s = p99 / 1e3, s->tpot_s = tpot / 1e3;
    return 0;
}

/* What the plan may try: the engine, weight formats, modes and GPUs a replica. */
static int decode_options(const json_t *body, serving_plan_spec_t *s, fathom_error_t *err)
{
    int engine = SERVING_ENGINE_VLLM;
    int64_t max_gpus = 0;
    unsigned dts = 0, modes = 0;
    if (jr_enum(body, "", "engine", JR_OPTIONAL, SERVING_ENGINE_VLLM, serving_engine_names,
                &engine, err) ||
        jr_enum_set(body, "", "weights_datatypes", JR_OPTIONAL, codec_weights_format_names,
                    &dts, err) ||
        jr_enum_set(body, "", "modes", JR_OPTIONAL, mode_names, &modes, err) ||
        jr_int(body, "", "max_gpus_per_replica", JR_OPTIONAL, 0, 1, 4096, &max_gpus, err))
        return -1;
    if (json_object_get(body, "weights_datatypes") && !dts)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "weights_datatypes",
                                "must not be empty");
    if (json_object_get(body, "modes") && !modes)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "modes", "must not be empty");
    s->engine = (serving_engine_t)engine;
    s->datatypes = 0;
    for (int i = 0; codec_weights_format_names[i]; i++)
        if (dts & (1u << i))
            s->datatypes |= 1u << codec_weights_format(i);
    s->aggregated = modes & 1u;
    s->disaggregated = modes & 2u;
    s->max_gpus = max_gpus;
    return 0;
}

/* The units: every layout of every system. */
static int make_units(codec_serving_plan_t *p, fathom_error_t *err)
{
    p->layouts = calloc((size_t)p->num_systems * SERVING_PLAN_MAX_LAYOUTS, sizeof *p->layouts);
    p->layout_system = calloc((size_t)p->num_systems * SERVING_PLAN_MAX_LAYOUTS, sizeof(int));
    if (!p->layouts || !p->layout_system)
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    for (int k = 0; k < p->num_systems; k++) {
        const int n = serving_plan_layouts(&p->model, &p->systems[k], &p->spec,
                                           p->layouts + p->num_units, SERVING_PLAN_MAX_LAYOUTS);
        for (int i = 0; i < n; i++)
            p->layout_system[p->num_units + i] = k;
        p->num_units += n;
    }
    return 0;
}

codec_serving_plan_t *codec_serving_plan_decode(const json_t *body, const codec_presets_t *presets,
                                                fathom_error_t *err)
{
    codec_serving_plan_t *p = calloc(1, sizeof *p);
    if (!p) {
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
        return NULL;
    }
    p->system_json = json_array();
    const char *kind = NULL;
    if (!p->system_json || jr_expect_object(body, "", err) ||
        jr_check_keys(body, "", plan_keys, err) ||
        jr_string(body, "", "kind", JR_OPTIONAL, "serving_plan", 32, &kind, err))
        goto fail;
    if (strcmp(kind, "serving_plan") != 0) {
        fathom_error_set(err, FATHOM_E_INVALID_FIELD, "kind", "must be \"serving_plan\"");
        goto fail;
    }
    if (!json_object_get(body, "model")) {
        fathom_error_set(err, FATHOM_E_INVALID_FIELD, "model", "is required");
        goto fail;
    }
    if (codec_model_decode(json_object_get(body, "model"), "model", presets, &p->model, err) ||
        decode_traffic(body, &p->spec, err) || decode_slo(body, &p->spec, err) ||
        decode_options(body, &p->spec, err) ||
        decode_systems(json_object_get(body, "systems"), presets, p, err))
        goto fail;
    /* a format the model cannot take is refused here, not as every layout's failure */
    for (int w = 0; w < SERVING_DT__COUNT; w++) {
        const char *refusal = model_weights_refusal(&p->model, (model_weights_t)w);
        if ((p->spec.datatypes & (1u << w)) && refusal) {
            fathom_error_set(err, FATHOM_E_INVALID_FIELD, "weights_datatypes", "%s", refusal);
            goto fail;
        }
    }
    if (!json_object_get(body, "systems")) {
        fathom_error_set(err, FATHOM_E_INVALID_FIELD, "systems", "is required");
        goto fail;
    }
    if (make_units(p, err))
        goto fail;
    return p;
fail:
    codec_serving_plan_free(p);
    return NULL;
}

/* A traffic token count as the normalized plan gives it: a normal spread as its p90, the rest
 * as the request's encoder gives them (bounds, or the plain mean). */
static json_t *traffic_count(double mean, double spread, double low, double high)
{
    if (high > 0 || !(spread > 0))
        return codec_serving_token_count_encode(mean, spread, low, high);
    return json_pack("{s:o,s:o}", "mean", num(mean), "p90",
                     num(mean + codec_serving_z90() * spread));
}

json_t *codec_serving_plan_normalized(const codec_serving_plan_t *p)
{
    const serving_plan_spec_t *s = &p->spec;
    json_t *slo = json_object(), *dts = json_array(), *modes = json_array();
    if (s->ttft_p50_s > 0)
        json_object_set_new(slo, "ttft_ms_p50", num(s->ttft_p50_s * 1e3));
    if (s->ttft_p99_s > 0)
        json_object_set_new(slo, "ttft_ms_p99", num(s->ttft_p99_s * 1e3));
    if (s->tpot_s > 0)
        json_object_set_new(slo, "tpot_ms", num(s->tpot_s * 1e3));
    for (int w = 0; w < SERVING_DT__COUNT; w++)
        if (s->datatypes & (1u << w))
            json_array_append_new(dts, json_string(serving_dtype_names[w]));
    if (s->aggregated || !s->disaggregated)
        json_array_append_new(modes, json_string("aggregated"));
    if (s->disaggregated || !s->aggregated)
        json_array_append_new(modes, json_string("disaggregated"));
    json_t *count_in =
        traffic_count(s->input_tokens, s->input_spread, s->input_low, s->input_high);
    json_t *count_out =
        traffic_count(s->output_tokens, s->output_spread, s->output_low, s->output_high);
    json_t *systems = json_array();
    for (int k = 0; k < p->num_systems; k++)
        json_array_append_new(systems, json_pack("{s:s,s:o}", "name", p->system_names[k],
                                                 "price_per_gpu_hour",
                                                 num(p->systems[k].price_per_gpu_hour)));
    json_t *o = json_pack("{s:s,s:o,s:{s:o,s:o,s:o},s:o,s:o,s:s,s:o}", "kind", "serving_plan",
                          "model", codec_model_encode(&p->model), "traffic", "requests_per_s",
                          num(s->requests_per_s), "input_tokens", count_in, "output_tokens",
                          count_out, "slo", slo, "systems", systems, "engine",
                          serving_engine_names[s->engine], "modes", modes);
    /* no formats given: each system's default (bf16, and fp8 where it has an FP8 rate) */
    if (o && s->datatypes)
        json_object_set_new(o, "weights_datatypes", dts);
    else
        json_decref(dts);
    if (o && s->max_gpus > 0)
        json_object_set_new(o, "max_gpus_per_replica", json_integer(s->max_gpus));
    return o;
}

void codec_serving_plan_run_unit(const codec_serving_plan_t *p, int unit,
                                 serving_plan_candidate_t *out)
{
    const int k = p->layout_system[unit];
    serving_plan_candidate(&p->model, &p->systems[k], k, &p->spec, &p->layouts[unit], out);
}

/* The body of POST /v1/inference that re-estimates a candidate. */
static json_t *request_body(const codec_serving_plan_t *p, const serving_plan_candidate_t *c)
{
    return json_pack("{s:o,s:O,s:o}", "model", codec_model_encode(&p->model), "system",
                     json_array_get(p->system_json, (size_t)c->system), "serving",
                     codec_serving_encode(&c->request));
}

json_t *codec_serving_plan_candidate_encode(const codec_serving_plan_t *p,
                                            const serving_plan_candidate_t *c)
{
    const serving_request_t *r = &c->request;
    json_t *layout = json_pack("{s:I,s:I,s:I,s:I}", "tensor_par", (json_int_t)r->layout.tensor_par,
                               "pipeline_par", (json_int_t)r->layout.pipeline_par, "expert_par",
                               (json_int_t)r->layout.expert_par, "attention_data_par",
                               (json_int_t)r->layout.attention_data_par);
    json_t *o = json_pack("{s:s,s:s,s:o,s:s,s:b,s:b,s:i}", "system", p->system_names[c->system],
                          "mode", r->disaggregated ? "disaggregated" : "aggregated", "layout",
                          layout, "weights_datatype", serving_dtype_names[r->weights], "fits",
                          c->fits, "meets", c->meets, "evaluations", c->evaluations);
    if (!o)
        return NULL;
    if (!c->meets) {
        json_object_set_new(o, "reason", json_string(c->reason));
        if (c->fits && c->tpot_s > 0)
            json_object_set_new(o, "at_one_request",
                                json_pack("{s:o,s:o,s:o}", "ttft_p50_s", num(c->ttft_p50_s),
                                          "ttft_p99_s", num(c->ttft_p99_s), "tpot_s",
                                          num(c->tpot_s)));
        return o;
    }
    json_t *more = json_pack(
        "{s:I,s:I,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:b}", "replicas", (json_int_t)c->replicas,
        "prefill_replicas", (json_int_t)c->prefill_replicas, "gpus", num(c->gpus),
        "dollars_per_hour", num(c->dollars_per_hour), "dollars_per_million_output_tokens",
        num(c->dollars_per_million_output), "requests_per_s_per_replica",
        num(r->requests_per_s), "ttft_p50_s", num(c->ttft_p50_s), "ttft_p99_s",
        num(c->ttft_p99_s), "tpot_s", num(c->tpot_s), "output_tokens_per_s_per_gpu",
        num(c->output_tokens_per_s_per_gpu), "pareto", c->pareto);
    if (!more || json_object_update(o, more)) {
        json_decref(more);
        json_decref(o);
        return NULL;
    }
    json_decref(more);
    if (json_object_set_new(o, "request", request_body(p, c))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* Why none of a system's candidates meets, in a planner's words: nothing fits (more GPUs a
 * replica, or a smaller format), or the targets are below what the layouts that fit do with one
 * request in flight (the least of each latency among them). NULL when some candidate meets. */
static json_t *none_meets_hint(const codec_serving_plan_t *p, int system, const json_t *candidates)
{
    double least[3] = {INFINITY, INFINITY, INFINITY};
    bool fits = false;
    static const char *const keys[3] = {"ttft_p50_s", "ttft_p99_s", "tpot_s"};
    size_t i;
    json_t *j;
    json_array_foreach(candidates, i, j) {
        const json_t *at = json_object_get(j, "at_one_request");
        if (strcmp(json_string_value(json_object_get(j, "system")),
                   p->system_names[system]) != 0)
            continue;
        if (json_is_true(json_object_get(j, "meets")))
            return NULL;
        fits |= json_is_true(json_object_get(j, "fits"));
        for (int k = 0; at && k < 3; k++)
            least[k] = fmin(least[k], json_number_value(json_object_get(at, keys[k])));
    }
    char text[512];
    if (fits && !isfinite(least[2]))
        return json_string("no replica count meets the targets: each candidate's reason says why");
    if (!fits)
        snprintf(text, sizeof text,
                 "no layout of at most %lld GPUs a replica holds the model and one request: "
                 "raise max_gpus_per_replica, or add a smaller format to weights_datatypes",
                 (long long)serving_plan_max_gpus(&p->systems[system], &p->spec));
    else
        snprintf(text, sizeof text,
                 "the targets are below what every layout that fits does with one request in "
                 "flight: the least among them is TTFT p50 %.4g ms, TTFT p99 %.4g ms, TPOT "
                 "%.4g ms (each candidate's at_one_request); loosen the slo or try a faster "
                 "system",
                 1e3 * least[0], 1e3 * least[1], 1e3 * least[2]);
    return json_string(text);
}

/* How many of a system's candidates fail for each reason: {"does not fit in memory": n, …}. */
static json_t *reason_counts(const char *system, const json_t *candidates)
{
    json_t *counts = json_object();
    size_t i;
    json_t *j;
    json_array_foreach(candidates, i, j) {
        const char *why = json_string_value(json_object_get(j, "reason"));
        if (!counts || !why ||
            strcmp(json_string_value(json_object_get(j, "system")), system) != 0)
            continue;
        json_object_set_new(counts, why,
                            json_integer(json_integer_value(json_object_get(counts, why)) + 1));
    }
    return counts;
}

/* The plan block from every candidate (JSON, in unit order; borrowed and marked: "pareto"
 * set on each): each system's cheapest (with the count of each reason the others fail for, and
 * a hint when none meets), the cheapest overall, the Pareto front. */
json_t *codec_serving_plan_summarize(const codec_serving_plan_t *p, json_t *candidates)
{
    const size_t n = json_array_size(candidates);
    serving_plan_candidate_t *c = calloc(n ? n : 1, sizeof *c);
    if (!c)
        return NULL;
    size_t i;
    json_t *j;
    json_array_foreach(candidates, i, j) {
        const char *name = json_string_value(json_object_get(j, "system"));
        c[i].system = -1;
        for (int k = 0; name && k < p->num_systems; k++)
            if (strcmp(p->system_names[k], name) == 0)
                c[i].system = k;
        c[i].meets = json_is_true(json_object_get(j, "meets"));
        c[i].dollars_per_hour = json_number_value(json_object_get(j, "dollars_per_hour"));
        c[i].tpot_s = json_number_value(json_object_get(j, "tpot_s"));
    }
    int best[SERVING_PLAN_MAX_SYSTEMS];
    serving_plan_select(c, (int)n, p->num_systems, best);
    json_t *systems = json_array(), *front = json_array();
    int cheapest = -1;
    for (int k = 0; systems && k < p->num_systems; k++) {
        int tried = 0, meeting = 0;
        for (size_t q = 0; q < n; q++)
            if (c[q].system == k)
                tried++, meeting += c[q].meets;
        json_t *b = best[k] >= 0 ? json_array_get(candidates, (size_t)best[k]) : NULL;
        json_t *entry = json_pack("{s:s,s:o,s:i,s:i,s:O,s:o}", "name", p->system_names[k],
                                  "price_per_gpu_hour", num(p->systems[k].price_per_gpu_hour),
                                  "candidates", tried, "meeting", meeting, "best",
                                  b ? b : json_null(), "reasons",
                                  reason_counts(p->system_names[k], candidates));
        json_t *hint = tried > 0 && meeting == 0 ? none_meets_hint(p, k, candidates) : NULL;
        if (entry && hint)
            json_object_set_new(entry, "hint", hint);
        else
            json_decref(hint);
        json_array_append_new(systems, entry);
        if (best[k] >= 0 &&
            (cheapest < 0 || c[best[k]].dollars_per_hour < c[cheapest].dollars_per_hour))
            cheapest = best[k];
    }
    json_array_foreach(candidates, i, j) {
        if (c[i].meets)
            json_object_set_new(j, "pareto", json_boolean(c[i].pareto));
        if (c[i].pareto)
            json_array_append_new(front, json_integer((json_int_t)i));
    }
    free(c);
    return json_pack("{s:o,s:o,s:o,s:O}", "systems", systems, "cheapest",
                     cheapest >= 0 ? json_integer(cheapest) : json_null(), "pareto", front,
                     "candidates", candidates);
}

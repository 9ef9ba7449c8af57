/* serving_codec.c — POST /v1/inference: {model, system, serving} → prefill and decode steps,
 * KV cache, concurrency, latency, throughput, cost and the throughput–interactivity curve
 * (codec_inference_endpoint). Decoding is strict: every bad value is a 422 naming
 * "serving.<member>" (serving_codec.h lists the members and defaults). */
#include <gsl/gsl_cdf.h>
#include <math.h>
#include <string.h>

#include "endpoint.h"
#include "json_read.h"
#include "json_write.h"
#include "llm_codec.h"
#include "model_codec.h"
#include "serving_codec.h"

static const char *const request_keys[] = {"model", "system", "serving", NULL};
static const char *const serving_keys[] = {
    "tensor_par",       "pipeline_par",   "expert_par",        "attention_data_par",
    "weights_datatype", "kv_datatype",    "input_tokens",      "output_tokens",
    "concurrency",      "requests_per_s", "num_requests",      "max_batch_tokens",
    "max_batch_size",
    "chunked_prefill",  "prefix_cache_hit", "kv_memory_fraction", "speculative",
    "engine",           "disaggregated",  NULL};
static const char *const layout_keys[] = {"tensor_par", "pipeline_par", "expert_par",
                                          "attention_data_par", NULL};
static const char *const disagg_keys[] = {"prefill", "decode", "kv_transfer_net",
                                          "prefill_per_decode", NULL};
static const char *const spec_keys[] = {"method", "tokens", "acceptance", "model", NULL};
/* "nvfp4" is read as "fp4" (the format fp4 means); "mxfp4" (gpt-oss's MXFP4 experts, the
 * other linears BF16) is a weights format only (codec_weights_format_names) */
static const char *const dtype_names[] = {"bf16", "fp8", "fp4", "int4", "nvfp4", NULL};
static const char *const method_names[] = {"mtp", "draft", NULL};
#define num(x) jw_num(x)

/* ---- system ---- */

int codec_serving_system_decode(const json_t *v, const char *path, const codec_presets_t *presets,
                                serving_system_t *out, fathom_error_t *err)
{
    memset(out, 0, sizeof *out);
    codec_gpu_cost_t cost;
    const json_t *sys = NULL; /* the object v stands for (a preset, a GPU variant of one) */
    json_t *owned = NULL;
    if (codec_llm_system_decode(v, path, presets, &out->hw, err) ||
        codec_llm_system_cost_decode(v, path, presets, &cost, err) ||
        codec_llm_system_resolve(v, path, presets, &sys, &owned, err))
        return -1;
    out->price_per_gpu_hour = cost.price_per_gpu_hour;
    out->power_per_gpu_kw = cost.power_per_gpu_kw;
    codec_serving_hw_t hw;
    const int rc = codec_llm_system_serving_hw_decode(sys ? sys : v, path, &hw, err);
    out->fp4_tflops = hw.float4_tflops;
    out->fp4_efficiency = hw.float4_efficiency;
    out->decode_attention_efficiency = hw.decode_attention_efficiency;
    json_decref(owned);
    return rc ? -1 : 0;
}

json_t *codec_serving_system_encode(const serving_system_t *s)
{
    json_t *o = codec_llm_system_encode(&s->hw);
    if (o && (json_object_set_new(o, "float4_tflops", num(s->fp4_tflops)) ||
              (s->decode_attention_efficiency > 0 &&
               json_object_set_new(o, "decode_attention_efficiency",
                                   num(s->decode_attention_efficiency))) ||
              (s->fp4_efficiency > 0 &&
               json_object_set_new(o, "float4_efficiency", num(s->fp4_efficiency))) ||
              json_object_set_new(o, "price_per_gpu_hour", num(s->price_per_gpu_hour)) ||
              json_object_set_new(o, "power_per_gpu_kw", num(s->power_per_gpu_kw)))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* ---- serving ---- */

static int decode_layout(const json_t *v, const char *path, bool only_layout,
                         serving_layout_t *l, fathom_error_t *err)
{
    if (jr_expect_object(v, path, err) ||
        (only_layout && jr_check_keys(v, path, layout_keys, err)))
        return -1;
    return jr_int(v, path, "tensor_par", JR_OPTIONAL, 1, 1, SERVING_MAX_PAR, &l->tensor_par, err) ||
                   jr_int(v, path, "pipeline_par", JR_OPTIONAL, 1, 1, SERVING_MAX_PAR,
                          &l->pipeline_par, err) ||
                   jr_int(v, path, "expert_par", JR_OPTIONAL, 1, 1, SERVING_MAX_PAR,
                          &l->expert_par, err) ||
                   jr_int(v, path, "attention_data_par", JR_OPTIONAL, 1, 1, SERVING_MAX_PAR,
                          &l->attention_data_par, err)
               ? -1
               : 0;
}

double codec_serving_z90(void)
{
    return gsl_cdf_ugaussian_Pinv(0.9);
}

/* {"low", "high"}: uniform lengths (vLLM's random dataset draws from [X·(1 − r), X·(1 + r)],
 * SGLang's from [X·r, X], both uniform integers: vllm/benchmarks/datasets.py RandomDataset,
 * sglang bench_serving.py sample_random_requests), whose variance is (high − low)²/12. */
static int uniform_count(const json_t *v, const char *p, double *mean, double *spread,
                         double *low, double *high, fathom_error_t *err)
{
    char q[JR_PATH_MAX];
    jr_path(q, sizeof q, p, json_object_get(v, "low") ? "high" : "low");
    if (!json_object_get(v, "low") || !json_object_get(v, "high"))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, q,
                                "is required: uniform lengths take low and high together");
    static const char *const others[] = {"mean", "spread", "p90", NULL};
    for (int i = 0; others[i]; i++)
        if (json_object_get(v, others[i])) {
            jr_path(q, sizeof q, p, others[i]);
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, q,
                                    "is not with low and high (they give the mean and spread)");
        }
    if (jr_real(v, p, "low", JR_REQUIRED, 0, 1, SERVING_MAX_TOKENS, low, err) ||
        jr_real(v, p, "high", JR_REQUIRED, 0, 1, SERVING_MAX_TOKENS, high, err))
        return -1;
    jr_path(q, sizeof q, p, "high");
    if (*high < *low)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, q, "must be at least low");
    *mean = (*low + *high) / 2;
    *spread = (*high - *low) / sqrt(12.0);
    if (!(*spread > 0))
        *low = *high = 0; /* one length: a plain count */
    return 0;
}

int codec_serving_token_count(const json_t *obj, const char *path, const char *key, double *mean,
                              double *spread, double *low, double *high, fathom_error_t *err)
{
    char p[JR_PATH_MAX], q[JR_PATH_MAX];
    jr_path(p, sizeof p, path, key);
    const json_t *v = json_object_get(obj, key);
    *spread = *low = *high = 0;
    if (!v)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p, "is required");
    if (!json_is_object(v))
        return jr_value_real(v, p, 1, SERVING_MAX_TOKENS, mean, err);
    static const char *const keys[] = {"mean", "spread", "p90", "low", "high", NULL};
    if (jr_check_keys(v, p, keys, err))
        return -1;
    if (json_object_get(v, "low") || json_object_get(v, "high"))
        return uniform_count(v, p, mean, spread, low, high, err);
    double sd = NAN, p90 = NAN;
    if (jr_real(v, p, "mean", JR_REQUIRED, 0, 1, SERVING_MAX_TOKENS, mean, err) ||
        jr_real(v, p, "spread", JR_OPTIONAL, NAN, 0, SERVING_MAX_TOKENS, &sd, err) ||
        jr_real(v, p, "p90", JR_OPTIONAL, NAN, 1, SERVING_MAX_TOKENS, &p90, err))
        return -1;
    jr_path(q, sizeof q, p, "p90");
    if (!isnan(sd) && !isnan(p90))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, q,
                                "is another way to give the spread: give spread or p90, not both");
    if (!isnan(p90) && p90 < *mean)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, q, "must be at least the mean");
    *spread = !isnan(sd) ? sd : !isnan(p90) ? (p90 - *mean) / codec_serving_z90() : 0;
    return 0;
}

static int decode_speculative(const json_t *v, const char *path, const codec_presets_t *presets,
                              serving_spec_t *sp, fathom_model_t *draft, fathom_error_t *err)
{
    int method = 0;
    int64_t k = 0;
    if (jr_expect_object(v, path, err) || jr_check_keys(v, path, spec_keys, err) ||
        jr_enum(v, path, "method", JR_REQUIRED, 0, method_names, &method, err) ||
        jr_int(v, path, "tokens", JR_REQUIRED, 0, 1, SERVING_MAX_SPEC_TOKENS, &k, err) ||
        jr_real(v, path, "acceptance", JR_REQUIRED, 0, 0, 1, &sp->acceptance, err))
        return -1;
    sp->method = method == 0 ? SERVING_SPEC_MTP : SERVING_SPEC_DRAFT;
    sp->tokens = k;
    const json_t *m = json_object_get(v, "model");
    char p[JR_PATH_MAX];
    jr_path(p, sizeof p, path, "model");
    if (sp->method == SERVING_SPEC_DRAFT) {
        if (!m)
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p, "is required with method draft");
        if (codec_model_decode(m, p, presets, draft, err))
            return -1;
        sp->draft = draft;
    } else if (m) {
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p,
                                "is for method draft (mtp uses the model's own MTP blocks)");
    }
    return 0;
}

/* disaggregated: {prefill, decode, kv_transfer_net, prefill_per_decode}, the layouts given
 * there and not beside it. */
static int decode_disaggregated(const json_t *v, const json_t *dis, const char *path,
                                const serving_system_t *s, serving_request_t *out,
                                fathom_error_t *err)
{
    char p[JR_PATH_MAX], d[JR_PATH_MAX], q[JR_PATH_MAX];
    jr_path(d, sizeof d, path, "disaggregated");
    if (jr_expect_object(dis, d, err))
        return -1;
    for (const char *const *k = layout_keys; *k; k++)
        if (json_object_get(v, *k)) {
            jr_path(p, sizeof p, path, *k);
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p,
                                    "give the layouts in disaggregated.prefill and "
                                    "disaggregated.decode");
        }
    int64_t net = s->hw.num_networks - 1;
    if (jr_check_keys(dis, d, disagg_keys, err) ||
        jr_int(dis, d, "kv_transfer_net", JR_OPTIONAL, s->hw.num_networks - 1, 0,
               s->hw.num_networks - 1, &net, err) ||
        jr_positive(dis, d, "prefill_per_decode", JR_OPTIONAL, 0, 1e6, &out->prefill_per_decode,
                    err))
        return -1;
    out->kv_transfer_net = (int)net;
    const json_t *pre = json_object_get(dis, "prefill"), *dec = json_object_get(dis, "decode");
    jr_path(q, sizeof q, d, "prefill");
    if (!pre)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, q, "is required");
    if (decode_layout(pre, q, true, &out->prefill_layout, err))
        return -1;
    jr_path(q, sizeof q, d, "decode");
    if (!dec)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, q, "is required");
    return decode_layout(dec, q, true, &out->layout, err);
}

/* weights_datatype (the model's checkpoint_weights by default: a model is served from the
 * checkpoint it ships), kv_datatype (FP8 by default under FP8 or FP4 weights) and engine. */
static int decode_datatypes(const json_t *v, const char *path, const fathom_model_t *m,
                            serving_request_t *out, fathom_error_t *err)
{
    int wdt = -1, kdt = 0, engine = SERVING_ENGINE_VLLM;
    if (jr_enum(v, path, "weights_datatype", JR_OPTIONAL, -1, codec_weights_format_names,
                &wdt, err))
        return -1;
    wdt = (int)(wdt < 0 ? m->checkpoint_weights : codec_weights_format(wdt));
    const int kdflt = wdt == SERVING_DT_FP8 || wdt == SERVING_DT_FP4 ? SERVING_DT_FP8 : 0;
    if (jr_enum(v, path, "kv_datatype", JR_OPTIONAL, kdflt, dtype_names, &kdt, err) ||
        jr_enum(v, path, "engine", JR_OPTIONAL, SERVING_ENGINE_VLLM, serving_engine_names, &engine,
                err))
        return -1;
    out->weights = (serving_dtype_t)wdt;
    out->kv = (serving_dtype_t)(kdt == 4 ? SERVING_DT_FP4 : kdt);
    out->engine = (serving_engine_t)engine;
    return 0;
}

/* The requests and the load (tokens, concurrency or requests_per_s, num_requests) and the
 * engine's limits as given (0 or -1: the engine's default, filled in by the caller). */
static int decode_load(const json_t *v, const char *path, serving_request_t *out,
                       fathom_error_t *err)
{
    char p[JR_PATH_MAX];
    int64_t num_requests = 0;
    if (codec_serving_token_count(v, path, "input_tokens", &out->input_tokens, &out->input_spread,
                                  &out->input_low, &out->input_high, err) ||
        codec_serving_token_count(v, path, "output_tokens", &out->output_tokens,
                                  &out->output_spread, &out->output_low, &out->output_high,
                                  err) ||
        jr_positive(v, path, "concurrency", JR_OPTIONAL, 0, SERVING_MAX_CONCURRENCY,
                    &out->concurrency, err) ||
        jr_positive(v, path, "requests_per_s", JR_OPTIONAL, 0, SERVING_MAX_RATE,
                    &out->requests_per_s, err) ||
        jr_int(v, path, "num_requests", JR_OPTIONAL, 0, 1, (int64_t)SERVING_MAX_REQUESTS,
               &num_requests, err) ||
        jr_int(v, path, "max_batch_tokens", JR_OPTIONAL, 0, 1, 1 << 24, &out->max_batch_tokens,
               err) ||
        jr_int(v, path, "max_batch_size", JR_OPTIONAL, 0, 1, 1 << 20, &out->max_batch_size,
               err) ||
        jr_real(v, path, "prefix_cache_hit", JR_OPTIONAL, 0, 0, 0.999, &out->prefix_cache_hit,
                err) ||
        jr_positive(v, path, "kv_memory_fraction", JR_OPTIONAL, 0, 1, &out->kv_memory_fraction,
                    err))
        return -1;
    if (json_object_get(v, "kv_memory_fraction") == NULL)
        out->kv_memory_fraction = 0;
    out->num_requests = (double)num_requests;
    /* a load member given is given, whatever its value (0 is refused above: not a load) */
    if (jr_has(v, "concurrency") && jr_has(v, "requests_per_s")) {
        jr_path(p, sizeof p, path, "requests_per_s");
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p,
                                "give concurrency or requests_per_s, not both");
    }
    if (jr_has(v, "concurrency") && jr_has(v, "num_requests")) {
        jr_path(p, sizeof p, path, "num_requests");
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p,
                                "a finite run takes requests_per_s or nothing, not concurrency");
    }
    bool chunked = false;
    out->chunked_prefill = -1;
    if (json_object_get(v, "chunked_prefill")) {
        if (jr_bool(v, path, "chunked_prefill", JR_REQUIRED, false, &chunked, err))
            return -1;
        out->chunked_prefill = chunked ? 1 : 0;
    }
    return 0;
}

int codec_serving_decode(const json_t *v, const char *path, const fathom_model_t *m,
                         const serving_system_t *s, const codec_presets_t *presets,
                         serving_request_t *out, fathom_model_t *draft, fathom_error_t *err)
{
    memset(out, 0, sizeof *out);
    if (jr_expect_object(v, path, err) || jr_check_keys(v, path, serving_keys, err))
        return -1;
    const json_t *dis = json_object_get(v, "disaggregated");
    out->disaggregated = dis != NULL; /* null is not absent: refused as not an object */
    if (out->disaggregated ? decode_disaggregated(v, dis, path, s, out, err)
                           : decode_layout(v, path, false, &out->layout, err))
        return -1;
    if (decode_datatypes(v, path, m, out, err) || decode_load(v, path, out, err))
        return -1;
    const json_t *spec = json_object_get(v, "speculative");
    if (spec) { /* null is not absent: decode_speculative refuses it */
        char p[JR_PATH_MAX];
        jr_path(p, sizeof p, path, "speculative");
        if (decode_speculative(spec, p, presets, &out->speculative, draft, err))
            return -1;
    }
    /* the engine's defaults, written out (the normalized request says what runs) */
    serving_engine_defaults_t d;
    serving_engine_defaults(out->engine, m, s, &out->layout, &d);
    if (!out->max_batch_tokens)
        out->max_batch_tokens = d.max_batch_tokens;
    if (!out->max_batch_size)
        out->max_batch_size = d.max_batch_size;
    if (out->chunked_prefill < 0)
        out->chunked_prefill = d.chunked_prefill ? 1 : 0;
    if (!(out->kv_memory_fraction > 0))
        out->kv_memory_fraction = d.kv_memory_fraction;
    return 0;
}

int codec_serving_request_decode(const json_t *body, const codec_presets_t *presets,
                                 codec_serving_request_t *out, fathom_error_t *err)
{
    memset(out, 0, sizeof *out);
    if (jr_expect_object(body, "", err) || jr_check_keys(body, "", request_keys, err))
        return -1;
    static const char *const required[] = {"model", "system", "serving"};
    for (int i = 0; i < 3; i++)
        if (!json_object_get(body, required[i]))
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, required[i], "is required");
    if (codec_model_decode(json_object_get(body, "model"), "model", presets, &out->model, err) ||
        codec_serving_system_decode(json_object_get(body, "system"), "system", presets,
                                    &out->system, err))
        return -1;
    if (codec_serving_decode(json_object_get(body, "serving"), "serving", &out->model,
                             &out->system, presets, &out->serving, &out->draft, err))
        return -1;
    if (out->serving.speculative.method == SERVING_SPEC_DRAFT)
        out->serving.speculative.draft = &out->draft;
    return 0;
}

static json_t *layout_encode(const serving_layout_t *l)
{
    return json_pack("{s:I,s:I,s:I,s:I}", "tensor_par", (json_int_t)l->tensor_par,
                     "pipeline_par", (json_int_t)l->pipeline_par, "expert_par",
                     (json_int_t)l->expert_par, "attention_data_par",
                     (json_int_t)l->attention_data_par);
}

json_t *codec_serving_token_count_encode(double mean, double spread, double low, double high)
{
    if (high > 0)
        return json_pack("{s:o,s:o}", "low", num(low), "high", num(high));
    return spread > 0 ? json_pack("{s:o,s:o}", "mean", num(mean), "spread", num(spread))
                      : num(mean);
}

json_t *codec_serving_encode(const serving_request_t *r)
{
    json_t *o = r->disaggregated ? json_object() : layout_encode(&r->layout);
    if (!o)
        return NULL;
    int bad = json_object_set_new(o, "weights_datatype",
                                  json_string(serving_dtype_names[r->weights])) ||
              json_object_set_new(o, "kv_datatype", json_string(serving_dtype_names[r->kv])) ||
              json_object_set_new(o, "input_tokens",
                                  codec_serving_token_count_encode(r->input_tokens,
                                                                   r->input_spread, r->input_low,
                                                                   r->input_high)) ||
              json_object_set_new(o, "output_tokens",
                                  codec_serving_token_count_encode(
                                      r->output_tokens, r->output_spread, r->output_low,
                                      r->output_high)) ||
              json_object_set_new(o, "prefix_cache_hit", num(r->prefix_cache_hit)) ||
              json_object_set_new(o, "engine", json_string(serving_engine_names[r->engine]));
    /* the engine's settings (the normalized request always has them; a request made by the
     * plan leaves the engine's defaults to the decoder) */
    if (!bad && r->max_batch_tokens > 0)
        bad = json_object_set_new(o, "max_batch_tokens", json_integer(r->max_batch_tokens));
    if (!bad && r->max_batch_size > 0)
        bad = json_object_set_new(o, "max_batch_size", json_integer(r->max_batch_size));
    if (!bad && r->chunked_prefill >= 0)
        bad = json_object_set_new(o, "chunked_prefill", json_boolean(r->chunked_prefill == 1));
    if (!bad && r->kv_memory_fraction > 0)
        bad = json_object_set_new(o, "kv_memory_fraction", num(r->kv_memory_fraction));
    if (!bad && r->concurrency > 0)
        bad = json_object_set_new(o, "concurrency", num(r->concurrency));
    if (!bad && r->requests_per_s > 0)
        bad = json_object_set_new(o, "requests_per_s", num(r->requests_per_s));
    if (!bad && r->num_requests > 0)
        bad = json_object_set_new(o, "num_requests", num(r->num_requests));
    if (!bad && r->speculative.method != SERVING_SPEC_NONE) {
        const serving_spec_t *sp = &r->speculative;
        json_t *s = json_pack("{s:s,s:I,s:o}", "method", serving_spec_names[sp->method], "tokens",
                              (json_int_t)sp->tokens, "acceptance", num(sp->acceptance));
        if (s && sp->method == SERVING_SPEC_DRAFT && sp->draft)
            json_object_set_new(s, "model", codec_model_encode(sp->draft));
        bad = !s || json_object_set_new(o, "speculative", s);
    }
    if (!bad && r->disaggregated) {
        /* prefill_per_decode 0 is the automatic ratio: left out, as the request leaves it */
        json_t *d = json_pack("{s:o,s:o,s:i}", "prefill", layout_encode(&r->prefill_layout),
                              "decode", layout_encode(&r->layout), "kv_transfer_net",
                              r->kv_transfer_net);
        if (d && r->prefill_per_decode > 0)
            json_object_set_new(d, "prefill_per_decode", num(r->prefill_per_decode));
        bad = !d || json_object_set_new(o, "disaggregated", d);
    }
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *codec_serving_request_encode(const codec_serving_request_t *r)
{
    return json_pack("{s:o,s:o,s:o}", "model", codec_model_encode(&r->model), "system",
                     codec_serving_system_encode(&r->system), "serving",
                     codec_serving_encode(&r->serving));
}

/* ---- result ---- */

json_t *codec_serving_step_encode(const serving_step_t *s)
{
    json_t *b = json_pack(
        "{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "gemm", num(s->gemm_s),
        "weights_read", num(s->weights_read_s), "gemm_compute", num(s->gemm_compute_s),
        "attention", num(s->attention_s), "kv_read", num(s->kv_read_s), "attention_compute",
        num(s->attention_compute_s), "elementwise", num(s->elementwise_s), "moe_experts",
        num(s->moe_experts_s), "tp_collectives", num(s->tp_collectives_s), "moe_dispatch",
        num(s->moe_dispatch_s), "pp_transfer", num(s->pp_transfer_s), "host", num(s->host_s));
    return json_pack("{s:o,s:s,s:o,s:o,s:o,s:o,s:o}", "time_s", num(s->total_s), "bound",
                     serving_bound_names[s->bound], "tokens", num(s->tokens), "breakdown_s", b,
                     "weight_bytes", num(s->weight_bytes), "kv_bytes", num(s->kv_bytes), "flops",
                     num(s->flops));
}

static json_t *warnings_encode(unsigned bits)
{
    json_t *a = json_array();
    for (int i = 0; a && i < SERVING_WARN__COUNT; i++)
        if (bits & (1u << i))
            json_array_append_new(a, json_pack("{s:s,s:s}", "code", serving_warning_codes[i],
                                               "message", serving_warning_messages[i]));
    return a;
}

static json_t *pair_or_null(bool known, double in, double out)
{
    return known ? json_pack("{s:o,s:o}", "input", num(in), "output", num(out)) : json_null();
}

json_t *codec_serving_result_encode(const serving_request_t *r, const serving_result_t *o)
{
    json_t *curve = json_array();
    for (int i = 0; curve && i < o->num_curve; i++) {
        const serving_curve_point_t *c = &o->curve[i];
        json_array_append_new(
            curve, json_pack("{s:o,s:o,s:o,s:o,s:o}", "concurrency", num(c->concurrency),
                             "output_tokens_per_s_per_gpu", num(c->output_tokens_per_s_per_gpu),
                             "output_tokens_per_s_per_user", num(c->output_tokens_per_s_per_user),
                             "ttft_s", num(c->ttft_s), "tpot_s", num(c->tpot_s)));
    }
    json_t *engine = json_pack(
        "{s:s,s:I,s:I,s:b,s:o,s:s,s:s}", "name", serving_engine_names[r->engine],
        "max_batch_tokens", (json_int_t)o->max_batch_tokens, "max_batch_size",
        (json_int_t)o->max_batch_size, "chunked_prefill", o->chunked_prefill,
        "kv_memory_fraction", num(o->kv_memory_fraction), "prefill_attention_kernel",
        o->prefill_kernel ? o->prefill_kernel : "", "decode_attention_kernel",
        o->decode_kernel ? o->decode_kernel : "");
    json_t *memory = json_pack(
        "{s:o,s:o,s:o,s:o,s:o}", "weights_bytes", num(o->weight_bytes), "workspace_bytes",
        num(o->workspace_bytes), "kv_capacity_bytes", num(o->kv_capacity_bytes),
        "capacity_bytes", num(o->capacity_bytes), "kv_bytes_per_request",
        num(o->kv_bytes_per_request));
    /* the formats costed, which a request may have left to the model's checkpoint */
    json_t *out = json_pack("{s:b,s:o,s:s,s:s,s:o,s:o,s:o,s:o}", "fits_memory", o->fits_memory,
                            "warnings", warnings_encode(o->warnings), "weights_datatype",
                            serving_dtype_names[r->weights], "kv_datatype",
                            serving_dtype_names[r->kv], "engine", engine, "memory", memory,
                            "kv_cache_bytes_per_token", num(o->kv_cache_bytes_per_token),
                            "max_concurrency", num(o->max_concurrency));
    if (!out)
        return NULL;
    if (!o->fits_memory) {
        json_decref(curve);
        return out;
    }
    json_t *more = json_pack(
        "{s:o,s:o,s:b,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,"
        "s:o,s:o}",
        "concurrency", num(o->concurrency), "requests_per_s", num(o->requests_per_s),
        "saturated", o->saturated, "prefill", codec_serving_step_encode(&o->prefill), "decode",
        codec_serving_step_encode(&o->decode), "ttft_s", num(o->ttft_s), "ttft_p50_s", num(o->ttft_p50_s),
        "ttft_p99_s", num(o->ttft_p99_s), "tpot_s", num(o->tpot_s), "tokens_per_step",
        num(o->tokens_per_step), "output_tokens_per_s", num(o->output_tokens_per_s),
        "output_tokens_per_s_per_gpu", num(o->output_tokens_per_s_per_gpu),
        "output_tokens_per_s_per_user", num(o->output_tokens_per_s_per_user),
        "input_tokens_per_s_per_gpu", num(o->input_tokens_per_s_per_gpu), "gpus", num(o->gpus),
        "prefill_gpus", num(o->prefill_gpus), "decode_gpus", num(o->decode_gpus),
        "kv_transfer_s", num(o->kv_transfer_s), "dollars_per_million_tokens",
        pair_or_null(o->dollars_per_million_output > 0, o->dollars_per_million_input,
                     o->dollars_per_million_output),
        "energy_per_token_j",
        pair_or_null(o->joules_per_output_token > 0, o->joules_per_input_token,
                     o->joules_per_output_token),
        "curve", curve, "bound", json_string(serving_bound_names[o->decode.bound]));
    if (!more || json_object_update(out, more)) {
        json_decref(more);
        json_decref(out);
        return NULL;
    }
    json_decref(more);
    return out;
}

/* ---- the endpoint ---- */

static json_t *inference_normalize(const json_t *body, const codec_ctx_t *ctx,
                                   fathom_error_t *err)
{
    codec_serving_request_t req;
    if (codec_serving_request_decode(body, ctx->presets, &req, err))
        return NULL;
    json_t *out = codec_serving_request_encode(&req);
    if (!out)
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    return out;
}

static json_t *inference_evaluate(const json_t *normalized, const codec_ctx_t *ctx,
                                  fathom_error_t *err)
{
    codec_serving_request_t req;
    if (codec_serving_request_decode(normalized, ctx->presets, &req, err))
        return NULL;
    serving_result_t res;
    if (serving_estimate(&req.model, &req.system, &req.serving, &res, err))
        return NULL;
    json_t *out = codec_serving_result_encode(&req.serving, &res);
    if (!out)
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    return out;
}

const codec_endpoint_t codec_inference_endpoint = {"inference", "/v1/inference",
                                                   inference_normalize, inference_evaluate};

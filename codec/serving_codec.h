/* serving_codec.h — JSON ⇄ core/serving: POST /v1/inference (codec_inference_endpoint, in
 * endpoint.h), the serving system (Calculon's system object plus "float4_tflops", the price and
 * the power), and the report of the model against measured serving throughput
 * (presets/validation/inference_runs.json; `fathom validate --inference`, GET /v1/validation's
 * "inference" member).
 *
 * Request {"model": preset | object, "system": preset | object, "serving": {…}}; the members of
 * "serving", with their defaults (doc/serving.md):
 *   tensor_par 1, pipeline_par 1, expert_par 1, attention_data_par 1  (one replica has
 *     tensor_par × attention_data_par × pipeline_par GPUs);
 *   weights_datatype: the model's checkpoint_weights, bf16 unless it states another ("bf16",
 *     "fp8", "fp4" or its alias "nvfp4", "int4", "mxfp4" on a model with routed experts);
 *   kv_datatype: "fp8" with fp8 or fp4 weights, else "bf16";
 *   input_tokens, output_tokens REQUIRED: a number, {"mean", "spread"} (standard deviation),
 *     {"mean", "p90"} or {"low", "high"} (uniform; codec_serving_token_count);
 *   concurrency (requests in flight per replica) or requests_per_s (arrivals per replica), each
 *     > 0, not both (present counts, whatever the value), or neither: as many requests as fit
 *     (an offline benchmark); num_requests, an integer 1 … 1e6 (a finite run; not with
 *     concurrency);
 *   max_batch_tokens, max_batch_size, chunked_prefill, kv_memory_fraction: the engine's defaults
 *     (written out in the normalized request);
 *   prefix_cache_hit 0; speculative absent ({"method": "mtp"|"draft", "tokens", "acceptance",
 *     "model" for draft}); engine "vllm" ("trtllm", "vllm", "sglang");
 *   disaggregated absent ({"prefill": layout, "decode": layout, "kv_transfer_net": the system's
 *     last tier, "prefill_per_decode": > 0, absent the automatic ratio}); with it the layout
 *     members above are not given.
 * Every bad value is a 422 naming "serving.<member>". */
#ifndef FATHOM_SERVING_CODEC_H
#define FATHOM_SERVING_CODEC_H

#include <jansson.h>

#include "fathom_error.h"
#include "presets.h"
#include "serving.h"

typedef struct {
    fathom_model_t model;
    fathom_model_t draft; /* serving.speculative.model (method draft) */
    serving_system_t system;
    serving_request_t serving; /* serving.speculative.draft points at draft when used */
} codec_serving_request_t;

/* A serving system: a preset name or Calculon's system object, with the optional
 * "float4_tflops" (dense FP4 rate; absent: none), "price_per_gpu_hour" and "power_per_gpu_kw". */
int codec_serving_system_decode(const json_t *v, const char *path, const codec_presets_t *presets,
                                serving_system_t *out, fathom_error_t *err);
json_t *codec_serving_system_encode(const serving_system_t *s);

/* A token count at obj[key] (path names obj): a number of at least 1, or {"mean"} with at most
 * one of "spread" (a standard deviation) and "p90" (the 90th percentile, at least the mean, read
 * as a normal spread: spread = (p90 - mean) / codec_serving_z90()); spread 0 when neither is
 * given; or {"low", "high"}: lengths uniform between the two (a benchmark's random dataset),
 * mean (low + high)/2 and spread (high - low)/sqrt(12), *low and *high set (else 0). Both
 * endpoints take every form. 0, or -1 with err naming the field. */
int codec_serving_token_count(const json_t *obj, const char *path, const char *key, double *mean,
                              double *spread, double *low, double *high, fathom_error_t *err);
/* A token count as the decoder above reads it back. */
json_t *codec_serving_token_count_encode(double mean, double spread, double low, double high);
/* The standard normal's 90th percentile, z such that P(X <= mean + z spread) = 0.9. */
double codec_serving_z90(void);
/* The whole request {"model","system","serving"}; engine defaults are filled in. */
int codec_serving_request_decode(const json_t *body, const codec_presets_t *presets,
                                 codec_serving_request_t *out, fathom_error_t *err);
/* The "serving" member alone, for a model and system already decoded (the plan's requests). */
int codec_serving_decode(const json_t *v, const char *path, const fathom_model_t *m,
                         const serving_system_t *s, const codec_presets_t *presets,
                         serving_request_t *out, fathom_model_t *draft, fathom_error_t *err);
json_t *codec_serving_encode(const serving_request_t *r);
json_t *codec_serving_request_encode(const codec_serving_request_t *r);


/* The response of POST /v1/inference (new reference; NULL on allocation failure). */
json_t *codec_serving_result_encode(const serving_request_t *r, const serving_result_t *o);

/* One step's time, bound, breakdown and bytes (the answer's "prefill" and "decode"). */
json_t *codec_serving_step_encode(const serving_step_t *s);

/* trtllm-bench's dataset size (requests) for a fixed input/output pair as TensorRT-LLM's
 * performance-overview pages list it (1.0 and 1.1 revisions); 0 for a pair they do not list.
 * A validation row without "num_requests" takes it from here. */
double serving_validation_bench_requests(double isl, double osl);

/* The serving model against measured runs (rows in inference_runs.json's format):
 * {"source", "rows": [{"id", "model", "gpu", "layout", "isl", "osl", "weights", "kv",
 *   "measured_tokens_per_s_per_gpu", "estimated_tokens_per_s_per_gpu", "error_pct",
 *   "concurrency", "tpot_s", "bound"} or {…, "reason"}], "rows_estimated", "rows_total",
 *  "mean_abs_error_pct", "max_abs_error_pct", "dense": {…}, "moe": {…},
 *  "by_source": [{"source", "rows", "mean_abs_error_pct", "max_abs_error_pct"}],
 *  "loso": {…}}. NULL with err when rows is not an array. */
json_t *codec_serving_validation_rows(const json_t *rows, const char *source,
                                      const codec_presets_t *presets, fathom_error_t *err);
/* The same over the registry's validation/inference_runs.json (read from disk on each call:
 * 2.4 MB is not kept in memory by every process that loads presets). */
json_t *codec_serving_validation_report(const codec_presets_t *presets, fathom_error_t *err);
/* The report as a table (malloc'ed; NULL on allocation failure). */
char *codec_serving_validation_text(const json_t *report);

#endif

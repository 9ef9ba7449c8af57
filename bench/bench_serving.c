/* bench_serving.c — the serving figures the issue names: wall and CPU time of the serving plan
 * for Llama 3.1 70B (preset llama3-70B) at 20 requests/s, 2,000 prompt and 200 output tokens,
 * TTFT p99 ≤ 2 s and TPOT ≤ 50 ms over h100_sxm, h200 and b200 run as a serving_plan sweep on
 * 2 threads (target: under 10 s on 2 cores), the estimates it made, one POST /v1/inference estimate's
 * rate (estimates per second on one core), and the CPU time of the largest finite run a request
 * may ask for (a million requests with spread prompts and outputs, serving_offline.c).
 *
 * Usage: bench_serving [--presets DIR] */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "endpoint.h"
#include "json_parse.h"
#include "serving_plan_codec.h"
#include "sweep_kind.h"

static const char plan_json[] =
    "{\"kind\": \"serving_plan\", \"model\": \"llama3-70B\","
    " \"traffic\": {\"requests_per_s\": 20, \"input_tokens\": 2000, \"output_tokens\": 200},"
    " \"slo\": {\"ttft_ms_p99\": 2000, \"tpot_ms\": 50},"
    " \"systems\": [\"h100_sxm\", \"h200\", \"b200\"]}";
static const char infer_json[] =
    "{\"model\": \"llama3-70B\", \"system\": \"h100_sxm\", \"serving\": {\"tensor_par\": 4,"
    " \"weights_datatype\": \"fp8\", \"input_tokens\": 2000, \"output_tokens\": 200,"
    " \"requests_per_s\": 5}}";
static const char finite_json[] =
    "{\"model\": \"llama3-8B\", \"system\": \"h200\", \"serving\": {\"engine\": \"trtllm\","
    " \"input_tokens\": {\"mean\": 202, \"spread\": 100},"
    " \"output_tokens\": {\"mean\": 214, \"spread\": 150}, \"num_requests\": 1000000}}";

/* CPU seconds per estimate of the inference endpoint on this body, over n estimates. */
static double seconds_per_estimate(const char *text, codec_ctx_t *ctx, int n)
{
    json_error_t jerr;
    fathom_error_t err;
    fathom_error_clear(&err);
    json_t *body = json_loads(text, 0, &jerr);
    const codec_endpoint_t *ep = codec_endpoint_by_name("inference");
    json_t *norm = body ? ep->normalize(body, ctx, &err) : NULL;
    const double c0 = bench_clock_s(CLOCK_PROCESS_CPUTIME_ID);
    for (int k = 0; norm && k < n; k++)
        json_decref(ep->evaluate(norm, ctx, &err));
    const double c1 = bench_clock_s(CLOCK_PROCESS_CPUTIME_ID);
    json_decref(norm);
    json_decref(body);
    if (err.code != FATHOM_E_OK)
        fprintf(stderr, "inference: %s (%s)\n", err.message, err.field);
    return (c1 - c0) / n;
}

int main(int argc, char **argv)
{
    const char *presets_dir = FATHOM_DATADIR "/presets";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--presets") == 0 && i + 1 < argc) {
            presets_dir = argv[++i];
        } else {
            fprintf(stderr, "usage: %s [--presets DIR]\n", argv[0]);
            return 2;
        }
    }
    codec_presets_t *presets = bench_presets("bench_serving", presets_dir);
    if (!presets)
        return 1;
    fathom_error_t err;
    fathom_error_clear(&err);
    json_error_t jerr;
    json_t *body = json_loads(plan_json, 0, &jerr);
    const double w0 = bench_clock_s(CLOCK_MONOTONIC), c0 = bench_clock_s(CLOCK_PROCESS_CPUTIME_ID);
    codec_ctx_t ctx = {presets};
    const sweep_limits_t unlimited = {UINT64_MAX, UINT64_MAX};
    const sweep_kind_t *kind = NULL;
    uint64_t size = 0;
    json_t *spec = codec_sweep_normalize(body, &ctx, &unlimited, &kind, &size, &err);
    json_t *doc = spec ? codec_sweep_run(kind, spec, &ctx, 2, NULL, NULL, NULL, 0, &err) : NULL;
    json_t *plan = doc ? json_incref(json_object_get(doc, "serving_plan")) : NULL;
    json_decref(doc);
    json_decref(spec);
    const double w1 = bench_clock_s(CLOCK_MONOTONIC), c1 = bench_clock_s(CLOCK_PROCESS_CPUTIME_ID);
    if (!plan) {
        fprintf(stderr, "plan: %s (%s)\n", err.message, err.field);
        return 1;
    }
    long evals = 0;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(plan, "candidates"), i, c)
        evals += (long)json_integer_value(json_object_get(c, "evaluations"));
    printf("serving plan (2 threads): %zu candidates, %ld estimates, wall %.3f s, cpu %.3f s "
           "(target < 10 s on 2 cores)\n",
           json_array_size(json_object_get(plan, "candidates")), evals, w1 - w0, c1 - c0);
    json_decref(plan);
    json_decref(body);

    printf("POST /v1/inference (llama3-70B, h100_sxm TP4 FP8, 5 requests/s, curve included): "
           "%.0f estimates/s on one core\n",
           1 / seconds_per_estimate(infer_json, &ctx, 200));
    printf("POST /v1/inference, a finite run of 1,000,000 requests (llama3-8B, h200, 202 ± 100 "
           "in, 214 ± 150 out, queued at once): %.3f s of CPU\n",
           seconds_per_estimate(finite_json, &ctx, 1));
    codec_presets_free(presets);
    return 0;
}

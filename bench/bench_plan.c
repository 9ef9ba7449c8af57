/* bench_plan.c — wall time of the cluster plan the issue names: Llama 3 70B (preset llama3-70B)
 * on 6 GPU types × 12 counts (h100_sxm, h200, h800, b200, gb200_nvl72, mi300x at 512 to 6,144
 * GPUs in steps of 512), Chinchilla tokens, a 4M-token batch (--auto: the plan's default batch,
 * DeepSeek LLM's law, rounded to each layout) and the plan's default search space
 * (search_plan_codec.h), run as `fathom plan` runs it (its sweep kind, codec_sweep_run): every
 * candidate a search on one of
 * --threads threads (2 by default, the development machine's cores).
 *
 * Usage: bench_plan [--threads N] [--presets DIR] [--auto]
 * Prints the wall and CPU time, the candidates that fit and the llm_estimate calls made; cpu /
 * threads is what the wall time would be with the cores to itself on a shared machine. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "search_plan_codec.h"
#include "sweep_kind.h"

/* %s: the batch, "4194304" (4M tokens, the figure quoted before plans chose their batch) or
 * "\"auto\"" (the plan's default: DeepSeek LLM's law for the run, ~17M tokens here) */
static const char plan_json[] =
    "{\"kind\": \"plan\", \"model\": \"llama3-70B\", \"tokens\": \"chinchilla\","
    " \"batch_tokens\": %s,"
    " \"systems\": [\"h100_sxm\", \"h200\", \"h800\", \"b200\", \"gb200_nvl72\", \"mi300x\"],"
    " \"gpu_counts\": {\"from\": 512, \"to\": 6144, \"step\": 512}}";

int main(int argc, char **argv)
{
    int threads = 2;
    const char *presets_dir = FATHOM_DATADIR "/presets";
    const char *batch = "4194304";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            threads = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--auto") == 0) {
            batch = "\"auto\"";
        } else if (strcmp(argv[i], "--presets") == 0 && i + 1 < argc) {
            presets_dir = argv[++i];
        } else {
            fprintf(stderr, "usage: %s [--threads N] [--presets DIR] [--auto]\n", argv[0]);
            return 2;
        }
    }
    codec_presets_t *presets = bench_presets("bench_plan", presets_dir);
    if (!presets)
        return 1;
    fathom_error_t err;
    fathom_error_clear(&err);
    codec_ctx_t ctx = {presets};
    char text[sizeof plan_json + 16];
    snprintf(text, sizeof text, plan_json, batch);
    json_t *body = json_loads(text, 0, NULL);
    uint64_t size = 0;
    json_t *norm = body ? codec_plan_normalize(body, &ctx, UINT64_MAX, &size, &err) : NULL;
    double t0 = bench_clock_s(CLOCK_MONOTONIC), c0 = bench_clock_s(CLOCK_PROCESS_CPUTIME_ID);
    json_t *result = norm ? codec_sweep_run(&codec_plan_kind, norm, &ctx, threads, NULL, NULL,
                                            NULL, 0, &err)
                          : NULL;
    const json_t *plan = json_object_get(result, "plan");
    double wall = bench_clock_s(CLOCK_MONOTONIC) - t0, cpu = bench_clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
    int rc = 1;
    if (plan) {
        size_t i, fit = 0;
        unsigned long long estimates = 0;
        json_t *c;
        json_array_foreach(json_object_get(plan, "candidates"), i, c)
        {
            fit += json_is_true(json_object_get(c, "fits"));
            estimates += (unsigned long long)json_integer_value(
                json_object_get(json_object_get(c, "search"), "estimated"));
        }
        printf("plan llama3-70B, 6 GPU types x 12 counts, batch %s: threads=%d wall=%.2f s "
               "cpu=%.2f s candidates=%llu (fit %zu, pareto %zu) estimates=%llu\n",
               batch, threads, wall, cpu, (unsigned long long)size, fit,
               json_array_size(json_object_get(plan, "pareto")), estimates);
        rc = 0;
    } else {
        fprintf(stderr, "plan: %s %s\n", err.field, err.message);
    }
    json_decref(result);
    json_decref(norm);
    json_decref(body);
    codec_presets_free(presets);
    return rc;
}

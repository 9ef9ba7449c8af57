/* bench_search.c — wall time and evaluation rate of the optimal-execution search on the two
 * searches issue 4 names: the exhaustive gpt3-175B search on 1024 a100_80g GPUs (max batch 1024,
 * float16; 6,985,920 executions) and Calculon's README example (turing-530B on 5128 a100_80g,
 * max batch 2520, float16, -m). Calculon does about 135 executions per second per core.
 *
 * Then Llama 3.1 405B on 16,384 h100_sxm (max batch 2048 sequences of 8192 tokens, bfloat16):
 * "llama405" over Calculon's dimensions with the modern block's uneven pipeline splits, and
 * "llama405-free" with context_par, zero_stage, attention_kernel and fp8 all free, and
 * "llama405-fewest": Calculon's dimensions with full recompute of the fewest blocks that fit
 * (options.recompute_blocks "fewest", a bisection per fitting full-recompute execution).
 *
 * Then DeepSeek-V3 on 1024 h100_sxm (max batch 1024, bfloat16, fused attention): "deepseek"
 * over Calculon's dimensions and "deepseek-modules" with selective recompute of its modules
 * where an execution does not fit (options.recompute_modules "fewest", up to three more
 * estimates per such execution); neither runs by default (minutes).
 *
 * Usage: bench_search [--threads N] [--presets DIR]
 *        [--only gpt3|turing|llama405|llama405-free|llama405-fewest|deepseek|deepseek-modules]
 *        [--no-prune]
 * "executions/s" counts every execution the search tried (Calculon's "calcs/sec"); "estimates"
 * is how many of them needed llm_estimate (the rest were known bad: see core/search/search.c).
 * cpu is the process's CPU time: on a shared machine, cpu / threads is what the wall time would
 * be with the cores to itself. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "json_read.h"
#include "search_codec.h"

static int bench(const codec_ctx_t *ctx, const char *label, const char *request_json, int threads,
                 bool no_prune)
{
    json_error_t jerr;
    fathom_error_t err;
    fathom_error_clear(&err);
    json_t *body = json_loads(request_json, 0, &jerr);
    search_request_t req;
    search_result_t res;
    if (!body || codec_search_decode(body, ctx, &req, &err)) {
        fprintf(stderr, "%s: bad request: %s %s\n", label, err.field, err.message);
        json_decref(body);
        return -1;
    }
    json_decref(body);
    if (no_prune)
        req.mode = SEARCH_EVALUATE_ALL;
    if (search_result_init(&res, req.options.top_n, &err))
        return -1;
    double t0 = bench_clock_s(CLOCK_MONOTONIC), c0 = bench_clock_s(CLOCK_PROCESS_CPUTIME_ID);
    int rc = codec_search_run_request(&req, threads, NULL, NULL, NULL, &res, &err);
    double wall = bench_clock_s(CLOCK_MONOTONIC) - t0;
    double cpu = bench_clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
    if (rc) {
        fprintf(stderr, "%s: %s\n", label, err.message);
        search_result_close(&res);
        return -1;
    }
    printf("%-44s threads=%d wall=%.3f s cpu=%.3f s executions=%llu (good %llu, bad %llu) "
           "executions/s=%.0f (%.0f per thread, %.0f per cpu-second) estimates=%llu pruned=%llu "
           "best_sample_rate=%.10g\n",
           label, threads, wall, cpu, (unsigned long long)res.total, (unsigned long long)res.good,
           (unsigned long long)res.bad, (double)res.total / wall,
           (double)res.total / wall / threads, (double)res.total / cpu,
           (unsigned long long)res.estimated, (unsigned long long)res.pruned,
           res.n_best ? res.best[0].result.stats.sample_rate : 0.0);
    search_result_close(&res);
    return 0;
}

/* The searches, by --only name; the ones not run by default take minutes. */
typedef struct {
    const char *name, *label, *request;
    bool by_default;
} search_case_t;

static const search_case_t searches[] = {
    {"gpt3", "gpt3-175B 1024 a100_80g batch 1024 exhaustive",
     "{\"model\":\"gpt3-175B\",\"system\":\"a100_80g\",\"num_procs\":1024,"
     "\"max_batch_size\":1024,\"datatype\":\"float16\"}",
     true},
    {"turing", "turing-530B 5128 a100_80g batch 2520 -m",
     "{\"model\":\"turing-530B\",\"system\":\"a100_80g\",\"num_procs\":5128,"
     "\"max_batch_size\":2520,\"datatype\":\"float16\",\"options\":{\"mbs_break\":true}}",
     true},
    {"llama405", "llama3.1-405B 16384 h100_sxm batch 2048",
     "{\"model\":\"llama3.1-405B\",\"system\":\"h100_sxm\",\"num_procs\":16384,"
     "\"max_batch_size\":2048,\"datatype\":\"bfloat16\"}",
     true},
    {"llama405-fewest", "llama3.1-405B 16384 h100_sxm batch 2048, fewest recompute blocks",
     "{\"model\":\"llama3.1-405B\",\"system\":\"h100_sxm\",\"num_procs\":16384,"
     "\"max_batch_size\":2048,\"datatype\":\"bfloat16\","
     "\"options\":{\"recompute_blocks\":\"fewest\"}}",
     true},
    {"llama405-free", "llama3.1-405B 16384 h100_sxm batch 2048, every dimension free",
     "{\"model\":\"llama3.1-405B\",\"system\":\"h100_sxm\",\"num_procs\":16384,"
     "\"max_batch_size\":2048,\"datatype\":\"bfloat16\",\"options\":{"
     "\"attention_kernel\":\"all\",\"fp8\":\"all\",\"context_par\":\"all\","
     "\"zero_stage\":\"all\"}}",
     false},
    {"deepseek", "deepseek-v3 1024 h100_sxm batch 1024, fused",
     "{\"model\":\"deepseek-v3\",\"system\":\"h100_sxm\",\"num_procs\":1024,"
     "\"max_batch_size\":1024,\"datatype\":\"bfloat16\","
     "\"options\":{\"attention_kernel\":\"fused\"}}",
     false},
    {"deepseek-modules", "deepseek-v3 1024 h100_sxm batch 1024, fused, fewest recompute modules",
     "{\"model\":\"deepseek-v3\",\"system\":\"h100_sxm\",\"num_procs\":1024,"
     "\"max_batch_size\":1024,\"datatype\":\"bfloat16\","
     "\"options\":{\"attention_kernel\":\"fused\",\"recompute_modules\":\"fewest\"}}",
     false},
};

int main(int argc, char **argv)
{
    int threads = 2;
    const char *presets_dir = FATHOM_DATADIR "/presets";
    const char *only = NULL;
    bool no_prune = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--presets") == 0 && i + 1 < argc)
            presets_dir = argv[++i];
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            only = argv[++i];
        else if (strcmp(argv[i], "--no-prune") == 0)
            no_prune = true;
        else {
            fprintf(stderr, "usage: %s [--threads N] [--presets DIR] [--only gpt3|turing|"
                            "llama405|llama405-free|llama405-fewest|deepseek|deepseek-modules] "
                            "[--no-prune]\n", argv[0]);
            return 2;
        }
    }
    codec_presets_t *presets = bench_presets("bench_search", presets_dir);
    if (!presets)
        return 1;
    codec_ctx_t ctx = {presets};
    int rc = 0, ran = 0;
    for (size_t k = 0; k < sizeof searches / sizeof searches[0]; k++) {
        const search_case_t *c = &searches[k];
        if (only ? strcmp(only, c->name) == 0 : c->by_default) {
            rc |= bench(&ctx, c->label, c->request, threads, no_prune);
            ran++;
        }
    }
    if (!ran)
        fprintf(stderr, "--only %s: no such search\n", only);
    codec_presets_free(presets);
    return !ran ? 2 : rc ? 1 : 0;
}

/* bench_estimate.c — how many full LLM step estimates (llm_estimate: all 96 statistics and the
 * memory tiers) one core makes per second.
 *
 * Builds a few thousand different executions (tensor/pipeline/data parallelism, microbatch,
 * recompute, TP communication and overlap, sharding, DP overlap, offload) of three Calculon
 * models on two systems, keeps those the model accepts, then evaluates them all repeatedly on
 * one thread and prints evaluations per second and the wall time. Then the same for Llama 3 70B
 * on h100_sxm with every modern feature on (grouped-query attention, SwiGLU, RMSNorm, embedding
 * and output layers, fused attention, FP8, sequence parallelism).
 *
 *   bench_estimate [PRESETS_DIR] [ROUNDS]     (defaults: FATHOM_DATADIR/presets, 200) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fathom_error.h"
#include "llm.h"
#include "llm_codec.h"
#include "model_codec.h"
#include "presets.h"

#define MAX_CASES 8192

typedef struct {
    int model, system;
    llm_execution_t e;
} bench_case_t;

static double now(clockid_t clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Keeps e as case n (bumping n) when the model accepts it on system `sys`. */
static void keep_if_accepted(const fathom_model_t *m, const llm_system_t *systems, int sys,
                             const llm_execution_t *e, bench_case_t *cases, int *n)
{
    llm_result_t r;
    if (*n >= MAX_CASES || llm_estimate(m, &systems[sys], e, &r, NULL))
        return;
    cases[*n].model = 0;
    cases[*n].system = sys;
    cases[*n].e = *e;
    (*n)++;
}

/* Evaluates every case `rounds` times on this thread and prints the rate. */
static void time_cases(const char *label, const fathom_model_t *models,
                       const llm_system_t *systems, const bench_case_t *cases, int n, int tried,
                       int rounds)
{
    llm_result_t r;
    double checksum = 0;
    double w0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);
    for (int k = 0; k < rounds; k++)
        for (int i = 0; i < n; i++) {
            llm_estimate(&models[cases[i].model], &systems[cases[i].system], &cases[i].e, &r,
                         NULL);
            checksum += r.stats.total_time;
        }
    double wall = now(CLOCK_MONOTONIC) - w0, cpu = now(CLOCK_PROCESS_CPUTIME_ID) - c0;
    double evals = (double)n * rounds;
    printf("bench_estimate (%s): %d different executions (%d generated), %d rounds, %.0f "
           "evaluations\n",
           label, n, tried, rounds, evals);
    printf("wall time %.3f s, cpu time %.3f s (1 thread)\n", wall, cpu);
    printf("%.0f evaluations per second per core (%.2f us each)\n", evals / cpu, cpu / evals * 1e6);
    printf("checksum %.6g\n", checksum);
}

/* The model preset `name` from the presets in dir; -1 (said on stderr) when it cannot be read. */
static int preset_model(const char *dir, const char *name, fathom_model_t *m)
{
    fathom_error_t err;
    codec_presets_t *presets = codec_presets_load(dir, &err);
    json_t *v = json_string(name);
    int rc = !presets || codec_model_decode(v, "model", presets, m, &err);
    json_decref(v);
    codec_presets_free(presets);
    if (rc)
        fprintf(stderr, "bench_estimate: %s\n", err.message);
    return rc ? -1 : 0;
}

int main(int argc, char **argv)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", argc > 1 ? argv[1] : FATHOM_DATADIR "/presets");
    int rounds = argc > 2 ? atoi(argv[2]) : 200;
    if (rounds < 1)
        rounds = 1;
    static const char *const model_names[] = {"megatron-22B", "gpt3-175B", "megatron-1T"};
    static const char *const system_names[] = {"a100_80g", "h100_sxm"};
    fathom_model_t models[3];
    llm_system_t systems[2];
    fathom_error_t err;
    fathom_error_clear(&err);
    codec_presets_t *presets = codec_presets_load(dir, &err);
    if (!presets) {
        fprintf(stderr, "bench_estimate: %s: %s\n", dir, err.message);
        return 1;
    }
    for (int i = 0; i < 3; i++) {
        json_t *name = json_string(model_names[i]);
        int rc = codec_model_decode(name, "model", presets, &models[i], &err);
        json_decref(name);
        if (rc) {
            fprintf(stderr, "bench_estimate: %s\n", err.message);
            return 1;
        }
    }
    for (int i = 0; i < 2; i++) {
        json_t *name = json_string(system_names[i]);
        int rc = codec_llm_system_decode(name, "system", presets, &systems[i], &err);
        json_decref(name);
        if (rc) {
            fprintf(stderr, "bench_estimate: %s\n", err.message);
            return 1;
        }
    }
    codec_presets_free(presets);

    static bench_case_t cases[MAX_CASES];
    int n = 0, tried = 0;
    static const int64_t procs[] = {64, 512, 4096};
    static const int64_t tps[] = {1, 2, 4, 8};
    static const int64_t pps[] = {1, 2, 4, 8, 16};
    static const int64_t mbss[] = {1, 2, 4};
    llm_result_t r;
    for (int mi = 0; mi < 3 && n < MAX_CASES; mi++)
        for (int si = 0; si < 2; si++)
            for (size_t a = 0; a < 3; a++)
                for (size_t t = 0; t < 4; t++)
                    for (size_t p = 0; p < 5; p++)
                        for (size_t b = 0; b < 3; b++)
                            for (int rec = 0; rec < 3; rec++)
                                for (int comm = 0; comm < 3; comm++)
                                    for (int ovl = 0; ovl < 2; ovl++) {
                                        if (n >= MAX_CASES)
                                            break;
                                        llm_execution_t e = {0};
                                        e.num_procs = procs[a];
                                        e.tensor_par = tps[t];
                                        e.pipeline_par = pps[p];
                                        if (e.num_procs % (e.tensor_par * e.pipeline_par))
                                            continue;
                                        e.data_par = e.num_procs / (e.tensor_par * e.pipeline_par);
                                        e.tensor_par_net = 0;
                                        e.pipeline_par_net = 1;
                                        e.data_par_net = 1;
                                        e.batch_size = 4096;
                                        e.microbatch_size = mbss[b];
                                        e.datatype = LLM_DT_FLOAT16;
                                        e.fused_activation = (t + b) % 2;
                                        e.attention_type = LLM_ATTN_MULTIHEAD;
                                        e.activation_recompute = (llm_recompute_t)rec;
                                        e.pipeline_interleaving = e.pipeline_par > 1 && p % 2 ? 2 : 1;
                                        e.optimizer_sharding = e.data_par > 1 && (a + p) % 2;
                                        e.tensor_par_comm_type = (llm_tp_comm_t)comm;
                                        e.tensor_par_overlap = ovl && e.tensor_par > 1
                                                                   ? LLM_TP_OVERLAP_PIPE
                                                                   : LLM_TP_OVERLAP_NONE;
                                        e.data_par_overlap = e.data_par > 1 && (b % 2);
                                        e.weight_offload = (rec + t) % 4 == 0;
                                        e.training = true;
                                        tried++;
                                        if (llm_estimate(&models[mi], &systems[si], &e, &r, NULL))
                                            continue;
                                        cases[n].model = mi;
                                        cases[n].system = si;
                                        cases[n].e = e;
                                        n++;
                                    }
    if (n == 0) {
        fprintf(stderr, "bench_estimate: no feasible execution\n");
        return 1;
    }

    time_cases("Calculon's models", models, systems, cases, n, tried, rounds);

    /* Llama 3 70B with every modern feature, over the layouts of 64 to 4096 H100s. */
    fathom_model_t llama;
    if (preset_model(dir, "llama3-70B", &llama))
        return 1;
    models[0] = llama;
    n = tried = 0;
    for (size_t a = 0; a < 3; a++)
        for (size_t t = 0; t < 4; t++)
            for (size_t p = 0; p < 5; p++)
                for (size_t b = 0; b < 3; b++)
                    for (int rec = 0; rec < 3; rec++)
                        for (int vp = 1; vp <= 2; vp++) {
                            llm_execution_t e = {0};
                            e.num_procs = procs[a];
                            e.tensor_par = tps[t];
                            e.pipeline_par = pps[p];
                            if (e.num_procs % (e.tensor_par * e.pipeline_par))
                                continue;
                            e.data_par = e.num_procs / (e.tensor_par * e.pipeline_par);
                            e.tensor_par_net = 0;
                            e.pipeline_par_net = e.data_par_net = 1;
                            e.batch_size = 4096;
                            e.microbatch_size = mbss[b];
                            e.datatype = LLM_DT_BFLOAT16;
                            e.fp8 = true;
                            e.attention_kernel = LLM_ATTN_KERNEL_FUSED;
                            e.activation_recompute = (llm_recompute_t)rec;
                            e.pipeline_interleaving = e.pipeline_par > 1 ? vp : 1;
                            e.optimizer_sharding = e.data_par > 1;
                            e.data_par_overlap = e.data_par > 1;
                            e.tensor_par_comm_type =
                                e.tensor_par > 1 ? LLM_TP_COMM_RS_AG : LLM_TP_COMM_AR;
                            e.seq_par_ag_redo = e.tensor_par > 1 && rec != LLM_RECOMPUTE_FULL;
                            e.training = true;
                            tried++;
                            keep_if_accepted(&llama, systems, 1, &e, cases, &n);
                        }
    if (n == 0) {
        fprintf(stderr, "bench_estimate: no feasible Llama 3 70B execution\n");
        return 1;
    }
    time_cases("Llama 3 70B, every modern feature", models, systems, cases, n, tried, rounds);

    /* DeepSeek-V3 (MLA, 256 experts, MTP) over layouts of 256 to 2048 H100s with expert
     * parallelism 8 to 64 (the all-to-all on NVLink while EP fits in 8, else the node tier). */
    fathom_model_t ds;
    if (preset_model(dir, "deepseek-v3", &ds))
        return 1;
    models[0] = ds;
    n = tried = 0;
    static const int64_t ds_procs[] = {256, 512, 1024, 2048}, ds_tps[] = {1, 2},
                         ds_pps[] = {8, 16}, ds_eps[] = {8, 16, 32, 64};
    for (size_t a = 0; a < 4; a++)
        for (size_t t = 0; t < 2; t++)
            for (size_t p = 0; p < 2; p++)
                for (size_t x = 0; x < 4; x++)
                    for (int rec = 0; rec < 3; rec++)
                        for (int ov = 0; ov < 2; ov++) {
                            llm_execution_t e = {0};
                            e.num_procs = ds_procs[a];
                            e.tensor_par = ds_tps[t];
                            e.pipeline_par = ds_pps[p];
                            e.data_par = e.num_procs / (e.tensor_par * e.pipeline_par);
                            e.expert_par = ds_eps[x];
                            e.expert_tensor_par = 1;
                            e.expert_par_net = ds_eps[x] <= 8 ? 0 : 1;
                            e.moe_load_imbalance = 1;
                            e.moe_a2a_overlap = ov;
                            e.tensor_par_net = 0;
                            e.pipeline_par_net = e.data_par_net = 1;
                            e.batch_size = 4096;
                            e.microbatch_size = 1;
                            e.datatype = LLM_DT_BFLOAT16;
                            e.fp8 = true;
                            e.attention_kernel = LLM_ATTN_KERNEL_FUSED;
                            e.activation_recompute = (llm_recompute_t)rec;
                            e.pipeline_interleaving = 1;
                            e.optimizer_sharding = true;
                            e.data_par_overlap = true;
                            e.tensor_par_comm_type =
                                e.tensor_par > 1 ? LLM_TP_COMM_RS_AG : LLM_TP_COMM_AR;
                            e.seq_par_ag_redo = e.tensor_par > 1 && rec != LLM_RECOMPUTE_FULL;
                            e.training = true;
                            tried++;
                            keep_if_accepted(&ds, systems, 1, &e, cases, &n);
                        }
    if (n == 0) {
        fprintf(stderr, "bench_estimate: no feasible DeepSeek-V3 execution\n");
        return 1;
    }
    time_cases("DeepSeek-V3, MLA, 256 experts, expert parallelism", models, systems, cases, n,
               tried, rounds);
    return 0;
}

/* bench_estimate.c — how many full LLM step estimates (llm_estimate: all 96 statistics and the
 * memory tiers) one core makes per second.
 *
 * Builds a few thousand different executions (tensor/pipeline/data parallelism, microbatch,
 * recompute, TP communication and overlap, sharding, DP overlap, offload) of three Calculon
 * models on two systems, keeps those the model accepts, then evaluates them all repeatedly on
 * one thread and prints evaluations per second and the wall time. Then the same for Llama 3 70B
 * on h100_sxm with every modern feature on (grouped-query attention, SwiGLU, RMSNorm, embedding
 * and output layers, fused attention, FP8, sequence parallelism), for DeepSeek-V3, and for
 * Llama 3 as torchtitan runs it (eager and compiled passes, torchao Float8, async TP, context
 * parallelism, per-op checkpointing, host launches) on the 500 W H100 variant. Each set
 * runs twice: llm_estimate alone, then llm_estimate_memo with one memo as the search's workers
 * keep one (the layer tables shared between executions costed once); the two checksums agree.
 *
 *   bench_estimate [PRESETS_DIR] [ROUNDS] [SET [memo|plain]]
 *                                (defaults: FATHOM_DATADIR/presets, 200, every set, both runs)
 * SET, a word of a set's label ("DeepSeek-V3", "torchtitan"), times that set alone, "memo" its
 * memo run alone and "plain" its llm_estimate run alone: what callgrind counts per estimate
 * (doc/moe.md, "Evaluation speed"). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
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

/* The cases generated so far: those the model accepts, and how many were tried. */
typedef struct {
    bench_case_t cases[MAX_CASES];
    int n, tried;
} case_set_t;

/* Counts e as tried and keeps it when models[model] accepts it on systems[sys]. */
static void keep_if_accepted(const fathom_model_t *models, int model, const llm_system_t *systems,
                             int sys, const llm_execution_t *e, case_set_t *set)
{
    llm_result_t r;
    set->tried++;
    if (set->n >= MAX_CASES || llm_estimate(&models[model], &systems[sys], e, &r, NULL))
        return;
    set->cases[set->n].model = model;
    set->cases[set->n].system = sys;
    set->cases[set->n].e = *e;
    set->n++;
}

/* Evaluates every case `rounds` times on this thread and prints the rate. */
static void time_cases(const char *label, const fathom_model_t *models,
                       const llm_system_t *systems, const bench_case_t *cases, int n, int tried,
                       int rounds, llm_memo_t *memo)
{
    llm_result_t r;
    double checksum = 0;
    /* The rounds run in up to SLICES slices, each timed on its own: on a shared machine another
     * tenant's work lands in some slices and not others, so the fastest slice is the figure of
     * the code (the lower bound timeit's documentation recommends reading) and the median says
     * how much the machine took away. */
    enum { SLICES = 10 };
    const int slices = rounds < SLICES ? rounds : SLICES;
    double slice_rate[SLICES];
    double w0 = bench_clock_s(CLOCK_MONOTONIC), c0 = bench_clock_s(CLOCK_PROCESS_CPUTIME_ID);
    for (int j = 0, k = 0; j < slices; j++) {
        const int end = (int)((long)rounds * (j + 1) / slices);
        const double s0 = bench_clock_s(CLOCK_PROCESS_CPUTIME_ID);
        const int first = k;
        for (; k < end; k++)
            for (int i = 0; i < n; i++) {
                llm_estimate_memo(&models[cases[i].model], &systems[cases[i].system],
                                  &cases[i].e, memo, &r, NULL);
                checksum += r.stats.total_time;
            }
        slice_rate[j] = (double)n * (k - first) / (bench_clock_s(CLOCK_PROCESS_CPUTIME_ID) - s0);
    }
    double wall = bench_clock_s(CLOCK_MONOTONIC) - w0, cpu = bench_clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
    double evals = (double)n * rounds;
    qsort(slice_rate, (size_t)slices, sizeof slice_rate[0], bench_descending);
    printf("bench_estimate (%s%s): %d different executions (%d generated), %d rounds, %.0f "
           "evaluations\n",
           label, memo ? ", with a memo" : "", n, tried, rounds, evals);
    printf("wall time %.3f s, cpu time %.3f s (1 thread)\n", wall, cpu);
    printf("%.0f evaluations per second per core (%.2f us each)\n", evals / cpu, cpu / evals * 1e6);
    printf("by slice of the rounds (%d): fastest %.0f, median %.0f evaluations per second per "
           "core\n",
           slices, slice_rate[0], slice_rate[slices / 2]);
    printf("checksum %.17g\n", checksum);
}

/* The model (or, with system set, the system) preset `name`; -1 (said on stderr) when it
 * cannot be read. */
static int load_preset(const codec_presets_t *presets, const char *name, fathom_model_t *model,
                       llm_system_t *system)
{
    fathom_error_t err;
    fathom_error_clear(&err);
    json_t *v = json_string(name);
    int rc = system ? codec_llm_system_decode(v, "system", presets, system, &err)
                    : codec_model_decode(v, "model", presets, model, &err);
    json_decref(v);
    if (rc)
        fprintf(stderr, "bench_estimate: %s\n", err.message);
    return rc ? -1 : 0;
}

/* A system given as a preset with overrides (doc/stacks.md, GPU variants). */
static int load_variant(const codec_presets_t *presets, const char *json, llm_system_t *system)
{
    fathom_error_t err;
    fathom_error_clear(&err);
    json_t *v = json_loads(json, 0, NULL);
    int rc = v ? codec_llm_system_decode(v, "system", presets, system, &err) : -1;
    json_decref(v);
    if (rc)
        fprintf(stderr, "bench_estimate: %s\n", v ? err.message : "bad variant");
    return rc ? -1 : 0;
}

/* The torchtitan benchmarks' H100 (Grand Teton: 96 GB HBM2e at 2.4 TB/s, 500 W). */
#define GRAND_TETON_H100                                                                           \
    "{\"preset\": \"h100_sxm\", \"memory_gib\": 96, \"memory_gbps\": 2400, "                       \
    "\"power_limit_w\": 500}"

static const int64_t procs[] = {64, 512, 4096};
static const int64_t tps[] = {1, 2, 4, 8};
static const int64_t pps[] = {1, 2, 4, 8, 16};
static const int64_t mbss[] = {1, 2, 4};

/* Lays n GPUs out as tp x pp x dp, dp what is left (false when tp x pp does not divide n):
 * tensor parallelism on the node's NVLink (network 0), pipeline and data on the next tier. */
static bool layout(llm_execution_t *e, int64_t n, int64_t tp, int64_t pp)
{
    e->num_procs = n;
    e->tensor_par = tp;
    e->pipeline_par = pp;
    if (n % (tp * pp))
        return false;
    e->data_par = n / (tp * pp);
    e->tensor_par_net = 0;
    e->pipeline_par_net = e->data_par_net = 1;
    return true;
}

/* Megatron's H100 recipe the Llama and DeepSeek sets share: BF16 with FP8 GEMMs, the fused
 * attention kernel, reduce-scatter/all-gather tensor parallelism (sequence parallel) that
 * redoes its all-gather in the backward pass unless the whole block is recomputed. */
static void megatron_fp8(llm_execution_t *e, llm_recompute_t rec)
{
    e->datatype = LLM_DT_BFLOAT16;
    e->fp8 = true;
    e->attention_kernel = LLM_ATTN_KERNEL_FUSED;
    e->activation_recompute = rec;
    e->tensor_par_comm_type = e->tensor_par > 1 ? LLM_TP_COMM_RS_AG : LLM_TP_COMM_AR;
    e->seq_par_ag_redo = e->tensor_par > 1 && rec != LLM_RECOMPUTE_FULL;
    e->training = true;
}

/* Calculon's three models on both systems, over Calculon's execution fields. */
static void calculon_cases(const fathom_model_t *models, const llm_system_t *systems,
                           case_set_t *set)
{
    for (int mi = 0; mi < 3 && set->n < MAX_CASES; mi++)
        for (int si = 0; si < 2; si++)
            for (size_t a = 0; a < 3; a++)
                for (size_t t = 0; t < 4; t++)
                    for (size_t p = 0; p < 5; p++)
                        for (size_t b = 0; b < 3; b++)
                            for (int rec = 0; rec < 3; rec++)
                                for (int comm = 0; comm < 3; comm++)
                                    for (int ovl = 0; ovl < 2; ovl++) {
                                        if (set->n >= MAX_CASES)
                                            break;
                                        llm_execution_t e = {0};
                                        if (!layout(&e, procs[a], tps[t], pps[p]))
                                            continue;
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
                                        keep_if_accepted(models, mi, systems, si, &e, set);
                                    }
}

/* Llama 3 70B (models[0]) with every modern feature, over the layouts of 64 to 4096 H100s. */
static void llama_cases(const fathom_model_t *models, const llm_system_t *systems,
                        case_set_t *set)
{
    for (size_t a = 0; a < 3; a++)
        for (size_t t = 0; t < 4; t++)
            for (size_t p = 0; p < 5; p++)
                for (size_t b = 0; b < 3; b++)
                    for (int rec = 0; rec < 3; rec++)
                        for (int vp = 1; vp <= 2; vp++) {
                            llm_execution_t e = {0};
                            if (!layout(&e, procs[a], tps[t], pps[p]))
                                continue;
                            megatron_fp8(&e, (llm_recompute_t)rec);
                            e.batch_size = 4096;
                            e.microbatch_size = mbss[b];
                            e.pipeline_interleaving = e.pipeline_par > 1 ? vp : 1;
                            e.optimizer_sharding = e.data_par > 1;
                            e.data_par_overlap = e.data_par > 1;
                            keep_if_accepted(models, 0, systems, 1, &e, set);
                        }
}

/* DeepSeek-V3 (models[0]: MLA, 256 experts, MTP) over layouts of 256 to 2048 H100s with expert
 * parallelism 8 to 64 (the all-to-all on NVLink while EP fits in 8, else the node tier). */
static void deepseek_cases(const fathom_model_t *models, const llm_system_t *systems,
                           case_set_t *set)
{
    static const int64_t ds_procs[] = {256, 512, 1024, 2048}, ds_tps[] = {1, 2},
                         ds_pps[] = {8, 16}, ds_eps[] = {8, 16, 32, 64};
    for (size_t a = 0; a < 4; a++)
        for (size_t t = 0; t < 2; t++)
            for (size_t p = 0; p < 2; p++)
                for (size_t x = 0; x < 4; x++)
                    for (int rec = 0; rec < 3; rec++)
                        for (int ov = 0; ov < 2; ov++) {
                            llm_execution_t e = {0};
                            layout(&e, ds_procs[a], ds_tps[t], ds_pps[p]); /* all divide */
                            megatron_fp8(&e, (llm_recompute_t)rec);
                            e.expert_par = ds_eps[x];
                            e.expert_tensor_par = 1;
                            e.expert_par_net = ds_eps[x] <= 8 ? 0 : 1;
                            e.moe_load_imbalance = 1;
                            e.moe_a2a_overlap = ov;
                            e.batch_size = 4096;
                            e.microbatch_size = 1;
                            e.pipeline_interleaving = 1;
                            e.optimizer_sharding = true;
                            e.data_par_overlap = true;
                            keep_if_accepted(models, 0, systems, 1, &e, set);
                        }
}

/* Llama 3 8B and 70B (models[0], models[1]) as torchtitan runs them on the Grand Teton H100
 * (systems[1]: 96 GB, 2.4 TB/s, 500 W): FSDP2 over data parallelism, eager and compiled, BF16
 * and torchao Float8 (tensorwise, rowwise), vanilla and async TP, context parallelism, full and
 * per-op selective checkpointing, the host's launches: every stack term on. */
static void torchtitan_cases(const fathom_model_t *models, const llm_system_t *systems,
                             case_set_t *set)
{
    static const int64_t tt_procs[] = {8, 64, 256}, tt_tps[] = {1, 2, 8}, tt_cps[] = {1, 2};
    for (int mi = 0; mi < 2; mi++)
        for (size_t a = 0; a < 3; a++)
            for (size_t t = 0; t < 3; t++)
                for (size_t x = 0; x < 2; x++)
                    for (int f = 0; f < 3; f++)
                        for (int opt = 0; opt < 4; opt++)
                            for (int rec = 0; rec < 2; rec++) {
                                llm_execution_t e = {0};
                                e.num_procs = tt_procs[a];
                                e.tensor_par = tt_tps[t];
                                e.context_par = tt_cps[x];
                                e.pipeline_par = 1;
                                if (e.num_procs % (e.tensor_par * e.context_par))
                                    continue;
                                e.data_par = e.num_procs / (e.tensor_par * e.context_par);
                                e.tensor_par_net = 0;
                                e.context_par_net = e.tensor_par * e.context_par > 8;
                                e.pipeline_par_net = 1;
                                e.data_par_net = e.num_procs > 8;
                                e.microbatch_size = 2;
                                e.batch_size = 2 * e.data_par;
                                e.datatype = LLM_DT_BFLOAT16;
                                e.fused_activation = true;
                                e.attention_type = LLM_ATTN_MULTIHEAD;
                                e.attention_kernel = LLM_ATTN_KERNEL_SDPA;
                                e.stack = LLM_STACK_TORCHTITAN;
                                e.fp8 = f > 0;
                                e.fp8_recipe = f == 2 ? LLM_FP8_ROWWISE
                                               : f == 1 ? LLM_FP8_TENSORWISE
                                                        : LLM_FP8_CURRENT;
                                e.compile = opt > 0;
                                e.async_tp = opt == 2 && e.tensor_par > 1;
                                e.activation_recompute =
                                    rec ? LLM_RECOMPUTE_FULL : LLM_RECOMPUTE_NONE;
                                e.selective_ac = rec ? LLM_SAC_NONE : LLM_SAC_OP;
                                e.pipeline_interleaving = 1;
                                e.optimizer_sharding = true;
                                e.zero_stage = 3;
                                e.data_par_overlap = true;
                                e.tensor_par_comm_type =
                                    e.tensor_par > 1 ? LLM_TP_COMM_RS_AG : LLM_TP_COMM_AR;
                                e.training = true;
                                keep_if_accepted(models, mi, systems, 1, &e, set);
                            }
}

/* The set to time alone (NULL: every set) and whether its memo run or its plain run alone (main's
 * arguments). */
static const char *only_set;
static bool only_memo, only_plain;
static int sets_timed; /* how many sets matched only_set */

/* Generates one set of cases with gen, then times it; 1 when no case was accepted. */
static int run_set(const char *label, void (*gen)(const fathom_model_t *, const llm_system_t *,
                                                  case_set_t *),
                   const fathom_model_t *models, const llm_system_t *systems, int rounds)
{
    static case_set_t set;
    if (only_set && !strstr(label, only_set))
        return 0;
    sets_timed++;
    set.n = set.tried = 0;
    gen(models, systems, &set);
    if (set.n == 0) {
        fprintf(stderr, "bench_estimate: no feasible execution (%s)\n", label);
        return 1;
    }
    if (!only_memo)
        time_cases(label, models, systems, set.cases, set.n, set.tried, rounds, NULL);
    if (only_plain)
        return 0;
    llm_memo_t *memo = llm_memo_new();
    if (!memo)
        return 1;
    time_cases(label, models, systems, set.cases, set.n, set.tried, rounds, memo);
    llm_memo_free(memo);
    return 0;
}

int main(int argc, char **argv)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", argc > 1 ? argv[1] : FATHOM_DATADIR "/presets");
    int rounds = argc > 2 ? atoi(argv[2]) : 200;
    if (rounds < 1)
        rounds = 1;
    only_set = argc > 3 ? argv[3] : NULL;
    only_memo = argc > 4 && strcmp(argv[4], "memo") == 0;
    only_plain = argc > 4 && strcmp(argv[4], "plain") == 0;
    if (argc > 5 || (argc > 4 && !only_memo && !only_plain)) {
        fprintf(stderr, "usage: bench_estimate [PRESETS_DIR] [ROUNDS] [SET [memo|plain]]\n");
        return 2;
    }
    static const char *const model_names[] = {"megatron-22B", "gpt3-175B", "megatron-1T"};
    static const char *const system_names[] = {"a100_80g", "h100_sxm"};
    codec_presets_t *presets = bench_presets("bench_estimate", dir);
    if (!presets)
        return 1;
    fathom_error_t err;
    fathom_error_clear(&err);
    fathom_model_t models[3];
    llm_system_t systems[2];
    int rc = 0;
    for (int i = 0; i < 3 && !rc; i++)
        rc = load_preset(presets, model_names[i], &models[i], NULL);
    for (int i = 0; i < 2 && !rc; i++)
        rc = load_preset(presets, system_names[i], NULL, &systems[i]);
    rc = rc || run_set("Calculon's models", calculon_cases, models, systems, rounds) ||
         load_preset(presets, "llama3-70B", &models[0], NULL) ||
         run_set("Llama 3 70B, every modern feature", llama_cases, models, systems, rounds) ||
         load_preset(presets, "deepseek-v3", &models[0], NULL) ||
         run_set("DeepSeek-V3, MLA, 256 experts, expert parallelism", deepseek_cases, models,
                 systems, rounds) ||
         load_preset(presets, "llama3-8B", &models[0], NULL) ||
         load_preset(presets, "llama3-70B", &models[1], NULL) ||
         load_variant(presets, GRAND_TETON_H100, &systems[1]) ||
         run_set("torchtitan: Llama 3 8B and 70B, FSDP2, compile, Float8, async TP, CP",
                 torchtitan_cases, models, systems, rounds);
    codec_presets_free(presets);
    if (!rc && only_set && sets_timed == 0) {
        fprintf(stderr, "bench_estimate: no set's label contains \"%s\" (try DeepSeek-V3 or "
                        "torchtitan)\n", only_set);
        return 2;
    }
    return rc ? 1 : 0;
}

/* llm_warnings.c — plausibility warnings on an estimate: an MFU above the best published for the
 * GPU and datatype, an execution that offloads to tier 2, a datatype the matrix engine runs at a
 * low rate, a small mixture-of-experts model (where the step model agrees least with published
 * runs), an expert-parallel all-to-all that takes much of the step with nothing to hide it
 * behind (the lever that moves such a step most), and a PyTorch stack asked for DDP where its
 * own default shards. An estimate is still an estimate: these say
 * where it leaves what has been measured, or what would change it.
 *
 * The GPU is recognised by its matrix engine's dense 16-bit peak and, where Blackwell Ultra shares
 * Blackwell's peak, its tier-1 memory (a custom system with another peak gets no MFU warning:
 * there is nothing published to compare it with). MFU is as in the summary: model FLOPs per
 * step / (step time · processors · the matrix peak in `datatype`); FP8 runs therefore count
 * against the 16-bit peak, as NeMo's and Llama 3's figures are quoted. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "llm_codec.h"

typedef struct {
    const char *gpu;
    double peak_lo, peak_hi; /* TFLOP/s of the 16-bit matrix rate that identify it */
    double mem_lo, mem_hi;   /* GiB of tier-1 memory: Blackwell Ultra's peaks are Blackwell's */
    bool fp8;                /* the figure is for FP8 training (else BF16/FP16) */
    bool moe;                /* model class: mixture of experts (else dense) */
    double best_mfu;         /* best published model-FLOPs utilisation, fraction */
    const char *source;
} mfu_ref_t;

/* The best published MFU per GPU, datatype and model class (dense, mixture of experts), with its
 * source: papers and NVIDIA's own README, and the best run of the class in the files Fathom
 * ships (presets/validation/: measured_runs.json and the files beside it), its model TFLOP/s
 * over the dense BF16 peak. tests/unit/llm/test_llm_warnings.c recomputes the shipped figures
 * from those files. An MoE model is held to MoE runs (their MFU is far lower: routing,
 * all-to-all, small expert GEMMs), a dense one to dense runs. The B300 has no entry: no run of
 * it is published there. */
static const mfu_ref_t mfu_table[] = {
    {"A100", 300, 320, 0, HUGE_VAL, false, false, 0.563,
     "Korthikanti et al. 2022, \"Reducing Activation Recomputation in Large Transformer "
     "Models\", Table 5: MFU 51.4% for GPT-3 175B and 56.3% at most (1T), Megatron-LM with "
     "sequence parallelism and selective recompute; Narayanan et al. 2021 report 140 TFLOP/s "
     "per GPU (45% counting recompute) for GPT-3 175B on 1024 A100s"},
    {"H100/H200", 900, 1100, 0, HUGE_VAL, false, false, 0.47,
     "NVIDIA/Megatron-LM README, weak-scaling study of GPT models from 2B to 462B parameters: "
     "up to 47% MFU on H100 clusters in BF16 (the Llama 3 paper's Table 4 gives 38-43% for "
     "Llama 3 405B on 8,192-16,384 H100s)"},
    {"H100/H200", 900, 1100, 0, HUGE_VAL, true, false, 0.843,
     "Megatron-LM's Llama README, FP8 performance table (H100, as its scripts say): Llama 3.1 "
     "405B on 1024 GPUs, 834 model TFLOP/s per GPU = 84.3% of the dense BF16 peak "
     "(presets/validation/measured_runs.json, MLM-105)"},
    {"H100/H200", 900, 1100, 0, HUGE_VAL, false, true, 0.303,
     "Megatron-Bridge verification card, Qwen3-30B-A3B in BF16 on H100s: 299.4 model TFLOP/s "
     "per GPU = 30.3% of the dense BF16 peak (presets/validation/verification_cards.json, "
     "VC-05)"},
    {"H100/H200", 900, 1100, 0, HUGE_VAL, true, true, 0.342,
     "NVIDIA NeMo / Megatron-Bridge performance summary, 25.09: DeepSeek-V3 in FP8 on H100s, "
     "338 model TFLOP/s per GPU = 34.2% of the dense BF16 peak "
     "(presets/validation/measured_runs.json, MB0909-029)"},
    {"B200", 2200, 2300, 0, 200, true, false, 0.741,
     "NVIDIA NeMo / Megatron-Bridge performance summary, 25.11: Llama 3.1 405B in FP8 on 128 "
     "B200s, 1667 model TFLOP/s per GPU = 74.1% of the dense BF16 peak (MB-027)"},
    {"GB200", 2450, 2550, 0, 200, true, false, 0.858,
     "NVIDIA NeMo / Megatron-Bridge performance summary, 26.04.01: Llama 3.1 405B in FP8 on "
     "256 GB200s, 2144 model TFLOP/s per GPU = 85.8% of the dense BF16 peak (MB-008)"},
    {"GB300", 2450, 2550, 200, HUGE_VAL, true, false, 1.058,
     "NVIDIA NeMo / Megatron-Bridge performance summary, 26.06: Llama 3.1 405B in FP8 on 256 "
     "GB300s, 2646 model TFLOP/s per GPU = 105.8% of the dense BF16 peak "
     "(presets/validation/blackwell_ultra.json, MBU-05)"},
};

/* Below this hidden size an MoE model is "small" (moe_small_hidden). */
#define SMALL_MOE_HIDDEN 4096

static int add(json_t *list, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int add(json_t *list, const char *code, const char *fmt, ...)
{
    char msg[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return json_array_append_new(list, json_pack("{s:s,s:s}", "code", code, "message", msg));
}

/* The lowest dense 16-bit peak of a GPU with block-scaled tensor cores, TFLOP/s: below the
 * B200's 2,250 (NVIDIA B200 datasheet, dense BF16) and far above the H100's and H200's 989. */
#define MX_MIN_PEAK16 1500.0

/* The share of the step an exposed expert-parallel all-to-all must reach to be warned. */
#define A2A_EXPOSED_SHARE 0.25

static double peak16(const llm_system_t *s)
{
    if (s->matrix.rate[LLM_DT_BFLOAT16].present)
        return s->matrix.rate[LLM_DT_BFLOAT16].tflops;
    if (s->matrix.rate[LLM_DT_FLOAT16].present)
        return s->matrix.rate[LLM_DT_FLOAT16].tflops;
    return NAN;
}

/* mfu_above_published: the estimate's MFU against the best published for its GPU, datatype and
 * model class (mfu_table). */
static void warn_mfu(json_t *list, const fathom_model_t *m, const llm_system_t *s,
                     const llm_execution_t *e, const llm_result_t *r)
{
    /* MFU = model FLOPs / (step · procs · peak in the datatype), as the summary's "mfu". */
    const double per_proc_s = r->stats.total_time * (double)e->num_procs;
    const double mfu = per_proc_s > 0 && r->extra.peak_flops > 0
                           ? llm_step_model_flops(m, e) /
                                 (per_proc_s * r->extra.peak_flops)
                           : NAN;
    const double p16 = peak16(s);
    for (size_t i = 0; i < sizeof mfu_table / sizeof mfu_table[0]; i++) {
        const mfu_ref_t *t = &mfu_table[i];
        if (!(p16 >= t->peak_lo && p16 <= t->peak_hi) ||
            !(s->mem1.gib >= t->mem_lo && s->mem1.gib < t->mem_hi) || t->fp8 != e->fp8 ||
            t->moe != (m->moe.num_experts > 0) ||
            !(e->datatype == LLM_DT_FLOAT16 || e->datatype == LLM_DT_BFLOAT16))
            continue;
        if (isfinite(mfu) && mfu > t->best_mfu)
            add(list, "mfu_above_published",
                "estimated MFU %.1f%% is above the best published for %s %s in %s (%.1f%%: %s). "
                "The estimate is likely optimistic: the system's efficiency curves are not "
                "measured kernels; calibrate them with POST /v1/calibrate.",
                100 * mfu, t->moe ? "MoE models on" : "dense models on", t->gpu,
                e->fp8 ? "FP8" : llm_datatype_names[e->datatype],
                100 * t->best_mfu, t->source);
    }
}

/* fp8_recipe_without_hardware: MXFP8 asked of a GPU without block-scaled tensor cores. */
static void warn_fp8_recipe(json_t *list, const llm_system_t *s, const llm_execution_t *e)
{
    const double p16 = peak16(s);
    /* MXFP8 scales each block of 32 elements by its own power of two inside the GEMM, which
     * only block-scaled tensor cores do: Blackwell's (sm_100 tcgen05 .block_scale MMAs; NVIDIA
     * PTX ISA 8.7, "mxf8f6f4"), not Hopper's or Ampere's — torchao's MX recipes require
     * sm_100 (torchao/prototype/mx_formats README). Blackwell's 16-bit peak is 2,250 TFLOP/s
     * (B200) and more; Hopper's is 989. The step is still costed at the system's FP8 rate. */
    if (e->fp8 && e->fp8_recipe == LLM_FP8_MXFP8 && isfinite(p16) && p16 < MX_MIN_PEAK16)
        add(list, "fp8_recipe_without_hardware",
            "fp8_recipe \"mxfp8\" needs tensor cores with block scaling (NVIDIA Blackwell and "
            "later); this GPU's 16-bit peak of %.0f TFLOP/s is an earlier one's, where MXFP8 "
            "runs emulated, far slower than this estimate (costed at the FP8 rate): use "
            "\"tensorwise\" or \"rowwise\" on it",
            p16);
}

/* What the execution does that published runs confirm least or that would change the step
 * most: offload to tier 2, a small MoE model, an exposed all-to-all, DDP under a PyTorch stack. */
static void warn_execution(json_t *list, const fathom_model_t *m, const llm_system_t *s,
                           const llm_execution_t *e, const llm_result_t *r)
{
    if (e->weight_offload || e->activations_offload || e->optimizer_offload) {
        char what[128] = "";
        if (e->weight_offload)
            strcat(what, "weights, ");
        if (e->activations_offload)
            strcat(what, "activations, ");
        if (e->optimizer_offload)
            strcat(what, "optimizer state, ");
        what[strlen(what) - 2] = 0;
        add(list, "offload_tier2",
            "this execution offloads %s to tier 2 (%.0f GB/s): the transfers are modelled as "
            "hidden behind compute where bandwidth allows, which few published runs confirm; "
            "check the offload traffic on the real system",
            what, s->mem2.gbps);
    }
    /* Mixture-of-experts models narrower than 4096: the published runs of such models (the
     * validation set and presets/validation/later_releases.json, GPT-OSS 120B and Qwen3-30B-A3B)
     * disagree with the step model far more than those of wider ones, and mostly run slower.
     * tests/api/test_modern.py recomputes the figures quoted here from those rows. */
    if (m->moe.num_experts > 0 && m->hidden < SMALL_MOE_HIDDEN)
        add(list, "moe_small_hidden",
            "a mixture-of-experts model of hidden size %" PRId64 " (below %d) is where Fathom's "
            "estimates are least certain: on the 17 published Megatron-Bridge runs of such models "
            "(GPT-OSS 120B, Qwen3-30B-A3B; containers 25.11 to 26.08; GET /v1/validation and "
            "presets/validation/later_releases.json) the estimated tokens/s was off by 48.3%% "
            "on average, from -19.7%% to +129.3%%, too fast in 14 of them; on the 15 runs of "
            "wider MoE models, by 17.2%%. The software release moves these models most: the "
            "same model, GPUs and layout were published up to 1.58x apart from one release to "
            "another (Qwen3-30B-A3B on 8 GB200s: 26,112 and 40,960 tokens/s/GPU; GPT-OSS 120B "
            "on 64 GB200s: 18,304 and 28,947, the lower under a cuDNN regression its release "
            "notes). Expect the run to be slower than estimated on "
            "older releases; calibrate with a measured run of your own (POST /v1/calibrate).",
            m->hidden, SMALL_MOE_HIDDEN);
    /* An exposed all-to-all: the dispatch and combine of expert parallelism, run with no other
     * micro-batch's compute beside them, are at least A2A_EXPOSED_SHARE of the step (a choice:
     * where the overlap is worth a planner's look). DeepSeek-V3's report (arXiv 2412.19437,
     * §3.2.1) puts cross-node expert parallelism at a computation-to-communication ratio of
     * about 1:1 and hides it by pairing chunks (DualPipe); Megatron's 1F1B all-to-all overlap
     * does the same per pair of micro-batches (doc/moe.md, "What overlaps what"). */
    const double a2a = r->extra.expert_parallel_comm;
    if (m->moe.num_experts > 0 && e->expert_par > 1 && !e->moe_a2a_overlap &&
        llm_pp_schedule(e) != LLM_PP_DUALPIPE && r->stats.total_time > 0 &&
        a2a >= A2A_EXPOSED_SHARE * r->stats.total_time)
        add(list, "moe_all_to_all_exposed",
            "%.0f%% of the step (%.3g s of %.3g s) is the expert-parallel all-to-all with "
            "nothing beside it%s. Overlapping dispatch and combine with another micro-batch's "
            "compute (execution.moe_a2a_overlap, Megatron's --overlap-moe-expert-parallel-comm) "
            "or pairing chunks with DualPipe (pipeline_schedule \"dualpipe\"), as DeepSeek-V3 "
            "did for a computation-to-communication ratio its report puts at about 1:1 "
            "(arXiv 2412.19437, sec. 3.2.1), hides most of it; a plan takes both as options",
            100 * a2a / r->stats.total_time, a2a, r->stats.total_time,
            e->expert_par_net > 0 ? ", across the network" : "");
    /* zero_stage's default, 0, is Calculon's (and Megatron's without the distributed optimizer);
     * the PyTorch stacks shard by default: torchtitan's data_parallel_shard_degree is -1 (FSDP2
     * over every rank left, its config/job_config.py) and FSDP1's sharding_strategy FULL_SHARD
     * (torch.distributed.fsdp.FullyShardedDataParallel, as Accelerate's and Composer's). A
     * layout with data parallelism under them and stage 0 is DDP, which they run only when told
     * to: said, since the memory and the gradient all-reduce differ by the data-parallel width. */
    if (e->stack != LLM_STACK_MEGATRON && e->training && e->data_par > 1 &&
        llm_zero_stage(e) == 0)
        add(list, "pytorch_stack_ddp",
            "zero_stage 0 under stack \"%s\" is DDP: each of the %" PRId64 " data-parallel "
            "GPUs holds every weight, gradient and optimizer state of its part of the model and "
            "all-reduces the gradients. %s shards them over the data-parallel group by default "
            "(%s): zero_stage 3 estimates that%s",
            llm_stack_names[e->stack], e->data_par,
            e->stack == LLM_STACK_TORCHTITAN ? "torchtitan" : "FSDP",
            e->stack == LLM_STACK_TORCHTITAN
                ? "FSDP2, data_parallel_shard_degree -1"
                : "sharding_strategy FULL_SHARD",
            e->shard_group > 0 && e->shard_group < e->data_par
                ? ", with shard_group the sharding group (HSDP)"
                : "");
}

/* low_rate_datatype: a datatype the matrix engine runs at half its fastest 16-bit rate or less. */
static void warn_low_rate(json_t *list, const llm_system_t *s, const llm_execution_t *e)
{
    double best = 0;
    for (int dt = 0; dt < LLM_DT__COUNT; dt++)
        if (dt != LLM_DT_FLOAT8 && s->matrix.rate[dt].present)
            best = fmax(best, s->matrix.rate[dt].tflops);
    const llm_rate_t *rate = &s->matrix.rate[e->datatype];
    if (rate->present && e->datatype != LLM_DT_FLOAT8 && rate->tflops <= 0.5 * best)
        add(list, "low_rate_datatype",
            "%s runs at %.0f TFLOP/s on this system's matrix engine, %.0f%% of its fastest "
            "16-bit rate (%.0f TFLOP/s); training in bfloat16 or float16 would be faster",
            llm_datatype_names[e->datatype], rate->tflops, 100 * rate->tflops / best, best);
}

json_t *codec_llm_warnings_encode(const fathom_model_t *m, const llm_system_t *s,
                                  const llm_execution_t *e, const llm_result_t *r)
{
    json_t *list = json_array();
    if (!list)
        return NULL;
    /* in this order, which every stored answer has */
    warn_mfu(list, m, s, e, r);
    warn_fp8_recipe(list, s, e);
    warn_execution(list, m, s, e, r);
    warn_low_rate(list, s, e);
    return list;
}

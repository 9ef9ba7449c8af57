/* llm_model.c — llm_estimate: refuses what Calculon refuses (llm_checks.c), compiles the block
 * (llm_layers.c), takes its per-block, per-microbatch costs over the layer table
 * (llm_block_stats.c), then turns them into the step: pipeline chunks of base and edge blocks, the
 * pipeline bubble, tensor/pipeline/data-parallel communication and its overlap, offloading,
 * and the memory of each tier (Calculon's Llm.compile/_compute_block_stats/
 * _compute_batch_stats and the get_* accessors).
 *
 * DESIGN: everything lives on the stack (the block is a fixed array of at most
 * LLM__MAX_LAYERS layers), so an estimate allocates nothing and shares nothing: the search
 * calls it from several threads. Arithmetic follows Calculon's order of operations so the 96
 * statistics agree with it to ~1e-12 relative. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "llm_collective.h"
#include "llm_internal.h"

double llm__sum_of_lines(const llm_stats_t *st)
{
    /* Calculon's order of additions: its total_time to the last bit */
    double total = st->fw_time;
    total += st->bw_time;
    total += st->optim_step_time;
    total += st->fw_offload_exposed_time;
    total += st->bw_offload_exposed_time;
    total += st->recompute_time;
    total += st->recomm_exposed_time;
    total += st->bubble_time;
    total += st->tp_comm_exposed_time;
    total += st->pp_comm_exposed_time;
    total += st->dp_comm_exposed_time;
    return total;
}

/* Python's float floor division (a // b) for the pipeline collision count. */
static double py_floordiv(double a, double b)
{
    double mod = fmod(a, b);
    double div = (a - mod) / b;
    if (mod != 0 && ((b < 0) != (mod < 0)))
        div -= 1.0;
    if (div != 0) {
        double fl = floor(div);
        if (div - fl > 0.5)
            fl += 1.0;
        return fl;
    }
    return copysign(0.0, a / b);
}

static double max2(double a, double b) { return a > b ? a : b; }
static double min2(double a, double b) { return a < b ? a : b; }

/* What Calculon has no notion of: grouped key/value heads against the TP split, the modern
 * execution fields, and the vocabulary of the layers outside the blocks. */
static int check_modern(const fathom_model_t *m, const llm_system_t *s, const llm_execution_t *e,
                        fathom_error_t *err)
{
    const int64_t kv = model_kv_heads(m), tp = e->tensor_par;
    if (e->attention_type == LLM_ATTN_MULTIQUERY && kv != 1 && kv != m->attn_heads)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.attention_type",
                                "\"multiquery\" means one key/value head, but model.kv_heads is "
                                "%lld; leave attention_type out (or \"multihead\") to use it",
                                (long long)kv);
    if (e->attention_type != LLM_ATTN_MULTIQUERY && kv % tp != 0 && tp % kv != 0)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.tensor_par",
                                "must divide model.kv_heads (%lld) or be a multiple of it",
                                (long long)kv);
    const int64_t cp = llm_context_par(e), group = e->data_par * cp;
    if (cp > 1 && m->sliding_window > 0)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.context_par",
                                "ring attention over a sliding window (model.sliding_window) is "
                                "not modelled: use context_par 1");
    if (cp > 1) {
        if (m->calculon_block)
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.context_par",
                                    "needs the modern block: give the model one of kv_heads, "
                                    "gated_mlp, norm, qkv_bias or causal");
        if (!llm_attention_fused(e))
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.context_par",
                                    "ring attention runs on a fused attention kernel: set "
                                    "execution.attention_kernel to \"fused\" or a named one");
        if (m->seq_size % (2 * cp) != 0)
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.context_par",
                                    "each rank holds two chunks of the sequence (causal load "
                                    "balancing): 2 × context_par must divide seq_size (%lld)",
                                    (long long)m->seq_size);
    }
    if (e->zero_stage < 0 || e->zero_stage > 3)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.zero_stage",
                                "must be 0, 1, 2 or 3, got %d", e->zero_stage);
    /* Calculon's block reads optimizer_sharding alone (the codec keeps zero_stage 1 equal to
     * it); the modern block reads the stage in force, llm_zero_stage. */
    if (!m->calculon_block && llm_zero_stage(e) >= 1 && group < 2)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.zero_stage",
                                "shards over data_par × context_par processors, which is 1");
    if (e->zero_stage >= 2 && m->calculon_block)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.zero_stage",
                                "ZeRO-2/3 need the modern block: give the model one of kv_heads, "
                                "gated_mlp, norm, qkv_bias or causal");
    if (llm_fsdp_sharded_weights(e) && e->weight_offload)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.zero_stage",
                                "zero_stage %d shards the weights%s; offloading them as well is "
                                "not modelled (set weight_offload false)",
                                e->zero_stage,
                                e->zero_stage == 2 ? " (FSDP under pipeline parallelism)" : "");
    if (e->zero_stage >= 2 && e->optimizer_offload)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.zero_stage",
                                "zero_stage %d shards the gradients; offloading them with the "
                                "optimizer state is not modelled (set optimizer_offload false)",
                                e->zero_stage);
    if (e->shard_group >= 1 && (group % e->shard_group != 0 || e->shard_group > group))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.shard_group",
                                "must divide data_par × context_par (%lld), got %lld",
                                (long long)group, (long long)e->shard_group);
    if (e->shard_group >= 1 && e->shard_group < group && e->zero_stage == 0)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.shard_group",
                                "shards nothing with zero_stage 0");
    if ((unsigned)e->attention_kernel >= LLM_ATTN_KERNEL__COUNT)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.attention_kernel",
                                "must be one of unfused, fused, flash2, flash3, cudnn, sdpa, triton");
    if (e->fp8_activation_cache && !e->fp8)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.fp8_activation_cache",
                                "caching activations in FP8 is part of FP8 training: set "
                                "execution.fp8");
    if ((unsigned)e->optimizer_state_datatype >= LLM_STATE__COUNT)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.optimizer_state_datatype",
                                "must be \"float32\", \"bfloat16\" or \"float16\"");
    if (e->optimizer_state_datatype != LLM_STATE_FLOAT32 && m->calculon_block)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.optimizer_state_datatype",
                                "needs the modern block: give the model one of kv_heads, "
                                "gated_mlp, norm, qkv_bias or causal");
    if (e->fp8_params && !e->fp8)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.fp8_params",
                                "FP8 primary weights need FP8 training: set execution.fp8");
    if (e->fp8) {
        if (e->datatype != LLM_DT_FLOAT16 && e->datatype != LLM_DT_BFLOAT16)
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.fp8",
                                    "FP8 training keeps attention and elementwise work in float16 "
                                    "or bfloat16: set execution.datatype to one of them, got %s",
                                    llm_datatype_name(e->datatype));
        if (!s->matrix.rate[LLM_DT_FLOAT8].present)
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.fp8",
                                    "the system's matrix engine has no float8 rate");
    }
    return 0;
}

/* Calculon's refusals, then the sizes and the cost context of the execution. */
/* recompute_blocks: full recompute of some blocks of each pipeline chunk (llm.h). */
static int check_recompute_blocks(const fathom_model_t *m, const llm_execution_t *e,
                                  int64_t bpp, fathom_error_t *err)
{
    const int64_t per_chunk = llm_largest_chunk(bpp, e->pipeline_interleaving);
    if (e->recompute_blocks == 0)
        return 0;
    if (e->recompute_blocks < 0)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.recompute_blocks",
                                "must be >= 1, got %lld", (long long)e->recompute_blocks);
    if (e->activation_recompute != LLM_RECOMPUTE_FULL)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.recompute_blocks",
                                "says how many blocks full recompute reruns: set "
                                "execution.activation_recompute to \"full\"");
    if (m->calculon_block)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.recompute_blocks",
                                "needs the modern block: give the model one of kv_heads, "
                                "gated_mlp, norm, qkv_bias or causal");
    if (e->activations_offload)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.recompute_blocks",
                                "offloading the activations of partly recomputed stages is not "
                                "modelled (set activations_offload false)");
    if (e->recompute_blocks > per_chunk)
        return fathom_error_set(err, FATHOM_E_INFEASIBLE_EXECUTION, "execution.recompute_blocks",
                                "must be at most the blocks of the largest pipeline chunk "
                                "(%lld), got %lld",
                                (long long)per_chunk, (long long)e->recompute_blocks);
    return 0;
}

/* The pipeline schedule against the layout: interleaving is its own schedule; zero-bubble and
 * DualPipe run one chunk per rank on the modern block, DualPipe on an even number of ranks with
 * microbatches for both directions (DualPipe's own checks: pp even, nmb even and >= 2·pp). */
static int check_schedule(const fathom_model_t *m, const llm_execution_t *e, int64_t nmb,
                          fathom_error_t *err)
{
    const char *f = "execution.pipeline_schedule";
    const llm_pp_schedule_t sc = e->pipeline_schedule;
    if ((unsigned)sc >= LLM_PP__COUNT)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, f,
                                "must be \"1f1b\", \"interleaved\", \"zero_bubble\" or "
                                "\"dualpipe\"");
    if (sc == LLM_PP_INTERLEAVED && e->pipeline_interleaving < 2)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, f,
                                "\"interleaved\" runs pipeline_interleaving > 1 chunks per rank: "
                                "set execution.pipeline_interleaving");
    if (sc != LLM_PP_ZERO_BUBBLE && sc != LLM_PP_DUALPIPE)
        return 0;
    if (m->calculon_block)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, f,
                                "\"%s\" needs the modern block: give the model one of kv_heads, "
                                "gated_mlp, norm, qkv_bias or causal",
                                llm_pp_schedule_names[sc]);
    if (e->pipeline_par < 2)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, f,
                                "\"%s\" schedules a pipeline: pipeline_par must be at least 2",
                                llm_pp_schedule_names[sc]);
    if (e->pipeline_interleaving > 1)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, f,
                                "\"%s\" runs one chunk per stage: set pipeline_interleaving to 1",
                                llm_pp_schedule_names[sc]);
    if (sc == LLM_PP_DUALPIPE && (e->pipeline_par % 2 != 0 || nmb % 2 != 0 ||
                                  nmb < 2 * e->pipeline_par))
        return fathom_error_set(err, FATHOM_E_INFEASIBLE_EXECUTION, f,
                                "DualPipe needs an even pipeline_par (%lld) and an even number of "
                                "microbatches, at least 2 × pipeline_par (%lld per step)",
                                (long long)e->pipeline_par, (long long)nmb);
    return 0;
}

/* recompute_modules: selective recompute of modules the model has (llm.h). */
static int check_recompute_modules(const fathom_model_t *m, const llm_execution_t *e,
                                   fathom_error_t *err)
{
    const char *f = "execution.recompute_modules";
    const unsigned mods = e->recompute_modules;
    if (mods == 0)
        return 0;
    if (e->activation_recompute == LLM_RECOMPUTE_FULL)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, f,
                                "full recompute already reruns every module: set "
                                "execution.activation_recompute to \"none\" or \"attn_only\"");
    if (m->calculon_block)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, f,
                                "needs the modern block: give the model one of kv_heads, "
                                "gated_mlp, norm, qkv_bias or causal");
    if ((mods & (LLM_RECOMPUTE_MOE_ACT | LLM_RECOMPUTE_MOE)) && m->moe.num_experts == 0)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, f,
                                "\"%s\" needs a model with experts (model.moe)",
                                (mods & LLM_RECOMPUTE_MOE_ACT) ? "moe_act" : "moe");
    if ((mods & LLM_RECOMPUTE_MLP) && model_moe_blocks_in(m, 0, m->num_blocks) == m->num_blocks)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, f,
                                "\"mlp\" reruns the MLP of dense blocks, and every block of this "
                                "model is an MoE block: use \"moe\" or \"moe_act\"");
    if ((mods & LLM_RECOMPUTE_SHARED_EXPERTS) &&
        (m->moe.num_experts == 0 || m->moe.shared_experts == 0))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, f,
                                "\"shared_experts\" needs a model with shared experts "
                                "(model.moe.shared_experts)");
    if ((mods & LLM_RECOMPUTE_MLA_UP_PROJ) && !m->mla.present)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, f,
                                "\"mla_up_proj\" needs multi-latent attention (model.mla)");
    if ((mods & LLM_RECOMPUTE_MLA_UP_PROJ) && !llm_attention_fused(e))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, f,
                                "\"mla_up_proj\" is modelled for the fused attention kernel: set "
                                "execution.attention_kernel to \"fused\"");
    return 0;
}

int llm_recompute_module_ladder(const fathom_model_t *m, const llm_execution_t *e,
                                unsigned sets[LLM_RECOMPUTE_MODULE_SETS])
{
    int n = 0;
    unsigned set = 0;
    if (m->calculon_block || e->activation_recompute == LLM_RECOMPUTE_FULL ||
        e->stack == LLM_STACK_TORCHTITAN)
        return 0;
    /* cheapest rerun first: two norms, then a dense model's MLP or the experts' activation,
     * MLA's up-projections, then the whole MoE MLP with its all-to-all */
    sets[n++] = set |= LLM_RECOMPUTE_LAYERNORM;
    /* an MoE model's dense blocks keep the MoE block's activations (llm_moe.c): mlp would only
     * cost them time there, so it is tried on dense models alone */
    if (m->moe.num_experts == 0)
        sets[n++] = set |= LLM_RECOMPUTE_MLP;
    if (m->moe.num_experts > 0)
        sets[n++] = set |= LLM_RECOMPUTE_MOE_ACT;
    if (m->mla.present && llm_attention_fused(e))
        sets[n++] = set |= LLM_RECOMPUTE_MLA_UP_PROJ;
    if (m->moe.num_experts > 0)
        sets[n++] = set |= LLM_RECOMPUTE_MOE;
    return n;
}

bool llm__norm_redone(const llm_execution_t *e)
{
    return e->activation_recompute != LLM_RECOMPUTE_FULL &&
           (e->recompute_modules & LLM_RECOMPUTE_LAYERNORM);
}

bool llm__moe_redone(const llm_execution_t *e)
{
    return e->training && e->activation_recompute != LLM_RECOMPUTE_FULL &&
           (e->recompute_modules & LLM_RECOMPUTE_MOE);
}

/* Full recompute of the first N blocks of each chunk (Megatron's recompute_method "block"; all
 * of a chunk shorter than N). A stage's bpp = q·vp + r blocks make r chunks of q + 1 and vp − r
 * of q (llm_model.c's split_pipeline), so the share of the stage's blocks recomputed is
 *   (r·min(N, q + 1) + (vp − r)·min(N, q)) / bpp
 * which is N/q when vp divides bpp. */
double llm__recomputed_share(const llm_execution_t *e, const llm__compiled_t *k)
{
    if (!e->training || e->activation_recompute != LLM_RECOMPUTE_FULL)
        return 0;
    if (e->recompute_blocks < 1)
        return 1;
    const int64_t n = e->recompute_blocks, vp = e->pipeline_interleaving;
    const int64_t q = k->bpp / vp, r = k->bpp % vp;
    const int64_t rerun = r * (n < q + 1 ? n : q + 1) + (vp - r) * (n < q ? n : q);
    return (double)rerun / (double)k->bpp;
}

/* The activations a block of e's stage stores when it recomputes nothing. */
static double storage_without_recompute(const fathom_model_t *m, const llm_system_t *s,
                                        const llm_execution_t *e, llm__compiled_t *k)
{
    llm_execution_t none = *e;
    none.activation_recompute = LLM_RECOMPUTE_NONE;
    none.recompute_blocks = 0;
    llm__block_t blk;
    llm__build_block(m, s, &none, &k->z, &blk);
    llm__block_stats_t kept; /* only its stored activations are read */
    llm__block_memory(&blk, &k->c, &none, &k->z, true, &kept);
    return kept.act_storage_space;
}

/* Full recompute of a share f of the blocks (recompute_blocks): the average block of the stage
 * reruns f of a block's forward (and its TP collectives), keeps f of a checkpoint and 1 − f of
 * the activations a block without recompute stores:
 *   re_*, recomm_*, matrix_re_flops   × f            (full-recompute block `b`)
 *   act_checkpoint_size               × f
 *   act_storage_space                 = (1 − f) · storage of the block built without recompute
 * Every block of a chunk is costed alike, so the chunk's time is exact and only which blocks
 * hold what is averaged. */
static void recompute_some_blocks(const fathom_model_t *m, const llm_system_t *s,
                                  const llm_execution_t *e, llm__compiled_t *k, double f,
                                  llm__block_stats_t *b)
{
    b->re.flops *= f;
    b->re.flops_time *= f;
    b->re.mem_accessed *= f;
    b->re.mem_time *= f;
    b->re.time *= f;
    for (int edge = 0; edge < 2; edge++) {
        b->recomm_size[edge] *= f;
        b->recomm_time[edge] *= f;
        b->recomm_exposed[edge] *= f;
    }
    b->matrix_re_flops *= f;
    b->moe_matrix_flops[2] *= f;
    b->expert_matrix_flops[2] *= f;
    b->act_checkpoint_size *= f;
    b->act_storage_space = (1 - f) * storage_without_recompute(m, s, e, k);
}

/* first_stage_blocks and last_stage_blocks against the model and the layout (Megatron asserts
 * the same: the middle stages share the rest evenly). */
static int check_layout(const fathom_model_t *m, const llm_execution_t *e, fathom_error_t *err)
{
    int64_t f, l;
    llm_end_stage_blocks(m, e, &f, &l);
    const int64_t pp = e->pipeline_par;
    const char *field = f >= 1 ? "execution.first_stage_blocks" : "execution.last_stage_blocks";
    if (f < 1 && l < 1)
        return 0;
    if (m->calculon_block)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, field,
                                "needs the modern block: give the model one of kv_heads, "
                                "gated_mlp, norm, qkv_bias or causal");
    if (pp < 2)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, field,
                                "places blocks on pipeline stages: pipeline_par must be at least 2");
    const int64_t given = (f >= 1) + (l >= 1), middle = pp - given;
    const int64_t rest = m->num_blocks - (f >= 1 ? f : 0) - (l >= 1 ? l : 0);
    if (rest < middle || (middle == 0 && rest != 0) || (middle > 0 && rest % middle != 0))
        return fathom_error_set(err, FATHOM_E_INFEASIBLE_EXECUTION, field,
                                "the other %lld stages must share the remaining %lld of the "
                                "model's %lld blocks evenly, at least one each",
                                (long long)middle, (long long)rest, (long long)m->num_blocks);
    return 0;
}

/* Blocks per processor: an uneven split gives the first stages one more block and leaves
 * "bubble" blocks on the last ones; the first stage is reported. Interleaving, partial
 * recompute and offload must fit the blocks a processor holds. With the modern block the
 * interleaved chunks may be uneven too (Megatron's pipeline_model_parallel_layout: DeepSeek-V3's
 * 31 blocks per stage in 8 chunks): the first bpp % vp chunks hold one block more, and the
 * schedule is costed with the mean chunk of bpp / vp blocks (compute_step). Calculon's block
 * keeps Calculon's rule that the chunks divide the stage evenly. */
static int split_pipeline(const fathom_model_t *m, const llm_execution_t *e, llm__compiled_t *k,
                          fathom_error_t *err)
{
    const int64_t pp = e->pipeline_par;
    if (check_layout(m, e, err))
        return -1;
    /* the stage with the most blocks sets the pace; the others lack blocks the bubble skips
     * (one on each short stage of the even split: pp − L % pp) */
    int64_t bpp_i = (m->num_blocks + pp - 1) / pp, f, l;
    llm_end_stage_blocks(m, e, &f, &l);
    if (f >= 1 || l >= 1) {
        bpp_i = llm_stage_blocks(m, e, pp > 2 ? 1 : 0, NULL);
        bpp_i = f > bpp_i ? f : bpp_i;
        bpp_i = l > bpp_i ? l : bpp_i;
    }
    k->bubble_reduction_blocks = pp * bpp_i - m->num_blocks;
    k->bpp = bpp_i;
    if (e->pipeline_interleaving > bpp_i)
        return fathom_error_set(err, FATHOM_E_INFEASIBLE_EXECUTION,
                                "execution.pipeline_interleaving",
                                "must be at most the number of blocks per processor (%lld), got "
                                "%lld",
                                (long long)bpp_i, (long long)e->pipeline_interleaving);
    if (m->calculon_block && bpp_i % e->pipeline_interleaving != 0)
        return fathom_error_set(err, FATHOM_E_INFEASIBLE_EXECUTION,
                                "execution.pipeline_interleaving",
                                "must divide the number of blocks per processor (%lld), got %lld",
                                (long long)bpp_i, (long long)e->pipeline_interleaving);
    if (check_recompute_blocks(m, e, bpp_i, err) || check_recompute_modules(m, e, err) ||
        check_schedule(m, e, k->nmb, err))
        return -1;
    if ((e->weight_offload || e->activations_offload || e->optimizer_offload) && bpp_i <= 2)
        return fathom_error_set(err, FATHOM_E_INFEASIBLE_EXECUTION,
                                e->weight_offload        ? "execution.weight_offload"
                                : e->activations_offload ? "execution.activations_offload"
                                                         : "execution.optimizer_offload",
                                "offloading requires at least 3 blocks per processor, this "
                                "execution has %lld",
                                (long long)bpp_i);
    return 0;
}

static int check_tensor_split(const fathom_model_t *m, const llm_execution_t *e,
                              fathom_error_t *err)
{
    const int64_t tp = e->tensor_par;
    if (m->hidden % tp != 0)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.tensor_par",
                                "must divide model.hidden (%lld)", (long long)m->hidden);
    if (m->feedforward % tp != 0)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.tensor_par",
                                "must divide model.feedforward (%lld)", (long long)m->feedforward);
    if (m->attn_heads % tp != 0)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.tensor_par",
                                "must divide model.attn_heads (%lld)", (long long)m->attn_heads);
    return 0;
}

/* Element counts of a layer are integers in Calculon; keep them exact in doubles (and far
 * from int64 overflow): the widest operand is microbatch*seq by 3*heads*attn_size. */
static int check_exact_elements(const fathom_model_t *m, const llm_execution_t *e,
                                fathom_error_t *err)
{
    double widest = (double)m->hidden;
    if ((double)m->feedforward > widest)
        widest = (double)m->feedforward;
    if (3.0 * (double)m->attn_heads * (double)m->attn_size > widest)
        widest = 3.0 * (double)m->attn_heads * (double)m->attn_size;
    if (!m->calculon_block) {
        if (m->gated_mlp && 2.0 * (double)m->feedforward > widest)
            widest = 2.0 * (double)m->feedforward;
        if ((double)m->vocab_size > widest)
            widest = (double)m->vocab_size;
    }
    double bs = (double)e->microbatch_size * (double)m->seq_size;
    double scores = (double)e->microbatch_size * (double)m->attn_heads * (double)m->seq_size *
                    (double)m->seq_size;
    if (bs * widest > LLM__MAX_EXACT || scores > LLM__MAX_EXACT)
        return fathom_error_set(err, FATHOM_E_LIMIT_EXCEEDED, "execution.microbatch_size",
                                "a layer of this microbatch would hold more than 2^53 "
                                "elements; use a smaller microbatch_size");
    return 0;
}

/* One rank's tokens and activation sizes: the sequence is split over context parallelism,
 * and sequence parallelism splits it again over tensor parallelism. */
static int fill_sizes(const fathom_model_t *m, const llm_execution_t *e, llm__sizes_t *z,
                      fathom_error_t *err)
{
    const int64_t tp = e->tensor_par;
    z->batch_seq = e->microbatch_size * m->seq_size / llm_context_par(e);
    z->activation_size = z->batch_seq * m->hidden;
    if (e->tensor_par_comm_type != LLM_TP_COMM_AR && z->batch_seq % tp != 0)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.tensor_par",
                                "must divide microbatch_size * seq_size (%lld) with %s",
                                (long long)z->batch_seq, llm_tp_comm_names[e->tensor_par_comm_type]);
    z->seq_par_activation_size = z->batch_seq / tp * m->hidden;
    return 0;
}

/* A positive rate whose curve gives an operation of size 0 a positive efficiency. */
static bool covers_zero(double rate, const llm_curve_t *curve)
{
    const int n = curve->num_points;
    return rate > 0 && n > 0 && 0 >= curve->points[n - 1].threshold &&
           curve->points[n - 1].efficiency > 0;
}

/* The rates, bandwidths, element sizes and optimizer shards every layer's cost reads. */
static void fill_context(const fathom_model_t *m, const llm_system_t *s, const llm_execution_t *e,
                         llm__ctx_t *c)
{
    const llm_rate_t *mrate = &s->matrix.rate[e->datatype];
    const llm_rate_t *vrate = &s->vector.rate[e->datatype];
    memset(c, 0, sizeof *c);
    c->sys = s;
    c->matrix_flops = mrate->tflops * 1e12;
    c->vector_flops = vrate->tflops * 1e12;
    c->matrix_curve = &mrate->gflops_efficiency;
    c->vector_curve = &vrate->gflops_efficiency;
    c->mem1_bw = s->mem1.gbps * 1e9;
    c->mem2_bw = s->mem2.gbps * 1e9;
    c->bpe = llm_datatype_bytes(e->datatype);
    c->grad_bpe = llm_gradient_bytes_per_param(e);
    c->optim_shards = e->optimizer_sharding ? (double)e->data_par : 1.0;
    if (!m->calculon_block) /* Megatron shards over data × context parallelism (or a group) */
        c->optim_shards = llm_zero_stage(e) >= 1 ? (double)llm_shard_group(e) : 1.0;
    /* routed experts' optimizer: over the expert data-parallel group (llm_moe.c) */
    c->expert_optim_shards = llm_zero_stage(e) >= 1 ? llm__expert_data_par(e) : 1.0;
    c->attention_flops = c->matrix_flops * s->attention_efficiency;
    c->attn_kernel = e->attention_kernel;
    c->stack = e->stack;
    c->compile = e->compile;
    c->context_par = (double)llm_context_par(e);
    c->gather_bpe = llm__stack_gather_bpe(e, c->bpe);
    c->fp8_recipe = e->fp8_recipe;
    c->fp8_prepared_shards = e->tensor_par > 1 && c->gather_bpe < c->bpe ? (double)e->tensor_par : 0;
    /* torchao's rowwise forward GEMM is PyTorch's CUTLASS rowwise kernel; its backward GEMMs
     * (use_fast_accum off) run cuBLAS's tensorwise one (llm_stack.c, fp8_linear_bytes) */
    c->fp8_fw_gemm = e->fp8 && e->fp8_recipe == LLM_FP8_ROWWISE ? LLM_FP8_ROWWISE_GEMM : 1.0;
    /* a frozen base in another datatype than the GEMMs' is dequantized before each GEMM */
    const llm_finetune_t *ft = &e->finetune;
    const bool adapters = ft->method == LLM_FINETUNE_LORA || ft->method == LLM_FINETUNE_QLORA;
    c->frozen_bpe = adapters ? llm_finetune_base_bytes(ft->base_datatype) : c->bpe;
    c->dequantize = adapters && ft->base_datatype != (int)e->datatype;
    if (e->fp8) {
        c->fp8_matrix_flops = s->matrix.rate[LLM_DT_FLOAT8].tflops * 1e12;
        c->fp8_matrix_curve = &s->matrix.rate[LLM_DT_FLOAT8].gflops_efficiency;
    }
    c->zero_is_free = covers_zero(c->matrix_flops, c->matrix_curve) &&
                      covers_zero(c->vector_flops, c->vector_curve) &&
                      covers_zero(c->mem1_bw, &s->mem1.mb_efficiency) &&
                      c->attention_flops > 0 &&
                      (!e->fp8 || covers_zero(c->fp8_matrix_flops, c->fp8_matrix_curve));
}

static int compile(const fathom_model_t *m, const llm_system_t *s, const llm_execution_t *e,
                   llm_memo_t *memo, uint64_t generation, llm__compiled_t *k,
                   fathom_error_t *err)
{
    if (llm__check_execution(m, e, err) || check_modern(m, s, e, err) ||
        llm__check_stack(m, e, err) || llm__check_moe(m, s, e, err) ||
        llm_finetune_check(m, e, err))
        return -1;
    /* The datatype before the networks: a system that cannot compute in it is the first thing
     * a planner must change, whatever the layout. */
    const llm_rate_t *mrate = &s->matrix.rate[e->datatype];
    const llm_rate_t *vrate = &s->vector.rate[e->datatype];
    if (!mrate->present || !vrate->present)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.datatype",
                                "the system's %s engine does not support %s",
                                mrate->present ? "vector" : "matrix",
                                llm_datatype_name(e->datatype));
    if (llm__check_networks(s, e, err))
        return -1;
    k->nmb = e->batch_size / e->data_par / e->microbatch_size;
    if (split_pipeline(m, e, k, err) || check_tensor_split(m, e, err) ||
        check_exact_elements(m, e, err) || fill_sizes(m, e, &k->z, err))
        return -1;
    fill_context(m, s, e, &k->c);
    k->pace_moe_blocks = m->moe.num_experts > 0 ? llm__pace_moe_blocks(m, e, k->bpp) : 0;
    k->host_asked = 0;
    if (memo) {
        k->c.memo = memo;
        k->c.memo_system = generation;
    }
    return 0;
}

/* One pass's totals into the five statistics Calculon names for it. */
static void copy_pass(const llm__pass_t *p, double *flops, double *flops_time, double *mem_accessed,
                      double *mem_time, double *time)
{
    *flops = p->flops;
    *flops_time = p->flops_time;
    *mem_accessed = p->mem_accessed;
    *mem_time = p->mem_time;
    *time = p->time;
}

/* A base block's and an edge block's value ([0] and [1]) into their two statistics. */
static void copy_edges(const double v[2], double *baseblock, double *edgeblock)
{
    *baseblock = v[0];
    *edgeblock = v[1];
}

/* The per-block statistics as they are. */
static void copy_block_stats(const llm__block_stats_t *b, llm_stats_t *st)
{
    copy_pass(&b->fw, &st->block_fw_flops, &st->block_fw_flops_time, &st->block_fw_mem_accessed,
              &st->block_fw_mem_time, &st->block_fw_time);
    copy_pass(&b->re, &st->block_re_flops, &st->block_re_flops_time, &st->block_re_mem_accessed,
              &st->block_re_mem_time, &st->block_re_time);
    copy_pass(&b->agrad, &st->block_agrad_flops, &st->block_agrad_flops_time,
              &st->block_agrad_mem_accessed, &st->block_agrad_mem_time, &st->block_agrad_time);
    copy_pass(&b->wgrad, &st->block_wgrad_flops, &st->block_wgrad_flops_time,
              &st->block_wgrad_mem_accessed, &st->block_wgrad_mem_time, &st->block_wgrad_time);
    copy_pass(&b->optim, &st->block_optim_flops, &st->block_optim_flops_time,
              &st->block_optim_mem_accessed, &st->block_optim_mem_time, &st->block_optim_time);
    copy_edges(b->fw_tp_time, &st->baseblock_fw_tp_time, &st->edgeblock_fw_tp_time);
    copy_edges(b->fw_tp_exposed, &st->baseblock_fw_tp_time_exposed,
               &st->edgeblock_fw_tp_time_exposed);
    copy_edges(b->recomm_time, &st->baseblock_recomm_time, &st->edgeblock_recomm_time);
    copy_edges(b->recomm_exposed, &st->baseblock_recomm_time_exposed,
               &st->edgeblock_recomm_time_exposed);
    copy_edges(b->agrad_tp_time, &st->baseblock_agrad_tp_time, &st->edgeblock_agrad_tp_time);
    copy_edges(b->agrad_tp_exposed, &st->baseblock_agrad_tp_time_exposed,
               &st->edgeblock_agrad_tp_time_exposed);
    copy_edges(b->fw_tp_size, &st->baseblock_fw_tp_size, &st->edgeblock_fw_tp_size);
    copy_edges(b->agrad_tp_size, &st->baseblock_bw_tp_size, &st->edgeblock_bw_tp_size);
    copy_edges(b->recomm_size, &st->baseblock_recomm_size, &st->edgeblock_recomm_size);
    st->tp_bw_overlap_req = b->tp_bw_overlap_req;
    st->block_weight_space = b->weight_space;
    st->block_act_working_space = b->act_working_space;
    st->block_act_storage_space = b->act_storage_space;
    st->block_act_checkpoint_size = b->act_checkpoint_size;
    st->block_weight_grad_space = b->weight_grad_space;
    st->block_weight_grad_space_no_sharding = b->weight_grad_space_no_sharding;
    st->block_act_grad_space = b->act_grad_space;
    st->block_optimizer_space = b->optimizer_space;
}

/* Memory per processor (Calculon's memory part of _compute_batch_stats, get_*_space and
 * _get_mem_cap_reqs): the stage's weights, activations, checkpoints, gradients and optimizer
 * state, their minimum footprints when offloaded, and the capacity each tier needs. */
static void compute_memory(const llm__compiled_t *k, const llm_execution_t *e, const llm__block_stats_t *b,
                           llm_stats_t *st)
{
    const int64_t pp = e->pipeline_par, nmb = k->nmb, bpp_i = k->bpp;
    const double bpp = (double)bpp_i, num_microbatches = (double)nmb;
    const bool training = e->training;
    const bool full_recompute = e->activation_recompute == LLM_RECOMPUTE_FULL;

    /* The whole stage. */
    double weight_space = b->weight_space * bpp;
    double act_space, act_checkpoint_size, act_grad_space;
    if (training) {
        /* 1F1B keeps at most pipeline_par microbatches in flight */
        double mem_microbatches = nmb < pp ? num_microbatches : (double)pp;
        double pp_factor = mem_microbatches;
        if (e->pipeline_interleaving > 1)
            pp_factor = mem_microbatches *
                        (1 + (double)(pp - 1) / (double)(e->pipeline_interleaving * pp));
        if (full_recompute) {
            act_space = b->act_working_space;
            act_checkpoint_size = bpp * b->act_checkpoint_size * pp_factor;
            if (b->act_storage_space > 0) /* blocks left out of recompute_blocks */
                act_space += b->act_storage_space * (bpp * pp_factor - 1);
        } else {
            act_checkpoint_size = 0;
            act_space = b->act_working_space + b->act_storage_space * (bpp * pp_factor - 1);
        }
        act_grad_space = b->act_grad_space;
    } else {
        act_space = b->act_working_space;
        act_checkpoint_size = 0;
        act_grad_space = 0;
    }
    double weight_grad_space = 0, optimizer_space = 0;
    if (training) {
        weight_grad_space = bpp_i == 1 ? b->weight_grad_space_no_sharding
                                       : b->weight_grad_space_no_sharding +
                                             b->weight_grad_space * (bpp - 1);
        optimizer_space = b->optimizer_space * bpp;
    }

    /* Minimum tier-1 footprints when the corresponding state is offloaded (double-buffered
     * blocks). Calculon leaves the inference checkpoint value undefined; it is 0. */
    st->weight_space_with_offload = b->weight_space * 2;
    st->act_space_with_offload =
        !full_recompute ? b->act_working_space + b->act_storage_space : b->act_working_space;
    st->act_checkpoint_size_with_offload =
        training && full_recompute ? b->act_checkpoint_size * 2 : 0;
    st->act_grad_space_with_offload = act_grad_space;
    st->weight_grad_space_with_offload =
        training ? b->weight_grad_space_no_sharding + b->weight_grad_space : 0;
    st->optimizer_space_with_offload = training ? b->optimizer_space * 2 : 0;

    st->weight_space = weight_space;
    st->act_space = act_space;
    st->act_checkpoint_size = training && full_recompute ? act_checkpoint_size : 0;
    st->act_grad_space = act_grad_space;
    st->weight_grad_space = weight_grad_space;
    st->optimizer_space = optimizer_space;

    /* Capacity needed in each tier. */
    double tier1 = 0, tier2 = 0;
    if (e->weight_offload) {
        tier1 += st->weight_space_with_offload;
        tier2 += st->weight_space;
    } else {
        tier1 += st->weight_space;
    }
    if (e->activations_offload) {
        if (!full_recompute) {
            tier1 += st->act_space_with_offload;
            tier2 += st->act_space;
        } else {
            tier1 += st->act_space_with_offload;
            tier1 += st->act_checkpoint_size_with_offload;
            tier2 += st->act_checkpoint_size;
        }
    } else {
        tier1 += st->act_space;
        tier1 += st->act_checkpoint_size;
    }
    if (e->optimizer_offload) {
        tier1 += st->weight_grad_space_with_offload;
        tier1 += st->optimizer_space_with_offload;
        tier2 += b->weight_grad_space * bpp;
        tier2 += st->optimizer_space;
    } else {
        tier1 += st->weight_grad_space + st->optimizer_space;
    }
    tier1 += st->act_grad_space;
    st->proc_mem_tier1_cap_req = tier1;
    st->proc_mem_tier2_cap_req = tier2;

}

/* A chunk's base and edge blocks (the edge block also sends the pipeline message): their
 * forward and backward times without offload, the offload traffic they cannot hide, and the
 * sum of both (Calculon's per-block get_fw_time / get_bw_time). */
typedef struct {
    double act_offload_block, fw_offload_size, bw_offload_size;
    double base_fw_no_offload, edge_fw_no_offload, base_bw_no_offload, edge_bw_no_offload;
    double base_fw_overhead, edge_fw_overhead, base_bw_overhead, edge_bw_overhead;
    double base_fw, edge_fw, base_bw, edge_bw;
} block_times_t;

/* One pipeline chunk of a processor's blocks, as the bubble and the data-parallel overlap see
 * it. */
typedef struct {
    double blocks, baseblocks, edgeblocks; /* blocks per chunk: all but one base, one edge */
    double fw_pp_time, bw_pp_time;         /* one pipeline message forward and backward */
    double fw_time, bw_time;
    double dp_overlap_time;       /* what gradient reduction may hide behind: not memory traffic */
    double dp_compute_time;       /* of it, the compute (processor_usage slows it) */
    double block_dp_compute_time; /* the same for one block */
} chunk_t;

/* The data-parallel reduction as run: per block, exposed and on the link per step, and the
 * bandwidth that would hide it behind a chunk and behind the tail. */
typedef struct {
    double block_size, block_time, exposed, link, req_chunk, req_tail;
} dp_reduction_t;

/* Offload traffic per block and the base and edge block times with and without it. */
static void block_times(llm__ctx_t *c, const llm_execution_t *e, const llm__block_stats_t *b,
                        const chunk_t *ch, block_times_t *t)
{
    const bool training = e->training;
    const bool full_recompute = e->activation_recompute == LLM_RECOMPUTE_FULL;
    t->act_offload_block = full_recompute ? b->act_checkpoint_size : b->act_storage_space;
    t->fw_offload_size = max2(e->weight_offload ? b->weight_space : 0,
                              e->activations_offload ? t->act_offload_block : 0);
    t->bw_offload_size = 0;
    if (training) {
        if (e->weight_offload)
            t->bw_offload_size += b->weight_space;
        if (e->activations_offload)
            t->bw_offload_size += t->act_offload_block;
        if (e->optimizer_offload)
            t->bw_offload_size += b->optimizer_space;
    }
    double fw_offload_time = t->fw_offload_size / llm__mem2_throughput(c, t->fw_offload_size);
    double bw_offload_time =
        training ? t->bw_offload_size / llm__mem2_throughput(c, t->bw_offload_size) : 0;

    t->base_fw_no_offload = b->fw.time + b->fw_tp_exposed[0];
    t->edge_fw_no_offload = b->fw.time + b->fw_tp_exposed[1] + ch->fw_pp_time;
    t->base_fw_overhead = max2(0, fw_offload_time + b->fw.mem_time - t->base_fw_no_offload);
    t->edge_fw_overhead = max2(0, fw_offload_time + b->fw.mem_time - t->edge_fw_no_offload);
    t->base_fw = t->base_fw_no_offload + t->base_fw_overhead;
    t->edge_fw = t->edge_fw_no_offload + t->edge_fw_overhead;
    t->base_bw_no_offload = b->re.time + b->recomm_exposed[0] + b->agrad.time + b->wgrad.time +
                            b->agrad_tp_exposed[0];
    t->edge_bw_no_offload = b->re.time + b->recomm_exposed[1] + b->agrad.time + b->wgrad.time +
                            b->agrad_tp_exposed[1] + ch->bw_pp_time;
    t->base_bw_overhead = max2(0, bw_offload_time + b->agrad.mem_time + b->wgrad.mem_time -
                                      t->base_bw_no_offload);
    t->edge_bw_overhead = max2(0, bw_offload_time + b->agrad.mem_time + b->wgrad.mem_time -
                                      t->edge_bw_no_offload);
    t->base_bw = t->base_bw_no_offload + t->base_bw_overhead;
    t->edge_bw = t->edge_bw_no_offload + t->edge_bw_overhead;
}

/* What data-parallel communication may hide behind in a chunk (not memory traffic; the
 * optimizer step too when it is not sharded; not the TP collectives when they share its
 * network). */
static void dp_overlap_windows(const llm_execution_t *e, const llm__block_stats_t *b,
                               const block_times_t *t, chunk_t *ch)
{
    double base_window = t->base_bw - (b->agrad.mem_time + b->wgrad.mem_time + b->re.mem_time);
    double edge_window = t->edge_bw - (b->agrad.mem_time + b->wgrad.mem_time + b->re.mem_time);
    double block_compute = b->agrad.flops_time + b->wgrad.flops_time + b->re.flops_time;
    if (!e->optimizer_sharding) {
        base_window += b->optim.time - b->optim.mem_time;
        edge_window += b->optim.time - b->optim.mem_time;
        block_compute += b->optim.flops_time;
    }
    if (e->data_par_net == e->tensor_par_net) {
        base_window -= b->recomm_time[0] + b->agrad_tp_time[0];
        edge_window -= b->recomm_time[1] + b->agrad_tp_time[1];
    }
    ch->dp_overlap_time = ch->baseblocks * base_window + ch->edgeblocks * edge_window;
    ch->block_dp_compute_time = block_compute;
    ch->dp_compute_time = ch->blocks * block_compute;
}

/* Pipeline bubble, shortened by the blocks later stages lack, lengthened when the
 * microbatches do not fill the interleaved schedule. */
static double bubble_time(const llm__compiled_t *k, const llm_execution_t *e,
                          const block_times_t *t, const chunk_t *ch)
{
    const int64_t pp = e->pipeline_par, nmb = k->nmb;
    const double chunk_time = ch->fw_time + ch->bw_time;
    double bubble_reduction_time;
    if (ch->baseblocks > 0)
        bubble_reduction_time = (double)k->bubble_reduction_blocks *
                                (t->base_fw + t->edge_fw + t->base_bw + t->edge_bw) / 2;
    else
        bubble_reduction_time = (double)k->bubble_reduction_blocks * (t->edge_fw + t->edge_bw);
    double chunks_in_bubble = (double)(pp - 1);
    double num_overlappable_chunks = (double)(e->pipeline_interleaving - 1);
    double microbatch_shortage = (double)(pp - nmb % pp);
    double extra_interleaving_bubbles =
        nmb % pp != 0 ? num_overlappable_chunks * microbatch_shortage : 0;
    return chunks_in_bubble * chunk_time +
           (extra_interleaving_bubbles * chunk_time - bubble_reduction_time);
}

/* Calculon's data-parallel reduction with overlap: each chunk's reduction hides behind the
 * backward of the chunks after it (less processor_usage of the compute it shares), the last
 * chunk's behind its own remaining blocks; what does not fit is exposed. */
static void overlapped_dp(const llm__compiled_t *k, const llm_execution_t *e,
                          const llm_network_t *dp_net, const llm__block_stats_t *b,
                          const block_times_t *t, const chunk_t *ch, dp_reduction_t *d)
{
    const int64_t pp = e->pipeline_par, nmb = k->nmb;
    const double bpp = (double)k->bpp;
    const double num_overlappable_chunks = (double)(e->pipeline_interleaving - 1);
    const bool dp_on_pp_net = e->data_par_net == e->pipeline_par_net;
    double pu = dp_net->processor_usage;
    double op_scalar = e->optimizer_sharding ? dp_net->ops[LLM_OP_REDUCE_SCATTER].scalar +
                                                   dp_net->ops[LLM_OP_ALL_GATHER].scalar
                                             : dp_net->ops[LLM_OP_ALL_REDUCE].scalar;
    double last_chunk_overlap_size = ch->blocks - 1;
    double overlap_window = (double)pp * ch->dp_overlap_time;
    double overlap_compute = (double)pp * ch->dp_compute_time;
    double chunk_dp_time = ch->blocks * d->block_time;
    double num_overlapped_pp = 0;
    if (dp_on_pp_net) {
        double cap = nmb % pp != 0 ? (double)(nmb % pp) : (double)pp;
        num_overlapped_pp = min2(py_floordiv(chunk_dp_time, ch->bw_time), cap);
    }
    double overlap_inflection = chunk_dp_time -
                                (overlap_window - num_overlapped_pp * ch->bw_pp_time) +
                                overlap_compute * pu;
    double overlappable_chunks_exposed_time =
        overlap_inflection > 0 ? num_overlappable_chunks * overlap_inflection
                               : num_overlappable_chunks * chunk_dp_time * pu;
    double chunk_overlap_time = overlap_window + overlap_compute * pu;
    if (dp_on_pp_net)
        chunk_overlap_time -= ch->bw_pp_time;
    chunk_overlap_time *= num_overlappable_chunks;
    if (chunk_overlap_time > 0)
        d->req_chunk = ch->blocks * d->block_size / chunk_overlap_time * op_scalar;
    double last_chunk_window = 0;
    if (ch->baseblocks > 0) {
        last_chunk_window = ch->dp_overlap_time - ch->bw_pp_time - (t->base_bw + t->edge_bw) / 2;
        if (!e->optimizer_sharding)
            last_chunk_window += b->optim.time - b->optim.mem_time;
    }
    double last_chunk_inflection = (last_chunk_overlap_size * d->block_time) +
                                   (ch->block_dp_compute_time * pu - last_chunk_window);
    double last_chunk_exposed_time = last_chunk_inflection > 0
                                         ? last_chunk_inflection
                                         : last_chunk_overlap_size * d->block_time * pu;
    double exposed_time = overlappable_chunks_exposed_time + last_chunk_exposed_time;
    double tail_overlap_time = last_chunk_window + last_chunk_overlap_size * d->block_time * pu;
    if (tail_overlap_time > 0)
        d->req_tail = ch->blocks * d->block_size / tail_overlap_time * op_scalar;
    d->exposed = d->block_time + exposed_time;
    d->link = bpp * d->block_time;
}

/* Data-parallel gradient reduction per step: per block a reduce-scatter and all-gather (sharded
 * optimizer) or an all-reduce, every block's exposed without overlap. */
static void dp_reduction(const llm__compiled_t *k, const llm_system_t *s, const llm_execution_t *e,
                         const llm_network_t *dp_net, const llm__block_stats_t *b,
                         const block_times_t *t, const chunk_t *ch, dp_reduction_t *d)
{
    const int64_t dp = e->data_par;
    memset(d, 0, sizeof *d);
    if (dp <= 1 || !e->training)
        return;
    d->block_size = b->weight_space;
    const llm_group_t g = {(double)dp, (double)(e->tensor_par * llm_context_par(e)),
                           e->data_par_net};
    if (e->optimizer_sharding)
        d->block_time = llm_collective_time(s, LLM_COLL_REDUCE_SCATTER, d->block_size, &g) +
                        llm_collective_time(s, LLM_COLL_ALL_GATHER, d->block_size, &g);
    else
        d->block_time = llm_collective_time(s, LLM_COLL_ALL_REDUCE, d->block_size, &g);
    if (e->data_par_overlap) {
        overlapped_dp(k, e, dp_net, b, t, ch, d);
    } else {
        d->exposed = (double)k->bpp * d->block_time;
        d->link = d->exposed;
    }
}

/* Offload bandwidth needed to hide the transfers behind one block's compute. */
static void offload_requirements(const llm_execution_t *e, const llm__block_stats_t *b,
                                 const block_times_t *t, llm_stats_t *st)
{
    double fw_window = min2(t->base_fw_no_offload - b->fw.mem_time,
                            t->edge_fw_no_offload - b->fw.mem_time);
    double bw_window = min2(t->base_bw_no_offload - (b->agrad.mem_time + b->wgrad.mem_time),
                            t->edge_bw_no_offload - (b->agrad.mem_time + b->wgrad.mem_time));
    st->act_offload_bw_req = t->act_offload_block / fw_window;
    st->weight_offload_bw_req = b->weight_space / fw_window;
    st->optim_offload_bw_req =
        e->training ? (b->weight_grad_space + b->optimizer_space) / bw_window : 0;
    st->offload_mem_bw_req = e->training ? max2(t->fw_offload_size / fw_window,
                                                t->bw_offload_size / bw_window)
                                         : t->fw_offload_size / fw_window;
}

/* The step from the block costs (Calculon's _compute_batch_stats and get_* times): pipeline
 * chunks of base and edge blocks, tensor/pipeline communication, offload overheads, the bubble,
 * the data-parallel reduction and its overlap, the total time and the efficiencies. */
static void compute_step(const llm__compiled_t *k, llm__ctx_t *c, const llm_system_t *s,
                         const llm_execution_t *e, const llm__block_stats_t *b, llm_stats_t *st)
{
    const int64_t pp = e->pipeline_par, nmb = k->nmb, bpp_i = k->bpp;
    const double num_microbatches = (double)nmb;
    const llm__sizes_t z = k->z;
    const bool training = e->training;
    const double bpp = (double)bpp_i;
    const double chunks_per_proc = (double)e->pipeline_interleaving;
    /* the mean chunk: exact when the chunks divide the stage (always with Calculon's block),
     * and with uneven chunks every per-chunk sum below still totals the stage's bpp blocks */
    chunk_t ch = {.blocks = (double)bpp_i / chunks_per_proc};
    ch.baseblocks = ch.blocks - 1;
    ch.edgeblocks = 1;

    /* Pipeline messages. */
    double block_fw_pp_size = 0;
    if (pp > 1)
        block_fw_pp_size = (e->tensor_par_comm_type != LLM_TP_COMM_AR
                                ? (double)z.seq_par_activation_size
                                : (double)z.activation_size) * c->bpe;
    double block_bw_pp_size = training ? block_fw_pp_size : 0;

    /* Whole-step compute totals. */
    const double mult = bpp * num_microbatches;
    const double per_chunk = num_microbatches * chunks_per_proc;
#define CHUNKED(arr) (per_chunk * ((ch.baseblocks * (arr)[0]) + (ch.edgeblocks * (arr)[1])))
    double tp_comm_time_link = CHUNKED(b->fw_tp_time) + CHUNKED(b->agrad_tp_time);
    double tp_comm_time_exposed = CHUNKED(b->fw_tp_exposed) + CHUNKED(b->agrad_tp_exposed);
    double recomm_time_link = CHUNKED(b->recomm_time);
    double recomm_time_exposed = CHUNKED(b->recomm_exposed);
#undef CHUNKED

    /* Calculon charges the p2p latency even with one pipeline stage (a 0-byte message). */
    /* neighbouring stages are tensor·context·data parallel ranks apart */
    const llm_group_t pp_pair = {2, (double)(e->tensor_par * llm_context_par(e) * e->data_par),
                                 e->pipeline_par_net};
    ch.fw_pp_time = llm_collective_time(s, LLM_COLL_P2P, block_fw_pp_size, &pp_pair);
    ch.bw_pp_time = llm_collective_time(s, LLM_COLL_P2P, block_bw_pp_size, &pp_pair);
    double num_fw_pp_p2ps = 0, num_bw_pp_p2ps = 0;
    if (pp > 1) {
        num_fw_pp_p2ps = chunks_per_proc;
        num_bw_pp_p2ps = training ? chunks_per_proc : 0;
    }
    double pp_comm_time_link = num_microbatches * num_fw_pp_p2ps * ch.fw_pp_time +
                               num_microbatches * num_bw_pp_p2ps * ch.bw_pp_time;

    block_times_t t;
    block_times(c, e, b, &ch, &t);
    ch.fw_time = (ch.baseblocks * t.base_fw) + (ch.edgeblocks * t.edge_fw);
    ch.bw_time = (ch.baseblocks * t.base_bw) + (ch.edgeblocks * t.edge_bw);
    dp_overlap_windows(e, b, &t, &ch);
    dp_reduction_t d;
    dp_reduction(k, s, e, &s->networks[e->data_par_net], b, &t, &ch, &d);

    st->block_fw_pp_size = block_fw_pp_size;
    st->block_bw_pp_size = block_bw_pp_size;
    st->block_dp_size = d.block_size;
    st->dp_bw_overlap_req_chunk = d.req_chunk;
    st->dp_bw_overlap_req_tail = d.req_tail;

    st->fw_time = mult * b->fw.time;
    st->bw_time = mult * b->agrad.time + mult * b->wgrad.time;
    st->optim_step_time = bpp * b->optim.time;
    st->recompute_time = mult * b->re.time;
    st->recomm_link_time = training ? recomm_time_link : 0;
    st->recomm_exposed_time = training ? recomm_time_exposed : 0;
    st->bubble_time = bubble_time(k, e, &t, &ch);
    st->tp_comm_link_time = tp_comm_time_link;
    st->pp_comm_link_time = pp_comm_time_link;
    st->dp_comm_link_time = training ? d.link : 0;
    st->tp_comm_exposed_time = tp_comm_time_exposed;
    st->pp_comm_exposed_time = pp_comm_time_link;
    st->dp_comm_exposed_time = training ? d.exposed : 0;
    st->fw_offload_exposed_time =
        per_chunk * ((ch.baseblocks * t.base_fw_overhead) + (ch.edgeblocks * t.edge_fw_overhead));
    st->bw_offload_exposed_time =
        training ? per_chunk * ((ch.baseblocks * t.base_bw_overhead) +
                                (ch.edgeblocks * t.edge_bw_overhead))
                 : 0;
    st->total_time = llm__sum_of_lines(st);
    offload_requirements(e, b, &t, st);

    st->useful_flops = b->useful_fw_flops + b->useful_bw_flops;
    double compute_time = st->fw_time + st->bw_time + st->optim_step_time;
    double perfect_time = bpp * num_microbatches * st->useful_flops / c->matrix_flops;
    st->compute_efficiency = perfect_time / compute_time;
    st->system_efficiency = compute_time / st->total_time;
    st->total_efficiency = perfect_time / st->total_time;
    st->sample_rate = (double)e->batch_size / st->total_time;
}

/* One block's table (blk) accumulated, with full recompute of a share of the blocks applied.
 * Costed afresh (no memo), it also gives the memory sums of its attention layers in *head
 * (NULL: not asked) and returns true: an MoE model's dense block starts from them
 * (block_memory_of), where a memo keeps the dense block's memory whole. */
static bool block_of(const fathom_model_t *m, const llm_system_t *s, const llm_execution_t *e,
                     llm__compiled_t *k, llm__block_t *blk, llm__block_stats_t *head,
                     llm__block_stats_t *b)
{
    llm__build_block(m, s, e, &k->z, blk);
    const bool headed = head && !k->c.memo;
    if (headed)
        llm__block_stats_costed(blk, &k->c, e, &k->z, true, NULL, NULL, head, b);
    else
        llm__block_stats(blk, &k->c, e, &k->z, true, b);
    const double recomputed = llm__recomputed_share(e, k);
    if (recomputed > 0 && recomputed < 1)
        recompute_some_blocks(m, s, e, k, recomputed, b);
    return headed;
}

/* The same for memory alone (llm_estimate_memory): what a block holds, no costs; like (NULL to
 * build it all) lends its attention layers (llm__build_block_like), and head (NULL: none) the
 * memory sums of those layers (block_of's), which this block's then continue: its attention
 * layers are then not read, nor built (llm__build_mlp_like). */
static void block_memory_of(const fathom_model_t *m, const llm_system_t *s,
                            const llm_execution_t *e, llm__compiled_t *k,
                            const llm__block_t *like, const llm__block_stats_t *head,
                            llm__block_stats_t *b)
{
    llm__block_t blk;
    bool attention_of_like = false;
    if (like && head)
        attention_of_like = llm__build_mlp_like(m, s, e, &k->z, like, &blk);
    else if (like)
        attention_of_like = llm__build_block_like(m, s, e, &k->z, like, &blk);
    else
        llm__build_block(m, s, e, &k->z, &blk);
    if (head && attention_of_like) {
        *b = *head;
        llm__block_memory_from(&blk, &k->c, e, true, blk.mlp_first, b);
    } else {
        llm__block_memory(&blk, &k->c, e, &k->z, true, b);
    }
    const double f = llm__recomputed_share(e, k);
    if (f > 0 && f < 1) { /* recompute_some_blocks' memory: f of a checkpoint, 1 − f kept */
        b->act_checkpoint_size *= f;
        b->act_storage_space = (1 - f) * storage_without_recompute(m, s, e, k);
    }
}

/* An MoE model's dense blocks (DeepSeek-V3's first three) keep a dense block's activations. */
static bool has_dense_blocks(const fathom_model_t *m)
{
    return !m->calculon_block && m->moe.num_experts > 0 &&
           model_moe_blocks_in(m, 0, m->num_blocks) < m->num_blocks;
}

/* The result's memory lines from its statistics: what each tier needs against what it holds,
 * and the layout's blocks per processor and microbatches. */
static void memory_verdict(const llm_system_t *s, const llm__compiled_t *k, llm_result_t *out)
{
    out->mem_tier1_bytes = out->stats.proc_mem_tier1_cap_req;
    out->mem_tier2_bytes = out->stats.proc_mem_tier2_cap_req;
    out->mem_tier1_capacity_bytes = s->mem1.gib * 1073741824.0;
    out->mem_tier2_capacity_bytes = s->mem2.gib * 1073741824.0;
    out->fits_tier1 = !(out->mem_tier1_bytes > out->mem_tier1_capacity_bytes);
    out->fits_tier2 = !(out->mem_tier2_bytes > out->mem_tier2_capacity_bytes);
    out->fits_memory = out->fits_tier1 && out->fits_tier2;
    out->blocks_per_proc = k->bpp;
    out->num_microbatches = k->nmb;
}

/* The collectives the execution's stack costs s with (llm_collectives_t): s's own, or NCCL's
 * when s leaves them to a PyTorch stack. */
static llm_collectives_t stack_collectives(const llm_system_t *s, const llm_execution_t *e)
{
    if (s->collectives != LLM_COLLECTIVES_BY_STACK || e->stack == LLM_STACK_MEGATRON)
        return s->collectives;
    return LLM_COLLECTIVES_NCCL;
}

/* The system as the execution's stack costs it: s itself, or a copy in buf with the stack's
 * collectives. */
static const llm_system_t *stack_system(const llm_system_t *s, const llm_execution_t *e,
                                        llm_system_t *buf)
{
    const llm_collectives_t collectives = stack_collectives(s, e);
    if (collectives == s->collectives)
        return s;
    *buf = *s;
    buf->collectives = collectives;
    return buf;
}

int llm_estimate_memory(const fathom_model_t *m, const llm_system_t *sys,
                        const llm_execution_t *e, llm_result_t *out, fathom_error_t *err)
{
    llm_system_t buf;
    const llm_system_t *s = stack_system(sys, e, &buf);
    if (m->calculon_block) /* Calculon's memory comes out of its statistics */
        return llm_estimate(m, s, e, out, err);
    llm__compiled_t k;
    if (compile(m, s, e, NULL, 0, &k, err))
        return -1;
    llm__block_stats_t b, dense;
    block_memory_of(m, s, e, &k, NULL, NULL, &b);
    const bool has_dense = has_dense_blocks(m);
    if (has_dense) {
        fathom_model_t d = *m;
        d.moe.num_experts = 0;
        block_memory_of(&d, s, e, &k, NULL, NULL, &dense);
    }
    memset(out, 0, sizeof *out);
    llm__stages_memory(m, s, e, &k, &b, has_dense ? &dense : NULL, &out->extra);
    llm__memory(m, e, &out->stats, &out->extra);
    memory_verdict(s, &k, out);
    return 0;
}

int llm_estimate(const fathom_model_t *m, const llm_system_t *s, const llm_execution_t *e,
                 llm_result_t *out, fathom_error_t *err)
{
    return llm_estimate_memo(m, s, e, NULL, out, err);
}

int llm_estimate_memo(const fathom_model_t *m, const llm_system_t *sys, const llm_execution_t *e,
                      llm_memo_t *memo, llm_result_t *out, fathom_error_t *err)
{
    /* with a memo, its copy of the system as the stack costs it (llm__memo_system) */
    llm_system_t buf;
    uint64_t generation = 0;
    const llm_system_t *s =
        memo ? llm__memo_system(memo, sys, stack_collectives(sys, e), &generation)
             : stack_system(sys, e, &buf);
    llm__compiled_t k;
    if (compile(m, s, e, memo, generation, &k, err))
        return -1;
    llm__block_stats_t b, dense, head;
    llm__block_t blk;
    const bool has_dense = has_dense_blocks(m);
    const bool headed = block_of(m, s, e, &k, &blk, has_dense ? &head : NULL, &b);
    if (has_dense) { /* their time is llm__moe_step's: only their memory is read here */
        fathom_model_t d = *m;
        d.moe.num_experts = 0;
        block_memory_of(&d, s, e, &k, &blk, headed ? &head : NULL, &dense);
    }

    memset(out, 0, sizeof *out);
    llm_stats_t *st = &out->stats;
    copy_block_stats(&b, st);
    compute_memory(&k, e, &b, st);
    compute_step(&k, &k.c, s, e, &b, st);
    llm__stages(m, s, e, &k, &b, has_dense ? &dense : NULL, st, &out->extra);
    out->extra.expert_parallel_tier = -1;
    if (m->moe.num_experts > 0 || m->mtp_blocks > 0)
        llm__moe_step(m, s, e, &k, &b, st, &out->extra);
    llm__host_step(m, s, e, &k, &b, st, &out->extra);
    if (!m->calculon_block)
        llm__memory(m, e, st, &out->extra);

    if (k.c.uncovered) {
        char field[FATHOM_ERROR_FIELD_MAX];
        if (strcmp(k.c.uncovered, "mem1") == 0 || strcmp(k.c.uncovered, "mem2") == 0)
            snprintf(field, sizeof field, "system.%s.MB_efficiency", k.c.uncovered);
        else if (strcmp(k.c.uncovered, "matrix8") == 0)
            snprintf(field, sizeof field, "system.matrix.float8.gflops_efficiency");
        else
            snprintf(field, sizeof field, "system.%s.%s.gflops_efficiency", k.c.uncovered,
                     llm_datatype_name(e->datatype));
        memset(out, 0, sizeof *out);
        return fathom_error_set(err, FATHOM_E_INFEASIBLE_EXECUTION, field,
                                "the efficiency curve does not cover an operation this execution "
                                "performs (give a point with threshold 0)");
    }
    /* A rate the system states near 0 (a bandwidth, an efficiency, a peak of 1e-200) passes
     * every range check and then takes forever, and the answer's products of the step time
     * (energy, dollars, days) overflow: refuse a step beyond 10^12 s (31,700 years) */
    if (!(st->total_time <= LLM_MAX_STEP_S) || !isfinite(out->stats.proc_mem_tier1_cap_req) ||
        !isfinite(out->stats.proc_mem_tier2_cap_req)) {
        memset(out, 0, sizeof *out);
        return fathom_error_set(err, FATHOM_E_INFEASIBLE_EXECUTION, "system",
                                "gives a step of more than 1e12 s or no finite memory: a rate, "
                                "bandwidth or efficiency of the system is too close to 0");
    }

    memory_verdict(s, &k, out);
    return 0;
}

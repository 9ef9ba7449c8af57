/* llm_finetune.c — fine-tuning in the step model (execution.finetune; doc/finetune.md).
 *
 * FULL is pre-training's step on other data: nothing changes. LORA and QLORA change the layer
 * tables every estimate costs (llm_layers.c and llm_moe.c call llm__finetune_table at the end of
 * each table they build), so time, memory and the data-parallel traffic follow by the ordinary
 * accumulation (llm_model.c, llm_stages.c, llm_memory.c):
 *   1. every layer with weights is frozen: no weight-gradient GEMM (dgrad = dy·Wᵀ still runs to
 *      carry the gradient to the layers below), no gradient buffer, no fp32 master copy, no Adam
 *      moments, nothing for data parallelism to reduce; its weights are held in the base
 *      datatype (llm_finetune_base_bytes) and, when that is not the GEMM's datatype (QLoRA's
 *      NF4), dequantized before each forward and input-gradient GEMM (llm__layer_mem_accessed).
 *      The router of a mixture of experts stays frozen (PEFT's names do not reach it);
 *   2. each targeted projection W (n_in → n_out) gets LoRA's path x·A·B (Hu et al. 2021, eq. 3)
 *      as two trainable linear layers, A: n_in × r and B: r × n_out, laid out as the projection
 *      is: a column-parallel W (q, k, v, gate, up, MLA's q_b and kv_b) splits its outputs, so A
 *      is whole and B holds n_out/tp columns; a row-parallel W (o, down) splits its inputs, so A
 *      holds n_in/tp rows and B is whole; a replicated W (MLA's q_a and kv_a) has both whole.
 *      A routed expert's projection gets its own A and B per expert (PEFT wraps every expert's
 *      Linear), split by expert tensor parallelism, run as grouped GEMMs over the rank's
 *      num_experts/EP experts on the rows routed to them; the shared experts' are one MLP of
 *      shared_experts·width, as the checkpoints hold them. Per token each matrix costs
 *      2·rows·cols FLOPs forward, as much for its input gradient and as much for its weight
 *      gradient;
 *   3. A reads the projection's own input x, kept for it; B keeps A's output (r per token) for
 *      its weight gradient; B's output gradient is the projection's;
 *   4. a frozen linear layer without an adapter keeps no input: its weight gradient
 *      (dW = xᵀ·dy) is the only thing that reads x in backward, the input gradient
 *      (dx = dy·Wᵀ) needs the weight alone. Its stored input is dropped — its own copy, and a
 *      copy shared by a group (the TP all-gather's sliver and the fork before Q, K and V; the
 *      router's input the shared experts read) when no linear layer of the group needs it —
 *      unless the layer reruns in backward (recompute needs the rerun's input). The fused
 *      attention kernel's backward reads its output O, which the out projection kept: when
 *      that projection drops it, the kernel keeps O itself (FlashAttention's backward,
 *      Dao 2023, Algorithm 2, reads O). Without the weight gradient, the all-gather that
 *      sequence parallelism redoes in backward for it (seq_par_ag_redo) is not run either. */
#include <string.h>

#include "llm_internal.h"

const char *const llm_finetune_method_names[] = {"none", "full", "lora", "qlora", NULL};
const char *const llm_lora_target_names[] = {
    "q_proj",   "k_proj",   "v_proj",   "o_proj",             "gate_proj", "up_proj",
    "down_proj", "q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj", NULL};
const char *const llm_base_datatype_names[] = {"float8", "float16", "bfloat16", "float32", "nf4",
                                               NULL};

/* NF4 with double quantization (QLoRA sec. 3): 4 bits a weight, an 8-bit constant per block of
 * 64 weights, a 32-bit constant per block of 256 of those: 4 + 8/64 + 32/16384 = 4.127 bits. */
#define NF4_BITS (4.0 + 8.0 / 64.0 + 32.0 / (64.0 * 256.0))

#define MLP_BITS (LLM_LORA_GATE | LLM_LORA_UP | LLM_LORA_DOWN)

double llm_finetune_base_bytes(int base_datatype)
{
    return base_datatype == LLM_BASE_NF4 ? NF4_BITS / 8.0
                                         : (double)llm_datatype_bytes((llm_datatype_t)base_datatype);
}

static bool has_adapters(const llm_execution_t *e)
{
    return e->finetune.method == LLM_FINETUNE_LORA || e->finetune.method == LLM_FINETUNE_QLORA;
}

/* ---- the projections of a model ---- */

/* Whether the model has projection `bit` in any block (with MLA: q_proj only without a query
 * bottleneck, no k_proj or v_proj). */
static bool present(const fathom_model_t *m, unsigned bit)
{
    const bool mla = m->mla.present, q_rank = mla && m->mla.q_lora_rank > 0;
    switch (bit) {
    case LLM_LORA_Q: return !q_rank;
    case LLM_LORA_K:
    case LLM_LORA_V: return !mla;
    case LLM_LORA_GATE: return m->gated_mlp;
    case LLM_LORA_Q_A:
    case LLM_LORA_Q_B: return q_rank;
    case LLM_LORA_KV_A:
    case LLM_LORA_KV_B: return mla;
    default: return true; /* o, up, down */
    }
}

/* Which MLP a gate, up or down projection belongs to. */
typedef enum { MLP_DENSE, MLP_ROUTED, MLP_SHARED } mlp_t;

/* The width of that MLP: the dense feedforward, one routed expert's, or the shared experts'
 * together (one MLP in the checkpoints: DeepSeek's shared_experts, Qwen's shared_expert). */
static double mlp_width(const fathom_model_t *m, mlp_t kind)
{
    const model_moe_t *x = &m->moe;
    return kind == MLP_ROUTED ? (double)x->expert_feedforward
           : kind == MLP_SHARED
               ? (double)(x->shared_experts * x->shared_expert_feedforward)
               : (double)m->feedforward;
}

/* The whole shape n_in → n_out of projection `bit` (one expert's for a routed one). */
static void whole_shape(const fathom_model_t *m, unsigned bit, mlp_t kind, double *in, double *out)
{
    const model_mla_t *a = &m->mla;
    const double h = (double)m->hidden, n = (double)m->attn_heads, d = (double)m->attn_size;
    const double qk = (double)(a->qk_nope_head_dim + a->qk_rope_head_dim);
    *in = h;
    switch (bit) {
    case LLM_LORA_Q: *out = a->present ? n * qk : n * d; break;
    case LLM_LORA_K:
    case LLM_LORA_V: *out = (double)model_kv_heads(m) * d; break;
    case LLM_LORA_O:
        *in = a->present ? n * (double)a->v_head_dim : n * d;
        *out = h;
        break;
    case LLM_LORA_Q_A: *out = (double)a->q_lora_rank; break;
    case LLM_LORA_Q_B:
        *in = (double)a->q_lora_rank;
        *out = n * qk;
        break;
    case LLM_LORA_KV_A: *out = (double)(a->kv_lora_rank + a->qk_rope_head_dim); break;
    case LLM_LORA_KV_B:
        *in = (double)a->kv_lora_rank;
        *out = n * (double)(a->qk_nope_head_dim + a->v_head_dim);
        break;
    case LLM_LORA_DOWN:
        *in = mlp_width(m, kind);
        *out = h;
        break;
    default: *out = mlp_width(m, kind); break; /* gate, up */
    }
}

/* The projections LoRA adapts in a model: the targets it has. */
static unsigned adapted_bits(const fathom_model_t *m, const llm_execution_t *e)
{
    unsigned bits = 0;
    for (int i = 0; i < LLM_LORA_NUM_TARGETS; i++)
        if ((e->finetune.targets & (1u << i)) && present(m, 1u << i))
            bits |= 1u << i;
    return bits;
}

/* Adapter parameters of one block (moe: an MoE block): *total, and *active a token runs through
 * (top_k of the routed experts). */
static void block_adapters(const fathom_model_t *m, const llm_execution_t *e, bool moe,
                           double *total, double *active)
{
    const unsigned bits = adapted_bits(m, e);
    const double r = (double)e->finetune.rank;
    const model_moe_t *x = &m->moe;
    *total = *active = 0;
    for (int i = 0; i < LLM_LORA_NUM_TARGETS; i++) {
        const unsigned bit = 1u << i;
        if (!(bits & bit))
            continue;
        double in, out;
        if (!(bit & MLP_BITS) || !moe) {
            whole_shape(m, bit, MLP_DENSE, &in, &out);
            *total += r * (in + out);
            *active += r * (in + out);
            continue;
        }
        if (!e->finetune.skip_routed_experts) {
            whole_shape(m, bit, MLP_ROUTED, &in, &out);
            *total += (double)x->num_experts * r * (in + out);
            *active += (double)x->top_k * r * (in + out);
        }
        if (x->shared_experts > 0) {
            whole_shape(m, bit, MLP_SHARED, &in, &out);
            *total += r * (in + out);
            *active += r * (in + out);
        }
    }
}

/* Σ over the blocks and the MTP depths (each a block of the last block's kind). */
static void model_adapters(const fathom_model_t *m, const llm_execution_t *e, double *total,
                           double *active)
{
    double t[2], a[2];
    block_adapters(m, e, false, &t[0], &a[0]);
    block_adapters(m, e, true, &t[1], &a[1]);
    const double moe_blocks = (double)model_moe_blocks_in(m, 0, m->num_blocks);
    const double dense = (double)m->num_blocks - moe_blocks;
    const int last = model_block_is_moe(m, m->num_blocks - 1) ? 1 : 0;
    const double depths = (double)m->mtp_blocks;
    *total = dense * t[0] + moe_blocks * t[1] + depths * t[last];
    *active = dense * a[0] + moe_blocks * a[1] + depths * a[last];
}

/* The parameters a step trains (active: those a token runs through). */
static double trained(const fathom_model_t *m, const llm_execution_t *e, bool active)
{
    if (!has_adapters(e)) {
        model_params_t p;
        model_parameters(m, &p);
        return active ? p.active : p.total;
    }
    double total, per_token;
    model_adapters(m, e, &total, &per_token);
    return active ? per_token : total;
}

double llm_finetune_trainable_params(const fathom_model_t *m, const llm_execution_t *e)
{
    return trained(m, e, false);
}

double llm_finetune_active_params(const fathom_model_t *m, const llm_execution_t *e)
{
    return trained(m, e, true);
}

double llm_step_model_flops(const fathom_model_t *m, const llm_execution_t *e)
{
    const double f = llm_model_flops(m, e->batch_size, e->training);
    if (!has_adapters(e) || !e->training)
        return f;
    const double tokens = (double)e->batch_size * (double)m->seq_size;
    return f * 2.0 / 3.0 + 6.0 * tokens * llm_finetune_active_params(m, e);
}

/* ---- refusals ---- */

/* The narrowest side of projection `bit` over the MLPs it adapts: the dense MLP (a dense model,
 * or an MoE model's dense blocks), one routed expert (unless left out), the shared experts. */
static double narrowest(const fathom_model_t *m, const llm_execution_t *e, unsigned bit)
{
    const model_moe_t *x = &m->moe;
    const bool moe = x->num_experts > 0;
    const mlp_t kinds[3] = {MLP_DENSE, MLP_ROUTED, MLP_SHARED};
    const bool has[3] = {!moe || x->first_dense_blocks > 0 || x->every > 1,
                         moe && !e->finetune.skip_routed_experts, moe && x->shared_experts > 0};
    double least = -1;
    for (int k = 0; k < 3; k++) {
        if (k > 0 && !(bit & MLP_BITS))
            break; /* attention: one shape */
        if ((bit & MLP_BITS) && !has[k])
            continue;
        double in, out;
        whole_shape(m, bit, kinds[k], &in, &out);
        const double side = in < out ? in : out;
        least = least < 0 || side < least ? side : least;
    }
    return least;
}

int llm_finetune_check(const fathom_model_t *m, const llm_execution_t *e, fathom_error_t *err)
{
    const llm_finetune_t *f = &e->finetune;
    if (f->method == LLM_FINETUNE_NONE)
        return 0;
    if (!e->training)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.finetune",
                                "fine-tuning is training: needs execution.training true");
    if (!has_adapters(e))
        return 0;
    if (m->calculon_block)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.finetune.method",
                                "%s on Calculon's 2020 block is not modelled: its layers have no "
                                "projection names to adapt (\"full\" fine-tunes any model)",
                                llm_finetune_method_names[f->method]);
    if (e->fp8_params)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.fp8_params",
                                "FP8 primary weights are for weights that train: a frozen base "
                                "takes finetune.base_datatype instead");
    if (f->skip_routed_experts && m->moe.num_experts == 0)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.finetune.routed_experts",
                                "the model has no routed experts (model.moe)");
    /* an explicit list names only projections the model has (all-linear takes what it has) */
    if (f->targets != LLM_LORA_ALL_TARGETS)
        for (int i = 0; i < LLM_LORA_NUM_TARGETS; i++)
            if ((f->targets & (1u << i)) && !present(m, 1u << i))
                return fathom_error_set(
                    err, FATHOM_E_INVALID_FIELD, "execution.finetune.targets",
                    "names %s, which this model does not have (%s); leave targets out for "
                    "every projection it has",
                    llm_lora_target_names[i],
                    (1u << i) == LLM_LORA_GATE ? "its MLP is not gated"
                    : m->mla.present ? "multi-latent attention: q_a_proj, q_b_proj (or q_proj "
                                       "without a query bottleneck), kv_a_proj_with_mqa, "
                                       "kv_b_proj, o_proj"
                                     : "no multi-latent attention (model.mla)");
    const unsigned bits = adapted_bits(m, e);
    if (f->rank < 1 || bits == 0)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.finetune.targets",
                                "names no projection this model has");
    for (int i = 0; i < LLM_LORA_NUM_TARGETS; i++) {
        if (!(bits & (1u << i)))
            continue;
        const double side = narrowest(m, e, 1u << i);
        if (side >= 0 && (double)f->rank > side)
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.finetune.rank",
                                    "must be at most the narrowest targeted projection's width "
                                    "(%s: %.0f), got %lld",
                                    llm_lora_target_names[i], side, (long long)f->rank);
    }
    return 0;
}

/* ---- the layer tables ---- */

static bool is_linear(const llm__layer_t *l)
{
    return l->kind == LLM__LINEAR || l->kind == LLM__LINEAR_OVERLAPPED;
}

/* A and B of projection `bit` beside layer `base` (header, 2 and 3). */
static void add_adapter(const fathom_model_t *m, const llm_execution_t *e, llm__block_t *t,
                        const llm__layer_t *base, unsigned bit)
{
    const mlp_t kind = base->expert ? MLP_ROUTED : base->moe ? MLP_SHARED : MLP_DENSE;
    double in, out;
    whole_shape(m, bit, kind, &in, &out);
    const double split = base->expert ? (double)llm__expert_tensor_par(e) : (double)e->tensor_par;
    const bool row = bit == LLM_LORA_O || bit == LLM_LORA_DOWN;
    const bool replicated = bit == LLM_LORA_Q_A || bit == LLM_LORA_KV_A;
    if (row)
        in /= split;
    else if (bit == LLM_LORA_K || bit == LLM_LORA_V) /* one replicated head below kv_heads */
        out = (double)(llm__kv_heads_per_rank(m, e) * m->attn_size);
    else if (!replicated)
        out /= split;
    const double r = (double)e->finetune.rank;
    const double rows = base->expert ? base->rows : (double)llm__tokens_per_rank(m, e);
    if (t->num_layers + 2 > LLM__MAX_LAYERS)
        return; /* unreachable: LLM__MAX_LAYERS counts every adapter a block can get */
    llm__layer_t *a = base->expert ? llm__add_expert_linear(t, rows, in, r, base->groups)
                                   : llm__add_linear(t, rows, in, r);
    a->activation_space = 0; /* x, the projection's input, is kept for it (4.) */
    llm__layer_t *b = base->expert ? llm__add_expert_linear(t, rows, r, out, base->groups)
                                   : llm__add_linear(t, rows, r, out);
    b->activation_grads = 0; /* the projection's output gradient */
    /* they rerun when their projection does, keeping nothing the rerun remakes */
    a->needs_recompute = b->needs_recompute = base->needs_recompute;
    b->activation_stored = !base->needs_recompute;
    a->moe = b->moe = base->moe;
}

/* Drops what frozen projections without adapters kept for their weight gradients (header, 4.). */
static void drop_frozen_inputs(const llm_execution_t *e, llm__block_t *t)
{
    const bool rf = e->activation_recompute == LLM_RECOMPUTE_FULL;
    for (int i = 0; i < t->num_layers; i++) {
        llm__layer_t *l = &t->layers[i];
        if (l->input_group || !is_linear(l) || !l->frozen || l->adapted || l->needs_recompute ||
            !l->activation_stored)
            continue;
        l->activation_stored = false;
        llm__layer_t *attn = i > 0 ? &t->layers[i - 1] : NULL;
        if (attn && attn->kind == LLM__FUSED_ATTENTION && !attn->needs_recompute && !l->fp8)
            attn->activation_space += l->activation_space; /* O, for the kernel's backward */
    }
    for (int g = 1; g <= t->num_groups; g++) {
        bool needed = false, any = false;
        for (int i = 0; i < t->num_layers; i++) {
            const llm__layer_t *l = &t->layers[i];
            if (l->input_group != g || !is_linear(l))
                continue;
            any = true;
            needed = needed || !l->frozen || l->adapted || l->needs_recompute;
        }
        if (!any || needed)
            continue;
        for (int i = 0; i < t->num_layers; i++) {
            llm__layer_t *l = &t->layers[i];
            if (l->input_group != g)
                continue;
            l->activation_stored = false;
            /* the all-gather redone in backward served the weight gradients alone */
            if (l->kind == LLM__TP_COMM && !rf)
                l->needs_recomm = false;
        }
    }
}

void llm__finetune_table(const fathom_model_t *m, const llm_execution_t *e, llm__block_t *t)
{
    if (!has_adapters(e))
        return;
    const int frozen_end = t->num_layers;
    for (int i = 0; i < frozen_end; i++) {
        llm__layer_t *l = &t->layers[i];
        if (l->weight_space <= 0 && l->wgrad_flops <= 0)
            continue; /* no weights (an MTP depth's output layer shares the main head's) */
        l->frozen = true;
        l->wgrad_flops = 0;
        l->weight_grads = 0;
        l->optim_space = 0;
    }
    const unsigned bits = adapted_bits(m, e);
    for (int i = 0; i < frozen_end; i++) {
        llm__layer_t *l = &t->layers[i];
        if (!(l->proj & bits) || (l->expert && e->finetune.skip_routed_experts))
            continue;
        l->adapted = true;
        for (int k = 0; k < LLM_LORA_NUM_TARGETS; k++)
            if (l->proj & bits & (1u << k))
                add_adapter(m, e, t, &t->layers[i], 1u << k);
    }
    drop_frozen_inputs(e, t);
}

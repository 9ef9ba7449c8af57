/* llm_finetune.c — fine-tuning in the step model (execution.finetune; doc/finetune.md).
 *
 * FULL is pre-training's step on other data: nothing changes. LORA and QLORA change three things
 * in the layer tables every estimate costs (llm_layers.c calls llm__finetune_table at the end of
 * each table it builds), so time, memory and the data-parallel traffic follow by the ordinary
 * accumulation (llm_model.c, llm_stages.c):
 *   1. every layer with weights is frozen: no weight-gradient GEMM (dgrad = dy·Wᵀ still runs to
 *      carry the gradient to the layers below), no gradient buffer, no fp32 master copy, no Adam
 *      moments, nothing for data parallelism to reduce; its weights are held in the base
 *      datatype (llm_finetune_base_bytes) and, when that is not the GEMM's datatype (QLoRA's
 *      NF4), dequantized before each forward and input-gradient GEMM (llm__layer_mem_accessed);
 *   2. each targeted projection W (n_in → n_out) of a block gets LoRA's path x·A·B (Hu et al.
 *      2021, eq. 3) as two trainable linear layers, A: n_in × r and B: r × n_out, laid out as
 *      the projection is under tensor parallelism: a column-parallel W (q, k, v, gate, up)
 *      splits its outputs, so every rank holds A whole and B's n_out/tp columns; a row-parallel W
 *      (o, down) splits its inputs, so A holds n_in/tp rows and B is whole. Per token each
 *      matrix costs 2·rows·cols FLOPs forward, as much for its input gradient and as much for
 *      its weight gradient;
 *   3. A reads the projection's own input x, already kept; B keeps A's output (r per token) for
 *      its weight gradient; B's output gradient is the projection's.
 * The dense modern block only: routed experts, multi-latent attention and MTP depths have
 * layouts of their own that this file does not adapt (llm_finetune_check refuses them). */
#include <string.h>

#include "llm_internal.h"

const char *const llm_finetune_method_names[] = {"none", "full", "lora", "qlora", NULL};
const char *const llm_lora_target_names[] = {"q_proj",    "k_proj",  "v_proj",    "o_proj",
                                             "gate_proj", "up_proj", "down_proj", NULL};
const char *const llm_base_datatype_names[] = {"float8", "float16", "bfloat16", "float32", "nf4",
                                               NULL};

/* NF4 with double quantization (QLoRA sec. 3): 4 bits a weight, an 8-bit constant per block of
 * 64 weights, a 32-bit constant per block of 256 of those: 4 + 8/64 + 32/16384 = 4.127 bits. */
#define NF4_BITS (4.0 + 8.0 / 64.0 + 32.0 / (64.0 * 256.0))

double llm_finetune_base_bytes(int base_datatype)
{
    return base_datatype == LLM_BASE_NF4 ? NF4_BITS / 8.0
                                         : (double)llm_datatype_bytes((llm_datatype_t)base_datatype);
}

static bool has_adapters(const llm_execution_t *e)
{
    return e->finetune.method == LLM_FINETUNE_LORA || e->finetune.method == LLM_FINETUNE_QLORA;
}

/* A targeted projection: its whole shape and whether TP splits its outputs (column) or inputs. */
typedef struct {
    double n_in, n_out;
    bool column;
} proj_t;

/* The projections of one dense block that `targets` names (gate only in a gated MLP). */
static int projections(const fathom_model_t *m, unsigned targets, proj_t out[7])
{
    const double h = (double)m->hidden, f = (double)m->feedforward;
    const double q = (double)(m->attn_heads * m->attn_size);
    const double g = (double)(model_kv_heads(m) * m->attn_size);
    const proj_t all[7] = {{h, q, true},  {h, g, true}, {h, g, true}, {q, h, false},
                           {h, f, true},  {h, f, true}, {f, h, false}};
    int n = 0;
    for (int i = 0; i < 7; i++) {
        if (!(targets & (1u << i)) || (i == 4 && !m->gated_mlp))
            continue;
        out[n++] = all[i];
    }
    return n;
}

double llm_finetune_trainable_params(const fathom_model_t *m, const llm_execution_t *e)
{
    if (!has_adapters(e)) {
        model_params_t p;
        model_parameters(m, &p);
        return p.total;
    }
    proj_t p[7];
    const int n = projections(m, e->finetune.targets, p);
    double per_block = 0;
    for (int i = 0; i < n; i++)
        per_block += (double)e->finetune.rank * (p[i].n_in + p[i].n_out);
    return per_block * (double)m->num_blocks;
}

double llm_step_model_flops(const fathom_model_t *m, const llm_execution_t *e)
{
    const double f = llm_model_flops(m, e->batch_size, e->training);
    if (!has_adapters(e) || !e->training)
        return f;
    const double tokens = (double)e->batch_size * (double)m->seq_size;
    return f * 2.0 / 3.0 + 6.0 * tokens * llm_finetune_trainable_params(m, e);
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
    const char *what = m->calculon_block      ? "Calculon's 2020 block"
                       : m->moe.num_experts > 0 ? "a model with experts (moe)"
                       : m->mla.present       ? "multi-latent attention (mla)"
                       : m->mtp_blocks > 0    ? "MTP depths (mtp_blocks)"
                                              : NULL;
    if (what)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.finetune.method",
                                "%s on %s is not modelled: LoRA adapters are placed on the dense "
                                "modern block's projections only (\"full\" fine-tunes any model)",
                                llm_finetune_method_names[f->method], what);
    if (e->fp8_params)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.fp8_params",
                                "FP8 primary weights are for weights that train: a frozen base "
                                "takes finetune.base_datatype instead");
    proj_t p[7];
    if (f->rank < 1 || projections(m, f->targets, p) == 0)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.finetune.targets",
                                "names no projection this model has");
    for (int i = 0; i < projections(m, f->targets, p); i++)
        if ((double)f->rank > p[i].n_in || (double)f->rank > p[i].n_out)
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.finetune.rank",
                                    "must be at most the narrowest targeted projection's width "
                                    "(%.0f), got %lld",
                                    p[i].n_in < p[i].n_out ? p[i].n_in : p[i].n_out,
                                    (long long)f->rank);
    return 0;
}

void llm__finetune_table(const fathom_model_t *m, const llm_execution_t *e, const llm__sizes_t *z,
                         bool block, llm__block_t *t)
{
    (void)z;
    if (!has_adapters(e))
        return;
    for (int i = 0; i < t->num_layers; i++) {
        llm__layer_t *l = &t->layers[i];
        if (l->weight_space <= 0)
            continue;
        l->frozen = true;
        l->wgrad_flops = 0;
        l->weight_grads = 0;
        l->optim_space = 0;
    }
    if (!block)
        return;
    proj_t p[7];
    const int n = projections(m, e->finetune.targets, p);
    const double tokens = (double)llm__tokens_per_rank(m, e), r = (double)e->finetune.rank;
    const double tp = (double)e->tensor_par;
    const bool rerun = e->activation_recompute == LLM_RECOMPUTE_FULL;
    for (int i = 0; i < n; i++) {
        const double in = p[i].column ? p[i].n_in : p[i].n_in / tp;
        const double out = p[i].column ? p[i].n_out / tp : p[i].n_out;
        llm__layer_t *a = llm__add_linear(t, tokens, in, r);
        a->activation_space = 0; /* x, the projection's input, is kept already */
        a->needs_recompute = rerun;
        llm__layer_t *b = llm__add_linear(t, tokens, r, out);
        b->activation_grads = 0; /* the projection's output gradient */
        b->needs_recompute = rerun;
    }
}

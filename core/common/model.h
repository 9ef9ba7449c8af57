/* model.h — the shape of a transformer language model, as every estimator takes it.
 *
 * Field names follow Calculon's model files (hidden, feedforward, seq_size, attn_heads,
 * attn_size, num_blocks); the others are Fathom's, for the models trained since 2023:
 * grouped-query attention (kv_heads), gated MLPs (SwiGLU), RMSNorm, Q/K/V biases, and the
 * layers outside the transformer blocks (vocab_size, tied_embeddings, position_embedding).
 *
 * Two readings of one struct. A model that gives none of kv_heads, gated_mlp, norm, qkv_bias
 * and causal is Calculon's 2020 block (calculon_block true): the step model then reproduces
 * Calculon exactly — transformer blocks only, its layer norm with scale and shift — whatever
 * vocab_size says (the analytic model still counts the embeddings). Give any of them and the
 * step model is Fathom's: every field below is honoured, and the embedding and output layers
 * are placed on the first and last pipeline stages when vocab_size > 0. */
#ifndef FATHOM_MODEL_H
#define FATHOM_MODEL_H

#include <stdbool.h>
#include <stdint.h>

typedef enum {
    MODEL_POS_LEARNED = 0, /* a learned seq_size × hidden table (GPT-2, GPT-3) */
    MODEL_POS_NONE = 1,    /* no position information in parameters or FLOPs (ALiBi, NoPE) */
    MODEL_POS_ROPE = 2     /* rotary: no parameters, a rotation of Q and K in every block */
} model_position_t;

typedef enum {
    MODEL_NORM_LAYERNORM = 0, /* scale, and shift when the model has biases */
    MODEL_NORM_RMSNORM = 1    /* scale only; no mean subtraction */
} model_norm_t;

/* Number formats a model's weights are stored in: a released checkpoint's (below) and a serving
 * request's (serving.h's serving_dtype_t takes these values). fp4 is NVFP4; int4 a weight-only
 * 4-bit format (AWQ/GPTQ); mxfp4 OpenAI's gpt-oss checkpoint, its routed experts in MXFP4 and
 * every other linear in BF16. */
typedef enum {
    MODEL_WEIGHTS_BF16 = 0,
    MODEL_WEIGHTS_FP8 = 1,
    MODEL_WEIGHTS_FP4 = 2,
    MODEL_WEIGHTS_INT4 = 3,
    MODEL_WEIGHTS_MXFP4 = 4
} model_weights_t;

/* Mixture of experts (DeepSeek-V3, Qwen3-MoE, Mixtral, GPT-OSS): block i (0-based) is an MoE
 * block iff i >= first_dense_blocks and (i - first_dense_blocks) % every == 0; the others are
 * dense and use `feedforward`. An MoE block routes each token to top_k of num_experts experts
 * (each an MLP of width expert_feedforward, gated iff gated_mlp) through a router GEMM
 * hidden × num_experts (+ num_experts score-correction biases with router_bias), and every
 * token also passes through shared_experts experts of width shared_expert_feedforward.
 * Group-limited routing (DeepSeek-V3's n_group/topk_group, Megatron's moe_router_num_groups and
 * moe_router_group_topk): the experts form router_groups equal groups of consecutive experts, a
 * token first picks router_group_top_k groups and then its top_k experts among theirs
 * (router_groups 0: no groups). */
typedef struct {
    int64_t num_experts; /* 0: a dense model (no moe object) */
    int64_t top_k;
    int64_t expert_feedforward;
    int64_t shared_experts;
    int64_t shared_expert_feedforward;
    int64_t first_dense_blocks;
    int64_t every;
    bool router_bias;
    int64_t router_groups;      /* 0: routing over all experts */
    int64_t router_group_top_k; /* groups a token may use; with router_groups > 0 */
} model_moe_t;

/* Multi-latent attention (DeepSeek-V2/V3): queries through a rank-q_lora_rank bottleneck
 * (0: a plain hidden × heads·(nope+rope) projection), keys and values through one shared
 * kv_lora_rank latent plus one rope key of qk_rope_head_dim shared by all heads. */
typedef struct {
    bool present;
    int64_t q_lora_rank;
    int64_t kv_lora_rank;
    int64_t qk_nope_head_dim;
    int64_t qk_rope_head_dim;
    int64_t v_head_dim;
} model_mla_t;

typedef struct {
    int64_t hidden;       /* model width */
    int64_t feedforward;  /* MLP inner width */
    int64_t seq_size;     /* tokens per sequence */
    int64_t attn_heads;   /* attention heads */
    int64_t attn_size;    /* width of one head */
    int64_t num_blocks;   /* transformer blocks */
    int64_t vocab_size;   /* 0 = not given: layers outside the blocks are not counted */
    bool bias;            /* linear layers and layer norms carry biases */
    bool tied_embeddings; /* the output layer reuses the token embedding */
    model_position_t position_embedding;
    int64_t kv_heads;     /* key/value heads (grouped-query attention); divides attn_heads */
    bool gated_mlp;       /* SwiGLU/GeGLU: gate and up projections, then down (3 matrices) */
    model_norm_t norm;
    bool qkv_bias;        /* biases on the Q, K and V projections only (Qwen) */
    bool causal;          /* decoder mask: fused attention skips the scores above the diagonal */
    bool calculon_block;  /* Calculon's 2020 block exactly (see above) */
    model_moe_t moe;      /* num_experts 0: dense */
    model_mla_t mla;      /* present false: the attention above */
    int64_t mtp_blocks;   /* multi-token prediction depths (DeepSeek-V3: 1), each a block and an
                           * output layer on the last stage */
    /* Sliding-window attention (Megatron's window_size and window_attn_skip_freq; Mistral 7B
     * v0.1, Gemma, GPT-OSS): 0 none; else a windowed block's queries see only the last
     * sliding_window tokens, and every full_attention_every-th block (the 2nd, 4th, … for 2;
     * 0: none) attends to the whole causal sequence. Causal modern block only. */
    int64_t sliding_window;
    int64_t full_attention_every;
    /* The windowed blocks run chunked local attention (Llama 4's attention_chunk_size: a query
     * sees the tokens of its own chunk of sliding_window tokens), not a sliding window: the same
     * bound on what a query sees, but an engine's KV cache may keep the whole sequence
     * (serving_memory.c). With sliding_window only. */
    bool chunked_attention;
    /* The format the model's released checkpoint stores its block linears in (BF16 unless
     * stated): gpt-oss ships its routed experts in MXFP4, DeepSeek-V3 its linears in
     * block-scaled FP8. Serving assumes it unless a request names another format; training
     * ignores it (a run trains in its execution's datatypes). */
    model_weights_t checkpoint_weights;
} fathom_model_t;

/* Why model m cannot hold its weights in format w (a sentence for a 422), or NULL when it can
 * (model_weights.c). */
const char *model_weights_refusal(const fathom_model_t *m, model_weights_t w);

/* Whether block i (0-based) is an MoE block. */
static inline bool model_block_is_moe(const fathom_model_t *m, int64_t i)
{
    const model_moe_t *e = &m->moe;
    return e->num_experts > 0 && i >= e->first_dense_blocks &&
           (i - e->first_dense_blocks) % (e->every > 0 ? e->every : 1) == 0;
}

/* MoE blocks among blocks [first, last): the i ≥ d with (i − d) % every == 0, d the dense
 * blocks first, counted in O(1) (the step model asks per stage and per estimate):
 * ⌈(last − d)/every⌉ − ⌈(max(first, d) − d)/every⌉. */
static inline int64_t model_moe_blocks_in(const fathom_model_t *m, int64_t first, int64_t last)
{
    const model_moe_t *e = &m->moe;
    const int64_t d = e->first_dense_blocks, ev = e->every > 0 ? e->every : 1;
    const int64_t a = first > d ? first : d;
    if (e->num_experts <= 0 || last <= a)
        return 0;
    return (last - d + ev - 1) / ev - (a - d + ev - 1) / ev;
}

/* Key/value heads: kv_heads, or attn_heads when not set (multi-head attention). */
static inline int64_t model_kv_heads(const fathom_model_t *m)
{
    return m->kv_heads > 0 ? m->kv_heads : m->attn_heads;
}

/* Parameters of one normalization layer: scale (h), plus shift (h) for a biased LayerNorm
 * (nanoGPT's bias=False has no shift). The step model's Calculon block keeps Calculon's own
 * count, scale and shift, whatever the model says. */
static inline double model_norm_params(const fathom_model_t *m)
{
    const double h = (double)m->hidden;
    return m->norm == MODEL_NORM_LAYERNORM && m->bias ? 2.0 * h : h;
}

/* Parameters of one MLP of width f: up (two matrices when gated) and down, with biases when the
 * model has them (model_params.c). */
double model_mlp_params(const fathom_model_t *m, double f);

/* One block's parameters by how they are laid out (model_params.c): divided by tensor
 * parallelism (attention projections, dense MLP, shared experts), replicated (norms, router,
 * MLA's down projections and latent norms), and routed experts (all num_experts of them). */
typedef struct {
    double split, replicated, routed;
} model_block_params_t;
model_block_params_t model_block_params(const fathom_model_t *m, bool moe);
/* An MTP depth beyond its block (DeepSeek-V3): the 2h→h projection of [embedding; hidden] and
 * three norms (of the embedding, of the hidden state, before the shared output head). */
double model_mtp_extra_params(const fathom_model_t *m);

/* Parameters as a checkpoint counts them: total (MTP depths included), routed experts' share,
 * and active per token (embeddings, output layer, norms, attention, routers, top_k routed and
 * every shared expert); mtp and mtp_active are the MTP depths' share of total and active (the
 * embedding and output layer they share with the main model are not in them). */
typedef struct {
    double total, active, routed, mtp, mtp_active;
} model_params_t;
void model_parameters(const fathom_model_t *m, model_params_t *p);

#endif

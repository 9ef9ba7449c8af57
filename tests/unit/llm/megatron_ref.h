/* megatron_ref.h — an independent test oracle for Megatron-LM's own counting formulas.
 *
 * Source read (formulas re-derived and re-written in C; no code or text copied):
 *   NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553:megatron/training/training.py
 *       num_floating_point_operations() and its inner transformer_flops() (hybrid Mamba/GDN paths
 *       and the experimental linear-attention variants are NOT reproduced)
 *   NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553:megatron/training/theoretical_memory_usage.py
 *       compute_weight_and_optimizer_memory(), compute_activation_memory(),
 *       compute_activation_memory_without_sp(), and the choice between the last two made by
 *       report_theoretical_memory()
 *   Defaults quoted below come from megatron/training/arguments.py and
 *   megatron/core/transformer/transformer_config.py at the same commit.
 *
 * The point of this file is to reproduce what Megatron reports, quirks included, so that Fathom's
 * step model can be compared with it to 1e-9 relative and every difference can be written down.
 * Notation: L = num_layers, h = hidden, f = ffn_hidden, n = num_heads, g = num_query_groups
 * (= n when group_query_attention is false), d = kv_channels, q = d*n, kv = d*g, V = vocab,
 * s = seq_length, B = batch (samples per iteration), T = B*s tokens, S2 = B*s^2, M = mtp_num_layers.
 *
 * ---------------------------------------------------------------------------------------------
 * CONVENTIONS OF num_floating_point_operations (megref_num_flops)
 *  F1  Every GEMM counted 3 times (forward, backward dgrad, backward wgrad) and 2 FLOPs per
 *      multiply-add: a factor 6 per weight per token. No recomputation FLOPs (model FLOPs, not
 *      hardware FLOPs), no optimizer FLOPs.
 *  F2  Causal attention IS halved. Core attention = two GEMMs (Q K^T and P V), each 2*s^2*q FLOPs
 *      forward for one full sequence; Megatron halves for the causal mask, so per layer the total
 *      is 3 * 2 * q * s^2 * B = 6*q*S2 (the /2 of the mask cancels the x2 of "two GEMMs").
 *      It scales with q = kv_channels*num_heads, not hidden, and not with the KV groups.
 *  F3  Attention projections per layer: 6*T*( h*(q + 2*kv [+ q if attention_output_gate]) + q*h ).
 *  F4  Dense MLP per layer: 6*T*h*f*m with m = 3 for SwiGLU (gate, up, down) and 2 otherwise
 *      (the "3/2 gated multiplier" relative to the plain 2-GEMM MLP). Activation function,
 *      element-wise gating, biases and dropout are not counted.
 *  F5  Norms, residual adds, softmax, RoPE, embedding lookup and loss are NOT counted
 *      (except F8's MTP norm term). Tied vs untied embeddings does not change FLOPs.
 *  F6  Logits: 6*T*h*V per output head, V = Megatron's padded_vocab_size (the caller chooses:
 *      pass the padded or the raw vocabulary). There are 1 + M output heads.
 *  F7  MoE: the router GEMM (h x E) is NOT counted; each MoE layer counts
 *      6*T*h*(moe_ffn*topk*m + shared*m); capacity factor / token dropping are ignored.
 *      moe_ffn falls back to ffn_hidden when 0 (Megatron: --moe-ffn-hidden-size None).
 *      Which layers are MoE: Megatron's int --moe-layer-freq k marks layer i (0-based) MoE iff
 *      i % k == 0 — so layer 0 is MoE, the LAST layers may be dense; a list gives the pattern
 *      verbatim (DeepSeek's "first k dense" is written as a list [0]*k + [1]*(L-k)).
 *      Latent MoE (--moe-latent-size r): routed experts counted at width r instead of h,
 *      plus 6*T*2*h*r for the down and up latent projections.
 *  F8  MTP (--mtp-num-layers M): each MTP depth counts as one more full transformer layer
 *      (attention, and an MLP that is MoE iff the LAST main layer is MoE), plus per token
 *      6*(3h + 2h^2) for its norms ("3h") and its 2h->h "eh" projection, plus one more logit head.
 *  F9  MLA (--multi-latent-attention; requires group_query_attention false):
 *      projections per token per layer, before the factor 6:
 *        q: without q LoRA  h*n*(qk+pe);  with q LoRA  rq*(h + n*(qk+pe) + 1)
 *        kv: rkv*(h + n*(qk+v) + 1) + h*pe
 *        o: n*v*h
 *      (the "+1" per LoRA rank stands for the q/kv latent norm); core attention per layer
 *      6*S2*( n*(qk+pe)/2 + n*v/2 ), i.e. causal-halved like F2.
 *  F10 Packed (THD) batches: token-linear terms use the real token count, the core term uses
 *      sum(L_i^2) over real sub-sequences; megref_num_flops_packed() exposes this.
 *
 * CONVENTIONS OF compute_weight_and_optimizer_memory (parameter counts and bytes)
 *  W1  Attention params per layer: 2*h*q*(1 + g/n) = Q, K, V, O weights with NO biases
 *      (even though Megatron's default is add_bias_linear = true, and --add-qkv-bias is ignored
 *      too: Qwen2.5's QKV biases are missing from the count) and the attention output gate
 *      NOT counted (FLOPs count it, memory does not). No QK-norm weights.
 *  W2  Dense MLP params: 2*h*f*(3/2 if SwiGLU else 1); no biases.
 *  W3  Norms: two per layer of h*ns and one final of h*ns, ns = 1 for RMSNorm, 2 for LayerNorm
 *      (Megatron's default --normalization is LayerNorm, so zero-initialised configs are LayerNorm).
 *  W4  Embedding h*V, counted twice when --untie-embeddings-and-output-weights. No learned
 *      position-embedding table is counted.
 *  W5  MoE layer: attention + norms + shared expert 2*h*shared*mult + routed 2*hr*moe_ffn*E*mult
 *      (hr = latent size if set, else h) + latent projections 2*h*r + router h*E
 *      (+ E router bias iff add_bias_linear, Megatron's default) + shared-expert gate h
 *      (iff --moe-shared-expert-gate and shared > 0). "Active" params replace E by topk in the
 *      main layers only; MTP depths keep all E experts.
 *  W6  MLA params: same expressions as F9's projections but the "+1" becomes "+ns" (the latent
 *      norm counted as ns per rank).
 *  W7  MTP depths are counted as plain transformer layers (like F8's layer) — WITHOUT the eh
 *      projection and the extra MTP norms that F8 counts in FLOPs.
 *  W8  Most loaded shard = pipeline stage 0, assumed to hold (L/pp) of every per-layer quantity
 *      (fractional if pp does not divide L; uneven first/last stage splits ignored), ALL MTP
 *      depths, and the input embedding; plus the output layer too iff untied and pp == 1.
 *      TP divides attention, dense MLP, shared-expert and embedding params; norms, router,
 *      shared-expert gate and latent projections are replicated; routed experts are divided by
 *      etp*ep (etp defaults to tp).
 *  W9  Bytes per parameter: 18 (bf16 weight 2 + fp32 main grad 4 + fp32 main param 4 + Adam 8)
 *      without the distributed optimizer, 6 + 12/DP with it. Routed-expert params use the expert
 *      DP size world // (etp*ep*pp) (integer division), world = tp*pp*cp*dp.
 *
 * CONVENTIONS OF compute_activation_memory (sequence parallel + selective recompute) — bytes
 *  A1  Per layer s*b*h*(18 + 4*f/h) (Korthikanti et al. 2022, Table 2, SP + selective), for ALL
 *      L layers: stage 0 holds L/pp layers but has pp micro-batches in flight. It ignores
 *      num_heads, kv groups, SwiGLU, MoE and MTP layers, and q != h.
 *  A2  Plus 8*s*b*pp (input ids/positions) and s*b*h*pp (embedding dropout mask).
 *  A3  Interleaving (vp > 1): everything so far x (1 + (pp-1)/(pp*vp)). Otherwise, with pp > 1
 *      and a known micro-batch count: x min(1, nmb/pp).
 *  A4  Only when pp == 1: + 4*s*b*h*(1 + V/h) for the output layer input and the logits/CE.
 *  A5  The total, embedding terms included, is divided by tp.
 * CONVENTIONS OF compute_activation_memory_without_sp (used by Megatron whenever NOT
 * (sequence_parallel and recompute_granularity == selective))
 *  A6  Per layer s*b*h*(10 + 24/tp) for all L layers; A2 and A3 as above; when pp == 1
 *      + 2*(s*b*V/tp + s*b*h); then the whole total x 1.05; no final division by tp.
 * ---------------------------------------------------------------------------------------------
 */
#ifndef FATHOM_MEGATRON_REF_H
#define FATHOM_MEGATRON_REF_H

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    int64_t num_layers;       /* --num-layers (main decoder layers, MTP depths excluded) */
    int64_t hidden;           /* --hidden-size */
    int64_t ffn_hidden;       /* --ffn-hidden-size (dense MLP width) */
    int64_t num_heads;        /* --num-attention-heads */
    int64_t num_query_groups; /* --num-query-groups (KV heads); ignored unless group_query_attention */
    int64_t kv_channels;      /* --kv-channels (head dim); Megatron's default is hidden/num_heads:
                                 the caller must pass it explicitly */
    int64_t vocab;            /* args.padded_vocab_size: the caller passes padded or raw vocab */
    int64_t seq_length;       /* --seq-length */
    bool swiglu;              /* --swiglu */
    bool group_query_attention; /* --group-query-attention */
    bool untie_embeddings;    /* --untie-embeddings-and-output-weights */
    bool rmsnorm;             /* --normalization RMSNorm (false = LayerNorm, Megatron's default) */
    bool disable_bias_linear; /* --disable-bias-linear (false = add_bias_linear true, the default);
                                 only the MoE router bias in the memory count depends on it */
    bool attention_output_gate; /* --attention-output-gate (FLOPs only; memory ignores it) */

    /* MoE: num_experts 0 = dense (Megatron: --num-experts None). */
    int64_t num_experts;      /* --num-experts */
    int64_t moe_router_topk;  /* --moe-router-topk */
    int64_t moe_ffn_hidden;   /* --moe-ffn-hidden-size (0 = None -> ffn_hidden, as arguments.py does) */
    int64_t moe_shared_expert_intermediate; /* --moe-shared-expert-intermediate-size (0 = None) */
    bool moe_shared_expert_gate;            /* --moe-shared-expert-gate */
    int64_t moe_latent_size;  /* --moe-latent-size (0 = None) */
    /* --moe-layer-freq. If moe_layer_pattern is non-NULL it is Megatron's list form (num_layers
       entries, true = MoE). Otherwise layer i (0-based) is MoE iff i >= first_k_dense and
       i % moe_every == 0 (moe_every 0 is read as 1). first_k_dense 0 with moe_every k is exactly
       Megatron's int form "--moe-layer-freq k"; first_k_dense k with moe_every 1 is the list
       ([0]*k + [1]*(L-k)) used for DeepSeek-style models. */
    int64_t first_k_dense;
    int64_t moe_every;
    const bool *moe_layer_pattern;

    /* MLA: --multi-latent-attention (requires group_query_attention false). */
    bool multi_latent_attention;
    int64_t q_lora_rank;      /* --q-lora-rank (0 = None) */
    int64_t kv_lora_rank;     /* --kv-lora-rank */
    int64_t qk_head_dim;      /* --qk-head-dim */
    int64_t qk_pos_emb_head_dim; /* --qk-pos-emb-head-dim */
    int64_t v_head_dim;       /* --v-head-dim */

    int64_t mtp_num_layers;   /* --mtp-num-layers (0 = None) */
} megref_config_t;

/* ---- FLOPs (num_floating_point_operations) ---- */

/* Per iteration for a BSHD global batch of batch_size samples of seq_length tokens. */
double megref_num_flops(const megref_config_t *c, int64_t batch_size);
/* THD / packed form: total_tokens = sum L_i, seqlen_squared_sum = sum L_i^2 over real sequences. */
double megref_num_flops_packed(const megref_config_t *c, double total_tokens, double seqlen_squared_sum);

/* The terms of megref_num_flops_packed (they add up to it exactly, in the same order). */
typedef struct {
    double mlp;          /* dense MLPs + routed experts (+ latent projections) + shared experts */
    double attn_linear;  /* attention projections, all attention layers (MTP depths included) */
    double attn_core;    /* Q K^T and P V, causal-halved */
    double mtp_extra;    /* MTP norms + eh projections */
    double logits;       /* (1 + M) output heads */
} megref_flops_terms_t;
megref_flops_terms_t megref_flops_terms(const megref_config_t *c, double total_tokens,
                                        double seqlen_squared_sum);

/* Layer kinds as both Megatron functions count them (MTP depths included, typed like the last
   main layer). */
void megref_layer_counts(const megref_config_t *c, double *dense_layers, double *moe_layers);

/* ---- Parameters (compute_weight_and_optimizer_memory) ---- */

double megref_num_parameters(const megref_config_t *c);        /* total, as Megatron counts it */
double megref_num_active_parameters(const megref_config_t *c); /* E replaced by topk */
/* Parameters on pipeline stage 0 (TP-sharded + replicated + expert-sharded), etp = tp. */
double megref_num_parameters_on_most_loaded_shard(const megref_config_t *c, int64_t tp, int64_t pp,
                                                  int64_t ep);
double megref_num_parameters_on_most_loaded_shard_ex(const megref_config_t *c, int64_t tp,
                                                     int64_t pp, int64_t ep, int64_t etp);

/* ---- Memory in bytes on the most loaded GPU (first pipeline stage) ---- */

/* Weights + grads + optimizer state; cp = 1 and etp = tp (Megatron's default). */
double megref_weight_and_optimizer_bytes(const megref_config_t *c, int64_t tp, int64_t pp,
                                         int64_t dp, int64_t ep, bool use_distributed_optimizer);
/* Same with context parallel size cp and --expert-tensor-parallel-size etp. */
double megref_weight_and_optimizer_bytes_ex(const megref_config_t *c, int64_t tp, int64_t pp,
                                            int64_t dp, int64_t cp, int64_t ep, int64_t etp,
                                            bool use_distributed_optimizer);

/* Activations. vp <= 1 means no interleaving (Megatron turns a virtual size of 1 into None);
   num_microbatches <= 0 means "unknown" (Megatron's None: no min(1, nmb/pp) discount).
   sequence_parallel true selects compute_activation_memory (Megatron uses it only when
   --sequence-parallel AND --recompute-granularity selective); false selects
   compute_activation_memory_without_sp. */
double megref_activation_bytes(const megref_config_t *c, int64_t tp, int64_t pp, int64_t vp,
                               int64_t micro_batch, int64_t num_microbatches,
                               bool sequence_parallel);

#endif

/* llm_internal.h — PRIVATE to core/llm: what the files of the module share (the evaluation
 * context, the layer table of a block and the per-layer cost functions). Not part of the API;
 * nothing outside core/llm includes it. */
#ifndef FATHOM_LLM_INTERNAL_H
#define FATHOM_LLM_INTERNAL_H

#include "llm.h"

/* Everything a layer needs to turn FLOPs and bytes into seconds, resolved once per estimate
 * for the execution's datatype. `uncovered` records the first curve that did not cover an
 * operation (Calculon asserts there); the estimate then fails with that curve's path. */
typedef struct {
    const llm_system_t *sys;
    double matrix_flops; /* peak FLOP/s of the matrix engine for the datatype */
    double vector_flops;
    const llm_curve_t *matrix_curve; /* GFLOP thresholds */
    const llm_curve_t *vector_curve;
    double mem1_bw; /* bytes/s */
    double mem2_bw;
    double bpe; /* bytes per element */
    double grad_bpe; /* gradient bytes per parameter (llm_gradient_bytes_per_param) */
    double optim_shards; /* data_par when the optimizer is sharded, else 1 */
    double fp8_matrix_flops;           /* FP8 GEMMs (execution.fp8): float8 peak and curve */
    const llm_curve_t *fp8_matrix_curve;
    double attention_flops;            /* fused attention: matrix peak × attention_efficiency */
    double expert_optim_shards;        /* expert data-parallel size when sharded, else 1 */
    double frozen_bpe;  /* bytes per parameter of a frozen layer's weights (finetune) */
    bool dequantize;    /* frozen weights are dequantized to the datatype before each GEMM */
    llm_attn_kernel_t attn_kernel;     /* execution.attention_kernel */
    llm_stack_t stack;                 /* execution.stack and compile (llm_stack.c) */
    bool compile;
    double context_par;                /* execution.context_par (llm_ring.c) */
    double gather_bpe;                 /* bytes per element a TP all-gather of a linear's input
                                        * moves: 1 where torchtitan gathers it in FP8 */
    llm_fp8_recipe_t fp8_recipe;       /* execution.fp8_recipe (torchao's casts, llm_stack.c) */
    double fp8_prepared_shards;        /* torchao's tensorwise TP: a module's input arrives in
                                        * FP8, cast once on its 1/tensor_par shard before the
                                        * gather (tensor_par; 0 otherwise) */
    double fp8_fw_gemm;                /* the forward FP8 GEMM's rate over the FP8 peak's:
                                        * LLM_FP8_ROWWISE_GEMM under rowwise, else 1 */
    /* every rate is positive and every curve covers an operation of size 0: a pass with no
     * FLOPs and no bytes then takes 0 s and leaves `uncovered` alone (llm__layer_cost's
     * shortcut) */
    bool zero_is_free;
    /* llm_estimate_memo's memo (NULL: every table costed afresh) and the generation under
     * which it holds this estimate's system (llm_memo.c) */
    struct llm_memo *memo;
    uint64_t memo_system;
    const char *uncovered;
} llm__ctx_t;

/* First point whose threshold (scaled to FLOP or bytes) the operation reaches. A miss is
 * Calculon's "wasn't covered" assertion: remember it and return 1 so the caller's arithmetic
 * stays finite until the estimate reports the error. Inline with the rates below: every layer
 * of every pass asks them (bench_estimate). */
static inline double llm__curve_efficiency(const llm_curve_t *curve, double scale, double op,
                                           llm__ctx_t *c, const char *what)
{
    for (int i = 0; i < curve->num_points; i++)
        if (op >= curve->points[i].threshold * scale)
            return curve->points[i].efficiency;
    if (!c->uncovered)
        c->uncovered = what;
    return 1.0;
}

static inline double llm__matrix_throughput(llm__ctx_t *c, double flops)
{
    return c->matrix_flops * llm__curve_efficiency(c->matrix_curve, 1e9, flops, c, "matrix");
}

static inline double llm__fp8_matrix_throughput(llm__ctx_t *c, double flops)
{
    return c->fp8_matrix_flops *
           llm__curve_efficiency(c->fp8_matrix_curve, 1e9, flops, c, "matrix8");
}

static inline double llm__vector_throughput(llm__ctx_t *c, double flops)
{
    return c->vector_flops * llm__curve_efficiency(c->vector_curve, 1e9, flops, c, "vector");
}

static inline double llm__mem1_throughput(llm__ctx_t *c, double bytes)
{
    return c->mem1_bw * llm__curve_efficiency(&c->sys->mem1.mb_efficiency, 1e6, bytes, c, "mem1");
}

static inline double llm__mem2_throughput(llm__ctx_t *c, double bytes)
{
    return c->mem2_bw * llm__curve_efficiency(&c->sys->mem2.mb_efficiency, 1e6, bytes, c, "mem2");
}

static inline double llm__processing_time(const llm__ctx_t *c, double flops_time, double mem_time)
{
    if (c->sys->processing_mode == LLM_PROC_ROOFLINE)
        return flops_time > mem_time ? flops_time : mem_time;
    return flops_time + mem_time;
}
/* Seconds of one network operation of `bytes` among `peers` processors (Calculon's
 * Network.time). */
double llm__net_time(const llm_network_t *n, llm_net_op_t op, double bytes, double peers);

/* Calculon's refusals (llm_checks.c): 0, or -1 with err naming the field. */
int llm__check_execution(const fathom_model_t *m, const llm_execution_t *e, fathom_error_t *err);
int llm__check_networks(const llm_system_t *s, const llm_execution_t *e, fathom_error_t *err);
/* What the execution's stack refuses (llm_stack.c): 0, or -1 with err naming the field. */
int llm__check_stack(const fathom_model_t *m, const llm_execution_t *e, fathom_error_t *err);

/* Element counts stay below this so doubles hold them exactly. */
#define LLM__MAX_EXACT 9007199254740992.0 /* 2^53 */

/* ---- the layer table of a transformer block ---- */

typedef enum {
    LLM__FW = 0,
    LLM__AGRAD = 1,
    LLM__WGRAD = 2, /* for communication: the re-communication after a recompute */
    LLM__OPTIM = 3
} llm__stage_t;

typedef enum {
    LLM__LINEAR,
    LLM__LINEAR_OVERLAPPED, /* a linear layer whose TP communication is tiled and overlapped */
    LLM__BATCH_MATMUL,
    LLM__LAYER_NORM,
    LLM__DROPOUT,
    LLM__GELU,
    LLM__SOFTMAX,
    LLM__ELEMENTWISE,
    LLM__FORK,   /* one activation to several users; gradients summed */
    LLM__TP_COMM, /* a tensor-parallel collective between two layers */
    /* Fathom's layers (never in Calculon's block) */
    LLM__FUSED_ATTENTION, /* flash attention: scores, softmax and weighted sum in one kernel */
    LLM__GATED_ACT,       /* SwiGLU/GeGLU: act(gate)·up */
    LLM__ROPE,            /* rotary position embedding applied to Q and K */
    LLM__EMBEDDING,       /* token (and learned position) embedding lookup */
    LLM__CROSS_ENTROPY    /* vocab-parallel softmax cross-entropy on the logits, in fp32 */
} llm__kind_t;

/* Bounded: the attention block has at most 16 layers (19 with multi-latent attention) and the
 * MLP block 9 (16 as an MoE block); the last stage's outer table holds the output layer (5) and
 * an MTP depth's (3 + 5). LoRA adds two adapter layers per adapted projection (at most 8 in a
 * block with MLA: q_a, q_b, kv_a, kv_b, o, the experts' gate-up and down, the shared experts'
 * gate-up and down... 2 each for fused gate and up). */
#define LLM__MAX_LAYERS 64

typedef struct {
    llm__kind_t kind;
    /* Element counts (not bytes), as Calculon's Layer holds them. */
    double fw_flops, agrad_flops, wgrad_flops;
    double inputs_size, output_size;
    double activation_space, activation_grads;
    double weight_space, weight_grads, optim_space;
    bool needs_recompute, needs_recomm;
    bool activation_reused, activation_stored, output_stored;
    bool fp8; /* a linear layer whose GEMMs run in FP8 (execution.fp8) */
    bool fp8_cache; /* an activation that keeps its input in FP8 (fp8_activation_cache) */
    double extra_size; /* FUSED_ATTENTION: the fp32 log-sum-exp, in elements of the datatype */
    /* FUSED_ATTENTION: what a named kernel's speed depends on (llm_attention.c): the query length
     * of one call (the rank's sequence, s/context_par), the head size, a causal mask */
    double attn_seq, attn_head_dim;
    bool attn_causal;
    /* Communication layers (TP_COMM, LINEAR_OVERLAPPED) */
    bool conjugate;       /* reduce after the layer (G) rather than before it (F) */
    double num_peers;     /* tensor_par */
    double num_tiles;     /* tensor_par (overlapped layers) */
    double comm_size;     /* elements (TP_COMM) */
    llm_tp_comm_t comm_type;
    llm_tp_overlap_t overlap;
    const llm_network_t *net;
    double num_users; /* FORK */
    /* MoE (llm_moe.c): a grouped GEMM of `groups` experts runs at the efficiency of one
     * expert's GEMM (flops/groups on the curve); expert layers shard their optimizer state over
     * the expert data-parallel group. 0 and false for every other layer. */
    double groups;
    double rows, inner, out; /* a grouped GEMM's shape: rows (all experts'), inner, out width;
                              * a fused attention's head size in inner */
    bool expert;
    bool moe; /* a layer of an MoE block's routed MLP (router to shared experts) */
    /* Elements of the datatype its activation holds that selective recompute does not keep
     * (MLA's Q, K and V at the fused attention): counted in the working space, not stored. */
    double discarded_space;
    /* Fine-tuning (llm_finetune.c): a frozen layer keeps its weights (in the base datatype) and
     * has no weight gradient, gradient buffer or optimizer state. */
    bool frozen;
    /* The projections (llm_lora_target_t bits) a linear layer computes, which LoRA may adapt;
     * 0 for every other layer (the router, the output layer, MTP's projection). */
    unsigned proj;
    bool adapted; /* LoRA's A reads this layer's input: its weight gradient needs it kept */
    /* A linear layer of an input group after its first linear: it reads the tensor the first
     * one reads (Q, K, V; gate and up), so a cast of that tensor the first one makes serves it
     * too where PyTorch computes it once (llm_stack.c, torchao's casts). */
    bool input_shared;
    /* LINEAR_OVERLAPPED under a PyTorch stack's async TP: the backward reduce-scatter of this
     * gathered input's gradient is not micro-pipelined (llm_layers.c, add_qkv) */
    bool bw_comm_unfused;
    /* Last, what costing a layer does not read: two layers with the same bytes before these
     * cost the same (llm_block_stats.c, twin_of). */
    /* Layers whose input is one tensor kept once (the TP all-gather's sliver, the fork that
     * feeds Q, K and V, the router whose input the shared experts read) share a nonzero group
     * (llm__new_group): what they keep serves the group's linear layers' weight gradients. */
    int input_group;
    /* State of LINEAR_OVERLAPPED: exposed network time of the last processed stage. Calculon
     * reads it back for later questions about other stages; the port keeps that behaviour.
     * Costing writes it before it reads it. */
    double net_exposed_time;
} llm__layer_t;

typedef struct {
    int num_layers;
    int num_groups; /* input groups handed out (llm__new_group) */
    /* a block's first MLP layer and the input groups handed out before it (llm__build_block;
     * 0 for other tables) */
    int mlp_first, mlp_groups;
    llm__layer_t layers[LLM__MAX_LAYERS];
} llm__block_t;

/* A fresh input group of b (llm__layer_t.input_group). */
static inline int llm__new_group(llm__block_t *b) { return ++b->num_groups; }

/* Sizes of one block as compiled for an execution (elements). */
typedef struct {
    int64_t batch_seq;               /* microbatch_size * seq_size */
    int64_t activation_size;         /* batch_seq * hidden */
    int64_t seq_par_activation_size; /* batch_seq / tensor_par * hidden */
} llm__sizes_t;

/* Fine-tuning (llm_finetune.c): freezes every layer of t with weights, appends the LoRA adapters
 * of the targeted projections its layers compute (llm__layer_t.proj), and drops the inputs
 * frozen projections without adapters kept for their weight gradients. Nothing for
 * pre-training and FULL. */
void llm__finetune_table(const fathom_model_t *m, const llm_execution_t *e, llm__block_t *t);
/* A linear layer of m×n by n×k (Calculon's Linear): its weights, gradients and activations. */
llm__layer_t *llm__add_linear(llm__block_t *b, double m, double n, double k);
/* A routed-expert linear layer (llm_moe.c): m rows (all the rank's experts') by n×k, grouped
 * over `groups` experts, each with its own n×k weights. */
llm__layer_t *llm__add_expert_linear(llm__block_t *b, double m, double n, double k, double groups);

/* Fills the layer table of one transformer block (attention then MLP). */
void llm__build_block(const fathom_model_t *m, const llm_system_t *s, const llm_execution_t *e,
                      const llm__sizes_t *z, llm__block_t *b);
/* llm__build_block of m, taking the attention layers from `like`, a table llm__build_block made
 * for a model that differs from m only in its MLP (an MoE model, m its dense blocks' model) with
 * the same execution and sizes: byte for byte the table llm__build_block makes, without
 * building the attention again. False where it built the whole table afresh instead (adapters,
 * a PyTorch stack's passes over the whole table): its attention layers may then differ. */
bool llm__build_block_like(const fathom_model_t *m, const llm_system_t *s,
                           const llm_execution_t *e, const llm__sizes_t *z,
                           const llm__block_t *like, llm__block_t *b);
/* llm__build_block_like but for the attention layers, which it leaves in b as they were, for a
 * caller that reads the MLP's alone (b's layers from like->mlp_first on); false, the whole
 * table built, where llm__build_block_like's is. */
bool llm__build_mlp_like(const fathom_model_t *m, const llm_system_t *s,
                         const llm_execution_t *e, const llm__sizes_t *z,
                         const llm__block_t *like, llm__block_t *b);
/* The layers outside the blocks (modern block with vocab_size > 0 only): the token embedding
 * of the first pipeline stage, and the final norm, output layer and loss of the last. */
void llm__build_embedding(const fathom_model_t *m, const llm_system_t *s,
                          const llm_execution_t *e, const llm__sizes_t *z, llm__block_t *b);
void llm__build_output(const fathom_model_t *m, const llm_system_t *s, const llm_execution_t *e,
                       const llm__sizes_t *z, llm__block_t *b);
/* Tokens of one microbatch on one rank: microbatch_size × seq_size / context_par. */
int64_t llm__tokens_per_rank(const fathom_model_t *m, const llm_execution_t *e);
/* Key/value heads one tensor-parallel rank holds: its share, or one replicated head when there
 * are fewer key/value heads than ranks (multi-query attention). */
int64_t llm__kv_heads_per_rank(const fathom_model_t *m, const llm_execution_t *e);
/* Vocabulary rows one tensor-parallel rank holds (the vocabulary padded to a multiple of TP). */
int64_t llm__vocab_per_rank(const fathom_model_t *m, const llm_execution_t *e);
/* Fraction of the s×s scores a causal fused kernel computes: whole 128×128 tiles on and below
 * the diagonal, (n+1)/(2n) for n = ceil(s/128) tiles; 1 when not causal. */
double llm__causal_fraction(const fathom_model_t *m);

/* FLOP/s of a fused attention layer's pass (llm_attention.c): the named kernel's measured speed
 * on this system where it has one, else the system's attention_efficiency. */
double llm__attention_throughput(const llm__layer_t *l, const llm__ctx_t *c, llm__stage_t st);

/* Bytes a layer's pass moves as a PyTorch stack's kernels run it (llm_stack.c): true with *bytes
 * set for the layers the stack runs its own way (norms, RoPE, SwiGLU, residual adds, dropout,
 * torchao Float8 linears), false to take the layer table's; and what eager PyTorch adds around
 * the attention kernel (repeat_kv's copies of K and V, the copy of O). */
bool llm__stack_bytes(const llm__layer_t *l, const llm__ctx_t *c, llm__stage_t st, double *bytes);
double llm__stack_attention_bytes(const llm__layer_t *l, const llm__ctx_t *c, llm__stage_t st,
                                  double q_elems, double kv_elems);
/* Bytes a layer's pass moves under a PyTorch stack (llm_stack.c): llm__stack_bytes where the
 * stack runs the layer its own way, else the layer table's base counts (Megatron's kernels,
 * llm__base_mem_accessed), with llm__stack_attention_bytes around the attention kernel. */
double llm__stack_mem_accessed(const llm__layer_t *l, const llm__ctx_t *c, llm__stage_t st);
/* Context parallelism as the PyTorch stacks run it (llm_ring.c): the bytes the ring's merges
 * and per-step calls add to one attention pass of E query-shaped elements, and the seconds per
 * block and microbatch its collectives leave exposed for kv bytes of K and V on a rank, the
 * attention kernel's forward and backward seconds, and the forwards a recompute reruns. */
double llm__torch_ring_bytes(const llm__ctx_t *c, llm__stage_t st, double E);
double llm__torch_ring_exposed(const llm_system_t *s, const llm_execution_t *e, double kv,
                               double attn_fw, double attn_bw, double reruns);
/* Bytes per element a tensor-parallel all-gather of a linear's input moves (llm_stack.c). */
double llm__stack_gather_bpe(const llm_execution_t *e, double bpe);
/* An FP8 GEMM with per-row scales runs at this fraction of a per-tensor-scaled one: the mean of
 * the Llama shapes of bench/gpu/2026-11-26-h100-sxm5-80gb ("GEMM": rowwise 3-10 % below
 * tensorwise, torch._scaled_mm). */
#define LLM_FP8_ROWWISE_GEMM 0.95
/* Per-op selective checkpointing (selective_ac "op"): marks what a block's backward reruns —
 * every op but the saved ones: every other matmul in order (wq, wv, w1, w2 saved; wk, wo, w3
 * rerun), attention, the TP reduce-scatters (llm_stack.c). */
void llm__apply_op_sac(llm__block_t *b);

/* Per-layer costs (Calculon's Layer methods). Byte counts use c->bpe and c->optim_shards. */
double llm__layer_flops(const llm__layer_t *l, const llm__ctx_t *c, llm__stage_t st);
double llm__layer_mem_accessed(const llm__layer_t *l, const llm__ctx_t *c, llm__stage_t st);
/* The bytes as Megatron's kernels move them, before a frozen layer's terms (llm_layers.c). */
double llm__base_mem_accessed(const llm__layer_t *l, const llm__ctx_t *c, llm__stage_t st);
/* Cost of one stage of one layer, computed once and reused by the questions asked about it. */
typedef struct {
    double flops, flops_time; /* FLOP, s */
    double mem, mem_time;     /* bytes, s */
    double local;             /* processing_time(flops_time, mem_time): the layer on its own */
    double time;              /* what the layer adds to the block's processing time */
} llm__cost_t;

/* Fills *k for stage st. For an overlapped linear layer this also records its exposed network
 * time (Calculon's processing step does). */
void llm__layer_cost(llm__layer_t *l, llm__ctx_t *c, llm__stage_t st, llm__cost_t *k);
double llm__layer_comm_bytes(const llm__layer_t *l, const llm__ctx_t *c, llm__stage_t st,
                             bool baseblock);
/* Network time of a communication layer (0 for others); own = llm__layer_cost of the stage. */
double llm__layer_net_time(const llm__layer_t *l, llm__ctx_t *c, llm__stage_t st, bool baseblock,
                           const llm__cost_t *own);
/* Exposed network time, given the layer's network time for the same stage and block kind. */
double llm__layer_exposed_net_time(const llm__layer_t *l, double net_time);
double llm__layer_required_bandwidth(const llm__layer_t *l, const llm__ctx_t *c, llm__stage_t st,
                                     bool baseblock, const llm__cost_t *own);
/* A layer's bytes held (Calculon's Layer accessors); inline: the block's memory asks each of
 * every layer. */
static inline double llm__layer_weight(const llm__layer_t *l, const llm__ctx_t *c)
{
    return l->weight_space * (l->frozen ? c->frozen_bpe : c->bpe);
}

static inline double llm__layer_activation(const llm__layer_t *l, const llm__ctx_t *c)
{
    /* the FP8 copy of the input is what backward keeps: an FP8 linear's, and an activation's
     * under fp8_activation_cache (Megatron's bias_swiglu with fp8_input_store casts its input
     * to float8_e4m3 for backward) */
    if (l->fp8 || l->fp8_cache)
        return l->activation_space;
    switch (l->kind) {
    case LLM__CROSS_ENTROPY: return l->activation_space * 4; /* fp32 */
    case LLM__DROPOUT: return l->activation_space; /* the 1-byte mask */
    case LLM__TP_COMM:
        if (l->comm_type == LLM_TP_COMM_RS_AG)
            return l->activation_space * c->bpe / l->num_peers;
        return l->conjugate ? l->activation_space * c->bpe : 0;
    default: return l->activation_space * c->bpe;
    }
}

static inline double llm__layer_output(const llm__layer_t *l, const llm__ctx_t *c)
{
    return l->output_size * c->bpe;
}

static inline double llm__layer_weight_grad(const llm__layer_t *l, const llm__ctx_t *c, bool sharded)
{
    /* sharded: low-precision copy for communication; otherwise the accumulation buffer, fp32
     * unless low_precision_gradients */
    if (sharded)
        return l->weight_grads * c->bpe / (l->expert ? c->expert_optim_shards : c->optim_shards);
    return l->weight_grads * c->grad_bpe;
}

static inline double llm__layer_activation_grad(const llm__layer_t *l, const llm__ctx_t *c)
{
    switch (l->kind) {
    case LLM__DROPOUT: return l->activation_grads;
    case LLM__TP_COMM:
        if (l->comm_type == LLM_TP_COMM_RS_AG)
            return l->activation_space * c->bpe / l->num_peers;
        return !l->conjugate ? l->activation_grads * c->bpe : 0;
    default: return l->activation_grads * c->bpe;
    }
}

static inline double llm__layer_optimizer(const llm__layer_t *l, const llm__ctx_t *c)
{
    /* fp32 master weights (when training below fp32) plus Adam's two moments; none frozen */
    double moments = l->optim_space * 4;
    double master = c->bpe < 4 && !l->frozen ? l->weight_space * 4 : 0;
    return (master + moments) / (l->expert ? c->expert_optim_shards : c->optim_shards);
}


/* One pass over a block's layers: FLOPs and the time they take, bytes of memory accessed and
 * the time those take, and the pass's time. */
typedef struct {
    double flops, flops_time, mem_accessed, mem_time, time;
} llm__pass_t;

/* Per-block, per-microbatch accumulations (Calculon's _block_* and base/edge block values). */
typedef struct {
    llm__pass_t fw, re, agrad, wgrad, optim; /* forward, recompute, input and weight gradients,
                                              * optimizer step */
    double fw_tp_size[2], fw_tp_time[2], fw_tp_exposed[2]; /* [0] baseblock, [1] edgeblock */
    double recomm_size[2], recomm_time[2], recomm_exposed[2];
    double agrad_tp_size[2], agrad_tp_time[2], agrad_tp_exposed[2];
    double tp_bw_overlap_req;
    double weight_space, act_working_space, act_storage_space, act_checkpoint_size;
    double weight_grad_space, weight_grad_space_no_sharding, act_grad_space, optimizer_space;
    double act_grad_peak; /* the most one layer's backward holds: its output's and input's grads */
    double useful_fw_flops, useful_bw_flops; /* summed apart, in Calculon's order */
    /* Fathom's: element counts for the modern memory model and the FLOP counts of the summary */
    double weight_elems;     /* parameters on this rank */
    double fp8_weight_elems; /* of which in FP8 linear layers */
    double expert_weight_elems; /* of which in routed-expert layers */
    double frozen_elems;     /* of which frozen (finetune) */
    double expert_frozen_elems; /* of the routed experts', frozen (finetune) */
    double trainable_weight_space; /* bytes of weights that have gradients: weight_space but
                                    * for frozen layers (what data parallelism reduces) */
    double matrix_fw_flops;  /* forward FLOPs of matrix-engine layers (GEMMs and attention) */
    double matrix_re_flops;  /* of those, what a recompute runs again */
    double matrix_bw_flops;  /* input and weight gradient FLOPs of matrix-engine layers */
    double attn_fw_time, attn_bw_time; /* s of the fused attention kernel (ring attention) */

    double expert_time;      /* s of the grouped expert GEMMs, forward and backward (MoE) */
    double moe_fw_time, moe_bw_time; /* s of the MoE MLP's layers (llm__layer_t.moe) */
    double moe_re_time;              /* s of those layers' forward that recompute reruns */
    /* matrix FLOPs forward, backward and recomputed: of the MoE MLP's layers, and of those the
     * routed experts' grouped GEMMs (at the busiest rank's rows) */
    double moe_matrix_flops[3], expert_matrix_flops[3];
} llm__block_stats_t;

/* What an execution compiles to before its layers are costed (Calculon's Llm.compile). */
typedef struct {
    llm__ctx_t c;
    llm__sizes_t z;
    int64_t nmb;                     /* microbatches per replica and step */
    int64_t bpp;                     /* blocks on the first pipeline stage */
    int64_t bubble_reduction_blocks; /* blocks the last stages lack when pp does not divide */
    int64_t pace_moe_blocks;         /* llm__pace_moe_blocks(m, e, bpp); 0 without experts */
    /* host seconds of one block's forward and backward by kind (0: dense, 1: MoE), kept from
     * the first ask (the data-parallel windows and the host's step both ask; llm_host.c): bit
     * `kind` of host_asked set once kept */
    double host_fw[2], host_bw[2];
    unsigned host_asked;
} llm__compiled_t;

/* Accumulates the layer table (one block, or the layers outside the blocks when !blocks: full
 * recompute then neither stores a checkpoint nor drops their activations). Reads of e only
 * training and activation_recompute, of z only activation_size (llm_memo.c keys on them); from
 * c->memo when it holds the same table (llm_memo.c), else llm__block_stats_fresh. */
void llm__block_stats(llm__block_t *blk, llm__ctx_t *c, const llm_execution_t *e,
                      const llm__sizes_t *z, bool blocks, llm__block_stats_t *b);
void llm__block_stats_fresh(llm__block_t *blk, llm__ctx_t *c, const llm_execution_t *e,
                            const llm__sizes_t *z, bool blocks, llm__block_stats_t *b);

/* One TP-communication layer's share of one pass, per block kind (0: the base block, 1: the
 * edge block): bytes, network time, what of it is exposed, and the bandwidth that keeps an
 * overlapped collective hidden. */
typedef struct {
    double bytes[2], time[2], exposed[2], bw_req[2];
} llm__tp_share_t;

/* What costing one layer of a table gives before its block adds it up: its passes (forward;
 * when training the activation and weight gradients, and the wgrad cost of a TP collective
 * repeated after a recompute), the TP collectives of those passes, and the exposure an
 * overlapped layer is left with; a function of the layer, the costing context but its optimizer
 * shards, and `training` alone (llm_memo.c lends it to an equal layer of another table). The
 * optimizer step (op), which reads the shards, is costed after them, never lent. */
typedef struct {
    llm__cost_t fw, ag, wg, op, rc;
    llm__tp_share_t fw_tp, re_tp, ag_tp;
    double net_exposed_time; /* before the optimizer step */
    double exposed_end;      /* after it (llm__block_stats_costed) */
} llm__layer_costs_t;
/* What of a layer's costs llm__block_stats_costed is given: none, all but the optimizer step
 * (lent under other optimizer shards), or all. */
typedef enum { LLM__COST_AFRESH, LLM__LENT_BUT_OPTIM, LLM__LENT_ALL } llm__known_t;
void llm__layer_costs(llm__layer_t *l, llm__ctx_t *c, bool training, llm__layer_costs_t *k);
/* llm__block_stats_fresh, each layer i's costs in costs[i]: taken from there as far as known[i]
 * says (they must be what costing it under c gives), or from an earlier layer of the table that
 * costs the same (llm_block_stats.c, twin_of), costed afresh into it otherwise (known NULL: all;
 * costs NULL: none kept); head (NULL: not asked) gets what llm__block_memory_fresh
 * sums over the table's first blk->mlp_first layers (a block's attention), costs cleared. */
void llm__block_stats_costed(llm__block_t *blk, llm__ctx_t *c, const llm_execution_t *e,
                             const llm__sizes_t *z, bool blocks, const llm__known_t *known,
                             llm__layer_costs_t *costs, llm__block_stats_t *head,
                             llm__block_stats_t *b);
/* The system an estimate with memo costs: memo's copy of s, byte for byte, with `collectives`
 * (what the execution's stack resolves s's to), and in *generation the generation under which
 * memo holds it (a new one when memo holds no such copy). */
const llm_system_t *llm__memo_system(struct llm_memo *memo, const llm_system_t *s,
                                    llm_collectives_t collectives, uint64_t *generation);

/* The share of a stage's blocks full recompute reruns: recompute_blocks of each pipeline chunk
 * over the stage's blocks, 1 when it recomputes every block, 0 without full recompute. */
double llm__recomputed_share(const llm_execution_t *e, const llm__compiled_t *k);
/* True when selective recompute reruns every MoE block's MLP (recompute_modules "moe"). */
bool llm__moe_redone(const llm_execution_t *e);
/* True when selective recompute reruns every block's norms (recompute_modules "layernorm"):
 * no layer keeps their output. */
bool llm__norm_redone(const llm_execution_t *e);

/* The step's lines (forward, backward, ... data-parallel) added in Calculon's order. */
double llm__sum_of_lines(const llm_stats_t *st);

/* ---- mixture of experts and multi-latent attention (llm_moe.c) ---- */

/* Execution MoE fields with their defaults when left zero (a struct built in C). */
int64_t llm__expert_par(const llm_execution_t *e);
int64_t llm__expert_tensor_par(const llm_execution_t *e);
/* The expert data-parallel size: the fold (tensor_par × data_par) over expert_par × ETP. */
double llm__expert_data_par(const llm_execution_t *e);
/* Rows the busiest rank's experts see over the mean: moe_load_imbalance, capped by the
 * capacity factor when one is given (tokens beyond it are dropped). */
double llm__moe_row_factor(const llm_execution_t *e);
/* Tokens each rank routes per microbatch: b·s/tp (Megatron routes the sequence-parallel slice). */
double llm__moe_local_tokens(const fathom_model_t *m, const llm_execution_t *e);
/* Rows of the busiest rank's grouped expert GEMM per microbatch:
 * tokens·top_k·expert_tensor_par·row_factor (on average tokens·top_k/num_experts per expert). */
double llm__moe_expert_rows(const fathom_model_t *m, const llm_execution_t *e);
/* Seconds of a grouped expert GEMM's stage (llm_moe.c): its FLOPs at the efficiency its shape
 * reaches, plus the call's fixed time. */
double llm__grouped_gemm_time(const llm__layer_t *l, llm__ctx_t *c, llm__stage_t st, double flops);
/* Seconds the four all-to-alls of one block (comm: dispatch and combine forward, dispatch and
 * combine backward) leave exposed when Megatron's combined 1F1B schedule overlaps them with the
 * block's attention and MoE-MLP compute (af, mf forward; ab, mb backward), the dispatcher taking
 * a share u of the compute while it runs (llm_moe.c gives the three phases). */
double llm__a2a_overlap_exposed(const double comm[4], double af, double mf, double ab, double mb,
                                double u);
/* What the all-to-alls of one MoE block and microbatch leave exposed, forward and backward
 * (llm_moe.c, block_a2a_exposed; 0 without experts). */
void llm__a2a_block_exposed(const fathom_model_t *m, const llm_system_t *s,
                            const llm_execution_t *e, const llm__compiled_t *k,
                            const llm__block_stats_t *blk, double *fw, double *bw);
/* The share of the compute the MoE dispatcher's kernels hold while they run (llm_moe.c): the
 * expert tier's processor_usage, tier 0's too where the dispatch also moves data over it. */
double llm__a2a_processor_usage(const llm_system_t *s, const llm_execution_t *e);
/* The same under DualPipe, which gives the dispatcher a fixed share u of the SMs for the whole
 * paired chunk: the compute runs 1/(1 − u) longer throughout and the phases overlap it with the
 * all-to-alls at no further cost. */
double llm__a2a_partitioned_exposed(const double comm[4], double af, double mf, double ab,
                                    double mb, double u);
/* A layer constructor shared with llm_layers.c. */
llm__layer_t *llm__push_layer(llm__block_t *b, llm__kind_t kind, bool recompute,
                              bool act_dropped);
/* The routed MLP of an MoE block between the TP gather and reduction: router, top-k, permute,
 * grouped expert GEMMs, unpermute and the shared experts. The router and the shared experts'
 * first projection join input group `group` (llm__layer_t.input_group): they read one tensor. */
void llm__add_moe_mlp(llm__block_t *b, const fathom_model_t *m, const llm_execution_t *e,
                      const llm__sizes_t *z, bool rf, int group);
/* Multi-latent attention's Q and K/V projections (after the TP gather), replacing add_qkv; the
 * two that read the normed input join input group `group`. */
void llm__add_mla_qkv(llm__block_t *b, const fathom_model_t *m, const llm_execution_t *e,
                      const llm__sizes_t *z, bool rf, int group);
/* llm_stage_blocks with the end stages' blocks f and l already asked of llm_end_stage_blocks
 * (a scan over every stage asks them once). */
int64_t llm__stage_blocks_given(const fathom_model_t *m, const llm_execution_t *e, int64_t f,
                                int64_t l, int64_t stage, int64_t *first);
/* Multi-token prediction on the last stage, appended to its outer table b, which holds the
 * output layer's table as llm__build_output made it so far (the depth's own head is a copy of
 * it): per depth two norms, the 2h→h projection and one more final norm, output layer (the
 * main head's matrix, shared) and loss. One depth is exact; D depths are one depth D times as
 * wide. The depth's transformer block is timed by llm_stages.c (mtp_blocks) and its state counted
 * by llm__moe_step. */
void llm__add_mtp(const fathom_model_t *m, const llm_execution_t *e, const llm__sizes_t *z,
                  llm__block_t *b);
/* MoE refusals: 0, or -1 with err naming the field. */
int llm__check_moe(const fathom_model_t *m, const llm_system_t *s, const llm_execution_t *e,
                   fathom_error_t *err);
/* DualPipe's share of the outer layers per microbatch (llm_stages.c): the embedding's stage and
 * the output layer's share a rank, each direction running half the microbatches, so that rank
 * adds max(0, tF + tL − slack0 − slack1)/2 to the pace, slack_i the blocks its stages lack
 * against blocks_per_proc times the block's time. Returns that as a share of tF + tL. */
double llm__dualpipe_outer_share(double tF, double tL, double slack0, double slack1);
/* MoE blocks of the stage that sets the pace: of the stages holding blocks_per_proc blocks, the
 * one with the most MoE blocks (the dense first blocks of DeepSeek-V3 or GLM sit on the first
 * stage, which then runs faster than the others). */
int64_t llm__pace_moe_blocks(const fathom_model_t *m, const llm_execution_t *e, int64_t bpp);
/* Model chunks rank `rank` runs forward before its first backward, the one that opens the steady
 * state included: min(nmb, pp − rank) under 1F1B and ZB-H1, min(nmb·v, 2·(pp − rank − 1) +
 * (v − 1)·pp + 1) interleaved (Megatron's get_pp_num_warmup plus one; llm_memory.c). Not for
 * DualPipe, whose two stages per rank warm up differently. */
double llm__warmup_chunks(const llm_execution_t *e, int64_t nmb, int64_t rank);
/* Adds the exposed dispatch/combine all-to-all to the step, and fills the MoE fields of x. */
void llm__moe_step(const fathom_model_t *m, const llm_system_t *s, const llm_execution_t *e,
                   llm__compiled_t *k, const llm__block_stats_t *blk, llm_stats_t *st,
                   llm_step_extra_t *x);

/* The host (llm_host.c): adds what the processor waits on the host's launches to the step
 * (modern block on a system that gives host costs), and fills x's host fields. Runs after the
 * MoE terms (it reads the all-to-all they leave exposed per block). */
void llm__host_step(const fathom_model_t *m, const llm_system_t *s, const llm_execution_t *e,
                    llm__compiled_t *k, const llm__block_stats_t *blk, llm_stats_t *st,
                    llm_step_extra_t *x);

/* Host seconds of one block's forward and backward on the first stage (its MoE blocks' when it
 * has any; the recompute's rerun in backward), 0 without a host side: how long a host-bound
 * pass lasts whatever its GPU work (llm_host.h). */
void llm__host_block_s(const fathom_model_t *m, const llm_system_t *s, const llm_execution_t *e,
                       llm__compiled_t *k, double *fw, double *bw);

/* The modern block's step (llm_stages.c): adds the layers outside the blocks to the step time of
 * Calculon's statistics (the heaviest stage sets the pipeline's pace), and fills x with what the
 * memory of every rank is made of (x->memory), the FLOP counts and the bytes per parameter;
 * dense is the dense block of an MoE model with dense blocks (NULL otherwise). For Calculon's
 * block it only describes what Calculon computed (stage memory from its stats). */
void llm__stages(const fathom_model_t *m, const llm_system_t *s, const llm_execution_t *e,
                 llm__compiled_t *k, const llm__block_stats_t *blk,
                 const llm__block_stats_t *dense, llm_stats_t *st, llm_step_extra_t *x);

/* What a block (or, !blocks, the outer layers) holds, without costing it: the memory fields of
 * llm__block_stats alone (weights and their shares, activations, gradients, optimizer). */
void llm__block_memory(llm__block_t *blk, llm__ctx_t *c, const llm_execution_t *e,
                       const llm__sizes_t *z, bool blocks, llm__block_stats_t *b);
void llm__block_memory_fresh(llm__block_t *blk, llm__ctx_t *c, const llm_execution_t *e,
                             const llm__sizes_t *z, bool blocks, llm__block_stats_t *b);
/* llm__block_memory_fresh from layer `first` on, b holding the sums of the layers before it
 * (llm_block_stats.c). */
void llm__block_memory_from(llm__block_t *blk, llm__ctx_t *c, const llm_execution_t *e, bool blocks,
                            int first, llm__block_stats_t *b);
/* x->memory for llm_estimate_memory: the outer layers' memory with the blocks' (dense NULL
 * unless an MoE model has dense blocks); x is cleared first. Modern block. */
void llm__stages_memory(const fathom_model_t *m, const llm_system_t *s, const llm_execution_t *e,
                        llm__compiled_t *k, const llm__block_stats_t *blk,
                        const llm__block_stats_t *dense, llm_step_extra_t *x);

/* ---- memory of every pipeline rank (llm_memory.c) ---- */

/* Every rank's memory from x->memory: the first and last in x->stages, the heaviest in
 * x->heaviest (and heaviest_stage), and the tier needs of the heaviest in st. Modern block. */
void llm__memory(const fathom_model_t *m, const llm_execution_t *e, llm_stats_t *st,
                 llm_step_extra_t *x);
/* What one dense block keeps per microbatch under torchtitan's per-op selective checkpointing
 * (selective_ac "op"), bytes. */
double llm__op_sac_bytes(const fathom_model_t *m, const llm_execution_t *e);
/* DeepEP's communication buffers for an expert group of `ranks` and rows of hidden_bytes. */
double llm__deepep_buffer_bytes(double ranks, double hidden_bytes);

#endif

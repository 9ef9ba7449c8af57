/* llm_layers.c — the layer table of one transformer block and the cost of each layer
 * (Calculon's layers.py and Llm._build_attn_block/_build_mlp_block).
 *
 * A block is a flat array of llm__layer_t: the kind says which cost rules apply, the numbers are
 * element counts for one microbatch on one processor (already split by tensor parallelism).
 * Adding a layer kind (an embedding, the output projection) means one constructor below and one
 * case in the few switch statements; the accumulation in llm_block_stats.c iterates the table
 * and does not care what the layers are. */
#include <string.h>

#include "llm_collective.h"
#include "llm_internal.h"

/* ---- constructors (element counts as Calculon's layer classes define them) ---- */

/* Layer options; a zero flag is Calculon's default (activation and output stored). */
typedef struct {
    bool recompute, recomm, reused, act_dropped, out_dropped;
} flags_t;

#define FLAGS(...) ((flags_t){__VA_ARGS__})

static llm__layer_t *push(llm__block_t *b, llm__kind_t kind, flags_t f)
{
    llm__layer_t *l = &b->layers[b->num_layers++];
    memset(l, 0, sizeof *l);
    l->kind = kind;
    l->needs_recompute = f.recompute;
    l->needs_recomm = f.recomm;
    l->activation_reused = f.reused;
    l->activation_stored = !f.act_dropped;
    l->output_stored = !f.out_dropped;
    l->num_peers = 1;
    l->num_tiles = 1;
    return l;
}

llm__layer_t *llm__push_layer(llm__block_t *b, llm__kind_t kind, bool recompute, bool act_dropped)
{
    return push(b, kind, FLAGS(.recompute = recompute, .act_dropped = act_dropped));
}

/* A linear layer of an m×n input and an n×k weight: its FLOPs and sizes. */
static llm__layer_t *linear(llm__block_t *b, double m, double n, double k, flags_t f)
{
    llm__layer_t *l = push(b, LLM__LINEAR, f);
    l->fw_flops = l->agrad_flops = l->wgrad_flops = 2 * m * n * k;
    l->inputs_size = m * n;
    l->output_size = m * k;
    l->weight_space = l->weight_grads = n * k;
    l->activation_space = m * n;
    l->activation_grads = m * k;
    l->optim_space = 2 * n * k;
    return l;
}

llm__layer_t *llm__add_linear(llm__block_t *b, double m, double n, double k)
{
    return linear(b, m, n, k, FLAGS(0));
}

static void add_linear(llm__block_t *b, double m, double n, double k, flags_t f)
{
    linear(b, m, n, k, f);
}

/* A linear layer fused with its TP collective: the all-gather before it (conjugate false) or
 * the reduce-scatter/all-reduce after it (conjugate true), tiled tensor_par ways. */
static void add_linear_overlapped(llm__block_t *b, const llm_execution_t *e,
                                  const llm_network_t *net, int64_t m, int64_t n, int64_t k,
                                  bool conjugate, flags_t f)
{
    int64_t peers = e->tensor_par, tiles = e->tensor_par;
    int64_t act_space, act_grad_space, act_grad_net_buffer;
    if (e->tensor_par_comm_type == LLM_TP_COMM_RS_AG) {
        if (!conjugate) {
            k = k / peers;
            act_space = m * n / tiles;
            act_grad_space = m * k;
            act_grad_net_buffer = 0;
        } else {
            n = n / peers;
            act_space = m * n;
            act_grad_space = m * k / tiles;
            act_grad_net_buffer = m * k / tiles;
        }
    } else if (!conjugate) {
        k = k / peers;
        act_space = m * n;
        act_grad_space = 0;
        act_grad_net_buffer = 0;
    } else {
        n = n / peers;
        act_space = 0;
        act_grad_space = m * k;
        act_grad_net_buffer = m * k;
    }
    llm__layer_t *l = push(b, LLM__LINEAR_OVERLAPPED, f);
    double dm = (double)m, dn = (double)n, dk = (double)k;
    l->fw_flops = l->agrad_flops = l->wgrad_flops = 2 * dm * dn * dk;
    l->inputs_size = dm * dn;
    l->output_size = dm * dk;
    l->weight_space = l->weight_grads = dn * dk;
    l->activation_space = (double)act_space;
    l->activation_grads = (double)(act_grad_space + act_grad_net_buffer);
    l->optim_space = 2 * dn * dk;
    l->comm_type = e->tensor_par_comm_type;
    l->num_tiles = (double)tiles;
    l->num_peers = (double)peers;
    l->net = net;
    l->conjugate = conjugate;
    l->overlap = llm_tp_overlap(e);
}

static void add_batch_matmul(llm__block_t *b, double batch, double m, double n, double k,
                             flags_t f)
{
    llm__layer_t *l = push(b, LLM__BATCH_MATMUL, f);
    l->fw_flops = batch * 2 * m * n * k;
    l->agrad_flops = batch * 2 * 2 * m * n * k;
    l->inputs_size = l->activation_space = batch * (m * n + n * k);
    l->output_size = l->activation_grads = batch * m * k;
}

static void add_layer_norm(llm__block_t *b, double act, double hidden, flags_t f)
{
    llm__layer_t *l = push(b, LLM__LAYER_NORM, f);
    l->fw_flops = 9 * act;
    l->agrad_flops = 14 * act;
    l->wgrad_flops = 7 * act;
    l->inputs_size = l->output_size = l->activation_space = l->activation_grads = act;
    l->weight_space = l->weight_grads = 2 * hidden;
    l->optim_space = 2 * 2 * hidden;
}

static void add_dropout(llm__block_t *b, double act, flags_t f)
{
    llm__layer_t *l = push(b, LLM__DROPOUT, f);
    l->fw_flops = l->agrad_flops = act;
    l->inputs_size = l->output_size = l->activation_space = l->activation_grads = act;
}

static void add_gelu(llm__block_t *b, double act, bool fused, flags_t f)
{
    llm__layer_t *l = push(b, LLM__GELU, f);
    l->fw_flops = 8 * act;
    l->agrad_flops = 13 * act;
    l->inputs_size = l->output_size = act;
    /* A fused GeLU runs inside the preceding matmul and keeps nothing. */
    l->activation_space = l->activation_grads = fused ? 0 : act;
}

static void add_softmax(llm__block_t *b, double act, flags_t f)
{
    llm__layer_t *l = push(b, LLM__SOFTMAX, f);
    l->fw_flops = 5 * act;
    l->agrad_flops = 8 * act;
    l->inputs_size = l->output_size = l->activation_space = l->activation_grads = act;
}

static void add_elementwise(llm__block_t *b, double op1, double op2, flags_t f)
{
    llm__layer_t *l = push(b, LLM__ELEMENTWISE, f);
    double act = op1 > op2 ? op1 : op2;
    l->fw_flops = act;
    l->agrad_flops = op1 + op2;
    l->inputs_size = l->activation_space = op1 + op2;
    l->output_size = l->activation_grads = act;
}

static void add_fork(llm__block_t *b, double act, double users, flags_t f)
{
    llm__layer_t *l = push(b, LLM__FORK, f);
    l->inputs_size = act;
    l->agrad_flops = users * act;
    l->activation_space = act;
    l->num_users = users;
}

static void add_tp_comm(llm__block_t *b, const llm_execution_t *e, const llm_network_t *net,
                        double act, bool conjugate, flags_t f)
{
    llm__layer_t *l = push(b, LLM__TP_COMM, f);
    double peers = (double)e->tensor_par;
    l->net = net;
    l->num_peers = peers;
    l->comm_type = e->tensor_par_comm_type;
    l->comm_size = act;
    l->conjugate = conjugate;
    if (e->tensor_par > 1) {
        /* F: identity/all-gather forward, reduction backward; G is the conjugate. */
        if (!conjugate)
            l->agrad_flops = act * (peers - 1) / peers;
        else
            l->fw_flops = act * (peers - 1) / peers;
        l->inputs_size = l->output_size = act;
        l->activation_space = l->activation_grads = act;
    }
}

/* ---- Fathom's layers (doc/step_model.md has the formulas) ---- */

/* Normalization of `act` elements. Calculon's block and the modern LayerNorm: forward 9, input
 * gradient 14 and weight gradient 7 FLOPs per element (Calculon's counts). RMSNorm has no mean
 * to subtract: x², the mean, the reciprocal root and two scalings are 4 per element forward;
 * backward 8 for the input gradient and 2 for the scale's. Weights: model_norm_params. */
static void add_norm(llm__block_t *b, const fathom_model_t *m, double act, flags_t f)
{
    if (m->calculon_block) {
        add_layer_norm(b, act, (double)m->hidden, f);
        return;
    }
    llm__layer_t *l = push(b, LLM__LAYER_NORM, f);
    const bool rms = m->norm == MODEL_NORM_RMSNORM;
    l->fw_flops = (rms ? 4 : 9) * act;
    l->agrad_flops = (rms ? 8 : 14) * act;
    l->wgrad_flops = (rms ? 2 : 7) * act;
    l->inputs_size = l->output_size = l->activation_space = l->activation_grads = act;
    l->weight_space = l->weight_grads = model_norm_params(m);
    l->optim_space = 2 * l->weight_space;
}

/* A linear layer of the modern block: biases (n outputs) add parameters, and FP8 moves its GEMMs
 * to the FP8 engine. */
static void add_modern_linear(llm__block_t *b, double m, double n, double k, bool bias, bool fp8,
                              flags_t f)
{
    add_linear(b, m, n, k, f);
    llm__layer_t *l = &b->layers[b->num_layers - 1];
    if (bias) {
        l->weight_space += k;
        l->weight_grads += k;
        l->optim_space += 2 * k;
    }
    l->fp8 = fp8;
}

/* Fused attention of one microbatch on one rank: q_heads query heads of width d for s_q query
 * tokens against s_k key tokens (s_q = s_k = s without context parallelism; with it the rank's
 * s/cp queries meet the whole sequence as K/V blocks come round the ring), kv_heads key/value
 * heads, causal fraction cf (llm__causal_fraction; with causal load balancing every rank does
 * the same share of the triangle).
 *   forward  FLOPs 4·b·q_heads·s_q·s_k·d·cf              (Q·Kᵀ and P·V)
 *   backward FLOPs 2.5×forward                           (Q·Kᵀ again, dV, dP, dQ, dK)
 *   forward  bytes (Q + K + V + O)·bpe + LSE·4           (no s×s tensor reaches memory)
 *   backward bytes (Q + K + V + O + dO + dQ + dK + dV)·bpe + LSE·4
 *   stored for backward: the rank's Q, K, V and the fp32 log-sum-exp per row (O is the next
 *   layer's input). Q = O = b·s_q·q_heads·d; K = V read = b·s_k·kv_heads·d, kept b·s_q·kv·d;
 *   LSE = b·q_heads·s_q. */
static void add_fused_attention(llm__block_t *b, double batch, double s_q, double s_k,
                                double q_heads, double kv_heads, double d, double cf, double bpe,
                                flags_t f)
{
    llm__layer_t *l = push(b, LLM__FUSED_ATTENTION, f);
    const double q = batch * s_q * q_heads * d, kv_local = batch * s_q * kv_heads * d;
    const double kv_read = batch * s_k * kv_heads * d;
    l->fw_flops = 4 * batch * q_heads * s_q * s_k * d * cf;
    l->agrad_flops = 2.5 * l->fw_flops;
    l->inner = d; /* the head size sets the kernel's speed (layer_throughput) */
    l->inputs_size = q + 2 * kv_read;
    l->output_size = q;
    l->extra_size = batch * q_heads * s_q * 4 / bpe; /* fp32, in elements of the datatype */
    l->activation_space = q + 2 * kv_local + l->extra_size;
    l->activation_grads = q + 2 * kv_local;
}

/* act(gate)·up on `out` output elements from 2·out inputs. SiLU is a sigmoid (4 FLOPs) and a
 * product; times up: 6 per output forward. Backward needs act, act' and two products for each
 * of the two inputs: 12 per output. The input is kept for backward, fused or not. */
static void add_gated_act(llm__block_t *b, double out, flags_t f)
{
    llm__layer_t *l = push(b, LLM__GATED_ACT, f);
    l->fw_flops = 6 * out;
    l->agrad_flops = 12 * out;
    l->inputs_size = 2 * out;
    l->output_size = out;
    l->activation_space = 2 * out;
    l->activation_grads = 2 * out;
}

/* Rotary embedding of `elems` Q and K elements: x·cos + rot(x)·sin, 3 FLOPs per element each
 * way; it is linear, so backward needs no stored activation. */
static void add_rope(llm__block_t *b, double elems, flags_t f)
{
    llm__layer_t *l = push(b, LLM__ROPE, f);
    l->fw_flops = l->agrad_flops = 3 * elems;
    l->inputs_size = l->output_size = elems;
    l->activation_grads = elems;
}

int64_t llm__tokens_per_rank(const fathom_model_t *m, const llm_execution_t *e)
{
    return e->microbatch_size * m->seq_size / llm_context_par(e);
}

int64_t llm__kv_heads_per_rank(const fathom_model_t *m, const llm_execution_t *e)
{
    int64_t kv = e->attention_type == LLM_ATTN_MULTIQUERY ? 1 : model_kv_heads(m);
    return kv >= e->tensor_par ? kv / e->tensor_par : 1;
}

int64_t llm__vocab_per_rank(const fathom_model_t *m, const llm_execution_t *e)
{
    return (m->vocab_size + e->tensor_par - 1) / e->tensor_par;
}

/* Score tiles a fused kernel computes for one layer over n query tiles of 128 tokens when each
 * looks back W tiles before its own: Σ_{i<n} (min(i, W) + 1) = (W + 1)·(n − W/2); causal is
 * W = n − 1, n(n + 1)/2. */
static double computed_tiles(double n, double W)
{
    return W >= n - 1 ? n * (n + 1) / 2 : (W + 1) * (n - W / 2);
}

/* The share of the s×s score tiles computed, averaged over the blocks:
 *   causal         (n + 1)/(2n), n = ⌈s/128⌉
 *   sliding window a windowed block's tile i reaches back W = ⌈(w − 1)/128⌉ tiles (its first
 *                  query sees w tokens, itself included); every full_attention_every-th block
 *                  is causal: [full·n(n + 1)/2 + windowed·(W + 1)(n − W/2)] / (L·n²) */
double llm__causal_fraction(const fathom_model_t *m)
{
    if (!m->causal)
        return 1.0;
    double tiles = (double)((m->seq_size + 127) / 128);
    if (m->sliding_window == 0)
        return (tiles + 1) / (2 * tiles);
    const double L = (double)m->num_blocks;
    const double full = m->full_attention_every > 0
                            ? (double)(m->num_blocks / m->full_attention_every)
                            : 0;
    const double W = (double)((m->sliding_window - 1 + 127) / 128);
    return (full * computed_tiles(tiles, tiles - 1) + (L - full) * computed_tiles(tiles, W)) /
           (L * tiles * tiles);
}

/* ---- the block ---- */

/* Layers [from, b->num_layers) read one kept input: a fresh input group (llm__layer_t). */
static void share_input(llm__block_t *b, int from)
{
    const int g = llm__new_group(b);
    bool linear_seen = false;
    for (int i = from; i < b->num_layers; i++) {
        llm__layer_t *l = &b->layers[i];
        l->input_group = g;
        const bool linear = l->kind == LLM__LINEAR || l->kind == LLM__LINEAR_OVERLAPPED;
        l->input_shared = linear && linear_seen;
        linear_seen = linear_seen || linear;
    }
}

/* The dropout after the attention and the MLP: Calculon's block keeps its 1-byte mask; the
 * modern block trains without dropout (Llama, Mistral, Qwen, DeepSeek and Nemotron recipes set
 * hidden_dropout 0, and PyTorch's dropout with p = 0 returns its input), so it keeps no mask.
 * Memory only: the layer's pass stays in the time as Calculon costs it. Megatron's
 * theoretical_memory_usage still counts the mask (test_llm_megatron). */
static void add_hidden_dropout(llm__block_t *b, const fathom_model_t *m, double act, bool rf)
{
    const bool mask = m->calculon_block;
    add_dropout(b, act, FLAGS(.recompute = rf, .act_dropped = !mask, .reused = !mask));
}

/* Q, K and V projections (Calculon's three linears, or its fused overlapped one). The modern
 * block gives K and V their grouped width and may bias Q, K and V. */
static void add_qkv(llm__block_t *b, const fathom_model_t *m, const llm_execution_t *e,
                    const llm_network_t *tp_net, double act, bool rf, bool ragf, bool norm_redone)
{
    const int64_t tp = e->tensor_par, bs = llm__tokens_per_rank(m, e);
    const int64_t qkv_width = m->attn_heads * m->attn_size;
    const int64_t kv_width = llm__kv_heads_per_rank(m, e) * m->attn_size; /* per rank */
    const bool kv_sharded = llm__kv_heads_per_rank(m, e) * tp == model_kv_heads(m) &&
                            e->attention_type != LLM_ATTN_MULTIQUERY;
    const bool qb = !m->calculon_block && (m->qkv_bias || m->bias);
    const bool fp8 = e->fp8;
    const flags_t proj = FLAGS(.recompute = rf, .act_dropped = true, .reused = true);
    const int first = b->num_layers;
    if (llm_tp_gather_overlap(e) == LLM_TP_OVERLAP_NONE) {
        add_tp_comm(b, e, tp_net, act, false, FLAGS(.recomm = ragf, .act_dropped = norm_redone));
        add_fork(b, act, 3, FLAGS(.recompute = ragf, .act_dropped = ragf));
        add_modern_linear(b, (double)bs, (double)m->hidden, (double)(qkv_width / tp), qb, fp8,
                          proj);
        add_modern_linear(b, (double)bs, (double)m->hidden, (double)kv_width, qb, fp8, proj);
        add_modern_linear(b, (double)bs, (double)m->hidden, (double)kv_width, qb, fp8, proj);
        b->layers[b->num_layers - 3].proj = LLM_LORA_Q;
        b->layers[b->num_layers - 2].proj = LLM_LORA_K;
        b->layers[b->num_layers - 1].proj = LLM_LORA_V;
        share_input(b, first);
        return;
    }
    /* Under a PyTorch stack's async TP the backward reduce-scatter of the block input's
     * gradient follows the sum of wq's, wk's and wv's input gradients (PyTorch's Llama runs three
     * GEMMs), and torch's micro-pipelining pass fuses a reduce-scatter only with the one matmul
     * producing its input (torch/_inductor/fx_passes/micro_pipeline_tp.py,
     * _find_producer_matmul): that reduction runs after the GEMMs, as vanilla TP's does. */
    const bool bw_unfused = e->stack != LLM_STACK_MEGATRON;
    if (bw_unfused) /* the three input gradients are summed in a pass of their own first */
        add_fork(b, act, 3, FLAGS(.recompute = ragf, .act_dropped = true));
    if (kv_sharded) {
        /* one fused projection of every Q, K and V head, split over the ranks */
        int64_t width = qkv_width + 2 * model_kv_heads(m) * m->attn_size;
        add_linear_overlapped(b, e, tp_net, bs, m->hidden, width, false,
                              FLAGS(.recompute = rf, .recomm = ragf, .act_dropped = norm_redone));
        b->layers[b->num_layers - 1].bw_comm_unfused = bw_unfused;
        b->layers[b->num_layers - 1].proj = LLM_LORA_Q | LLM_LORA_K | LLM_LORA_V;
    } else {
        /* fewer key/value heads than ranks: K and V replicated beside the split Q */
        add_linear_overlapped(b, e, tp_net, bs, m->hidden, qkv_width, false,
                              FLAGS(.recompute = rf, .recomm = ragf, .act_dropped = norm_redone));
        b->layers[b->num_layers - 1].proj = LLM_LORA_Q;
        b->layers[b->num_layers - 1].bw_comm_unfused = bw_unfused;
        const int kv = b->num_layers;
        add_fork(b, act, 2, FLAGS(.recompute = ragf, .act_dropped = ragf));
        add_modern_linear(b, (double)bs, (double)m->hidden, (double)kv_width, qb, false, proj);
        add_modern_linear(b, (double)bs, (double)m->hidden, (double)kv_width, qb, false, proj);
        b->layers[b->num_layers - 2].proj = LLM_LORA_K;
        b->layers[b->num_layers - 1].proj = LLM_LORA_V;
        share_input(b, kv);
    }
    llm__layer_t *l = &b->layers[b->num_layers - (kv_sharded ? 1 : 3)];
    l->fp8 = fp8;
    if (qb) {
        double bias = (double)(kv_sharded ? (qkv_width + 2 * model_kv_heads(m) * m->attn_size) / tp
                                          : qkv_width / tp);
        l->weight_space += bias;
        l->weight_grads += bias;
        l->optim_space += 2 * bias;
    }
}

/* The key/value copies the PyTorch stacks make around SDPA (torchtitan's Attention at 9dec370,
 * the commit of its published benchmarks; Hugging Face's Llama alike): repeat_kv expands K and V
 * from the g key/value heads a rank holds to its n query heads before
 * F.scaled_dot_product_attention, so the kernel reads, and without checkpointing keeps,
 * 2·T·n·d elements instead of 2·T·g·d. With context parallelism PyTorch's ring attention
 * (torch.distributed.tensor.experimental._attention, rotate_method "allgather", torchtitan's
 * default) concatenates the local K and V, 2·T·n·d, and all-gathers them over the cp ranks,
 * cp·2·T·n·d, live while the kernel runs (forward, and again in backward): working memory only.
 * T = b·s/cp tokens, d the head size. */
static void add_torch_kv_copies(llm__layer_t *l, const fathom_model_t *m,
                                const llm_execution_t *e)
{
    const double cp = (double)llm_context_par(e), d = (double)m->attn_size;
    const double T = (double)llm__tokens_per_rank(m, e);
    const double n = (double)(m->attn_heads / e->tensor_par);
    const double g = (double)llm__kv_heads_per_rank(m, e);
    const double repeat = n > g ? 2 * T * (n - g) * d : 0;
    const double ring = cp > 1 ? (cp + 1) * 2 * T * n * d : 0;
    l->activation_space += repeat + ring;
    l->discarded_space += ring;
}

/* Scores, softmax, dropout and weighted sum (Calculon's), or one fused kernel. */
static void add_attention_core(llm__block_t *b, const fathom_model_t *m, const llm_execution_t *e,
                               bool rf, bool raf)
{
    const int64_t tp = e->tensor_par;
    const int64_t qkv_width = m->attn_heads * m->attn_size;
    if (llm_attention_fused(e)) {
        /* flash attention recomputes its scores itself: full recompute redoes the kernel, and
         * so does the core_attn module (Megatron checkpoints the kernel from Q, K and V) */
        const int64_t cp = llm_context_par(e);
        const bool core = !rf && (e->recompute_modules & LLM_RECOMPUTE_CORE_ATTN);
        add_fused_attention(b, (double)e->microbatch_size, (double)(m->seq_size / cp),
                            (double)m->seq_size, (double)(m->attn_heads / tp),
                            (double)llm__kv_heads_per_rank(m, e),
                            (double)m->attn_size, llm__causal_fraction(m),
                            (double)llm_datatype_bytes(e->datatype),
                            FLAGS(.recompute = rf || core));
        llm__layer_t *l = &b->layers[b->num_layers - 1];
        l->attn_seq = (double)(m->seq_size / cp);
        l->attn_head_dim = (double)m->attn_size;
        l->attn_causal = !m->calculon_block && m->causal;
        /* under FP8 the out projection keeps its FP8 copy of O, and the kernel's backward needs
         * O itself (Transformer Engine's fused attention saves it): the kernel keeps O too */
        if (e->fp8)
            l->activation_space += l->output_size;
        /* core_attn keeps only the checkpoint's inputs Q, K and V: the log-sum-exp (and O
         * under FP8) is remade by the rerun */
        if (core)
            l->discarded_space = l->extra_size + (e->fp8 ? l->output_size : 0);
        if (e->stack != LLM_STACK_MEGATRON)
            add_torch_kv_copies(l, m, e);
        return;
    }
    double heads_batch = (double)(e->microbatch_size * m->attn_heads / tp);
    double scores = (double)(m->attn_heads / tp) * (double)(m->seq_size * m->seq_size) *
                    (double)e->microbatch_size;
    add_batch_matmul(b, heads_batch, (double)m->seq_size, (double)m->attn_size,
                     (double)m->seq_size, FLAGS(.recompute = raf, .out_dropped = raf));
    add_softmax(b, scores, FLAGS(.recompute = raf, .out_dropped = raf));
    add_dropout(b, scores, FLAGS(.recompute = raf, .act_dropped = raf));
    add_batch_matmul(b, heads_batch, (double)m->seq_size, (double)m->seq_size,
                     (double)(qkv_width / m->attn_heads), FLAGS(.recompute = rf));
}

/* A projection back to `hidden` followed by its reduction (the G of Megatron's f/g pair): o or
 * down (`proj`, the LoRA target it is). */
static void add_out_proj(llm__block_t *b, const fathom_model_t *m, const llm_execution_t *e,
                         const llm_network_t *tp_net, int64_t in_width, double act, bool rf,
                         unsigned proj)
{
    const int64_t tp = e->tensor_par, bs = llm__tokens_per_rank(m, e);
    const bool bias = !m->calculon_block && m->bias;
    if (llm_tp_overlap(e) == LLM_TP_OVERLAP_NONE) {
        add_modern_linear(b, (double)bs, (double)(in_width / tp), (double)m->hidden, bias, e->fp8,
                          FLAGS(.recompute = rf));
        b->layers[b->num_layers - 1].proj = proj;
        add_tp_comm(b, e, tp_net, act, true, FLAGS(.recomm = rf, .act_dropped = true));
    } else {
        add_linear_overlapped(b, e, tp_net, bs, in_width, m->hidden, true,
                              FLAGS(.recompute = rf, .recomm = rf));
        llm__layer_t *l = &b->layers[b->num_layers - 1];
        l->proj = proj;
        l->fp8 = e->fp8;
        if (bias) {
            l->weight_space += (double)m->hidden;
            l->weight_grads += (double)m->hidden;
            l->optim_space += 2 * (double)m->hidden;
        }
    }
}

/* Selective recompute of mlp: the dense MLP's layers from `first` rerun in backward, its
 * all-gather and reduce-scatter included, and keep only the MLP's input: the sequence-parallel
 * sliver when TP gathers it, else the up projection's input (whatever layernorm already
 * dropped stays dropped). */
static void rerun_mlp(llm__block_t *b, int first, const llm_execution_t *e)
{
    const bool sliver = e->tensor_par > 1 && e->tensor_par_comm_type == LLM_TP_COMM_RS_AG;
    bool kept = false;
    for (int i = first; i < b->num_layers; i++) {
        llm__layer_t *l = &b->layers[i];
        const bool comm = l->kind == LLM__TP_COMM || l->kind == LLM__LINEAR_OVERLAPPED;
        l->needs_recompute = l->needs_recompute || l->kind != LLM__TP_COMM;
        l->needs_recomm = l->needs_recomm || comm;
        const bool input = l->kind == LLM__LINEAR || l->kind == LLM__LINEAR_OVERLAPPED ||
                           (sliver && l->kind == LLM__TP_COMM);
        if (!kept && input) {
            kept = true;
            continue;
        }
        l->activation_stored = false;
    }
}

static void build_block(const fathom_model_t *m, const llm_system_t *s, const llm_execution_t *e,
                        const llm__sizes_t *z, bool mlp_only, llm__block_t *b);

void llm__build_block(const fathom_model_t *m, const llm_system_t *s, const llm_execution_t *e,
                      const llm__sizes_t *z, llm__block_t *b)
{
    build_block(m, s, e, z, false, b);
    if (e->stack != LLM_STACK_MEGATRON) {
        for (int i = 0; i < b->num_layers; i++) /* torchtitan's Llama has no dropout */
            if (b->layers[i].kind == LLM__DROPOUT)
                b->layers[i].fw_flops = b->layers[i].agrad_flops = 0;
        if (e->selective_ac == LLM_SAC_OP)
            llm__apply_op_sac(b);
    }
    llm__finetune_table(m, e, b);
}

bool llm__build_mlp_like(const fathom_model_t *m, const llm_system_t *s,
                         const llm_execution_t *e, const llm__sizes_t *z,
                         const llm__block_t *like, llm__block_t *b)
{
    const llm_finetune_method_t ft = e->finetune.method;
    /* adapters follow the whole table, and a PyTorch stack's passes (no dropout, per-op
     * checkpointing) are applied to the whole table: built afresh */
    if (like->mlp_first <= 0 || ft == LLM_FINETUNE_LORA || ft == LLM_FINETUNE_QLORA ||
        e->stack != LLM_STACK_MEGATRON) {
        llm__build_block(m, s, e, z, b);
        return false;
    }
    /* the MLP after the attention's layers and input groups */
    b->num_layers = like->mlp_first;
    b->num_groups = like->mlp_groups;
    build_block(m, s, e, z, true, b);
    return true;
}

bool llm__build_block_like(const fathom_model_t *m, const llm_system_t *s,
                           const llm_execution_t *e, const llm__sizes_t *z,
                           const llm__block_t *like, llm__block_t *b)
{
    if (!llm__build_mlp_like(m, s, e, z, like, b))
        return false;
    /* the attention layers as build_block makes them: copied byte for byte, with the state
     * costing left in them (an overlapped layer's exposure) cleared as push leaves it */
    memcpy(b->layers, like->layers, (size_t)like->mlp_first * sizeof b->layers[0]);
    for (int i = 0; i < like->mlp_first; i++)
        b->layers[i].net_exposed_time = 0;
    return true;
}

/* What every part of a block's table derives from the model and the execution. */
typedef struct {
    const fathom_model_t *m;
    const llm_execution_t *e;
    const llm__sizes_t *z;
    const llm_network_t *tp_net;
    int64_t tp, bs;
    double act;
    /* With sequence parallelism the layers outside the TP region see a sliver of the sequence. */
    double outer_act;
    bool rf;  /* full recompute */
    bool raf; /* full or attention-only recompute */
    /* Megatron's core_attn module: the unfused core as attn_only reruns it (scores, softmax,
     * dropout), nothing else; the fused kernel's own rerun is add_attention_core's */
    bool core_raf;
    /* selective recompute of layernorm: both norms rerun in backward and no layer keeps their
     * output (the sliver before the all-gather nor the gathered copy), so the all-gather after
     * each is redone too */
    bool norm_redone;
    flags_t norm;
} block_ctx_t;

static block_ctx_t block_ctx(const fathom_model_t *m, const llm_system_t *s,
                             const llm_execution_t *e, const llm__sizes_t *z)
{
    block_ctx_t c = {.m = m, .e = e, .z = z, .tp_net = &s->networks[e->tensor_par_net],
                     .tp = e->tensor_par, .bs = z->batch_seq, .act = (double)z->activation_size};
    const bool seq_par = e->tensor_par_comm_type == LLM_TP_COMM_RS_AG;
    c.outer_act = seq_par ? (double)z->seq_par_activation_size : c.act;
    c.rf = e->activation_recompute == LLM_RECOMPUTE_FULL;
    c.raf = c.rf || e->activation_recompute == LLM_RECOMPUTE_ATTN_ONLY;
    c.core_raf = c.raf || (e->recompute_modules & LLM_RECOMPUTE_CORE_ATTN);
    c.norm_redone = llm__norm_redone(e);
    c.norm = FLAGS(.recompute = c.rf || c.norm_redone, .act_dropped = true, .reused = true);
    return c;
}

/* Multi-latent attention (llm_moe.c): the down and up projections, the rotary part, the core
 * over the averaged head and the output projection. */
static void add_mla_attention(const block_ctx_t *c, bool ragf, llm__block_t *b)
{
    const fathom_model_t *m = c->m;
    const llm_execution_t *e = c->e;
    const int g = llm__new_group(b), first = b->num_layers;
    add_tp_comm(b, e, c->tp_net, c->act, false,
                FLAGS(.recomm = ragf, .act_dropped = c->norm_redone));
    add_fork(b, c->act, 2, FLAGS(.recompute = ragf, .act_dropped = ragf));
    b->layers[first].input_group = b->layers[first + 1].input_group = g;
    llm__add_mla_qkv(b, m, e, c->z, c->rf, g);
    const bool up_redone = !c->rf && (e->recompute_modules & LLM_RECOMPUTE_MLA_UP_PROJ);
    /* the rotary part of every query head and the one shared rope key */
    add_rope(b, (double)c->bs * (double)((m->attn_heads / c->tp + 1) * m->mla.qk_rope_head_dim),
             FLAGS(.recompute = c->rf || up_redone));
    /* attention over heads of width (qk + v)/2: Q·Kᵀ at qk = nope + rope, P·V at v */
    fathom_model_t a = *m;
    a.attn_size = (m->mla.qk_nope_head_dim + m->mla.qk_rope_head_dim + m->mla.v_head_dim) / 2;
    a.kv_heads = m->attn_heads;
    add_attention_core(b, &a, e, c->rf, c->core_raf);
    /* the O that FP8 keeps is n·v wide, not the averaged head's n·(qk + v)/2 */
    llm__layer_t *attn = &b->layers[b->num_layers - 1];
    const double o = (double)c->bs * (double)(m->attn_heads / c->tp * m->mla.v_head_dim);
    const bool o_kept = e->fp8 && attn->kind == LLM__FUSED_ATTENTION;
    if (o_kept) {
        attn->activation_space += o - attn->output_size;
        if (attn->discarded_space > 0) /* core_attn: the rerun remakes O */
            attn->discarded_space += o - attn->output_size;
    }
    /* mla_up_proj: Q, K and V are recomputed, the log-sum-exp (and FP8's O) still kept */
    if (up_redone)
        attn->discarded_space = attn->activation_space - attn->extra_size - (o_kept ? o : 0);
    add_out_proj(b, m, e, c->tp_net, m->attn_heads * m->mla.v_head_dim, c->act, c->rf, LLM_LORA_O);
}

/* The attention half of a block, from its residual fork to the residual add. */
static void add_attention_half(const block_ctx_t *c, llm__block_t *b)
{
    const fathom_model_t *m = c->m;
    const llm_execution_t *e = c->e;
    const bool ragf = c->raf || e->seq_par_ag_redo || c->norm_redone;
    add_fork(b, c->outer_act, 2, FLAGS(.recompute = c->rf));
    add_norm(b, m, c->outer_act, c->norm);
    if (m->mla.present) {
        add_mla_attention(c, ragf, b);
    } else {
        const int64_t qkv_width = m->attn_heads * m->attn_size;
        add_qkv(b, m, e, c->tp_net, c->act, c->rf, ragf, c->norm_redone);
        if (m->position_embedding == MODEL_POS_ROPE)
            add_rope(b, (double)c->bs * (double)(qkv_width / c->tp + llm__kv_heads_per_rank(m, e) *
                                                                         m->attn_size),
                     FLAGS(.recompute = c->rf));
        add_attention_core(b, m, e, c->rf, c->core_raf);
        add_out_proj(b, m, e, c->tp_net, qkv_width, c->act, c->rf, LLM_LORA_O);
    }
    add_hidden_dropout(b, m, c->outer_act, c->rf);
    add_elementwise(b, c->outer_act, c->outer_act,
                    FLAGS(.recompute = c->rf, .act_dropped = true, .reused = true));
}

/* An MoE block's MLP (llm_moe.c); the step costs every block so. The router and the dispatcher
 * work on the sequence-parallel slice (Megatron-Core's token dispatchers gather only over the
 * expert-TP group, llm_moe.c): the TP group gathers and reduces the block's input only for the
 * shared experts, a TP-split MLP. Recompute of the moe module gathers the sliver again before
 * rerunning the MLP. */
static void add_moe_mlp(const block_ctx_t *c, bool ragf, llm__block_t *b)
{
    const llm_execution_t *e = c->e;
    const bool shared = c->m->moe.shared_experts > 0;
    const int g = llm__new_group(b);
    if (shared) {
        add_tp_comm(b, e, c->tp_net, c->act, false,
                    FLAGS(.recomm = ragf || llm__moe_redone(e), .act_dropped = c->norm_redone));
        b->layers[b->num_layers - 1].input_group = g;
    }
    llm__add_moe_mlp(b, c->m, e, c->z, c->rf, g);
    if (shared)
        add_tp_comm(b, e, c->tp_net, c->act, true, FLAGS(.recomm = c->rf, .act_dropped = true));
}

/* A dense MLP's up projection (gate and up when gated), with its TP gather. */
static void add_dense_up(const block_ctx_t *c, bool ragf, llm__block_t *b)
{
    const fathom_model_t *m = c->m;
    const llm_execution_t *e = c->e;
    const int64_t tp = c->tp, bs = c->bs;
    const bool rf = c->rf;
    const bool overlapped = llm_tp_gather_overlap(e) != LLM_TP_OVERLAP_NONE; /* the MLP's input */
    const bool bias = !m->calculon_block && m->bias;
    const int64_t up_width = m->gated_mlp ? 2 * m->feedforward : m->feedforward;
    const unsigned up_proj = m->gated_mlp ? LLM_LORA_GATE | LLM_LORA_UP : LLM_LORA_UP;
    const int mlp_first = b->num_layers;
    if (!overlapped && m->gated_mlp && e->stack != LLM_STACK_MEGATRON) {
        /* PyTorch's Llama (torchtitan model.py): w1 and w3 are two GEMMs reading one input */
        add_tp_comm(b, e, c->tp_net, c->act, false,
                    FLAGS(.recomm = ragf, .act_dropped = c->norm_redone));
        add_fork(b, c->act, 2, FLAGS(.recompute = rf, .act_dropped = ragf));
        for (int i = 0; i < 2; i++)
            add_modern_linear(b, (double)bs, (double)m->hidden, (double)(m->feedforward / tp), bias,
                              e->fp8, FLAGS(.recompute = rf, .act_dropped = true, .reused = true));
        b->layers[b->num_layers - 2].proj = LLM_LORA_GATE;
        b->layers[b->num_layers - 1].proj = LLM_LORA_UP;
        share_input(b, mlp_first);
    } else if (!overlapped) {
        add_tp_comm(b, e, c->tp_net, c->act, false,
                    FLAGS(.recomm = ragf, .act_dropped = c->norm_redone));
        add_modern_linear(b, (double)bs, (double)m->hidden, (double)(up_width / tp), bias, e->fp8,
                          FLAGS(.recompute = rf, .act_dropped = ragf));
        b->layers[b->num_layers - 1].proj = up_proj;
        share_input(b, mlp_first);
    } else {
        if (e->stack != LLM_STACK_MEGATRON && m->gated_mlp) /* gate's and up's input gradients */
            add_fork(b, c->act, 2, FLAGS(.recompute = rf, .act_dropped = true));
        add_linear_overlapped(b, e, c->tp_net, bs, m->hidden, up_width, false,
                              FLAGS(.recompute = rf, .recomm = ragf, .act_dropped = c->norm_redone));
        llm__layer_t *l = &b->layers[b->num_layers - 1];
        l->proj = up_proj;
        l->fp8 = e->fp8;
        /* PyTorch's gate and up are two GEMMs whose input gradients are summed before the
         * reduce-scatter: not fused (add_qkv) */
        l->bw_comm_unfused = e->stack != LLM_STACK_MEGATRON && m->gated_mlp;
        if (bias) {
            l->weight_space += (double)(up_width / tp);
            l->weight_grads += (double)(up_width / tp);
            l->optim_space += 2 * (double)(up_width / tp);
        }
    }
}

/* The MLP half of a block, from its residual fork to the residual add. */
static void add_mlp_half(const block_ctx_t *c, llm__block_t *b)
{
    const fathom_model_t *m = c->m;
    const llm_execution_t *e = c->e;
    const bool rf = c->rf;
    b->mlp_first = b->num_layers;
    b->mlp_groups = b->num_groups;
    const bool ragf = rf || e->seq_par_ag_redo || c->norm_redone;
    add_fork(b, c->outer_act, 2, FLAGS(.recompute = rf));
    add_norm(b, m, c->outer_act, c->norm);
    if (m->moe.num_experts > 0) {
        add_moe_mlp(c, ragf, b);
    } else {
        const int mlp_first = b->num_layers;
        add_dense_up(c, ragf, b);
        if (m->gated_mlp) {
            add_gated_act(b, (double)(m->feedforward * c->bs / c->tp), FLAGS(.recompute = rf));
            b->layers[b->num_layers - 1].fp8_cache = e->fp8_activation_cache;
        }
        else
            add_gelu(b, (double)(m->feedforward * c->bs / c->tp), e->fused_activation,
                     FLAGS(.recompute = rf));
        add_out_proj(b, m, e, c->tp_net, m->feedforward, c->act, rf, LLM_LORA_DOWN);
        if (!rf && (e->recompute_modules & LLM_RECOMPUTE_MLP))
            rerun_mlp(b, mlp_first, e);
    }
    add_hidden_dropout(b, m, c->outer_act, rf);
    add_elementwise(b, c->outer_act, c->outer_act,
                    FLAGS(.recompute = rf, .act_dropped = true, .reused = true));
}

/* The block's table; mlp_only: b already holds its attention layers and their input groups,
 * only the MLP is added. */
static void build_block(const fathom_model_t *m, const llm_system_t *s, const llm_execution_t *e,
                        const llm__sizes_t *z, bool mlp_only, llm__block_t *b)
{
    const block_ctx_t c = block_ctx(m, s, e, z);
    if (!mlp_only) {
        b->num_layers = 0;
        b->num_groups = 0;
        add_attention_half(&c, b);
    }
    add_mlp_half(&c, b);
}

/* Token embedding on the first stage (Megatron's VocabParallelEmbedding): each TP rank holds
 * vocab/tp rows and looks up the tokens that fall in them, then the partial rows are summed
 * over the TP group (all-reduce; a reduce-scatter into the sequence-parallel region with
 * rs_ag). A lookup moves rows, it does no arithmetic:
 *   forward bytes  (rows read + rows written [+ position rows read])·bpe, rows = b·s·h
 *   weight grad    a scatter-add of b·s·h gradients into the table: b·s·h FLOPs, 3·b·s·h·bpe bytes
 *   parameters     vocab/tp·h (+ s·h learned positions, replicated). */
void llm__build_embedding(const fathom_model_t *m, const llm_system_t *s,
                          const llm_execution_t *e, const llm__sizes_t *z, llm__block_t *b)
{
    const llm_network_t *tp_net = &s->networks[e->tensor_par_net];
    const double rows = (double)z->activation_size, h = (double)m->hidden;
    const bool learned = m->position_embedding == MODEL_POS_LEARNED;
    b->num_layers = 0;
    b->num_groups = 0;
    llm__layer_t *l = push(b, LLM__EMBEDDING, FLAGS(0));
    l->weight_space = l->weight_grads = (double)llm__vocab_per_rank(m, e) * h +
                                        (learned ? (double)m->seq_size * h : 0);
    l->optim_space = 2 * l->weight_space;
    l->inputs_size = learned ? 2 * rows : rows;
    l->output_size = rows;
    l->fw_flops = learned ? rows : 0; /* adding the position rows */
    l->wgrad_flops = rows;
    l->activation_grads = rows;
    add_tp_comm(b, e, tp_net, rows, true, FLAGS(.act_dropped = true));
    llm__finetune_table(m, e, b);
}

/* Final norm, output layer and loss on the last stage. The output layer is a linear layer of
 * vocab/tp columns kept in the training datatype (Transformer Engine leaves it out of FP8); the
 * loss is Megatron's vocab-parallel cross-entropy: the logits cast to fp32 (kept for backward),
 * the row maximum, the sum of exponentials and the target logit each all-reduced over the TP
 * group (3 all-reduces of b·s fp32 values), forward ~5 FLOPs per logit (max, subtract, exp, sum,
 * log), backward 2 (softmax minus one-hot, scaled). */
void llm__build_output(const fathom_model_t *m, const llm_system_t *s, const llm_execution_t *e,
                       const llm__sizes_t *z, llm__block_t *b)
{
    const llm_network_t *tp_net = &s->networks[e->tensor_par_net];
    const bool seq_par = e->tensor_par_comm_type == LLM_TP_COMM_RS_AG;
    const double act = (double)z->activation_size;
    const double outer_act = seq_par ? (double)z->seq_par_activation_size : act;
    const double bs = (double)z->batch_seq, v = (double)llm__vocab_per_rank(m, e);
    const double bpe = (double)llm_datatype_bytes(e->datatype);
    b->num_layers = 0;
    b->num_groups = 0;
    add_norm(b, m, outer_act, FLAGS(.act_dropped = true, .reused = true));
    const int head = b->num_layers;
    add_tp_comm(b, e, tp_net, act, false, FLAGS(0));
    add_modern_linear(b, bs, (double)m->hidden, v, false, false, FLAGS(0));
    share_input(b, head); /* the gathered input the output layer's weight gradient reads */
    llm__layer_t *l = push(b, LLM__CROSS_ENTROPY, FLAGS(0));
    l->fw_flops = 5 * bs * v;
    l->agrad_flops = 2 * bs * v;
    l->inputs_size = l->output_size = l->activation_grads = bs * v;
    l->activation_space = bs * v; /* fp32: llm__layer_activation counts 4 bytes each */
    llm__layer_t *r = push(b, LLM__TP_COMM, FLAGS(.act_dropped = true));
    r->net = tp_net;
    r->num_peers = (double)e->tensor_par;
    r->comm_type = LLM_TP_COMM_AR; /* the loss's reductions are all-reduces whatever the block */
    r->conjugate = true;
    r->comm_size = 3 * bs * 4 / bpe;
    if (e->tensor_par > 1)
        r->fw_flops = r->comm_size * (r->num_peers - 1) / r->num_peers;
    if (m->mtp_blocks > 0) /* multi-token prediction shares the last stage (llm_moe.c) */
        llm__add_mtp(m, e, z, b);
    llm__finetune_table(m, e, b);
}

/* ---- costs ---- */

static bool uses_matrix_engine(const llm__layer_t *l)
{
    return l->kind == LLM__LINEAR || l->kind == LLM__LINEAR_OVERLAPPED ||
           l->kind == LLM__BATCH_MATMUL;
}

double llm__layer_flops(const llm__layer_t *l, const llm__ctx_t *c, llm__stage_t st)
{
    switch (st) {
    case LLM__FW: return l->fw_flops;
    case LLM__AGRAD: return l->agrad_flops;
    case LLM__WGRAD: return l->wgrad_flops;
    case LLM__OPTIM:
        return l->weight_grads / (l->expert ? c->expert_optim_shards : c->optim_shards) * 11;
    }
    return 0;
}

static double base_fw_mem(const llm__layer_t *l, const llm__ctx_t *c)
{
    return (l->inputs_size + l->output_size + l->weight_space) * c->bpe;
}

static double base_agrad_mem(const llm__layer_t *l, const llm__ctx_t *c)
{
    return (l->weight_space + (l->activation_space + l->activation_grads)) * c->bpe;
}

/* An FP8 linear layer with current scaling (Transformer Engine's recipe in the measured runs):
 * its input is read once for the amax and once to cast, the FP8 copy written and read by the
 * GEMM; the weight is read as its FP8 copy (cast once per step, not per microbatch).
 *   forward        input·(2·bpe + 2) + weight·1 + output·bpe
 *   input grad     grad·(2·bpe + 2) + weight·1 + input·bpe     (the grad is cast likewise)
 *   weight grad    saved FP8 input·1 + FP8 grad·1 + weight grad·bpe */
static double fp8_linear_mem(const llm__layer_t *l, const llm__ctx_t *c, llm__stage_t st)
{
    const double bpe = c->bpe;
    switch (st) {
    case LLM__FW: return l->inputs_size * (2 * bpe + 2) + l->weight_space + l->output_size * bpe;
    case LLM__AGRAD:
        return l->activation_grads * (2 * bpe + 2) + l->weight_space + l->activation_space * bpe;
    case LLM__WGRAD: return l->weight_grads * bpe + l->activation_space + l->activation_grads;
    case LLM__OPTIM: return 0;
    }
    return 0;
}

static double fw_mem(const llm__layer_t *l, const llm__ctx_t *c)
{
    if (l->fp8)
        return fp8_linear_mem(l, c, LLM__FW);
    switch (l->kind) {
    case LLM__FUSED_ATTENTION: /* Q, K, V in; O and the fp32 log-sum-exp out */
        return (l->inputs_size + l->output_size + l->extra_size) * c->bpe;
    case LLM__EMBEDDING: /* the rows looked up, not the table */
        return (l->inputs_size + l->output_size) * c->bpe;
    case LLM__CROSS_ENTROPY: /* logits in, their fp32 copy out */
        return l->inputs_size * c->bpe + l->output_size * 4;
    case LLM__DROPOUT: /* plus the 1-byte mask */
        return (l->inputs_size + l->output_size) * c->bpe + l->activation_space;
    case LLM__FORK: return 0;
    case LLM__TP_COMM:
        if (l->comm_type != LLM_TP_COMM_RS_AG && !l->conjugate)
            return 0; /* identity */
        return base_fw_mem(l, c);
    default: return base_fw_mem(l, c);
    }
}

/* Megatron's kernels are the base counts, asked first: every layer of every pass asks. The
 * PyTorch stacks' own are llm_stack.c's, apart (its stack frame stays out of this path). */
static double mem_accessed(const llm__layer_t *l, const llm__ctx_t *c, llm__stage_t st)
{
    return c->stack == LLM_STACK_MEGATRON ? llm__base_mem_accessed(l, c, st)
                                          : llm__stack_mem_accessed(l, c, st);
}

/* A frozen base held in another datatype (QLoRA's NF4) is dequantized before each GEMM that
 * reads it, forward and input gradient: the packed weight read, the datatype's copy written
 * (the GEMM then reads that copy, as base_fw_mem counts). bitsandbytes' dequantize kernels. */
static double dequantize_mem(const llm__layer_t *l, const llm__ctx_t *c, llm__stage_t st)
{
    if (!l->frozen || !c->dequantize || (st != LLM__FW && st != LLM__AGRAD) ||
        (l->kind != LLM__LINEAR && l->kind != LLM__LINEAR_OVERLAPPED))
        return 0;
    return l->weight_space * (c->frozen_bpe + c->bpe);
}

double llm__layer_mem_accessed(const llm__layer_t *l, const llm__ctx_t *c, llm__stage_t st)
{
    if (!l->frozen)
        return mem_accessed(l, c, st);
    if (st == LLM__WGRAD || st == LLM__OPTIM)
        return 0; /* no weight gradient, no optimizer step */
    if (c->dequantize)
        return dequantize_mem(l, c, st) + mem_accessed(l, c, st);
    return mem_accessed(l, c, st);
}

double llm__base_mem_accessed(const llm__layer_t *l, const llm__ctx_t *c, llm__stage_t st)
{
    if (l->fp8 && st != LLM__OPTIM)
        return fp8_linear_mem(l, c, st);
    switch (st) {
    case LLM__FW: return fw_mem(l, c);
    case LLM__AGRAD:
        switch (l->kind) {
        case LLM__FUSED_ATTENTION: /* Q, K, V, LSE, O, dO in; dQ, dK, dV out */
            return (2 * l->inputs_size + 2 * l->output_size + l->extra_size) * c->bpe;
        case LLM__EMBEDDING: return 0; /* token ids have no gradient */
        case LLM__CROSS_ENTROPY: /* fp32 softmax in, logit gradients out */
            return l->activation_space * 4 + l->activation_grads * c->bpe;
        case LLM__DROPOUT:
        case LLM__GELU:
        case LLM__SOFTMAX: return fw_mem(l, c);
        case LLM__FORK: return l->activation_space * c->bpe * (l->num_users + 1);
        case LLM__TP_COMM:
            if (l->comm_type != LLM_TP_COMM_RS_AG && l->conjugate)
                return 0; /* identity */
            return base_agrad_mem(l, c);
        default: return base_agrad_mem(l, c);
        }
    case LLM__WGRAD:
        if (l->weight_space == 0)
            return 0;
        if (l->kind == LLM__EMBEDDING) /* scatter-add: gradients in, table rows read and written */
            return 3 * l->activation_grads * c->bpe;
        return (l->weight_grads + (l->activation_space + l->activation_grads)) * c->bpe;
    case LLM__OPTIM: return llm__layer_optimizer(l, c);
    }
    return 0;
}

/* rs_ag always splits its collectives in two; p2p_rs_ag does so only at the chunk edges. */
static bool split_comm(const llm__layer_t *l, bool baseblock)
{
    return l->comm_type == LLM_TP_COMM_RS_AG ||
           (l->comm_type == LLM_TP_COMM_P2P_RS_AG && !baseblock);
}

double llm__layer_comm_bytes(const llm__layer_t *l, const llm__ctx_t *c, llm__stage_t st,
                             bool baseblock)
{
    if (l->num_peers == 1)
        return 0;
    bool split = split_comm(l, baseblock);
    if (l->kind == LLM__TP_COMM) {
        if (!split && ((l->conjugate && st == LLM__AGRAD) || (!l->conjugate && st == LLM__FW)))
            return 0; /* identity forward or all-reduce backward */
        /* an all-gather of a linear's input (forward, or again after a recompute) */
        const double gathered = l->comm_size * (l->conjugate ? c->bpe : c->gather_bpe);
        if (st == LLM__FW)
            return gathered;
        if (st == LLM__AGRAD)
            return l->comm_size * c->bpe;
        if (st == LLM__WGRAD && l->needs_recomm && (split || l->conjugate))
            return gathered;
        return 0;
    }
    if (l->kind == LLM__LINEAR_OVERLAPPED) {
        double ag = l->inputs_size * c->gather_bpe, ar_rs = l->output_size * c->bpe;
        switch (st) {
        case LLM__FW: return l->conjugate ? ar_rs : (split ? ag : 0);
        case LLM__AGRAD: return !l->conjugate ? ag : (split ? ar_rs : 0);
        case LLM__WGRAD: return l->needs_recomm ? llm__layer_comm_bytes(l, c, LLM__FW, baseblock) : 0;
        case LLM__OPTIM: return 0;
        }
    }
    return 0;
}

/* Collective types of a communication layer's forward and backward pass (-1: none). */
static void comm_ops(const llm__layer_t *l, bool baseblock, int *fw, int *bw)
{
    bool split = split_comm(l, baseblock);
    if (l->conjugate) {
        *fw = split ? LLM_OP_REDUCE_SCATTER : LLM_OP_ALL_REDUCE;
        *bw = split ? LLM_OP_ALL_GATHER : -1;
    } else {
        *fw = split ? LLM_OP_ALL_GATHER : -1;
        *bw = split ? LLM_OP_REDUCE_SCATTER : LLM_OP_ALL_REDUCE;
    }
}

/* A tensor-parallel collective of a layer: the TP group (consecutive ranks) on its tier. */
static double tp_coll(const llm__layer_t *l, const llm__ctx_t *c, int op, double bytes)
{
    const llm_group_t g = {l->num_peers, 1, (int)(l->net - c->sys->networks)};
    return llm_collective_time(c->sys, (llm_coll_t)op, bytes, &g);
}

static double overlapped_net_time(const llm__layer_t *l, llm__ctx_t *c, llm__stage_t st,
                                  bool baseblock)
{
    if (l->num_peers == 1)
        return 0;
    int fw_op, bw_op;
    comm_ops(l, baseblock, &fw_op, &bw_op);
    /* The reduction's additions run on the vector engine. */
    double fw_flop_time = 0, bw_flop_time = 0;
    double red_flops = llm__layer_comm_bytes(l, c, st, baseblock) / c->bpe * (l->num_peers - 1) /
                       l->num_peers;
    double red_time = red_flops / llm__vector_throughput(c, red_flops);
    if (l->conjugate)
        fw_flop_time = red_time;
    else
        bw_flop_time = red_time;
    double bytes = llm__layer_comm_bytes(l, c, st, baseblock);
    switch (st) {
    case LLM__FW:
        return fw_op < 0 ? 0 : tp_coll(l, c, fw_op, bytes) + fw_flop_time;
    case LLM__AGRAD:
        return bw_op < 0 ? 0 : tp_coll(l, c, bw_op, bytes) + bw_flop_time;
    case LLM__WGRAD:
        return l->needs_recomm && fw_op >= 0 ? tp_coll(l, c, fw_op, bytes) : 0;
    case LLM__OPTIM: return 0;
    }
    return 0;
}

static double tp_comm_net_time(const llm__layer_t *l, llm__ctx_t *c, llm__stage_t st,
                               bool baseblock, const llm__cost_t *own)
{
    if (l->num_peers == 1)
        return 0;
    if (st == LLM__OPTIM || (st == LLM__WGRAD && !l->needs_recomm))
        return 0;
    int fw_op, bw_op;
    comm_ops(l, baseblock, &fw_op, &bw_op);
    /* The layer's own arithmetic (the reduction) and memory traffic count as network time. */
    double local = own->local;
    int op = st == LLM__AGRAD ? bw_op : fw_op;
    double net = op < 0 ? 0 : tp_coll(l, c, op, llm__layer_comm_bytes(l, c, st, baseblock));
    return net + local;
}

double llm__layer_net_time(const llm__layer_t *l, llm__ctx_t *c, llm__stage_t st, bool baseblock,
                           const llm__cost_t *own)
{
    switch (l->kind) {
    case LLM__TP_COMM: return tp_comm_net_time(l, c, st, baseblock, own);
    case LLM__LINEAR_OVERLAPPED: return overlapped_net_time(l, c, st, baseblock);
    default: return 0;
    }
}

/* FLOP/s of a layer's stage: the matrix engine's curve (FP8's for FP8 layers), the fused
 * attention kernel's own efficiency, or the vector engine. */
/* A fused attention kernel's speed against head size 128, the size system.attention_efficiency
 * is measured at: cuDNN's forward+backward on H100 runs at 0.78–0.82 of its head-128 rate with
 * heads of 64 (0.367/0.469 at 4K tokens, 0.407/0.499 at 8K, 0.424/0.535 at 16K;
 * bench/gpu/2026-11-26-h100-sxm5-80gb, "Attention"): 0.8 at 64 and below, linear up to 1 at 128,
 * 1 above (fewer FLOPs per byte of Q, K, V and less work per tile to hide the softmax). */
static double head_size_factor(double d)
{
    return d >= 128 ? 1.0 : d <= 64 ? 0.8 : 0.8 + 0.2 * (d - 64) / 64;
}

static double layer_throughput(const llm__layer_t *l, llm__ctx_t *c, llm__stage_t st, double flops)
{
    if (st == LLM__OPTIM)
        return llm__vector_throughput(c, flops);
    if (l->kind == LLM__FUSED_ATTENTION) /* a named kernel at its measured speed (llm_attention.c) */
        return c->attn_kernel > LLM_ATTN_KERNEL_FUSED
                   ? llm__attention_throughput(l, c, st)
                   : c->attention_flops * head_size_factor(l->inner);
    if (l->fp8)
        return llm__fp8_matrix_throughput(c, flops) * (st == LLM__FW ? c->fp8_fw_gemm : 1.0);
    return uses_matrix_engine(l) ? llm__matrix_throughput(c, flops)
                                 : llm__vector_throughput(c, flops);
}

void llm__layer_cost(llm__layer_t *l, llm__ctx_t *c, llm__stage_t st, llm__cost_t *k)
{
    k->flops = llm__layer_flops(l, c, st);
    k->mem = llm__layer_mem_accessed(l, c, st);
    /* A pass with nothing to do (a layer without weights has no weight gradient and no
     * optimizer step): 0 FLOPs over a positive rate and 0 bytes over a positive bandwidth take
     * 0 s, which is what the general path below computes, without its curve lookups. A grouped
     * GEMM's fixed cost and an overlapped layer's tiling are left to it. */
    if (k->flops == 0 && k->mem == 0 && c->zero_is_free && l->groups <= 1 &&
        l->kind != LLM__LINEAR_OVERLAPPED) {
        /* ±0 / a positive rate keeps the sign of the zero */
        k->flops_time = k->flops;
        k->mem_time = k->mem;
        k->local = llm__processing_time(c, k->flops_time, k->mem_time);
        k->time = l->kind == LLM__TP_COMM ? 0 : k->local;
        return;
    }
    /* a grouped expert GEMM runs at the efficiency of its shape (llm_moe.c) */
    if (l->groups > 1 && st != LLM__OPTIM)
        k->flops_time = llm__grouped_gemm_time(l, c, st, k->flops);
    else
        k->flops_time = k->flops / layer_throughput(l, c, st, k->flops);
    k->mem_time = k->mem / llm__mem1_throughput(c, k->mem);
    k->local = llm__processing_time(c, k->flops_time, k->mem_time);
    if (l->kind == LLM__TP_COMM) {
        k->time = 0; /* its time is network time */
        return;
    }
    if (l->kind != LLM__LINEAR_OVERLAPPED) {
        k->time = k->local;
        return;
    }

    /* Tiled overlap: tensor_par tiles, each tile's compute hiding the previous tile's
     * communication; the communication slows the compute by processor_usage. Calculon asks
     * the baseblock's network time here. */
    double pu = l->net->processor_usage;
    double flop_time = k->flops_time;
    double flop_time_slowed = flop_time / (1 - pu);
    double mem_time = k->mem_time;
    double net_time = overlapped_net_time(l, c, st, true);
    double compute_time = k->local;
    double time, exposed;
    if (net_time == 0) {
        time = compute_time;
        exposed = 0;
    } else {
        double nt = l->num_tiles;
        double compute_time_slowed = llm__processing_time(c, flop_time_slowed, mem_time);
        double flop_tile_slowed = flop_time_slowed / nt;
        double net_tile = net_time / nt;
        double compute_tile = compute_time / nt;
        double compute_tile_slowed = compute_time_slowed / nt;
        double inflection = net_tile - flop_tile_slowed;
        if (st == LLM__AGRAD && l->bw_comm_unfused) {
            time = compute_time; /* the reduce-scatter runs after the GEMMs, unhidden */
            exposed = net_time;
        } else if (inflection > 0) {
            time = compute_tile + (nt - 1) * compute_tile_slowed;
            exposed = (nt - 1) * inflection;
        } else {
            time = compute_tile + (nt - 1) * compute_tile + (nt - 1) * net_tile * pu;
            exposed = 0;
        }
        if (l->overlap == LLM_TP_OVERLAP_PIPE) {
            /* the pipe schedule exposes the first communication tile; ring does not */
            exposed += net_tile;
            time += net_tile;
        }
    }
    l->net_exposed_time = exposed;
    k->time = time;
}

/* A TP collective is fully exposed; an overlapped layer exposes what its tiling did not hide
 * in the stage it last processed (Calculon reads that value back for every later question,
 * whatever the stage or block kind). */
double llm__layer_exposed_net_time(const llm__layer_t *l, double net_time)
{
    switch (l->kind) {
    case LLM__TP_COMM: return net_time;
    case LLM__LINEAR_OVERLAPPED: return l->net_exposed_time;
    default: return 0;
    }
}

double llm__layer_required_bandwidth(const llm__layer_t *l, const llm__ctx_t *c, llm__stage_t st,
                                     bool baseblock, const llm__cost_t *own)
{
    if (l->kind != LLM__LINEAR_OVERLAPPED)
        return 0;
    double tile = llm__layer_comm_bytes(l, c, st, baseblock) / l->num_tiles;
    double flop_time_slowed = own->flops_time / (1 - l->net->processor_usage);
    return tile / (flop_time_slowed / l->num_tiles);
}


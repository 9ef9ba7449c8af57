/* llm_moe.c — mixture of experts, multi-latent attention and multi-token prediction in the step
 * model (doc/step_model.md, "Mixture of experts"): parameter counts (total and active), the
 * weights, gradients and optimizer state of routed experts and of everything else per processor,
 * the MoE block's layers (router, top-k, permute, grouped expert GEMMs, unpermute, shared
 * experts), MLA's projections, and the token dispatch/combine all-to-all over expert parallelism.
 *
 * Expert layers are folded onto attention's processors as Megatron-Core's parallel folding does:
 * expert_par (EP) × expert_tensor_par (ETP) × expert data parallel (EDP) = tensor_par ×
 * context_par × data_par (Megatron-Core's parallel_state: the experts' ETP × EP × EDP span the
 * decoder's TP × CP × DP); fold_size() below is the one place it multiplies in. */
#include "llm_collective.h"
#include "llm_internal.h"

#include <gsl/gsl_randist.h>
#include <math.h>
#include <string.h>

static double max2(double a, double b) { return a > b ? a : b; }

/* The processors one expert layout is folded over (see the top of the file). */
static int64_t fold_size(const llm_execution_t *e)
{
    return e->tensor_par * llm_context_par(e) * e->data_par;
}

int64_t llm__expert_par(const llm_execution_t *e) { return e->expert_par > 0 ? e->expert_par : 1; }

double llm__expert_data_par(const llm_execution_t *e)
{
    return (double)fold_size(e) / (double)(llm__expert_par(e) * llm__expert_tensor_par(e));
}

int64_t llm__expert_tensor_par(const llm_execution_t *e)
{
    return e->expert_tensor_par > 0 ? e->expert_tensor_par : 1;
}

double llm__moe_row_factor(const llm_execution_t *e)
{
    double imb = e->moe_load_imbalance >= 1 ? e->moe_load_imbalance : 1;
    return e->moe_capacity_factor > 0 && e->moe_capacity_factor < imb ? e->moe_capacity_factor
                                                                      : imb;
}

double llm__moe_local_tokens(const fathom_model_t *m, const llm_execution_t *e)
{
    /* the router sees the rank's sequence-parallel slice of its context-parallel chunk: the
     * sequence is split context_par ways before the block (as batch_seq, llm_model.c) */
    return (double)e->microbatch_size * (double)m->seq_size / (double)e->tensor_par /
           (double)llm_context_par(e);
}

/* Each of the EP ranks routes T tokens to top_k experts: T·k token copies leave each rank and,
 * balanced, T·k arrive at each; the ETP ranks of an expert gather each other's, and the busiest
 * rank sees row_factor times the mean. */
double llm__moe_expert_rows(const fathom_model_t *m, const llm_execution_t *e)
{
    return llm__moe_local_tokens(m, e) * (double)m->moe.top_k *
           (double)llm__expert_tensor_par(e) * llm__moe_row_factor(e);
}

/* ---- parameters (counted in core/common/model_params.c) ---- */

void llm_parameters(const fathom_model_t *m, llm_params_t *p)
{
    model_params_t c;
    model_parameters(m, &c);
    p->total = c.total;
    p->active = c.active;
    p->routed = c.routed;
    p->mtp = c.mtp;
    p->mtp_active = c.mtp_active;
}

/* ---- state memory per processor ---- */

void llm_moe_state_memory(const fathom_model_t *m, const llm_execution_t *e, int64_t stage,
                          llm_state_memory_t *o)
{
    const int64_t L = m->num_blocks, pp = e->pipeline_par;
    const double tp = (double)e->tensor_par, h = (double)m->hidden;
    const double ep = (double)llm__expert_par(e), etp = (double)llm__expert_tensor_par(e);
    /* Blocks of the stage as the step model places them (llm_stage_blocks) */
    int64_t first = 0;
    const int64_t count = llm_stage_blocks(m, e, stage, &first), last = first + count;

    double params = 0, expert = 0;
    for (int64_t i = first; i < last; i++) {
        model_block_params_t b = model_block_params(m, model_block_is_moe(m, i));
        params += b.split / tp + b.replicated;
        expert += b.routed / (ep * etp); /* num_experts/EP experts, each split ETP ways */
    }
    const double vt = (double)((m->vocab_size + e->tensor_par - 1) / e->tensor_par);
    if (!m->calculon_block && m->vocab_size > 0) {
        if (stage == 0) /* token embedding (+ learned positions, replicated) */
            params += vt * h + (m->position_embedding == MODEL_POS_LEARNED
                                    ? h * (double)m->seq_size
                                    : 0);
        if (stage == pp - 1) { /* final norm and the output layer (tied: shared on one stage) */
            params += model_norm_params(m);
            if (!m->tied_embeddings || pp > 1)
                params += vt * h;
        }
    }
    if (stage == pp - 1) /* MTP depths sit with the output layer they share */
        for (int64_t i = 0; i < m->mtp_blocks; i++) {
            model_block_params_t b = model_block_params(m, model_block_is_moe(m, L - 1));
            params += b.split / tp + b.replicated + model_mtp_extra_params(m);
            expert += b.routed / (ep * etp);
        }

    const double bpe = llm_datatype_bytes(e->datatype);
    /* fp32 master (below fp32) + two Adam moments in optimizer_state_datatype */
    const double opt = llm_optimizer_bytes_per_param(e);
    const double dp = e->optimizer_sharding ? (double)e->data_par : 1;
    /* expert data parallel: the fold over EP × ETP */
    const double edp = e->optimizer_sharding ? llm__expert_data_par(e) : 1;
    o->params = params;
    o->expert_params = expert;
    o->weights = params * bpe;
    o->gradients = params * llm_gradient_bytes_per_param(e);
    o->optimizer = params * opt / dp;
    o->expert_weights = expert * bpe;
    o->expert_gradients = expert * llm_gradient_bytes_per_param(e);
    o->expert_optimizer = expert * opt / edp;
}

/* ---- all-to-all ---- */

/* Each rank sends bytes·(p−1)/p to the p−1 others (its own share stays), so one all-to-all on
 * one tier costs latency + bytes·(p−1)/p / (bandwidth·efficiency). When the group spans more
 * than tier 0 (the NVLink domain) and runs on a higher tier, the p·size0/span peers inside a
 * tier-0 domain exchange over tier 0 while the others go over the higher tier at the same time:
 * the slower of the two sets the time. */
/* The group's ranks in one tier-0 domain when it runs on a higher tier and spans domains (its
 * span processors spread evenly over them); 0 when it stays in one domain or runs on tier 0. */
static double domain_ranks(const llm_system_t *s, int net, double peers, double span)
{
    const llm_network_t *n0 = &s->networks[0];
    if (net == 0 || n0->size <= 0 || span <= (double)n0->size)
        return 0;
    return max2(1, floor(peers * (double)n0->size / span));
}

double llm_a2a_time(const llm_system_t *s, int net, double bytes, double peers, double span)
{
    if (peers <= 1 || bytes <= 0)
        return 0;
    const llm_network_t *n = &s->networks[net], *n0 = &s->networks[0];
    const double inner = domain_ranks(s, net, peers, span);
    if (inner == 0)
        return n->latency_s + bytes * (peers - 1) / peers / (n->bandwidth_gbps * 1e9 * n->efficiency);
    const double t0 = inner > 1 ? n0->latency_s + bytes * (inner - 1) / peers /
                                                      (n0->bandwidth_gbps * 1e9 * n0->efficiency)
                                : 0;
    const double t1 =
        n->latency_s + bytes * (peers - inner) / peers / (n->bandwidth_gbps * 1e9 * n->efficiency);
    return max2(t0, t1);
}

/* The chance that one tier-0 domain holding `per_domain` consecutive experts holds none of a
 * token's top_k, routing balanced and uniform. Without groups, p0 = C(E − E_d, k) / C(E, k).
 * With group-limited routing (G groups of S = E/G consecutive experts, the token's k experts
 * drawn among the experts of the g groups it picks), the domain overlaps n_d groups with c
 * experts of each — n_d = E_d/S, c = S when groups are no wider than a domain; n_d = 1, c = E_d
 * when a group spans domains — and
 *   p0 = Σ_j H(j; n_d of G, g) · C(g·S − j·c, k) / C(g·S, k)
 * with H the hypergeometric chance that j of the g picked groups overlap the domain. Routing
 * without groups is G = g = 1 (n_d = 1, c = E_d: the first formula). When neither of S and E_d
 * divides the other the groups do not line up with domains, and the first formula is used. */
static double domain_miss(const model_moe_t *x, double per_domain)
{
    const unsigned E = (unsigned)x->num_experts, k = (unsigned)x->top_k, d = (unsigned)per_domain;
    unsigned G = 1, g = 1;
    if (x->router_groups > 0) {
        const unsigned S = E / (unsigned)x->router_groups;
        if ((S <= d && d % S == 0) || (S > d && d > 0 && S % d == 0)) {
            G = (unsigned)x->router_groups;
            g = (unsigned)x->router_group_top_k;
        }
    }
    const unsigned S = E / G, c = S < d ? S : d, nd = S < d ? d / S : 1, pool = g * S;
    double p0 = 0;
    for (unsigned j = 0; j <= nd && j <= g; j++)
        p0 += gsl_ran_hypergeometric_pdf(j, nd, G - nd, g) *
              (j * c >= pool ? 0 : gsl_ran_hypergeometric_pdf(0, j * c, pool - j * c, k));
    return p0;
}

/* The flex dispatcher (DeepEP, HybridEP) deduplicates what crosses the higher tier: a token goes
 * once to each remote tier-0 domain holding at least one of its k experts, lands on the rank of
 * the same local index there and is forwarded over tier 0 to the ranks holding its experts.
 * With `inner` ranks of the group per domain, n = peers/inner domains and E_d = E·inner/peers
 * experts per domain, routing balanced and uniform:
 *   p0 = domain_miss(E_d)           the chance that one remote domain holds none of the k
 *   t1 = latency1 + token_bytes·(n − 1)·(1 − p0) / (bandwidth1·efficiency1)
 *   t0 = latency0 + token_bytes·k·(inner − 1)/inner / (bandwidth0·efficiency0)
 * (each rank receives its k copies per token, all but 1/inner of them over tier 0: straight from
 * its own domain or forwarded by the landing rank), pipelined: the slower of the two sets the
 * time. A group inside one domain sends what the plain all-to-all sends. */
double llm_a2a_flex_time(const llm_system_t *s, int net, double token_bytes,
                         const model_moe_t *moe, double peers, double span)
{
    const llm_network_t *n = &s->networks[net], *n0 = &s->networks[0];
    const double top_k = (double)moe->top_k;
    if (peers <= 1 || token_bytes <= 0)
        return 0;
    const double inner = domain_ranks(s, net, peers, span);
    if (inner == 0)
        return llm_a2a_time(s, net, token_bytes * top_k, peers, span);
    const double domains = peers / inner;
    const double p0 = domain_miss(moe, floor((double)moe->num_experts * inner / peers));
    const double t1 = n->latency_s + token_bytes * (domains - 1) * (1 - p0) /
                                         (n->bandwidth_gbps * 1e9 * n->efficiency);
    const double t0 = inner > 1 ? n0->latency_s + token_bytes * top_k * (inner - 1) / inner /
                                                      (n0->bandwidth_gbps * 1e9 * n0->efficiency)
                                : 0;
    return max2(t0, t1);
}

/* ---- grouped GEMM ---- */

double llm_curve_top(const llm_curve_t *cv)
{
    double top = 0;
    for (int i = 0; i < cv->num_points; i++)
        top = max2(top, cv->points[i].efficiency);
    return top;
}

double llm_grouped_gemm_shape_at(double M, double K, double N, double rate)
{
    return M / (M + 160 * rate) * K / (K + 160 * rate) * N / (N + 32 * rate);
}

double llm_grouped_gemm_shape(double M, double K, double N)
{
    return llm_grouped_gemm_shape_at(M, K, N, 1);
}

/* A grouped GEMM of G experts, each M rows by an inner K and an output N (forward M = rows/G,
 * K = inner, N = out; input gradient K and N swapped; weight gradient M = inner, K = rows/G,
 * N = out), runs in
 *   t = FLOPs / (peak · e_top · M/(M + 160) · K/(K + 160) · N/(N + 32)) + 30 µs
 * where e_top is the best efficiency of the system's curve for the GEMM's datatype: the shape
 * factors take the small-expert penalty (partial tiles, short K loops, the GEMM's prologue) and
 * the 30 µs the call's fixed cost. Fitted to the 96 BF16 grouped GEMMs of the H100 measurements
 * (bench/gpu/2026-11-26-h100-sxm5-80gb, "Grouped GEMM": Qwen3-30B-A3B, Qwen3-235B-A22B,
 * GPT-OSS-120B and DeepSeek-V3 experts, 8/16/32 local experts, 128–8192 tokens per expert,
 * gate+up and down, against e_top = 0.801): 8.5 % mean, 29 % worst error in time.
 * An FP8 GEMM (l->fp8: per-tensor current scaling on Hopper, MXFP8 on Blackwell) runs its main
 * loop at twice BF16's rate while a tile's prologue, epilogue and partial-tile waste take the
 * same time, so the three constants double (320, 320, 64; llm_grouped_gemm_shape_at). The same
 * bench's 23 dense GEMMs measured in both datatypes ("GEMM", FP8 tensorwise against BF16, each
 * against its datatype's best): predicting FP8's efficiency from BF16's with the constants
 * doubled is off by 11.9 % on average, 19.9 % with them unchanged (square 2048: FP8 at 0.35 of
 * its best where BF16 reaches 0.56; Llama 3 70B's TP-8 output projection, K = 1024, 0.60 and
 * 0.74). Its six FP8 grouped GEMMs (torch._scaled_grouped_mm, rowwise, gate+up of Qwen3-30B-A3B
 * and DeepSeek-V3, 16 and 32 local experts, 512 and 2048 tokens an expert), with the 30 µs:
 * +98, +1, +2, −26, +1, +12 % in efficiency (23 % mean) with the constants doubled, +143, +16,
 * +19, −7, +11, +23 % (36 %) unchanged. */
double llm__grouped_gemm_time(const llm__layer_t *l, llm__ctx_t *c, llm__stage_t st, double flops)
{
    if (flops <= 0)
        return 0;
    const double per = l->rows / l->groups;
    const double M = st == LLM__WGRAD ? l->inner : per;
    const double K = st == LLM__WGRAD ? per : st == LLM__AGRAD ? l->out : l->inner;
    const double N = st == LLM__AGRAD ? l->inner : l->out;
    const double peak = l->fp8 ? c->fp8_matrix_flops : c->matrix_flops;
    const double top = llm_curve_top(l->fp8 ? c->fp8_matrix_curve : c->matrix_curve);
    return flops / (peak * top * llm_grouped_gemm_shape_at(M, K, N, l->fp8 ? 2 : 1)) +
           LLM_GROUPED_GEMM_FIXED_S;
}

/* ---- layers ---- */

/* A linear layer of m×n by n×k; grouped over `groups` experts when groups > 0 (the weights are
 * groups·n·k, the rows m are split among them). */
static llm__layer_t *linear(llm__block_t *b, double m, double n, double k, double groups,
                            bool fp8, bool rf)
{
    llm__layer_t *l = llm__push_layer(b, LLM__LINEAR, rf, false);
    const double g = groups > 0 ? groups : 1;
    l->fw_flops = l->agrad_flops = l->wgrad_flops = 2 * m * n * k;
    l->inputs_size = l->activation_space = m * n;
    l->output_size = l->activation_grads = m * k;
    l->weight_space = l->weight_grads = g * n * k;
    l->optim_space = 2 * g * n * k;
    l->groups = groups;
    l->rows = m;
    l->inner = n;
    l->out = k;
    l->expert = groups > 0;
    l->fp8 = fp8;
    return l;
}

llm__layer_t *llm__add_expert_linear(llm__block_t *b, double m, double n, double k, double groups)
{
    return linear(b, m, n, k, groups, false, false);
}

/* Memory-bound work on `in` input and `out` output elements with `fw`/`bw` FLOPs per output. */
static llm__layer_t *vector(llm__block_t *b, double in, double out, double fw, double bw,
                            double stored, bool rf)
{
    llm__layer_t *l = llm__push_layer(b, LLM__ELEMENTWISE, rf, false);
    l->fw_flops = fw * out;
    l->agrad_flops = bw * out;
    l->inputs_size = in;
    l->output_size = out;
    l->activation_space = stored;
    l->activation_grads = in;
    return l;
}

/* The permutation before the experts (Megatron's fused permute): forward reads the T·h routed
 * tokens and writes their R·h copies grouped by expert; backward reads the R·h gradient rows and
 * sums each token's k of them into T·h: (T + R)·h elements each way, no FLOPs counted, nothing
 * kept (the row map is indices). */
static void permute(llm__block_t *b, double tokens, double rows, bool rf)
{
    llm__layer_t *l = vector(b, tokens, rows, 0, 0, 0, rf);
    l->activation_space = rows; /* read again in backward (the gradient rows), not stored */
    l->activation_stored = false;
    l->activation_reused = true;
}

/* The activation of an MLP of `out` outputs: SwiGLU (6 FLOPs forward, 12 backward per output,
 * keeping its 2·out input) or a GeLU (8 and 13, as Calculon's unfused GeLU counts). */
static llm__layer_t *activation(llm__block_t *b, const fathom_model_t *m,
                                const llm_execution_t *e, double out, bool rf)
{
    if (m->gated_mlp) {
        llm__layer_t *l = llm__push_layer(b, LLM__GATED_ACT, rf, false);
        l->fw_flops = 6 * out;
        l->agrad_flops = 12 * out;
        l->inputs_size = l->activation_space = l->activation_grads = 2 * out;
        l->output_size = out;
        l->fp8_cache = e->fp8_activation_cache;
        return l;
    }
    return vector(b, out, out, 8, 13, out, rf);
}

/* The MoE MLP on one rank, per microbatch, T = b·s/tp tokens routed, E experts, k = top_k,
 * E/EP local experts of width fe/ETP, R = llm__moe_expert_rows rows:
 *   router      T×h by h×E GEMM (replicated weights, not an expert layer)
 *   top-k       softmax and selection over E scores: 6 FLOPs forward, 8 backward per score
 *   permute     T·h read, R·h written (rows copied once per chosen expert), the reverse in
 *               backward: memory-bound (permute())
 *   experts     grouped GEMMs R×h by h×(2)fe/ETP and R×fe/ETP by fe/ETP×h over E/EP experts,
 *               each at the efficiency of one expert's GEMM (R/(E/EP) rows)
 *   unpermute   the k rows of each token summed (the weights applied in the activation): 2 FLOPs
 *               per row element, nothing kept
 *   shared      S shared experts, an MLP of width S·fs/tp on the b·s gathered tokens. */
void llm__add_moe_mlp(llm__block_t *b, const fathom_model_t *m, const llm_execution_t *e,
                      const llm__sizes_t *z, bool rf, int group)
{
    const model_moe_t *x = &m->moe;
    const double h = (double)m->hidden, E = (double)x->num_experts, k = (double)x->top_k;
    const double T = llm__moe_local_tokens(m, e), R = llm__moe_expert_rows(m, e);
    const double local = E / (double)llm__expert_par(e);
    const double fe = (double)x->expert_feedforward / (double)llm__expert_tensor_par(e);
    const double up = m->gated_mlp ? 2 : 1;
    const int first = b->num_layers;
    /* selective recompute of moe: every layer below reruns in backward from the kept MLP input
     * (the router's), and none of them stores its activation */
    const bool moe_redone = llm__moe_redone(e);
    rf = rf || moe_redone;
    const unsigned up_proj = m->gated_mlp ? LLM_LORA_GATE | LLM_LORA_UP : LLM_LORA_UP;
    llm__layer_t *router = linear(b, T, h, E, 0, false, rf);
    router->weight_space += x->router_bias ? E : 0;
    router->input_group = group; /* its kept input is the shared experts' too */
    /* selective recompute of layernorm: the router's input is the norm's output, rerun */
    if (llm__norm_redone(e))
        router->activation_stored = false;
    vector(b, T * E, T * k, 6 * E / k, 8 * E / k, T * E, rf);
    permute(b, T * h, R * h, rf);
    linear(b, R, h, up * fe, local, e->fp8, rf)->proj = up_proj;
    /* selective recompute of moe_act: the activation reruns in backward (its input is kept)
     * and its output, the down GEMM's input of R·fe elements, is not stored */
    const bool act_redone = (e->recompute_modules & LLM_RECOMPUTE_MOE_ACT) != 0;
    activation(b, m, e, R * fe, rf || act_redone);
    llm__layer_t *down = linear(b, R, fe, h, local, e->fp8, rf);
    down->activation_stored = !act_redone;
    down->proj = LLM_LORA_DOWN;
    /* the combine keeps nothing: Megatron-Core applies the routing weights in the experts'
     * activation (TEGroupedMLP's weighted bias_swiglu, permuted_probs) and unpermutes with an
     * index scatter-add, whose backward needs only the indices */
    vector(b, R * h, T * h, 2 * k, 2 * k, R * h, rf)->activation_stored = false;
    if (x->shared_experts > 0) {
        const double bs = (double)z->batch_seq;
        const double fs = (double)(x->shared_experts * x->shared_expert_feedforward) /
                          (double)e->tensor_par;
        /* selective recompute of shared_experts reruns them from the MLP's input, which the
         * router keeps: they keep nothing */
        const bool shared_redone = (e->recompute_modules & LLM_RECOMPUTE_SHARED_EXPERTS) != 0;
        const bool sf = rf || shared_redone;
        llm__layer_t *l = linear(b, bs, h, up * fs, 0, e->fp8, sf);
        /* its input is the router's: the same bf16 tensor, kept once by the router; under
         * FP8 the linear keeps its own FP8 copy */
        l->activation_stored = e->fp8 && !shared_redone && !llm__norm_redone(e);
        l->proj = up_proj;
        if (!l->activation_stored)
            l->input_group = group;
        activation(b, m, e, bs * fs, sf)->activation_stored = !shared_redone;
        llm__layer_t *d = linear(b, bs, fs, h, 0, e->fp8, sf);
        d->activation_stored = !shared_redone;
        d->proj = LLM_LORA_DOWN;
    }
    for (int i = first; i < b->num_layers; i++) {
        b->layers[i].moe = true;
        if (moe_redone && i > first)
            b->layers[i].activation_stored = false;
    }
}

/* A projection of the normed hidden state: the fork before it (llm_layers.c) keeps that input
 * once for both down-projections, as it does for Q, K and V of the standard block. */
static void reads_fork(llm__layer_t *l, unsigned proj, int group)
{
    l->activation_stored = false;
    l->activation_reused = true;
    l->proj = proj;
    l->input_group = group;
}

/* MLA's projections on one rank (n/tp heads), b·s tokens after the TP gather:
 *   q_a  h×rq (replicated) and its RMSNorm, q_b rq×(n/tp)·(nope + rope)   [q_lora_rank > 0]
 *   or   h×(n/tp)·(nope + rope)                                           [q_lora_rank = 0]
 *   kv_a h×(rkv + rope) (replicated) and its RMSNorm, kv_b rkv×(n/tp)·(nope + v)
 * The K/V cache of inference would be the compressed rkv + rope per token; in training the
 * decompressed K and V are what attention keeps. Selective recompute of mla_up_proj (Megatron's
 * CheckpointWithoutOutput over the up-projections and RoPE) keeps only the latents: q_b (or q)
 * and kv_b rerun in backward, and the block builder drops Q, K and V from attention's storage. */
void llm__add_mla_qkv(llm__block_t *b, const fathom_model_t *m, const llm_execution_t *e,
                      const llm__sizes_t *z, bool rf, int group)
{
    /* selective recompute of mla_up_proj reruns the up-projections from the kept latents */
    const bool upf = rf || (e->recompute_modules & LLM_RECOMPUTE_MLA_UP_PROJ);
    const model_mla_t *a = &m->mla;
    const double bs = (double)z->batch_seq, h = (double)m->hidden;
    const double n = (double)(m->attn_heads / e->tensor_par);
    const double rq = (double)a->q_lora_rank, rkv = (double)a->kv_lora_rank;
    const double qk = (double)(a->qk_nope_head_dim + a->qk_rope_head_dim);
    if (rq > 0) {
        reads_fork(linear(b, bs, h, rq, 0, e->fp8, rf), LLM_LORA_Q_A, group);
        llm__layer_t *l = vector(b, bs * rq, bs * rq, 4, 10, bs * rq, rf);
        l->kind = LLM__LAYER_NORM;
        l->weight_space = l->weight_grads = rq;
        l->optim_space = 2 * rq;
        /* mla_up_proj: Megatron checkpoints the up-projection with its fused norm
         * (TELayerNormColumnParallelLinear) from the latent: the norm's input stays, the
         * projection's own input is remade */
        llm__layer_t *q = linear(b, bs, rq, n * qk, 0, e->fp8, upf);
        q->activation_stored = !upf || rf;
        q->proj = LLM_LORA_Q_B;
    } else {
        reads_fork(linear(b, bs, h, n * qk, 0, e->fp8, upf), LLM_LORA_Q, group);
    }
    reads_fork(linear(b, bs, h, rkv + (double)a->qk_rope_head_dim, 0, e->fp8, rf), LLM_LORA_KV_A,
               group);
    llm__layer_t *l = vector(b, bs * rkv, bs * rkv, 4, 10, bs * rkv, rf);
    l->kind = LLM__LAYER_NORM;
    l->weight_space = l->weight_grads = rkv;
    l->optim_space = 2 * rkv;
    llm__layer_t *kv =
        linear(b, bs, rkv, n * (double)(a->qk_nope_head_dim + a->v_head_dim), 0, e->fp8, upf);
    kv->activation_stored = !upf || rf;
    kv->proj = LLM_LORA_KV_B;
}

/* ---- multi-token prediction ---- */

static void append(llm__block_t *to, const llm__block_t *from, double depths)
{
    const int groups = to->num_groups;
    to->num_groups += from->num_groups;
    for (int i = 0; i < from->num_layers && to->num_layers < LLM__MAX_LAYERS; i++) {
        llm__layer_t *l = &to->layers[to->num_layers++];
        *l = from->layers[i];
        l->input_group += l->input_group ? groups : 0;
        if (depths > 1) {
            l->fw_flops *= depths;
            l->agrad_flops *= depths;
            l->wgrad_flops *= depths;
            l->inputs_size *= depths;
            l->output_size *= depths;
            l->activation_space *= depths;
            l->activation_grads *= depths;
            l->weight_space *= depths;
            l->weight_grads *= depths;
            l->optim_space *= depths;
            l->comm_size *= depths;
        }
    }
}

void llm__add_mtp(const fathom_model_t *m, const llm_execution_t *e, const llm__sizes_t *z,
                  llm__block_t *b)
{
    const double bs = (double)z->batch_seq, h = (double)m->hidden, D = (double)m->mtp_blocks;
    const int head_layers = b->num_layers, head_groups = b->num_groups;
    llm__block_t t;
    t.num_layers = t.num_groups = 0;
    /* RMSNorm of the next token's embedding and of the hidden state, then [e; h] → h */
    for (int i = 0; i < 2; i++) {
        llm__layer_t *l = vector(&t, bs * h, bs * h, 4, 10, bs * h, false);
        l->kind = LLM__LAYER_NORM;
        l->weight_space = l->weight_grads = h;
        l->optim_space = 2 * h;
    }
    linear(&t, bs, 2 * h, h / (double)e->tensor_par, 0, false, false);
    append(b, &t, D);
    /* the depth's own final norm, output layer and loss, the layers b holds so far (what
     * llm__build_output makes without MTP: copied, not built again); the output matrix is the
     * main head's */
    memcpy(t.layers, b->layers, (size_t)head_layers * sizeof t.layers[0]);
    t.num_layers = head_layers;
    t.num_groups = head_groups;
    llm__finetune_table(m, e, &t);
    for (int i = 0; i < t.num_layers; i++)
        if (t.layers[i].kind == LLM__LINEAR)
            t.layers[i].weight_space = t.layers[i].weight_grads = t.layers[i].optim_space = 0;
    append(b, &t, D);
}

/* ---- checks ---- */

int llm__check_moe(const fathom_model_t *m, const llm_system_t *s, const llm_execution_t *e,
                   fathom_error_t *err)
{
    const int64_t ep = llm__expert_par(e), etp = llm__expert_tensor_par(e);
    const model_moe_t *x = &m->moe;
    if (x->num_experts == 0) {
        if (ep > 1 || etp > 1)
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD,
                                    ep > 1 ? "execution.expert_par" : "execution.expert_tensor_par",
                                    "needs a model with experts (model.moe)");
        return 0;
    }
    if (x->top_k > x->num_experts)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "model.moe.top_k",
                                "must be at most num_experts (%lld)", (long long)x->num_experts);
    if (x->num_experts % ep != 0)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.expert_par",
                                "must divide model.moe.num_experts (%lld), got %lld",
                                (long long)x->num_experts, (long long)ep);
    if (x->expert_feedforward % etp != 0)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.expert_tensor_par",
                                "must divide model.moe.expert_feedforward (%lld), got %lld",
                                (long long)x->expert_feedforward, (long long)etp);
    if (fold_size(e) % (ep * etp) != 0)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.expert_par",
                                "expert_par × expert_tensor_par (%lld) must divide "
                                "tensor_par × context_par × data_par (%lld): expert layers are "
                                "folded onto the processors of attention",
                                (long long)(ep * etp), (long long)fold_size(e));
    if (e->expert_par_net < 0 || e->expert_par_net >= s->num_networks)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.expert_par_net",
                                "must index system.networks (%d tiers), got %d", s->num_networks,
                                e->expert_par_net);
    const llm_network_t *n = &s->networks[e->expert_par_net];
    if (ep > 1 && n->size > 0 && ep * etp > n->size)
        return fathom_error_set(err, FATHOM_E_INFEASIBLE_EXECUTION, "execution.expert_par_net",
                                "the expert-parallel group spans %lld processors but tier %d "
                                "connects %lld; use a higher tier",
                                (long long)(ep * etp), e->expert_par_net, (long long)n->size);
    if ((double)e->microbatch_size * (double)m->seq_size * (double)x->top_k *
            (double)(m->hidden > x->expert_feedforward ? m->hidden : x->expert_feedforward) *
            llm__moe_row_factor(e) * (double)etp > LLM__MAX_EXACT)
        return fathom_error_set(err, FATHOM_E_LIMIT_EXCEEDED, "execution.microbatch_size",
                                "an expert GEMM of this microbatch would hold more than 2^53 "
                                "elements");
    return 0;
}

/* ---- the step ---- */

/* The FLOPs of a table's linear layers (the matrix engine's), forward and backward (input and
 * weight gradients), and with `timed` their seconds (llm__layer_cost; the FLOPs alone are
 * llm__layer_flops, the same numbers without the curves). */
static void table_time(llm__block_t *t, llm__ctx_t *c, bool training, bool timed, double *fw,
                       double *bw, double flops[2])
{
    static const llm__stage_t passes[3] = {LLM__FW, LLM__AGRAD, LLM__WGRAD};
    *fw = *bw = flops[0] = flops[1] = 0;
    for (int i = 0; i < t->num_layers; i++) {
        const double linear = t->layers[i].kind == LLM__LINEAR ? 1 : 0;
        for (int p = 0; p < (training ? 3 : 1); p++) {
            llm__cost_t k;
            if (timed)
                llm__layer_cost(&t->layers[i], c, passes[p], &k);
            else
                k.flops = llm__layer_flops(&t->layers[i], c, passes[p]), k.time = 0;
            *(p == 0 ? fw : bw) += k.time;
            flops[p == 0 ? 0 : 1] += linear * k.flops;
        }
    }
}

/* The dense MLP of a dense block in the MoE model's block table (llm__build_block_like keeps
 * the rest): its linears' FLOPs forward and backward for the step's hardware FLOPs and, where
 * the pacing stage holds dense blocks, its time for theirs (dense_blocks); built once a step. */
typedef struct {
    double fw, bw, flops[2];
} dense_mlp_t;

/* Whether an MoE model has dense blocks (DeepSeek-V3's first three; an MTP depth takes the last
 * block's kind, so a dense depth means a dense last block). */
static bool has_dense_mlp(const fathom_model_t *m)
{
    return m->moe.num_experts > 0 && model_moe_blocks_in(m, 0, m->num_blocks) < m->num_blocks;
}

static void dense_mlp(const fathom_model_t *m, const llm_execution_t *e, llm__compiled_t *k,
                      bool timed, dense_mlp_t *d)
{
    const double bs = (double)k->z.batch_seq, h = (double)m->hidden;
    const double f = (double)m->feedforward / (double)e->tensor_par;
    llm__block_t t;
    t.num_layers = t.num_groups = 0;
    linear(&t, bs, h, (m->gated_mlp ? 2 : 1) * f, 0, e->fp8, false)->proj =
        m->gated_mlp ? LLM_LORA_GATE | LLM_LORA_UP : LLM_LORA_UP;
    activation(&t, m, e, bs * f, false);
    linear(&t, bs, f, h, 0, e->fp8, false)->proj = LLM_LORA_DOWN;
    /* fine-tuning: the dense MLP frozen, with its adapters, as the dense block's */
    fathom_model_t dense = *m;
    dense.moe.num_experts = 0;
    llm__finetune_table(&dense, e, &t);
    table_time(&t, &k->c, e->training, timed, &d->fw, &d->bw, d->flops);
}

/* Whether the dense blocks rerun their dense MLP's forward: with full recompute as the blocks'
 * share llm__recomputed_share, with selective recompute only with the mlp module. */
static double dense_mlp_redone(const llm_execution_t *e, const llm__compiled_t *k)
{
    if (e->activation_recompute == LLM_RECOMPUTE_FULL)
        return llm__recomputed_share(e, k);
    return (e->recompute_modules & LLM_RECOMPUTE_MLP) ? 1 : 0;
}

/* The block table costs every block of an MoE model as an MoE block. The first stage's `n`
 * dense blocks (DeepSeek-V3's first three) take, per microbatch, a dense MLP's time instead of
 * the MoE MLP's (the rest of the two blocks, TP collectives included, is the same): forward,
 * backward, and recompute with full recompute get n·nmb·(dense MLP − MoE MLP); with selective
 * recompute (moe_act, moe) the recompute line loses n·nmb·(what the MoE MLP reran), as a dense
 * MLP reruns nothing. The bubble and the DP reduction keep the MoE block's. Returns the compute
 * time added. */
static double dense_blocks(const llm_execution_t *e, const llm__compiled_t *k,
                           const llm__block_stats_t *blk, double n, const dense_mlp_t *d,
                           llm_stats_t *st)
{
    if (n <= 0)
        return 0;
    const double dense_fw = d->fw, dense_bw = d->bw;
    const double mult = n * (double)k->nmb;
    const double dfw = mult * (dense_fw - blk->moe_fw_time);
    const double dbw = mult * (dense_bw - blk->moe_bw_time);
    /* selective recompute (moe_act, moe) reruns parts of MoE MLPs only: the dense blocks drop
     * what the MoE block reruns and rerun nothing of their dense MLP but with mlp, which reruns
     * its forward (the activations stay the MoE block's, as everywhere here) */
    const bool selective = e->activation_recompute != LLM_RECOMPUTE_FULL;
    const bool mlp_redone = selective && (e->recompute_modules & LLM_RECOMPUTE_MLP);
    const double dre = llm__recomputed_share(e, k) * dfw -
                       (selective ? mult * blk->moe_re_time : 0) +
                       (mlp_redone ? mult * dense_fw : 0);
    st->fw_time += dfw;
    st->bw_time += dbw;
    st->recompute_time += dre;
    st->total_time += dfw + dbw + dre;
    return dfw + dbw + dre;
}

/* The all-to-alls of one MoE block and microbatch (doc/moe.md, "Dispatch and combine"): forward
 * the dispatch and the combine, backward their gradients (the combine's backward is a dispatch
 * of gradients, the dispatch's a combine). Each rank sends its T tokens of h elements (T·k copies
 * with the alltoall dispatcher; deduplicated per tier-0 domain with flex: llm_a2a_flex_time),
 * row_factor more at the busiest. moe_fp8_dispatch sends the two that feed FP8 GEMMs — the
 * forward dispatch and the combine's backward — as FP8 with one fp32 scale per 128 elements
 * (1 + 4/128 bytes per element; DeepSeek-V3 report sec. 3.3.2, Megatron's
 * moe_dispatch_fwd_dtype and moe_combine_bwd_dtype); the other two stay in the datatype. A
 * datatype of one byte (float8) already sends less than that: its tokens go as they are. */
typedef struct {
    double dispatch_fw, combine_fw, dispatch_bw, combine_bw;
    double etp; /* each way: the expert-TP all-gather after the dispatch and reduce-scatter
                 * before the combine (their duals backward) */
} a2a_t;

static double a2a_one(const fathom_model_t *m, const llm_system_t *s, const llm_execution_t *e,
                      double elem_bytes)
{
    const double ep = (double)llm__expert_par(e), etp = (double)llm__expert_tensor_par(e);
    const double token_bytes =
        llm__moe_local_tokens(m, e) * (double)m->hidden * elem_bytes * llm__moe_row_factor(e);
    switch (e->moe_dispatcher) {
    case LLM_MOE_DISPATCH_FLEX:
        return llm_a2a_flex_time(s, e->expert_par_net, token_bytes, &m->moe, ep, ep * etp);
    case LLM_MOE_DISPATCH__FREE:
        return 0;
    default: {
        /* under the NCCL model the collective model's all-to-all (its ranks etp apart, Megatron's
         * expert rank order tp-ep-dp); under Calculon's, the tier split of llm_a2a_time */
        const double bytes = token_bytes * (double)m->moe.top_k;
        if (s->collectives == LLM_COLLECTIVES_NCCL) {
            const llm_group_t g = {ep, etp, e->expert_par_net};
            return llm_collective_time(s, LLM_COLL_ALL_TO_ALL, bytes, &g);
        }
        return llm_a2a_time(s, e->expert_par_net, bytes, ep, ep * etp);
    }
    }
}

/* Expert tensor parallelism (Megatron-Core's alltoall dispatcher with expert TP > 1): after the
 * dispatch the ETP group all-gathers the tokens it received, so that each of its ranks computes
 * its 1/ETP of every expert's width over all of them (R = T·k·ETP·ρ rows, llm__moe_expert_rows),
 * and before the combine it reduce-scatters the partial outputs back: an all-gather and a
 * reduce-scatter of R·h elements among ETP ranks each way, on tier 0 when the group fits in it
 * (its ranks are adjacent). */
static double etp_comm(const fathom_model_t *m, const llm_system_t *s, const llm_execution_t *e,
                       double bpe)
{
    const double etp = (double)llm__expert_tensor_par(e);
    if (etp <= 1)
        return 0;
    const int tier = s->networks[0].size > 0 && etp > (double)s->networks[0].size
                         ? e->expert_par_net
                         : 0;
    const llm_group_t g = {etp, 1, tier};
    const double bytes = llm__moe_expert_rows(m, e) * (double)m->hidden * bpe;
    return llm_collective_time(s, LLM_COLL_ALL_GATHER, bytes, &g) +
           llm_collective_time(s, LLM_COLL_REDUCE_SCATTER, bytes, &g);
}

static a2a_t block_a2a(const fathom_model_t *m, const llm_system_t *s, const llm_execution_t *e,
                       double bpe)
{
    const double plain = a2a_one(m, s, e, bpe);
    const double fp8 = e->moe_fp8_dispatch ? a2a_one(m, s, e, fmin(bpe, 1.0 + 4.0 / 128.0)) : plain;
    return (a2a_t){fp8, plain, e->training ? plain : 0, e->training ? fp8 : 0,
                   etp_comm(m, s, e, bpe)};
}

/* The share of the compute the dispatcher's kernels take while they run beside it: the
 * processor_usage of the tiers they cross. The flex dispatcher's kernels forward over tier 0
 * (DeepEP takes its 20 SMs for both). The plain all-to-all of a group that spans tier-0 domains
 * with more than one of its ranks in each moves the tier-0 share at the same time as the higher
 * tier's (llm_a2a_time), in the same kernel (NCCL's all-to-all is one grouped send/receive
 * whose NVLink peers take channels as its network peers do), so its kernels hold tier 0's share
 * too: with the higher tier's alone, a group spread over two nodes hid behind the compute what
 * the same group inside one NVLink domain could not (DualPipe: Llama 4 Scout, EP 16 on H100s,
 * 0.54 s exposed across nodes against 1.29 s inside a 16-GPU domain). */
double llm__a2a_processor_usage(const llm_system_t *s, const llm_execution_t *e)
{
    const double u = s->networks[e->expert_par_net].processor_usage;
    const double ep = (double)llm__expert_par(e);
    const bool tier0 = e->moe_dispatcher == LLM_MOE_DISPATCH_FLEX ||
                       domain_ranks(s, e->expert_par_net, ep,
                                    ep * (double)llm__expert_tensor_par(e)) > 1;
    return tier0 ? max2(u, s->networks[0].processor_usage) : u;
}

double llm__a2a_overlap_exposed(const double comm[4], double af, double mf, double ab, double mb,
                                double u)
{
    const double df = comm[0], cf = comm[1], db = comm[2], cb = comm[3];
    const double p1 = max2(af + u * fmin(cb, af), cb);
    const double p2 = max2(max2(mb + mf + u * fmin(df + db, mb + mf), df + db),
                           max2(df + mf, mb + db));
    const double p3 = max2(ab + u * fmin(cf, ab), cf);
    return max2(0, p1 + p2 + p3 - (af + mf + ab + mb));
}

/* DualPipe partitions the SMs for the whole paired chunk (DeepSeek-V3 report sec. 3.2.1: the
 * share of SMs for communication is set by hand, 20 of the H800's 132 in sec. 3.2.2, which
 * processor_usage 0.15 stands for): the compute runs on 1 − u of them throughout, whether an
 * all-to-all is running or not, where Megatron's overlap shares them only while both run. With
 * s = 1/(1 − u) the phases see compute s·A, s·M and no further share, and the stretch itself
 * is exposed: exposed = overlap(s·Af, s·Mf, s·Ab, s·Mb; u = 0) + (s − 1)(Af + Mf + Ab + Mb). */
double llm__a2a_partitioned_exposed(const double comm[4], double af, double mf, double ab,
                                    double mb, double u)
{
    const double s = u > 0 && u < 1 ? 1 / (1 - u) : 1;
    return llm__a2a_overlap_exposed(comm, s * af, s * mf, s * ab, s * mb, 0) +
           (s - 1) * (af + mf + ab + mb);
}

/* What the all-to-alls of one block leave exposed, per microbatch, forward and backward.
 * Without overlap all four. With moe_a2a_overlap (Megatron's combined 1F1B schedule, the
 * forward of one microbatch beside the backward of another) or pipeline_schedule dualpipe
 * (DeepSeek's DualPipe pairs the same chunks) the communication stream and the compute stream
 * run three phases per layer
 * (Megatron-LM PR #2730 sets them out):
 *   P1 = max(Af + u·min(Cb, Af), Cb)                       combine backward ∥ attention forward
 *   P2 = max(Mb + Mf + u·min(Df + Db, Mb + Mf),            dispatch fw, then dispatch bw ∥
 *            Df + Db, Df + Mf, Mb + Db)                     MLP bw (dw included), then MLP fw
 *   P3 = max(Ab + u·min(Cf, Ab), Cf)                       combine forward ∥ attention backward
 * with A/M the block's attention and MoE-MLP compute, u the dispatcher's share of the compute
 * (llm__a2a_processor_usage) and the P2 terms the data dependencies (the MLP forward needs its
 * dispatch; the dispatch's backward needs the MLP's). Exposed: P1 + P2 + P3 − (Af + Mf + Ab + Mb),
 * half to each direction; DualPipe's fixed SM share instead by llm__a2a_partitioned_exposed. Recompute's forward all-to-alls (full recompute, or the moe module) are
 * exposed in backward (Megatron refuses the overlap with full recompute), and so is the expert-TP
 * gather and scatter (etp_comm), which runs on the compute stream. A share `unpaired` of the
 * chunk passes has no partner (unpaired_share) and exposes all four, as without overlap. */
static void block_a2a_exposed(const llm_execution_t *e, const llm__block_stats_t *blk,
                              const a2a_t *a, double u, double re_share, double unpaired,
                              double *fw_exp, double *bw_exp)
{
    const double re = re_share * (a->dispatch_fw + a->combine_fw + a->etp);
    const double etp_bw = e->training ? a->etp : 0;
    const double fw_alone = a->dispatch_fw + a->combine_fw + a->etp;
    const double bw_alone = a->dispatch_bw + a->combine_bw + etp_bw + re;
    if (!(e->moe_a2a_overlap || llm_pp_schedule(e) == LLM_PP_DUALPIPE) || !e->training) {
        *fw_exp = fw_alone;
        *bw_exp = bw_alone;
        return;
    }
    const double mf = blk->moe_fw_time, mb = blk->moe_bw_time;
    const double af = max2(0, blk->fw.time - mf);
    const double ab = max2(0, blk->agrad.time + blk->wgrad.time - mb);
    const double comm[4] = {a->dispatch_fw, a->combine_fw, a->dispatch_bw, a->combine_bw};
    const double exposed = llm_pp_schedule(e) == LLM_PP_DUALPIPE
                               ? llm__a2a_partitioned_exposed(comm, af, mf, ab, mb, u)
                               : llm__a2a_overlap_exposed(comm, af, mf, ab, mb, u);
    *fw_exp = exposed / 2 + a->etp;
    *bw_exp = exposed / 2 + etp_bw + re;
    if (unpaired > 0) {
        *fw_exp = (1 - unpaired) * *fw_exp + unpaired * fw_alone;
        *bw_exp = (1 - unpaired) * *bw_exp + unpaired * bw_alone;
    }
}

/* The share of a rank's chunk passes that Megatron's combined 1F1B cannot pair. The overlap
 * runs the forward of one chunk beside the backward of another in the steady state only: the
 * warm-up's forwards run before any backward exists and the cool-down's backwards after the
 * last forward. Megatron schedules one more warm-up forward when the overlap is on
 * (megatron/core/pipeline_parallel/schedules.py: "When enabling overlap_moe_expert_parallel_comm,
 * we schedule one extra micro-batch forward step before the 1f1b stages"), so of the nmb·v
 * forward chunk passes of a rank, W = llm__warmup_chunks (its warm-up plus that one) run alone,
 * and as many backward ones in the cool-down:
 *   unpaired = W / (nmb·v),   W = min(nmb·v, 2·(pp − 1) + (v − 1)·pp + 1) interleaved,
 *                             min(nmb, pp) otherwise (1 without pipelining: the first forward
 *                             and the last backward of the step)
 * taken on the first stage, whose warm-up is the longest and which opens and closes the step.
 * DualPipe (paired within its own two stages, sec. 3.2.1 of the DeepSeek-V3 report) keeps 0. */
static double unpaired_share(const llm_execution_t *e, int64_t nmb)
{
    if (!e->moe_a2a_overlap || !e->training || nmb <= 0 ||
        llm_pp_schedule(e) == LLM_PP_DUALPIPE)
        return 0;
    const double v =
        llm_pp_schedule(e) == LLM_PP_INTERLEAVED ? (double)e->pipeline_interleaving : 1;
    return llm__warmup_chunks(e, nmb, 0) / ((double)nmb * v);
}

void llm__a2a_block_exposed(const fathom_model_t *m, const llm_system_t *s,
                            const llm_execution_t *e, const llm__compiled_t *k,
                            const llm__block_stats_t *blk, double *fw, double *bw)
{
    *fw = *bw = 0;
    if (m->moe.num_experts == 0)
        return;
    const a2a_t a = block_a2a(m, s, e, k->c.bpe);
    /* full recompute of a share of the blocks, or the moe module in every block, reruns the
     * forward dispatch and combine */
    const double re_share =
        e->training ? llm__recomputed_share(e, k) + (llm__moe_redone(e) ? 1 : 0) : 0;
    block_a2a_exposed(e, blk, &a, llm__a2a_processor_usage(s, e), re_share,
                      unpaired_share(e, k->nmb), fw, bw);
}

int64_t llm__pace_moe_blocks(const fathom_model_t *m, const llm_execution_t *e, int64_t bpp)
{
    /* the dense blocks come first: look from the last stage, stop at an all-MoE one */
    int64_t most = 0, ends[2];
    llm_end_stage_blocks(m, e, &ends[0], &ends[1]);
    for (int64_t j = e->pipeline_par - 1; j >= 0 && most < bpp; j--) {
        int64_t first = 0;
        if (llm__stage_blocks_given(m, e, ends[0], ends[1], j, &first) == bpp) {
            const int64_t n = model_moe_blocks_in(m, first, first + bpp);
            most = n > most ? n : most;
        }
    }
    return most;
}

/* The step's hardware FLOPs (llm__stages counts every block as the block table `blk`, recompute
 * included) put right for the blocks that are not blk (doc/step_model.md, "Model FLOPs"):
 *   MTP depths   D more blocks of the last block's kind, forward and backward (llm_stages.c's
 *                mtp_blocks costs their time so, without recompute);
 *   dense blocks a dense MLP's linears (dense_mlp) in place of the MoE MLP's matrix layers,
 *                forward, backward and what recompute reruns of each;
 *   experts      blk's grouped GEMMs run the busiest rank's R = T·k·etp·ρ rows; summed over the
 *                processors they run the mean, T·k·etp·min(1, ρ) (ρ = llm__moe_row_factor; a
 *                capacity below 1 drops tokens at every rank), so a share 1 − min(1, ρ)/ρ of
 *                their FLOPs is not run on every processor.
 * Each per microbatch and processor, times nmb·tp·cp·dp. */
static void hardware_flops(const fathom_model_t *m, const llm_execution_t *e,
                           const llm__compiled_t *k, const llm__block_stats_t *blk,
                           const dense_mlp_t *dm, llm_step_extra_t *x)
{
    const double per = (double)k->nmb * (double)(e->tensor_par * llm_context_par(e) * e->data_par);
    const double D = (double)m->mtp_blocks;
    x->hardware_flops += per * D * (blk->matrix_fw_flops + blk->matrix_bw_flops);
    if (m->moe.num_experts == 0)
        return;
    const bool mtp_moe = model_block_is_moe(m, m->num_blocks - 1);
    const double moe = (double)model_moe_blocks_in(m, 0, m->num_blocks);
    const double dense = (double)m->num_blocks - moe, tr = e->training ? 1 : 0;
    const double *mm = blk->moe_matrix_flops, *xm = blk->expert_matrix_flops;
    if (dense > 0 || !mtp_moe) {
        const double *d = dm->flops;
        const double run = d[0] + d[1] - mm[0] - mm[1];
        const double redo = tr * (dense_mlp_redone(e, k) * d[0] - mm[2]);
        x->hardware_flops += per * (dense * (run + redo) + (mtp_moe ? 0 : D * run));
    }
    const double rf = llm__moe_row_factor(e), idle = 1 - fmin(1, rf) / rf;
    x->hardware_flops -= per * idle *
                         (moe * (xm[0] + xm[1] + tr * xm[2]) + (mtp_moe ? D * (xm[0] + xm[1]) : 0));
}

/* With experts, the exposed all-to-alls of the first stage's MoE blocks (block_a2a_exposed) per
 * microbatch, and the dense blocks' MLPs in place of the MoE MLP (dense_blocks). (The state
 * memory of every block kind is llm_memory.c's.) */
void llm__moe_step(const fathom_model_t *m, const llm_system_t *s, const llm_execution_t *e,
                   llm__compiled_t *k, const llm__block_stats_t *blk, llm_stats_t *st,
                   llm_step_extra_t *x)
{
    const double moe_blocks = (double)k->pace_moe_blocks, paced_dense = (double)k->bpp - moe_blocks;
    dense_mlp_t dm = {0};
    if (has_dense_mlp(m))
        dense_mlp(m, e, k, paced_dense > 0, &dm);
    hardware_flops(m, e, k, blk, &dm, x);
    if (m->moe.num_experts == 0)
        return;
    x->expert_parallel_tier = llm__expert_par(e) > 1 ? e->expert_par_net : -1;
    double fw_exp, bw_exp;
    llm__a2a_block_exposed(m, s, e, k, blk, &fw_exp, &bw_exp);
    const double nmb = (double)k->nmb;
    const double old_total = st->total_time;
    const double perfect = st->total_efficiency * old_total;
    double compute = st->system_efficiency * old_total;
    compute += dense_blocks(e, k, blk, paced_dense, &dm, st);
    x->expert_parallel_comm = (fw_exp + bw_exp) * moe_blocks * nmb;
    x->a2a_block_fw = fw_exp;
    x->a2a_block_bw = bw_exp;
    st->total_time += x->expert_parallel_comm;
    /* the rate and efficiencies of the new step time (as llm_stages.c's outer layers do) */
    st->sample_rate = (double)e->batch_size / st->total_time;
    st->compute_efficiency = perfect / compute;
    st->system_efficiency = compute / st->total_time;
    st->total_efficiency = perfect / st->total_time;

    /* The routed experts' grouped GEMMs as costed in the block (informational). */
    x->routed_expert_compute = blk->expert_time * moe_blocks * nmb;
}

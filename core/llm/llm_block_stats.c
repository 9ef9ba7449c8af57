/* llm_block_stats.c — one block's statistics from its layer table: each layer's forward,
 * backward, recompute and optimizer costs (llm__layer_costs), their sums per pass with the TP
 * collectives' exposed shares and the edge block's, the weights and the memory each layer holds
 * (llm__block_stats_costed; llm__block_memory_fresh for the memory alone). The step
 * (llm_model.c) turns these per-block, per-microbatch sums into the step; llm_memo.c keeps them
 * for the next estimate that builds the same table. Arithmetic follows Calculon's order of
 * operations (Calculon's Llm._compute_block_stats). */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "llm_internal.h"

static double max2(double a, double b) { return a > b ? a : b; }

/* The block kinds (0: the base block, 1: the edge block) a TP-communication layer costs apart:
 * both only under p2p_rs_ag (split at the chunk's edge alone); otherwise the edge block adds what
 * the base block does. */
static int tp_kinds(const llm__layer_t *l)
{
    return l->comm_type == LLM_TP_COMM_P2P_RS_AG ? 2 : 1;
}

/* One TP-communication layer's two block kinds in one pass: the bytes, the network time and
 * what of it is exposed, and (bw) the bandwidth an overlapped collective needs to stay hidden. */
static void tp_share(llm__layer_t *l, llm__ctx_t *c, llm__stage_t st, const llm__cost_t *own,
                     bool bw, llm__tp_share_t *t)
{
    const int kinds = tp_kinds(l);
    double net = 0, bytes = 0, exp = 0, req = 0;
    for (int edge = 0; edge < 2; edge++) {
        if (edge < kinds) {
            net = llm__layer_net_time(l, c, st, !edge, own);
            bytes = llm__layer_comm_bytes(l, c, st, !edge);
            exp = llm__layer_exposed_net_time(l, net);
            if (bw)
                req = llm__layer_required_bandwidth(l, c, st, !edge, own);
        }
        t->bytes[edge] = bytes;
        t->time[edge] = net;
        t->exposed[edge] = exp;
        t->bw_req[edge] = req;
    }
}

/* Adds a tp_share to the block's totals of its pass; bw_req (NULL to skip) keeps the highest
 * bandwidth an overlapped collective needs. */
static void add_tp_share(const llm__layer_t *l, const llm__tp_share_t *t, double size[2],
                         double time[2], double exposed[2], double *bw_req)
{
    const int kinds = tp_kinds(l);
    for (int edge = 0; edge < 2; edge++) {
        if (bw_req && edge < kinds)
            *bw_req = max2(*bw_req, t->bw_req[edge]);
        size[edge] += t->bytes[edge];
        time[edge] += t->time[edge];
        exposed[edge] += t->exposed[edge];
    }
}

static bool is_tp_comm(const llm__layer_t *l)
{
    return l->kind == LLM__TP_COMM || l->kind == LLM__LINEAR_OVERLAPPED;
}

static bool is_matrix(const llm__layer_t *l)
{
    return l->kind == LLM__LINEAR || l->kind == LLM__LINEAR_OVERLAPPED ||
           l->kind == LLM__BATCH_MATMUL || l->kind == LLM__FUSED_ATTENTION;
}

void llm__layer_costs(llm__layer_t *l, llm__ctx_t *c, bool training, llm__layer_costs_t *k)
{
    /* in the order Calculon asks them: an overlapped layer's exposure is what its last costed
     * pass leaves (llm__layer_cost), and the collectives read it */
    llm__layer_cost(l, c, LLM__FW, &k->fw);
    if (is_tp_comm(l))
        tp_share(l, c, LLM__FW, &k->fw, true, &k->fw_tp);
    if (training) {
        if (l->needs_recomm && is_tp_comm(l)) {
            /* Only a TP collective needs its own wgrad cost here; costing an overlapped
             * layer now would overwrite the exposure Calculon reads below (an overlapped layer
             * still holds its forward exposure). */
            k->rc = (llm__cost_t){0};
            if (l->kind == LLM__TP_COMM)
                llm__layer_cost(l, c, LLM__WGRAD, &k->rc);
            tp_share(l, c, LLM__WGRAD, &k->rc, false, &k->re_tp);
        }
        llm__layer_cost(l, c, LLM__AGRAD, &k->ag);
        if (is_tp_comm(l))
            tp_share(l, c, LLM__AGRAD, &k->ag, true, &k->ag_tp);
        llm__layer_cost(l, c, LLM__WGRAD, &k->wg);
    }
    k->net_exposed_time = l->net_exposed_time;
}

/* Adds one layer's cost in one pass to the block's totals for that pass. */
static void add_pass(llm__pass_t *p, const llm__cost_t *k)
{
    p->flops += k->flops;
    p->flops_time += k->flops_time;
    p->mem_accessed += k->mem;
    p->mem_time += k->mem_time;
    p->time += k->time;
}

/* A layer outside a share (FP8, experts, frozen, the MoE MLP, attention, the recompute) adds
 * nothing to the share's sum: it would add 0.0, which leaves a sum begun at +0 bit for bit as it
 * is (the golden cases depend on the sums), and most layers are outside most shares. */

/* The layer's parameters and their FP8, expert and frozen shares. */
static void add_weights(const llm__layer_t *l, llm__block_stats_t *b)
{
    const double w = l->weight_space;
    b->weight_elems += w;
    if (l->fp8)
        b->fp8_weight_elems += w;
    if (l->expert)
        b->expert_weight_elems += w;
    if (l->frozen) {
        b->frozen_elems += w;
        if (l->expert)
            b->expert_frozen_elems += w;
    }
}

/* A matrix layer's FLOPs of one pass (0 forward, 1 backward, 2 recompute) in the MoE MLP's and
 * the routed experts' shares (what llm__moe_step corrects the hardware FLOPs by). */
static void add_moe_flops(const llm__layer_t *l, int pass, double flops, llm__block_stats_t *b)
{
    if (l->moe)
        b->moe_matrix_flops[pass] += flops;
    if (l->expert)
        b->expert_matrix_flops[pass] += flops;
}

/* The layer's forward pass and its shares. */
static void add_forward(const llm__layer_t *l, const llm__layer_costs_t *k, llm__block_stats_t *b)
{
    const llm__cost_t *fw = &k->fw;
    add_pass(&b->fw, fw);
    if (is_tp_comm(l))
        add_tp_share(l, &k->fw_tp, b->fw_tp_size, b->fw_tp_time, b->fw_tp_exposed,
                     &b->tp_bw_overlap_req);
    b->useful_fw_flops += fw->flops;
    if (is_matrix(l)) {
        b->matrix_fw_flops += fw->flops;
        add_moe_flops(l, 0, fw->flops, b);
        if (l->needs_recompute) {
            b->matrix_re_flops += fw->flops;
            add_moe_flops(l, 2, fw->flops, b);
        }
    }
    add_weights(l, b);
    if (l->kind == LLM__FUSED_ATTENTION)
        b->attn_fw_time += fw->time;
    if (l->expert)
        b->expert_time += fw->time;
    if (l->moe)
        b->moe_fw_time += fw->time;
}

/* The forward pass again, for a layer the backward pass recomputes, and the TP collective it
 * repeats. */
static void add_recompute(const llm__layer_t *l, const llm__layer_costs_t *k,
                          llm__block_stats_t *b)
{
    if (l->needs_recompute) {
        /* Calculon adds the running block totals here (not the layer's own FLOPs and
         * bytes); the port keeps that so its statistics match. */
        b->re.flops += b->fw.flops;
        b->re.flops_time += b->fw.flops_time;
        b->re.mem_accessed += b->fw.mem_accessed;
        b->re.mem_time += b->fw.mem_time;
        b->re.time += k->fw.time;
        if (l->moe)
            b->moe_re_time += k->fw.time;
    }
    if (l->needs_recomm && is_tp_comm(l))
        add_tp_share(l, &k->re_tp, b->recomm_size, b->recomm_time, b->recomm_exposed, NULL);
}

/* The backward pass (activation and weight gradients) and the optimizer step. */
static void add_backward(const llm__layer_t *l, const llm__layer_costs_t *k,
                         llm__block_stats_t *b)
{
    const llm__cost_t *ag = &k->ag, *wg = &k->wg, *op = &k->op;
    add_pass(&b->agrad, ag);
    if (is_tp_comm(l))
        add_tp_share(l, &k->ag_tp, b->agrad_tp_size, b->agrad_tp_time, b->agrad_tp_exposed,
                     &b->tp_bw_overlap_req);
    add_pass(&b->wgrad, wg);
    if (l->expert)
        b->expert_time += ag->time + wg->time;
    if (l->moe)
        b->moe_bw_time += ag->time + wg->time;
    add_pass(&b->optim, op);
    b->useful_bw_flops += ag->flops + wg->flops + op->flops;
    if (is_matrix(l)) {
        b->matrix_bw_flops += ag->flops + wg->flops;
        add_moe_flops(l, 1, ag->flops + wg->flops, b);
    }
    if (l->kind == LLM__FUSED_ATTENTION)
        b->attn_bw_time += ag->time;
}

/* The layer's share of one block's memory: weights, activations kept or worked in, and for
 * training the gradients and optimizer state. */
static void add_memory(const llm__layer_t *l, const llm__ctx_t *c, bool training,
                       llm__block_stats_t *b)
{
    const double act = llm__layer_activation(l, c), weight = llm__layer_weight(l, c);
    b->weight_space += weight;
    b->trainable_weight_space += l->frozen ? 0.0 : weight;
    if (!l->activation_reused)
        b->act_working_space += act;
    b->act_storage_space += act;
    if (!training)
        return;
    if (!l->output_stored)
        b->act_storage_space -= llm__layer_output(l, c);
    if (!l->activation_stored)
        b->act_storage_space -= act;
    b->act_storage_space -= l->discarded_space * c->bpe;
    b->weight_grad_space += llm__layer_weight_grad(l, c, true);
    b->weight_grad_space_no_sharding += llm__layer_weight_grad(l, c, false);
    const double act_grad = llm__layer_activation_grad(l, c);
    b->act_grad_space += act_grad;
    /* the modern block's peak: the layer in backward holds its output's gradient and makes its
     * input's (Calculon's act_grad_space sums every layer's as if all were alive at once) */
    const double in_grad = l->kind == LLM__TP_COMM ? 0 : l->inputs_size * c->bpe;
    b->act_grad_peak = max2(b->act_grad_peak, act_grad + in_grad);
    b->optimizer_space += llm__layer_optimizer(l, c);
}

/* What llm__block_memory_fresh has summed after the layers b has added up (the checkpoint, the
 * fields add_weights and add_memory add to), every other field cleared. */
static void memory_sums(const llm__block_stats_t *b, llm__block_stats_t *to)
{
    memset(to, 0, sizeof *to);
    to->act_checkpoint_size = b->act_checkpoint_size;
    to->weight_elems = b->weight_elems;
    to->fp8_weight_elems = b->fp8_weight_elems;
    to->expert_weight_elems = b->expert_weight_elems;
    to->frozen_elems = b->frozen_elems;
    to->expert_frozen_elems = b->expert_frozen_elems;
    to->weight_space = b->weight_space;
    to->trainable_weight_space = b->trainable_weight_space;
    to->act_working_space = b->act_working_space;
    to->act_storage_space = b->act_storage_space;
    to->weight_grad_space = b->weight_grad_space;
    to->weight_grad_space_no_sharding = b->weight_grad_space_no_sharding;
    to->act_grad_space = b->act_grad_space;
    to->act_grad_peak = b->act_grad_peak;
    to->optimizer_space = b->optimizer_space;
}

void llm__block_memory_from(llm__block_t *blk, llm__ctx_t *c, const llm_execution_t *e, bool blocks,
                            int first, llm__block_stats_t *b)
{
    for (int i = first; i < blk->num_layers; i++) {
        add_weights(&blk->layers[i], b);
        add_memory(&blk->layers[i], c, e->training, b);
    }
    if (blocks && e->activation_recompute == LLM_RECOMPUTE_FULL)
        b->act_storage_space = 0;
}

void llm__block_memory_fresh(llm__block_t *blk, llm__ctx_t *c, const llm_execution_t *e,
                             const llm__sizes_t *z, bool blocks, llm__block_stats_t *b)
{
    memset(b, 0, sizeof *b);
    if (blocks && e->training && e->activation_recompute == LLM_RECOMPUTE_FULL)
        b->act_checkpoint_size = (double)z->activation_size * c->bpe;
    llm__block_memory_from(blk, c, e, blocks, 0, b);
}

/* A table often repeats a layer: a block's MLP opens and closes as its attention does (fork,
 * norm, TP gather; TP reduction, dropout, residual add) and an MTP depth's head repeats the
 * output layer's norm, gather, loss and reduction. A layer's costs are a function of the layer,
 * the context and `training` (what llm_memo.c lends on), so a repeated layer takes those of its
 * twin, the earlier layer byte for byte the same but for the fields costing does not read
 * (llm__layer_t's last: its input group, and net_exposed_time, which costing writes before it
 * reads it). Candidates are the earlier layers of the same kind and forward FLOPs, found
 * through a hash of the two. */
enum { TWIN_SLOTS = 64 };
typedef struct {
    int last[TWIN_SLOTS];      /* the latest layer of each slot so far (-1: none) */
    int prev[LLM__MAX_LAYERS]; /* the layer of the same slot before each (twins left out) */
} twins_t;

/* Layer i's twin among layers 0..i-1 (-1: none, or not looked for without `look`), a layer
 * whose costs are its own, not a twin's; layers are asked in order. */
static int twin_of(const llm__block_t *blk, int i, bool look, twins_t *t)
{
    _Static_assert(offsetof(llm__layer_t, net_exposed_time) + sizeof(double) ==
                       sizeof(llm__layer_t), "what costing reads is before input_group");
    const llm__layer_t *l = &blk->layers[i];
    uint64_t bits;
    memcpy(&bits, &l->fw_flops, sizeof bits);
    /* Fibonacci hashing: the top bits of the product by 2^64 over the golden ratio */
    const int slot = (int)(((bits ^ (uint64_t)l->kind) * 0x9E3779B97F4A7C15u) >> 58);
    _Static_assert(TWIN_SLOTS == 1 << (64 - 58), "the slot is the hash's top bits");
    for (int j = look ? t->last[slot] : -1; j >= 0; j = t->prev[j]) {
        const llm__layer_t *x = &blk->layers[j];
        if (x->kind == l->kind && x->fw_flops == l->fw_flops &&
            memcmp(x, l, offsetof(llm__layer_t, input_group)) == 0)
            return j;
    }
    t->prev[i] = t->last[slot];
    t->last[slot] = i;
    return -1;
}

void llm__block_stats_costed(llm__block_t *blk, llm__ctx_t *c, const llm_execution_t *e,
                             const llm__sizes_t *z, bool blocks, const llm__known_t *known,
                             llm__layer_costs_t *costs, llm__block_stats_t *head,
                             llm__block_stats_t *b)
{
    memset(b, 0, sizeof *b);
    const bool training = e->training;
    if (blocks && training && e->activation_recompute == LLM_RECOMPUTE_FULL)
        b->act_checkpoint_size = (double)z->activation_size * c->bpe;
    const int head_at = head ? blk->mlp_first : -1;
    const bool kept = costs;
    llm__layer_costs_t own[LLM__MAX_LAYERS]; /* each layer's, where the caller keeps none */
    if (!kept)
        costs = own;
    twins_t twins;
    memset(twins.last, -1, sizeof twins.last);
    for (int i = 0; i < blk->num_layers; i++) {
        if (i == head_at)
            memory_sums(b, head);
        llm__layer_t *l = &blk->layers[i];
        llm__layer_costs_t *k = &costs[i];
        llm__known_t lent = known ? known[i] : LLM__COST_AFRESH;
        const int twin = twin_of(blk, i, lent != LLM__LENT_ALL, &twins);
        if (twin >= 0) {
            if (kept) /* the caller reads each layer's at its place (llm_memo.c lends them) */
                *k = costs[twin];
            k = &costs[twin];
            lent = LLM__LENT_ALL;
        }
        if (lent == LLM__LENT_ALL) {
            l->net_exposed_time = k->exposed_end; /* as costing it would leave it */
        } else {
            if (lent == LLM__LENT_BUT_OPTIM)
                l->net_exposed_time = k->net_exposed_time;
            else
                llm__layer_costs(l, c, training, k);
            if (training) /* last, as Calculon asks it; it reads the optimizer shards */
                llm__layer_cost(l, c, LLM__OPTIM, &k->op);
            k->exposed_end = l->net_exposed_time;
        }
        add_forward(l, k, b);
        if (training) {
            add_recompute(l, k, b);
            add_backward(l, k, b);
        }
        add_memory(l, c, training, b);
    }
    if (blocks && e->activation_recompute == LLM_RECOMPUTE_FULL)
        b->act_storage_space = 0;
}

void llm__block_stats_fresh(llm__block_t *blk, llm__ctx_t *c, const llm_execution_t *e,
                            const llm__sizes_t *z, bool blocks, llm__block_stats_t *b)
{
    llm__block_stats_costed(blk, c, e, z, blocks, NULL, NULL, NULL, b);
}

/* llm_stages.c — what the modern block adds to Calculon's step: the layers outside the
 * transformer blocks on the first and last pipeline stages, the pipeline imbalance they cause,
 * what the memory of each rank is made of (llm_memory.c), and the model's FLOP counts.
 *
 * Calculon's statistics describe one pipeline stage of identical blocks. The modern block adds
 *   F: the token embedding (first stage), L: final norm, output layer and loss (last stage),
 * each costed by the same layer table machinery (llm__block_stats on llm__build_embedding /
 * llm__build_output). Per microbatch, stage X adds t_X = fw + exposed TP + backward + exposed TP.
 *
 * Time (doc/step_model.md, "Layers outside the blocks"):
 *   pipeline_par 1:  T = T_calculon + nmb·(t_F + t_L) + opt_F + opt_L + dp_F + dp_L
 *   pipeline_par >1: 1F1B runs at the pace of the slowest stage and each other stage's extra
 *                    passes once through fill and drain:
 *                    T = T_calculon + nmb·max(t_F, t_L) + min(t_F, t_L)
 *                        + max(opt_F, opt_L) + max(dp_F, dp_L) + tied-embedding all-reduce
 *   The max term goes to the forward/backward/TP lines of the breakdown, the min term to the
 *   bubble, so the breakdown still sums to the step time.
 *   dualpipe:        ranks 0 and pp − 1 hold both ends, each direction running half the
 *                    microbatches: T = T_calculon + nmb·max(0, t_F + t_L − slack_F − slack_L)/2
 *                    (llm__dualpipe_outer_share; slack: the blocks the end stages lack).
 *   dp_X: the stage's extra gradients reduced over data parallelism (all-reduce, or
 *   reduce-scatter + all-gather with a sharded optimizer). The embedding's gradients are ready
 *   only at the very end of backward, so dp_F is always exposed; the output layer's are ready
 *   first, so dp_L hides behind the backward of the blocks when data_par_overlap is on.
 *   Tied embeddings with pipeline_par > 1: the first and last stage each hold the matrix and
 *   all-reduce its gradient between them (2 peers, pipeline network), exposed.
 *
 * Data parallelism of the blocks (replaces Calculon's model for the modern block), per stage and
 * step, with Pb one block's weights on a rank (bytes), G = data_par·context_par processors
 * reducing gradients, S = shard_group ≤ G holding one set of shards, R = G/S replicas, bpp the
 * stage's blocks, fw/bw one block's forward/backward compute time:
 *   ZeRO-0      all-reduce ar = AR(Pb, G) per block, once per step
 *   ZeRO-1      reduce-scatter rs = RS(Pb, S) per block (+ AR(Pb/S, R) across replicas), and
 *               after the optimizer step the parameter all-gather ag = AG(Pb, S) per block
 *   ZeRO-2      as ZeRO-1 with the gradient reduce-scatter after every microbatch (no full
 *               gradient buffer to accumulate in)
 *   Overlap (data_par_overlap; Megatron's --overlap-grad-reduce --overlap-param-gather), bucket
 *   = block: the reduction of block i runs under the backward of the blocks before it, the gather
 *   of block i under the forward of the block before it; exposed:
 *               x + (bpp − 1)·max(0, x − window)   (x = rs or ar, window = bw; x = ag, window = fw)
 *   where the lone x is the last bucket's reduction / the first block's gather, and a window
 *   is the pass as long as it lasts, max(compute, host launches) (llm_host.h); without overlap
 *   bpp·x.
 *   ZeRO-3/FSDP every microbatch: forward gathers each block (prefetched under the previous
 *               block's forward), backward gathers it again — but the last, still gathered
 *               when backward starts — and reduce-scatters its gradients (under the next
 *               block's backward):
 *               fw: ag + (bpp − 1)·max(0, ag − fw)   bw: rs + (bpp − 1)·max(0, ag + rs − bw)
 *               and HSDP's all-reduce of the shards across the R replicas once per step.
 *   The collectives run on data_par_net (context_par_net when data_par is 1).
 *
 * Context parallelism (ring attention), per block and microbatch, with c = context_par and one
 * K/V chunk k = 2·b·(s/c)·kv_heads_per_rank·d·bpe bytes: forward passes c − 1 chunks round the
 * ring, each hidden behind the attention of the chunk in hand (attention time / c); backward
 * passes K/V and their gradients (2k) likewise, then hands the last dK/dV back:
 *   fw: (c − 1)·max(0, p2p(k) − attn_fw/c)   bw: (c − 1)·max(0, p2p(2k) − attn_bw/c) + p2p(k)
 *   (forward again when full recompute reruns it). The ring runs on context_par_net; when it
 *   spans nodes every hop is paced by that tier (the ranks step together, so the slowest link
 *   sets the ring's speed). That is Megatron's ring (Transformer Engine); the PyTorch stacks'
 *   ring all-gathers K and V at the query heads' width instead (llm_ring.c). The exposed ring
 *   is block time, so with pipeline parallelism it lengthens the bubble too (ring_in_bubble).
 *
 * Memory: what one block of each kind and the outer layers hold per microbatch goes to
 * llm_memory_inputs_t (memory_inputs); llm_memory.c makes every rank's memory of it. */
#include <string.h>

#include "llm_collective.h"
#include "llm_internal.h"

static double max2(double a, double b) { return a > b ? a : b; }

/* What one outer-layer table adds per microbatch and per step. */
typedef struct {
    llm__block_stats_t b;
    double fw, bw, tp;  /* s per microbatch: compute forward, backward, exposed TP comm */
    double per_mb;      /* s per microbatch in all */
    double optim;       /* s per step */
    double dp;          /* s per step of gradient reduction over data parallelism */
    double useful;      /* FLOPs per microbatch */
} outer_t;

/* The groups of the gradient reduction (llm_collective.h): all of data_par × context_par, the
 * shard group of S of them, and the G/S replicas of a shard across shard groups; ranks
 * tensor_par apart inside a shard group (Megatron's and torchtitan's order: tensor innermost,
 * then context, then data) and tensor_par·S apart across them. The tier is data parallelism's,
 * or context parallelism's when data_par is 1. */
typedef struct {
    llm_group_t all, shard, replicas;
} dp_groups_t;

static dp_groups_t dp_groups(const llm_execution_t *e)
{
    const double G = (double)(e->data_par * llm_context_par(e)), S = (double)llm_shard_group(e);
    const double tp = (double)e->tensor_par;
    const int tier = e->data_par > 1 ? e->data_par_net : e->context_par_net;
    return (dp_groups_t){{G, tp, tier}, {S, tp, tier}, {G / S, tp * S, tier}};
}

/* One step's reduction of `bytes` of gradients of the layers outside the blocks: all-reduce
 * over G, or reduce-scatter over the shard group, then the parameters gathered back (ZeRO). */
static double dp_reduce_time(const llm_system_t *s, const llm_execution_t *e, double bytes)
{
    const dp_groups_t g = dp_groups(e);
    if (g.all.ranks < 2 || !e->training || bytes <= 0) /* frozen layers (finetune) reduce nothing */
        return 0;
    if (llm_zero_stage(e) == 0)
        return llm_collective_time(s, LLM_COLL_ALL_REDUCE, bytes, &g.all);
    double t = g.shard.ranks > 1
                   ? llm_collective_time(s, LLM_COLL_REDUCE_SCATTER, bytes, &g.shard) +
                         llm_collective_time(s, LLM_COLL_ALL_GATHER, bytes, &g.shard)
                   : 0;
    if (g.replicas.ranks > 1)
        t += llm_collective_time(s, LLM_COLL_ALL_REDUCE, bytes / g.shard.ranks, &g.replicas);
    return t;
}

static void cost_outer(llm__block_t *t, llm__compiled_t *k, const llm_system_t *s,
                       const llm_execution_t *e, outer_t *o)
{
    memset(o, 0, sizeof *o);
    llm__block_stats(t, &k->c, e, &k->z, false, &o->b);
    o->fw = o->b.fw.time;
    o->tp = o->b.fw_tp_exposed[1];
    if (e->training) {
        o->bw = o->b.agrad.time + o->b.wgrad.time;
        o->tp += o->b.agrad_tp_exposed[1];
        o->optim = o->b.optim.time;
        o->dp = dp_reduce_time(s, e, o->b.trainable_weight_space);
    }
    o->per_mb = o->fw + o->bw + o->tp;
    o->useful = o->b.useful_fw_flops + o->b.useful_bw_flops;
}

/* Multi-token prediction (DeepSeek-V3 report sec. 2.2; Megatron's mtp_num_layers): each depth
 * runs one transformer block of the last block's kind on the last stage, beside the norms,
 * projection and output layer llm__add_mtp puts in its table. Per microbatch and depth the
 * block table's forward, backward and exposed TP collectives join the last stage's time (its
 * expert all-to-all is left out: doc/moe.md). */
static void mtp_blocks(const fathom_model_t *m, const llm_execution_t *e,
                       const llm__block_stats_t *blk, outer_t *L)
{
    if (m->mtp_blocks <= 0)
        return;
    const double D = (double)m->mtp_blocks;
    L->fw += D * blk->fw.time;
    L->tp += D * blk->fw_tp_exposed[1];
    if (e->training) {
        L->bw += D * (blk->agrad.time + blk->wgrad.time);
        L->tp += D * blk->agrad_tp_exposed[1];
    }
    L->per_mb = L->fw + L->bw + L->tp;
    L->useful += D * (blk->useful_fw_flops + blk->useful_bw_flops);
}

/* The bubble of the zero-bubble and DualPipe schedules (header of llm_memory.c for their
 * memory). With F a chunk's forward, B its input-gradient backward (recompute and exposed TP
 * included) and W its weight-gradient backward, Calculon's 1F1B bubble is (pp − 1)(F + B + W);
 *   zero_bubble (ZB-H1, Qi et al. 2024, table 1)   (pp − 1)(F + B − W)
 *   dualpipe (DeepSeek-V3 report, table 2)         (pp/2 − 1)(F&B + B' − 3W), B' = B + W the
 *       full backward and F&B = F + B' the two overlapped chunks (their communication hidden):
 *       (pp/2 − 1)(F + 2B − W)
 * so Calculon's bubble (its interleaving and uneven-stage terms included) is scaled by the
 * ratio. DualPipe also hides the pipeline's point-to-point messages behind the paired chunk. */
static void schedule_bubble(const llm_execution_t *e, const llm__block_stats_t *b, llm_stats_t *st)
{
    const llm_pp_schedule_t sc = llm_pp_schedule(e);
    if (!e->training || (sc != LLM_PP_ZERO_BUBBLE && sc != LLM_PP_DUALPIPE))
        return;
    const double pp = (double)e->pipeline_par;
    const double F = b->fw.time + b->fw_tp_exposed[0];
    const double B = b->re.time + b->recomm_exposed[0] + b->agrad.time + b->agrad_tp_exposed[0];
    const double W = b->wgrad.time, one = (pp - 1) * (F + B + W);
    if (one <= 0)
        return;
    if (sc == LLM_PP_ZERO_BUBBLE) {
        st->bubble_time *= (pp - 1) * max2(0, F + B - W) / one;
        return;
    }
    st->bubble_time *= (pp / 2 - 1) * max2(0, F + 2 * B - W) / one;
    st->pp_comm_exposed_time = 0;
}

/* Calculon's block: its own accounting, one stage (the first) stands for all. */
static void describe_calculon(const llm_stats_t *st, const llm__compiled_t *k,
                              const llm__block_stats_t *b, int64_t last, llm_step_extra_t *x)
{
    llm_stage_memory_t *f = &x->stages[0];
    f->blocks = k->bpp;
    f->weights = st->weight_space;
    f->gradients = st->weight_grad_space;
    f->optimizer = st->optimizer_space;
    f->activations = st->act_space + st->act_checkpoint_size;
    f->buffers = st->act_grad_space;
    f->total = f->weights + f->gradients + f->optimizer + f->activations + f->buffers;
    x->stages[1] = x->heaviest = x->stages[0];
    x->stages[1].index = last;
    x->heaviest_stage = 0;
    double params = b->weight_elems * (double)k->bpp;
    if (params > 0) {
        x->weight_bytes_per_param = f->weights / params;
        x->grad_bytes_per_param = f->gradients / params;
        x->optimizer_bytes_per_param = f->optimizer / params;
    }
}

double llm__dualpipe_outer_share(double tF, double tL, double slack0, double slack1)
{
    const double both = tF + tL;
    return both > 0 ? max2(0, both - slack0 - slack1) / 2 / both : 0;
}

/* Adds the outer layers to the step's lines (header); returns the FLOPs they add on the
 * critical path (for the efficiencies). */
static double add_outer_time(const llm_execution_t *e, const llm__compiled_t *k, const outer_t *F,
                             const outer_t *L, const double slack[2], double tied_ar,
                             llm_stats_t *st)
{
    const double nmb = (double)k->nmb;
    const bool overlap = e->data_par_overlap;
    if (e->pipeline_par == 1) {
        st->fw_time += nmb * (F->fw + L->fw);
        st->bw_time += nmb * (F->bw + L->bw);
        st->tp_comm_exposed_time += nmb * (F->tp + L->tp);
        st->tp_comm_link_time += nmb * (F->tp + L->tp);
        st->optim_step_time += F->optim + L->optim;
        st->dp_comm_exposed_time += F->dp + (overlap ? 0 : L->dp);
        st->dp_comm_link_time += F->dp + L->dp;
        return nmb * (F->useful + L->useful);
    }
    /* DualPipe (DeepSeek-V3 report sec. 3.2.1) puts stage r and stage pp − 1 − r on one rank,
     * each direction running half the microbatches: the embedding's stage and the output
     * layer's share ranks 0 and pp − 1, which per microbatch on average run
     * (b_0 + b_{pp−1})·t_b/2 + (t_F + t_L)/2 against the others' bpp·t_b. They add
     * max(0, t_F + t_L − slack_0 − slack_1)/2 per microbatch and no bubble. */
    if (llm_pp_schedule(e) == LLM_PP_DUALPIPE) {
        const double scale = llm__dualpipe_outer_share(F->per_mb, L->per_mb, slack[0], slack[1]);
        st->fw_time += nmb * (F->fw + L->fw) * scale;
        st->bw_time += nmb * (F->bw + L->bw) * scale;
        st->tp_comm_exposed_time += nmb * (F->tp + L->tp) * scale;
        st->tp_comm_link_time += nmb * (F->tp + L->tp) * scale;
        st->optim_step_time += F->optim + L->optim;
        st->dp_comm_exposed_time += F->dp + (overlap ? 0 : L->dp) + tied_ar;
        st->dp_comm_link_time += F->dp + L->dp + tied_ar;
        return nmb * (F->useful + L->useful) * scale;
    }
    /* With first_stage_blocks / last_stage_blocks the end stages hold fewer blocks than the
     * pace-setting one: their outer layers add only what exceeds the blocks they lack,
     * slack = (bpp − blocks)·t_b (the pace is max(bpp·t_b, blocks·t_b + t_X)). */
    const double tF = max2(0, F->per_mb - slack[0]), tL = max2(0, L->per_mb - slack[1]);
    const outer_t *H = tL > tF ? L : F;
    const double scale = H->per_mb > 0 ? (H == L ? tL : tF) / H->per_mb : 0;
    st->fw_time += nmb * H->fw * scale;
    st->bw_time += nmb * H->bw * scale;
    st->tp_comm_exposed_time += nmb * H->tp * scale;
    st->tp_comm_link_time += nmb * H->tp * scale;
    st->bubble_time += H == L ? tF : tL;
    st->optim_step_time += max2(F->optim, L->optim);
    st->dp_comm_exposed_time += max2(F->dp, overlap ? 0 : L->dp) + tied_ar;
    st->dp_comm_link_time += F->dp + L->dp + tied_ar;
    return nmb * H->useful * scale;
}

/* The compute a collective overlapping it slows: its kernel holds processor_usage of the SMs
 * (NCCL's channels, one thread block each) for as long as it runs under the window. */
static double contention(double x, double window, double pu)
{
    return pu * (x < window ? x : window);
}

/* A reduction or gather of x seconds per block, hidden bucket by bucket behind a window of
 * compute per block when overlapped, slowing it by contention: the first (or last) is always
 * exposed (header). */
static double bucketed(double x, double window, double blocks, bool overlap, double pu)
{
    return overlap ? x + (blocks - 1) * (max2(0, x - window) + contention(x, window, pu))
                   : blocks * x;
}

/* FSDP's gathers and reductions of the stage's blocks (header), per microbatch — or once per
 * step under a PyTorch stack with pipeline parallelism, whose schedule keeps the stage gathered
 * and its gradients unreduced between microbatches (torchtitan: reshard_after_forward False
 * with PP; torch.distributed.pipelining skips the reduction and reshard of all but the last
 * microbatch's backward). Prefetch is one block ahead (FSDP2's implicit prefetch as the host
 * runs ahead; FSDP1's limit_all_gathers lets two all-gathers be in flight): the next block's
 * gather hides behind this block's forward, and in backward the previous block's gather and
 * this block's reduce-scatter behind its backward; what they overlap runs slower by contention.
 * The first gather and the last reduce-scatter are exposed. */
static void fsdp(const llm_execution_t *e, const llm__compiled_t *k, double ag, double rs,
                 double across, double fw, double bw, double pu, double *grad, double *gather,
                 double *exposed_grad, double *exposed_gather)
{
    const double bpp = (double)k->bpp;
    const double rounds = e->stack != LLM_STACK_MEGATRON && e->pipeline_par > 1 ? 1 : (double)k->nmb;
    *grad = rounds * bpp * rs + bpp * across;
    *gather = rounds * (2 * bpp - 1) * ag; /* the last block stays gathered into backward */
    *exposed_gather =
        rounds * (ag + (bpp - 1) * (max2(0, ag - fw) + contention(ag, fw, pu)));
    *exposed_grad = rounds * (rs + (bpp - 1) * (max2(0, ag + rs - bw) +
                                                contention(ag + rs, bw, pu))) +
                    bpp * across;
}

/* Data parallelism of the blocks (header): sets the step's data-parallel lines and x's. */
static void blocks_data_parallel(const fathom_model_t *m, const llm_system_t *s,
                                 const llm_execution_t *e, llm__compiled_t *k,
                                 const llm__block_stats_t *b, llm_stats_t *st,
                                 llm_step_extra_t *x)
{
    st->dp_comm_exposed_time = st->dp_comm_link_time = 0;
    const double G = (double)(e->data_par * llm_context_par(e)), S = (double)llm_shard_group(e);
    if (G < 2 || !e->training)
        return;
    const dp_groups_t g = dp_groups(e);
    const int zero = llm_zero_stage(e);
    /* gradients and the parameters an optimizer step changes: the trainable weights (all of
     * them but with finetune); FSDP gathers every weight, frozen or not */
    const double bpp = (double)k->bpp, nmb = (double)k->nmb, pg = b->trainable_weight_space;
    const double pb = llm_fsdp_sharded_weights(e) ? b->weight_space : pg;
    /* The windows are the block's compute and the idle time a host-bound pass adds (llm_host.h):
     * the GPU idle between kernels while the bucket's collective, queued on its own stream, runs
     * on. That idle time is what llm__host_step charges, the launches beyond the GPU's whole pass
     * (its exposed TP collectives and all-to-alls included), so the window holds the same
     * seconds the step does. Counting the compute alone against the host would let GPU work
     * added to a host-bound pass (a recomputed module, which launches nothing more here) both
     * fill the idle time and widen the window: the same seconds hidden twice, so a step that
     * recomputes more would run faster (test_search_bound). Counting the launches against the
     * compute alone widened the window by launches hidden behind the exposed communication,
     * which the step never charges: a slower host, or CUDA graphs taken away, made the step
     * faster (Qwen3-30B-A3B, EP 8 PP 2 on H100s at 40 µs a launch: 15.119 s with the attention
     * graphed, 15.114 s without; test_host_window). */
    double host_fw, host_bw;
    llm__host_block_s(m, s, e, k, &host_fw, &host_bw);
    double fw = b->fw.time, bw = b->agrad.time + b->wgrad.time + b->re.time;
    if (host_fw > fw || host_bw > bw) {
        double a2a_fw, a2a_bw;
        llm__a2a_block_exposed(m, s, e, k, b, &a2a_fw, &a2a_bw);
        const double pass_fw = fw + b->fw_tp_exposed[0] + a2a_fw;
        const double pass_bw = bw + b->recomm_exposed[0] + b->agrad_tp_exposed[0] + a2a_bw;
        fw += max2(0, host_fw - pass_fw);
        bw += max2(0, host_bw - pass_bw);
    }
    const bool overlap = e->data_par_overlap;
    if (pg <= 0 && zero < 3)
        return; /* a frozen model reduces nothing */
    /* under the NCCL model processor_usage is the SMs NCCL's channels hold (doc/collectives.md);
     * Calculon's systems keep Calculon's overlap, which charges none here */
    const double pu = s->collectives == LLM_COLLECTIVES_NCCL
                          ? s->networks[g.shard.tier].processor_usage
                          : 0.0;
    /* the PyTorch stacks reduce in FSDP's reduce_dtype: fp32 (torchtitan's only choice in 2024)
     * unless low_precision_gradients; Megatron's reduction moves datatype bytes */
    const double grad_bytes = e->stack == LLM_STACK_MEGATRON
                                  ? pg
                                  : pg * llm_gradient_bytes_per_param(e) / k->c.bpe;
    const double across = G > S && pg > 0
                              ? llm_collective_time(s, LLM_COLL_ALL_REDUCE, grad_bytes / S,
                                                    &g.replicas)
                              : 0;
    const double rs = S > 1 && pg > 0
                          ? llm_collective_time(s, LLM_COLL_REDUCE_SCATTER, grad_bytes, &g.shard)
                          : 0;
    const double ag = S > 1 ? llm_collective_time(s, LLM_COLL_ALL_GATHER, pb, &g.shard) : 0;
    double grad = 0, gather = 0, exposed_grad = 0, exposed_gather = 0;
    if (zero == 0) {
        double ar = llm_collective_time(s, LLM_COLL_ALL_REDUCE, grad_bytes, &g.all);
        grad = bpp * ar;
        exposed_grad = bucketed(ar, bw, bpp, overlap, pu);
        x->dp_exposed_last_bucket = ar;
    } else if (!llm_fsdp_sharded_weights(e)) {
        const double rounds = zero == 2 ? nmb : 1; /* ZeRO-2 reduces after every microbatch */
        grad = rounds * bpp * rs + bpp * across;
        exposed_grad = rounds * bucketed(rs, bw, bpp, overlap, pu) + bpp * across;
        gather = bpp * ag;
        exposed_gather = bucketed(ag, fw, bpp, overlap, pu);
        x->dp_exposed_last_bucket = rs;
        x->dp_exposed_first_gather = ag;
    } else {
        fsdp(e, k, ag, rs, across, fw, bw, pu, &grad, &gather, &exposed_grad, &exposed_gather);
        x->dp_exposed_last_bucket = rs;
        x->dp_exposed_first_gather = ag;
    }
    x->dp_grad_reduce = grad;
    x->dp_param_gather = gather;
    st->block_dp_size = pg;
    st->dp_comm_link_time = grad + gather;
    st->dp_comm_exposed_time = exposed_grad + exposed_gather;
}

/* Ring attention (header): the exposed seconds per step. */
static double ring_attention(const fathom_model_t *m, const llm_system_t *s,
                             const llm_execution_t *e, const llm__compiled_t *k,
                             const llm__block_stats_t *b)
{
    const int64_t cp = llm_context_par(e);
    if (cp < 2)
        return 0;
    /* neighbours on the ring are tensor_par ranks apart */
    const llm_group_t pair = {2, (double)e->tensor_par, e->context_par_net};
    const double c = (double)cp;
    if (e->stack != LLM_STACK_MEGATRON) { /* PyTorch's ring at the query heads' width */
        const double kv = 2.0 * (double)k->z.batch_seq * (double)(m->attn_heads / e->tensor_par) *
                          (double)m->attn_size * k->c.bpe;
        return (double)k->bpp * (double)k->nmb *
               llm__torch_ring_exposed(s, e, kv, b->attn_fw_time, b->attn_bw_time,
                                       llm__recomputed_share(e, k));
    }
    const double chunk = 2.0 * (double)k->z.batch_seq * (double)llm__kv_heads_per_rank(m, e) *
                         (double)m->attn_size * k->c.bpe;
    const double p2p = llm_collective_time(s, LLM_COLL_P2P, chunk, &pair);
    double fw = (c - 1) * max2(0, p2p - b->attn_fw_time / c), bw = 0;
    if (e->training) {
        double p2p2 = llm_collective_time(s, LLM_COLL_P2P, 2 * chunk, &pair);
        bw = (c - 1) * max2(0, p2p2 - b->attn_bw_time / c) + p2p;
        fw *= 1 + llm__recomputed_share(e, k); /* the recomputed forward rings again */
    }
    return (double)k->bpp * (double)k->nmb * (fw + bw);
}

/* The ring's exposed seconds are block time, as the tensor-parallel collectives' exposed seconds
 * are, and the pipeline's fill and drain run the stage's blocks: Calculon's bubble, (pp − 1)
 * passes of a chunk of bpp/vp blocks, grows by x·(pp − 1)·bpp/vp, x the ring's exposed seconds
 * per block and microbatch. Added before schedule_bubble, which keeps the zero-bubble and
 * DualPipe schedules' share of the whole. */
static void ring_in_bubble(const llm_execution_t *e, const llm__compiled_t *k, double cp_exposed,
                           llm_stats_t *st)
{
    if (e->pipeline_par < 2 || !(cp_exposed > 0))
        return;
    const double x = cp_exposed / ((double)k->bpp * (double)k->nmb);
    st->bubble_time += x * (double)(e->pipeline_par - 1) * (double)k->bpp /
                       (double)e->pipeline_interleaving;
}

/* Totals and efficiencies after the modern lines changed; perfect_add FLOPs of useful work
 * joined the critical path. */
static void retotal(const llm_execution_t *e, const llm__compiled_t *k, double perfect_old,
                    double perfect_add, double cp_exposed, llm_stats_t *st)
{
    double total = llm__sum_of_lines(st) + cp_exposed;
    double compute = st->fw_time + st->bw_time + st->optim_step_time;
    double perfect = perfect_old + perfect_add / k->c.matrix_flops;
    st->total_time = total;
    st->sample_rate = (double)e->batch_size / total;
    st->compute_efficiency = perfect / compute;
    st->system_efficiency = compute / total;
    st->total_efficiency = perfect / total;
}

/* What llm_memory.c evaluates every rank from (llm_memory_inputs_t): the block of each kind
 * (dense NULL when every block is of blk's kind), the outer layers, `shared` parameters counted
 * twice in them (a tied output layer on the embedding's stage). */
static void memory_inputs(const fathom_model_t *m, const llm_execution_t *e,
                          const llm__compiled_t *k, const llm__block_stats_t *blk,
                          const llm__block_stats_t *dense, const llm__block_stats_t *F,
                          const llm__block_stats_t *L, double shared, llm_memory_inputs_t *in)
{
    const int kind = m->moe.num_experts > 0 ? 1 : 0;
    const llm__block_stats_t *d = dense ? dense : blk;
    memset(in, 0, sizeof *in);
    in->stored[kind] = blk->act_storage_space;
    in->working[kind] = blk->act_working_space;
    in->weights[kind] = blk->weight_elems;
    in->fp8_weights[kind] = blk->fp8_weight_elems;
    in->stored[0] = d->act_storage_space;
    in->working[0] = d->act_working_space;
    in->weights[0] = d->weight_elems;
    in->fp8_weights[0] = d->fp8_weight_elems;
    in->expert_weights = blk->expert_weight_elems;
    in->expert_frozen = blk->expert_frozen_elems;
    in->checkpoint = blk->act_checkpoint_size;
    in->act_grads = max2(blk->act_grad_peak, d->act_grad_peak);
    in->first_params = F->weight_elems;
    in->last_params = L->weight_elems - shared;
    in->first_working = F->act_working_space;
    in->last_working = L->act_working_space;
    in->first_grads = F->act_grad_peak;
    in->last_grads = L->act_grad_peak;
    if (kind && e->moe_dispatcher == LLM_MOE_DISPATCH_FLEX)
        in->moe_buffers = llm__deepep_buffer_bytes(
            (double)llm__expert_par(e),
            (double)m->hidden * max2(2, (double)llm_datatype_bytes(e->datatype)));
    /* the alltoall dispatcher's token buffers beyond what the experts keep (their received
     * rows, R·h with the imbalance or capacity): the dispatch's permuted send buffer and the
     * combine's receive buffer, T·k rows of h each */
    else if (kind && llm__expert_par(e) > 1)
        in->moe_buffers = 2 * llm__moe_local_tokens(m, e) * (double)m->moe.top_k *
                          (double)m->hidden * k->c.bpe;
    in->bpp = k->bpp;
    in->nmb = k->nmb;
    in->frozen[kind] = blk->frozen_elems;
    in->frozen[0] = d->frozen_elems;
    in->first_frozen = F->frozen_elems;
    /* the shared tied matrix is frozen with the rest of the outer layers */
    in->last_frozen = L->frozen_elems > 0 ? L->frozen_elems - shared : 0;
    /* with sequence parallelism a fully recomputed block keeps its input's sliver */
    if (e->tensor_par_comm_type == LLM_TP_COMM_RS_AG)
        in->checkpoint /= (double)e->tensor_par;
    if (e->selective_ac == LLM_SAC_OP && kind == 0)
        in->stored[0] = llm__op_sac_bytes(m, e);
    /* the PyTorch stacks' loss: the bf16 logits, their fp32 copy and the fp32 log-softmax of
     * cross_entropy(pred.float()) at once in forward, and in backward the saved log-softmax,
     * the loss's gradient and the log-softmax's: three fp32 logits, 12·T·V/t bytes, where the
     * output table keeps the one fp32 copy of Megatron's vocab-parallel loss (4·T·V/t). A fused
     * kernel (loss_kernel "fused": flash-attn's CrossEntropyLoss, llm-foundry's default
     * loss_fn "fused_crossentropy") reads the 16-bit logits, keeps them and a log-sum-exp a
     * row, and writes their 16-bit gradient: 2·T·V/t + 2·T·V/t at the most, the table's 4·T·V/t,
     * nothing beyond it. */
    if (e->stack != LLM_STACK_MEGATRON && m->vocab_size > 0) {
        if (e->loss_kernel == LLM_LOSS_TORCH)
            in->last_working += 8 * (double)k->z.batch_seq * (double)llm__vocab_per_rank(m, e);
        /* whose gradients those are; the output layer's backward then makes its input's */
        in->last_grads = (double)k->z.activation_size * k->c.bpe;
    }
}

void llm__stages(const fathom_model_t *m, const llm_system_t *s, const llm_execution_t *e,
                 llm__compiled_t *k, const llm__block_stats_t *blk,
                 const llm__block_stats_t *dense, llm_stats_t *st, llm_step_extra_t *x)
{
    memset(x, 0, sizeof *x);
    x->peak_flops = k->c.matrix_flops;
    /* the processors of a stage: a context-parallel rank runs its share of the sequence */
    const double nmb = (double)k->nmb,
                 procs_per_stage = (double)(e->tensor_par * llm_context_par(e) * e->data_par);
    /* Hardware FLOPs: every block's matrix work on every processor; model FLOPs leave out
     * what recompute runs again (the summary's Megatron-convention count is llm_model_flops).
     * Every block is costed as blk here; llm__moe_step puts an MoE model's dense blocks, its
     * MTP depths and its experts' mean rows right. */
    const double block_total = (double)m->num_blocks * nmb * procs_per_stage;
    x->hardware_flops = block_total * (blk->matrix_fw_flops + blk->matrix_bw_flops +
                                       (e->training ? blk->matrix_re_flops : 0));
    if (m->calculon_block) {
        describe_calculon(st, k, blk, e->pipeline_par - 1, x);
        return;
    }

    const double bpe = k->c.bpe, shards = k->c.optim_shards;
    const int64_t pp = e->pipeline_par;
    const double old_total = st->total_time, perfect_old = st->total_efficiency * old_total;
    x->cp_comm_exposed = ring_attention(m, s, e, k, blk);
    ring_in_bubble(e, k, x->cp_comm_exposed, st);
    schedule_bubble(e, blk, st);
    blocks_data_parallel(m, s, e, k, blk, st, x);
    double perfect_add = 0;
    outer_t F, L; /* cost_outer fills them; zero without a vocabulary */
    double shared = 0, tied_ar = 0;
    if (m->vocab_size <= 0) {
        memset(&F, 0, sizeof F);
        memset(&L, 0, sizeof L);
    } else {
        llm__block_t t;
        llm__build_embedding(m, s, e, &k->z, &t);
        cost_outer(&t, k, s, e, &F);
        llm__build_output(m, s, e, &k->z, &t);
        cost_outer(&t, k, s, e, &L);
        mtp_blocks(m, e, blk, &L);
        const double table = (double)llm__vocab_per_rank(m, e) * (double)m->hidden;
        if (m->tied_embeddings && pp == 1)
            shared = table; /* one matrix serves both ends */
        else if (m->tied_embeddings && e->training && F.b.trainable_weight_space > 0)
            tied_ar = llm_collective_time(
                s, LLM_COLL_ALL_REDUCE, table * bpe,
                &(llm_group_t){2,
                               (double)(e->tensor_par * llm_context_par(e) * e->data_par *
                                        (pp - 1)),
                               e->pipeline_par_net});
        /* the shared matrix's gradient is reduced once, with the embedding's (none frozen) */
        if (shared > 0 && L.b.trainable_weight_space > 0)
            L.dp = dp_reduce_time(s, e, L.b.trainable_weight_space - shared * bpe);
        llm_stats_t before = *st;
        double slack[2] = {0, 0};
        if (e->first_stage_blocks >= 1 || e->last_stage_blocks >= 1 ||
            llm_pp_schedule(e) == LLM_PP_DUALPIPE) {
            const double tb = blk->fw.time + blk->fw_tp_exposed[0] +
                              (e->training ? blk->re.time + blk->recomm_exposed[0] +
                                                 blk->agrad.time + blk->wgrad.time +
                                                 blk->agrad_tp_exposed[0]
                                           : 0);
            slack[0] = (double)(k->bpp - llm_stage_blocks(m, e, 0, NULL)) * tb;
            slack[1] = (double)(k->bpp - llm_stage_blocks(m, e, pp - 1, NULL)) * tb;
        }
        perfect_add = add_outer_time(e, k, &F, &L, slack, tied_ar, st);
        x->outer_layers_time = (st->fw_time - before.fw_time) + (st->bw_time - before.bw_time) +
                               (st->tp_comm_exposed_time - before.tp_comm_exposed_time) +
                               (st->bubble_time - before.bubble_time) +
                               (st->optim_step_time - before.optim_step_time) +
                               (st->dp_comm_exposed_time - before.dp_comm_exposed_time);
        x->hardware_flops += nmb * procs_per_stage *
                             (F.b.matrix_fw_flops + F.b.matrix_bw_flops + L.b.matrix_fw_flops +
                              L.b.matrix_bw_flops);
    }

    retotal(e, k, perfect_old, perfect_add, x->cp_comm_exposed, st);

    memory_inputs(m, e, k, blk, dense, &F.b, &L.b, shared, &x->memory);
    const int zero = llm_zero_stage(e);
    const double S = (double)llm_shard_group(e);
    if (e->stack != LLM_STACK_MEGATRON && llm_fsdp_sharded_weights(e)) {
        /* FSDP2's fp32 shard is the master: 4/S of it, 4/S of gradients, 8/S of Adam's
         * moments (llm_memory.c fsdp2_state) */
        x->weight_bytes_per_param = 4 / S;
        x->grad_bytes_per_param = e->training ? 4 / S : 0;
        x->optimizer_bytes_per_param = e->training ? 8 / S : 0;
        return;
    }
    x->weight_bytes_per_param = llm_fsdp_sharded_weights(e) ? bpe / S : bpe;
    const double g = llm_gradient_bytes_per_param(e);
    x->grad_bytes_per_param = !e->training ? 0 : zero >= 2 ? g / S : g;
    x->optimizer_bytes_per_param = e->training ? llm_optimizer_bytes_per_param(e) / shards : 0;
}

void llm__stages_memory(const fathom_model_t *m, const llm_system_t *s, const llm_execution_t *e,
                        llm__compiled_t *k, const llm__block_stats_t *blk,
                        const llm__block_stats_t *dense, llm_step_extra_t *x)
{
    memset(x, 0, sizeof *x);
    llm__block_stats_t F, L;
    memset(&F, 0, sizeof F);
    memset(&L, 0, sizeof L);
    double shared = 0;
    if (m->vocab_size > 0) {
        llm__block_t t;
        llm__build_embedding(m, s, e, &k->z, &t);
        llm__block_memory(&t, &k->c, e, &k->z, false, &F);
        llm__build_output(m, s, e, &k->z, &t);
        llm__block_memory(&t, &k->c, e, &k->z, false, &L);
        if (m->tied_embeddings && e->pipeline_par == 1)
            shared = (double)llm__vocab_per_rank(m, e) * (double)m->hidden;
    }
    memory_inputs(m, e, k, blk, dense, &F, &L, shared, &x->memory);
}

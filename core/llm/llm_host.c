/* llm_host.c — host launch time per block and microbatch (llm_host.h) and what the step waits on
 * it (doc/moe.md, "The host").
 *
 * Launch counts, per block and microbatch, are read off Megatron-Core's Transformer Engine layer
 * spec and MoE path (megatron/core/transformer/moe/: router.py, token_dispatcher.py, experts.py;
 * fused router, fused permutation, grouped GEMM: the recipes' settings). Forward:
 *   attention   input norm, QKV GEMM, RoPE on Q and K, the attention kernel, output GEMM,
 *               residual add: 7; MLA's q_a, q norm, q_b, kv_a, kv norm and kv_b replace the QKV
 *               GEMM: +5; FP8 casts the output GEMM's input (amax and cast; the norm casts the
 *               QKV input itself): +2, MLA +4
 *   dense MLP   norm, up GEMM, activation, down GEMM, residual add: 5; FP8 +2
 *   MoE router  pre-MLP norm, input cast to fp32, router GEMM, fused score and top-k, three for
 *               the auxiliary loss or forced balance: 7
 *   preprocess  tokens per expert, dispatch layout, the permutation's row map (2): 4; the
 *               alltoall dispatcher copies the counts to the host (its synchronisation): +1
 *   MoE rest    dispatch (2), permute, activation and probability scaling (2), unpermute,
 *               combine (2), residual add: 9; per local expert the up and down GEMMs (Transformer
 *               Engine's GroupedLinear issues one GEMM per expert): 2, and with FP8 their inputs'
 *               quantization: +2; shared experts: up GEMM, activation, down GEMM: 3 (FP8 +2)
 *   TP > 1      the sequence-parallel all-gather and reduce-scatter of each part: +2
 * Backward: every GEMM twice (input and weight gradient), the rest once, and the norms' weight
 * gradient reductions: attention 11 (MLA +10, FP8 +2/+4), dense MLP 8 (FP8 +2), router 4, MoE
 * rest 10 + 4 per local expert (FP8 +2 per expert), shared experts 5 (FP8 +2); TP +2 per part.
 * Framework module calls (Transformer Engine modules and Megatron's autograd functions), each
 * way: attention 3 (MLA 5), dense MLP 2, router 1, MoE rest 4 (norm, dispatch, two grouped
 * linears) + 2 with shared experts; an FP8 module counts twice (its scheduling takes more than
 * twice the BF16 module's host time: Transformer Engine issue #761, H100).
 *
 * Step: per block and microbatch, forward and backward each wait max(0, host − GPU); the GPU
 * pass is the block's compute, its exposed TP collectives and its exposed all-to-all. Full
 * recompute reruns a share of the forward launches in backward. The first stage's blocks set the
 * pace: its MoE blocks and dense blocks are counted apart, both against the block table's GPU
 * pass (the MoE block's; doc/moe.md lists it as an approximation). */
#include "llm_host.h"

#include "llm_internal.h"

static double max2(double a, double b) { return a > b ? a : b; }

void llm_host_block_pass(const fathom_model_t *m, const llm_execution_t *e, bool moe_block,
                         bool backward, llm_host_pass_t *out)
{
    const bool fp8 = e->fp8, mla = m->mla.present, tp = e->tensor_par > 1;
    const double bw = backward ? 1 : 0;
    double *l = out->launches;
    for (int i = 0; i < LLM_HOST__PARTS; i++)
        l[i] = 0;
    l[LLM_HOST_ATTENTION] = (backward ? 11 : 7) + (mla ? 5 + 5 * bw : 0) +
                            (fp8 ? (mla ? 4 : 2) : 0) + (tp ? 2 : 0);
    if (!moe_block || m->moe.num_experts == 0) {
        l[LLM_HOST_REST] = (backward ? 8 : 5) + (fp8 ? 2 : 0) + (tp ? 2 : 0);
        return;
    }
    const double local = (double)m->moe.num_experts / (double)llm__expert_par(e);
    const double shared = m->moe.shared_experts > 0 ? 1 : 0;
    l[LLM_HOST_ROUTER] = backward ? 4 : 7;
    l[LLM_HOST_PREPROCESS] =
        backward ? 0 : 4 + (e->moe_dispatcher == LLM_MOE_DISPATCH_ALLTOALL ? 1 : 0);
    l[LLM_HOST_REST] = (backward ? 10 : 9) + local * ((backward ? 4 : 2) + (fp8 ? 2 : 0)) +
                       shared * ((backward ? 5 : 3) + (fp8 ? 2 : 0)) + (tp ? 2 : 0);
}

/* Whether the graph scope captures a part. */
static bool graphed(llm_cuda_graphs_t g, int part)
{
    switch (g) {
    case LLM_GRAPHS_FULL:
        return true;
    case LLM_GRAPHS_PARTIAL:
        return part != LLM_HOST_REST;
    case LLM_GRAPHS_ATTENTION:
        return part == LLM_HOST_ATTENTION;
    case LLM_GRAPHS_ROUTER:
        return part == LLM_HOST_ROUTER || part == LLM_HOST_PREPROCESS;
    default:
        return false;
    }
}

double llm_host_pass_time(const llm_host_t *h, llm_cuda_graphs_t graphs, const llm_host_pass_t *p)
{
    double t = 0;
    for (int i = 0; i < LLM_HOST__PARTS; i++)
        t += p->launches[i] * (graphed(graphs, i) ? h->graph_launch_s : h->launch_s);
    return t;
}

double llm_host_exposed(double host_s, double gpu_s) { return max2(0, host_s - gpu_s); }

/* Host seconds of one block's forward and backward (recompute's share of forward included). */
static void block_host(const fathom_model_t *m, const llm_system_t *s, const llm_execution_t *e,
                       const llm__compiled_t *k, bool moe_block, double *fw, double *bw)
{
    llm_host_pass_t p;
    llm_host_block_pass(m, e, moe_block, false, &p);
    *fw = llm_host_pass_time(&s->host, e->cuda_graphs, &p);
    llm_host_block_pass(m, e, moe_block, true, &p);
    *bw = e->training ? llm_host_pass_time(&s->host, e->cuda_graphs, &p) +
                            llm__recomputed_share(e, k) * *fw
                      : 0;
}

void llm__host_step(const fathom_model_t *m, const llm_system_t *s, const llm_execution_t *e,
                    llm__compiled_t *k, const llm__block_stats_t *blk, llm_stats_t *st,
                    llm_step_extra_t *x)
{
    if (m->calculon_block || !(s->host.launch_s > 0))
        return;
    /* the GPU's pass of one block and microbatch (the baseblock's exposed TP collectives) */
    const double gpu_fw = blk->fw.time + blk->fw_tp_exposed[0] + x->a2a_block_fw;
    const double gpu_bw = e->training ? blk->re.time + blk->recomm_exposed[0] + blk->agrad.time +
                                            blk->wgrad.time + blk->agrad_tp_exposed[0] +
                                            x->a2a_block_bw
                                      : 0;
    const double moe_blocks = (double)model_moe_blocks_in(m, 0, k->bpp);
    const double dense_blocks = (double)k->bpp - moe_blocks;
    double wait = 0;
    for (int kind = 0; kind < 2; kind++) {
        const double n = kind ? moe_blocks : dense_blocks;
        if (n <= 0)
            continue;
        double fw, bw;
        block_host(m, s, e, k, kind == 1, &fw, &bw);
        if (kind == 1 || moe_blocks == 0) {
            x->host_block_fw = fw;
            x->host_block_bw = bw;
        }
        wait += n * (llm_host_exposed(fw, gpu_fw) + llm_host_exposed(bw, gpu_bw));
    }
    x->host_exposed = wait * (double)k->nmb;
    if (x->host_exposed <= 0)
        return;
    const double old_total = st->total_time;
    const double perfect = st->total_efficiency * old_total;
    const double compute = st->system_efficiency * old_total;
    st->total_time += x->host_exposed;
    st->sample_rate = (double)e->batch_size / st->total_time;
    st->system_efficiency = compute / st->total_time;
    st->total_efficiency = perfect / st->total_time;
}

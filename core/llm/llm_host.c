/* llm_host.c — kernels per block, host seconds per kernel and what the step waits on the host
 * (llm_host.h).
 *
 * Kernels of one dense modern block (attention then MLP), forward / backward, by stack. Counted
 * from what each stack's source launches (a view or reshape launches nothing):
 *
 *   Megatron-Core + Transformer Engine (fused modules): LayerNormLinear QKV (norm, GEMM), fused
 *   RoPE, fused attention, output GEMM, bias-dropout-add, LayerNormMLP (norm, FC1, activation,
 *   FC2), bias-dropout-add: 11 forward. Backward: two GEMMs (data and weight gradient) per GEMM,
 *   one kernel per fused op and a reduction for each norm's weight: 20. The attention (the
 *   "attn" graph scope) is 6 forward and 10 backward of them, the MLP 5 and 10. Multi-latent
 *   attention adds its projections and latent norms (mla_kernels), every stack alike.
 *
 *   torchtitan eager (torchtitan/models/llama/model.py, norms.py at 9dec370): each RMSNorm is
 *   x.float(), pow, mean, add+rsqrt, mul, type_as, mul by the weight (7; 14 for two); RoPE is
 *   float(), a complex multiply and type_as for Q and K (6); repeat_kv materialises K and V when
 *   GQA repeats them (2); SDPA (1); the output's transpose().contiguous() (1); seven GEMMs (wq,
 *   wk, wv, wo, w1, w3, w2); silu and the product (2); two residual adds: 35 forward. Backward:
 *   autograd's reverse of each (the norm's seven ops take twelve kernels, the weight's gradient
 *   sum among them), two GEMMs each: 60.
 *
 *   torchtitan compiled (torch.compile per block): the seven GEMMs and SDPA stay; Inductor fuses
 *   the elementwise ops between them into one kernel each (norm, RoPE of Q and K, the output
 *   copy, SwiGLU, residual add with the next norm): 14 forward, 28 backward (two GEMMs each,
 *   SDPA's backward, a fused kernel per fused forward one and its weight-gradient reduction).
 *
 *   FSDP (per block, once per microbatch): the all-gather's copy-in, collective and copy-out
 *   forward (3); backward the same again and the reduce-scatter's copy-in and collective (5).
 *   Tensor parallelism with sequence parallelism: an all-gather and a reduce-scatter before and
 *   after attention and the MLP (4 each way). FP8 (torchao Float8Linear, eager): each linear
 *   casts its input (abs, max, reciprocal scale, multiply, clamp, cast: 6) and runs _scaled_mm,
 *   and its weight (6); backward casts the gradient (6) per linear — compiled, each cast is an
 *   amax reduction and one fused scale-and-cast (2). Transformer Engine fuses its casts into its
 *   norm and activation kernels: 2 more forward and backward.
 *
 * An MoE block (Megatron-Core's MoE path: megatron/core/transformer/moe/ router.py,
 * token_dispatcher.py, experts.py; fused router and permutation, grouped GEMM — the recipes'
 * settings) keeps the dense block's attention and replaces its MLP, forward / backward:
 *   router      pre-MLP norm, input cast to fp32, router GEMM, fused score and top-k, three for
 *               the auxiliary loss or forced balance: 7 / 4                ("moe_router" scope)
 *   preprocess  tokens per expert, dispatch layout, the permutation's row map (2): 4 / 0; the
 *               alltoall dispatcher copies the counts to the host (its synchronisation): +1
 *                                                                           ("moe_preprocess")
 *   rest        dispatch (2), permute, activation and probability scaling (2), unpermute,
 *               combine (2), residual add: 9 / 10; per local expert the up and down GEMMs
 *               (Transformer Engine's GroupedLinear issues one GEMM per expert): 2 / 4, with FP8
 *               the quantization of their inputs (forward) and output gradients (backward),
 *               expert_quant_kernels; shared experts up, activation, down: 3 / 5
 *               (FP8 +2 / +2) and with TP their all-gather and reduce-scatter 2 / 2; expert TP's
 *               all-gather and reduce-scatter 2 / 2.
 *
 * Step (llm__host_step): per block and microbatch, forward and backward each wait max(0, host −
 * GPU), the GPU pass being the block's compute, its exposed TP collectives and the all-to-all
 * the MoE step leaves exposed; the recompute reruns its share of the forward's launches in
 * backward. The first stage's MoE and dense blocks are counted apart, both against the block
 * table's GPU pass (the MoE block's when the model has experts: doc/moe.md lists it). */
#include "llm_host.h"

#include <math.h>
#include <stddef.h>

#include "llm_internal.h"

/* Forward / backward kernels of the block's compute, by stack and compile. */
static const double compute_kernels[3][2][2] = {
    /* megatron */ {{11, 20}, {11, 20}},
    /* torchtitan: eager, compiled */ {{35, 60}, {14, 28}},
    /* fsdp (FSDP1 runs the same PyTorch modules) */ {{35, 60}, {14, 28}},
};

static int stack_of(const llm_execution_t *e)
{
    return (unsigned)e->stack <= LLM_STACK_FSDP ? (int)e->stack : 0;
}

/* Multi-latent attention's projections in place of one QKV GEMM: q_a, its norm, q_b, kv_a, its
 * norm and kv_b, 5 more forward; backward two GEMMs each and the norms' gradients and weight
 * reductions, 10 more. */
static double mla_kernels(const fathom_model_t *m, bool backward)
{
    return m->mla.present ? (backward ? 10 : 5) : 0;
}

/* FP8 quantization kernels of the experts' two GroupedLinears in one pass (forward: their
 * inputs; backward: their output gradients), read off Transformer Engine 2.9, 2.12 and 2.14 (the
 * NeMo 25.11, 26.02 and 26.04 containers): GroupedLinear quantizes with tex.split_quantize
 * (pytorch/module/grouped_linear.py), which runs one fused multi-tensor cast-transpose for all
 * experts only under delayed scaling, and otherwise each expert's quantizer in turn
 * (multi_tensor_quantize_impl, pytorch/csrc/extensions/cast.cpp):
 *   current   per expert zero the amax, the amax, the scale from it, the cast and transpose
 *             (Float8CurrentScalingQuantizer::quantize_impl; common/recipe/current_scaling.cu):
 *             4 a linear, 8 per local expert
 *   mxfp8, blockwise  one quantize kernel per expert (nvte_quantize_v2): 2 per local expert
 *   delayed   nvte_multi_cast_transpose, up to 64 tensors a launch
 *             (common/transpose/multi_cast_transpose.cu): 2·ceil(local / 64) in all
 * The same count each way; other stacks keep one cast per expert and linear (2 per local expert).
 * Hand-worked in test_llm_host (fp8_expert_quantization). */
static double expert_quant_kernels(const llm_execution_t *e, double local)
{
    if (!e->fp8)
        return 0;
    if (stack_of(e) != LLM_STACK_MEGATRON)
        return 2 * local;
    switch (e->fp8_recipe) {
    case LLM_FP8_DELAYED:
        return 2 * ceil(local / 64);
    case LLM_FP8_MXFP8:
    case LLM_FP8_BLOCKWISE:
        return 2 * local;
    default:
        return 8 * local;
    }
}

/* The dense block's forward and backward kernels, the recompute's rerun left out. */
static void dense_kernels(const fathom_model_t *m, const llm_execution_t *e, double *fw,
                          double *bw)
{
    const int stack = stack_of(e);
    const int compiled = e->compile ? 1 : 0;
    *fw = compute_kernels[stack][compiled][0];
    *bw = compute_kernels[stack][compiled][1];
    if (stack != LLM_STACK_MEGATRON && model_kv_heads(m) == m->attn_heads)
        *fw -= 2, *bw -= 2; /* no repeat_kv copies without grouped-query attention */
    *fw += mla_kernels(m, false);
    *bw += mla_kernels(m, true);
    if (e->fp8) {
        const double linears = 7, per_cast = stack == LLM_STACK_MEGATRON ? 0 : compiled ? 2 : 6;
        *fw += stack == LLM_STACK_MEGATRON ? 2 : linears * 2 * per_cast;
        *bw += stack == LLM_STACK_MEGATRON ? 2 : linears * per_cast;
    }
    if (e->tensor_par > 1) {
        *fw += 4;
        *bw += 4;
    }
    if (llm_fsdp_sharded_weights(e) && llm_shard_group(e) > 1) {
        *fw += 3;
        *bw += 5;
    }
}

/* The share of the forward a backward pass runs again: full recompute's blocks, or torchtitan's
 * per-op selective checkpointing (its norms, RoPE, activations and every other matmul). */
static double rerun_share(const llm_execution_t *e, const llm__compiled_t *k)
{
    if (e->selective_ac == LLM_SAC_OP)
        return 1.0;
    if (e->activation_recompute != LLM_RECOMPUTE_FULL)
        return 0.0;
    return k ? llm__recomputed_share(e, k) : 1.0;
}

void llm_host_block_kernels(const fathom_model_t *m, const llm_execution_t *e,
                            llm_host_kernels_t *out)
{
    double fw, bw;
    dense_kernels(m, e, &fw, &bw);
    out->fw = fw;
    out->bw = bw + rerun_share(e, NULL) * fw;
}

double llm_host_launch_s(const llm_system_t *s, const llm_execution_t *e)
{
    (void)e;
    return s->host_launch_s > 0 ? s->host_launch_s : 0.0;
}

void llm_host_block_pass(const fathom_model_t *m, const llm_execution_t *e, bool moe_block,
                         bool backward, llm_host_pass_t *out)
{
    double *l = out->launches;
    for (int i = 0; i < LLM_HOST__PARTS; i++)
        l[i] = 0;
    double fw, bw;
    dense_kernels(m, e, &fw, &bw);
    const double dense = backward ? bw : fw;
    if (stack_of(e) != LLM_STACK_MEGATRON) { /* no graph scope but the whole iteration */
        l[LLM_HOST_REST] = dense;
        if (!moe_block || m->moe.num_experts == 0)
            return;
    } else {
        /* Megatron's attention: 6 forward, 10 backward, and MLA's; FP8 and TP add theirs half
         * to each part */
        const double mla = mla_kernels(m, backward);
        const double extra = dense - (backward ? 20 : 11) - mla;
        l[LLM_HOST_ATTENTION] = (backward ? 10 : 6) + mla + extra / 2;
        if (!moe_block || m->moe.num_experts == 0) {
            l[LLM_HOST_REST] = dense - l[LLM_HOST_ATTENTION];
            return;
        }
    }
    /* the MoE MLP in place of the dense one (Megatron's MoE path; other stacks' MLP stays) */
    const bool fp8 = e->fp8, shared = m->moe.shared_experts > 0;
    const double local = (double)m->moe.num_experts / (double)llm__expert_par(e);
    l[LLM_HOST_ROUTER] = backward ? 4 : 7;
    l[LLM_HOST_PREPROCESS] =
        backward ? 0 : 4 + (e->moe_dispatcher == LLM_MOE_DISPATCH_ALLTOALL ? 1 : 0);
    l[LLM_HOST_REST] += (backward ? 10 : 9) + local * (backward ? 4 : 2) +
                        expert_quant_kernels(e, local) +
                        (shared ? (backward ? 5 : 3) + (fp8 ? 2 : 0) : 0) +
                        (shared && e->tensor_par > 1 ? 2 : 0) +
                        (llm__expert_tensor_par(e) > 1 ? 2 : 0);
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

double llm_host_pass_time(const llm_system_t *s, llm_cuda_graphs_t graphs, const llm_host_pass_t *p)
{
    double t = 0;
    for (int i = 0; i < LLM_HOST__PARTS; i++)
        t += p->launches[i] * (graphed(graphs, i) ? s->graph_launch_s : s->host_launch_s);
    return t;
}

/* Host seconds of one block's forward and backward (the recompute's share of the forward
 * included in backward), kept in k for the next ask. */
static void block_host(const fathom_model_t *m, const llm_system_t *s, const llm_execution_t *e,
                       llm__compiled_t *k, bool moe_block, double *fw, double *bw)
{
    const unsigned kept = 1u << moe_block;
    if (!(k->host_asked & kept)) {
        llm_host_pass_t p;
        llm_host_block_pass(m, e, moe_block, false, &p);
        const double f = llm_host_pass_time(s, e->cuda_graphs, &p);
        llm_host_block_pass(m, e, moe_block, true, &p);
        k->host_fw[moe_block] = f;
        k->host_bw[moe_block] =
            e->training ? llm_host_pass_time(s, e->cuda_graphs, &p) + rerun_share(e, k) * f : 0;
        k->host_asked |= kept;
    }
    *fw = k->host_fw[moe_block];
    *bw = k->host_bw[moe_block];
}

void llm__host_block_s(const fathom_model_t *m, const llm_system_t *s, const llm_execution_t *e,
                       llm__compiled_t *k, double *fw, double *bw)
{
    *fw = *bw = 0;
    if (m->calculon_block || !(llm_host_launch_s(s, e) > 0))
        return;
    block_host(m, s, e, k, model_moe_blocks_in(m, 0, k->bpp) > 0, fw, bw);
}

void llm__host_step(const fathom_model_t *m, const llm_system_t *s, const llm_execution_t *e,
                    llm__compiled_t *k, const llm__block_stats_t *blk, llm_stats_t *st,
                    llm_step_extra_t *x)
{
    if (m->calculon_block || !(llm_host_launch_s(s, e) > 0))
        return;
    /* the GPU's pass of one block and microbatch (the baseblock's exposed TP collectives) */
    const double gpu_fw = blk->fw.time + blk->fw_tp_exposed[0] + x->a2a_block_fw;
    const double gpu_bw = e->training ? blk->re.time + blk->recomm_exposed[0] + blk->agrad.time +
                                            blk->wgrad.time + blk->agrad_tp_exposed[0] +
                                            x->a2a_block_bw
                                      : 0;
    const double moe_blocks = (double)k->pace_moe_blocks;
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
        wait += n * (llm_host_exposed(fw, 1, gpu_fw) + llm_host_exposed(bw, 1, gpu_bw));
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

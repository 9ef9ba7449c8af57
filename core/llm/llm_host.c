/* llm_host.c — kernels per block and host seconds per kernel (llm_host.h).
 *
 * Kernels of one dense modern block (attention then MLP), forward / backward, by stack. Counted
 * from what each stack's source launches (a view or reshape launches nothing):
 *
 *   Megatron-Core + Transformer Engine (fused modules): LayerNormLinear QKV (norm, GEMM), fused
 *   RoPE, fused attention, output GEMM, bias-dropout-add, LayerNormMLP (norm, FC1, activation,
 *   FC2), bias-dropout-add: 11 forward. Backward: two GEMMs (data and weight gradient) per GEMM,
 *   one kernel per fused op and a reduction for each norm's weight: 20.
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
 *   norm and activation kernels: 2 more forward and backward. */
#include "llm_host.h"

#include "llm_internal.h"

/* Forward / backward kernels of the block's compute, by stack and compile. */
static const double compute_kernels[3][2][2] = {
    /* megatron */ {{11, 20}, {11, 20}},
    /* torchtitan: eager, compiled */ {{35, 60}, {14, 28}},
    /* fsdp (FSDP1 runs the same PyTorch modules) */ {{35, 60}, {14, 28}},
};

void llm_host_block_kernels(const fathom_model_t *m, const llm_execution_t *e,
                            llm_host_kernels_t *out)
{
    const int stack = (unsigned)e->stack <= LLM_STACK_FSDP ? (int)e->stack : 0;
    const int compiled = e->compile ? 1 : 0;
    double fw = compute_kernels[stack][compiled][0], bw = compute_kernels[stack][compiled][1];
    if (stack != LLM_STACK_MEGATRON && model_kv_heads(m) == m->attn_heads)
        fw -= 2, bw -= 2; /* no repeat_kv copies without grouped-query attention */
    if (e->fp8) {
        const double linears = 7, per_cast = stack == LLM_STACK_MEGATRON ? 0 : compiled ? 2 : 6;
        fw += stack == LLM_STACK_MEGATRON ? 2 : linears * 2 * per_cast;
        bw += stack == LLM_STACK_MEGATRON ? 2 : linears * per_cast;
    }
    if (e->tensor_par > 1) {
        fw += 4;
        bw += 4;
    }
    if (llm_zero_stage(e) >= 3 && llm_shard_group(e) > 1) {
        fw += 3;
        bw += 5;
    }
    /* the recompute reruns the forward's kernels */
    const double rerun = e->activation_recompute == LLM_RECOMPUTE_FULL ? 1.0
                         : e->selective_ac == LLM_SAC_OP                ? 1.0
                                                                        : 0.0;
    out->fw = fw;
    out->bw = bw + rerun * fw;
}

double llm_host_launch_s(const llm_system_t *s, const llm_execution_t *e)
{
    (void)e;
    return s->host_launch_s > 0 ? s->host_launch_s : 0.0;
}

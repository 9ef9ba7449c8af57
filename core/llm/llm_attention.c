/* llm_attention.c — the speed of a fused attention kernel by name (doc/stacks.md, "Attention
 * kernels"). "fused" runs at the system's attention_efficiency, as it always has; a named kernel
 * (flash2, flash3, cudnn, sdpa, triton) at the speed its system measured for it
 * (system.attention_kernels: the fraction of the matrix peak by sequence length, forward and
 * backward, with and without a causal mask, at head size 128, and a head size 64 factor), and at
 * attention_efficiency where the system gives no table for it.
 *
 * Published benchmarks count a causal kernel's FLOPs as half the square; the step model counts
 * the 128-wide tiles on and below the diagonal, c = (T+1)/(2T) of it. So that a measured rate
 * gives the measured time, the layer's FLOPs run at rate·c/(1/2) = rate·(T+1)/T for the T tiles
 * of one call. */
#include <math.h>

#include "llm_internal.h"

/* Efficiency at sequence length s: log-linear between points, the end values beyond them. */
static double curve_at(const llm_attn_curve_t *k, double s)
{
    if (k->n <= 0)
        return 0;
    if (s <= k->seq[0])
        return k->eff[0];
    for (int i = 1; i < k->n; i++)
        if (s <= k->seq[i]) {
            const double t = (log(s) - log(k->seq[i - 1])) / (log(k->seq[i]) - log(k->seq[i - 1]));
            return k->eff[i - 1] + t * (k->eff[i] - k->eff[i - 1]);
        }
    return k->eff[k->n - 1];
}

/* The head-size factor: head_dim_64 at 64 and below, 1 at 128 and above, linear between. */
static double head_factor(const llm_attn_kernel_table_t *t, double d)
{
    if (d >= 128 || !(t->head_dim_64 > 0))
        return 1;
    if (d <= 64)
        return t->head_dim_64;
    return t->head_dim_64 + (d - 64) / 64 * (1 - t->head_dim_64);
}

double llm__attention_throughput(const llm__layer_t *l, const llm__ctx_t *c, llm__stage_t st)
{
    const llm_attn_kernel_t k = c->attn_kernel;
    if (k <= LLM_ATTN_KERNEL_FUSED || k >= LLM_ATTN_KERNEL__COUNT ||
        !c->sys->attention_kernels[k].present)
        return c->attention_flops; /* no measurement: the system's attention_efficiency */
    const llm_attn_kernel_table_t *t = &c->sys->attention_kernels[k];
    const bool bw = st != LLM__FW;
    const llm_attn_curve_t *curve = l->attn_causal ? (bw ? &t->bwd_causal : &t->fwd_causal)
                                                   : (bw ? &t->bwd : &t->fwd);
    const double eff = curve_at(curve, l->attn_seq) * head_factor(t, l->attn_head_dim);
    /* causal: the layer counts (T+1)/(2T) of the square for T tiles of the call where the
     * benchmark counted half (file head); a sliding window's tiles run at the same rate */
    double scale = 1;
    if (l->attn_causal && l->attn_seq > 0) {
        const double tiles = ceil(l->attn_seq / 128);
        scale = (tiles + 1) / tiles;
    }
    return c->matrix_flops * eff * scale;
}

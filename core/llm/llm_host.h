/* llm_host.h — the host side of a step (doc/stacks.md, "Host launch"): every kernel a block
 * launches costs the host CPU time before the GPU can run it. The GPU runs ahead of the host's
 * queue, so a pass is host-bound only when its launches take longer than its GPU work:
 *
 *     exposed host time of a pass = max(0, kernels · seconds_per_launch − GPU time of the pass)
 *
 * per block and microbatch, forward and backward (recompute included) apart. A system that gives
 * no system.host_launch_s (Calculon's, and any object that leaves it out) has no host side.
 *
 * Shared with the MoE model (core/llm/llm_moe.c adds its expert kernels to a block's counts; a
 * CUDA graph launches at system.graph_launch_s). Private to core/llm except what llm.h exports. */
#ifndef FATHOM_LLM_HOST_H
#define FATHOM_LLM_HOST_H

#include "llm.h"

/* Kernels one transformer block launches per microbatch as the execution's stack runs it:
 * forward, and backward (the recompute's forward again included). */
typedef struct {
    double fw, bw;
} llm_host_kernels_t;

/* The dense block's kernels (llm_host.c counts them from each stack's source). */
void llm_host_block_kernels(const fathom_model_t *m, const llm_execution_t *e,
                            llm_host_kernels_t *out);

/* Host seconds per kernel the execution launches on system s: system.host_launch_s for kernels
 * launched one by one (eager ops and compiled kernels alike: each is a call from Python-side
 * code into the CUDA driver); 0 when the system gives none. */
double llm_host_launch_s(const llm_system_t *s, const llm_execution_t *e);

/* The host time a pass of `kernels` launches adds beyond its `gpu_s` of GPU work. */
static inline double llm_host_exposed(double kernels, double launch_s, double gpu_s)
{
    const double host = kernels * launch_s;
    return host > gpu_s ? host - gpu_s : 0.0;
}

#endif

/* llm_host.h — the host side of a step (doc/stacks.md, "Host launch"; doc/moe.md, "The host"):
 * every kernel a block launches costs the host CPU time before the GPU can run it. The GPU runs
 * ahead of the host's queue, so a pass is host-bound only when its launches take longer than its
 * GPU work:
 *
 *     exposed host time of a pass = max(0, host seconds of its launches − GPU time of the pass)
 *
 * per block and microbatch, forward and backward (recompute included) apart. A launch costs
 * system.host_launch_s, or system.graph_launch_s when a CUDA graph replays it (the parts of the
 * block execution.cuda_graphs captures). A system that gives no system.host_launch_s (Calculon's,
 * and any object that leaves it out) has no host side.
 *
 * The dense block's kernels are counted per stack (llm_host.c); an MoE block adds its router,
 * dispatcher and per-expert kernels (llm_host_block_pass). Private to core/llm except what llm.h
 * exports. */
#ifndef FATHOM_LLM_HOST_H
#define FATHOM_LLM_HOST_H

#include <stdbool.h>

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

/* The parts of a block a CUDA graph scope names (Megatron's cuda_graph_scope). */
typedef enum {
    LLM_HOST_ATTENTION = 0,  /* "attn": input norm to the residual add after attention */
    LLM_HOST_ROUTER = 1,     /* "moe_router": pre-MLP norm, router GEMM, score, top-k, aux loss */
    LLM_HOST_PREPROCESS = 2, /* "moe_preprocess": routing map to the dispatcher's metadata */
    LLM_HOST_REST = 3,       /* the MLP: dispatch, permute, experts, combine (dense: the MLP) */
    LLM_HOST__PARTS
} llm_host_part_t;

/* One pass (forward, or backward without the recompute) of one block and microbatch: kernel
 * launches by part. */
typedef struct {
    double launches[LLM_HOST__PARTS];
} llm_host_pass_t;

/* Counts one block's pass: an MoE block when moe_block (the model's experts spread over
 * expert_par), else a dense one (llm_host_block_kernels' count, split by part); backward when
 * backward. */
void llm_host_block_pass(const fathom_model_t *m, const llm_execution_t *e, bool moe_block,
                         bool backward, llm_host_pass_t *out);

/* Host seconds of one pass on system s with the execution's graph scope. */
double llm_host_pass_time(const llm_system_t *s, llm_cuda_graphs_t graphs, const llm_host_pass_t *p);

#endif

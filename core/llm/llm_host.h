/* llm_host.h — the host side of a step: how long the CPU takes to launch one block's kernels for
 * one microbatch, and what CUDA graphs take off it. A block waits on its host when the launches
 * outlast the GPU work they start (small experts, small microbatches, slow hosts); otherwise the
 * host runs ahead and costs nothing. doc/moe.md, "The host", gives every count and figure.
 *
 * host time of one pass = Σ over the block's parts (attention; MoE router; dispatcher
 * preprocessing; the rest) of launches · graph_launch_s when the part is in the graph's scope,
 * launches · launch_s otherwise, with the launches counted from Megatron-Core's Transformer
 * Engine path (llm_host.c) and the costs per launch taken from the system (llm_host_t). */
#ifndef FATHOM_LLM_HOST_H
#define FATHOM_LLM_HOST_H

#include <stdbool.h>

#include "llm.h"

/* The parts of a block a CUDA graph scope names (Megatron's cuda_graph_scope). */
typedef enum {
    LLM_HOST_ATTENTION = 0,  /* "attn": input norm to the residual add after attention */
    LLM_HOST_ROUTER = 1,     /* "moe_router": pre-MLP norm, router GEMM, score, top-k, aux loss */
    LLM_HOST_PREPROCESS = 2, /* "moe_preprocess": routing map to the dispatcher's metadata */
    LLM_HOST_REST = 3,       /* the MLP: dispatch, permute, experts, combine (dense: the MLP) */
    LLM_HOST__PARTS
} llm_host_part_t;

/* One pass (forward or backward) of one block and microbatch: kernel launches by part. */
typedef struct {
    double launches[LLM_HOST__PARTS];
} llm_host_pass_t;

/* Counts one block's pass: an MoE block when moe_block (the model's experts spread over
 * expert_par), else a dense one; backward when backward. */
void llm_host_block_pass(const fathom_model_t *m, const llm_execution_t *e, bool moe_block,
                         bool backward, llm_host_pass_t *out);

/* Host seconds of one pass with the execution's graph scope on the system's host. */
double llm_host_pass_time(const llm_host_t *h, llm_cuda_graphs_t graphs, const llm_host_pass_t *p);

/* Seconds the GPU waits on its host in one pass: what the launches take beyond the GPU work they
 * start, max(0, host − gpu) (the host runs ahead of a longer GPU pass and costs nothing). */
double llm_host_exposed(double host_s, double gpu_s);

#endif

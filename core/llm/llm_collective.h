/* llm_collective.h — the time of one collective over a group of processors laid out over the
 * system's network tiers (doc/collectives.md). Every collective of the step model goes through
 * here: tensor, data, pipeline, context and expert parallelism.
 *
 * Two models, chosen by the system (llm_collectives_t; a system that leaves the choice out is
 * costed by the execution's stack, resolved in llm_estimate*: Calculon's under megatron, NCCL's
 * under torchtitan and fsdp; this function reads it as Calculon's):
 *   system.collectives "calculon": Calculon's
 *     Network.time on the group's tier, latency + bytes·scalar·(1 + offset/peers) /
 *     (bandwidth·efficiency), bit for bit (llm__net_time);
 *   system.collectives "nccl": the algorithms NCCL runs. A group spanning
 *     several tier-0 domains (nodes) moves its data over NVLink inside each node and over every
 *     NIC its ranks own across nodes (ring bus bandwidth min(B₀, n·B₁) for n ranks per node),
 *     ring or tree (all-reduce), NVLink SHARP (NVLS) and in-network reduction (SHARP) where a
 *     tier has them, the LL and Simple protocols' latency and bandwidth (the cheaper wins, as
 *     NCCL's tuner picks), and a slow loss of bus bandwidth with the number of nodes.
 *
 * `bytes` is nccl-tests' size S: the gathered buffer of an all-gather, the input of a
 * reduce-scatter, the buffer of an all-reduce, what each rank sends in all of an all-to-all, and
 * the message of a point-to-point send. */
#ifndef FATHOM_LLM_COLLECTIVE_H
#define FATHOM_LLM_COLLECTIVE_H

#include "llm.h"

typedef enum {
    LLM_COLL_P2P = 0,
    LLM_COLL_REDUCE_SCATTER = 1,
    LLM_COLL_ALL_GATHER = 2,
    LLM_COLL_ALL_REDUCE = 3,
    LLM_COLL_ALL_TO_ALL = 4
} llm_coll_t;

/* A group of `ranks` processors on network tier `tier` (the execution's *_par_net), each rank
 * `stride` processors from the next (the product of the degrees Megatron's rank order lays out
 * inside it: 1 for tensor parallelism, tensor_par·context_par for data parallelism, …), so that
 * min(ranks, size₀/stride) of them share a tier-0 domain. */
typedef struct {
    double ranks;
    double stride;
    int tier;
} llm_group_t;

/* Seconds of one collective of `kind` moving `bytes` (header) among the group. */
double llm_collective_time(const llm_system_t *s, llm_coll_t kind, double bytes,
                           const llm_group_t *g);

/* The ring bus bandwidth (bytes/s) the group reaches with large messages under the NCCL model:
 * min over the tiers it spans of each tier's per-rank bandwidth·efficiency times the group's
 * ranks that share it, less the scale falloff; for tests and doc/collectives.md's figures. */
double llm_collective_busbw(const llm_system_t *s, const llm_group_t *g);

#endif

/* llm_internal.h — PRIVATE to core/llm: what the files of the module share (the evaluation
 * context, the layer table of a block and the per-layer cost functions). Not part of the API;
 * nothing outside core/llm includes it. */
#ifndef FATHOM_LLM_INTERNAL_H
#define FATHOM_LLM_INTERNAL_H

#include "llm.h"

/* Everything a layer needs to turn FLOPs and bytes into seconds, resolved once per estimate
 * for the execution's datatype. `uncovered` records the first curve that did not cover an
 * operation (Calculon asserts there); the estimate then fails with that curve's path. */
typedef struct {
    const llm_system_t *sys;
    double matrix_flops; /* peak FLOP/s of the matrix engine for the datatype */
    double vector_flops;
    const llm_curve_t *matrix_curve; /* GFLOP thresholds */
    const llm_curve_t *vector_curve;
    double mem1_bw; /* bytes/s */
    double mem2_bw;
    double bpe; /* bytes per element */
    double optim_shards; /* data_par when the optimizer is sharded, else 1 */
    const char *uncovered;
} llm__ctx_t;

double llm__matrix_throughput(llm__ctx_t *c, double flops);
double llm__vector_throughput(llm__ctx_t *c, double flops);
double llm__mem1_throughput(llm__ctx_t *c, double bytes);
double llm__mem2_throughput(llm__ctx_t *c, double bytes);
double llm__processing_time(const llm__ctx_t *c, double flops_time, double mem_time);
/* Seconds of one network operation of `bytes` among `peers` processors (Calculon's
 * Network.time). */
double llm__net_time(const llm_network_t *n, llm_net_op_t op, double bytes, double peers);

/* Calculon's refusals (llm_checks.c): 0, or -1 with err naming the field. */
int llm__check_execution(const fathom_model_t *m, const llm_execution_t *e, fathom_error_t *err);
int llm__check_networks(const llm_system_t *s, const llm_execution_t *e, fathom_error_t *err);

/* Element counts stay below this so doubles hold them exactly. */
#define LLM__MAX_EXACT 9007199254740992.0 /* 2^53 */

/* ---- the layer table of a transformer block ---- */

typedef enum {
    LLM__FW = 0,
    LLM__AGRAD = 1,
    LLM__WGRAD = 2, /* for communication: the re-communication after a recompute */
    LLM__OPTIM = 3
} llm__stage_t;

typedef enum {
    LLM__LINEAR,
    LLM__LINEAR_OVERLAPPED, /* a linear layer whose TP communication is tiled and overlapped */
    LLM__BATCH_MATMUL,
    LLM__LAYER_NORM,
    LLM__DROPOUT,
    LLM__GELU,
    LLM__SOFTMAX,
    LLM__ELEMENTWISE,
    LLM__FORK,   /* one activation to several users; gradients summed */
    LLM__TP_COMM /* a tensor-parallel collective between two layers */
} llm__kind_t;

/* Bounded: the attention block has at most 15 layers and the MLP block 9. */
#define LLM__MAX_LAYERS 32

typedef struct {
    llm__kind_t kind;
    /* Element counts (not bytes), as Calculon's Layer holds them. */
    double fw_flops, agrad_flops, wgrad_flops;
    double inputs_size, output_size;
    double activation_space, activation_grads;
    double weight_space, weight_grads, optim_space;
    bool needs_recompute, needs_recomm;
    bool activation_reused, activation_stored, output_stored;
    /* Communication layers (TP_COMM, LINEAR_OVERLAPPED) */
    bool conjugate;       /* reduce after the layer (G) rather than before it (F) */
    double num_peers;     /* tensor_par */
    double num_tiles;     /* tensor_par (overlapped layers) */
    double comm_size;     /* elements (TP_COMM) */
    llm_tp_comm_t comm_type;
    llm_tp_overlap_t overlap;
    const llm_network_t *net;
    double num_users; /* FORK */
    /* State of LINEAR_OVERLAPPED: exposed network time of the last processed stage. Calculon
     * reads it back for later questions about other stages; the port keeps that behaviour. */
    double net_exposed_time;
} llm__layer_t;

typedef struct {
    int num_layers;
    llm__layer_t layers[LLM__MAX_LAYERS];
} llm__block_t;

/* Sizes of one block as compiled for an execution (elements). */
typedef struct {
    int64_t batch_seq;               /* microbatch_size * seq_size */
    int64_t activation_size;         /* batch_seq * hidden */
    int64_t seq_par_activation_size; /* batch_seq / tensor_par * hidden */
} llm__sizes_t;

/* Fills the layer table of one transformer block (attention then MLP). */
void llm__build_block(const fathom_model_t *m, const llm_system_t *s, const llm_execution_t *e,
                      const llm__sizes_t *z, llm__block_t *b);

/* Per-layer costs (Calculon's Layer methods). Byte counts use c->bpe and c->optim_shards. */
double llm__layer_flops(const llm__layer_t *l, const llm__ctx_t *c, llm__stage_t st);
double llm__layer_mem_accessed(const llm__layer_t *l, const llm__ctx_t *c, llm__stage_t st);
/* Cost of one stage of one layer, computed once and reused by the questions asked about it. */
typedef struct {
    double flops, flops_time; /* FLOP, s */
    double mem, mem_time;     /* bytes, s */
    double local;             /* processing_time(flops_time, mem_time): the layer on its own */
    double time;              /* what the layer adds to the block's processing time */
} llm__cost_t;

/* Fills *k for stage st. For an overlapped linear layer this also records its exposed network
 * time (Calculon's processing step does). */
void llm__layer_cost(llm__layer_t *l, llm__ctx_t *c, llm__stage_t st, llm__cost_t *k);
double llm__layer_comm_bytes(const llm__layer_t *l, const llm__ctx_t *c, llm__stage_t st,
                             bool baseblock);
/* Network time of a communication layer (0 for others); own = llm__layer_cost of the stage. */
double llm__layer_net_time(const llm__layer_t *l, llm__ctx_t *c, llm__stage_t st, bool baseblock,
                           const llm__cost_t *own);
/* Exposed network time, given the layer's network time for the same stage and block kind. */
double llm__layer_exposed_net_time(const llm__layer_t *l, double net_time);
double llm__layer_required_bandwidth(const llm__layer_t *l, const llm__ctx_t *c, llm__stage_t st,
                                     bool baseblock, const llm__cost_t *own);
double llm__layer_weight(const llm__layer_t *l, const llm__ctx_t *c);
double llm__layer_activation(const llm__layer_t *l, const llm__ctx_t *c);
double llm__layer_output(const llm__layer_t *l, const llm__ctx_t *c);
double llm__layer_weight_grad(const llm__layer_t *l, const llm__ctx_t *c, bool sharded);
double llm__layer_activation_grad(const llm__layer_t *l, const llm__ctx_t *c);
double llm__layer_optimizer(const llm__layer_t *l, const llm__ctx_t *c);

#endif

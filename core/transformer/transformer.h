/* transformer.h — the analytic transformer model: parameter and FLOP counts, checkpoint size,
 * MFU, training time by 6ND, GPUs for a time budget, GPUs by memory, and LoRA.
 *
 * The formulas are those of the transformer sizing notebook (seed 003: parameter and FLOP tables,
 * the PaLM per-token estimate, checkpoint size, MFU, 6ND) and the LLaMA-70B cost notebook (seed
 * 004: GPUs for a time budget, GPUs by memory, LoRA). The two time formulas are one:
 * FLOPs = 2·(1 + backward/forward)·(1 + recompute overhead)·N·D, which is 6ND at the default
 * ratio 2 and overhead 0, and seed 004's estimate at 1.5 and 0.05.
 *
 * All counts are doubles: they are exact integers up to 2^53 and model products beyond that are
 * estimates anyway. Inputs are trusted to be in range (the codec checks them). */
#ifndef FATHOM_TRANSFORMER_H
#define FATHOM_TRANSFORMER_H

#include <stdbool.h>

#include "model.h"

/* Parameters by part; names follow the sizing notebook's table. For a model with experts, MLA
 * or MTP depths, total and transformer are exact (model_parameters), block is their mean per
 * block, and the attention/mlp parts are those of a dense block. */
typedef struct {
    double embedding_position, embedding_token, embedding;
    double attention_ln, attention_kqv, attention_proj, attention;
    double mlp_ln, mlp_ffw, mlp_proj, mlp;
    double block, transformer, ln_f, dense, total;
} tf_params_t;

/* Forward FLOPs of one sequence of seq_size tokens (matrix multiplies only), and backward/total. */
typedef struct {
    double attention_kqv, attention_scores, attention_reduce, attention_proj, attention;
    double mlp_ffw1, mlp_ffw2, mlp;
    double block, transformer, dense;
    double forward_total, backward_total, total;
} tf_flops_t;

/* Optional inputs beside the model. A `has_` flag false means "not given": the outputs that need
 * the value are not computed (their `has_` flag in tf_result_t stays false). */
typedef struct {
    bool has_batch_size;           double batch_size;            /* sequences per step */
    bool has_measured_step_time;   double measured_step_time_s;  /* seconds per step */
    bool has_gpu_peak_flops;       double gpu_peak_flops;        /* FLOP/s of one GPU */
    bool has_gpu_memory;           double gpu_memory_gib;        /* GiB of one GPU */
    bool has_mfu;                  double mfu;                   /* assumed utilization, 0..1 */
    bool has_num_gpus;             double num_gpus;
    bool has_tokens;               double tokens;                /* training tokens D */
    bool has_time_budget;          double time_budget_days;
    bool has_param_count;          double param_count;           /* overrides N in budget formulas */
    double recompute_overhead;     /* extra compute fraction from recomputation (default 0) */
    double backward_forward_ratio; /* backward FLOPs / forward FLOPs (default 2) */
    double tensor_par;             /* tensor-parallel degree dividing activations (default 1) */
    double micro_batch_size;       /* sequences resident per GPU, for activation memory (default 1) */
    bool has_lora;                 double lora_rank;
    double lora_tuned_layers;      /* default: every block */
} tf_inputs_t;

typedef struct {
    tf_params_t params;
    tf_flops_t flops;
    double budget_params;            /* N used by the budget formulas: param_count or params.total */
    double palm_flops_per_token;     /* 6N' + 12·L·H·Q·T, N' = total − position embedding */
    double palm_flops_per_sequence;
    double checkpoint_bytes;         /* fp32 weights + two AdamW moment buffers */
    double train_flops_per_token;    /* 2·(1+ratio)·(1+overhead)·N */

    bool has_mfu;          double achieved_flops_per_s, mfu;
    bool has_train_time;   double train_flops, train_seconds, train_days;
    bool has_gpus_for_budget; double gpus_for_budget;     /* ceil */
    double memory_bytes;                                   /* weights+optimizer (20 B/param) + activations */
    bool has_gpus_by_memory; double gpus_by_memory;        /* ceil(memory / GPU GiB) */

    bool has_lora;
    double lora_params, lora_step_flops, lora_memory_bytes, lora_backbone_memory_bytes,
        lora_adapter_memory_bytes;
    bool has_lora_gpus_by_compute; double lora_gpus_by_compute;
    bool has_lora_gpus_by_memory; double lora_gpus_by_memory;
} tf_result_t;

/* Defaults for the optional inputs (nothing given; ratio 2, overhead 0, tp 1, micro batch 1). */
void tf_inputs_init(tf_inputs_t *in);

void tf_params(const fathom_model_t *m, tf_params_t *out);
void tf_flops(const fathom_model_t *m, double backward_forward_ratio, tf_flops_t *out);

/* Computes everything the inputs allow. */
void tf_estimate(const fathom_model_t *m, const tf_inputs_t *in, tf_result_t *out);

#endif

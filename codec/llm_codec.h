/* llm_codec.h — JSON ⇄ core/llm structs: Calculon's system and execution objects (strict, with
 * field paths such as "system.networks[0].ops.all_reduce"), the 96 statistics and the summary a
 * planner reads, and the POST /v1/estimate endpoint (codec_estimate_endpoint, in endpoint.h).
 *
 * Execution defaults (a member left out takes these; the normalized request shows them):
 *   tensor_par 1, pipeline_par 1, data_par num_procs/(tensor_par*pipeline_par) (1 when
 *   num_procs is absent too), num_procs tensor_par*pipeline_par*data_par, tensor_par_net,
 *   pipeline_par_net and data_par_net the first tier with room (codec_llm_execution_default_nets
 *   below; 0 where the system is not known), expert_par_net the first tier that connects the
 *   expert group, batch_size REQUIRED, microbatch_size 1,
 *   datatype "float16", fused_activation true, attention_type "multihead",
 *   activation_recompute "full" when training else "none", pipeline_interleaving 1,
 *   optimizer_sharding false, tensor_par_comm_type "ar", tensor_par_overlap "none",
 *   seq_par_ag_redo false, data_par_overlap false, weight_offload false,
 *   activations_offload false, optimizer_offload false, training true.
 * A system has no defaults: every member of Calculon's system format is required. */
#ifndef FATHOM_LLM_CODEC_H
#define FATHOM_LLM_CODEC_H

#include <jansson.h>

#include "fathom_error.h"
#include "llm.h"
#include "model.h"
#include "presets.h"
#include "scaling_run_codec.h"

/* Caps on execution integers: far beyond any machine, small enough that products stay exact. */
#define LLM_CODEC_MAX_PROCS 1073741824LL     /* num_procs, tensor/pipeline/data_par: 2^30 */
#define LLM_CODEC_MAX_BATCH 1099511627776LL  /* batch_size: 2^40 */
#define LLM_CODEC_MAX_MICROBATCH 1073741824LL /* microbatch_size, pipeline_interleaving: 2^30 */

/* Decodes v (a system preset name — built-in or user, resolved through presets, see presets.h —
 * or Calculon's system object) at `path` ("system"; "" names fields from the object's root). */
int codec_llm_system_decode(const json_t *v, const char *path, const codec_presets_t *presets,
                            llm_system_t *out, fathom_error_t *err);
/* Resolves a system value to the object it stands for (llm_system_variant.c): a preset name to
 * the preset, a GPU variant {"preset", and any of "memory_gib", "memory_gbps", "power_limit_w",
 * "nvlink_gbps", "nic_gbps"} to its preset with those replaced (a power limit below the board
 * power scaling the matrix and vector rates by llm_power_capped_clock), any other value to
 * itself. *out is the object (borrowed: valid while v and the presets are); *owned is a new
 * reference the caller frees, non-NULL only for a variant (preset objects are shared between
 * threads and are never incref'd). -1 with err naming the field. */
int codec_llm_system_resolve(const json_t *v, const char *path, const codec_presets_t *presets,
                             const json_t **out, json_t **owned, fathom_error_t *err);
/* Calculon's system object, every member explicit (new reference; NULL on allocation failure).
 * A system's price and power are not in it: they change no estimate, only a run's bill. */
json_t *codec_llm_system_encode(const llm_system_t *s);
/* A system's optional "price_per_gpu_hour" ($, 0..1e6) and "power_per_gpu_kw" (kW, 0..1000),
 * read from v (a preset name or a system object; v must have passed codec_llm_system_decode).
 * Every system preset gives its power, and its price where a public on-demand list price exists
 * (h100_nvl and h20 give none); both are sourced in its "$comment_cost". */
int codec_llm_system_cost_decode(const json_t *v, const char *path,
                                 const codec_presets_t *presets, codec_gpu_cost_t *out,
                                 fathom_error_t *err);

/* o (a system as codec_llm_system_encode gives it, may be NULL) with the price and power c has,
 * for the answers that hand a system back to be reused (a stored preset, a calibrated system):
 * without them a plan naming it has no price. o itself, or NULL (o freed) when out of memory. */
json_t *codec_llm_system_with_cost(json_t *o, const codec_gpu_cost_t *c);

/* What a system object may carry for serving alone (codec/serving_codec.c; the llm decoder
 * accepts and ignores them): "float4_tflops" (dense FP4 tensor rate, TFLOP/s, 0..1e6; 0 none),
 * "float4_efficiency" and "decode_attention_efficiency" (shares in (0, 1]; 0: not given). */
typedef struct {
    double float4_tflops, float4_efficiency, decode_attention_efficiency;
} codec_serving_hw_t;
/* Reads them from sys, the object a system value stands for (codec_llm_system_resolve). */
int codec_llm_system_serving_hw_decode(const json_t *sys, const char *path, codec_serving_hw_t *out,
                                       fathom_error_t *err);
/* o with those h gives (non-zero), for a stored preset that must serve as it was given; o itself,
 * or NULL (o freed) when out of memory. */
json_t *codec_llm_system_with_serving_hw(json_t *o, const codec_serving_hw_t *h);

/* Decodes Calculon's execution object at `path` ("execution"), applying the defaults above. */
int codec_llm_execution_decode(const json_t *v, const char *path, llm_execution_t *out,
                               fathom_error_t *err);
json_t *codec_llm_execution_encode(const llm_execution_t *e);
/* execution.finetune (llm_finetune_codec.c): v NULL (absent) is pre-training; datatype is the
 * execution's, lora's default base. The encoder gives NULL for pre-training. */
int codec_llm_finetune_decode(const json_t *v, const char *path, llm_datatype_t datatype,
                              llm_finetune_t *out, fathom_error_t *err);
json_t *codec_llm_finetune_encode(const llm_finetune_t *f);
/* A search's or plan's top-level "finetune" checked against its model at once (what every
 * execution would be refused for), the field named as the request names it ("finetune.<x>"). */
int codec_llm_finetune_check_request(const fathom_model_t *m, const llm_finetune_t *f,
                                     fathom_error_t *err);

/* Puts each of tensor_par_net, pipeline_par_net and data_par_net that the execution object v
 * leaves out on the first tier of system s that still has room for it, taking tensor, pipeline
 * and data parallelism in that order (the last tier when none has room), so that a group spanning
 * nodes lands on the node-spanning tier as a planner expects instead of all on tier 0; and
 * expert_par_net on the first tier that connects expert_par × expert_tensor_par. Fields v
 * gives are kept. Call after codec_llm_execution_decode, once the system is known. */
void codec_llm_execution_default_nets(const json_t *v, const llm_system_t *s,
                                      llm_execution_t *e);

/* {"block_fw_flops": …, …} all 96 statistics in Calculon's order (non-finite values → null). */
json_t *codec_llm_stats_encode(const llm_stats_t *s);

/* The planner's summary of one estimate: step_time_s, sample_rate, tokens_per_s,
 * total_efficiency, compute_efficiency, system_efficiency, mem_tier{1,2}_bytes and
 * _capacity_bytes, useful_flops_per_s, and the step time breakdown (time_breakdown_s). */
json_t *codec_llm_summary_encode(const fathom_model_t *m, const llm_execution_t *e,
                                 const llm_result_t *r);

/* The memory violations of a result: [] or [{"tier","needed_bytes","capacity_bytes","message"}]. */
json_t *codec_llm_violations_encode(const llm_result_t *r);

/* Plausibility warnings of an estimate (llm_warnings.c): [] or [{"code","message"}] with codes
 * "mfu_above_published" (MFU above the best published for the GPU and datatype, the source
 * named), "offload_tier2" (the execution offloads to tier 2), "low_rate_datatype" (a datatype
 * the matrix engine runs at no more than half its fastest 16-bit rate), "moe_small_hidden" (a
 * mixture-of-experts model of hidden size below 4096, where the estimates are least certain). */
json_t *codec_llm_warnings_encode(const fathom_model_t *m, const llm_system_t *s,
                                  const llm_execution_t *e, const llm_result_t *r);

/* The whole estimate response {"feasible","fits_memory","violations","stats","summary"}. */
json_t *codec_llm_result_encode(const fathom_model_t *m, const llm_execution_t *e,
                                const llm_result_t *r);

/* Calculon's validation against the Megatron sequence-parallelism paper (core/llm/
 * llm_validation.h) as JSON, for GET /v1/validation and `fathom validate`:
 *   {"paper", "calculon", "tables": [{"name", "title", "unit", "system", "modes",
 *     "cells": [{"model","mode","profile","estimate","delta_pct"[,"memory_gib"]}],
 *     "mean_abs_error_pct", "max_abs_error_pct"}]}
 * The validation executions are C data in core (llm_validation_data.c); the four models
 * (megatron-22B, gpt3-175B, turing-530B, megatron-1T) and the two systems (a100_80e, a100_80g)
 * are taken from the preset registry. NULL with err (FATHOM_E_INTERNAL) when a preset is
 * missing. */
json_t *codec_llm_validation_report(const codec_presets_t *presets, fathom_error_t *err);

/* The step model against published measured runs (llm_measured.c; the registry's
 * validation/measured_runs.json): {"source", "rows": [{"id", "model", "gpu", "gpu_count",
 * "layout", "expressible", then "measured_tokens_per_s_per_gpu", "estimated_tokens_per_s_per_gpu",
 * "error_pct", "recompute", "fits_memory", "step_time_s", "mfu", "memory_gib" or "reason"}],
 * "rows_estimated", "rows_total", "mean_abs_error_pct", "max_abs_error_pct", "tflops_only",
 * "moe_…" and "dense_…" (the MoE and dense rows among those compared on tokens/s)}. With the
 * calibrate module, each expressible row also has "loso": its GPU's preset calibrated
 * (core/calibrate, runs only) on the rows of every OTHER source, then this row predicted:
 * {"left_out_source", "calibration_rows", "estimated", "error_pct"} or a "reason"; and the report
 * a "loso" summary with the same members as the built-in one. Also the "measured" member of
 * codec_llm_validation_report. */
json_t *codec_llm_measured_report(const codec_presets_t *presets, fathom_error_t *err);
/* The same report over the given rows (an array in measured_runs.json's format; any other JSON
 * is a FATHOM_E_INVALID_FIELD error), "source" naming where they came from. A row that is not an
 * object, or whose measured figure is not a positive number, is listed with the reason. */
json_t *codec_llm_measured_report_rows(const json_t *rows, const char *source,
                                       const codec_presets_t *presets, fathom_error_t *err);
/* The measured report as a table (malloc'ed; NULL on allocation failure). */
char *codec_llm_measured_text(const json_t *report);

/* The report rendered as Calculon's validation printout (CSV-like lines, same rounding);
 * malloc'ed, the caller frees; NULL on allocation failure or a malformed report. */
char *codec_llm_validation_text(const json_t *report);

#endif

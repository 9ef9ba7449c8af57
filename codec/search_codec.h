/* search_codec.h — the optimal-execution search over JSON: the request of an
 * {"kind":"optimal_execution", …} sweep, its normalized form, the result document, and a
 * convenience that runs a decoded search on pthreads (tests, benchmarks).
 *
 * Request (schemas/sweep_optimal_execution.request.json):
 *   {"kind": "optimal_execution"            optional; the normalized form always has it
 *    "model": preset name | object,         required (codec_model_decode)
 *    "system": preset name | object,        required (codec_llm_system_decode)
 *    "num_procs": 1..2^20,                  required
 *    "max_batch_size": 1..2^20,             required: the batch is its largest multiple of DP
 *    "datatype": "float16",                 optional, default "float16"
 *    "options": {                           optional, every member optional:
 *      "mbs_break": false, "top_n": 1 (1..100), "no_tp_overlap": false,
 *      "no_dp_overlap": false, "fused_activation": "true" | "false" | "all" (default "true";
 *      JSON true/false are accepted too and normalize to "true"/"false")}}
 * Result (schemas/search.result.json):
 *   {"best": [{"execution": {23 fields}, "stats": {96}, "summary": {…}}, …best first],
 *    "counts": {"total", "good", "bad"},
 *    "points": [[sample_rate, mem_tier1_bytes, mem_tier2_bytes], …] a sample of the good
 *              executions, in enumeration order (see search_point_t)}
 * with Calculon's meaning of the counts and ties kept in enumeration order (core/search/search.h). */
#ifndef FATHOM_SEARCH_CODEC_H
#define FATHOM_SEARCH_CODEC_H

#include <jansson.h>
#include <stdbool.h>

#include "endpoint.h"
#include "fathom_error.h"
#include "search.h"
#include "sweep_kind.h"


/* Defaults of a search or plan that leaves these out (doc/api.md, "Modern defaults"): a modern
 * model (model.h's calculon_block false) runs at its natural datatype — bfloat16, which every
 * model of 2023 on was trained and published in, where the system has it — with fused (flash)
 * attention, and FP8 GEMMs free (searched both ways) where the system has a float8 rate and
 * the datatype is 16-bit; Calculon's block keeps Calculon's float16, unfused, no FP8. */
llm_datatype_t codec_natural_datatype(const fathom_model_t *m, const llm_system_t *s);
search_pick_t codec_default_attention_kernel(const fathom_model_t *m);
search_pick_t codec_default_fp8(const fathom_model_t *m, const llm_system_t *s, llm_datatype_t dt);

/* Strictly decodes a request (or a normalized one) into *out (mode SEARCH_EVALUATE). */
int codec_search_decode(const json_t *body, const codec_ctx_t *ctx, search_request_t *out,
                        fathom_error_t *err);

/* Decode + encode back in full (presets resolved, defaults explicit). New reference or NULL. */
json_t *codec_search_normalize(const json_t *body, const codec_ctx_t *ctx, fathom_error_t *err);

/* The size of req's search as a plan sizes a candidate, by a walk that only counts (no seed
 * floor): *exhaustive executions in one walk, *two_stage in two stages of SEARCH_REFINE_UNITS.
 * Both 0 when no layout of the model uses req->num_procs GPUs under its options, or when the
 * search itself refuses req (too many units). */
void codec_search_size(const search_request_t *req, uint64_t *exhaustive, uint64_t *two_stage);

/* A search with no layout at all (codec_search_size 0): the 422 naming the pinned option that
 * rules every layout out (options.tensor_par 3 on a model of 32 heads), else num_procs: -1.
 * 0 (not refused) where only options.pipeline_schedule does, as a plan takes such a count: the
 * search runs and ranks nothing. */
int codec_search_no_layout(const search_request_t *req, fathom_error_t *err);

/* The normalized request of *r (new reference). */
json_t *codec_search_request_encode(const search_request_t *r);

/* {"best":[…],"counts":{…}} of a finished search of *req (new reference; NULL on allocation
 * failure). */
json_t *codec_search_result_encode(const search_request_t *req, const search_result_t *res);

/* The sample of good executions as [[sample_rate, mem_tier1_bytes, mem_tier2_bytes], …] in
 * enumeration order; with_position appends unit and index to each row (for checkpoints). */
json_t *codec_search_points_encode(const search_result_t *res, bool with_position);
/* Runs the whole search of a decoded request on `threads` pthreads (1..256) through the
 * sweep-kind table's optimal_execution row (search_kind.c; tests and benchmarks pick the mode);
 * fills *out, which the caller initialized with search_result_init(out, req->options.top_n) and
 * closes. cancel (may be NULL): once non-zero every thread stops within 4096 executions and -1 is
 * returned with FATHOM_E_CANCELLED. progress (may be NULL): as codec_sweep_run's. 0, or -1 with
 * err. (A normalized JSON request runs with codec_sweep_run(&codec_search_kind, …).) */
int codec_search_run_request(const search_request_t *req, int threads, volatile int *cancel,
                             sweep_progress_fn progress, void *progress_user,
                             search_result_t *out, fathom_error_t *err);

#endif

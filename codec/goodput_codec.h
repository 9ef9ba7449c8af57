/* goodput_codec.h — JSON for the three goodput endpoints (core/goodput/goodput.h has the model).
 *
 * The endpoints themselves (codec_goodput_evaluate_endpoint, codec_goodput_optimize_endpoint,
 * codec_goodput_fit_endpoint) are declared in endpoint.h with the others. Wire formats are in
 * schemas/goodput_{evaluate,optimize,fit}.{request,response}.json; in short:
 *
 * POST /v1/goodput/evaluate
 *   {"perf_params": {alpha_c, beta_c, alpha_n, beta_n, alpha_r, beta_r, gamma},   required
 *    "grad_params": {sqr, var}, "init_batch_size": int,                            required
 *    "num_nodes", "num_replicas", "atomic_bsz": int or [int],                      required
 *    "accum_steps": int or [int]                                                   default 0}
 *   All scalars → one result {batch_size, throughput_samples_per_s, efficiency,
 *   goodput_samples_per_s}. Any array → arrays must share one length (1..GOODPUT_MAX_CONFIGS),
 *   scalars repeat, and the response is {"results": [row per index, echoing the configuration]}.
 *   The normalized form of an array request has every one of the four members as an array.
 *
 * POST /v1/goodput/optimize
 *   {perf_params, grad_params, init_batch_size,
 *    "num_nodes", "num_replicas": int or [int],      required
 *    "max_batch_size": int                           default init_batch_size
 *    "atomic_bsz_range": [min|null, max|null]        default [1, max_batch_size] (normalized so)
 *    "accumulation": bool                            default false
 *    "curve": bool                                   default false: add the 50 candidates}
 *   Both scalars → {goodput_samples_per_s, atomic_bsz, accum_steps, batch_size[, curve]}.
 *   Any array → a table over every (num_nodes, num_replicas) pair, nodes-major:
 *   {"results": [{num_nodes, num_replicas, goodput_samples_per_s, …}]}; pairs with more nodes
 *   than replicas are not allocations and are left out (all pairs left out → 422 num_nodes).
 *   At most GOODPUT_MAX_CONFIGS pairs, and CODEC_GOODPUT_MAX_CURVE_PAIRS when "curve" is true.
 *   goodput 0 means no candidate had an atomic batch inside atomic_bsz_range (the seed's rule).
 *
 * POST /v1/goodput/fit
 *   {"measurements": [{num_nodes, num_replicas, atomic_bsz, accum_step_time, optim_step_time}]}
 *   (1..GOODPUT_MAX_MEASUREMENTS rows, times in seconds)
 *   → {"perf_params": {...}, "objective": x, "fixed_params": [names fixed by the data rules]}. */
#ifndef FATHOM_GOODPUT_CODEC_H
#define FATHOM_GOODPUT_CODEC_H

#include <jansson.h>

#include "fathom_error.h"
#include "goodput.h"

/* Curves are 50 rows per pair: a table with curves is capped lower than one without. */
#define CODEC_GOODPUT_MAX_CURVE_PAIRS 100
/* Upper bound accepted for any time parameter or measurement, seconds. */
#define CODEC_GOODPUT_MAX_SECONDS 1e6

/* Reads "perf_params", "grad_params" and "init_batch_size" of body (top level) and checks the
 * model (goodput_model_check). */
int codec_goodput_model_decode(const json_t *body, goodput_model_t *out, fathom_error_t *err);

/* Sets those three members on obj (in full, as the normalized form has them). */
void codec_goodput_model_encode(const goodput_model_t *m, json_t *obj);

/* {"alpha_c": …, …, "gamma": …} (new reference). */
json_t *codec_goodput_perf_params_encode(const goodput_perf_params_t *p);

#endif

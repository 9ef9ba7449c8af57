/* search_plan_codec.h — a cluster plan: the {"kind":"plan"} body of POST /v1/sweep, decoded
 * strictly and normalized; one candidate (a system and a GPU count) searched and priced; and the
 * plan block (Pareto front, cheapest within the deadline, fastest within the budget) made from
 * every candidate. The arithmetic of failures and of the choice is core/plan (plan.h).
 *
 * Request (schemas/sweep_plan.request.json):
 *   "model"          preset name | object                                   required
 *   "tokens"         number (1..1e18) | "chinchilla" (the compute-optimal tokens of the total
 *                    parameters under the Chinchilla fit, scaling_chinchilla.c: ≈20 a parameter)
 *                    | {"flops": F} (F / (6 · active parameters), the 6ND convention)  required
 *   "seq_size"       sequence length; default the model's
 *   "batch_tokens"   "auto" (default): DeepSeek LLM's batch law for the run's compute, rounded
 *                    per layout (search option fed_batch); a number of tokens; or a list of up to
 *                    8 to choose from (the run that finishes first wins per candidate); numbers
 *                    are rounded down to whole sequences
 *   "batch_schedule" up to 8 stages [{"batch_tokens", "tokens"}] run before the main batch on
 *                    its layout, their steps costed (a ramp)
 *   "goodput"        {"init_batch_tokens", "grad_params": {"sqr","var"}} or {"init_batch_tokens",
 *                    "critical_batch_tokens"}: batches weighed by Pollux's statistical
 *                    efficiency; "auto" then also tries 1/4, 1/2, 2 and 4 times the law's batch
 *   "datatype"       default "bfloat16"
 *   "systems"        1..16 of: preset name | {"name", "system"?: object, "price_per_gpu_hour"?,
 *                    "power_per_gpu_kw"?} (price and power default to the preset's/object's;
 *                    required when it has none)                                  required
 *   "gpu_counts"     1..256 integers, or {"from","to","step"} or {"from","to","factor"}  required
 *   "max_gpus"       counts above it are rejected without a search ("over_max_gpus")
 *   "deadline_days", "budget_dollars"   > 0; absent: no constraint
 *   "options"        the search's options (sweep_optimal_execution's), over the plan's
 *                    defaults: attention_kernel "fused", no_offload true, fp8 false, Calculon's
 *                    ZeRO loop, context_par 1; exact_batch and top_n 1 are always set
 *   "failures"       {"per_gpu_hour" (default 419/(54·24·16384), Llama 3 405B),
 *                     "planned_per_gpu_hour" (default 47/(54·24·16384)),
 *                     "storage_gbps" (the cluster's checkpoint bandwidth, GB/s) or
 *                     "storage_gbps_per_gpu" (default 2000/16384: Llama 3's 2 TB/s store),
 *                     "restart_minutes" (default 15), "queue_minutes" (default 0)}
 *   "losses"         {"evaluation" (default 1/300), "slow_nodes" (0.015), "data_loader" (0)}
 *   "pue" (default 1.0), "co2_kg_per_kwh" (default 0.534): as an estimate's training block.
 * The normalized form has every field explicit: tokens a number, batch_tokens "auto" (with
 * batch_law_tokens) or a list of exact multiples of seq_size, systems objects with their system,
 * gpu_counts a sorted list, goodput null or {"init_batch_tokens", "critical_batch_tokens"}.
 *
 * Candidates: index = system · len(gpu_counts) + count, systems in request order, counts
 * ascending. A candidate's days, GPU-hours, dollars, MWh and CO2 are expected ones (ideal /
 * goodput, every loss of core/plan's plan_losses); the ideal ones have the suffix _ideal; their
 * ranges (gpu_hours_range, days_range, dollars_range) run from the tuned-stack figure to what
 * published whole runs of comparable scale achieved (plan.h), and deadline_verdict /
 * budget_verdict judge the ranges ("within", "at risk", "misses"). "rejected" judges the expected
 * figures. A candidate whose exhaustive search would try more than PLAN_EXHAUSTIVE_MAX
 * executions runs in two stages (search.stages 2). */
#ifndef FATHOM_SEARCH_PLAN_CODEC_H
#define FATHOM_SEARCH_PLAN_CODEC_H

#include <jansson.h>
#include <stdint.h>

#include "endpoint.h"
#include "fathom_error.h"

#define PLAN_MAX_SYSTEMS 16
#define PLAN_MAX_COUNTS 256
#define PLAN_MAX_BATCHES 8
#define PLAN_MAX_STAGES 8
/* "auto" with goodput statistics tries the law's batch times each of these */
#define PLAN_AUTO_GOODPUT_FACTORS {0.25, 0.5, 1.0, 2.0, 4.0}
/* Llama 3's checkpoint store: Tectonic's 2 TB/s sustained for 16,384 GPUs (Llama Team 2024,
 * The Llama 3 Herd of Models, sec. 3.3.1), per GPU */
#define PLAN_DEFAULT_STORAGE_GBPS_PER_GPU (2000.0 / 16384.0)
#define PLAN_DEFAULT_RESTART_MINUTES 15.0
/* A candidate whose exhaustive search would try more executions than this is searched in two
 * stages (coarse layout, then refinement: core/search/search.h, TWO STAGES). The server's
 * default --max-search-executions; a request-only rule, so a plan's answer does not depend on
 * the server's limit, which only refuses. */
#define PLAN_EXHAUSTIVE_MAX 50000000ULL

/* Decodes and normalizes a plan body. *size is its number of candidates. Refuses a count no
 * layout can use ("gpu_counts[i]") and a candidate whose search would try more than
 * max_search_executions (limit_exceeded). NULL with err when refused. */
json_t *codec_plan_normalize(const json_t *body, const codec_ctx_t *ctx,
                             uint64_t max_search_executions, uint64_t *size, fathom_error_t *err);

/* Number of candidates of a normalized plan. */
uint64_t codec_plan_size(const json_t *spec);

/* Candidate `index` of a normalized plan, searched on the calling thread (new reference):
 *   {"index","system","num_procs","price_per_gpu_hour","power_per_gpu_kw","fits",
 *    "rejected": [reason codes], "reason": text|null, "execution": object|null,
 *    "batch_tokens","step_time_s","tokens_per_s","mfu","steps","days_ideal","days",
 *    "gpu_hours_ideal","gpu_hours","dollars_ideal","dollars","mwh","co2_tonnes",
 *    "gpu_hours_range","days_range","dollars_range": [low, high],
 *    "published": {"efficiency","runs","mfu_6nd_expected"},
 *    "deadline_verdict","budget_verdict": "within" | "at risk" | "misses",
 *    "batch": {"rule","law_tokens","tried","chosen_by","target_tokens",
 *              "statistical_efficiency","tokens_trained","schedule"},
 *    "failures": {"mtbf_hours","checkpoint_bytes","checkpoint_write_s",
 *                 "checkpoint_interval_s","overhead","goodput","expected_interruptions",
 *                 "expected_planned"},
 *    "losses": {"checkpoint_writes","lost_work","restarts","planned_restarts","evaluation",
 *               "slow_nodes","data_loader","goodput"},
 *    "warnings": [...], "search": {"total","good","pruned","estimated","stages"}}
 * (figures null when nothing fits). Reason codes: "over_max_gpus", "does_not_fit",
 * "never_finishes" (goodput 0), "misses_deadline", "over_budget". *evaluations gets the
 * llm_estimate calls made. NULL with err: FATHOM_E_CANCELLED once *cancel is non-zero (may
 * be NULL), FATHOM_E_INTERNAL when memory ran out. */
json_t *codec_plan_candidate(const json_t *spec, const codec_ctx_t *ctx, uint64_t index,
                             volatile int *cancel, uint64_t *evaluations, fathom_error_t *err);

/* The plan block from every candidate in index order (borrowed):
 *   {"candidates": [...], "pareto": [...], "cheapest_within_deadline": candidate|null,
 *    "fastest_within_budget": candidate|null, "deadline_days", "budget_dollars", "tokens"}
 * pareto: the usable candidates no other beats in both days and dollars, fastest first.
 * Without a deadline the cheapest overall; without a budget the fastest overall. NULL on
 * allocation failure. */
json_t *codec_plan_summarize(const json_t *spec, const json_t *candidates);

/* The CSV columns of a candidate: JSON paths into it ("execution.tensor_par"), NULL-ended. */
extern const char *const codec_plan_csv_columns[];

#endif

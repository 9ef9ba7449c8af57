/* serving_plan_codec.h — the serving plan (kind "serving_plan"; codec/serving_plan.c): its
 * request decoded into the planner's spec and units (one per system and layout), a unit run,
 * the candidates summarized into the plan block (the row of the sweep-kind table is
 * codec/serving_plan_kind.c). A sweep runner runs the units in any order and on any thread: the
 * decoded plan is read-only once made. */
#ifndef FATHOM_SERVING_PLAN_CODEC_H
#define FATHOM_SERVING_PLAN_CODEC_H

#include <jansson.h>
#include <stdbool.h>

#include "fathom_error.h"
#include "presets.h"
#include "serving.h"

typedef struct {
    fathom_model_t model;
    serving_plan_spec_t spec;
    int num_systems;
    serving_system_t systems[SERVING_PLAN_MAX_SYSTEMS];
    char system_names[SERVING_PLAN_MAX_SYSTEMS][CODEC_PRESET_NAME_MAX + 1];
    json_t *system_json;        /* each system's object (its price as the plan takes it) */
    int num_units;
    serving_request_t *layouts; /* unit i's layout (without a load) */
    int *layout_system;         /* unit i's system */
} codec_serving_plan_t;

/* Decodes a plan request (codec/serving_plan.c lists its members); NULL with err (a 422 naming
 * the field) when it is refused. Free with codec_serving_plan_free. */
codec_serving_plan_t *codec_serving_plan_decode(const json_t *body, const codec_presets_t *presets,
                                                fathom_error_t *err);
void codec_serving_plan_free(codec_serving_plan_t *p);
/* The request with every member explicit (new reference). */
json_t *codec_serving_plan_normalized(const codec_serving_plan_t *p);
/* Runs unit `unit` (0 ≤ unit < num_units); cannot fail (the candidate says what came of it). */
void codec_serving_plan_run_unit(const codec_serving_plan_t *p, int unit,
                                 serving_plan_candidate_t *out);
/* One candidate as JSON: what it is, and when it meets the targets its fleet, figures and
 * "request", the body of POST /v1/inference that re-estimates one replica (new reference). */
json_t *codec_serving_plan_candidate_encode(const codec_serving_plan_t *p,
                                            const serving_plan_candidate_t *c);
/* The plan block from every candidate's JSON in unit order (candidates borrowed; each that
 * meets gets "pareto"): {"systems": [{"name", "price_per_gpu_hour", "candidates", "meeting",
 * "best", "reasons" (count of each reason the others fail for), "hint" (only when none
 * meets)}], "cheapest" (index or null), "pareto": [indices], "candidates"}. NULL when memory
 * ran out. */
json_t *codec_serving_plan_summarize(const codec_serving_plan_t *p, json_t *candidates);

/* The sweep kind "serving_plan" (codec/serving_plan_kind.c) runs the units and keeps each
 * candidate as a point; `fathom serve-plan` runs it on this machine's threads. */

#endif

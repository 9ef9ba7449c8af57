/* scaling_run_codec.h — the optional "training" member of /v1/estimate and /v1/transformer, and
 * the "run" block of their responses (codec/scaling_run_codec.c; core: scaling_run_cost).
 *
 * Request: "training": {"tokens", "gpu_hour_price" ($/GPU-hour), "gpu_power_kw" (kW per GPU),
 * "pue" (default 1.0), "co2_kg_per_kwh" (default 0.534)}. gpu_hour_price and gpu_power_kw default
 * to the system's price_per_gpu_hour and power_per_gpu_kw (every system preset gives them; see
 * codec_llm_system_cost_decode) and are required only when the system has none.
 * Response: "run": {"steps", "wall_time_s", "days", "gpu_hours", "dollars", "kwh", "co2_kg"}.
 *
 * Wiring (the endpoint's own codec): if the body has "training", codec_training_decode it at
 * path "training" and put codec_training_encode's object into the normalized request; after
 * computing the step time, call scaling_run_cost(step_time_s, batch_size, seq_size, num_gpus,
 * &training, &run, err) and add "run": codec_run_encode(&run) to the response. */
#ifndef FATHOM_SCALING_RUN_CODEC_H
#define FATHOM_SCALING_RUN_CODEC_H

#include <jansson.h>
#include <stdbool.h>

#include "fathom_error.h"
#include "scaling.h"

#define TRAINING_MAX_TOKENS 1e18
#define TRAINING_MAX_PRICE 1e6   /* $/GPU-hour */
#define TRAINING_MAX_POWER_KW 1e3 /* per GPU */
#define TRAINING_MAX_PUE 10.0
#define TRAINING_MAX_CO2 10.0    /* kg/kWh */

/* A GPU's price and power as a system gives them (optional members of a system object). */
typedef struct {
    bool has_price, has_power;
    double price_per_gpu_hour; /* dollars per GPU-hour */
    double power_per_gpu_kw;   /* kW per GPU */
} codec_gpu_cost_t;

/* Decodes the "training" object v at `path` ("training"); fields are named "<path>.tokens"…
 * gpu (may be NULL) gives the defaults of gpu_hour_price and gpu_power_kw. */
int codec_training_decode(const json_t *v, const char *path, const codec_gpu_cost_t *gpu,
                          scaling_training_t *out, fathom_error_t *err);
/* The normalized object, every field explicit (new reference, NULL on allocation failure). */
json_t *codec_training_encode(const scaling_training_t *t);
/* The "run" block (new reference, NULL on allocation failure). */
json_t *codec_run_encode(const scaling_run_cost_t *run);

#endif

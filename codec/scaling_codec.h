/* scaling_codec.h — JSON of the scaling-law endpoints (codec/scaling_codec.c,
 * codec/scaling_fit_codec.c).
 *
 * POST /v1/scaling (codec_scaling_endpoint): a budget in, the 2020 calculator's plan out, or the
 * Chinchilla law with "law":"chinchilla". POST /v1/scaling/fit (codec_scaling_fit_endpoint):
 * loss-versus-compute runs (JSON, or the calculator's CSV text) in, loss_fit and param_fit out.
 * The schemas are schemas/scaling*.json. Both endpoints are declared in endpoint.h. */
#ifndef FATHOM_SCALING_CODEC_H
#define FATHOM_SCALING_CODEC_H

#include <jansson.h>

#include "fathom_error.h"
#include "scaling.h"

/* Limits of the fit endpoint's CSV input (on top of SCALING_FIT_MAX_RUNS / _POINTS). */
#define SCALING_CSV_MAX_BYTES (1024 * 1024)
#define SCALING_CSV_MAX_ROWS 100000
#define SCALING_CSV_MAX_COLUMNS (2 * SCALING_FIT_MAX_RUNS + 1)

/* The calculator's CSV (a "global_step" column holding x = FLOs/86400, and for each run a
 * "<name> - valid_loss" column; "undefined" or empty cells are no point) as the "runs" array of
 * the fit request: [{"name","points":[[x,loss],…]}…] (new reference). NULL with err naming
 * `field` on malformed text or beyond the limits above. */
json_t *codec_scaling_csv_to_runs(const char *text, size_t len, const char *field,
                                  fathom_error_t *err);

/* Reads a GPU: a name of the seed's table or an object {k,k1,k2,b,c,layer_base,price_per_hour,
 * power_kw,batch_size}; and encodes it back as the full object. */
int codec_scaling_gpu_decode(const json_t *v, const char *path, scaling_gpu_t *out,
                             fathom_error_t *err);
json_t *codec_scaling_gpu_encode(const scaling_gpu_t *gpu);

#endif

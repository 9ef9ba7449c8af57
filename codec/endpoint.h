/* endpoint.h — what an estimate endpoint is, to the server and the CLI alike.
 *
 * An endpoint is two pure functions over JSON: `normalize` decodes a request body strictly and
 * encodes it back in full (defaults filled, presets resolved), and `evaluate` computes the
 * response from a normalized request. The server hashes the normalized request for its cache;
 * the CLI calls the same two functions, so both give the same answer.
 *
 * Anatomy of a new endpoint: write codec/<name>_codec.c with the two functions and a
 * `const codec_endpoint_t codec_<name>_endpoint = {"<name>", "/v1/<name>", normalize, evaluate};`,
 * declare it below and add it to the table in endpoint.c. */
#ifndef FATHOM_ENDPOINT_H
#define FATHOM_ENDPOINT_H

#include <jansson.h>
#include <stddef.h>

#include "fathom_error.h"
#include "presets.h"

typedef struct {
    const codec_presets_t *presets; /* never NULL; may be empty */
} codec_ctx_t;

typedef struct {
    const char *name; /* also the namespace of its config hashes: "transformer" */
    const char *path; /* "/v1/transformer" */
    /* Decodes body; returns the normalized request (new reference) or NULL with err filled. */
    json_t *(*normalize)(const json_t *body, const codec_ctx_t *ctx, fathom_error_t *err);
    /* Computes the response of a normalized request (new reference) or NULL with err filled. */
    json_t *(*evaluate)(const json_t *normalized, const codec_ctx_t *ctx, fathom_error_t *err);
} codec_endpoint_t;

extern const codec_endpoint_t codec_transformer_endpoint;
extern const codec_endpoint_t codec_estimate_endpoint;          /* codec/llm_estimate.c */
extern const codec_endpoint_t codec_scaling_endpoint;           /* codec/scaling_codec.c */
extern const codec_endpoint_t codec_scaling_fit_endpoint;       /* codec/scaling_fit_codec.c */
extern const codec_endpoint_t codec_goodput_evaluate_endpoint;  /* codec/goodput_codec.c */
extern const codec_endpoint_t codec_goodput_optimize_endpoint;  /* codec/goodput_codec.c */
extern const codec_endpoint_t codec_goodput_fit_endpoint;       /* codec/goodput_fit_codec.c */
extern const codec_endpoint_t codec_calibrate_endpoint;         /* codec/calibrate_codec.c */
extern const codec_endpoint_t codec_hf_config_endpoint;         /* codec/hf_config_endpoint.c */
extern const codec_endpoint_t codec_inference_endpoint;         /* codec/serving_codec.c */

/* The table of every endpoint, and a lookup by name or by path. NULL when unknown. */
const codec_endpoint_t *const *codec_endpoints(size_t *count);
const codec_endpoint_t *codec_endpoint_by_name(const char *name);
const codec_endpoint_t *codec_endpoint_by_path(const char *path);

#endif

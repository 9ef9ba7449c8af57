/* model_codec.h — the "model" member shared by every estimate endpoint: a preset name or an
 * object with Calculon's field names (see core/common/model.h), decoded strictly and encoded
 * back in full (the normalized form). */
#ifndef FATHOM_MODEL_CODEC_H
#define FATHOM_MODEL_CODEC_H

#include <jansson.h>

#include "fathom_error.h"
#include "model.h"
#include "presets.h"

/* Upper bounds on model dimensions: generous for any real model, small enough that products
 * of them stay far below 2^63 and 2^53 where the estimators multiply them. */
#define MODEL_MAX_DIM 1048576      /* hidden, feedforward, seq_size, attn_size, vocab_size: 2^20 */
#define MODEL_MAX_HEADS 65536
#define MODEL_MAX_BLOCKS 16384

/* The weight formats a model's checkpoint_weights or a serving request may name ("bf16", "fp8",
 * "fp4", "int4", "nvfp4", "mxfp4"), and the format each index names ("nvfp4" is "fp4"). */
extern const char *const codec_weights_format_names[];
model_weights_t codec_weights_format(int index);
/* The name a format is written back as ("fp4" for NVFP4). */
const char *codec_weights_format_name(model_weights_t w);

/* Decodes v (a preset name or an object) at `path` into *out. */
int codec_model_decode(const json_t *v, const char *path, const codec_presets_t *presets,
                       fathom_model_t *out, fathom_error_t *err);
/* The normalized object, every field explicit (new reference). */
json_t *codec_model_encode(const fathom_model_t *m);

#endif

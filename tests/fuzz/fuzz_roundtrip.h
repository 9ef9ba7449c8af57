/* fuzz_roundtrip.h — the decode → encode → decode → encode check that the model, system and
 * execution targets share: whatever a decoder accepts, its encoding must decode again to the
 * same encoding (the normalized form is a fixed point, so the config hash is stable). */
#ifndef FATHOM_FUZZ_ROUNDTRIP_H
#define FATHOM_FUZZ_ROUNDTRIP_H

#include <jansson.h>

#include "fathom_error.h"

/* Decodes v at `path` into the struct at out (the codec's own decoder, adapted); 0 or -1. */
typedef int (*fuzz_decode_fn)(const json_t *v, const char *path, void *out, fathom_error_t *err);
/* Encodes the struct (new reference, NULL on allocation failure). */
typedef json_t *(*fuzz_encode_fn)(const void *in);

/* Runs the round trip on v with a scratch struct of `size` bytes (at most 64 KiB); aborts when
 * the second decode refuses the encoding or the two encodings differ. */
void fuzz_roundtrip(const char *what, const json_t *v, size_t size, fuzz_decode_fn decode,
                    fuzz_encode_fn encode);

#endif

/* error_codec.h — the one encoder of Fathom's error object, used by every answer that carries
 * one: an HTTP error body ({"error": …}), a grid point the model refused, a failed sweep's
 * "error" (schemas/error.json).
 *
 *   {"code": wire name (fathom_error.h), "message": the reason (the code's name when empty),
 *    "field": JSON path — always present for invalid_field, infeasible_execution and
 *             limit_exceeded ("" is the body itself), else only when set,
 *    "line", "column": where the body stopped parsing (invalid_json with a position only)}
 *
 * Messages and field paths may quote what a client sent: bytes that are not UTF-8 are written as
 * \xHH (the four characters), so the object can always be encoded. */
#ifndef FATHOM_ERROR_CODEC_H
#define FATHOM_ERROR_CODEC_H

#include <jansson.h>

#include "fathom_error.h"

/* The error object (new reference), or NULL when memory ran out. */
json_t *codec_error_encode(const fathom_error_t *err);

/* Reads an error object back (a stored sweep's failure) into *err. A text that is not one
 * (older rows kept a bare message) becomes FATHOM_E_INTERNAL with the text as its message.
 * 0, or -1 when memory ran out. */
int codec_error_decode(const char *text, fathom_error_t *err);

/* text as valid UTF-8: each byte that does not start or continue a valid sequence becomes
 * \xHH. Writes at most cap bytes (cut at a character boundary) with a terminating NUL. */
void codec_utf8_clean(const char *text, char *out, size_t cap);

#endif

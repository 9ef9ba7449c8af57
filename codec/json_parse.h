/* json_parse.h — turning request bytes into a JSON value, with Fathom's limits.
 *
 * Shared by the server, the CLI and the fuzzers so that all three refuse the same inputs the
 * same way: malformed JSON, invalid UTF-8, duplicate keys and NaN/Infinity literals are
 * invalid_json (400) with the line and column; nesting deeper than CODEC_MAX_DEPTH is refused
 * before jansson builds anything. An integer too long for int64 is read as a real (the double of
 * the same digits with an exponent): valid for real fields, refused by integer fields (2^53). */
#ifndef FATHOM_JSON_PARSE_H
#define FATHOM_JSON_PARSE_H

#include <jansson.h>
#include <stddef.h>

#include "fathom_error.h"

#define CODEC_MAX_DEPTH 32
#define CODEC_MAX_BODY_BYTES (1024 * 1024)

/* Parses buf[0..len) (need not be NUL-terminated). New reference, or NULL with err filled. */
json_t *codec_parse_body(const char *buf, size_t len, fathom_error_t *err);

#endif

/* canonical.h — the one canonical text of a JSON value and the config hash built on it.
 *
 * Two requests that mean the same thing must hash alike. Decoders produce a normalized request
 * (defaults filled, presets resolved); this module then fixes the text: keys sorted, no
 * whitespace, reals printed with 17 significant digits (enough to round-trip every double), and
 * hashes "fathom/<endpoint>/<estimator version>\n<canonical text>" with SHA-256 (libsodium). */
#ifndef FATHOM_CANONICAL_H
#define FATHOM_CANONICAL_H

#include <jansson.h>
#include <stddef.h>

#include "estimator_digest.h" /* generated: FATHOM_ESTIMATOR_DIGEST */

/* Part of every config hash, so results cached by another estimator are never served: the major
 * number, bumped by hand when answers change shape (2: estimates and search entries carry
 * warnings), and the digest of every source and preset file an answer depends on, which changes
 * with any change to them (cmake/estimator_digest.cmake). Recorded with each stored result. */
#define FATHOM_ESTIMATOR_VERSION "2+" FATHOM_ESTIMATOR_DIGEST

#define CODEC_HASH_HEX_LEN 64

/* Canonical text of v (malloc'd; caller frees with free()). NULL on allocation failure. */
char *codec_canonical_dump(const json_t *v);

/* Fills out (CODEC_HASH_HEX_LEN + 1 bytes) with the lowercase hex SHA-256 config hash of a
 * normalized request for `endpoint`. Returns 0, or -1 on allocation failure. */
int codec_config_hash(const char *endpoint, const json_t *normalized, char *out);

/* True when s is 64 lowercase hex digits (the shape of a config hash). */
int codec_is_hash(const char *s);

#endif

/* canonical.c — canonical JSON text and SHA-256 config hashes (see canonical.h). */
#include "canonical.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#define CANONICAL_FLAGS (JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17) | JSON_ENSURE_ASCII)

char *codec_canonical_dump(const json_t *v)
{
    return json_dumps(v, CANONICAL_FLAGS | JSON_ENCODE_ANY);
}

int codec_config_hash(const char *endpoint, const json_t *normalized, char *out)
{
    char *text = codec_canonical_dump(normalized);
    if (!text)
        return -1;
    crypto_hash_sha256_state st;
    unsigned char digest[crypto_hash_sha256_BYTES];
    static const char prefix[] = "fathom/";
    static const char version[] = "/" FATHOM_ESTIMATOR_VERSION "\n";
    crypto_hash_sha256_init(&st);
    crypto_hash_sha256_update(&st, (const unsigned char *)prefix, sizeof prefix - 1);
    crypto_hash_sha256_update(&st, (const unsigned char *)endpoint, strlen(endpoint));
    crypto_hash_sha256_update(&st, (const unsigned char *)version, sizeof version - 1);
    crypto_hash_sha256_update(&st, (const unsigned char *)text, strlen(text));
    crypto_hash_sha256_final(&st, digest);
    free(text);
    sodium_bin2hex(out, CODEC_HASH_HEX_LEN + 1, digest, sizeof digest);
    return 0;
}

int codec_is_hash(const char *s)
{
    if (!s || strlen(s) != CODEC_HASH_HEX_LEN)
        return 0;
    for (const char *p = s; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return 0;
    return 1;
}

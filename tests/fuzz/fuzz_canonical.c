/* fuzz_canonical.c — libFuzzer target for the canonical text and config hash (codec/canonical.h)
 * of any JSON the body parser accepts. Invariants: the canonical text parses back, and dumping
 * the re-parsed value gives the same text and the same hash (otherwise one request could be
 * cached under two ids); the hash is 64 lowercase hex digits. */
#include <stdlib.h>
#include <string.h>

#include "canonical.h"
#include "fuzz_common.h"
#include "json_parse.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

__attribute__((noreturn)) static void fail(const char *why, const char *a, const char *b)
{
    fuzz_fail("canonical: %s\n%s\n%s", why, a ? a : "", b ? b : "");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *v = fuzz_parse(data, size);
    if (!v)
        return 0;
    char *text = codec_canonical_dump(v);
    if (!text)
        fail("dump failed", NULL, NULL);
    /* Parsed again as a request body would be: the canonical text is within every limit the
     * original was within (same depth; ASCII escapes only grow strings, inputs are small). */
    fathom_error_t err;
    fathom_error_clear(&err);
    json_t *back = codec_parse_body(text, strlen(text), &err);
    if (!back)
        fail("the canonical text does not parse", text, err.message);
    char *again = codec_canonical_dump(back);
    if (!again || strcmp(text, again) != 0)
        fail("re-parsing and re-dumping changed the text", text, again);

    char h1[CODEC_HASH_HEX_LEN + 1], h2[CODEC_HASH_HEX_LEN + 1];
    if (codec_config_hash("fuzz", v, h1) || codec_config_hash("fuzz", back, h2))
        fail("hash failed", text, NULL);
    if (!codec_is_hash(h1) || strcmp(h1, h2) != 0)
        fail("hashes differ or are malformed", h1, h2);
    free(text);
    free(again);
    json_decref(back);
    json_decref(v);
    return 0;
}

/* fuzz_roundtrip.c — the decode/encode fixed-point check (see fuzz_roundtrip.h). */
#include "fuzz_roundtrip.h"

#include <stdlib.h>
#include <string.h>

#include "canonical.h"
#include "fuzz_common.h"

#define SCRATCH_MAX 65536

void fuzz_roundtrip(const char *what, const json_t *v, size_t size, fuzz_decode_fn decode,
                    fuzz_encode_fn encode)
{
    if (size > SCRATCH_MAX)
        fuzz_fail("%s: scratch struct too large", what);
    /* Two scratch structs, so the second decode cannot lean on what the first left behind. */
    void *a = calloc(1, size), *b = calloc(1, size);
    json_t *ea = NULL, *eb = NULL;
    char *ta = NULL, *tb = NULL;
    if (!a || !b)
        fuzz_fail("%s: out of memory", what);
    fathom_error_t err;
    fathom_error_clear(&err);
    if (decode(v, "x", a, &err)) {
        fuzz_check_refusal(what, &err);
        goto out;
    }
    if (!(ea = encode(a)))
        fuzz_fail("%s: encoding an accepted value failed", what);
    fathom_error_clear(&err);
    if (decode(ea, "x", b, &err))
        fuzz_fail("%s: the decoder refuses its own encoding: %s: %s", what, err.field, err.message);
    if (!(eb = encode(b)))
        fuzz_fail("%s: encoding the decoded encoding failed", what);
    ta = codec_canonical_dump(ea);
    tb = codec_canonical_dump(eb);
    if (!ta || !tb)
        fuzz_fail("%s: canonical dump failed", what);
    if (strcmp(ta, tb) != 0)
        fuzz_fail("%s: the encoding is not a fixed point:\n%s\n%s", what, ta, tb);
out:
    free(ta);
    free(tb);
    json_decref(ea);
    json_decref(eb);
    free(a);
    free(b);
}

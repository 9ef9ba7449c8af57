/* fuzz_common.c — the helpers every fuzz target shares (see fuzz_common.h). */
#include "fuzz_common.h"

#include <gsl/gsl_errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "canonical.h"
#include "json_parse.h"
#include "presets.h"

/* The registry is immutable once loaded and lives for the whole process, like the server's. */
static codec_presets_t *presets;
static codec_ctx_t ctx;

void fuzz_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("fuzz: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

void fuzz_init(void)
{
    if (presets)
        return;
    /* As fathomd and the CLI do: GSL reports errors by status, never by abort(). */
    gsl_set_error_handler_off();
    const char *dir = getenv("FATHOM_PRESETS");
    if (!dir)
        dir = access("presets/models", R_OK) == 0 ? "presets" : FATHOM_DATADIR "/presets";
    fathom_error_t err;
    fathom_error_clear(&err);
    presets = codec_presets_load(dir, &err);
    if (!presets)
        fuzz_fail("cannot load presets from %s: %s", dir, err.message);
    ctx.presets = presets;
}

const codec_ctx_t *fuzz_ctx(void)
{
    return &ctx;
}

void fuzz_check_refusal(const char *what, const fathom_error_t *err)
{
    if (err->code == FATHOM_E_OK || err->code >= FATHOM_E__COUNT)
        fuzz_fail("%s failed without an error code (field \"%s\")", what, err->field);
    if (err->code == FATHOM_E_INTERNAL)
        fuzz_fail("%s gave an internal error: %s", what, err->message);
    if (err->message[0] == '\0')
        fuzz_fail("%s refused with an empty message (field \"%s\")", what, err->field);
}

void fuzz_check_names_field(const char *what, const json_t *body, const fathom_error_t *err)
{
    /* A member named "" at the top level is named by the empty path: that is not a finding. */
    if (err->code == FATHOM_E_INVALID_FIELD && json_is_object(body) && err->field[0] == '\0' &&
        !json_object_get(body, ""))
        fuzz_fail("%s: invalid_field without a field: %s", what, err->message);
}

json_t *fuzz_parse(const uint8_t *data, size_t size)
{
    fathom_error_t err;
    fathom_error_clear(&err);
    json_t *v = codec_parse_body((const char *)data, size, &err);
    if (!v)
        fuzz_check_refusal("codec_parse_body", &err);
    return v;
}

const codec_endpoint_t *fuzz_endpoint_named(const char *name)
{
    const codec_endpoint_t *ep = codec_endpoint_by_name(name);
    if (!ep)
        fuzz_fail("this build has no endpoint %s", name);
    return ep;
}

void fuzz_endpoint(const codec_endpoint_t *ep, const json_t *body)
{
    fathom_error_t err;
    fathom_error_clear(&err);
    json_t *norm = ep->normalize(body, &ctx, &err);
    if (!norm) {
        fuzz_check_refusal(ep->name, &err);
        fuzz_check_names_field(ep->name, body, &err);
        return;
    }

    /* Normalization is idempotent: the normalized request is itself a valid request, and
     * normalizes to the same canonical text (otherwise the cache would split one request). */
    fathom_error_clear(&err);
    json_t *again = ep->normalize(norm, &ctx, &err);
    if (!again)
        fuzz_fail("%s refuses its own normalized request: %s: %s", ep->name, err.field, err.message);
    char *a = codec_canonical_dump(norm), *b = codec_canonical_dump(again);
    if (!a || !b)
        fuzz_fail("%s: canonical dump failed", ep->name);
    if (strcmp(a, b) != 0)
        fuzz_fail("%s: normalizing the normalized request changed it:\n%s\n%s", ep->name, a, b);
    free(a);
    free(b);
    json_decref(again);

    fathom_error_clear(&err);
    json_t *res = ep->evaluate(norm, &ctx, &err);
    if (res) {
        /* The response is what the server serializes: it must dump. */
        char *text = json_dumps(res, JSON_COMPACT);
        if (!text)
            fuzz_fail("%s: the response cannot be serialized", ep->name);
        free(text);
        json_decref(res);
    } else {
        fuzz_check_refusal(ep->name, &err);
    }
    json_decref(norm);
}

/* error_codec.c — Fathom's error object, encoded once (see error_codec.h). */
#include "error_codec.h"

#include <stdio.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when s[0] does not start one (RFC 3629:
 * no overlong forms, no surrogates, nothing above U+10FFFF). */
static size_t utf8_len(const unsigned char *s)
{
    unsigned c = s[0];
    size_t n;
    unsigned min;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF)
        n = 3, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4)
        n = 4, min = 0x10000;
    else
        return 0;
    unsigned cp = c & (0x7F >> n);
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

void codec_utf8_clean(const char *text, char *out, size_t cap)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t at = 0;
    if (cap == 0)
        return;
    while (*s) {
        size_t n = utf8_len(s);
        char esc[5];
        const char *piece = (const char *)s;
        size_t len = n;
        if (n == 0) {
            snprintf(esc, sizeof esc, "\\x%02X", s[0]);
            piece = esc;
            len = 4;
        }
        if (at + len >= cap)
            break;
        memcpy(out + at, piece, len);
        at += len;
        s += n ? n : 1;
    }
    out[at] = '\0';
}

json_t *codec_error_encode(const fathom_error_t *err)
{
    char message[FATHOM_ERROR_MESSAGE_MAX * 4], field[FATHOM_ERROR_FIELD_MAX * 4];
    codec_utf8_clean(err->message[0] ? err->message : fathom_code_name(err->code), message,
                     sizeof message);
    codec_utf8_clean(err->field, field, sizeof field);
    json_t *e = json_pack("{s:s,s:s}", "code", fathom_code_name(err->code), "message", message);
    int rc = e ? 0 : -1;
    /* Field errors always name their field; "" is the request body itself. */
    if (!rc && (err->field[0] || err->code == FATHOM_E_INVALID_FIELD ||
                err->code == FATHOM_E_INFEASIBLE_EXECUTION ||
                err->code == FATHOM_E_LIMIT_EXCEEDED))
        rc = json_object_set_new(e, "field", json_string(field));
    if (!rc && err->code == FATHOM_E_INVALID_JSON && err->line > 0)
        rc = json_object_set_new(e, "line", json_integer(err->line)) ||
             json_object_set_new(e, "column", json_integer(err->column));
    if (rc) {
        json_decref(e);
        return NULL;
    }
    return e;
}

int codec_error_decode(const char *text, fathom_error_t *err)
{
    fathom_error_clear(err);
    json_error_t jerr;
    json_t *e = json_loads(text, 0, &jerr);
    if (!e && json_error_code(&jerr) == json_error_out_of_memory)
        return -1;
    const char *code = json_string_value(json_object_get(e, "code"));
    const char *message = json_string_value(json_object_get(e, "message"));
    fathom_code_t c = FATHOM_E__COUNT;
    for (int i = 0; code && i < FATHOM_E__COUNT; i++)
        if (strcmp(fathom_code_name((fathom_code_t)i), code) == 0)
            c = (fathom_code_t)i;
    if (!json_is_object(e) || c == FATHOM_E__COUNT || !message) {
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "%s", text);
    } else {
        fathom_error_set(err, c, json_string_value(json_object_get(e, "field")), "%s", message);
        err->line = (int)json_integer_value(json_object_get(e, "line"));
        err->column = (int)json_integer_value(json_object_get(e, "column"));
    }
    json_decref(e);
    return 0;
}

/* json_parse.c — request body parsing with depth and size limits (see json_parse.h). */
#include "json_parse.h"

#include <string.h>

/* Deepest nesting of arrays/objects in buf, counting only brackets outside strings. Stops
 * counting once past limit, so the scan is linear and bounded whatever the input. */
static int nesting_exceeds(const char *buf, size_t len, int limit, int *line, int *column)
{
    int depth = 0, in_string = 0, escaped = 0, ln = 1, col = 0;
    for (size_t i = 0; i < len; i++) {
        char c = buf[i];
        col++;
        if (c == '\n') {
            ln++;
            col = 0;
        }
        if (in_string) {
            if (escaped)
                escaped = 0;
            else if (c == '\\')
                escaped = 1;
            else if (c == '"')
                in_string = 0;
            continue;
        }
        if (c == '"')
            in_string = 1;
        else if (c == '[' || c == '{') {
            if (++depth > limit) {
                *line = ln;
                *column = col;
                return 1;
            }
        } else if (c == ']' || c == '}')
            depth--;
    }
    return 0;
}

json_t *codec_parse_body(const char *buf, size_t len, fathom_error_t *err)
{
    if (len > CODEC_MAX_BODY_BYTES) {
        fathom_error_set(err, FATHOM_E_BODY_TOO_LARGE, NULL,
                         "request body is %zu bytes; the limit is %d", len, CODEC_MAX_BODY_BYTES);
        return NULL;
    }
    size_t i = 0;
    while (i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\n' || buf[i] == '\r'))
        i++;
    if (i == len) {
        fathom_error_set(err, FATHOM_E_INVALID_JSON, NULL, "request body is empty; send a JSON object");
        return NULL;
    }
    int line = 0, column = 0;
    if (nesting_exceeds(buf, len, CODEC_MAX_DEPTH, &line, &column)) {
        fathom_error_set(err, FATHOM_E_INVALID_JSON, NULL, "JSON nests deeper than %d levels",
                         CODEC_MAX_DEPTH);
        err->line = line;
        err->column = column;
        return NULL;
    }
    json_error_t jerr;
    json_t *v = json_loadb(buf, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
    if (!v) {
        fathom_error_set(err, FATHOM_E_INVALID_JSON, NULL, "%s", jerr.text);
        err->line = jerr.line;
        err->column = jerr.column;
        return NULL;
    }
    return v;
}

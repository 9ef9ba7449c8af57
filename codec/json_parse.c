/* json_parse.c — request body parsing with depth and size limits (see json_parse.h). */
#include "json_parse.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Where a scan of raw JSON text stands with respect to strings, whose brackets and digits are
 * not structure. */
typedef struct {
    bool in_string, escaped;
} string_scan_t;

/* Whether c belongs to a string (its quotes included), moving the scan past it. */
static bool string_char(string_scan_t *s, char c)
{
    if (s->in_string) {
        if (s->escaped)
            s->escaped = false;
        else if (c == '\\')
            s->escaped = true;
        else if (c == '"')
            s->in_string = false;
        return true;
    }
    if (c == '"')
        s->in_string = true;
    return s->in_string;
}

/* Deepest nesting of arrays/objects in buf, counting only brackets outside strings. Stops
 * counting once past limit, so the scan is linear and bounded whatever the input. */
static int nesting_exceeds(const char *buf, size_t len, int limit, int *line, int *column)
{
    string_scan_t strings = {false, false};
    int depth = 0, ln = 1, col = 0;
    for (size_t i = 0; i < len; i++) {
        char c = buf[i];
        col++;
        if (c == '\n') {
            ln++;
            col = 0;
        }
        if (string_char(&strings, c))
            continue;
        if (c == '[' || c == '{') {
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

/* A JSON integer of 19 or more digits may not fit jansson's int64, which then refuses the whole
 * document; yet such a number is a valid value for a real field (flops = 10^20). Returns a copy
 * of buf with ".0" after each such integer, so jansson reads it as the double strtod gives for the
 * same digits -- exactly the value written with an exponent -- or NULL when there is none (or no
 * memory: then jansson's own error stands). Counts still refuse it: past 2^53 they are not exact. */
#define LONG_INT_DIGITS 19
#define MAX_WIDENED 64
static char *widen_long_integers(const char *buf, size_t len, size_t *out_len, size_t *cuts,
                                 size_t *out_ncuts)
{
    size_t ncuts = 0;
    string_scan_t strings = {false, false};
    for (size_t i = 0; i < len; i++) {
        char c = buf[i];
        if (string_char(&strings, c))
            continue;
        if (c != '-' && (c < '0' || c > '9'))
            continue;
        /* outside strings a digit or '-' starts a number: read its integer part, then the rest */
        size_t j = i + (c == '-');
        size_t start = j;
        while (j < len && buf[j] >= '0' && buf[j] <= '9')
            j++;
        int integral = j >= len || (buf[j] != '.' && buf[j] != 'e' && buf[j] != 'E');
        if (integral && j - start >= LONG_INT_DIGITS) {
            if (ncuts == MAX_WIDENED)
                return NULL;
            cuts[ncuts++] = j;
        }
        while (j < len && buf[j] && strchr("0123456789.eE+-", buf[j]))
            j++;
        i = j - 1;
    }
    if (ncuts == 0)
        return NULL;
    char *out = malloc(len + 2 * ncuts);
    if (!out)
        return NULL;
    size_t o = 0, from = 0;
    for (size_t k = 0; k < ncuts; k++) {
        memcpy(out + o, buf + from, cuts[k] - from);
        o += cuts[k] - from;
        memcpy(out + o, ".0", 2);
        o += 2;
        from = cuts[k];
    }
    memcpy(out + o, buf + from, len - from);
    *out_len = o + len - from;
    *out_ncuts = ncuts;
    return out;
}

/* jansson's column of an error in the widened text, as a column of the client's own text: less
 * the ".0"s inserted on the error's line before it (insertions never add lines). */
static int client_column(const char *buf, size_t len, const size_t *cuts, size_t ncuts,
                         size_t wide_pos, int column)
{
    size_t k = 0;
    while (k < ncuts && cuts[k] + 2 * (k + 1) <= wide_pos)
        k++;
    size_t orig = wide_pos - 2 * k; /* the error's offset in buf */
    if (orig > len) /* an error inside a ".0" inserted at the very end */
        orig = len;
    for (size_t i = 0; i < k; i++)
        if (!memchr(buf + cuts[i], '\n', orig - cuts[i]))
            column -= 2;
    return column;
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
    size_t wide_len = 0, cuts[MAX_WIDENED], ncuts = 0;
    char *wide = widen_long_integers(buf, len, &wide_len, cuts, &ncuts);
    json_t *v = json_loadb(wide ? wide : buf, wide ? wide_len : len,
                           JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
    int widened = wide != NULL;
    free(wide);
    if (!v) {
        fathom_error_set(err, FATHOM_E_INVALID_JSON, NULL, "%s", jerr.text);
        err->line = jerr.line;
        err->column = widened ? client_column(buf, len, cuts, ncuts, (size_t)jerr.position,
                                              jerr.column)
                              : jerr.column;
        return NULL;
    }
    return v;
}

/* calibrate_nccl.c — the reader of nccl-tests' tables (format in calibrate_codec.h). Strict: a
 * line that is neither a comment, blank, NCCL's log nor a row of the table is an error naming
 * its number, so a paste cut in the middle of a line or of another tool is refused, not
 * half-read. */
#include "calibrate_codec.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TOKENS 16
#define MAX_LINE 1024

static int split(char *line, char **tok, int cap)
{
    int n = 0;
    char *save = NULL;
    for (char *p = strtok_r(line, " \t\r", &save); p; p = strtok_r(NULL, " \t\r", &save)) {
        if (n == cap)
            return cap + 1;
        tok[n++] = p;
    }
    return n;
}

static bool read_real(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v))
        return false;
    *out = v;
    return true;
}

static bool read_count(const char *s, double *out)
{
    for (const char *p = s; *p; p++)
        if (!isdigit((unsigned char)*p))
            return false;
    return *s && read_real(s, out);
}

/* "#wrong": an integer (*wrong), or N/A when nccl-tests ran without checking (-c 0; *wrong 0). */
static bool read_wrong(const char *s, double *wrong)
{
    *wrong = 0;
    return strcmp(s, "N/A") == 0 || read_count(s, wrong);
}

static int bad(fathom_error_t *err, const char *path, int line, const char *what)
{
    return fathom_error_set(err, FATHOM_E_INVALID_FIELD, path, "line %d: %s", line, what);
}

int codec_nccl_parse(const char *text, const char *path, codec_nccl_table_t *out,
                     fathom_error_t *err)
{
    out->n_rows = 0;
    out->avg_busbw_gbps = NAN;
    int lineno = 0;
    for (const char *p = text; *p;) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        lineno++;
        char line[MAX_LINE];
        if (len >= sizeof line)
            return bad(err, path, lineno, "longer than 1023 characters");
        memcpy(line, p, len);
        line[len] = 0;
        p = eol ? eol + 1 : p + len;

        const char *s = line;
        while (*s == ' ' || *s == '\t' || *s == '\r')
            s++;
        if (!*s || strstr(s, "NCCL INFO") || strstr(s, "NCCL WARN"))
            continue;
        if (*s == '#') {
            /* "# Avg bus bandwidth    : 92.1234" */
            const char *avg = strstr(s, "Avg bus bandwidth");
            if (avg) {
                const char *colon = strchr(avg, ':');
                char *end;
                double v = colon ? strtod(colon + 1, &end) : NAN;
                if (!colon || end == colon + 1 || !isfinite(v) || v < 0)
                    return bad(err, path, lineno, "the Avg bus bandwidth line has no number");
                out->avg_busbw_gbps = v;
            }
            continue;
        }
        char *tok[MAX_TOKENS + 1];
        int n = split(line, tok, MAX_TOKENS);
        /* size count type, then redop and root (both, one or neither, by nccl-tests' version),
         * then 4 out-of-place and 4 in-place columns. */
        if (n < 11 || n > 13)
            return bad(err, path, lineno,
                       "expected a row of nccl-tests' table (size count type [redop [root]] "
                       "time algbw busbw #wrong time algbw busbw #wrong), got something else");
        codec_nccl_row_t r = {.line = lineno};
        if (!read_count(tok[0], &r.bytes))
            return bad(err, path, lineno, "the size column is not a whole number of bytes");
        if (!read_count(tok[1], &r.count))
            return bad(err, path, lineno, "the count column is not a whole number");
        double v;
        if (read_real(tok[2], &v))
            return bad(err, path, lineno, "the type column is a number, not a type name");
        char **c = tok + n - 8;
        double t, a, b, ti, ai, bi, wrong, wrong_in;
        if (!read_real(c[0], &t) || !read_real(c[1], &a) || !read_real(c[2], &b) ||
            !read_wrong(c[3], &wrong) || !read_real(c[4], &ti) || !read_real(c[5], &ai) ||
            !read_real(c[6], &bi) || !read_wrong(c[7], &wrong_in))
            return bad(err, path, lineno,
                       "time, algbw, busbw and #wrong (out of place, then in place) must be "
                       "numbers");
        /* nccl-tests counts the elements a collective got wrong: a row with any is a faulty
         * collective (a bad link, a bad GPU), whose time says nothing about the network. */
        if (wrong > 0 || wrong_in > 0)
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, path,
                                    "line %d: nccl-tests counted %.0f wrong elements: the "
                                    "collective gave wrong results, so its time is not a "
                                    "measurement to fit (leave the row out, or rerun once the "
                                    "cluster is fixed)",
                                    lineno, wrong > 0 ? wrong : wrong_in);
        if (!(t > 0) || !(ti > 0) || a < 0 || b < 0 || ai < 0 || bi < 0)
            return bad(err, path, lineno, "times must be > 0 and bandwidths >= 0");
        if (!(r.bytes > 0))
            continue; /* a size-0 row (minBytes 0) times only the launch: nothing to fit */
        if (out->n_rows == CODEC_NCCL_MAX_ROWS)
            return fathom_error_set(err, FATHOM_E_LIMIT_EXCEEDED, path,
                                    "line %d: more than %d rows", lineno, CODEC_NCCL_MAX_ROWS);
        r.time_s = t * 1e-6; /* nccl-tests prints µs */
        r.algbw_gbps = a;
        r.busbw_gbps = b;
        r.time_in_s = ti * 1e-6;
        r.algbw_in_gbps = ai;
        r.busbw_in_gbps = bi;
        out->rows[out->n_rows++] = r;
    }
    if (out->n_rows == 0)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, path,
                                "no row of nccl-tests' table in its %d lines", lineno);
    return 0;
}

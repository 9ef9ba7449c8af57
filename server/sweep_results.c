/* sweep_results.c — GET /v1/sweep/<id>/results: every point of a grid sweep, or the ranked
 * executions of a search, a page at a time, as JSON or CSV (a header row, then one row a point:
 * its index, a column per axis, its status, and a column per statistic). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "canonical.h"
#include "llm_codec.h"
#include "search_sweep_codec.h"
#include "sweeps_internal.h"

typedef struct {
    char *buf;
    size_t len, cap;
    int failed;
} csv_t;

static void csv_raw(csv_t *c, const char *s, size_t n)
{
    if (c->failed)
        return;
    if (c->len + n + 1 > c->cap) {
        size_t cap = c->cap ? c->cap : 65536;
        while (cap < c->len + n + 1)
            cap *= 2;
        char *nb = realloc(c->buf, cap);
        if (!nb) {
            c->failed = 1;
            return;
        }
        c->buf = nb;
        c->cap = cap;
    }
    memcpy(c->buf + c->len, s, n);
    c->len += n;
    c->buf[c->len] = '\0';
}

/* One field, quoted when it holds a comma, quote or line break (RFC 4180). */
static void csv_field(csv_t *c, const char *s, int first)
{
    if (!first)
        csv_raw(c, ",", 1);
    if (!strpbrk(s, ",\"\r\n")) {
        csv_raw(c, s, strlen(s));
        return;
    }
    csv_raw(c, "\"", 1);
    for (const char *p = s; *p; p++) {
        if (*p == '"')
            csv_raw(c, "\"", 1);
        csv_raw(c, p, 1);
    }
    csv_raw(c, "\"", 1);
}

static void csv_value(csv_t *c, const json_t *v, int first)
{
    char num[64];
    if (!v || json_is_null(v)) {
        csv_field(c, "", first);
    } else if (json_is_string(v)) {
        csv_field(c, json_string_value(v), first);
    } else if (json_is_integer(v)) {
        snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
        csv_field(c, num, first);
    } else if (json_is_real(v)) {
        snprintf(num, sizeof num, "%.17g", json_real_value(v));
        csv_field(c, num, first);
    } else if (json_is_boolean(v)) {
        csv_field(c, json_is_true(v) ? "true" : "false", first);
    } else {
        char *t = json_dumps(v, JSON_COMPACT);
        csv_field(c, t ? t : "", first);
        free(t);
    }
}

/* Hands over the page built: the CSV text or the JSON points (the other is freed). */
static int finish_page(csv_t *csv, json_t *points, int as_csv, json_t **out_json, char **out_csv)
{
    if (!as_csv) {
        free(csv->buf);
        *out_json = points;
        return 0;
    }
    json_decref(points);
    if (csv->failed) {
        free(csv->buf);
        return -1;
    }
    *out_csv = csv->buf ? csv->buf : strdup("");
    return 0;
}

static json_t *stat_names(void)
{
    llm_stats_t zero;
    memset(&zero, 0, sizeof zero);
    return codec_llm_stats_encode(&zero);
}

static void csv_stats(csv_t *c, const json_t *names, const json_t *stats)
{
    const char *key;
    json_t *unused;
    json_object_foreach((json_t *)names, key, unused) csv_value(c, json_object_get(stats, key), 0);
}

static int grid_page(sweeps_t *s, db_conn_t *c, const char *id, const json_t *spec,
                     long long offset, long long limit, int as_csv, json_t **out_json,
                     char **out_csv)
{
    (void)s;
    const char *axes[SWEEP_GRID_MAX_AXES];
    int naxes = codec_grid_axes(spec, axes);
    json_t *names = stat_names();
    csv_t csv = {0};
    json_t *points = json_array();
    if (as_csv) {
        csv_field(&csv, "index", 1);
        for (int i = 0; i < naxes; i++)
            csv_field(&csv, axes[i], 0);
        csv_field(&csv, "status", 0);
        csv_field(&csv, "fits_memory", 0);
        csv_field(&csv, "error", 0);
        const char *key;
        json_t *unused;
        json_object_foreach(names, key, unused) csv_field(&csv, key, 0);
        csv_raw(&csv, "\r\n", 2);
    }
    sqlite3_stmt *st = db_stmt(c, DB_POINT_PAGE);
    if (!st) {
        json_decref(names);
        json_decref(points);
        free(csv.buf);
        return -1;
    }
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, offset);
    sqlite3_bind_int64(st, 3, limit);
    while (sqlite3_step(st) == SQLITE_ROW) {
        long long idx = sqlite3_column_int64(st, 0);
        int status = sqlite3_column_int(st, 2);
        json_t *values = json_loads((const char *)sqlite3_column_text(st, 1), 0, NULL);
        json_t *resp = json_loads((const char *)sqlite3_column_text(st, 3), 0, NULL);
        if (as_csv) {
            char num[32];
            snprintf(num, sizeof num, "%lld", idx);
            csv_field(&csv, num, 1);
            for (int i = 0; i < naxes; i++)
                csv_value(&csv, json_object_get(values, axes[i]), 0);
            snprintf(num, sizeof num, "%d", status);
            csv_field(&csv, num, 0);
            csv_value(&csv, json_object_get(resp, "fits_memory"), 0);
            json_t *e = json_object_get(resp, "error");
            csv_value(&csv, e ? json_object_get(e, "message") : NULL, 0);
            csv_stats(&csv, names, json_object_get(resp, "stats"));
            csv_raw(&csv, "\r\n", 2);
        } else {
            json_t *p = json_pack("{s:I,s:O*,s:i}", "index", (json_int_t)idx, "values", values,
                                  "status", status);
            if (resp)
                json_object_update(p, resp);
            json_array_append_new(points, p);
        }
        json_decref(values);
        json_decref(resp);
    }
    sqlite3_reset(st);
    json_decref(names);
    return finish_page(&csv, points, as_csv, out_json, out_csv);
}

static int search_page(const json_t *best, long long offset, long long limit, int as_csv,
                       json_t **out_json, char **out_csv)
{
    json_t *names = stat_names();
    const json_t *first_exec = json_object_get(json_array_get(best, 0), "execution");
    csv_t csv = {0};
    json_t *points = json_array();
    if (as_csv) {
        csv_field(&csv, "rank", 1);
        const char *key;
        json_t *unused;
        json_object_foreach((json_t *)first_exec, key, unused) csv_field(&csv, key, 0);
        json_object_foreach(names, key, unused) csv_field(&csv, key, 0);
        csv_raw(&csv, "\r\n", 2);
    }
    for (long long i = offset; i < (long long)json_array_size(best) && i < offset + limit; i++) {
        json_t *e = json_array_get(best, (size_t)i);
        if (as_csv) {
            char num[32];
            snprintf(num, sizeof num, "%lld", i + 1);
            csv_field(&csv, num, 1);
            const char *key;
            json_t *unused;
            json_t *exec = json_object_get(e, "execution");
            json_object_foreach((json_t *)first_exec, key, unused)
                csv_value(&csv, json_object_get(exec, key), 0);
            csv_stats(&csv, names, json_object_get(e, "stats"));
            csv_raw(&csv, "\r\n", 2);
        } else {
            json_t *p = json_pack("{s:I}", "rank", (json_int_t)(i + 1));
            json_object_update(p, e);
            json_array_append_new(points, p);
        }
    }
    json_decref(names);
    return finish_page(&csv, points, as_csv, out_json, out_csv);
}

int sweeps_results(sweeps_t *s, const char *id, long long offset, long long limit, int as_csv,
                   json_t **out_json, char **out_csv, fathom_error_t *err)
{
    json_t *status = NULL;
    int rc = sweeps_status(s, id, &status, err);
    if (rc != 200)
        return rc;
    const char *kind = json_string_value(json_object_get(status, "kind"));
    json_t *page = NULL;
    int failed;
    if (strcmp(kind, "grid") == 0) {
        db_conn_t *c = db_acquire(sweeps__db(s));
        failed = grid_page(s, c, id, json_object_get(status, "spec"), offset, limit, as_csv,
                           &page, out_csv);
        db_release(sweeps__db(s), c);
    } else {
        failed = search_page(json_object_get(status, "best"), offset, limit, as_csv, &page,
                             out_csv);
    }
    if (failed) {
        json_decref(status);
        return fathom_error_set(err, FATHOM_E_UNAVAILABLE, NULL, "cannot read the results"), 503;
    }
    if (!as_csv) {
        json_t *progress = json_object_get(status, "progress");
        *out_json = json_pack("{s:s,s:s,s:O,s:O,s:I,s:I,s:O,s:o}", "id", id, "kind", kind,
                              "status", json_object_get(status, "status"), "progress", progress,
                              "offset", (json_int_t)offset, "limit", (json_int_t)limit,
                              "size", json_object_get(status, "size"), "points", page);
    }
    json_decref(status);
    return 200;
}

/* sweep_results.c — GET /v1/sweep/<id>/results: every point of a grid sweep, every candidate of
 * a plan, or the ranked executions of a search, as JSON or CSV (a header row, then one row a
 * point: its index, a column per axis, its status, and a column per statistic; a plan's row is
 * its candidate's figures, codec_plan_csv_columns), produced while it is sent.
 *
 * DESIGN. A download is a cursor, not a document: the HTTP layer asks for bytes
 * (sweeps_download_read, from libmicrohttpd's callback response) and the download refills one
 * capped buffer a chunk at a time — for a grid, one store_points_page call starting at the index
 * after the last point sent (a fresh, short read transaction each time; no reader is held while
 * the client reads), stopping at DOWNLOAD_CHUNK_BYTES or DOWNLOAD_CHUNK_ROWS. So the memory a
 * download holds is bounded by SWEEP_DOWNLOAD_MAX_BYTES (plus one decoded point) whatever the
 * sweep's size, and a slow client costs a socket, not a database snapshot. A search's ranked
 * list is at most SEARCH_TOP_N_MAX entries and is read once, with the status. Points stored
 * after the download started may appear in it (a running sweep); each point appears once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "canonical.h"
#include "llm_codec.h"
#include "search_plan_codec.h"
#include "sweeps_internal.h"

/* A chunk is refilled up to this many bytes (a point may take it past, up to the buffer's cap). */
#define DOWNLOAD_CHUNK_BYTES (64u * 1024)
#define DOWNLOAD_CHUNK_ROWS 256

struct sweep_download {
    sweeps_t *s;
    char id[CODEC_HASH_HEX_LEN + 1];
    bool grid, csv;
    bool plan;               /* a plan: its candidates are the grid's points */
    json_t *spec;            /* grid: for the axes' names */
    const char *axes[SWEEP_GRID_MAX_AXES];
    int naxes;
    json_t *best;            /* search: the ranked list */
    const json_t *first_exec; /* search: its first execution names the CSV columns */
    json_t *stat_names;      /* an llm_stats_t encoded: its keys are the CSV's statistic columns */
    long long next;          /* grid: the next index to read; search: the next rank - 1 */
    long long remaining;     /* points still to send */
    long long sent;          /* points sent so far (a separator precedes all but the first) */
    bool ended;              /* nothing more to read from the store */
    bool trailer_done;
    buf_t out;               /* bytes produced and not yet handed to the connection */
    size_t pos;              /* bytes of `out` already handed over */
    int failed;              /* a point could not be rendered (memory or the cap) */
    char etag[HTTP_ETAG_LEN + 1]; /* of the sweep's status and the page asked for */
};

static int csv_field(buf_t *b, const char *s, int first)
{
    int rc = first ? 0 : buf_append(b, ",", 1);
    if (rc || !strpbrk(s, ",\"\r\n"))
        return rc ? rc : buf_appends(b, s);
    /* Quoted when it holds a comma, quote or line break (RFC 4180). */
    rc = buf_append(b, "\"", 1);
    for (const char *p = s; *p && !rc; p++)
        rc = *p == '"' ? buf_append(b, "\"\"", 2) : buf_append(b, p, 1);
    return rc ? rc : buf_append(b, "\"", 1);
}

static int csv_value(buf_t *b, const json_t *v, int first)
{
    char num[64];
    if (!v || json_is_null(v))
        return csv_field(b, "", first);
    if (json_is_string(v))
        return csv_field(b, json_string_value(v), first);
    if (json_is_integer(v)) {
        snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
        return csv_field(b, num, first);
    }
    if (json_is_real(v)) {
        snprintf(num, sizeof num, "%.17g", json_real_value(v));
        return csv_field(b, num, first);
    }
    if (json_is_boolean(v))
        return csv_field(b, json_is_true(v) ? "true" : "false", first);
    char *t = json_dumps(v, JSON_COMPACT);
    if (!t)
        return BUF_NO_MEMORY;
    int rc = csv_field(b, t, first);
    free(t);
    return rc;
}

static int csv_stats(buf_t *b, const json_t *names, const json_t *stats)
{
    const char *key;
    json_t *unused;
    int rc = 0;
    json_object_foreach((json_t *)names, key, unused)
    {
        if ((rc = csv_value(b, json_object_get(stats, key), 0)) != 0)
            break;
    }
    return rc;
}

/* Appends a JSON value as compact text. */
static int append_json(buf_t *b, const json_t *v)
{
    char *t = json_dumps(v, JSON_COMPACT | JSON_REAL_PRECISION(17) | JSON_ENCODE_ANY);
    if (!t)
        return BUF_NO_MEMORY;
    int rc = buf_appends(b, t);
    free(t);
    return rc;
}

/* The separator before a JSON point, or nothing before the first. */
static int separator(sweep_download_t *d)
{
    return d->csv || d->sent == 0 ? 0 : buf_append(&d->out, ",", 1);
}

/* A plan candidate's CSV row: the columns codec_plan_csv_columns names, by path. */
static int plan_row(buf_t *b, const json_t *candidate)
{
    int rc = 0;
    for (int i = 0; codec_plan_csv_columns[i] && !rc; i++) {
        const char *col = codec_plan_csv_columns[i], *dot = strchr(col, '.');
        const json_t *v = candidate;
        if (dot) {
            char first[64];
            snprintf(first, sizeof first, "%.*s", (int)(dot - col), col);
            v = json_object_get(v, first);
            col = dot + 1;
        }
        v = json_object_get(v, col);
        if (json_is_array(v)) { /* reasons: one field, joined by '|' */
            char joined[256] = "";
            size_t k, len = 0;
            json_t *e;
            json_array_foreach(v, k, e) len += (size_t)snprintf(
                joined + len, len < sizeof joined ? sizeof joined - len : 0, "%s%s",
                k ? "|" : "", json_string_value(e) ? json_string_value(e) : "");
            rc = csv_field(b, joined, i == 0);
        } else {
            rc = csv_value(b, v, i == 0);
        }
    }
    return rc ? rc : buf_append(b, "\r\n", 2);
}

static int grid_point(void *ctx, const store_point_t *p)
{
    sweep_download_t *d = ctx;
    buf_t *b = &d->out;
    json_t *values = json_loads(p->values, 0, NULL);
    json_t *resp = json_loads(p->response, 0, NULL);
    int rc = !values || !resp ? BUF_NO_MEMORY : separator(d);
    if (rc == 0 && d->csv && d->plan) {
        rc = plan_row(b, resp);
    } else if (rc == 0 && d->csv) {
        rc = buf_appendf(b, "%lld", p->index);
        for (int i = 0; i < d->naxes && !rc; i++)
            rc = csv_value(b, json_object_get(values, d->axes[i]), 0);
        char num[16];
        snprintf(num, sizeof num, "%d", p->status);
        json_t *e = json_object_get(resp, "error");
        if (!rc)
            rc = csv_field(b, num, 0);
        if (!rc)
            rc = csv_value(b, json_object_get(resp, "fits_memory"), 0);
        if (!rc)
            rc = csv_value(b, e ? json_object_get(e, "message") : NULL, 0);
        if (!rc)
            rc = csv_stats(b, d->stat_names, json_object_get(resp, "stats"));
        if (!rc)
            rc = buf_append(b, "\r\n", 2);
    } else if (rc == 0) {
        json_t *point = json_pack("{s:I,s:O,s:i}", "index", (json_int_t)p->index, "values",
                                  values, "status", p->status);
        rc = !point || json_object_update(point, resp) ? BUF_NO_MEMORY : append_json(b, point);
        json_decref(point);
    }
    json_decref(values);
    json_decref(resp);
    d->next = p->index + 1;
    if (rc) {
        d->failed = 1;
        return 1;
    }
    d->sent++;
    d->remaining--;
    return d->remaining == 0 || b->len - d->pos >= DOWNLOAD_CHUNK_BYTES;
}

static int search_point(sweep_download_t *d)
{
    buf_t *b = &d->out;
    json_t *e = json_array_get(d->best, (size_t)d->next);
    int rc = separator(d);
    if (rc == 0 && d->csv) {
        rc = buf_appendf(b, "%lld", d->next + 1);
        const char *key;
        json_t *unused;
        json_t *exec = json_object_get(e, "execution");
        json_object_foreach((json_t *)d->first_exec, key, unused)
        {
            if (!rc)
                rc = csv_value(b, json_object_get(exec, key), 0);
        }
        if (!rc)
            rc = csv_stats(b, d->stat_names, json_object_get(e, "stats"));
        if (!rc)
            rc = buf_append(b, "\r\n", 2);
    } else if (rc == 0) {
        json_t *point = json_pack("{s:I}", "rank", (json_int_t)(d->next + 1));
        rc = !point || json_object_update(point, e) ? BUF_NO_MEMORY : append_json(b, point);
        json_decref(point);
    }
    d->next++;
    if (rc)
        return d->failed = 1, -1;
    d->sent++;
    d->remaining--;
    return 0;
}

/* Produces the next chunk into d->out: 0, or -1 with err. */
static int refill(sweep_download_t *d, fathom_error_t *err)
{
    buf_reset(&d->out);
    d->pos = 0;
    if (d->remaining > 0 && !d->ended) {
        if (d->grid) {
            long long before = d->sent;
            long long rows = d->remaining;
            if (rows > DOWNLOAD_CHUNK_ROWS)
                rows = DOWNLOAD_CHUNK_ROWS;
            if (store_points_page(sweeps__server(d->s)->store, d->id, d->next, rows, grid_point, d,
                                  err))
                return -1;
            if (d->sent - before < rows && !d->failed && d->out.len < DOWNLOAD_CHUNK_BYTES)
                d->ended = true; /* the page came back short: no more points */
        } else {
            while (d->remaining > 0 && d->next < (long long)json_array_size(d->best) &&
                   d->out.len < DOWNLOAD_CHUNK_BYTES && search_point(d) == 0) {
            }
            if (d->next >= (long long)json_array_size(d->best))
                d->ended = true;
        }
        if (d->failed)
            return fathom_error_set(err, FATHOM_E_INTERNAL, NULL,
                                    "a point does not fit in the download buffer, or memory "
                                    "ran out");
    }
    if (d->out.len == 0 && !d->trailer_done) {
        d->trailer_done = true;
        if (!d->csv && buf_appends(&d->out, "]}\n"))
            return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    }
    return 0;
}

static json_t *stat_names(void)
{
    llm_stats_t zero;
    memset(&zero, 0, sizeof zero);
    return codec_llm_stats_encode(&zero);
}

/* The CSV header row, or the JSON document up to the opening of "points". */
static int head(sweep_download_t *d, const json_t *status)
{
    buf_t *b = &d->out;
    int rc = 0;
    if (!d->csv) {
        /* "rows" says what the points are: a grid's every point, a search's ranked top N (the
         * plotted sample of the space is /points) */
        json_t *doc = json_pack("{s:s,s:O,s:O,s:O,s:I,s:I,s:O,s:s}", "id", d->id, "kind",
                                json_object_get(status, "kind"), "status",
                                json_object_get(status, "status"), "progress",
                                json_object_get(status, "progress"), "offset",
                                (json_int_t)d->next, "limit", (json_int_t)d->remaining, "size",
                                json_object_get(status, "size"), "rows",
                                d->grid ? "all" : "top_n");
        rc = doc ? append_json(b, doc) : BUF_NO_MEMORY;
        json_decref(doc);
        if (rc == 0) { /* reopen the object: the points follow */
            b->data[--b->len] = '\0';
            rc = buf_appends(b, ",\"points\":[");
        }
        return rc;
    }
    const char *key;
    json_t *unused;
    if (d->plan) {
        for (int i = 0; codec_plan_csv_columns[i] && !rc; i++)
            rc = csv_field(b, codec_plan_csv_columns[i], i == 0);
        return rc ? rc : buf_append(b, "\r\n", 2);
    }
    if (d->grid) {
        rc = csv_field(b, "index", 1);
        for (int i = 0; i < d->naxes && !rc; i++)
            rc = csv_field(b, d->axes[i], 0);
        const char *fixed[] = {"status", "fits_memory", "error"};
        for (int i = 0; i < 3 && !rc; i++)
            rc = csv_field(b, fixed[i], 0);
    } else {
        rc = csv_field(b, "rank", 1);
        json_object_foreach((json_t *)d->first_exec, key, unused)
        {
            if (!rc)
                rc = csv_field(b, key, 0);
        }
    }
    json_object_foreach(d->stat_names, key, unused)
    {
        if (!rc)
            rc = csv_field(b, key, 0);
    }
    return rc ? rc : buf_append(b, "\r\n", 2);
}

bool sweeps_download_grid(const sweep_download_t *d)
{
    return d->grid;
}

/* The page's rows follow from the sweep's status (its progress, counts and ranked list) and
 * the page asked for: their tag is the tag of both. A running sweep's tag changes as units
 * finish; a finished one's never does. */
static int download_etag(sweep_download_t *d, const json_t *status, long long offset,
                         long long limit)
{
    char *text = json_dumps(status, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
    if (!text)
        return -1;
    char page[96];
    int n = snprintf(page, sizeof page, "|%s|%lld|%lld", d->csv ? "csv" : "json", offset, limit);
    size_t len = strlen(text);
    char *all = realloc(text, len + (size_t)n + 1);
    if (!all) {
        free(text);
        return -1;
    }
    memcpy(all + len, page, (size_t)n + 1);
    http_etag(d->etag, all, len + (size_t)n);
    free(all);
    return 0;
}

const char *sweeps_download_etag(const sweep_download_t *d)
{
    return d->etag;
}

int sweeps_download_open(sweeps_t *s, const char *id, long long offset, long long limit, int csv,
                         sweep_download_t **out, fathom_error_t *err)
{
    *out = NULL;
    if (!codec_is_hash(id))
        return fathom_error_set(err, FATHOM_E_NOT_FOUND, NULL,
                                "'%s' is not a sweep id (64 lowercase hex digits)", id);
    json_t *status = NULL;
    sweep_download_t *d = calloc(1, sizeof *d);
    if (!d)
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    if (sweeps_status(s, id, &status, err))
        goto fail;
    d->s = s;
    snprintf(d->id, sizeof d->id, "%s", id);
    d->csv = csv != 0;
    const char *kind = json_string_value(json_object_get(status, "kind"));
    d->plan = strcmp(kind, "plan") == 0;
    d->grid = d->plan || strcmp(kind, "grid") == 0;
    d->next = offset;
    d->remaining = limit;
    buf_init(&d->out, SWEEP_DOWNLOAD_MAX_BYTES);
    d->stat_names = stat_names();
    if (!d->stat_names)
        goto oom;
    if (d->grid) {
        d->spec = json_incref(json_object_get(status, "spec"));
        d->naxes = codec_grid_axes(d->spec, d->axes);
    } else {
        d->best = json_incref(json_object_get(status, "best"));
        d->first_exec = json_object_get(json_array_get(d->best, 0), "execution");
        if (!d->best)
            goto oom;
    }
    if (head(d, status) || download_etag(d, status, offset, limit))
        goto oom;
    json_decref(status);
    *out = d;
    return 0;
oom:
    fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
fail:
    json_decref(status);
    sweeps_download_free(d);
    return -1;
}

long sweeps_download_read(sweep_download_t *d, char *buf, size_t max, fathom_error_t *err)
{
    if (d->pos == d->out.len) {
        if (d->trailer_done)
            return 0;
        if (refill(d, err))
            return -1;
        if (d->out.len == 0)
            return 0;
    }
    size_t n = d->out.len - d->pos;
    if (n > max)
        n = max;
    memcpy(buf, d->out.data + d->pos, n);
    d->pos += n;
    return (long)n;
}

void sweeps_download_free(sweep_download_t *d)
{
    if (!d)
        return;
    json_decref(d->spec);
    json_decref(d->best);
    json_decref(d->stat_names);
    buf_free(&d->out);
    free(d);
}

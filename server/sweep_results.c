/* sweep_results.c — GET /v1/sweep/<id>/results: the rows of a sweep, as JSON or CSV, produced
 * while they are sent. A kind that keeps points (a grid, a plan) lists every stored point
 * ({"index","values","status", and the point's answer}); a kind that keeps a state (a search)
 * lists its ranked best ({"rank", and the entry}). The CSV's header and cells are the kind's
 * (codec/sweep_kind.h: sweep_csv_head, sweep_csv_row); writing them as RFC 4180 text is this file's.
 *
 * DESIGN. A download is a cursor, not a document: the HTTP layer asks for bytes
 * (sweeps_download_read, from libmicrohttpd's callback response) and the download refills one
 * capped buffer a chunk at a time — for points, one store_points_page call starting at the index
 * after the last point sent (a fresh, short read transaction each time; no reader is held while
 * the client reads), stopping at DOWNLOAD_CHUNK_BYTES or DOWNLOAD_CHUNK_ROWS. So the memory a
 * download holds is bounded by SWEEP_DOWNLOAD_MAX_BYTES (plus one decoded point) whatever the
 * sweep's size, and a slow client costs a socket, not a database snapshot. A ranked list is at
 * most SWEEP_TOP_N_MAX entries and is read once, with the status. Points stored
 * after the download started may appear in it (a running sweep); each point appears once. The
 * body ends with a trailer — the JSON's "complete": true and "next_offset", the CSV's last row
 * "#complete rows=N next_offset=M" — so a body cut short is told from a whole one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "canonical.h"
#include "etag.h"
#include "sweeps_internal.h"

/* A chunk is refilled up to this many bytes (a point may take it past, up to the buffer's cap). */
#define DOWNLOAD_CHUNK_BYTES (64u * 1024)
#define DOWNLOAD_CHUNK_ROWS 256

struct sweep_download {
    sweeps_t *s;
    char id[CODEC_HASH_HEX_LEN + 1];
    bool points, csv;        /* points: every stored point (else the ranked best) */
    const sweep_kind_t *kind;
    json_t *spec;            /* the kind's run borrows it */
    sweep_run_t *run;        /* the kind's opened spec, for its CSV cells */
    json_t *best;            /* ranked: the list */
    json_t *first;           /* the first row (it may name the CSV's columns) */
    long long next;          /* points: the next index to read; ranked: the next rank - 1 */
    long long remaining;     /* points still to send */
    long long sent;          /* points sent so far (a separator precedes all but the first) */
    bool ended;              /* nothing more to read from the store */
    bool trailer_done;
    buf_t out;               /* bytes produced and not yet handed to the connection */
    size_t pos;              /* bytes of `out` already handed over */
    int failed;              /* a point could not be rendered (memory or the cap) */
    char etag[ETAG_LEN + 1]; /* of the sweep's status and the page asked for */
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

/* A row as CSV: the kind's cells, then a line break. */
static int csv_line(sweep_download_t *d, const json_t *row)
{
    json_t *cells = json_array();
    int rc = !cells || sweep_csv_row(d->kind, d->run, d->first, row, cells) ? BUF_NO_MEMORY : 0;
    size_t i;
    json_t *v;
    json_array_foreach(cells, i, v)
    {
        if (!rc)
            rc = csv_value(&d->out, v, i == 0);
    }
    json_decref(cells);
    return rc ? rc : buf_append(&d->out, "\r\n", 2);
}

/* Sends a row: JSON, or a CSV line. */
static int send_row(sweep_download_t *d, const json_t *row)
{
    int rc = separator(d);
    if (!rc)
        rc = d->csv ? csv_line(d, row) : append_json(&d->out, row);
    return rc;
}

/* A point as its row: {"index","values","status", and its answer's members}. NULL when memory
 * ran out. */
static json_t *point_row(const store_point_t *p)
{
    json_t *values = json_loads(p->values, 0, NULL), *resp = json_loads(p->response, 0, NULL);
    json_t *row = values && resp ? json_pack("{s:I,s:O,s:i}", "index", (json_int_t)p->index,
                                             "values", values, "status", p->status)
                                 : NULL;
    if (row && json_object_update(row, resp)) {
        json_decref(row);
        row = NULL;
    }
    json_decref(values);
    json_decref(resp);
    return row;
}

static int stored_point(void *ctx, const store_point_t *p)
{
    sweep_download_t *d = ctx;
    json_t *row = point_row(p);
    int rc = row ? send_row(d, row) : BUF_NO_MEMORY;
    json_decref(row);
    d->next = p->index + 1;
    if (rc) {
        d->failed = 1;
        return 1;
    }
    d->sent++;
    d->remaining--;
    return d->remaining == 0 || d->out.len - d->pos >= DOWNLOAD_CHUNK_BYTES;
}

static int ranked_row(sweep_download_t *d)
{
    json_t *row = json_pack("{s:I}", "rank", (json_int_t)(d->next + 1));
    int rc = !row || json_object_update(row, json_array_get(d->best, (size_t)d->next))
                 ? BUF_NO_MEMORY
                 : send_row(d, row);
    json_decref(row);
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
        if (d->points) {
            long long before = d->sent;
            long long rows = d->remaining;
            if (rows > DOWNLOAD_CHUNK_ROWS)
                rows = DOWNLOAD_CHUNK_ROWS;
            if (store_points_page(sweeps__server(d->s)->store, d->id, d->next, rows, stored_point,
                                  d, err))
                return -1;
            if (d->sent - before < rows && !d->failed && d->out.len < DOWNLOAD_CHUNK_BYTES)
                d->ended = true; /* the page came back short: no more points */
        } else {
            while (d->remaining > 0 && d->next < (long long)json_array_size(d->best) &&
                   d->out.len < DOWNLOAD_CHUNK_BYTES && ranked_row(d) == 0) {
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
        /* The body's last words say it is whole, and where the next page starts: a client whose
         * connection was cut (a paused download past --connection-timeout, a proxy) sees no
         * trailer, and asks again from the index after the last row it got (doc/api.md). */
        d->trailer_done = true;
        int rc = d->csv ? buf_appendf(&d->out, "#complete rows=%lld next_offset=%lld\r\n",
                                      d->sent, d->next)
                        : buf_appendf(&d->out, "],\"complete\":true,\"next_offset\":%lld}\n",
                                      d->next);
        if (rc)
            return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    }
    return 0;
}

/* The row that names a search's CSV columns: the first ranked row, its execution holding every
 * member any ranked row's has. An execution writes some members only when set
 * (recompute_blocks, recompute_modules, ...: codec_llm_execution_encode), so the first row's
 * alone would drop them from the rows below it; a row without one has an empty cell. */
static json_t *csv_columns(const json_t *best)
{
    json_t *first = json_pack("{s:i}", "rank", 1);
    json_t *exec = json_deep_copy(json_object_get(json_array_get(best, 0), "execution"));
    if (!first || json_object_update(first, json_array_get(best, 0)) || !exec ||
        json_object_set(first, "execution", exec))
        goto oom;
    size_t i;
    const json_t *row;
    json_array_foreach(best, i, row)
    {
        const char *key;
        json_t *unused;
        json_object_foreach(json_object_get(row, "execution"), key, unused)
        {
            if (!json_object_get(exec, key) && json_object_set_new(exec, key, json_null()))
                goto oom;
        }
    }
    json_decref(exec);
    return first;
oom:
    json_decref(exec);
    json_decref(first);
    return NULL;
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
                                d->points ? "all" : "top_n");
        rc = doc ? append_json(b, doc) : BUF_NO_MEMORY;
        json_decref(doc);
        if (rc == 0) { /* reopen the object: the points follow */
            b->data[--b->len] = '\0';
            rc = buf_appends(b, ",\"points\":[");
        }
        return rc;
    }
    json_t *names = json_array();
    rc = !names || sweep_csv_head(d->kind, d->run, d->first, names) ? BUF_NO_MEMORY : 0;
    size_t i;
    json_t *name;
    json_array_foreach(names, i, name)
    {
        if (!rc)
            rc = csv_field(b, json_string_value(name), i == 0);
    }
    json_decref(names);
    return rc ? rc : buf_append(b, "\r\n", 2);
}

bool sweeps_download_every_point(const sweep_download_t *d)
{
    return d->points;
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
    etag_of(d->etag, all, len + (size_t)n);
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
    d->kind = sweep_kind_by_name(json_string_value(json_object_get(status, "kind")));
    if (!d->kind) {
        fathom_error_set(err, FATHOM_E_NOT_FOUND, NULL, "a sweep of a kind this fathomd does not "
                                                        "know");
        goto fail;
    }
    d->points = d->kind->keeps == SWEEP_KEEPS_POINTS;
    d->next = offset;
    d->remaining = limit;
    buf_init(&d->out, SWEEP_DOWNLOAD_MAX_BYTES);
    const codec_ctx_t ctx = {sweeps__server(s)->presets};
    d->spec = json_incref(json_object_get(status, "spec"));
    if (!d->spec) {
        /* A stored spec that is not JSON (the sweep failed on it: its status says so). */
        fathom_error_set(err, FATHOM_E_NOT_FOUND, NULL,
                         "sweep %s has no readable spec: its status says why it failed", id);
        goto fail;
    }
    if (!(d->run = d->kind->open(d->spec, &ctx, err)))
        goto fail;
    if (!d->points) {
        d->best = json_incref(json_object_get(status, "best"));
        if (!d->best || (json_array_size(d->best) && !(d->first = csv_columns(d->best))))
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
    if (d->run)
        d->kind->close(d->run);
    json_decref(d->spec);
    json_decref(d->best);
    json_decref(d->first);
    buf_free(&d->out);
    free(d);
}

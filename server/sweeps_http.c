/* sweeps_http.c — the sweep endpoints: POST /v1/sweep, GET /v1/sweeps, GET and DELETE
 * /v1/sweep/<id>, GET /v1/sweep/<id>/results. Creating and cancelling need the bearer token
 * when FATHOM_API_TOKEN is set; reading does not (dashboards poll without secrets), which is
 * why a download's memory is bounded (SWEEP_DOWNLOAD_MAX_BYTES) whatever the sweep's size.
 * This is the edge: the only place a sweep call's error code becomes an HTTP status. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accept.h"
#include "cache.h"
#include "etag.h"
#include "handlers.h"
#include "routes_extra.h"
#include "sweeps.h"

/* Bytes libmicrohttpd asks a download for at a time (its buffer for the response). */
#define DOWNLOAD_BLOCK_BYTES (32u * 1024)

/* The one place a sweep call's outcome becomes an HTTP status: from err's code on failure, else
 * `ok_status` (a submission's 202 or 200 with its Location: `submitted`). */
static enum MHD_Result answer(http_req_t *r, int rc, int ok_status, bool submitted, json_t *out,
                              const fathom_error_t *err)
{
    if (rc) {
        if (err->code == FATHOM_E_QUEUE_FULL) {
            const char *headers[] = {"Retry-After", "5", NULL};
            return http_send_error(r, err, headers);
        }
        return http_send_error(r, err, NULL);
    }
    if (submitted) {
        /* Copied: http_send_json frees `out` before the headers are used. */
        char location[128];
        snprintf(location, sizeof location, "%s",
                 json_string_value(json_object_get(out, "status_url")));
        const char *headers[] = {"Location", location, NULL};
        return http_send_json(r, ok_status, out, headers);
    }
    return http_send_json(r, ok_status, out, NULL);
}

const char *const routes_sweeps_query[] = {"limit", NULL};
static const char *const results_query[] = {"format", "offset", "limit", NULL};

/* A whole-number query argument from min to max (strictly: digits only), dflt when absent.
 * 0, or -1 with err naming the argument. */
static int query_count(http_req_t *r, const char *name, long long dflt, long long min,
                       long long max, long long *out, fathom_error_t *err)
{
    const char *v = http_query(r, name);
    *out = dflt;
    if (!v)
        return 0;
    long long n = 0;
    const char *p = v;
    for (; *p >= '0' && *p <= '9' && n <= max; p++)
        n = n * 10 + (*p - '0');
    if (!*v || *p || n < min || n > max)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, name,
                                "must be a whole number from %lld to %lld", min, max);
    *out = n;
    return 0;
}

enum MHD_Result routes_sweep_create(http_req_t *r, const char *tail)
{
    (void)tail;
    if (!http_authorized(r))
        return http_send_unauthorized(r, "to create or cancel sweeps");
    fathom_error_t err;
    fathom_error_clear(&err);
    json_t *body = http_json_body(r, &err);
    if (!body)
        return http_send_error(r, &err, NULL);
    json_t *out = NULL;
    int rc = sweeps_submit(r->srv->sweeps, body, &out, &err);
    json_decref(body);
    /* 200 when the sweep already exists (queued, running or done), as doc/api.md says. */
    bool created = rc == 0 && json_is_true(json_object_get(out, "created"));
    return answer(r, rc, rc == 0 && !created ? 200 : 202, true, out, &err);
}

enum MHD_Result routes_sweep_list(http_req_t *r, const char *tail)
{
    (void)tail;
    fathom_error_t err;
    fathom_error_clear(&err);
    json_t *out = NULL;
    long long limit;
    if (query_count(r, "limit", 50, 1, SWEEP_LIST_MAX, &limit, &err))
        return http_send_error(r, &err, NULL);
    int rc = sweeps_list(r->srv->sweeps, (int)limit, &out, &err);
    return answer(r, rc, 200, false, out, &err);
}

void routes_sweep_gauges(server_t *srv, long long out[5])
{
    fathom_error_t err;
    if (sweeps_counts(srv->sweeps, out, &err))
        memset(out, 0, 5 * sizeof out[0]); /* /metrics still answers; the gauges read 0 */
}

static ssize_t download_read(void *ctx, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    fathom_error_t err;
    long n = sweeps_download_read(ctx, buf, max, &err);
    if (n < 0)
        return MHD_CONTENT_READER_END_WITH_ERROR; /* the client sees the answer cut short */
    return n == 0 ? MHD_CONTENT_READER_END_OF_STREAM : (ssize_t)n;
}

static void download_free(void *ctx)
{
    sweeps_download_free(ctx);
}

/* GET /v1/sweep/<id>/results, streamed (see sweep_results.c). */
static enum MHD_Result send_results(http_req_t *r, const char *id)
{
    fathom_error_t err;
    fathom_error_clear(&err);
    const char *format = http_query(r, "format");
    int csv = format && strcmp(format, "csv") == 0;
    if (format && !csv && strcmp(format, "json") != 0)
        return http_send_errorf(r, FATHOM_E_INVALID_FIELD, "format", "must be json or csv");
    /* Without ?format, content negotiation (accept.h): JSON unless Accept prefers text/csv. */
    static const char *const forms[] = {"application/json", "text/csv"};
    if (!format)
        csv = accept_choose(http_header(r, "Accept"), forms, 2) == 1;
    long long offset, limit;
    if (query_count(r, "offset", 0, 0, (long long)1 << 53, &offset, &err) ||
        query_count(r, "limit", 1000, 0, 100000, &limit, &err))
        return http_send_error(r, &err, NULL);
    sweep_download_t *d = NULL;
    if (sweeps_download_open(r->srv->sweeps, id, offset, limit, csv, &d, &err))
        return http_send_error(r, &err, NULL);
    /* Say what the rows are: a grid's are every point; a search's only its ranked top N
     * (millions of executions are tried), and the plotted sample is at /points. */
    const bool grid = sweeps_download_every_point(d);
    char disposition[160], link[160];
    snprintf(disposition, sizeof disposition, "attachment; filename=\"sweep-%.12s.csv\"", id);
    snprintf(link, sizeof link, "</v1/sweep/%s/points>; rel=\"related\"", id);
    const char *rows = grid ? "all" : "top_n";
    const char *headers[11];
    int n = 0;
    headers[n++] = "X-Fathom-Rows";
    headers[n++] = rows;
    headers[n++] = "ETag";
    headers[n++] = sweeps_download_etag(d);
    headers[n++] = "Vary";
    headers[n++] = "Accept";
    if (csv) {
        headers[n++] = "Content-Disposition";
        headers[n++] = disposition;
    }
    if (!grid) {
        headers[n++] = "Link";
        headers[n++] = link;
    }
    headers[n] = NULL;
    return http_send_stream(r, 200, csv ? "text/csv; charset=utf-8" : "application/json",
                            DOWNLOAD_BLOCK_BYTES, download_read, d, download_free, headers);
}

/* tail: "<id>" or "<id>/results" */
enum MHD_Result routes_sweep_one(http_req_t *r, const char *tail)
{
    fathom_error_t err;
    fathom_error_clear(&err);
    json_t *out = NULL;
    char id[80];
    const char *slash = strchr(tail, '/');
    size_t n = slash ? (size_t)(slash - tail) : strlen(tail);
    if (n >= sizeof id)
        return http_send_errorf(r, FATHOM_E_NOT_FOUND, NULL, "no such sweep");
    memcpy(id, tail, n);
    id[n] = '\0';
    /* the status and the sample take no parameters, the results format, offset and limit */
    if (http_query_check(r, slash && strcmp(slash, "/results") == 0 ? results_query : NULL,
                         &err))
        return http_send_error(r, &err, NULL);

    if (!slash) {
        int rc;
        if (strcmp(r->method, "DELETE") == 0) {
            if (!http_authorized(r))
                return http_send_unauthorized(r, "to create or cancel sweeps");
            rc = sweeps_cancel(r->srv->sweeps, id, &out, &err);
        } else {
            /* A finished sweep never changes: dashboards polling it are answered from memory. */
            char hash[CODEC_HASH_HEX_LEN + 1], *text = NULL;
            /* ...and carry an ETag (the sweep's id), so they can revalidate for a 304. */
            char etag[sizeof id + 2];
            snprintf(etag, sizeof etag, "\"%s\"", id);
            const char *done_headers[] = {"ETag", etag, NULL};
            if (cache_hot_get(r->srv->cache, "sweep_status", id, strlen(id), hash, &text)) {
                enum MHD_Result sent =
                    http_send(r, 200, "application/json", text, strlen(text), done_headers);
                free(text);
                return sent;
            }
            rc = sweeps_status(r->srv->sweeps, id, &out, &err);
            const char *state = json_string_value(json_object_get(out, "status"));
            if (rc == 0 && state && strcmp(state, "done") == 0 &&
                (text = json_dumps(out, JSON_INDENT(2) | JSON_REAL_PRECISION(17))) != NULL) {
                size_t len = strlen(text);
                char *body = realloc(text, len + 2);
                if (body) {
                    memcpy(body + len, "\n", 2);
                    cache_hot_put(r->srv->cache, "sweep_status", id, strlen(id), id, body);
                    enum MHD_Result sent =
                        http_send(r, 200, "application/json", body, len + 1, done_headers);
                    free(body);
                    json_decref(out);
                    return sent;
                }
                free(text);
            }
            /* Not finished: the tag of its bytes, so a dashboard polling an unchanged status
             * (no unit finished since) is answered 304. */
            if (rc == 0 && (text = json_dumps(out, JSON_INDENT(2) | JSON_REAL_PRECISION(17)))) {
                char tag[ETAG_LEN + 1];
                size_t len = strlen(text);
                etag_of(tag, text, len);
                const char *headers[] = {"ETag", tag, NULL};
                enum MHD_Result sent = http_send(r, 200, "application/json", text, len, headers);
                free(text);
                json_decref(out);
                return sent;
            }
        }
        return answer(r, rc, 200, false, out, &err);
    }
    if (strcmp(slash, "/results") != 0 && strcmp(slash, "/points") != 0)
        return http_send_errorf(r, FATHOM_E_NOT_FOUND, NULL, "no such resource: %s", r->url);
    if (strcmp(r->method, "DELETE") == 0) {
        /* The route takes DELETE for the sweep itself; its results and sample are read-only. */
        const char *headers[] = {"Allow", "GET", NULL};
        fathom_error_set(&err, FATHOM_E_METHOD_NOT_ALLOWED, NULL,
                         "%s is not allowed on %s; use GET", r->method, r->url);
        return http_send_error(r, &err, headers);
    }
    if (strcmp(slash, "/points") == 0) {
        int rc = sweeps_sample(r->srv->sweeps, id, &out, &err);
        return answer(r, rc, 200, false, out, &err);
    }
    return send_results(r, id);
}

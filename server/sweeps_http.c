/* sweeps_http.c — the sweep endpoints: POST /v1/sweep, GET /v1/sweeps, GET and DELETE
 * /v1/sweep/<id>, GET /v1/sweep/<id>/results. Creating and cancelling need the bearer token
 * when FATHOM_API_TOKEN is set; reading does not (dashboards poll without secrets). */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "handlers.h"
#include "routes_extra.h"
#include "sweeps.h"

/* Compares the Authorization header with the token in constant time: both are hashed first, so
 * neither the comparison nor an early length check reveals how much of a guess was right. */
static int authorized(http_req_t *r)
{
    const char *token = r->srv->cfg.api_token;
    if (!token[0])
        return 1;
    const char *auth = http_header(r, "Authorization");
    if (!auth || strncmp(auth, "Bearer ", 7) != 0)
        return 0;
    unsigned char want[crypto_generichash_BYTES], got[crypto_generichash_BYTES];
    crypto_generichash(want, sizeof want, (const unsigned char *)token, strlen(token), NULL, 0);
    crypto_generichash(got, sizeof got, (const unsigned char *)auth + 7, strlen(auth + 7), NULL, 0);
    return sodium_memcmp(want, got, sizeof want) == 0;
}

static enum MHD_Result unauthorized(http_req_t *r)
{
    fathom_error_t err;
    fathom_error_set(&err, FATHOM_E_UNAUTHORIZED, NULL,
                     "this server needs 'Authorization: Bearer <token>' to create or cancel sweeps");
    const char *headers[] = {"WWW-Authenticate", "Bearer realm=\"fathom\"", NULL};
    return http_send_error(r, &err, headers);
}

static enum MHD_Result answer(http_req_t *r, int status, json_t *out, const fathom_error_t *err)
{
    if (status >= 400) {
        if (status == 429) {
            const char *headers[] = {"Retry-After", "5", NULL};
            return http_send_error(r, err, headers);
        }
        return http_send_error(r, err, NULL);
    }
    if (status == 202) {
        /* Copied: http_send_json frees `out` before the headers are used. */
        char location[128];
        snprintf(location, sizeof location, "%s",
                 json_string_value(json_object_get(out, "status_url")));
        const char *headers[] = {"Location", location, NULL};
        return http_send_json(r, status, out, headers);
    }
    return http_send_json(r, status, out, NULL);
}

enum MHD_Result routes_sweep_create(http_req_t *r, const char *tail)
{
    (void)tail;
    if (!authorized(r))
        return unauthorized(r);
    fathom_error_t err;
    fathom_error_clear(&err);
    json_t *body = handlers_parse_json_body(r, &err);
    if (!body)
        return http_send_error(r, &err, NULL);
    json_t *out = NULL;
    int status = sweeps_submit(r->srv->sweeps, body, &out, &err);
    json_decref(body);
    return answer(r, status, out, &err);
}

enum MHD_Result routes_sweep_list(http_req_t *r, const char *tail)
{
    (void)tail;
    const char *lim = http_query(r, "limit");
    fathom_error_t err;
    json_t *out = NULL;
    int status = sweeps_list(r->srv->sweeps, lim ? atoi(lim) : 50, &out, &err);
    return answer(r, status, out, &err);
}

/* Parses a non-negative integer query argument; -1 when present and not one. */
static long long query_count(http_req_t *r, const char *name, long long dflt, long long max)
{
    const char *v = http_query(r, name);
    if (!v)
        return dflt;
    char *end;
    long long n = strtoll(v, &end, 10);
    if (!*v || *end || n < 0 || n > max)
        return -1;
    return n;
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

    if (!slash) {
        int status;
        if (strcmp(r->method, "DELETE") == 0) {
            if (!authorized(r))
                return unauthorized(r);
            status = sweeps_cancel(r->srv->sweeps, id, &out, &err);
        } else {
            /* A finished sweep never changes: dashboards polling it are answered from memory. */
            char hash[CODEC_HASH_HEX_LEN + 1], *text = NULL;
            /* ...and carry an ETag (the sweep's id), so they can revalidate for a 304. */
            char etag[sizeof id + 2];
            snprintf(etag, sizeof etag, "\"%s\"", id);
            const char *done_headers[] = {"ETag", etag, NULL};
            if (cache_hot_get(r->srv->cache, "sweep_status", id, strlen(id), hash, &text)) {
                enum MHD_Result rc =
                    http_send(r, 200, "application/json", text, strlen(text), done_headers);
                free(text);
                return rc;
            }
            status = sweeps_status(r->srv->sweeps, id, &out, &err);
            const char *state = json_string_value(json_object_get(out, "status"));
            if (status == 200 && state && strcmp(state, "done") == 0 &&
                (text = json_dumps(out, JSON_INDENT(2) | JSON_REAL_PRECISION(17))) != NULL) {
                size_t len = strlen(text);
                char *body = realloc(text, len + 2);
                if (body) {
                    memcpy(body + len, "\n", 2);
                    cache_hot_put(r->srv->cache, "sweep_status", id, strlen(id), id, body);
                    enum MHD_Result rc =
                        http_send(r, 200, "application/json", body, len + 1, done_headers);
                    free(body);
                    json_decref(out);
                    return rc;
                }
                free(text);
            }
        }
        return answer(r, status, out, &err);
    }
    if (strcmp(r->method, "DELETE") == 0 ||
        (strcmp(slash, "/results") != 0 && strcmp(slash, "/points") != 0))
        return http_send_errorf(r, FATHOM_E_NOT_FOUND, NULL, "no such resource: %s", r->url);
    if (strcmp(slash, "/points") == 0) {
        int status = sweeps_sample(r->srv->sweeps, id, &out, &err);
        return answer(r, status, out, &err);
    }
    const char *format = http_query(r, "format");
    int csv = format && strcmp(format, "csv") == 0;
    if (format && !csv && strcmp(format, "json") != 0)
        return http_send_errorf(r, FATHOM_E_INVALID_FIELD, "format", "must be json or csv");
    long long offset = query_count(r, "offset", 0, (long long)1 << 53);
    long long limit = query_count(r, "limit", 1000, 100000);
    if (offset < 0)
        return http_send_errorf(r, FATHOM_E_INVALID_FIELD, "offset",
                                "must be a whole number from 0");
    if (limit < 0)
        return http_send_errorf(r, FATHOM_E_INVALID_FIELD, "limit",
                                "must be a whole number from 0 to 100000");
    char *text = NULL;
    int status = sweeps_results(r->srv->sweeps, id, offset, limit, csv, &out, &text, &err);
    if (status != 200)
        return answer(r, status, out, &err);
    /* Say what the rows are: a grid's are every point; a search's are only its ranked top N
     * (millions of executions are tried), and the plotted sample is at /points. */
    json_t *st = NULL;
    int grid = 0;
    if (csv && sweeps_status(r->srv->sweeps, id, &st, &err) == 200)
        grid = strcmp(json_string_value(json_object_get(st, "kind")), "grid") == 0;
    else if (!csv)
        grid = strcmp(json_string_value(json_object_get(out, "kind")), "grid") == 0;
    json_decref(st);
    const char *rows = grid ? "all" : "top_n";
    if (!csv) {
        json_object_set_new(out, "rows", json_string(rows));
        return answer(r, status, out, &err);
    }
    char disposition[160], link[160];
    snprintf(disposition, sizeof disposition, "attachment; filename=\"sweep-%.12s.csv\"", id);
    snprintf(link, sizeof link, "</v1/sweep/%s/points>; rel=\"related\"", id);
    const char *headers[] = {"Content-Disposition", disposition, "X-Fathom-Rows", rows,
                             grid ? NULL : "Link", link, NULL};
    enum MHD_Result rc = http_send(r, 200, "text/csv; charset=utf-8", text, strlen(text), headers);
    free(text);
    return rc;
}

/* routes.c — the URL table of fathomd and the small handlers that need no module of their own.
 *
 * Anatomy of a route: a row {method, path, prefix?, label, handler, query}. The label is the
 * route's name in logs and metrics; query lists the parameters it reads (NULL: none), and any
 * other, or one given twice, is refused before the handler runs (doc/api.md). Estimate
 * endpoints are not listed here: every endpoint of the codec table (codec/endpoint.c) is served
 * by handlers_estimate at its own path, with caching, and takes no query parameter. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "canonical.h"
#include "handlers.h"
#include "metrics.h"
#include "routes.h"
#include "routes_extra.h"

typedef enum MHD_Result (*route_fn)(http_req_t *r, const char *tail);

typedef struct {
    const char *method;
    const char *path;
    int prefix; /* path is a prefix; the rest is passed as tail */
    const char *label;
    route_fn fn;
    const char *const *query; /* the query parameters it reads, NULL-terminated; NULL: none */
    int one_segment; /* its method is allowed on a tail of one path segment only (DELETE of a
                      * sweep, not of its /results and /points): left out of a longer tail's
                      * Allow list */
} route_t;

static enum MHD_Result h_healthz(http_req_t *r, const char *tail)
{
    (void)tail;
    return http_send_json(r, 200, json_pack("{s:s}", "status", "ok"), NULL);
}

static enum MHD_Result h_readyz(http_req_t *r, const char *tail)
{
    (void)tail;
    server_t *s = r->srv;
    if (!atomic_load(&s->ready) || !store_ready(s->store))
        return http_send_errorf(r, FATHOM_E_UNAVAILABLE, NULL,
                                atomic_load(&s->ready) ? "database is not open"
                                                       : "not ready (starting or shutting down)");
    return http_send_json(r, 200,
                          json_pack("{s:s,s:i}", "status", "ready", "schema_version",
                                    store_schema_version(s->store)),
                          NULL);
}

static enum MHD_Result h_version(http_req_t *r, const char *tail)
{
    (void)tail;
    size_t n;
    const codec_endpoint_t *const *eps = codec_endpoints(&n);
    json_t *paths = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(paths, json_string(eps[i]->path));
    return http_send_json(r, 200,
                          json_pack("{s:s,s:s,s:i,s:o}", "version", FATHOM_VERSION,
                                    "estimator_version", FATHOM_ESTIMATOR_VERSION,
                                    "schema_version", store_schema_version(r->srv->store),
                                    "estimate_endpoints", paths),
                          NULL);
}

static enum MHD_Result h_openapi(http_req_t *r, const char *tail)
{
    (void)tail;
    char path[4200];
    snprintf(path, sizeof path, "%s/openapi.json", r->srv->cfg.schemas_dir);
    json_error_t jerr;
    json_t *doc = json_load_file(path, 0, &jerr);
    if (!doc)
        return http_send_errorf(r, FATHOM_E_NOT_FOUND, NULL, "no OpenAPI document at %s", path);
    return http_send_json(r, 200, doc, NULL);
}

static enum MHD_Result h_metrics(http_req_t *r, const char *tail)
{
    (void)tail;
    metrics_gauges_t g = {0};
    g.db_size_bytes = store_file_size(r->srv->store);
    routes_sweep_gauges(r->srv, g.sweeps_by_state);
    char *text = metrics_render(r->srv->metrics, &g);
    if (!text)
        return http_send_errorf(r, FATHOM_E_INTERNAL, NULL, "out of memory");
    enum MHD_Result rc =
        http_send(r, 200, "text/plain; version=0.0.4; charset=utf-8", text, strlen(text), NULL);
    free(text);
    return rc;
}

static enum MHD_Result h_result(http_req_t *r, const char *hash)
{
    if (!codec_is_hash(hash))
        return http_send_errorf(r, FATHOM_E_NOT_FOUND, NULL,
                                "'%s' is not a result hash (64 lowercase hex digits)", hash);
    cache_entry_t e;
    int found = cache_get(r->srv->cache, hash, &e);
    if (found < 0)
        return http_send_errorf(r, FATHOM_E_UNAVAILABLE, NULL, "database read failed");
    if (found == 0)
        return http_send_errorf(r, FATHOM_E_NOT_FOUND, NULL, "no stored result %s", hash);
    json_t *req = json_loads(e.request, 0, NULL), *resp = json_loads(e.response, 0, NULL);
    const codec_endpoint_t *ep = codec_endpoint_by_name(e.endpoint);
    json_t *out = json_pack("{s:s,s:s,s:s*,s:o*,s:o*,s:s,s:I}", "hash", hash, "endpoint",
                            e.endpoint, "path", ep ? ep->path : NULL, "request", req, "response",
                            resp, "created_at", e.created_at, "hit_count",
                            (json_int_t)e.hit_count);
    cache_entry_free(&e);
    char etag[CODEC_HASH_HEX_LEN + 3];
    snprintf(etag, sizeof etag, "\"%s\"", hash);
    const char *headers[] = {"ETag", etag, NULL};
    return http_send_json(r, 200, out, headers);
}

const char *const routes_query_own[] = {NULL};

static const route_t routes[] = {
    {"GET", "/healthz", 0, "/healthz", h_healthz, NULL, 0},
    {"GET", "/readyz", 0, "/readyz", h_readyz, NULL, 0},
    {"GET", "/metrics", 0, "/metrics", h_metrics, NULL, 0},
    {"GET", "/openapi.json", 0, "/openapi.json", h_openapi, NULL, 0},
    {"GET", "/v1/version", 0, "/v1/version", h_version, NULL, 0},
    {"GET", "/v1/presets", 0, "/v1/presets", handlers_presets_list, NULL, 0},
    {"GET", "/v1/presets/", 1, "/v1/presets/{kind}/{name}", handlers_preset_get, NULL, 0},
    {"PUT", "/v1/presets/systems/", 1, "/v1/presets/systems/{name}", handlers_preset_put, NULL, 0},
    {"DELETE", "/v1/presets/systems/", 1, "/v1/presets/systems/{name}", handlers_preset_delete,
     NULL, 0},
    {"GET", "/v1/results/", 1, "/v1/results/{hash}", h_result, NULL, 0},
    ROUTES_EXTRA
};

static int method_matches(const char *want, const char *got)
{
    return strcmp(want, got) == 0 || (strcmp(want, "GET") == 0 && strcmp(got, "HEAD") == 0);
}

static enum MHD_Result dispatch(http_req_t *r)
{
    char allow[64] = "";
    const route_t *match = NULL;
    const char *tail = NULL;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        const route_t *rt = &routes[i];
        size_t n = strlen(rt->path);
        int hit = rt->prefix ? strncmp(r->url, rt->path, n) == 0 && r->url[n]
                             : strcmp(r->url, rt->path) == 0;
        if (!hit)
            continue;
        if (method_matches(rt->method, r->method)) {
            match = rt;
            tail = r->url + (rt->prefix ? n : strlen(r->url));
            break;
        }
        if (rt->one_segment && strchr(r->url + n, '/'))
            continue; /* not a method of the sub-resource */
        if (!strstr(allow, rt->method) && strlen(allow) + strlen(rt->method) + 3 < sizeof allow)
            snprintf(allow + strlen(allow), sizeof allow - strlen(allow), "%s%s",
                     allow[0] ? ", " : "", rt->method);
    }
    fathom_error_t err;
    if (match) {
        r->route = match->label;
        if (match->query != routes_query_own && http_query_check(r, match->query, &err))
            return http_send_error(r, &err, NULL);
        return match->fn(r, tail);
    }
    const codec_endpoint_t *ep = codec_endpoint_by_path(r->url);
    if (ep) {
        r->route = ep->path;
        if (strcmp(r->method, "POST") == 0)
            return http_query_check(r, NULL, &err) ? http_send_error(r, &err, NULL)
                                                   : handlers_estimate(r, ep);
        snprintf(allow, sizeof allow, "POST");
    }
    if (allow[0] && strcmp(r->method, "OPTIONS") == 0) {
        if (!r->route)
            r->route = "preflight";
        return http_send_preflight(r, allow);
    }
    if (allow[0]) {
        const char *headers[] = {"Allow", allow, NULL};
        fathom_error_set(&err, FATHOM_E_METHOD_NOT_ALLOWED, NULL, "%s is not allowed on %s; use %s",
                         r->method, r->url, allow);
        if (!r->route)
            r->route = "method_not_allowed";
        return http_send_error(r, &err, headers);
    }
    if (strncmp(r->url, "/v1/", 4) == 0 || strcmp(r->url, "/v1") == 0 ||
        (strcmp(r->method, "GET") != 0 && strcmp(r->method, "HEAD") != 0)) {
        r->route = "not_found";
        return http_send_errorf(r, FATHOM_E_NOT_FOUND, NULL, "no such resource: %s %s",
                                r->method, r->url);
    }
    r->route = "static";
    return handlers_static(r);
}

int routes_handle(http_req_t *r)
{
    return dispatch(r) == MHD_YES;
}

/* estimate.c — the one handler behind every estimate endpoint (transformer, estimate, scaling,
 * goodput, ...): parse, normalize, hash, answer from the cache or compute and store.
 *
 * The response body is stored as first served and every later hit returns those same bytes, so
 * a result link and a repeated request can never disagree. */
#include <stdlib.h>
#include <string.h>

#include "alloc_guard.h"
#include "cache.h"
#include "canonical.h"
#include "user_presets.h"
#include "handlers.h"
#include "log.h"
#include "metrics.h"

static enum MHD_Result send_stored(http_req_t *r, const char *hash, const char *body,
                                   const char *cache_state, int stored)
{
    char etag[CODEC_HASH_HEX_LEN + 3];
    snprintf(etag, sizeof etag, "\"%s\"", hash);
    const char *headers[] = {"ETag", etag, "X-Fathom-Cache", cache_state, "Cache-Control",
                             "no-cache", "X-Fathom-Stored", stored ? "true" : "false", NULL};
    r->cache = cache_state;
    return http_send(r, 200, "application/json", body, strlen(body), headers);
}

enum MHD_Result handlers_estimate(http_req_t *r, const codec_endpoint_t *ep)
{
    fathom_error_t err;
    fathom_error_clear(&err);
    enum MHD_Result rc;
    json_t *body = NULL, *normalized = NULL, *response = NULL;
    char *request_text = NULL, *response_text = NULL;
    char hash[CODEC_HASH_HEX_LEN + 1];
    codec_presets_t *presets = NULL;

    if (http_body_is_json(r)) {
        char *hot = NULL;
        if (cache_hot_get(r->srv->cache, ep->name, r->body.data ? r->body.data : "", r->body.len, hash,
                          &hot)) {
            metrics_cache(r->srv->metrics, 1);
            cache_count_hit(r->srv->cache, hash);
            rc = send_stored(r, hash, hot, "hit", 1);
            free(hot);
            return rc;
        }
    }
    alloc_guard_take(); /* from here, a failed allocation makes the answer untrustworthy */
    body = http_json_body(r, &err);
    if (!body) {
        rc = http_send_error(r, &err, NULL);
        goto out;
    }
    /* Names resolve per request: a user preset is read from the store (presets_http.c). */
    presets = user_presets_overlay(r->srv);
    if (!presets) {
        rc = http_send_errorf(r, FATHOM_E_INTERNAL, NULL, "out of memory");
        goto out;
    }
    const codec_ctx_t ctx = {presets};
    normalized = ep->normalize(body, &ctx, &err);
    if (!normalized) {
        rc = http_send_error(r, &err, NULL);
        goto out;
    }
    request_text = codec_canonical_dump(normalized);
    /* A request normalized while an allocation failed may lack a member: its hash would name
     * another request's answer. */
    if (!request_text || codec_config_hash(ep->name, normalized, hash) || alloc_guard_take()) {
        rc = http_send_errorf(r, FATHOM_E_INTERNAL, NULL, "out of memory");
        goto out;
    }

    cache_entry_t hit;
    int found = cache_get(r->srv->cache, hash, &hit);
    if (found == 1) {
        metrics_cache(r->srv->metrics, 1);
        cache_count_hit(r->srv->cache, hash);
        /* Equal bytes naming a user preset may mean another system tomorrow (or on another
         * replica): only requests whose names are all built-ins enter the hot map. */
        if (!codec_presets_used_user(presets))
            cache_hot_put(r->srv->cache, ep->name, r->body.data ? r->body.data : "", r->body.len,
                          hash, hit.response);
        rc = send_stored(r, hash, hit.response, "hit", 1);
        cache_entry_free(&hit);
        goto out;
    }
    metrics_cache(r->srv->metrics, 0);

    response = ep->evaluate(normalized, &ctx, &err);
    if (!response) {
        rc = http_send_error(r, &err, NULL);
        goto out;
    }
    response_text = json_dumps(response, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
    if (!response_text) {
        rc = http_send_errorf(r, FATHOM_E_INTERNAL, NULL, "out of memory");
        goto out;
    }
    /* An answer computed while an allocation failed may be wrong (alloc_guard.h): it is neither
     * served nor stored under the request's hash. */
    if (alloc_guard_take()) {
        rc = http_send_errorf(r, FATHOM_E_INTERNAL, NULL, "out of memory");
        goto out;
    }
    size_t len = strlen(response_text);
    char *with_newline = realloc(response_text, len + 2);
    if (with_newline) {
        response_text = with_newline;
        memcpy(response_text + len, "\n", 2);
    }
    /* A result that cannot be stored (read-only or full disk) is still a correct answer: serve
     * it with X-Fathom-Stored: false (its result link will not resolve), and log the fault.
     * Writes a client asked for — sweeps — are refused with 503 instead. */
    int stored = cache_put(r->srv->cache, hash, ep->name, request_text, response_text) == 0;
    if (!stored)
        log_msg(LOG_WARN, "could not store result %s (database full or read-only?)", hash);
    rc = send_stored(r, hash, response_text, "miss", stored);
out:
    codec_presets_free(presets);
    json_decref(body);
    json_decref(normalized);
    json_decref(response);
    free(request_text);
    free(response_text);
    return rc;
}

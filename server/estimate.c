/* estimate.c — the one handler behind every estimate endpoint (transformer, estimate, scaling,
 * goodput, ...): parse, normalize, hash, answer from the cache or compute and store.
 *
 * The response body is stored as first served and every later hit returns those same bytes, so
 * a result link and a repeated request can never disagree. */
#include <stdbool.h>
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

/* The hot map: the very bytes of a request answered before, without parsing them; true with *rc
 * when it answered. */
static bool answered_hot(http_req_t *r, const codec_endpoint_t *ep, enum MHD_Result *rc)
{
    char hash[CODEC_HASH_HEX_LEN + 1], *hot = NULL;
    if (!http_body_is_json(r) || !cache_hot_get(r->srv->cache, ep->name,
                                                r->body.data ? r->body.data : "", r->body.len,
                                                hash, &hot))
        return false;
    metrics_cache(r->srv->metrics, 1);
    cache_count_hit(r->srv->cache, hash);
    *rc = send_stored(r, hash, hot, "hit", 1);
    free(hot);
    return true;
}

/* The store: the answer to the normalized request `hash` names, served as first stored; true
 * with *rc when there is one. */
static bool answered_stored(http_req_t *r, const codec_endpoint_t *ep, const char *hash,
                            const codec_presets_t *presets, enum MHD_Result *rc)
{
    cache_entry_t hit;
    if (cache_get(r->srv->cache, hash, &hit) != 1) {
        metrics_cache(r->srv->metrics, 0);
        return false;
    }
    metrics_cache(r->srv->metrics, 1);
    cache_count_hit(r->srv->cache, hash);
    /* Equal bytes naming a user preset may mean another system tomorrow (or on another
     * replica): only requests whose names are all built-ins enter the hot map. */
    if (!codec_presets_used_user(presets))
        cache_hot_put(r->srv->cache, ep->name, r->body.data ? r->body.data : "", r->body.len, hash,
                      hit.response);
    *rc = send_stored(r, hash, hit.response, "hit", 1);
    cache_entry_free(&hit);
    return true;
}

/* A miss: evaluates the normalized request, then stores and serves the answer. */
static enum MHD_Result answer_fresh(http_req_t *r, const codec_endpoint_t *ep,
                                    const codec_ctx_t *ctx, const json_t *normalized,
                                    const char *request_text, const char *hash)
{
    fathom_error_t err;
    fathom_error_clear(&err);
    json_t *response = ep->evaluate(normalized, ctx, &err);
    if (!response)
        return http_send_error(r, &err, NULL);
    char *text = json_dumps(response, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
    json_decref(response);
    /* An answer computed while an allocation failed may be wrong (alloc_guard.h): it is neither
     * served nor stored under the request's hash. */
    if (alloc_guard_take() || !text) {
        free(text);
        return http_send_errorf(r, FATHOM_E_INTERNAL, NULL, "out of memory");
    }
    size_t len = strlen(text);
    char *with_newline = realloc(text, len + 2);
    if (with_newline) {
        text = with_newline;
        memcpy(text + len, "\n", 2);
    }
    /* A result that cannot be stored (read-only or full disk) is still a correct answer: serve
     * it with X-Fathom-Stored: false (its result link will not resolve), and log the fault.
     * Writes a client asked for — sweeps — are refused with 503 instead. */
    int stored = cache_put(r->srv->cache, hash, ep->name, request_text, text) == 0;
    if (!stored)
        log_msg(LOG_WARN, "could not store result %s (database full or read-only?)", hash);
    enum MHD_Result rc = send_stored(r, hash, text, "miss", stored);
    free(text);
    return rc;
}

enum MHD_Result handlers_estimate(http_req_t *r, const codec_endpoint_t *ep)
{
    fathom_error_t err;
    fathom_error_clear(&err);
    enum MHD_Result rc;
    json_t *body = NULL, *normalized = NULL;
    char *request_text = NULL;
    char hash[CODEC_HASH_HEX_LEN + 1];
    codec_presets_t *presets = NULL;

    if (answered_hot(r, ep, &rc))
        return rc;
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
    if (!answered_stored(r, ep, hash, presets, &rc))
        rc = answer_fresh(r, ep, &ctx, normalized, request_text, hash);
out:
    codec_presets_free(presets);
    json_decref(body);
    json_decref(normalized);
    free(request_text);
    return rc;
}

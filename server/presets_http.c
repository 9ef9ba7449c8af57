/* presets_http.c — the preset endpoints: GET /v1/presets, GET /v1/presets/<kind>/<name>, and
 * the user presets' PUT and DELETE /v1/presets/systems/<name>.
 *
 * DESIGN. User presets live in the store (store_preset_*), never in this process (see
 * user_presets.h: a request reads them through its own overlay). What a PUT stores is the system
 * as the estimate's decoder normalizes it, with its price and power (which a plan bills), so a
 * stored preset always decodes. Writing needs the bearer token when fathomd has one
 * (http_authorized), reading does not. Built-in names are refused (409 conflict) so a built-in
 * always means the same system on every replica. This is the edge: the one place these
 * calls' error codes become HTTP statuses. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "canonical.h"
#include "handlers.h"
#include "json_read.h"
#include "llm_codec.h"
#include "user_presets.h"

/* A system object with its curves is a few kB; this leaves room for long curves. */
#define USER_PRESET_MAX_BODY_BYTES (64 * 1024)
/* How many user presets of one kind a database may hold. */
#define USER_PRESETS_MAX 1000

typedef struct {
    json_t *systems;
} list_walk_t;

static int add_listed(void *ctx, const store_preset_t *p)
{
    list_walk_t *w = ctx;
    char comment[128];
    snprintf(comment, sizeof comment, "User preset, stored %s.", p->updated_at);
    return json_array_append_new(w->systems,
                                 json_pack("{s:s,s:s,s:b,s:s}", "name", p->name, "comment",
                                           comment, "user", 1, "updated_at", p->updated_at));
}

enum MHD_Result handlers_presets_list(http_req_t *r, const char *tail)
{
    (void)tail;
    json_t *out = codec_presets_list(r->srv->presets);
    list_walk_t w = {json_object_get(out, "systems")};
    fathom_error_t err;
    fathom_error_clear(&err);
    if (!w.systems)
        fathom_error_set(&err, FATHOM_E_INTERNAL, NULL, "out of memory");
    if (!w.systems || store_preset_list(r->srv->store, codec_preset_kind_name(PRESET_SYSTEM),
                                        add_listed, &w, &err)) {
        json_decref(out);
        return http_send_error(r, &err, NULL);
    }
    return http_send_json(r, 200, out, NULL);
}

/* Splits tail "models/<name>" or "systems/<name>"; -1 when it is neither. */
static int split_tail(const char *tail, preset_kind_t *kind, const char **name)
{
    for (int k = 0; k < PRESET__KINDS; k++) {
        const char *seg = codec_preset_kind_name((preset_kind_t)k);
        size_t n = strlen(seg);
        if (strncmp(tail, seg, n) == 0 && tail[n] == '/') {
            *kind = (preset_kind_t)k;
            *name = tail + n + 1;
            return 0;
        }
    }
    return -1;
}

/* GET, tail: "models/<name>" or "systems/<name>" — a built-in or a user preset. */
enum MHD_Result handlers_preset_get(http_req_t *r, const char *tail)
{
    preset_kind_t kind;
    const char *name;
    if (split_tail(tail, &kind, &name))
        return http_send_errorf(r, FATHOM_E_NOT_FOUND, NULL,
                                "use /v1/presets/models/<name> or /v1/presets/systems/<name>");
    codec_presets_t *p = user_presets_overlay(r->srv);
    if (!p)
        return http_send_errorf(r, FATHOM_E_INTERNAL, NULL, "out of memory");
    const json_t *obj;
    fathom_error_t err;
    fathom_error_clear(&err);
    enum MHD_Result rc;
    if (codec_presets_resolve(p, kind, name, &obj, &err))
        rc = http_send_error(r, &err, NULL);
    else if (!obj)
        rc = http_send_errorf(r, FATHOM_E_NOT_FOUND, NULL, "no %s preset named '%s'",
                              kind == PRESET_MODEL ? "model" : "system", name);
    else
        rc = http_send_json(r, 200, json_deep_copy(obj), NULL);
    codec_presets_free(p);
    return rc;
}

/* The checks PUT and DELETE share: the token, the name's form, not a built-in. */
static int check_writable(http_req_t *r, const char *name, const char *verb, enum MHD_Result *rc)
{
    if (!http_authorized(r)) {
        *rc = http_send_unauthorized(r, "to store or delete presets");
        return -1;
    }
    fathom_error_t err;
    if (codec_preset_name_check(name, "name", &err)) {
        *rc = http_send_error(r, &err, NULL);
        return -1;
    }
    if (codec_presets_is_builtin(r->srv->presets, PRESET_SYSTEM, name)) {
        *rc = http_send_errorf(r, FATHOM_E_CONFLICT, "name",
                               "'%s' is a built-in preset and cannot be %s; choose another name",
                               name, verb);
        return -1;
    }
    return 0;
}

/* PUT /v1/presets/systems/<name>: body is a system object, checked by the estimate's decoder and
 * stored normalized. 201 when created, 200 when replaced: {"name","user","created","url",
 * "system"}. */
enum MHD_Result handlers_preset_put(http_req_t *r, const char *name)
{
    enum MHD_Result rc;
    if (check_writable(r, name, "replaced", &rc))
        return rc;
    if (r->body.len > USER_PRESET_MAX_BODY_BYTES)
        return http_send_errorf(r, FATHOM_E_BODY_TOO_LARGE, NULL,
                                "a preset's body is at most %d bytes", USER_PRESET_MAX_BODY_BYTES);
    fathom_error_t err;
    fathom_error_clear(&err);
    json_t *body = http_json_body(r, &err), *norm = NULL;
    char *text = NULL;
    llm_system_t sys;
    codec_gpu_cost_t cost;
    codec_serving_hw_t hw;
    const json_t *resolved = NULL;
    json_t *owned = NULL;
    if (!body || jr_expect_object(body, "", &err) ||
        codec_llm_system_decode(body, "", r->srv->presets, &sys, &err) ||
        codec_llm_system_cost_decode(body, "", r->srv->presets, &cost, &err) ||
        codec_llm_system_resolve(body, "", r->srv->presets, &resolved, &owned, &err) ||
        codec_llm_system_serving_hw_decode(resolved, "", &hw, &err)) {
        json_decref(owned);
        rc = http_send_error(r, &err, NULL);
        goto out;
    }
    json_decref(owned);
    /* stored with everything it was given: price and power for plans, FP4 and decode rates for
     * serving (dropped, a preset stored from h100_sxm would bill nothing and serve without FP4) */
    norm = codec_llm_system_with_serving_hw(
        codec_llm_system_with_cost(codec_llm_system_encode(&sys), &cost), &hw);
    text = norm ? codec_canonical_dump(norm) : NULL;
    bool created = false;
    if (!text) {
        rc = http_send_errorf(r, FATHOM_E_INTERNAL, NULL, "out of memory");
        goto out;
    }
    if (store_preset_put(r->srv->store, codec_preset_kind_name(PRESET_SYSTEM), name, text,
                         USER_PRESETS_MAX, &created, &err)) {
        rc = http_send_error(r, &err, NULL);
        goto out;
    }
    char url[160];
    snprintf(url, sizeof url, "/v1/presets/systems/%s", name);
    const char *headers[] = {"Location", url, NULL};
    rc = http_send_json(r, created ? 201 : 200,
                        json_pack("{s:s,s:b,s:b,s:s,s:O}", "name", name, "user", 1, "created",
                                  created, "url", url, "system", norm),
                        created ? headers : NULL);
out:
    json_decref(body);
    json_decref(norm);
    free(text);
    return rc;
}

/* DELETE /v1/presets/systems/<name>: {"name","deleted":true}, or 404 when there is none. */
enum MHD_Result handlers_preset_delete(http_req_t *r, const char *name)
{
    enum MHD_Result rc;
    if (check_writable(r, name, "deleted", &rc))
        return rc;
    fathom_error_t err;
    fathom_error_clear(&err);
    if (store_preset_delete(r->srv->store, codec_preset_kind_name(PRESET_SYSTEM), name, &err))
        return http_send_error(r, &err, NULL);
    return http_send_json(r, 200, json_pack("{s:s,s:b}", "name", name, "deleted", 1), NULL);
}

/* sweep_views.c — what HTTP threads ask of sweeps: submit, status, cancel, the list, a search's
 * sample and the counts by state, as JSON documents read from the store. Runs on HTTP threads;
 * touches the scheduler only through its hooks (sweeps_internal.h). Every function returns 0
 * or -1 with err; the HTTP status is chosen from err's code by the caller. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_guard.h"
#include "canonical.h"
#include "error_codec.h"
#include "log.h"
#include "sweeps_internal.h"
#include "user_presets.h"

static store_t *store_of(sweeps_t *s)
{
    return sweeps__server(s)->store;
}

int sweeps_submit(sweeps_t *s, const json_t *body, json_t **out, fathom_error_t *err)
{
    if (sweeps__stopping(s))
        return fathom_error_set(err, FATHOM_E_UNAVAILABLE, NULL, "shutting down");
    server_t *srv = sweeps__server(s);
    /* The spec stores every system resolved to its object, so a sweep never depends on a user
     * preset after it is submitted, and its id changes when the preset's content does. */
    codec_presets_t *presets = user_presets_overlay(srv);
    if (!presets)
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    codec_ctx_t ctx = {presets};
    const sweep_kind_t *kind = NULL;
    uint64_t size = 0;
    alloc_guard_take();
    json_t *spec = codec_sweep_normalize(body, &ctx, sweeps__limits(s), &kind, &size, err);
    codec_presets_free(presets);
    if (!spec && !alloc_guard_take())
        return -1;
    char id[CODEC_HASH_HEX_LEN + 1];
    char *text = spec ? codec_canonical_dump(spec) : NULL;
    int hashed = text ? codec_config_hash("sweep", spec, id) : -1;
    json_decref(spec);
    /* A spec built while an allocation failed may lack a member: it must not be stored (and
     * its error, if any, may name a field that is not wrong). */
    if (alloc_guard_take())
        hashed = -1;
    if (hashed) {
        free(text);
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    }
    bool created = false;
    int rc = store_sweep_submit(srv->store, id, kind->name, text, (long long)size,
                                srv->cfg.max_queued_sweeps, &created, err);
    free(text);
    if (rc)
        return -1;
    sweeps__wake(s);
    char url[128];
    snprintf(url, sizeof url, "/v1/sweep/%s", id);
    *out = json_pack("{s:s,s:s,s:s,s:b}", "id", id, "status_url", url, "kind",
                     kind->name, "created", created);
    return *out ? 0 : fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
}

static json_t *text_or_null(const char *t)
{
    return t && t[0] ? json_string(t) : json_null();
}

static json_t *loads_or_null(const char *t)
{
    return t ? json_loads(t, 0, NULL) : NULL;
}

/* The answer so far of a sweep that has no result (running, cancelled, failed): its kind's
 * result from the last checkpoint's state and the stored points. NULL without err when there is
 * nothing to show (a spec or checkpoint that no longer opens: the status still answers). */
static json_t *answer_so_far(sweeps_t *s, const store_sweep_t *row, const json_t *spec,
                             fathom_error_t *err)
{
    const sweep_kind_t *kind = sweep_kind_by_name(row->kind);
    const codec_ctx_t ctx = {sweeps__server(s)->presets};
    fathom_error_t why;
    sweep_run_t *run = kind && spec ? kind->open(spec, &ctx, &why) : NULL;
    sweep_state_t *st = NULL;
    json_t *doc = NULL;
    if (!run)
        return NULL;
    if (kind->keeps == SWEEP_KEEPS_STATE) {
        st = kind->state_new(run, &why);
        if (!st || (row->state && kind->decode_state(run, row->state, NULL, st, &why)))
            goto out;
    }
    sweeps_points_at_t at = {store_of(s), row->id};
    sweep_points_t pts = sweeps__points(&at);
    doc = kind->result(run, st, &pts, 0, err);
out:
    if (st)
        kind->state_free(st);
    kind->close(run);
    return doc;
}

/* The answer part of a status: {"best", "counts", and the kind's own members (a plan's "plan")}
 * from the finished sweep's result, or its answer so far; best and counts empty when there is
 * none. 0, or -1 with err. */
static int answer(sweeps_t *s, const store_sweep_t *row, const json_t *spec, json_t **out,
                  fathom_error_t *err)
{
    fathom_error_clear(err);
    json_t *doc = row->result ? loads_or_null(row->result) : answer_so_far(s, row, spec, err);
    if (!doc && err->code != FATHOM_E_OK)
        return -1;
    if (!json_is_object(doc)) {
        json_decref(doc);
        doc = json_object();
    }
    if (doc && !json_object_get(doc, "best"))
        json_object_set_new(doc, "best", json_array());
    if (doc && !json_object_get(doc, "counts"))
        json_object_set_new(doc, "counts",
                            json_pack("{s:i,s:i,s:i}", "total", 0, "good", 0, "bad", 0));
    if (!doc || !json_is_array(json_object_get(doc, "best")) ||
        !json_is_object(json_object_get(doc, "counts"))) {
        json_decref(doc);
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    }
    *out = doc;
    return 0;
}

/* A failed sweep's error object (older rows kept a bare message), or null. */
static json_t *error_of(const store_sweep_t *row)
{
    fathom_error_t e;
    if (!row->error || !row->error[0] || codec_error_decode(row->error, &e))
        return json_null();
    json_t *obj = codec_error_encode(&e);
    return obj ? obj : json_null();
}

/* 0 when id has a sweep id's shape, else -1 with a 404: anything else (invalid UTF-8 above
 * all, which PostgreSQL refuses as a parameter) never reaches the store. */
static int check_id(const char *id, fathom_error_t *err)
{
    return codec_is_hash(id) ? 0
                             : fathom_error_set(err, FATHOM_E_NOT_FOUND, NULL,
                                                "'%s' is not a sweep id (64 lowercase hex digits)",
                                                id);
}

int sweeps_status(sweeps_t *s, const char *id, json_t **out, fathom_error_t *err)
{
    if (check_id(id, err))
        return -1;
    store_sweep_t row;
    if (store_sweep_get(store_of(s), id, false, &row, err))
        return -1;
    json_t *spec = loads_or_null(row.spec), *doc = NULL;
    int rc = -1;
    if (answer(s, &row, spec, &doc, err))
        goto out;
    json_error_t jerr;
    *out = json_pack_ex(&jerr, 0,
        "{s:s,s:s,s:s,s:{s:I,s:I},s:I,s:I,s:o,s:o,s:o,s:o,s:O*,s:O,s:O}", "id", id, "kind",
        row.kind, "status", store_sweep_status_names[row.status], "progress", "done",
        (json_int_t)row.done, "total", (json_int_t)row.total, "size", (json_int_t)row.size,
        "evaluations", (json_int_t)row.evaluations, "created_at", text_or_null(row.created_at),
        "started_at", text_or_null(row.started_at), "finished_at", text_or_null(row.finished_at),
        "error", error_of(&row), "spec", spec, "best", json_object_get(doc, "best"), "counts",
        json_object_get(doc, "counts"));
    /* The kind's own members of its answer (a finished plan's "plan": candidates, front,
     * cheapest and fastest) follow. */
    const char *key;
    json_t *v;
    json_object_foreach(doc, key, v)
    {
        if (*out && strcmp(key, "best") && strcmp(key, "counts") && json_object_set(*out, key, v)) {
            json_decref(*out);
            *out = NULL;
        }
    }
    if (!*out) {
        log_msg(LOG_ERROR, "sweep status: %s", jerr.text);
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "cannot encode the sweep's status");
        goto out;
    }
    /* A shared store says which replica ran which units. */
    json_t *runs = loads_or_null(row.runs);
    if (row.runs && (!runs || json_object_set_new(*out, "runs", runs))) {
        json_decref(*out);
        *out = NULL;
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "cannot encode the sweep's runs");
        goto out;
    }
    rc = 0;
out:
    json_decref(spec);
    json_decref(doc);
    store_sweep_close(&row);
    return rc;
}

int sweeps_cancel(sweeps_t *s, const char *id, json_t **out, fathom_error_t *err)
{
    if (check_id(id, err))
        return -1;
    bool changed = false;
    if (store_sweep_cancel(store_of(s), id, &changed, err))
        return -1;
    if (changed) {
        sweeps__cancel_job(s, id);
        log_event(LOG_INFO, "sweep cancelled", json_pack("{s:s}", "sweep", id));
    }
    if (sweeps_status(s, id, out, err))
        return -1;
    /* Cancelling a cancelled sweep is idempotent (its status again); a finished one has nothing
     * left to cancel, and answering 200 would read as done. */
    const char *state = json_string_value(json_object_get(*out, "status"));
    if (!changed && state && (strcmp(state, "done") == 0 || strcmp(state, "failed") == 0)) {
        fathom_error_set(err, FATHOM_E_CONFLICT, "status",
                         "sweep %s is %s: there is nothing left to cancel", id, state);
        json_decref(*out); /* state points into it */
        *out = NULL;
        return -1;
    }
    return 0;
}

int sweeps_sample(sweeps_t *s, const char *id, json_t **out, fathom_error_t *err)
{
    if (check_id(id, err))
        return -1;
    store_sweep_t row;
    if (store_sweep_get(store_of(s), id, true, &row, err))
        return -1;
    int rc = -1;
    const sweep_kind_t *kind = sweep_kind_by_name(row.kind);
    json_t *rows = NULL;
    if (!kind || !kind->sample) {
        fathom_error_set(err, FATHOM_E_NOT_FOUND, NULL,
                         "a %s sweep has every point in /v1/sweep/%s/results", row.kind, id);
        goto out;
    }
    if (!(rows = kind->sample(row.sample, err)))
        goto out;
    *out = json_pack("{s:s,s:s,s:[sss],s:o}", "id", id, "status",
                     store_sweep_status_names[row.status], "columns", "sample_rate",
                     "mem_tier1_bytes", "mem_tier2_bytes", "points", rows);
    if (*out)
        rc = 0;
    else
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
out:
    store_sweep_close(&row);
    return rc;
}

static int add_listed(void *ctx, const store_sweep_t *sw)
{
    char url[128];
    snprintf(url, sizeof url, "/v1/sweep/%s", sw->id);
    json_t *e = json_pack(
        "{s:s,s:s,s:s,s:s,s:I,s:{s:I,s:I},s:o,s:o,s:o}", "id", sw->id, "kind", sw->kind,
        "status", store_sweep_status_names[sw->status], "status_url", url, "size",
        (json_int_t)sw->size, "progress", "done", (json_int_t)sw->done, "total",
        (json_int_t)sw->total, "created_at", text_or_null(sw->created_at), "started_at",
        text_or_null(sw->started_at), "finished_at", text_or_null(sw->finished_at));
    return !e || json_array_append_new(ctx, e) ? -1 : 0;
}

int sweeps_list(sweeps_t *s, int limit, json_t **out, fathom_error_t *err)
{
    json_t *arr = json_array();
    if (!arr)
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    if (store_sweep_list(store_of(s), limit, add_listed, arr, err)) {
        json_decref(arr);
        return -1;
    }
    *out = json_pack("{s:o}", "sweeps", arr);
    return *out ? 0 : fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
}

int sweeps_counts(sweeps_t *s, long long out[5], fathom_error_t *err)
{
    return store_sweep_counts(store_of(s), out, err);
}

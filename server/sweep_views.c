/* sweep_views.c — what HTTP threads ask of sweeps: submit, status, cancel, the list, a search's
 * sample and the counts by state, as JSON documents read from the store. Runs on HTTP threads;
 * touches the scheduler only through its hooks (sweeps_internal.h). Every function returns 0
 * or -1 with err; the HTTP status is chosen from err's code by the caller. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_guard.h"
#include "canonical.h"
#include "log.h"
#include "sweeps_internal.h"

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
    codec_presets_t *presets = server_presets_overlay(srv);
    if (!presets)
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    codec_ctx_t ctx = {presets};
    sweep_kind_t kind;
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
    int rc = store_sweep_submit(srv->store, id, sweep_kind_names[kind], text, (long long)size,
                                srv->cfg.max_queued_sweeps, &created, err);
    free(text);
    if (rc)
        return -1;
    sweeps__wake(s);
    char url[128];
    snprintf(url, sizeof url, "/v1/sweep/%s", id);
    *out = json_pack("{s:s,s:s,s:s,s:b}", "id", id, "status_url", url, "kind",
                     sweep_kind_names[kind], "created", created);
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

typedef struct {
    const json_t *spec;
    json_t *best;
    int failed;
} best_walk_t;

static int add_best(void *ctx, const store_point_t *p)
{
    best_walk_t *w = ctx;
    json_t *resp = json_loads(p->response, 0, NULL), *body = NULL, *values = NULL;
    int bad = !resp || codec_grid_point(w->spec, (uint64_t)p->index, &body, &values);
    json_t *e = bad ? NULL
                    : json_pack("{s:I,s:o*,s:O*,s:O*,s:O*}", "index", (json_int_t)p->index,
                                "values", values, "execution", json_object_get(body, "execution"),
                                "summary", json_object_get(resp, "summary"), "stats",
                                json_object_get(resp, "stats"));
    if (bad)
        json_decref(values);
    json_decref(body);
    json_decref(resp);
    if (!e || json_array_append_new(w->best, e)) {
        w->failed = 1;
        return 1;
    }
    return 0;
}

json_t *sweeps__grid_best(store_t *store, const char *id, const json_t *spec, fathom_error_t *err)
{
    best_walk_t w = {spec, json_array(), 0};
    long long stored = 0, good = 0;
    if (!w.best)
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory"), NULL;
    if (store_points_best(store, id, codec_grid_top_n(spec), add_best, &w, &stored, &good, err)) {
        json_decref(w.best);
        return NULL;
    }
    json_t *doc = w.failed ? NULL
                           : json_pack("{s:o,s:{s:I,s:I,s:I,s:I}}", "best", w.best, "counts",
                                       "total", (json_int_t)stored, "good", (json_int_t)good,
                                       "bad", (json_int_t)(stored - good), "points",
                                       (json_int_t)codec_grid_size(spec));
    if (w.failed)
        json_decref(w.best);
    if (!doc)
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory listing the best points");
    return doc;
}

/* The best list and counts of a sweep's row: its result when done, the grid's points so far,
 * or the search's last checkpoint. */
static int best_and_counts(store_t *store, const store_sweep_t *row, const json_t *spec,
                           json_t **best, json_t **counts, fathom_error_t *err)
{
    *best = *counts = NULL;
    json_t *doc = NULL;
    if (row->result) {
        doc = loads_or_null(row->result);
    } else if (strcmp(row->kind, "grid") == 0 && spec) {
        if ((doc = sweeps__grid_best(store, row->id, spec, err)) == NULL)
            return -1;
    } else if (row->state) {
        doc = loads_or_null(row->state);
        size_t i;
        json_t *e;
        json_array_foreach(json_object_get(doc, "best"), i, e)
        {
            json_object_del(e, "unit");
            json_object_del(e, "index");
        }
        json_object_del(json_object_get(doc, "counts"), "estimated");
    }
    *best = json_incref(json_object_get(doc, "best"));
    *counts = json_incref(json_object_get(doc, "counts"));
    json_decref(doc);
    if (!*best)
        *best = json_array();
    if (!*counts)
        *counts = json_pack("{s:i,s:i,s:i}", "total", 0, "good", 0, "bad", 0);
    if (!*best || !*counts) {
        json_decref(*best);
        json_decref(*counts);
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    }
    return 0;
}

int sweeps_status(sweeps_t *s, const char *id, json_t **out, fathom_error_t *err)
{
    if (!codec_is_hash(id))
        return fathom_error_set(err, FATHOM_E_NOT_FOUND, NULL,
                                "'%s' is not a sweep id (64 lowercase hex digits)", id);
    store_sweep_t row;
    if (store_sweep_get(store_of(s), id, false, &row, err))
        return -1;
    json_t *spec = loads_or_null(row.spec), *best = NULL, *counts = NULL;
    int rc = -1;
    if (best_and_counts(store_of(s), &row, spec, &best, &counts, err))
        goto out;
    json_error_t jerr;
    *out = json_pack_ex(&jerr, 0,
        "{s:s,s:s,s:s,s:{s:I,s:I},s:I,s:I,s:o,s:o,s:o,s:o,s:O*,s:o,s:o}", "id", id, "kind",
        row.kind, "status", store_sweep_status_names[row.status], "progress", "done",
        (json_int_t)row.done, "total", (json_int_t)row.total, "size", (json_int_t)row.size,
        "evaluations", (json_int_t)row.evaluations, "created_at", text_or_null(row.created_at),
        "started_at", text_or_null(row.started_at), "finished_at", text_or_null(row.finished_at),
        "error", text_or_null(row.error), "spec", spec, "best", best, "counts", counts);
    if (*out && row.result && strcmp(row.kind, "plan") == 0) {
        /* a finished plan's answer: candidates, front, cheapest and fastest */
        json_t *doc = json_loads(row.result, 0, NULL);
        json_t *plan = json_object_get(doc, "plan");
        if (!plan || json_object_set(*out, "plan", plan)) {
            json_decref(*out);
            *out = NULL;
        }
        json_decref(doc);
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
    store_sweep_close(&row);
    return rc;
}

int sweeps_cancel(sweeps_t *s, const char *id, json_t **out, fathom_error_t *err)
{
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
    if (!codec_is_hash(id))
        return fathom_error_set(err, FATHOM_E_NOT_FOUND, NULL, "'%s' is not a sweep id", id);
    store_sweep_t row;
    if (store_sweep_get(store_of(s), id, true, &row, err))
        return -1;
    int rc = -1;
    if (strcmp(row.kind, "grid") == 0) {
        fathom_error_set(err, FATHOM_E_NOT_FOUND, NULL,
                         "a grid sweep has every point in /v1/sweep/%s/results", id);
        goto out;
    }
    json_t *rows = row.sample ? json_loads(row.sample, 0, NULL) : json_array();
    size_t i;
    json_t *r;
    /* Checkpoint rows carry their enumeration position; the answer's do not. */
    json_array_foreach(rows, i, r)
    {
        while (json_array_size(r) > 3)
            json_array_remove(r, 3);
    }
    *out = json_pack("{s:s,s:s,s:[sss],s:o}", "id", id, "status",
                     store_sweep_status_names[row.status], "columns", "sample_rate",
                     "mem_tier1_bytes", "mem_tier2_bytes", "points", rows ? rows : json_array());
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

/* sweeps.c — asynchronous sweeps: optimal-execution searches and grids of estimates.
 *
 * DESIGN (the worker pool's contract).
 * - Ownership. The database owns a sweep: a row in `sweeps` is created by POST /v1/sweep (HTTP
 *   thread) as 'queued', and only the loop thread moves it to 'running', checkpoints it and
 *   finishes it. The in-memory job_t (loop thread) is a cache of that row plus the work in
 *   flight; it can be thrown away at any moment and rebuilt from the row.
 * - Work. A sweep is cut into units (a search's work units, or 64 grid points). The loop thread
 *   queues one uv_work_t per unit on libuv's thread pool (UV_THREADPOOL_SIZE = --workers), at
 *   most --workers at a time across all sweeps, oldest sweep first. The work function runs on a
 *   pool thread, touches only its chunk and the read-only plan/spec, and cannot fail: a refused
 *   grid point is a result, not an error. Completion (after_work) runs on the loop thread.
 * - Order and durability. Units finish in any order; the loop thread merges them strictly in
 *   unit order, and a checkpoint transaction (at most every CHECKPOINT_MS, and at the end)
 *   writes the merged units' grid points or the search's merged best list together with `done`.
 *   So `done` always counts exactly the stored work; after a crash the sweep resumes at `done`
 *   and, because merging is in unit order and deterministic, ends with the same results.
 * - Cancel. DELETE sets the row to 'cancelled' (HTTP thread, one UPDATE) and raises the job's
 *   cancel flag; a running unit polls it every 4096 executions (or every grid point) and stops
 *   within milliseconds; queued units are uv_cancel'ed or dropped on completion. Checkpoints are
 *   conditional on status = 'running', so a cancelled sweep is never written again.
 * - Shutdown. sweeps_begin_shutdown raises every job's cancel flag without touching the rows:
 *   running units stop, finished ones are checkpointed, rows stay 'running', and the next start
 *   resumes them. */
#include "sweeps.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "canonical.h"
#include "llm_codec.h"
#include "log.h"
#include "metrics.h"
#include "routes_extra.h"
#include "search.h"
#include "search_codec.h"
#include "search_sweep_codec.h"
#include "sweeps_internal.h"

#define GRID_POINTS_PER_UNIT 64
#define CHECKPOINT_MS 500
#define SWEEP_LIST_MAX 200

static const char *const status_names[] = {"queued", "running", "done", "failed", "cancelled"};

typedef struct chunk chunk_t;

typedef struct job {
    char id[CODEC_HASH_HEX_LEN + 1];
    sweep_kind_t kind;
    json_t *spec;
    search_plan_t *plan;    /* search */
    search_result_t merged; /* search: units [0, next_merge) */
    bool merged_init;
    uint64_t npoints;       /* grid */
    size_t total_units, next_dispatch, next_merge, committed;
    chunk_t **ready;        /* finished units waiting for their turn to merge */
    json_t *pending_rows;   /* grid: merged rows not yet committed */
    uint64_t evaluations;
    volatile int cancel;    /* read by pool threads */
    int inflight;
    bool dropped;           /* cancelled by a user or failed: never written again */
    uint64_t last_commit_ms;
    struct job *next;
} job_t;

struct chunk {
    uv_work_t req;
    sweeps_t *s;
    job_t *job;
    size_t unit;
    int cancelled;
    search_result_t res;
    json_t *rows;
    uint64_t evaluations;
};

struct sweeps {
    server_t *srv;
    uv_loop_t *loop;
    uv_async_t wake;
    bool wake_open;
    pthread_mutex_t lock; /* guards the jobs list against HTTP-thread cancel lookups */
    job_t *jobs;
    int inflight;
    atomic_bool stopping; /* read by HTTP threads (submit) */
    sweep_limits_t limits;
};

/* The cancel flag is written by HTTP threads and the loop thread and read by pool threads. */
static int job_cancelled(const job_t *j)
{
    return __atomic_load_n(&j->cancel, __ATOMIC_RELAXED);
}

/* ---------------------------------------------------------------- loop thread: jobs ---- */

static void job_free(job_t *j)
{
    if (!j)
        return;
    for (size_t u = 0; j->ready && u < j->total_units; u++) {
        if (j->ready[u]) {
            search_result_close(&j->ready[u]->res);
            json_decref(j->ready[u]->rows);
            free(j->ready[u]);
        }
    }
    free(j->ready);
    if (j->merged_init)
        search_result_close(&j->merged);
    search_plan_free(j->plan);
    json_decref(j->spec);
    json_decref(j->pending_rows);
    free(j);
}

static void job_remove(sweeps_t *s, job_t *j)
{
    pthread_mutex_lock(&s->lock);
    for (job_t **p = &s->jobs; *p; p = &(*p)->next) {
        if (*p == j) {
            *p = j->next;
            break;
        }
    }
    pthread_mutex_unlock(&s->lock);
    job_free(j);
}

static void mark_failed(sweeps_t *s, const char *id, const char *message)
{
    char now[32];
    db_now_iso(now);
    db_conn_t *c = db_acquire_writer(s->srv->db);
    sqlite3_stmt *st = db_stmt(c, DB_SWEEP_FAIL);
    if (st) {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, message, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, now, -1, SQLITE_STATIC);
        sqlite3_step(st);
        sqlite3_reset(st);
    }
    db_release(s->srv->db, c);
    log_event(LOG_WARN, "sweep failed", json_pack("{s:s,s:s}", "sweep", id, "error", message));
}

/* Rebuilds the merged search state stored at the last checkpoint: the counts as stored, and
 * each best entry re-estimated from its execution (deterministic, so identical). */
static int restore_search_state(job_t *j, const char *state_text, const char *sample_text,
                                fathom_error_t *err)
{
    json_t *state = json_loads(state_text, 0, NULL);
    if (!state)
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "stored state is not JSON");
    const search_request_t *req = search_plan_request(j->plan);
    json_t *counts = json_object_get(state, "counts");
    j->merged.total = (uint64_t)json_integer_value(json_object_get(counts, "total"));
    j->merged.good = (uint64_t)json_integer_value(json_object_get(counts, "good"));
    j->merged.bad = (uint64_t)json_integer_value(json_object_get(counts, "bad"));
    j->merged.estimated = (uint64_t)json_integer_value(json_object_get(counts, "estimated"));
    json_t *best = json_object_get(state, "best");
    size_t i;
    json_t *e;
    json_array_foreach(best, i, e)
    {
        if ((int)i >= j->merged.top_n)
            break;
        search_entry_t *entry = &j->merged.best[i];
        if (codec_llm_execution_decode(json_object_get(e, "execution"), "execution",
                                       &entry->execution, err) ||
            llm_estimate(&req->model, &req->system, &entry->execution, &entry->result, err)) {
            json_decref(state);
            return -1;
        }
        entry->unit = (uint32_t)json_integer_value(json_object_get(e, "unit"));
        entry->index = (uint32_t)json_integer_value(json_object_get(e, "index"));
        j->merged.n_best = (int)i + 1;
    }
    j->evaluations = j->merged.estimated;
    json_decref(state);
    json_t *sample = sample_text ? json_loads(sample_text, 0, NULL) : json_array();
    int bad = !sample || codec_search_points_decode(sample, &j->merged);
    json_decref(sample);
    if (bad)
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "stored sample is malformed");
    return 0;
}

static json_t *search_state_encode(const job_t *j)
{
    const search_request_t *req = search_plan_request(j->plan);
    json_t *doc = codec_search_result_encode(req, &j->merged);
    if (!doc)
        return NULL;
    json_t *best = json_object_get(doc, "best");
    for (int i = 0; i < j->merged.n_best && i < (int)json_array_size(best); i++) {
        json_t *e = json_array_get(best, (size_t)i);
        json_object_set_new(e, "unit", json_integer(j->merged.best[i].unit));
        json_object_set_new(e, "index", json_integer(j->merged.best[i].index));
    }
    json_object_set_new(json_object_get(doc, "counts"), "estimated",
                        json_integer((json_int_t)j->merged.estimated));
    json_object_del(doc, "points"); /* the sample has its own column */
    return doc;
}

/* Builds a job for a pending row and marks the row running. NULL (row failed) on a bad spec. */
static job_t *job_start(sweeps_t *s, const char *id, const char *kind, const char *spec_text,
                        long long done, const char *state_text, const char *sample_text)
{
    fathom_error_t err;
    fathom_error_clear(&err);
    codec_ctx_t ctx = {s->srv->presets};
    job_t *j = calloc(1, sizeof *j);
    if (!j)
        return NULL;
    snprintf(j->id, sizeof j->id, "%.64s", id);
    j->kind = strcmp(kind, "grid") == 0 ? SWEEP_GRID : SWEEP_OPTIMAL_EXECUTION;
    j->spec = json_loads(spec_text, 0, NULL);
    if (!j->spec) {
        fathom_error_set(&err, FATHOM_E_INTERNAL, NULL, "stored spec is not JSON");
        goto fail;
    }
    if (j->kind == SWEEP_OPTIMAL_EXECUTION) {
        search_request_t req;
        if (codec_search_decode(j->spec, &ctx, &req, &err))
            goto fail;
        j->plan = search_plan_create(&req, &err);
        if (!j->plan || search_result_init(&j->merged, req.options.top_n, &err))
            goto fail;
        j->merged_init = true;
        j->total_units = search_plan_units(j->plan);
    } else {
        j->npoints = codec_grid_size(j->spec);
        j->total_units = (size_t)((j->npoints + GRID_POINTS_PER_UNIT - 1) / GRID_POINTS_PER_UNIT);
        j->pending_rows = json_array();
    }
    if (done < 0 || (size_t)done > j->total_units) {
        fathom_error_set(&err, FATHOM_E_INTERNAL, NULL, "stored progress is out of range");
        goto fail;
    }
    j->next_dispatch = j->next_merge = j->committed = (size_t)done;
    if (j->kind == SWEEP_OPTIMAL_EXECUTION && state_text && done > 0 &&
        restore_search_state(j, state_text, sample_text, &err))
        goto fail;
    j->ready = calloc(j->total_units ? j->total_units : 1, sizeof *j->ready);
    if (!j->ready) {
        fathom_error_set(&err, FATHOM_E_INTERNAL, NULL, "out of memory");
        goto fail;
    }

    char now[32];
    db_now_iso(now);
    db_conn_t *c = db_acquire_writer(s->srv->db);
    sqlite3_stmt *st = db_stmt(c, DB_SWEEP_START);
    int changed = 0;
    if (st) {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)j->total_units);
        sqlite3_bind_text(st, 3, now, -1, SQLITE_STATIC);
        changed = sqlite3_step(st) == SQLITE_DONE && sqlite3_changes(db_handle(c)) == 1;
        sqlite3_reset(st);
    }
    db_release(s->srv->db, c);
    if (!changed) { /* cancelled meanwhile, or the database is not writable: try again later */
        job_free(j);
        return NULL;
    }
    j->last_commit_ms = uv_now(s->loop);
    log_event(LOG_INFO, done ? "sweep resumed" : "sweep started",
              json_pack("{s:s,s:s,s:I,s:I}", "sweep", id, "kind", kind, "units",
                        (json_int_t)j->total_units, "done", (json_int_t)done));
    return j;
fail:
    mark_failed(s, id, err.message[0] ? err.message : "cannot start");
    job_free(j);
    return NULL;
}

static int grid_result_best(sweeps_t *s, db_conn_t *c, const char *id, const json_t *spec,
                            json_t **best, json_t **counts);

/* Writes the merged, uncommitted part of j in one transaction; final also finishes the row.
 * Returns 0, or -1 when the row is no longer running (cancelled) or the write failed. */
static int commit(sweeps_t *s, job_t *j, bool final)
{
    int rc = -1;
    char *state = NULL, *result = NULL, *sample = NULL;
    json_t *res = NULL;
    db_conn_t *c = db_acquire_writer(s->srv->db);
    sqlite3 *h = db_handle(c);
    if (sqlite3_exec(h, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        goto out_release;

    if (j->kind == SWEEP_GRID) {
        size_t i;
        json_t *row;
        json_array_foreach(j->pending_rows, i, row)
        {
            sqlite3_stmt *st = db_stmt(c, DB_POINT_PUT);
            if (!st)
                goto rollback;
            char *values = json_dumps(json_object_get(row, "values"), JSON_COMPACT | JSON_SORT_KEYS);
            const char *response = json_string_value(json_object_get(row, "response"));
            json_t *sr = json_object_get(row, "sample_rate");
            sqlite3_bind_text(st, 1, j->id, -1, SQLITE_STATIC);
            sqlite3_bind_int64(st, 2, json_integer_value(json_object_get(row, "index")));
            sqlite3_bind_text(st, 3, values ? values : "{}", -1, SQLITE_TRANSIENT);
            sqlite3_bind_int(st, 4, (int)json_integer_value(json_object_get(row, "status")));
            sqlite3_bind_int(st, 5, json_is_true(json_object_get(row, "fits")));
            if (json_is_number(sr))
                sqlite3_bind_double(st, 6, json_number_value(sr));
            else
                sqlite3_bind_null(st, 6);
            sqlite3_bind_text(st, 7, response ? response : "{}", -1, SQLITE_STATIC);
            int step = sqlite3_step(st);
            sqlite3_reset(st);
            free(values);
            if (step != SQLITE_DONE)
                goto rollback;
        }
    } else {
        json_t *doc = search_state_encode(j);
        state = doc ? json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
        json_decref(doc);
        json_t *pts = codec_search_points_encode(&j->merged, true);
        sample = pts ? json_dumps(pts, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
        json_decref(pts);
        if (!state || !sample)
            goto rollback;
    }
    sqlite3_stmt *st = db_stmt(c, DB_SWEEP_CHECKPOINT);
    if (!st)
        goto rollback;
    sqlite3_bind_text(st, 1, j->id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)j->next_merge);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)j->evaluations);
    if (state)
        sqlite3_bind_text(st, 4, state, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 4);
    if (sample)
        sqlite3_bind_text(st, 5, sample, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 5);
    int ok = sqlite3_step(st) == SQLITE_DONE && sqlite3_changes(h) == 1;
    sqlite3_reset(st);
    if (!ok)
        goto rollback;

    if (final) {
        if (j->kind == SWEEP_GRID) {
            json_t *best = NULL, *counts = NULL;
            if (grid_result_best(s, c, j->id, j->spec, &best, &counts))
                goto rollback;
            res = json_pack("{s:o,s:o}", "best", best, "counts", counts);
        } else {
            res = codec_search_result_encode(search_plan_request(j->plan), &j->merged);
            json_object_del(res, "points"); /* in the sample column already */
        }
        result = res ? json_dumps(res, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
        char now[32];
        db_now_iso(now);
        st = db_stmt(c, DB_SWEEP_FINISH);
        if (!result || !st)
            goto rollback;
        sqlite3_bind_text(st, 1, j->id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, result, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, now, -1, SQLITE_STATIC);
        ok = sqlite3_step(st) == SQLITE_DONE && sqlite3_changes(h) == 1;
        sqlite3_reset(st);
        if (!ok)
            goto rollback;
    }
    if (sqlite3_exec(h, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        goto rollback;
    json_array_clear(j->pending_rows);
    j->committed = j->next_merge;
    rc = 0;
    goto out_release;
rollback:
    sqlite3_exec(h, "ROLLBACK", NULL, NULL, NULL);
out_release:
    db_release(s->srv->db, c);
    free(state);
    free(sample);
    free(result);
    json_decref(res);
    j->last_commit_ms = uv_now(s->loop);
    if (rc == 0 && final)
        log_event(LOG_INFO, "sweep done",
                  json_pack("{s:s,s:I}", "sweep", j->id, "evaluations", (json_int_t)j->evaluations));
    return rc;
}

/* ------------------------------------------------------------ pool threads: the work ---- */

static void run_grid_unit(chunk_t *ch)
{
    const codec_ctx_t ctx = {ch->s->srv->presets};
    const job_t *j = ch->job;
    uint64_t first = (uint64_t)ch->unit * GRID_POINTS_PER_UNIT;
    uint64_t last = first + GRID_POINTS_PER_UNIT;
    if (last > j->npoints)
        last = j->npoints;
    ch->rows = json_array();
    for (uint64_t idx = first; idx < last; idx++) {
        if (job_cancelled(j)) {
            ch->cancelled = 1;
            return;
        }
        json_t *body = NULL, *values = NULL, *norm = NULL, *resp = NULL;
        fathom_error_t err;
        fathom_error_clear(&err);
        if (codec_grid_point(j->spec, idx, &body, &values)) {
            fathom_error_set(&err, FATHOM_E_INTERNAL, NULL, "cannot build point");
        } else if ((norm = codec_estimate_endpoint.normalize(body, &ctx, &err)) != NULL) {
            resp = codec_estimate_endpoint.evaluate(norm, &ctx, &err);
            ch->evaluations++;
        }
        json_t *row = json_pack("{s:I,s:o}", "index", (json_int_t)idx, "values",
                                values ? values : json_object());
        if (resp) {
            json_t *summary = json_object_get(resp, "summary");
            json_object_set_new(row, "status", json_integer(200));
            json_object_set(row, "fits", json_object_get(resp, "fits_memory"));
            json_object_set(row, "sample_rate", json_object_get(summary, "sample_rate"));
        } else {
            json_t *e = json_pack("{s:s,s:s}", "code", fathom_code_name(err.code), "message",
                                  err.message);
            if (err.field[0])
                json_object_set_new(e, "field", json_string(err.field));
            resp = json_pack("{s:o}", "error", e);
            json_object_set_new(row, "status", json_integer(fathom_code_http_status(err.code)));
            json_object_set_new(row, "fits", json_false());
        }
        char *text = json_dumps(resp, JSON_COMPACT | JSON_REAL_PRECISION(17));
        json_object_set_new(row, "response", json_string(text ? text : "{}"));
        free(text);
        json_array_append_new(ch->rows, row);
        json_decref(body);
        json_decref(norm);
        json_decref(resp);
    }
}

static void work(uv_work_t *req)
{
    chunk_t *ch = req->data;
    metrics_worker_busy(ch->s->srv->metrics, 1);
    if (ch->job->kind == SWEEP_GRID) {
        run_grid_unit(ch);
    } else {
        fathom_error_t err;
        if (search_result_init(&ch->res, ch->job->merged.top_n, &err) == 0) {
            ch->cancelled = search_run_unit(ch->job->plan, ch->unit, &ch->res, &ch->job->cancel) ==
                            SEARCH_UNIT_CANCELLED;
            ch->evaluations = ch->res.estimated;
        } else {
            ch->cancelled = 1; /* out of memory: the unit is redone after a restart */
        }
    }
    metrics_worker_busy(ch->s->srv->metrics, -1);
}

/* ------------------------------------------------------- loop thread: scheduling ---- */

static void after_work(uv_work_t *req, int status);

static void load_pending(sweeps_t *s);

/* Queues units of the oldest jobs on free workers. */
static void fill(sweeps_t *s)
{
    for (job_t *j = s->jobs; j && s->inflight < s->srv->cfg.workers; j = j->next) {
        while (!j->dropped && !job_cancelled(j) && j->next_dispatch < j->total_units &&
               s->inflight < s->srv->cfg.workers) {
            chunk_t *ch = calloc(1, sizeof *ch);
            if (!ch)
                return;
            ch->s = s;
            ch->job = j;
            ch->unit = j->next_dispatch;
            ch->req.data = ch;
            if (uv_queue_work(s->loop, &ch->req, work, after_work) != 0) {
                free(ch);
                return;
            }
            j->next_dispatch++;
            j->inflight++;
            s->inflight++;
        }
    }
}

static void dispatch(sweeps_t *s)
{
    if (s->stopping)
        return;
    fill(s);
    if (s->inflight < s->srv->cfg.workers) {
        load_pending(s);
        fill(s);
    }
}

static void chunk_free(chunk_t *ch)
{
    if (ch->job && ch->job->kind == SWEEP_OPTIMAL_EXECUTION)
        search_result_close(&ch->res);
    json_decref(ch->rows);
    free(ch);
}

/* Merges finished units in order; checkpoints when due. */
static void advance(sweeps_t *s, job_t *j)
{
    while (j->next_merge < j->total_units && j->ready[j->next_merge]) {
        chunk_t *ch = j->ready[j->next_merge];
        j->ready[j->next_merge] = NULL;
        if (j->kind == SWEEP_GRID)
            json_array_extend(j->pending_rows, ch->rows);
        else
            search_merge(&j->merged, &ch->res);
        j->evaluations += ch->evaluations;
        metrics_evaluations(s->srv->metrics, ch->evaluations);
        chunk_free(ch);
        j->next_merge++;
    }
    bool final = j->next_merge == j->total_units;
    bool due = uv_now(s->loop) - j->last_commit_ms >= CHECKPOINT_MS;
    if (j->next_merge > j->committed && (final || due || s->stopping)) {
        if (commit(s, j, final)) {
            log_event(LOG_WARN, "sweep checkpoint not written (cancelled or database not "
                                "writable); dropping the job",
                      json_pack("{s:s}", "sweep", j->id));
            j->dropped = true;
            __atomic_store_n(&j->cancel, 1, __ATOMIC_RELAXED);
        }
    } else if (final && j->total_units == 0 && !j->dropped) {
        commit(s, j, true);
        j->dropped = true;
    }
    if (final)
        j->dropped = true; /* finished: nothing more to do for this job */
}

static void after_work(uv_work_t *req, int status)
{
    chunk_t *ch = req->data;
    sweeps_t *s = ch->s;
    job_t *j = ch->job;
    s->inflight--;
    j->inflight--;
    if (status == UV_ECANCELED || ch->cancelled || j->dropped) {
        chunk_free(ch);
    } else {
        j->ready[ch->unit] = ch;
        advance(s, j);
    }
    if (j->inflight == 0 && (j->dropped || s->stopping || job_cancelled(j))) {
        if (s->stopping && !j->dropped && j->next_merge > j->committed)
            commit(s, j, false);
        job_remove(s, j);
    }
    dispatch(s);
}

static bool job_known(sweeps_t *s, const char *id)
{
    for (job_t *j = s->jobs; j; j = j->next)
        if (strcmp(j->id, id) == 0)
            return true;
    return false;
}

/* Loads queued and interrupted sweeps from the database and starts any not yet in memory. */
static void load_pending(sweeps_t *s)
{
    typedef struct {
        char id[CODEC_HASH_HEX_LEN + 1], kind[32];
        char *spec, *state, *sample;
        long long done;
        bool queued;
    } pending_t;
    pending_t rows[64];
    int n = 0;
    db_conn_t *c = db_acquire(s->srv->db);
    sqlite3_stmt *st = db_stmt(c, DB_SWEEP_PENDING);
    while (st && n < 64 && sqlite3_step(st) == SQLITE_ROW) {
        const char *id = (const char *)sqlite3_column_text(st, 0);
        if (!id || job_known(s, id))
            continue;
        pending_t *p = &rows[n++];
        snprintf(p->id, sizeof p->id, "%.64s", id);
        snprintf(p->kind, sizeof p->kind, "%.31s", (const char *)sqlite3_column_text(st, 1));
        const unsigned char *spec = sqlite3_column_text(st, 2);
        const unsigned char *state = sqlite3_column_text(st, 5);
        p->spec = strdup(spec ? (const char *)spec : "");
        p->state = state ? strdup((const char *)state) : NULL;
        const unsigned char *sample = sqlite3_column_text(st, 6);
        p->sample = sample ? strdup((const char *)sample) : NULL;
        p->done = sqlite3_column_int64(st, 4);
        p->queued = strcmp((const char *)sqlite3_column_text(st, 3), "queued") == 0;
    }
    if (st)
        sqlite3_reset(st);
    db_release(s->srv->db, c);
    /* A queued sweep starts (turns 'running') only when the workers would otherwise run out of
     * units, so 'queued' in the database means waiting, and the queue limit counts waiters. */
    bool busy = false;
    for (job_t *j = s->jobs; j; j = j->next)
        if (!j->dropped && !job_cancelled(j) && j->next_dispatch < j->total_units)
            busy = true;
    for (int i = 0; i < n; i++) {
        job_t *j = NULL;
        if (!s->stopping && (!rows[i].queued || !busy)) {
            j = job_start(s, rows[i].id, rows[i].kind, rows[i].spec, rows[i].done,
                          rows[i].state, rows[i].sample);
            if (j && j->next_dispatch < j->total_units)
                busy = true;
        }
        if (j) {
            pthread_mutex_lock(&s->lock);
            job_t **tail = &s->jobs;
            while (*tail)
                tail = &(*tail)->next;
            *tail = j;
            pthread_mutex_unlock(&s->lock);
            if (j->next_merge == j->total_units)
                advance(s, j); /* nothing left to run: finish it now */
            if (j->dropped && j->inflight == 0)
                job_remove(s, j);
        }
        free(rows[i].spec);
        free(rows[i].state);
        free(rows[i].sample);
    }
}

static void on_wake(uv_async_t *a)
{
    sweeps_t *s = a->data;
    if (s->stopping)
        return;
    /* Jobs a user cancelled while idle between units: drop them now. */
    for (job_t *j = s->jobs, *next; j; j = next) {
        next = j->next;
        if (job_cancelled(j) && !j->dropped) {
            j->dropped = true;
            if (j->inflight == 0)
                job_remove(s, j);
        }
    }
    dispatch(s);
}

sweeps_t *sweeps_create(server_t *srv, uv_loop_t *loop, char *errbuf, size_t errlen)
{
    sweeps_t *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(errbuf, errlen, "out of memory");
        return NULL;
    }
    s->srv = srv;
    s->loop = loop;
    s->limits.max_grid_points = (uint64_t)srv->cfg.max_sweep_points;
    s->limits.max_search_executions = (uint64_t)srv->cfg.max_search_executions;
    pthread_mutex_init(&s->lock, NULL);
    /* libuv sizes its pool from this variable when the first work item is queued. */
    char n[16];
    snprintf(n, sizeof n, "%d", srv->cfg.workers);
    setenv("UV_THREADPOOL_SIZE", n, 1);
    if (uv_async_init(loop, &s->wake, on_wake)) {
        snprintf(errbuf, errlen, "cannot create the sweep wake-up handle");
        pthread_mutex_destroy(&s->lock);
        free(s);
        return NULL;
    }
    s->wake.data = s;
    s->wake_open = true;
    uv_async_send(&s->wake); /* resume interrupted sweeps once the loop runs */
    return s;
}

void sweeps_begin_shutdown(sweeps_t *s)
{
    if (!s)
        return;
    s->stopping = true;
    pthread_mutex_lock(&s->lock);
    for (job_t *j = s->jobs; j; j = j->next)
        __atomic_store_n(&j->cancel, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&s->lock);
    /* Jobs with nothing in flight would otherwise wait for a completion that never comes. */
    for (job_t *j = s->jobs, *next; j; j = next) {
        next = j->next;
        if (j->inflight == 0) {
            if (!j->dropped && j->next_merge > j->committed)
                commit(s, j, false);
            job_remove(s, j);
        }
    }
}

void sweeps_shutdown(sweeps_t *s)
{
    if (s && s->wake_open) {
        uv_close((uv_handle_t *)&s->wake, NULL);
        s->wake_open = false;
    }
}

void sweeps_free(sweeps_t *s)
{
    if (!s)
        return;
    while (s->jobs) {
        job_t *j = s->jobs;
        s->jobs = j->next;
        job_free(j);
    }
    pthread_mutex_destroy(&s->lock);
    free(s);
}

/* ------------------------------------------------------------ HTTP threads ---- */

int sweeps_submit(sweeps_t *s, const json_t *body, json_t **out, fathom_error_t *err)
{
    if (s->stopping)
        return fathom_error_set(err, FATHOM_E_UNAVAILABLE, NULL, "shutting down"), 503;
    codec_ctx_t ctx = {s->srv->presets};
    sweep_kind_t kind;
    uint64_t size = 0;
    json_t *spec = codec_sweep_normalize(body, &ctx, &s->limits, &kind, &size, err);
    if (!spec)
        return fathom_code_http_status(err->code);
    char id[CODEC_HASH_HEX_LEN + 1], now[32];
    char *text = codec_canonical_dump(spec);
    int rc = 0;
    if (!text || codec_config_hash("sweep", spec, id)) {
        json_decref(spec);
        free(text);
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory"), 500;
    }
    json_decref(spec);
    db_now_iso(now);

    db_conn_t *c = db_acquire_writer(s->srv->db);
    sqlite3 *h = db_handle(c);
    long long queued = 0;
    int inserted = 0, requeued = 0;
    sqlite3_stmt *st = db_stmt(c, DB_SWEEP_COUNT_QUEUED);
    if (st && sqlite3_step(st) == SQLITE_ROW)
        queued = sqlite3_column_int64(st, 0);
    if (st)
        sqlite3_reset(st);
    st = db_stmt(c, DB_SWEEP_GET);
    int exists = 0;
    if (st) {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        exists = sqlite3_step(st) == SQLITE_ROW;
        sqlite3_reset(st);
    }
    if (!exists && queued >= s->srv->cfg.max_queued_sweeps) {
        rc = 429;
        fathom_error_set(err, FATHOM_E_QUEUE_FULL, NULL,
                         "%lld sweeps are waiting (the limit is %d); retry later", queued,
                         s->srv->cfg.max_queued_sweeps);
        goto out;
    }
    if (!exists) {
        st = db_stmt(c, DB_SWEEP_INSERT);
        if (st) {
            sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
            sqlite3_bind_text(st, 2, sweep_kind_names[kind], -1, SQLITE_STATIC);
            sqlite3_bind_text(st, 3, text, -1, SQLITE_STATIC);
            sqlite3_bind_int64(st, 4, (sqlite3_int64)size);
            sqlite3_bind_text(st, 5, now, -1, SQLITE_STATIC);
            inserted = sqlite3_step(st) == SQLITE_DONE;
            sqlite3_reset(st);
        }
        db_note_write(s->srv->db, inserted);
        if (!inserted) {
            rc = 503;
            fathom_error_set(err, FATHOM_E_UNAVAILABLE, NULL,
                             "cannot store the sweep: %s", sqlite3_errmsg(h));
            goto out;
        }
    } else if (queued < s->srv->cfg.max_queued_sweeps) {
        /* Posting a cancelled or failed sweep again runs it again, from the start. */
        if (sqlite3_exec(h, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK) {
            st = db_stmt(c, DB_SWEEP_REQUEUE);
            if (st) {
                sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
                sqlite3_bind_text(st, 2, now, -1, SQLITE_STATIC);
                requeued = sqlite3_step(st) == SQLITE_DONE && sqlite3_changes(h) == 1;
                sqlite3_reset(st);
            }
            if (requeued && (st = db_stmt(c, DB_POINTS_DELETE)) != NULL) {
                sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
                sqlite3_step(st);
                sqlite3_reset(st);
            }
            sqlite3_exec(h, requeued ? "COMMIT" : "ROLLBACK", NULL, NULL, NULL);
        }
    }
out:
    db_release(s->srv->db, c);
    free(text);
    if (rc)
        return rc;
    uv_async_send(&s->wake);
    char url[128];
    snprintf(url, sizeof url, "/v1/sweep/%s", id);
    *out = json_pack("{s:s,s:s,s:s,s:b}", "id", id, "status_url", url, "kind",
                     sweep_kind_names[kind], "created", inserted || requeued);
    return 202;
}

static json_t *text_json(sqlite3_stmt *st, int col)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    return t ? json_loads((const char *)t, 0, NULL) : NULL;
}

static json_t *text_or_null(sqlite3_stmt *st, int col)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    return t ? json_string((const char *)t) : json_null();
}

/* Best grid points so far, and the counts of points stored. */
static int grid_result_best(sweeps_t *s, db_conn_t *c, const char *id, const json_t *spec,
                            json_t **best, json_t **counts)
{
    (void)s;
    *best = json_array();
    sqlite3_stmt *st = db_stmt(c, DB_POINT_BEST);
    if (!st)
        goto fail;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 2, codec_grid_top_n(spec));
    while (sqlite3_step(st) == SQLITE_ROW) {
        long long idx = sqlite3_column_int64(st, 0);
        json_t *resp = text_json(st, 2), *body = NULL, *values = NULL;
        codec_grid_point(spec, (uint64_t)idx, &body, &values);
        json_array_append_new(
            *best, json_pack("{s:I,s:o*,s:O*,s:O*,s:O*}", "index", (json_int_t)idx, "values",
                             values, "execution", json_object_get(body, "execution"), "summary",
                             json_object_get(resp, "summary"), "stats",
                             json_object_get(resp, "stats")));
        json_decref(body);
        json_decref(resp);
    }
    sqlite3_reset(st);
    st = db_stmt(c, DB_POINT_COUNT_GOOD);
    if (!st)
        goto fail;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    long long stored = 0, good = 0;
    if (sqlite3_step(st) == SQLITE_ROW) {
        stored = sqlite3_column_int64(st, 0);
        good = sqlite3_column_int64(st, 1);
    }
    sqlite3_reset(st);
    *counts = json_pack("{s:I,s:I,s:I,s:I}", "total", (json_int_t)stored, "good",
                        (json_int_t)good, "bad", (json_int_t)(stored - good), "points",
                        (json_int_t)codec_grid_size(spec));
    return 0;
fail:
    json_decref(*best);
    *best = NULL;
    return -1;
}

int sweeps_status(sweeps_t *s, const char *id, json_t **out, fathom_error_t *err)
{
    if (!codec_is_hash(id))
        return fathom_error_set(err, FATHOM_E_NOT_FOUND, NULL,
                                "'%s' is not a sweep id (64 lowercase hex digits)", id),
               404;
    db_conn_t *c = db_acquire(s->srv->db);
    sqlite3_stmt *st = db_stmt(c, DB_SWEEP_GET);
    int rc = 404;
    if (!st) {
        rc = 503;
        fathom_error_set(err, FATHOM_E_UNAVAILABLE, NULL, "database read failed");
        goto out;
    }
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_ROW) {
        sqlite3_reset(st);
        fathom_error_set(err, FATHOM_E_NOT_FOUND, NULL, "no sweep %s", id);
        goto out;
    }
    /* Copied: column text lives only until the statement is reset. */
    char kind[32], status[16];
    snprintf(kind, sizeof kind, "%s", (const char *)sqlite3_column_text(st, 1));
    snprintf(status, sizeof status, "%s", (const char *)sqlite3_column_text(st, 3));
    json_t *spec = text_json(st, 2), *result = text_json(st, 9), *state = text_json(st, 8);
    json_error_t jerr;
    json_t *doc = json_pack_ex(&jerr, 0,
        "{s:s,s:s,s:s,s:{s:I,s:I},s:I,s:I,s:o,s:o,s:o,s:o,s:O*}", "id", id, "kind", kind,
        "status", status, "progress", "done", (json_int_t)sqlite3_column_int64(st, 6), "total",
        (json_int_t)sqlite3_column_int64(st, 5), "size", (json_int_t)sqlite3_column_int64(st, 4),
        "evaluations", (json_int_t)sqlite3_column_int64(st, 7), "created_at", text_or_null(st, 11),
        "started_at", text_or_null(st, 12), "finished_at", text_or_null(st, 13), "error",
        text_or_null(st, 10), "spec", spec);
    sqlite3_reset(st);
    if (!doc) {
        log_msg(LOG_ERROR, "sweep status: %s", jerr.text);
        json_decref(spec);
        json_decref(result);
        json_decref(state);
        rc = 500;
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "cannot encode the sweep's status");
        goto out;
    }
    json_t *best = NULL, *counts = NULL;
    if (result) {
        best = json_incref(json_object_get(result, "best"));
        counts = json_incref(json_object_get(result, "counts"));
    } else if (strcmp(kind, "grid") == 0 && spec) {
        grid_result_best(s, c, id, spec, &best, &counts);
    } else if (state) {
        best = json_incref(json_object_get(state, "best"));
        counts = json_incref(json_object_get(state, "counts"));
        size_t i;
        json_t *e;
        json_array_foreach(best, i, e)
        {
            json_object_del(e, "unit");
            json_object_del(e, "index");
        }
        json_object_del(counts, "estimated");
    }
    json_object_set_new(doc, "best", best ? best : json_array());
    json_object_set_new(doc, "counts",
                        counts ? counts : json_pack("{s:i,s:i,s:i}", "total", 0, "good", 0, "bad", 0));
    json_decref(spec);
    json_decref(result);
    json_decref(state);
    *out = doc;
    rc = 200;
out:
    db_release(s->srv->db, c);
    return rc;
}

int sweeps_cancel(sweeps_t *s, const char *id, json_t **out, fathom_error_t *err)
{
    char now[32];
    db_now_iso(now);
    db_conn_t *c = db_acquire_writer(s->srv->db);
    sqlite3_stmt *st = db_stmt(c, DB_SWEEP_CANCEL);
    int changed = 0, ok = 0;
    if (st) {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, now, -1, SQLITE_STATIC);
        ok = sqlite3_step(st) == SQLITE_DONE;
        changed = ok && sqlite3_changes(db_handle(c)) == 1;
        sqlite3_reset(st);
    }
    db_release(s->srv->db, c);
    if (!ok)
        return fathom_error_set(err, FATHOM_E_UNAVAILABLE, NULL, "cannot write the database"),
               503;
    if (changed) {
        pthread_mutex_lock(&s->lock);
        for (job_t *j = s->jobs; j; j = j->next)
            if (strcmp(j->id, id) == 0)
                __atomic_store_n(&j->cancel, 1, __ATOMIC_RELAXED);
        pthread_mutex_unlock(&s->lock);
        uv_async_send(&s->wake);
        log_event(LOG_INFO, "sweep cancelled", json_pack("{s:s}", "sweep", id));
    }
    /* Cancelling a finished or already cancelled sweep is not an error: answer its status. */
    return sweeps_status(s, id, out, err);
}

int sweeps_sample(sweeps_t *s, const char *id, json_t **out, fathom_error_t *err)
{
    if (!codec_is_hash(id))
        return fathom_error_set(err, FATHOM_E_NOT_FOUND, NULL, "'%s' is not a sweep id", id), 404;
    db_conn_t *c = db_acquire(s->srv->db);
    sqlite3_stmt *st = db_stmt(c, DB_SWEEP_SAMPLE);
    int rc = 404;
    if (!st) {
        db_release(s->srv->db, c);
        return fathom_error_set(err, FATHOM_E_UNAVAILABLE, NULL, "database read failed"), 503;
    }
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_ROW) {
        fathom_error_set(err, FATHOM_E_NOT_FOUND, NULL, "no sweep %s", id);
    } else if (strcmp((const char *)sqlite3_column_text(st, 0), "grid") == 0) {
        fathom_error_set(err, FATHOM_E_NOT_FOUND, NULL,
                         "a grid sweep has every point in /v1/sweep/%s/results", id);
    } else {
        json_t *rows = text_json(st, 2);
        size_t i;
        json_t *row;
        /* Checkpoint rows carry their enumeration position; the answer's do not. */
        json_array_foreach(rows, i, row)
        {
            while (json_array_size(row) > 3)
                json_array_remove(row, 3);
        }
        *out = json_pack("{s:s,s:s,s:[sss],s:o}", "id", id, "status",
                         (const char *)sqlite3_column_text(st, 1), "columns", "sample_rate",
                         "mem_tier1_bytes", "mem_tier2_bytes", "points",
                         rows ? rows : json_array());
        rc = 200;
    }
    sqlite3_reset(st);
    db_release(s->srv->db, c);
    return rc;
}

int sweeps_list(sweeps_t *s, int limit, json_t **out, fathom_error_t *err)
{
    if (limit < 1 || limit > SWEEP_LIST_MAX)
        limit = SWEEP_LIST_MAX;
    db_conn_t *c = db_acquire(s->srv->db);
    sqlite3_stmt *st = db_stmt(c, DB_SWEEP_LIST);
    if (!st) {
        db_release(s->srv->db, c);
        return fathom_error_set(err, FATHOM_E_UNAVAILABLE, NULL, "database read failed"), 503;
    }
    sqlite3_bind_int(st, 1, limit);
    json_t *arr = json_array();
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *id = (const char *)sqlite3_column_text(st, 0);
        char url[128];
        snprintf(url, sizeof url, "/v1/sweep/%s", id);
        json_array_append_new(
            arr, json_pack("{s:s,s:s,s:s,s:s,s:I,s:{s:I,s:I},s:o,s:o,s:o}", "id", id, "kind",
                           (const char *)sqlite3_column_text(st, 1), "status",
                           (const char *)sqlite3_column_text(st, 2), "status_url", url, "size",
                           (json_int_t)sqlite3_column_int64(st, 3), "progress", "done",
                           (json_int_t)sqlite3_column_int64(st, 5), "total",
                           (json_int_t)sqlite3_column_int64(st, 4), "created_at",
                           text_or_null(st, 6), "started_at", text_or_null(st, 7),
                           "finished_at", text_or_null(st, 8)));
    }
    sqlite3_reset(st);
    db_release(s->srv->db, c);
    *out = json_pack("{s:o}", "sweeps", arr);
    return 200;
}

void routes_sweep_gauges(server_t *srv, long long out[5])
{
    memset(out, 0, 5 * sizeof out[0]);
    db_conn_t *c = db_acquire(srv->db);
    sqlite3_stmt *st = db_stmt(c, DB_SWEEP_STATE_COUNTS);
    while (st && sqlite3_step(st) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        for (int i = 0; i < 5; i++)
            if (name && strcmp(name, status_names[i]) == 0)
                out[i] = sqlite3_column_int64(st, 1);
    }
    if (st)
        sqlite3_reset(st);
    db_release(srv->db, c);
}

db_t *sweeps__db(sweeps_t *s)
{
    return s->srv->db;
}

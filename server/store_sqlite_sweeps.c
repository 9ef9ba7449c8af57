/* store_sqlite_sweeps.c — the sweeps' calls of store.h over SQLite: submitting, claiming,
 * checkpointing, finishing and cancelling sweeps, and reading their points by key.
 *
 * Every call is one transaction on one borrowed connection, released before returning. Reads of
 * points walk the (sweep_id, idx) primary key: a page is "idx >= first ORDER BY idx LIMIT n", so
 * a download made of many pages costs one short read each and never holds a reader (or the WAL)
 * between them. */
#include <stdlib.h>
#include <string.h>

#include "store_sqlite.h"


/* Runs a statement that changes at most one row; *changed says whether it did. */
static int step_change(db_conn_t *c, sqlite3_stmt *st, bool *changed)
{
    int ok = sqlite3_step(st) == SQLITE_DONE;
    *changed = ok && sqlite3_changes(db_handle(c)) == 1;
    sqlite3_reset(st);
    return ok ? 0 : -1;
}

static int count_queued(db_conn_t *c, long long *queued)
{
    sqlite3_stmt *st = db_stmt(c, DB_SWEEP_COUNT_QUEUED);
    if (!st || sqlite3_step(st) != SQLITE_ROW)
        return -1;
    *queued = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    return 0;
}

/* Whether sweep id is stored, and whether it ended without a result (cancelled or failed: a
 * submission runs it again, so it takes a queue slot as a new one does). */
static int exists(db_conn_t *c, const char *id, bool *found, bool *rerun)
{
    sqlite3_stmt *st = db_stmt(c, DB_SWEEP_GET);
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    int step = sqlite3_step(st);
    *found = step == SQLITE_ROW;
    if (*found) {
        store_sweep_status_t status =
            store__status_from_text((const char *)sqlite3_column_text(st, 3));
        *rerun = status == STORE_SWEEP_CANCELLED || status == STORE_SWEEP_FAILED;
    }
    sqlite3_reset(st);
    return step == SQLITE_ROW || step == SQLITE_DONE ? 0 : -1;
}

int sqlite_sweep_submit(store_t *store, const char *id, const char *kind, const char *spec,
                        long long size, int max_queued, bool *created, fathom_error_t *err)
{
    db_t *db = sqlite_of(store);
    char now[32];
    store_now_iso(now);
    *created = false;
    db_conn_t *c = db_acquire_writer(db);
    long long queued = 0;
    bool found = false, rerun = false,
         ok = db_begin(c, true) == 0 && count_queued(c, &queued) == 0 &&
              exists(c, id, &found, &rerun) == 0;
    int rc = -1;
    if (!ok) {
        db_fail(c, err, "cannot store the sweep");
    } else if ((!found || rerun) && queued >= max_queued) {
        fathom_error_set(err, FATHOM_E_QUEUE_FULL, NULL,
                         "%lld sweeps are waiting (the limit is %d); retry later", queued,
                         max_queued);
    } else if (!found) {
        sqlite3_stmt *st = db_stmt(c, DB_SWEEP_INSERT);
        if (st) {
            sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
            sqlite3_bind_text(st, 2, kind, -1, SQLITE_STATIC);
            sqlite3_bind_text(st, 3, spec, -1, SQLITE_STATIC);
            sqlite3_bind_int64(st, 4, size);
            sqlite3_bind_text(st, 5, now, -1, SQLITE_STATIC);
        }
        if (st && step_change(c, st, created) == 0)
            rc = 0;
        else
            db_fail(c, err, "cannot store the sweep");
    } else if (rerun) {
        /* Posting a cancelled or failed sweep again runs it again, from the start. */
        sqlite3_stmt *st = db_stmt(c, DB_SWEEP_REQUEUE);
        if (st) {
            sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
            sqlite3_bind_text(st, 2, now, -1, SQLITE_STATIC);
        }
        if (!st || step_change(c, st, created)) {
            db_fail(c, err, "cannot requeue the sweep");
        } else if (*created && (st = db_stmt(c, DB_POINTS_DELETE)) != NULL) {
            sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
            bool unused;
            rc = step_change(c, st, &unused) == 0 ? 0 : db_fail(c, err, "cannot requeue");
        } else {
            rc = *created ? db_fail(c, err, "cannot requeue the sweep") : 0;
        }
    } else {
        rc = 0; /* queued, running or done: nothing to do, not an error */
    }
    if (!db_end(c, rc == 0) && rc == 0)
        rc = db_fail(c, err, "cannot store the sweep");
    if (rc)
        *created = false;
    /* A refused queue slot is not a failed write. */
    if (rc == 0 || err->code == FATHOM_E_UNAVAILABLE)
        db_note_write(db, rc == 0);
    db_release(db, c);
    return rc;
}

/* Borrows a reader, opens a read transaction (one snapshot for the statements that follow) and
 * prepares statement `id`. NULL with err, and nothing borrowed, on failure; else read_end. */
static sqlite3_stmt *read_begin(db_t *db, db_stmt_id_t id, const char *what, db_conn_t **out,
                                fathom_error_t *err)
{
    db_conn_t *c = db_acquire(db);
    sqlite3_stmt *st = NULL;
    if (db_begin(c, false)) {
        db_fail(c, err, what);
    } else if ((st = db_stmt(c, id)) == NULL) {
        db_fail(c, err, what);
        db_end(c, false);
    }
    if (!st) {
        db_release(db, c);
        return NULL;
    }
    *out = c;
    return st;
}

static void read_end(db_t *db, db_conn_t *c)
{
    db_end(c, false); /* a read: nothing to commit */
    db_release(db, c);
}

/* Copies the current row of a sweep read (DB_SWEEP_GET, _LIST or _PENDING) into *sw; the copies'
 * error goes to *copy. The three select the same columns, NULL where they need none: id, kind,
 * spec, status, size, total, done, evaluations, state, result, error, created_at, started_at,
 * finished_at, sample. */
static void sweep_row(sqlite3_stmt *st, store_sweep_t *sw, fathom_error_t *copy)
{
    memset(sw, 0, sizeof *sw);
    db_column_copy(st, 0, sw->id, sizeof sw->id);
    db_column_copy(st, 1, sw->kind, sizeof sw->kind);
    sw->spec = db_column_dup(st, 2, copy);
    sw->status = store__status_from_text((const char *)sqlite3_column_text(st, 3));
    sw->size = sqlite3_column_int64(st, 4);
    sw->total = sqlite3_column_int64(st, 5);
    sw->done = sqlite3_column_int64(st, 6);
    sw->evaluations = sqlite3_column_int64(st, 7);
    sw->state = db_column_dup(st, 8, copy);
    sw->result = db_column_dup(st, 9, copy);
    sw->error = db_column_dup(st, 10, copy);
    db_column_copy(st, 11, sw->created_at, sizeof sw->created_at);
    db_column_copy(st, 12, sw->started_at, sizeof sw->started_at);
    db_column_copy(st, 13, sw->finished_at, sizeof sw->finished_at);
    sw->sample = db_column_dup(st, 14, copy);
}

int sqlite_sweep_get(store_t *store, const char *id, bool with_sample, store_sweep_t *out,
                     fathom_error_t *err)
{
    db_t *db = sqlite_of(store);
    memset(out, 0, sizeof *out);
    db_conn_t *c;
    int rc = -1;
    fathom_error_t copy = {0};
    sqlite3_stmt *st = read_begin(db, DB_SWEEP_GET, "cannot read the sweep", &c, err);
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    int step = sqlite3_step(st);
    if (step != SQLITE_ROW) {
        if (step == SQLITE_DONE)
            fathom_error_set(err, FATHOM_E_NOT_FOUND, NULL, "no sweep %s", id);
        else
            db_fail(c, err, "cannot read the sweep");
        sqlite3_reset(st);
        goto out;
    }
    sweep_row(st, out, &copy);
    sqlite3_reset(st);
    if (with_sample) {
        st = db_stmt(c, DB_SWEEP_SAMPLE);
        if (st)
            sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        if (!st || sqlite3_step(st) != SQLITE_ROW) {
            if (st)
                sqlite3_reset(st);
            db_fail(c, err, "cannot read the sweep's sample");
            goto out;
        }
        out->sample = db_column_dup(st, 2, &copy);
        sqlite3_reset(st);
    }
    if (copy.code)
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory reading sweep %s", id);
    else
        rc = 0;
out:
    read_end(db, c);
    if (rc)
        store_sweep_close(out);
    return rc;
}

int sqlite_sweep_cancel(store_t *store, const char *id, bool *changed, fathom_error_t *err)
{
    db_t *db = sqlite_of(store);
    char now[32];
    store_now_iso(now);
    db_conn_t *c = db_acquire_writer(db);
    sqlite3_stmt *st = db_stmt(c, DB_SWEEP_CANCEL);
    int rc = -1;
    *changed = false;
    if (st) {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, now, -1, SQLITE_STATIC);
        rc = step_change(c, st, changed);
    }
    if (rc)
        db_fail(c, err, "cannot write the database");
    db_note_write(db, rc == 0);
    db_release(db, c);
    return rc;
}

/* Hands each row of a sweep read (statement sid, ?1 bound to limit unless it is negative) to fn,
 * through store__sweep_deliver: 1 when fn asked to stop, -1 with err set (`what` on a database
 * failure), else 0. fn may call the store: the walk holds one connection, in no transaction. */
static int walk_sweeps(db_t *db, db_stmt_id_t sid, int limit, store_sweep_fn fn, void *ctx,
                       const char *what, fathom_error_t *err)
{
    db_conn_t *c = db_acquire(db);
    sqlite3_stmt *st = db_stmt(c, sid);
    int rc = 0, step = SQLITE_DONE;
    if (!st) {
        rc = db_fail(c, err, what);
        goto out;
    }
    if (limit >= 0)
        sqlite3_bind_int(st, 1, limit);
    while (rc == 0 && (step = sqlite3_step(st)) == SQLITE_ROW) {
        store_sweep_t sw;
        fathom_error_t copy = {0};
        sweep_row(st, &sw, &copy);
        rc = store__sweep_deliver(&sw, &copy, fn, ctx, err);
    }
    if (rc == 0 && step != SQLITE_DONE)
        rc = db_fail(c, err, what);
    sqlite3_reset(st);
out:
    db_release(db, c);
    return rc;
}

/* fn returning non-zero means it ran out of memory. */
int sqlite_sweep_list(store_t *store, int limit, store_sweep_fn fn, void *ctx, fathom_error_t *err)
{
    const int rc = walk_sweeps(sqlite_of(store), DB_SWEEP_LIST, limit, fn, ctx,
                               "cannot list sweeps", err);
    return rc > 0 ? fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory listing sweeps")
                  : rc;
}

/* fn returning non-zero stops the walk, which is no error (store.h). */
int sqlite_sweep_pending(store_t *store, store_sweep_fn fn, void *ctx, fathom_error_t *err)
{
    return walk_sweeps(sqlite_of(store), DB_SWEEP_PENDING, -1, fn, ctx,
                       "cannot read pending sweeps", err) < 0 ? -1 : 0;
}

static int update_sweep(db_t *db, db_stmt_id_t sid, const char *id, const char *text,
                        long long number, const char *state, fathom_error_t *err);

int sqlite_sweep_claim(store_t *store, const char *id, long long total_units, fathom_error_t *err)
{
    return update_sweep(sqlite_of(store), DB_SWEEP_START, id, NULL, total_units,
                        "waiting to run", err);
}

int sqlite_sweep_counts(store_t *store, long long out[STORE_SWEEP__COUNT], fathom_error_t *err)
{
    db_t *db = sqlite_of(store);
    memset(out, 0, STORE_SWEEP__COUNT * sizeof out[0]);
    db_conn_t *c = db_acquire(db);
    sqlite3_stmt *st = db_stmt(c, DB_SWEEP_STATE_COUNTS);
    int rc = 0, step = SQLITE_DONE;
    while (st && (step = sqlite3_step(st)) == SQLITE_ROW) {
        const unsigned char *name = sqlite3_column_text(st, 0);
        for (int i = 0; name && i < STORE_SWEEP__COUNT; i++)
            if (strcmp((const char *)name, store_sweep_status_names[i]) == 0)
                out[i] = sqlite3_column_int64(st, 1);
    }
    if (!st || step != SQLITE_DONE)
        rc = db_fail(c, err, "cannot count sweeps");
    if (st)
        sqlite3_reset(st);
    db_release(db, c);
    return rc;
}

static int put_point(db_conn_t *c, const char *id, const store_point_t *p)
{
    sqlite3_stmt *st = db_stmt(c, DB_POINT_PUT);
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, p->index);
    sqlite3_bind_text(st, 3, p->values, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 4, p->status);
    sqlite3_bind_int(st, 5, p->fits);
    if (p->has_sample_rate)
        sqlite3_bind_double(st, 6, p->sample_rate);
    else
        sqlite3_bind_null(st, 6);
    sqlite3_bind_text(st, 7, p->response, -1, SQLITE_STATIC);
    int step = sqlite3_step(st);
    sqlite3_reset(st);
    return step == SQLITE_DONE ? 0 : -1;
}

int sqlite_sweep_checkpoint(store_t *store, const store_checkpoint_t *cp, fathom_error_t *err)
{
    db_t *db = sqlite_of(store);
    db_conn_t *c = db_acquire_writer(db);
    int rc = -1;
    bool ok = db_begin(c, true) == 0, changed = false;
    for (size_t i = 0; ok && i < cp->npoints; i++)
        ok = put_point(c, cp->id, &cp->points[i]) == 0;
    sqlite3_stmt *st = ok ? db_stmt(c, DB_SWEEP_CHECKPOINT) : NULL;
    if (st) {
        sqlite3_bind_text(st, 1, cp->id, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, cp->done);
        sqlite3_bind_int64(st, 3, cp->evaluations);
        if (cp->state)
            sqlite3_bind_text(st, 4, cp->state, -1, SQLITE_STATIC);
        else
            sqlite3_bind_null(st, 4);
        if (cp->sample)
            sqlite3_bind_text(st, 5, cp->sample, -1, SQLITE_STATIC);
        else
            sqlite3_bind_null(st, 5);
    }
    ok = st && step_change(c, st, &changed) == 0;
    if (!ok)
        db_fail(c, err, "cannot write the checkpoint");
    else if (!changed)
        fathom_error_set(err, FATHOM_E_NOT_FOUND, NULL, "sweep %s is no longer running", cp->id);
    else
        rc = 0;
    if (!db_end(c, rc == 0) && rc == 0)
        rc = db_fail(c, err, "cannot commit the checkpoint");
    if (err->code != FATHOM_E_NOT_FOUND)
        db_note_write(db, rc == 0);
    db_release(db, c);
    return rc;
}

/* DB_SWEEP_START, DB_SWEEP_FINISH and DB_SWEEP_FAIL bind (id, text or number, now) and change
 * the sweep's row when it is in the state they expect: else -1 with FATHOM_E_NOT_FOUND saying the
 * sweep is not `state`. */
static int update_sweep(db_t *db, db_stmt_id_t sid, const char *id, const char *text,
                        long long number, const char *state, fathom_error_t *err)
{
    char now[32];
    store_now_iso(now);
    db_conn_t *c = db_acquire_writer(db);
    sqlite3_stmt *st = db_stmt(c, sid);
    bool changed = false;
    int rc = -1;
    if (st) {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        if (text)
            sqlite3_bind_text(st, 2, text, -1, SQLITE_STATIC);
        else
            sqlite3_bind_int64(st, 2, number);
        sqlite3_bind_text(st, 3, now, -1, SQLITE_STATIC);
        rc = step_change(c, st, &changed);
    }
    if (rc)
        db_fail(c, err, "cannot update the sweep");
    else if (!changed)
        rc = fathom_error_set(err, FATHOM_E_NOT_FOUND, NULL, "sweep %s is not %s", id, state);
    db_release(db, c);
    return rc;
}

int sqlite_sweep_finish(store_t *store, const char *id, const char *result, fathom_error_t *err)
{
    db_t *db = sqlite_of(store);
    return update_sweep(db, DB_SWEEP_FINISH, id, result, 0, "running", err);
}

int sqlite_sweep_fail(store_t *store, const char *id, const char *message, fathom_error_t *err)
{
    db_t *db = sqlite_of(store);
    return update_sweep(db, DB_SWEEP_FAIL, id, message, 0, "queued or running", err);
}

/* Reads rows of a point statement whose columns are idx, point_values, status, fits,
 * sample_rate, response. */
static int walk_points(db_conn_t *c, sqlite3_stmt *st, store_point_fn fn, void *ctx,
                       fathom_error_t *err)
{
    int step, rc = 0;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        const unsigned char *values = sqlite3_column_text(st, 1);
        const unsigned char *response = sqlite3_column_text(st, 5);
        store_point_t p = {
            .index = sqlite3_column_int64(st, 0),
            .values = values ? (char *)values : "{}",
            .status = sqlite3_column_int(st, 2),
            .fits = sqlite3_column_int(st, 3) != 0,
            .has_sample_rate = sqlite3_column_type(st, 4) != SQLITE_NULL,
            .sample_rate = sqlite3_column_double(st, 4),
            .response = response ? (char *)response : "{}",
        };
        if (fn(ctx, &p))
            break;
    }
    if (step != SQLITE_ROW && step != SQLITE_DONE)
        rc = db_fail(c, err, "cannot read the sweep's points");
    sqlite3_reset(st);
    return rc;
}

int sqlite_points_page(store_t *store, const char *id, long long first_index, long long max_rows,
                       store_point_fn fn, void *ctx, fathom_error_t *err)
{
    db_t *db = sqlite_of(store);
    db_conn_t *c = db_acquire(db);
    sqlite3_stmt *st = db_stmt(c, DB_POINT_PAGE);
    int rc;
    if (!st) {
        rc = db_fail(c, err, "cannot read the sweep's points");
    } else {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, first_index);
        sqlite3_bind_int64(st, 3, max_rows);
        rc = walk_points(c, st, fn, ctx, err);
    }
    db_release(db, c);
    return rc;
}

int sqlite_points_best(store_t *store, const char *id, int top_n, store_point_fn fn, void *ctx,
                       long long *stored, long long *good, fathom_error_t *err)
{
    db_t *db = sqlite_of(store);
    db_conn_t *c;
    int rc = -1;
    *stored = *good = 0;
    sqlite3_stmt *st = read_begin(db, DB_POINT_BEST, "cannot read the sweep's points", &c, err);
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 2, top_n);
    if (walk_points(c, st, fn, ctx, err))
        goto end;
    st = db_stmt(c, DB_POINT_COUNT_GOOD);
    if (!st) {
        db_fail(c, err, "cannot count the sweep's points");
        goto end;
    }
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW) {
        *stored = sqlite3_column_int64(st, 0);
        *good = sqlite3_column_int64(st, 1);
        rc = 0;
    } else {
        db_fail(c, err, "cannot count the sweep's points");
    }
    sqlite3_reset(st);
end:
    read_end(db, c);
    return rc;
}

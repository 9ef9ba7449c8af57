/* store_pg_sweeps.c — the sweeps' calls of store.h over PostgreSQL: submitting, claiming with a
 * lease, renewing, checkpointing, finishing and cancelling sweeps, and reading their points.
 *
 * Every call is one transaction on one borrowed connection (store_pg.h), released before it
 * returns. Writes that only the running replica may make (checkpoint, finish, renew) are
 * conditional on `owner` being this replica and the status still 'running', so a replica whose
 * lease lapsed (it stalled, another took over) or whose sweep was cancelled on another replica
 * gets FATHOM_E_NOT_FOUND and stops: it never writes over the new owner. Submits serialize on
 * an advisory lock so the queue limit holds across replicas. Points are read by key, one page
 * per call, as on SQLite. The units of a running search are claimed one by one in sweep_units
 * (owner and helpers alike, store.h): a claim is an insert, or the update of a row whose lease
 * lapsed, so two replicas never both hold a unit; a checkpoint records which replica ran each
 * stretch of its units in sweep_runs and deletes their sweep_units rows. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_pg.h"

/* Any constant: the key of the advisory lock that serializes submits (the queue's limit). */
#define PG_SUBMIT_LOCK "7232002"
#define LEASE_SQL "now() + interval '" STORE_PG_STR(PG_LEASE_SECONDS) " seconds'"
#define STORE_PG_STR2(x) #x
#define STORE_PG_STR(x) STORE_PG_STR2(x)

/* Inserts the sweep, or re-queues a cancelled or failed one from the start (a submission that
 * runs it again: it takes a queue slot as a new one does). */
static int submit_in(PGconn *c, const char *const params[5], int max_queued, bool *created,
                     fathom_error_t *err)
{
    long long n = 0;
    long long queued;
    bool kept; /* stored queued, running or done: nothing to do */
    if (pg_count_locked(c, PG_SUBMIT_LOCK,
                        "SELECT (SELECT COUNT(*) FROM sweeps WHERE status = 'queued'), "
                        "(SELECT COUNT(*) FROM sweeps WHERE id = $1 "
                        "AND status NOT IN ('cancelled', 'failed'))",
                        1, params, "cannot store the sweep", &queued, &kept, err))
        return -1;
    if (kept)
        return 0;
    if (queued >= max_queued)
        return fathom_error_set(err, FATHOM_E_QUEUE_FULL, NULL,
                                "%lld sweeps are waiting (the limit is %d); retry later", queued,
                                max_queued);
    if (pg_command(c, "INSERT INTO sweeps (id, kind, spec, status, size, created_at) "
                      "VALUES ($1, $2, $3, 'queued', $4, $5) ON CONFLICT (id) DO NOTHING",
                   5, params, &n, "cannot store the sweep", err))
        return -1;
    *created = n == 1;
    if (*created)
        return 0;
    const char *rq[] = {params[0], params[4]};
    if (pg_command(c, "UPDATE sweeps SET status = 'queued', total = 0, done = 0, "
                      "evaluations = 0, state = NULL, sample = NULL, result = NULL, error = NULL, "
                      "started_at = NULL, finished_at = NULL, owner = NULL, lease_until = NULL, "
                      "created_at = $2 WHERE id = $1 AND status IN ('cancelled', 'failed')",
                   2, rq, &n, "cannot requeue the sweep", err))
        return -1;
    *created = n == 1;
    if (*created && (pg_command(c, "DELETE FROM sweep_points WHERE sweep_id = $1", 1, rq, NULL,
                                "cannot requeue the sweep", err) ||
                     pg_command(c, "DELETE FROM sweep_runs WHERE sweep_id = $1", 1, rq, NULL,
                                "cannot requeue the sweep", err) ||
                     pg_command(c, "DELETE FROM sweep_units WHERE sweep_id = $1", 1, rq, NULL,
                                "cannot requeue the sweep", err)))
        return -1;
    return 0;
}

int pg_sweep_submit(store_t *store, const char *id, const char *kind, const char *spec,
                    long long size, int max_queued, bool *created, fathom_error_t *err)
{
    pg_t *pg = pg_of(store);
    char now[32], sz[32];
    store_now_iso(now);
    snprintf(sz, sizeof sz, "%lld", size);
    *created = false;
    PGconn *c = pg_acquire_write(pg, err);
    if (!c)
        return -1;
    const char *params[5] = {id, kind, spec, sz, now};
    int rc = pg_begin(c, err) == 0 ? submit_in(c, params, max_queued, created, err) : -1;
    rc = pg_finish_write(pg, c, rc, err);
    if (rc)
        *created = false;
    return rc;
}

/* Copies row i of a sweep read (get, list, pending) into *sw; the copies' error goes to *copy.
 * The three select the same columns, NULL where they need none: id, kind, spec, status, size,
 * total, done, evaluations, state, result, error, created_at, started_at, finished_at, runs,
 * sample. */
static void sweep_row(const PGresult *r, int i, store_sweep_t *sw, fathom_error_t *copy)
{
    memset(sw, 0, sizeof *sw);
    pg_copy(r, i, 0, sw->id, sizeof sw->id);
    pg_copy(r, i, 1, sw->kind, sizeof sw->kind);
    sw->spec = pg_dup(r, i, 2, copy);
    sw->status = store__status_from_text(PQgetvalue(r, i, 3));
    sw->size = pg_ll(r, i, 4);
    sw->total = pg_ll(r, i, 5);
    sw->done = pg_ll(r, i, 6);
    sw->evaluations = pg_ll(r, i, 7);
    sw->state = pg_dup(r, i, 8, copy);
    sw->result = pg_dup(r, i, 9, copy);
    sw->error = pg_dup(r, i, 10, copy);
    pg_copy(r, i, 11, sw->created_at, sizeof sw->created_at);
    pg_copy(r, i, 12, sw->started_at, sizeof sw->started_at);
    pg_copy(r, i, 13, sw->finished_at, sizeof sw->finished_at);
    sw->runs = pg_dup(r, i, 14, copy);
    sw->sample = pg_dup(r, i, 15, copy);
}

int pg_sweep_get(store_t *store, const char *id, bool with_sample, store_sweep_t *out,
                 fathom_error_t *err)
{
    memset(out, 0, sizeof *out);
    const char *params[] = {id, with_sample ? "t" : "f"};
    PGresult *r = pg_read(
        pg_of(store), "SELECT id, kind, spec, status, size, total, done, evaluations, state, result, error, "
           "created_at, started_at, finished_at, "
           "(SELECT json_agg(json_build_object('first_unit', first_unit, 'last_unit', last_unit, "
           "'replica', replica) ORDER BY first_unit) FROM sweep_runs WHERE sweep_id = $1), "
           "CASE WHEN $2::boolean THEN sample END FROM sweeps WHERE id = $1",
        2, params, "cannot read the sweep", err);
    int rc = -1;
    fathom_error_t copy = {0};
    if (r && PQntuples(r) == 1) {
        sweep_row(r, 0, out, &copy);
        if (copy.code)
            fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory reading sweep %s", id);
        else
            rc = 0;
    } else if (r) {
        fathom_error_set(err, FATHOM_E_NOT_FOUND, NULL, "no sweep %s", id);
    }
    PQclear(r);
    if (rc)
        store_sweep_close(out);
    return rc;
}

/* Runs one conditional UPDATE in its own transaction; *changed says whether a row changed. */
static int update_one(pg_t *pg, const char *sql, int n, const char *const *params, bool *changed,
                      const char *what, fathom_error_t *err)
{
    *changed = false;
    PGconn *c = pg_acquire_write(pg, err);
    if (!c)
        return -1;
    long long rows = 0;
    int rc = pg_command(c, sql, n, params, &rows, what, err);
    *changed = rc == 0 && rows == 1;
    pg_note_write(pg, rc == 0);
    pg_release(pg, c);
    return rc;
}

/* update_one for an UPDATE that must change its row: -1 with FATHOM_E_NOT_FOUND and the
 * message fmt when it changed none (the sweep or unit is not in the state asked for). */
static int update_row(pg_t *pg, const char *sql, int n, const char *const *params,
                      const char *what, fathom_error_t *err, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));
static int update_row(pg_t *pg, const char *sql, int n, const char *const *params,
                      const char *what, fathom_error_t *err, const char *fmt, ...)
{
    bool changed;
    if (update_one(pg, sql, n, params, &changed, what, err))
        return -1;
    if (changed)
        return 0;
    va_list ap;
    va_start(ap, fmt);
    fathom_error_vset(err, FATHOM_E_NOT_FOUND, NULL, fmt, ap);
    va_end(ap);
    return -1;
}

int pg_sweep_cancel(store_t *store, const char *id, bool *changed, fathom_error_t *err)
{
    char now[32];
    store_now_iso(now);
    const char *params[] = {id, now};
    return update_one(pg_of(store),
                      "UPDATE sweeps SET status = 'cancelled', finished_at = $2, owner = NULL, "
                      "lease_until = NULL WHERE id = $1 AND status IN ('queued', 'running')",
                      2, params, changed, "cannot write the database", err);
}

/* Hands each row of a sweep read (r: read whole, the connection already released, so fn may
 * call the store) to fn through store__sweep_deliver, and clears r: 1 when fn asked to stop, -1
 * (err set by pg_read when r is NULL), else 0. */
static int walk_sweeps(PGresult *r, store_sweep_fn fn, void *ctx, fathom_error_t *err)
{
    if (!r)
        return -1;
    int rc = 0;
    for (int i = 0; i < PQntuples(r) && rc == 0; i++) {
        store_sweep_t sw;
        fathom_error_t copy = {0};
        sweep_row(r, i, &sw, &copy);
        rc = store__sweep_deliver(&sw, &copy, fn, ctx, err);
    }
    PQclear(r);
    return rc;
}

/* fn returning non-zero means it ran out of memory. */
int pg_sweep_list(store_t *store, int limit, store_sweep_fn fn, void *ctx, fathom_error_t *err)
{
    char lim[16];
    snprintf(lim, sizeof lim, "%d", limit);
    const char *params[] = {lim};
    PGresult *r = pg_read(pg_of(store),
                          "SELECT id, kind, NULL, status, size, total, done, NULL, NULL, NULL, "
                          "NULL, created_at, started_at, finished_at, NULL, NULL FROM sweeps "
                          "ORDER BY created_at COLLATE \"C\" DESC, id COLLATE \"C\" LIMIT $1",
                          1, params, "cannot list sweeps", err);
    const int rc = walk_sweeps(r, fn, ctx, err);
    return rc > 0 ? fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory listing sweeps")
                  : rc;
}

/* Queued sweeps, and running ones that are ours or whose lease lapsed (their owner died): a
 * sweep another live replica runs is not pending here. fn returning non-zero stops the walk. */
int pg_sweep_pending(store_t *store, store_sweep_fn fn, void *ctx, fathom_error_t *err)
{
    pg_t *pg = pg_of(store);
    const char *params[] = {pg_replica(pg)};
    PGresult *r = pg_read(pg,
                          "SELECT id, kind, spec, status, NULL, NULL, done, evaluations, state, "
                          "NULL, NULL, NULL, NULL, NULL, NULL, sample "
                          "FROM sweeps WHERE status = 'queued' OR (status = 'running' AND (owner IS NULL OR "
                          "owner = $1 OR lease_until < now())) "
                          "ORDER BY status = 'running' DESC, created_at COLLATE \"C\", "
                          "id COLLATE \"C\"",
                          1, params, "cannot read pending sweeps", err);
    return walk_sweeps(r, fn, ctx, err) < 0 ? -1 : 0;
}

/* Claims the sweep if it waits, or runs under a lease that is ours or lapsed. SKIP LOCKED: when
 * another replica is claiming (or checkpointing) it right now, this one moves on at once
 * instead of queueing behind that transaction; the sweep is simply not ours. */
int pg_sweep_claim(store_t *store, const char *id, long long total_units, fathom_error_t *err)
{
    pg_t *pg = pg_of(store);
    char now[32], total[32];
    store_now_iso(now);
    snprintf(total, sizeof total, "%lld", total_units);
    const char *params[] = {id, total, now, pg_replica(pg)};
    return update_row(pg,
                        "UPDATE sweeps SET status = 'running', total = $2, "
                        "started_at = COALESCE(started_at, $3), owner = $4, lease_until = " LEASE_SQL
                        " WHERE id = (SELECT id FROM sweeps WHERE id = $1 AND "
                        "status IN ('queued', 'running') AND "
                        "(owner IS NULL OR owner = $4 OR lease_until < now()) FOR UPDATE SKIP LOCKED)",
                        4, params, "cannot update the sweep", err,
                        "sweep %s is not waiting to run (or another replica runs it)", id);
}

int pg_sweep_renew(store_t *store, const char *id, fathom_error_t *err)
{
    pg_t *pg = pg_of(store);
    const char *params[] = {id, pg_replica(pg)};
    bool changed;
    if (update_row(pg,
                     "UPDATE sweeps SET lease_until = " LEASE_SQL
                     " WHERE id = $1 AND status = 'running' AND owner = $2",
                     2, params, "cannot renew the lease", err, "sweep %s is no longer running here",
                     id))
        return -1;
    /* and the units this owner claimed and has not checkpointed yet */
    return update_one(pg,
                      "UPDATE sweep_units SET lease_until = " LEASE_SQL
                      " WHERE sweep_id = $1 AND replica = $2 AND state = 'running'",
                      2, params, &changed, "cannot renew the lease", err);
}

int pg_sweep_release(store_t *store, const char *id, fathom_error_t *err)
{
    pg_t *pg = pg_of(store);
    const char *params[] = {id, pg_replica(pg)};
    bool changed;
    if (update_one(pg,
                   "UPDATE sweeps SET owner = NULL, lease_until = NULL "
                   "WHERE id = $1 AND status = 'running' AND owner = $2",
                   2, params, &changed, "cannot release the lease", err))
        return -1;
    return update_one(pg,
                      "DELETE FROM sweep_units WHERE sweep_id = $1 AND replica = $2 AND "
                      "state = 'running'",
                      2, params, &changed, "cannot release the lease", err);
}

int pg_sweep_counts(store_t *store, long long out[STORE_SWEEP__COUNT], fathom_error_t *err)
{
    memset(out, 0, STORE_SWEEP__COUNT * sizeof out[0]);
    PGresult *r = pg_read(pg_of(store), "SELECT status, COUNT(*) FROM sweeps GROUP BY status", 0,
                          NULL, "cannot count sweeps", err);
    if (!r)
        return -1;
    for (int i = 0; i < PQntuples(r); i++)
        for (int k = 0; k < STORE_SWEEP__COUNT; k++)
            if (strcmp(PQgetvalue(r, i, 0), store_sweep_status_names[k]) == 0)
                out[k] = pg_ll(r, i, 1);
    PQclear(r);
    return 0;
}

static int put_point(PGconn *c, const char *id, const store_point_t *p, fathom_error_t *err)
{
    char idx[32], status[16], rate[40];
    snprintf(idx, sizeof idx, "%lld", p->index);
    snprintf(status, sizeof status, "%d", p->status);
    snprintf(rate, sizeof rate, "%.17g", p->sample_rate);
    const char *params[] = {id,   idx, p->values, status, p->fits ? "1" : "0",
                            p->has_sample_rate ? rate : NULL, p->response};
    return pg_command(c, "INSERT INTO sweep_points (sweep_id, idx, point_values, status, fits, "
                         "sample_rate, response) VALUES ($1, $2, $3, $4, $5, $6, $7) "
                         "ON CONFLICT (sweep_id, idx) DO UPDATE SET point_values = $3, "
                         "status = $4, fits = $5, sample_rate = $6, response = $7",
                      7, params, NULL, "cannot write the checkpoint", err);
}

/* The checkpoint's statements, inside the caller's transaction: lock the row if it is still
 * ours and running, write the points and the progress, note which replica ran the units. */
static int checkpoint_in(pg_t *pg, PGconn *c, const store_checkpoint_t *cp, fathom_error_t *err)
{
    const char *who[] = {cp->id, pg_replica(pg)};
    PGresult *r = pg_query(c, "SELECT done FROM sweeps WHERE id = $1 AND status = 'running' "
                              "AND owner = $2 FOR UPDATE",
                           2, who, "cannot write the checkpoint", err);
    if (!r)
        return -1;
    bool ours = PQntuples(r) == 1;
    long long before = ours ? pg_ll(r, 0, 0) : 0;
    PQclear(r);
    if (!ours)
        return fathom_error_set(err, FATHOM_E_NOT_FOUND, NULL,
                                "sweep %s is no longer running here", cp->id);
    for (size_t i = 0; i < cp->npoints; i++)
        if (put_point(c, cp->id, &cp->points[i], err))
            return -1;
    char done[32], evals[32], first[32], now[32];
    snprintf(done, sizeof done, "%lld", cp->done);
    snprintf(evals, sizeof evals, "%lld", cp->evaluations);
    snprintf(first, sizeof first, "%lld", before);
    store_now_iso(now);
    const char *up[] = {cp->id, done, evals, cp->state, cp->sample};
    if (pg_command(c, "UPDATE sweeps SET done = $2, evaluations = $3, state = $4, sample = $5, "
                      "lease_until = " LEASE_SQL " WHERE id = $1",
                   5, up, NULL, "cannot write the checkpoint", err))
        return -1;
    if (cp->done <= before)
        return 0;
    /* Units in [before, done) that other replicas finished (sweep_units, state 'done') are
     * theirs; the rest ran here. One sweep_runs row per stretch of one replica. */
    const char *span[] = {cp->id, first, done};
    r = pg_query(c, "SELECT unit, replica FROM sweep_units WHERE sweep_id = $1 AND unit >= $2 "
                    "AND unit < $3 AND state = 'done' ORDER BY unit",
                 3, span, "cannot write the checkpoint", err);
    if (!r)
        return -1;
    int rc = 0, k = 0, nk = PQntuples(r);
    long long u = before;
    while (rc == 0 && u < cp->done) {
        long long next_helped = k < nk ? pg_ll(r, k, 0) : cp->done;
        long long end;
        const char *replica;
        if (u < next_helped) { /* ran here */
            end = next_helped;
            replica = pg_replica(pg);
        } else { /* a helper's stretch: consecutive units of one replica */
            replica = PQgetvalue(r, k, 1);
            end = u;
            while (k < nk && pg_ll(r, k, 0) == end && strcmp(PQgetvalue(r, k, 1), replica) == 0) {
                end++;
                k++;
            }
        }
        char a[32], b[32];
        snprintf(a, sizeof a, "%lld", u);
        snprintf(b, sizeof b, "%lld", end);
        const char *run[] = {cp->id, a, b, replica, now};
        rc = pg_command(c, "INSERT INTO sweep_runs (sweep_id, first_unit, last_unit, replica, at) "
                           "VALUES ($1, $2, $3, $4, $5) ON CONFLICT (sweep_id, first_unit) "
                           "DO UPDATE SET last_unit = $3, replica = $4, at = $5",
                        5, run, NULL, "cannot write the checkpoint", err);
        u = end;
    }
    PQclear(r);
    if (rc)
        return -1;
    const char *gone[] = {cp->id, done};
    return pg_command(c, "DELETE FROM sweep_units WHERE sweep_id = $1 AND unit < $2", 2, gone,
                      NULL, "cannot write the checkpoint", err);
}

int pg_sweep_checkpoint(store_t *store, const store_checkpoint_t *cp, fathom_error_t *err)
{
    pg_t *pg = pg_of(store);
    PGconn *c = pg_acquire_write(pg, err);
    if (!c)
        return -1;
    int rc = pg_begin(c, err) == 0 ? checkpoint_in(pg, c, cp, err) : -1;
    bool committed = pg_end(c, rc == 0, err);
    if (rc == 0 && !committed)
        rc = -1;
    if (err->code != FATHOM_E_NOT_FOUND)
        pg_note_write(pg, rc == 0);
    pg_release(pg, c);
    return rc;
}

int pg_sweep_finish(store_t *store, const char *id, const char *result, fathom_error_t *err)
{
    pg_t *pg = pg_of(store);
    char now[32];
    store_now_iso(now);
    const char *params[] = {id, result, now, pg_replica(pg)};
    return update_row(pg,
                        "UPDATE sweeps SET status = 'done', result = $2, finished_at = $3, "
                        "lease_until = NULL WHERE id = $1 AND status = 'running' AND owner = $4",
                        4, params, "cannot update the sweep", err, "sweep %s is not running here",
                        id);
}

int pg_sweep_fail(store_t *store, const char *id, const char *message, fathom_error_t *err)
{
    char now[32];
    store_now_iso(now);
    const char *params[] = {id, message, now};
    return update_row(pg_of(store),
                        "UPDATE sweeps SET status = 'failed', error = $2, finished_at = $3, "
                        "lease_until = NULL WHERE id = $1 AND status IN ('queued', 'running')",
                        3, params, "cannot update the sweep", err,
                        "sweep %s is not queued or running", id);
}

/* Calls fn per row of a point query (idx, point_values, status, fits, sample_rate, response). */
static void walk_points(const PGresult *r, store_point_fn fn, void *ctx)
{
    for (int i = 0; i < PQntuples(r); i++) {
        store_point_t p = {
            .index = pg_ll(r, i, 0),
            .values = PQgetisnull(r, i, 1) ? "{}" : PQgetvalue(r, i, 1),
            .status = (int)pg_ll(r, i, 2),
            .fits = pg_ll(r, i, 3) != 0,
            .has_sample_rate = !PQgetisnull(r, i, 4),
            .sample_rate = PQgetisnull(r, i, 4) ? 0 : strtod(PQgetvalue(r, i, 4), NULL),
            .response = PQgetisnull(r, i, 5) ? "{}" : PQgetvalue(r, i, 5),
        };
        if (fn(ctx, &p))
            break;
    }
}

int pg_points_page(store_t *store, const char *id, long long first_index, long long max_rows,
                   store_point_fn fn, void *ctx, fathom_error_t *err)
{
    char first[32], max[32];
    snprintf(first, sizeof first, "%lld", first_index);
    snprintf(max, sizeof max, "%lld", max_rows);
    const char *params[] = {id, first, max};
    PGresult *r = pg_read(pg_of(store),
                          "SELECT idx, point_values, status, fits, sample_rate, response "
                          "FROM sweep_points WHERE sweep_id = $1 AND idx >= $2 "
                          "ORDER BY idx LIMIT $3",
                          3, params, "cannot read the sweep's points", err);
    if (!r)
        return -1;
    walk_points(r, fn, ctx);
    PQclear(r);
    return 0;
}

/* The best points and the counts come from one statement (one snapshot): the counts ride on
 * every row, and on one row of NULLs when no point fits. */
int pg_points_best(store_t *store, const char *id, int top_n, store_point_fn fn, void *ctx,
                   long long *stored, long long *good, fathom_error_t *err)
{
    char top[16];
    snprintf(top, sizeof top, "%d", top_n);
    const char *params[] = {id, top};
    *stored = *good = 0;
    PGresult *r = pg_read(
        pg_of(store),
        "WITH counts AS (SELECT COUNT(*) AS n, COALESCE(SUM(fits), 0) AS g FROM sweep_points "
        "WHERE sweep_id = $1), best AS (SELECT idx, point_values, status, fits, sample_rate, "
        "response FROM sweep_points WHERE sweep_id = $1 AND fits = 1 "
        "ORDER BY sample_rate DESC NULLS LAST, idx ASC LIMIT $2) "
        "SELECT best.*, counts.n, counts.g FROM counts LEFT JOIN best ON true "
        "ORDER BY best.sample_rate DESC NULLS LAST, best.idx ASC",
        2, params, "cannot read the sweep's points", err);
    if (!r)
        return -1;
    if (PQntuples(r) > 0) {
        *stored = pg_ll(r, 0, 6);
        *good = pg_ll(r, 0, 7);
    }
    for (int i = 0; i < PQntuples(r) && !PQgetisnull(r, i, 0); i++) {
        store_point_t p = {
            .index = pg_ll(r, i, 0),
            .values = PQgetvalue(r, i, 1),
            .status = (int)pg_ll(r, i, 2),
            .fits = true,
            .has_sample_rate = !PQgetisnull(r, i, 4),
            .sample_rate = PQgetisnull(r, i, 4) ? 0 : strtod(PQgetvalue(r, i, 4), NULL),
            .response = PQgetvalue(r, i, 5),
        };
        if (fn(ctx, &p))
            break;
    }
    PQclear(r);
    return 0;
}

/* ------------------------------------------------- units shared by replicas ---- */

/* A unit row is free for a claim when it does not exist, or is still running under a lapsed
 * lease (its replica died or stalled), or under this replica's own lease. The last case is a
 * sweep this replica dropped (its checkpoint failed while the database was away) and took up
 * again from the checkpoint: the units it had claimed past it are its own, still renewed by
 * pg_sweep_renew, and would otherwise wait for a lease that never lapses. */
#define UNIT_CLAIM_SQL                                                                           \
    "INSERT INTO sweep_units (sweep_id, unit, replica, lease_until, state) "                    \
    "VALUES ($1, $2, $3, " LEASE_SQL ", 'running') ON CONFLICT (sweep_id, unit) DO UPDATE "     \
    "SET replica = $3, lease_until = " LEASE_SQL ", result = NULL, sample = NULL "              \
    "WHERE sweep_units.state = 'running' AND "                                                  \
    "(sweep_units.lease_until < now() OR sweep_units.replica = $3)"

int pg_unit_claim(store_t *store, const char *id, long long unit, bool *claimed,
                  fathom_error_t *err)
{
    char u[32];
    snprintf(u, sizeof u, "%lld", unit);
    const char *params[] = {id, u, pg_replica(pg_of(store))};
    return update_one(pg_of(store), UNIT_CLAIM_SQL, 3, params, claimed, "cannot claim a unit",
                      err);
}

/* The oldest running sweep of `kind` another live replica owns, and its highest free unit at
 * or above its checkpointed progress; then the claim (which loses, harmlessly, when another
 * replica claimed the same unit meanwhile). */
static int unit_help_once(store_t *store, const char *kind, store_unit_help_t *out,
                          fathom_error_t *err)
{
    pg_t *pg = pg_of(store);
    const char *params[] = {kind, pg_replica(pg)};
    out->spec = NULL;
    PGresult *r = pg_read(
        pg,
        "SELECT s.id, s.spec, (SELECT g.u FROM generate_series(s.total - 1, s.done, -1) AS g(u) "
        "WHERE NOT EXISTS (SELECT 1 FROM sweep_units su WHERE su.sweep_id = s.id AND "
        "su.unit = g.u AND (su.state = 'done' OR su.lease_until >= now())) LIMIT 1) AS free "
        "FROM sweeps s WHERE s.status = 'running' AND s.kind = $1 AND s.owner IS NOT NULL AND "
        "s.owner <> $2 AND s.lease_until >= now() AND s.total > 0 "
        "ORDER BY s.created_at COLLATE \"C\", s.id COLLATE \"C\"",
        2, params, "cannot look for units to help with", err);
    if (!r)
        return -1;
    int row = -1;
    for (int i = 0; i < PQntuples(r) && row < 0; i++)
        if (!PQgetisnull(r, i, 2))
            row = i;
    if (row < 0) {
        PQclear(r);
        return fathom_error_set(err, FATHOM_E_NOT_FOUND, NULL, "no unit to help with");
    }
    fathom_error_t copy = {0};
    pg_copy(r, row, 0, out->id, sizeof out->id);
    out->spec = pg_dup(r, row, 1, &copy);
    out->unit = pg_ll(r, row, 2);
    PQclear(r);
    if (copy.code || !out->spec) {
        free(out->spec);
        out->spec = NULL;
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory claiming a unit");
    }
    bool claimed = false;
    int rc = pg_unit_claim(store, out->id, out->unit, &claimed, err);
    if (rc || !claimed) {
        free(out->spec);
        out->spec = NULL;
        return rc ? -1 : 1;
    }
    return 0;
}

/* Helpers racing for the same unit: the loser looks again at once (a few times). */
int pg_unit_help(store_t *store, const char *kind, store_unit_help_t *out, fathom_error_t *err)
{
    for (int attempt = 0; attempt < 8; attempt++) {
        int rc = unit_help_once(store, kind, out, err);
        if (rc <= 0)
            return rc;
    }
    return fathom_error_set(err, FATHOM_E_NOT_FOUND, NULL, "units claimed elsewhere");
}

int pg_unit_renew(store_t *store, const char *id, long long unit, fathom_error_t *err)
{
    char u[32];
    snprintf(u, sizeof u, "%lld", unit);
    pg_t *pg = pg_of(store);
    const char *params[] = {id, u, pg_replica(pg)};
    return update_row(pg,
                      "UPDATE sweep_units SET lease_until = " LEASE_SQL " WHERE sweep_id = $1 AND "
                      "unit = $2 AND replica = $3 AND state = 'running'",
                      3, params, "cannot renew a unit's lease", err, "unit no longer ours");
}

int pg_unit_finish(store_t *store, const char *id, long long unit, const char *state,
                   const char *sample, long long evaluations, fathom_error_t *err)
{
    char u[32], ev[32];
    snprintf(u, sizeof u, "%lld", unit);
    snprintf(ev, sizeof ev, "%lld", evaluations);
    pg_t *pg = pg_of(store);
    const char *params[] = {id, u, pg_replica(pg), state, sample, ev};
    return update_row(pg,
                      "UPDATE sweep_units SET state = 'done', result = $4, sample = $5, "
                      "evaluations = $6 WHERE sweep_id = $1 AND unit = $2 AND replica = $3 AND "
                      "state = 'running'",
                      6, params, "cannot store a unit's result", err, "unit no longer ours");
}

int pg_unit_result(store_t *store, const char *id, long long unit, bool *done, char **state,
                   char **sample, long long *evaluations, fathom_error_t *err)
{
    char u[32];
    snprintf(u, sizeof u, "%lld", unit);
    const char *params[] = {id, u};
    *done = false;
    *state = *sample = NULL;
    PGresult *r = pg_read(pg_of(store),
                          "SELECT result, sample, evaluations FROM sweep_units WHERE sweep_id = $1 AND "
                          "unit = $2 AND state = 'done'",
                          2, params, "cannot read a unit's result", err);
    if (!r)
        return -1;
    int rc = 0;
    if (PQntuples(r) == 1) {
        fathom_error_t copy = {0};
        *state = pg_dup(r, 0, 0, &copy);
        *sample = pg_dup(r, 0, 1, &copy);
        if (copy.code || !*state || !*sample) {
            free(*state);
            free(*sample);
            *state = *sample = NULL;
            rc = fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory reading a unit");
        } else {
            *evaluations = pg_ll(r, 0, 2);
            *done = true;
        }
    }
    PQclear(r);
    return rc;
}

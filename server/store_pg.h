/* store_pg.h — PRIVATE to the PostgreSQL implementation of store.h (store_pg*.c): the pool of
 * libpq connections, reconnecting, transactions and error mapping. No other file includes it.
 *
 * DESIGN. One pool of at most pool_size connections per replica, opened lazily: a thread borrows
 * one with pg_acquire (waiting while all are busy) and gives it back with pg_release; a connection
 * is used by one thread at a time (libpq's rule). A call runs its statements in one transaction
 * on the borrowed connection and releases it before returning, so nothing is ever half-written
 * and no caller holds a connection between calls. When the server cannot be reached (a restart,
 * a network cut), the failing connection is closed, the store turns not ready (/readyz 503) and
 * connecting is retried with exponential back-off (PG_BACKOFF_MIN_MS doubling to
 * PG_BACKOFF_MAX_MS): in between, every call fails at once with FATHOM_E_UNAVAILABLE instead of
 * waiting on a dead server, and the next successful connection makes the store ready again.
 * Statements always take their values as parameters: no SQL is ever built from input.
 *
 * Sweeps are shared by every replica on the database through a lease: claiming a sweep records
 * this replica's id (`owner`) and an expiry on the database's clock; checkpoints and
 * store_sweep_renew extend it while the sweep is still running and ours, so a cancel or a lost
 * lease is seen by the owner within a renewal period; a replica that dies stops renewing and
 * another one claims the sweep once the lease lapses, resuming at its last checkpoint. */
#ifndef FATHOM_STORE_PG_H
#define FATHOM_STORE_PG_H

#include <libpq-fe.h>
#include <stdbool.h>

#include "store_backend.h"

#define PG_LEASE_SECONDS 10
#define PG_BACKOFF_MIN_MS 100
#define PG_BACKOFF_MAX_MS 5000

typedef struct pg_store pg_t;

/* Borrows a connection (connecting it if needed). NULL with FATHOM_E_UNAVAILABLE when the
 * database cannot be reached now. */
PGconn *pg_acquire(pg_t *pg, fathom_error_t *err);
/* Gives c back; a connection that broke is closed (and the store turns not ready). */
void pg_release(pg_t *pg, PGconn *c);

/* This replica's id (hostname-pid), recorded as the owner of the sweeps it runs. */
const char *pg_replica(pg_t *pg);

/* Runs sql with n text parameters (NULL is SQL NULL). Returns the result when it succeeded
 * (PGRES_COMMAND_OK or PGRES_TUPLES_OK; PQclear it), else NULL with err set to
 * FATHOM_E_UNAVAILABLE naming `what` and the server's message. */
PGresult *pg_query(PGconn *c, const char *sql, int n, const char *const *params, const char *what,
                   fathom_error_t *err);
/* pg_query on a pooled connection taken for this one statement (a read): the result, or NULL
 * with err set when no connection could be had or the statement failed. */
PGresult *pg_read(pg_t *pg, const char *sql, int n, const char *const *params, const char *what,
                  fathom_error_t *err);
/* A pooled connection for a write: err cleared first; NULL with err set, and the failed write
 * noted (pg_note_write), when none can be had. */
PGconn *pg_acquire_write(pg_t *pg, fathom_error_t *err);
/* Ends a write begun on c with pg_begin (commit when rc is 0, else roll back), notes its outcome
 * unless it was refused rather than failed (a full queue or preset slot is not a failed write:
 * only FATHOM_E_UNAVAILABLE counts), and gives c back. Returns rc, or -1 when the commit failed. */
int pg_finish_write(pg_t *pg, PGconn *c, int rc, fathom_error_t *err);
/* pg_query for a statement whose result is not needed: 0, or -1 with err; *changed (when not
 * NULL) says how many rows it changed. */
int pg_command(PGconn *c, const char *sql, int n, const char *const *params, long long *changed,
               const char *what, fathom_error_t *err);
/* The check of a limit on rows, inside the caller's transaction: takes the advisory lock `lock`
 * (the key, as SQL text) that serializes every writer of that limit across replicas, then runs
 * `count_sql`, which selects two counts: *count the first (rows under the limit), *found whether
 * the second (rows with the key being written) is non-zero. 0, or -1 with err (`what`). */
int pg_count_locked(PGconn *c, const char *lock, const char *count_sql, int n,
                    const char *const *params, const char *what, long long *count, bool *found,
                    fathom_error_t *err);
/* BEGIN, and COMMIT (when ok) or ROLLBACK: pg_end returns whether the commit happened (err is
 * set when a commit failed). */
int pg_begin(PGconn *c, fathom_error_t *err);
bool pg_end(PGconn *c, bool ok, fathom_error_t *err);

/* Notes the outcome of a write (store_writes_failing reads it). */
void pg_note_write(pg_t *pg, bool ok);

/* A copy of a text cell, NULL when it is NULL (err set to internal when the copy fails; left alone otherwise, so one error gathers a row's copies); a copy into a
 * fixed buffer ("" when NULL); a number. */
char *pg_dup(const PGresult *r, int row, int col, fathom_error_t *err);
void pg_copy(const PGresult *r, int row, int col, char *out, size_t outlen);
long long pg_ll(const PGresult *r, int row, int col);

/* Opens the pool (waiting for the server as `wait` says, NULL: one try) and migrates
 * (store_pg.c); store_pg_open (store_pg_ops.c) adds the table of calls. NULL with err. */
store_t *pg_open(const char *dsn, const char *migrations_dir, int pool_size,
                 const store_wait_t *wait, fathom_error_t *err);

/* The backend's calls (store_backend.h's table, filled in store_pg_ops.c): the pool's and the
 * cached results' (store_pg.c), the sweeps' (store_pg_sweeps.c), the presets'
 * (store_pg_presets.c). */
void pg_close(store_t *store);
bool pg_writes_failing(store_t *store);
int pg_schema_version(store_t *store);
bool pg_ready(store_t *store);
long long pg_file_size(store_t *store);
bool pg_shared(store_t *store);
int pg_result_get(store_t *store, const char *hash, store_result_t *out, fathom_error_t *err);
int pg_results_put(store_t *store, const store_result_row_t *rows, int n, fathom_error_t *err);
int pg_results_hit(store_t *store, const store_hit_t *hits, int n, fathom_error_t *err);

int pg_sweep_submit(store_t *store, const char *id, const char *kind, const char *spec,
                    long long size, int max_queued, bool *created, fathom_error_t *err);
int pg_sweep_get(store_t *store, const char *id, bool with_sample, store_sweep_t *out,
                 fathom_error_t *err);
int pg_sweep_cancel(store_t *store, const char *id, bool *changed, fathom_error_t *err);
int pg_sweep_list(store_t *store, int limit, store_sweep_fn fn, void *ctx, fathom_error_t *err);
int pg_sweep_pending(store_t *store, store_sweep_fn fn, void *ctx, fathom_error_t *err);
int pg_sweep_claim(store_t *store, const char *id, long long total_units, fathom_error_t *err);
int pg_sweep_renew(store_t *store, const char *id, fathom_error_t *err);
int pg_sweep_release(store_t *store, const char *id, fathom_error_t *err);
int pg_sweep_counts(store_t *store, long long out[STORE_SWEEP__COUNT], fathom_error_t *err);
int pg_sweep_checkpoint(store_t *store, const store_checkpoint_t *cp, fathom_error_t *err);
int pg_sweep_finish(store_t *store, const char *id, const char *result, fathom_error_t *err);
int pg_sweep_fail(store_t *store, const char *id, const char *message, fathom_error_t *err);
int pg_points_page(store_t *store, const char *id, long long first_index, long long max_rows,
                   store_point_fn fn, void *ctx, fathom_error_t *err);
int pg_points_best(store_t *store, const char *id, int top_n, store_point_fn fn, void *ctx,
                   long long *stored, long long *good, fathom_error_t *err);

int pg_unit_help(store_t *store, const char *kind, store_unit_help_t *out, fathom_error_t *err);
int pg_unit_claim(store_t *store, const char *id, long long unit, bool *claimed,
                  fathom_error_t *err);
int pg_unit_renew(store_t *store, const char *id, long long unit, fathom_error_t *err);
int pg_unit_finish(store_t *store, const char *id, long long unit, const char *state,
                   const char *sample, long long evaluations, fathom_error_t *err);
int pg_unit_result(store_t *store, const char *id, long long unit, bool *done, char **state,
                   char **sample, long long *evaluations, fathom_error_t *err);

/* The backend's user preset calls (store_pg_presets.c). */
int pg_preset_get(store_t *store, const char *kind, const char *name, store_preset_t *out,
                  fathom_error_t *err);
int pg_preset_put(store_t *store, const char *kind, const char *name, const char *body,
                  int max_count, bool *created, fathom_error_t *err);
int pg_preset_delete(store_t *store, const char *kind, const char *name, fathom_error_t *err);
int pg_preset_list(store_t *store, const char *kind, store_preset_fn fn, void *ctx,
                   fathom_error_t *err);

static inline pg_t *pg_of(store_t *store)
{
    return (pg_t *)store;
}

#endif

/* store.h — everything fathomd keeps on disk, behind typed calls: cached results, sweeps and
 * their points, user presets, the schema's migrations. No other server file sees SQL or a database type.
 *
 * DESIGN. The calls are the whole contract. store.c forwards each through the open backend's
 * table of calls (store_backend.h); store_sqlite*.c implement them over one SQLite file (WAL, a
 * pool of read connections, one writer connection; see store_sqlite.h), and a second backend
 * (PostgreSQL through libpq, store_pg*.c; see store_pg.h) is another table filled by another
 * file, chosen in store_open by the --db value's scheme. Each call is
 * one short transaction: no caller ever holds a connection or a transaction between calls, so a
 * slow client or a long sweep never pins a reader. Every call returns 0 or -1 with err filled
 * (FATHOM_E_NOT_FOUND for a missing row, FATHOM_E_UNAVAILABLE when the database cannot be read or
 * written, FATHOM_E_QUEUE_FULL for the sweep queue); the HTTP status is chosen from that code by
 * the HTTP layer, nowhere else. Strings handed out are copies owned by the caller, freed by the
 * matching _close; strings handed in are borrowed for the call only.
 *
 * Sweeps are claimed, not locked: store_sweep_claim moves a queued (or interrupted) sweep to
 * running for the process that runs it. On a shared backend (store_shared: PostgreSQL, several
 * replicas) the claim is a lease — owner replica and expiry — that checkpoints and
 * store_sweep_renew extend; a sweep whose owner stopped renewing is claimed by another replica
 * and resumes at its last checkpoint, and a sweep leased by a live replica is not pending for the
 * others. On SQLite (one process) there is no lease and renewing only checks the status. */
#ifndef FATHOM_STORE_H
#define FATHOM_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sweep_kind.h"

typedef struct store store_t;

/* Opens the store named by path: a postgresql:// (or postgres://) URI opens the PostgreSQL
 * backend (migrations from migrations_dir/postgresql, pool_size connections at most, opened as
 * needed); anything else is a SQLite file. For SQLite: opens (creating if needed) the store at path, checks it is sound, applies the migrations in
 * migrations_dir (files NNNN_name.sql, strictly named), and opens pool_size read connections.
 * NULL with err on failure. */
store_t *store_open(const char *path, const char *migrations_dir, int pool_size, fathom_error_t *err);
/* How long store_open_waiting keeps trying a PostgreSQL server that does not answer yet (a
 * replica started beside its database, or while it restarts), and whom it tells of each wait. */
typedef struct {
    int wait_s; /* give up after this long; 0: one try, as store_open */
    /* Called before each wait (may be NULL): why the try failed and the milliseconds until the
     * next one. */
    void (*on_wait)(const char *reason, int next_try_ms, void *ctx);
    void *ctx;
} store_wait_t;
/* store_open, except that a PostgreSQL server that is unreachable or not accepting connections
 * yet (starting up, shutting down, in recovery) is tried again with back-off until wait->wait_s
 * has passed. A server that answers and refuses (a wrong password, no such database) fails at
 * once: waiting cannot cure it. A SQLite file is opened once. */
store_t *store_open_waiting(const char *path, const char *migrations_dir, int pool_size,
                            const store_wait_t *wait, fathom_error_t *err);
/* Whether --db names a PostgreSQL database (a postgres:// or postgresql:// URI); else a file. */
bool store_is_postgres(const char *path);
/* path as it may be logged: a DSN's password replaced by "***". */
void store_display_name(const char *path, char *out, size_t outlen);
/* Closes the store (checkpointing the WAL). No call may be in progress. */
void store_close(store_t *st);
/* The schema version (highest applied migration), the size on disk in bytes, and whether the
 * store is open and migrated. */
int store_schema_version(store_t *st);
/* The highest schema version this build's migrations for db_path's backend know (migrations/,
 * or migrations/postgresql/ for a postgresql:// database); -1 with err when they cannot be
 * listed. A database above it was migrated by a newer fathomd. */
int store_known_schema_version(const char *db_path, const char *migrations_dir,
                               fathom_error_t *err);
long long store_file_size(store_t *st);
bool store_ready(store_t *st);
/* Whether other processes may run this store's sweeps too (a shared database): the scheduler
 * then polls for sweeps submitted elsewhere or left by a dead replica, and renews its leases. */
bool store_shared(store_t *st);
/* Whether the last write failed (a full disk, a read-only file), so callers can answer 'not
 * stored' without trying; the next successful write clears it. */
bool store_writes_failing(store_t *st);

/* Current time as ISO 8601 UTC with milliseconds ("2026-11-21T13:50:00.123Z"): every timestamp
 * the store keeps has this form. */
void store_now_iso(char out[32]);

/* ------------------------------------------------------------------ cached results ---- */

typedef struct {
    char *endpoint, *request, *response; /* owned copies */
    char created_at[32];
    long long hit_count;
} store_result_t;

typedef struct {
    const char *hash, *endpoint, *request, *response, *created_at;
} store_result_row_t;

typedef struct {
    const char *hash, *last_hit_at;
    long long count;
} store_hit_t;

/* The result stored under hash, or -1 with FATHOM_E_NOT_FOUND. Close with store_result_close. */
int store_result_get(store_t *st, const char *hash, store_result_t *out, fathom_error_t *err);
void store_result_close(store_result_t *r);
/* Stores n rows in one transaction (rows already stored are left as they are). */
int store_results_put(store_t *st, const store_result_row_t *rows, int n, fathom_error_t *err);
/* Adds hit counts in one transaction. */
int store_results_hit(store_t *st, const store_hit_t *hits, int n, fathom_error_t *err);

/* ------------------------------------------------------------------------- sweeps ---- */

typedef enum {
    STORE_SWEEP_QUEUED,
    STORE_SWEEP_RUNNING,
    STORE_SWEEP_DONE,
    STORE_SWEEP_FAILED,
    STORE_SWEEP_CANCELLED,
    STORE_SWEEP__COUNT
} store_sweep_status_t;

extern const char *const store_sweep_status_names[STORE_SWEEP__COUNT];

/* A sweep's row. Text columns are owned copies, NULL when empty in the store. */
typedef struct {
    char id[65];
    char kind[32];
    store_sweep_status_t status;
    long long size, total, done, evaluations;
    char *spec, *state, *sample, *result, *error;
    char *runs; /* shared backend: JSON array of {first_unit, last_unit, replica}; else NULL */
    char created_at[32], started_at[32], finished_at[32]; /* "" when not set */
} store_sweep_t;

void store_sweep_close(store_sweep_t *sw);

/* Creates the sweep `id` as queued, or re-queues it from the start when it was cancelled or
 * failed; *created says whether either happened (false: it already exists, queued, running or
 * done). FATHOM_E_QUEUE_FULL when max_queued sweeps already wait and this one would join them
 * (new, or cancelled or failed). */
int store_sweep_submit(store_t *st, const char *id, const char *kind, const char *spec,
                       long long size, int max_queued, bool *created, fathom_error_t *err);
/* The sweep's row, without its sample unless with_sample (the sample can be large). */
int store_sweep_get(store_t *st, const char *id, bool with_sample, store_sweep_t *out,
                    fathom_error_t *err);
/* Marks a queued or running sweep cancelled; *changed says whether it was. */
int store_sweep_cancel(store_t *st, const char *id, bool *changed, fathom_error_t *err);
/* Calls fn for the newest `limit` sweeps (without spec, state, sample or result). fn's row is
 * valid during the call only. */
typedef int (*store_sweep_fn)(void *ctx, const store_sweep_t *sw);
int store_sweep_list(store_t *st, int limit, store_sweep_fn fn, void *ctx, fathom_error_t *err);
/* Calls fn for every queued or running sweep, running ones first, then oldest first, with spec,
 * state and sample; fn returning non-zero stops the walk (not an error). fn may call the store
 * (the walk holds one reader meanwhile). */
int store_sweep_pending(store_t *st, store_sweep_fn fn, void *ctx, fathom_error_t *err);
/* Claims a queued or interrupted sweep for running: status running, total units recorded.
 * -1 with FATHOM_E_NOT_FOUND when it is no longer queued or running (cancelled meanwhile). */
int store_sweep_claim(store_t *st, const char *id, long long total_units, fathom_error_t *err);
/* Extends this process's lease on a running sweep. -1 with FATHOM_E_NOT_FOUND when the sweep is
 * no longer running or no longer ours (cancelled, failed, or taken over after the lease lapsed):
 * the caller stops working on it. */
int store_sweep_renew(store_t *st, const char *id, fathom_error_t *err);
/* Gives up this process's lease on a running sweep (it stays running at its last checkpoint,
 * for another replica to claim at once). A no-op on a store that is not shared. */
int store_sweep_release(store_t *st, const char *id, fathom_error_t *err);
/* Counts of sweeps in each status. */
int store_sweep_counts(store_t *st, long long out[STORE_SWEEP__COUNT], fathom_error_t *err);

/* One point as stored (a grid point, a plan candidate): the sweep-kind table's point
 * (codec/sweep_kind.h), its texts borrowed from the store for the duration of a callback. */
typedef sweep_point_t store_point_t;

/* A checkpoint: the merged units' points (grid) or merged state and sample (search) together
 * with the count of units done, in one transaction, only while the sweep is running (-1 with
 * FATHOM_E_NOT_FOUND when it was cancelled meanwhile). */
typedef struct {
    const char *id;
    long long done, evaluations;
    const store_point_t *points;
    size_t npoints;
    const char *state, *sample; /* search; NULL for a grid */
} store_checkpoint_t;

int store_sweep_checkpoint(store_t *st, const store_checkpoint_t *cp, fathom_error_t *err);
/* Finishes a running sweep with its result document (done), or fails a queued or running one
 * with its error: the error object's JSON text (codec/error_codec.h). */
int store_sweep_finish(store_t *st, const char *id, const char *result, fathom_error_t *err);
int store_sweep_fail(store_t *st, const char *id, const char *error, fathom_error_t *err);

/* Calls fn for up to max_rows points of sweep id with index >= first_index, in index order, in
 * one short read transaction (a cursor by key: the next call starts after the last index seen,
 * so no reader is held between calls whatever the client's speed). fn's point is valid during
 * the call only; fn returning non-zero stops early. */
typedef sweep_point_fn store_point_fn;
int store_points_page(store_t *st, const char *id, long long first_index, long long max_rows,
                      store_point_fn fn, void *ctx, fathom_error_t *err);
/* The top_n points that fit, fastest first (ties by index), and the counts of points stored and
 * of those that fit. */
int store_points_best(store_t *st, const char *id, int top_n, store_point_fn fn, void *ctx,
                      long long *stored, long long *good, fathom_error_t *err);

/* ------------------------------------------------- units shared by replicas ---- */

/* On a shared store the units of a running search are claimed one by one (store_shared only;
 * on other stores every call fails with FATHOM_E_NOT_FOUND and the scheduler never calls them).
 * The owner claims each unit before running it; other replicas help by claiming units from the
 * end of the range and store each unit's result (its state encoded as its kind encodes a
 * checkpoint, codec/sweep_kind.h) for the owner to merge in unit order. A claim is a lease, renewed while the
 * unit runs: a unit whose replica died is claimed again once its lease lapses. */
typedef struct {
    char id[65];
    char *spec; /* owned copy */
    long long unit;
} store_unit_help_t;

/* Claims, for this replica, the highest unit not yet claimed (or whose lease lapsed) of a
 * running sweep of `kind` that another live replica owns. -1 with FATHOM_E_NOT_FOUND when there
 * is none. Free out->spec. */
int store_unit_help(store_t *st, const char *kind, store_unit_help_t *out, fathom_error_t *err);
/* Claims unit of sweep id for this replica; *claimed false when another replica holds it under
 * a live lease or finished it. A unit this replica holds already is claimed again. */
int store_unit_claim(store_t *st, const char *id, long long unit, bool *claimed,
                     fathom_error_t *err);
/* Extends this replica's lease on a unit it runs. */
int store_unit_renew(store_t *st, const char *id, long long unit, fathom_error_t *err);
/* Stores the result of a unit this replica holds (FATHOM_E_NOT_FOUND when no longer ours). */
int store_unit_finish(store_t *st, const char *id, long long unit, const char *state,
                      const char *sample, long long evaluations, fathom_error_t *err);
/* A unit's stored result: *done false (nothing else set) while it is not finished; else state
 * and sample are owned copies, and *evaluations the unit's model evaluations. */
int store_unit_result(store_t *st, const char *id, long long unit, bool *done, char **state,
                      char **sample, long long *evaluations, fathom_error_t *err);

/* ------------------------------------------------------------------- user presets ---- */

/* Presets stored with PUT /v1/presets/<kind>/<name>, kept in the store so every fathomd sharing
 * it sees the same ones (read per request: one row by its key). kind is the URL segment
 * ("systems"); name is already checked by the caller (codec_preset_name_check); body is the
 * normalized object as canonical JSON. */
typedef struct {
    char *body;                        /* owned copy; NULL in a listing */
    char name[128];
    char created_at[32], updated_at[32];
} store_preset_t;

void store_preset_close(store_preset_t *p);
/* The preset kind/name, or -1 with FATHOM_E_NOT_FOUND. Close with store_preset_close. */
int store_preset_get(store_t *st, const char *kind, const char *name, store_preset_t *out,
                     fathom_error_t *err);
/* Creates or replaces kind/name in one transaction; *created says which. FATHOM_E_LIMIT_EXCEEDED
 * when it is new and max_count presets of that kind already exist. */
int store_preset_put(store_t *st, const char *kind, const char *name, const char *body,
                     int max_count, bool *created, fathom_error_t *err);
/* Removes kind/name, or -1 with FATHOM_E_NOT_FOUND when there is none. */
int store_preset_delete(store_t *st, const char *kind, const char *name, fathom_error_t *err);
/* Calls fn for every preset of kind in name order (without body). fn's row is valid during the
 * call only; fn returning non-zero stops the walk with FATHOM_E_INTERNAL (out of memory). */
typedef int (*store_preset_fn)(void *ctx, const store_preset_t *p);
int store_preset_list(store_t *st, const char *kind, store_preset_fn fn, void *ctx,
                      fathom_error_t *err);

#endif

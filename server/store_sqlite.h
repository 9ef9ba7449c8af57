/* store_sqlite.h — PRIVATE to the SQLite implementation of store.h (store_sqlite*.c): opening,
 * migrating, a small pool of connections and the prepared statements. No other file includes it.
 *
 * DESIGN. One database file, WAL mode, a busy timeout, foreign keys on. At start-up db_open
 * applies every migrations/NNNN_name.sql not yet recorded, each inside its own transaction
 * together with its row in schema_migrations and PRAGMA user_version, so a crash mid-migration
 * leaves the previous version intact. Afterwards the pool hands out connections: each thread
 * that reads borrows one with db_acquire and gives it back with db_release; a connection is
 * used by one thread at a time, so SQLite needs no mutex of its own (SQLITE_OPEN_NOMUTEX).
 * Writes all go through one more connection, db_acquire_writer, held by one thread at a time:
 * in-process writers queue on a mutex rather than in SQLite's sleeping busy handler.
 * Statements are prepared once per connection and reused
 * (db_stmt), always with bound parameters: no SQL is ever built from input. */
#ifndef FATHOM_STORE_SQLITE_H
#define FATHOM_STORE_SQLITE_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>

#include "store_backend.h"

typedef struct sqlite_store db_t;
typedef struct db_conn db_conn_t;

/* Statements every module shares; a module adds its own by appending here. */
typedef enum {
    DB_RESULT_GET,
    DB_RESULT_PUT,
    DB_RESULT_HIT,
    DB_SWEEP_INSERT,
    DB_SWEEP_GET,
    DB_SWEEP_COUNT_QUEUED,
    DB_SWEEP_CANCEL,
    DB_SWEEP_REQUEUE,
    DB_SWEEP_LIST,
    DB_SWEEP_PENDING,
    DB_SWEEP_START,
    DB_SWEEP_CHECKPOINT,
    DB_SWEEP_FINISH,
    DB_SWEEP_FAIL,
    DB_SWEEP_STATE_COUNTS,
    DB_SWEEP_SAMPLE,
    DB_POINT_PUT,
    DB_POINT_PAGE,
    DB_POINT_BEST,
    DB_POINT_COUNT_GOOD,
    DB_POINTS_DELETE,
    DB_PRESET_GET,
    DB_PRESET_COUNT,
    DB_PRESET_EXISTS,
    DB_PRESET_PUT,
    DB_PRESET_DELETE,
    DB_PRESET_LIST,
    DB_STMT__COUNT
} db_stmt_id_t;

/* Borrows a connection for reading, waiting for one to be free. */
db_conn_t *db_acquire(db_t *db);
/* Borrows the one writing connection: every write goes through it, one thread at a time. */
db_conn_t *db_acquire_writer(db_t *db);
void db_release(db_t *db, db_conn_t *c);

/* The prepared statement `id` on connection c, reset and with bindings cleared; NULL when it
 * cannot be prepared (the schema lacks its table). */
sqlite3_stmt *db_stmt(db_conn_t *c, db_stmt_id_t id);
sqlite3 *db_handle(db_conn_t *c);

/* Notes the outcome of a write through the writer (store_writes_failing reads it). */
void db_note_write(db_t *db, int ok);

/* Transactions on one connection: BEGIN IMMEDIATE (writer) or BEGIN (a reader's snapshot);
 * db_end commits when ok, else rolls back, and returns whether the commit happened. */
int db_begin(db_conn_t *c, bool write);
bool db_end(db_conn_t *c, bool ok);

/* Fills err with FATHOM_E_UNAVAILABLE and SQLite's message for the connection. Returns -1. */
int db_fail(db_conn_t *c, fathom_error_t *err, const char *what);
/* A copy of a text column, or NULL when it is NULL; err is set to internal when the copy fails
 * (and left alone otherwise, so one error gathers a row's copies). */
char *db_column_dup(sqlite3_stmt *st, int col, fathom_error_t *err);
/* Copies a text column into a fixed buffer ("" when NULL). */
void db_column_copy(sqlite3_stmt *st, int col, char *out, size_t outlen);

/* Opens the pool and migrates (store_sqlite.c); store_sqlite_open (store_sqlite_ops.c) adds the
 * table of calls. NULL with err. */
store_t *sqlite_open(const char *path, const char *migrations_dir, int pool_size, fathom_error_t *err);

/* The backend's calls (store_backend.h's table, filled in store_sqlite_ops.c; the public
 * store_* of store.h, on SQLite). */
void sqlite_close(store_t *store);
bool sqlite_writes_failing(store_t *store);
int sqlite_schema_version(store_t *store);
bool sqlite_ready(store_t *store);
long long sqlite_file_size(store_t *store);
int sqlite_result_get(store_t *store, const char *hash, store_result_t *out, fathom_error_t *err);
int sqlite_results_put(store_t *store, const store_result_row_t *rows, int n, fathom_error_t *err);
int sqlite_results_hit(store_t *store, const store_hit_t *hits, int n, fathom_error_t *err);
int sqlite_sweep_submit(store_t *store, const char *id, const char *kind, const char *spec,
                        long long size, int max_queued, bool *created, fathom_error_t *err);
int sqlite_sweep_get(store_t *store, const char *id, bool with_sample, store_sweep_t *out,
                     fathom_error_t *err);
int sqlite_sweep_cancel(store_t *store, const char *id, bool *changed, fathom_error_t *err);
int sqlite_sweep_list(store_t *store, int limit, store_sweep_fn fn, void *ctx, fathom_error_t *err);
int sqlite_sweep_pending(store_t *store, store_sweep_fn fn, void *ctx, fathom_error_t *err);
int sqlite_sweep_claim(store_t *store, const char *id, long long total_units, fathom_error_t *err);
int sqlite_sweep_counts(store_t *store, long long out[STORE_SWEEP__COUNT], fathom_error_t *err);
int sqlite_sweep_checkpoint(store_t *store, const store_checkpoint_t *cp, fathom_error_t *err);
int sqlite_sweep_finish(store_t *store, const char *id, const char *result, fathom_error_t *err);
int sqlite_sweep_fail(store_t *store, const char *id, const char *message, fathom_error_t *err);
int sqlite_points_page(store_t *store, const char *id, long long first_index, long long max_rows,
                       store_point_fn fn, void *ctx, fathom_error_t *err);
int sqlite_points_best(store_t *store, const char *id, int top_n, store_point_fn fn, void *ctx,
                       long long *stored, long long *good, fathom_error_t *err);
int sqlite_preset_get(store_t *store, const char *kind, const char *name, store_preset_t *out,
                      fathom_error_t *err);
int sqlite_preset_put(store_t *store, const char *kind, const char *name, const char *body,
                      int max_count, bool *created, fathom_error_t *err);
int sqlite_preset_delete(store_t *store, const char *kind, const char *name, fathom_error_t *err);
int sqlite_preset_list(store_t *store, const char *kind, store_preset_fn fn, void *ctx,
                       fathom_error_t *err);
/* A store_t * is the handle the SQLite backend allocated: its first member. */
static inline db_t *sqlite_of(store_t *store)
{
    return (db_t *)store;
}

#endif

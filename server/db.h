/* db.h — Fathom's SQLite store: opening, migrating, and a small pool of connections.
 *
 * DESIGN. One database file, WAL mode, a busy timeout, foreign keys on. At start-up db_open
 * applies every migrations/NNNN_name.sql not yet recorded, each inside its own transaction
 * together with its row in schema_migrations and PRAGMA user_version, so a crash mid-migration
 * leaves the previous version intact. Afterwards the pool hands out connections: each thread
 * that reads borrows one with db_acquire and gives it back with db_release; a connection is
 * used by one thread at a time, so SQLite needs no mutex of its own (SQLITE_OPEN_NOMUTEX).
 * Writes all go through one more connection, db_acquire_writer, held by one thread at a time:
 * in-process writers queue on a mutex rather than in SQLite's sleeping busy handler. Statements are prepared once per connection and reused
 * (db_stmt), always with bound parameters: no SQL is ever built from input. */
#ifndef FATHOM_DB_H
#define FATHOM_DB_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct db db_t;
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
    DB_STMT__COUNT
} db_stmt_id_t;

/* Opens (creating if needed) the database at path, checks it is a sound SQLite file, applies
 * migrations from migrations_dir, and opens pool_size connections. NULL with a message in
 * errbuf on failure (corrupt file, unreadable migrations, ...). */
db_t *db_open(const char *path, const char *migrations_dir, int pool_size, char *errbuf,
              size_t errlen);
/* Closes every connection (checkpointing the WAL). All connections must have been released. */
void db_close(db_t *db);

/* Borrows a connection for reading, waiting for one to be free. */
db_conn_t *db_acquire(db_t *db);
/* Borrows the one writing connection: every write goes through it, one thread at a time. */
db_conn_t *db_acquire_writer(db_t *db);
void db_release(db_t *db, db_conn_t *c);

/* The prepared statement `id` on connection c, reset and with bindings cleared; NULL when it
 * cannot be prepared (the schema lacks its table). */
sqlite3_stmt *db_stmt(db_conn_t *c, db_stmt_id_t id);
sqlite3 *db_handle(db_conn_t *c);

/* Whether the last write through the writer connection failed (a full disk, a read-only
 * file): writers note each outcome, so others can answer 'not stored' without trying. */
void db_note_write(db_t *db, int ok);
bool db_writes_failing(db_t *db);

/* The schema version (highest applied migration), and the database file's size in bytes. */
int db_schema_version(db_t *db);
long long db_file_size(db_t *db);
/* True once migrations are applied and the pool is open. */
bool db_ready(db_t *db);

/* Current time as ISO 8601 UTC with milliseconds ("2026-11-21T13:50:00.123Z"). */
void db_now_iso(char out[32]);

#endif

/* store_sqlite.c — the SQLite store: open, migrations, the connection pool, and the cached
 * results' calls (see store.h for the contract, store_sqlite.h for the pool's design; the sweeps'
 * calls are in store_sqlite_sweeps.c, the table of calls in store_sqlite_ops.c). */
#include "store_sqlite.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "canonical.h" /* FATHOM_ESTIMATOR_VERSION, recorded with each result */
#include "store_migrations.h"

#define DB_BUSY_TIMEOUT_MS 5000

static const char *const stmt_sql[DB_STMT__COUNT] = {
    [DB_RESULT_GET] = "SELECT endpoint, request, response, created_at, hit_count "
                      "FROM results WHERE hash = ?1",
    [DB_RESULT_PUT] = "INSERT INTO results (hash, endpoint, estimator_version, request, response, "
                      "created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT(hash) DO NOTHING",
    [DB_RESULT_HIT] = "UPDATE results SET hit_count = hit_count + ?3, last_hit_at = ?2 "
                      "WHERE hash = ?1",
    [DB_SWEEP_INSERT] = "INSERT INTO sweeps (id, kind, spec, status, size, created_at) "
                        "VALUES (?1, ?2, ?3, 'queued', ?4, ?5) ON CONFLICT(id) DO NOTHING",
    /* The three sweep reads select the same columns (store_sqlite_sweeps.c: sweep_row), NULL
     * where they need none. */
    [DB_SWEEP_GET] = "SELECT id, kind, spec, status, size, total, done, evaluations, state, result, "
                     "error, created_at, started_at, finished_at, NULL FROM sweeps WHERE id = ?1",
    [DB_SWEEP_COUNT_QUEUED] = "SELECT COUNT(*) FROM sweeps WHERE status = 'queued'",
    [DB_SWEEP_CANCEL] = "UPDATE sweeps SET status = 'cancelled', finished_at = ?2 "
                        "WHERE id = ?1 AND status IN ('queued', 'running')",
    [DB_SWEEP_REQUEUE] = "UPDATE sweeps SET status = 'queued', total = 0, done = 0, "
                         "evaluations = 0, state = NULL, sample = NULL, result = NULL, error = NULL, "
                         "started_at = NULL, finished_at = NULL, created_at = ?2 "
                         "WHERE id = ?1 AND status IN ('cancelled', 'failed')",
    [DB_SWEEP_LIST] = "SELECT id, kind, NULL, status, size, total, done, NULL, NULL, NULL, NULL, "
                      "created_at, started_at, finished_at, NULL "
                      "FROM sweeps ORDER BY created_at DESC, id LIMIT ?1",
    [DB_SWEEP_PENDING] = "SELECT id, kind, spec, status, NULL, NULL, done, evaluations, state, NULL, "
                         "NULL, NULL, NULL, NULL, sample FROM sweeps "
                         "WHERE status IN ('queued', 'running') "
                         "ORDER BY status = 'running' DESC, created_at, id",
    [DB_SWEEP_START] = "UPDATE sweeps SET status = 'running', total = ?2, "
                       "started_at = COALESCE(started_at, ?3) "
                       "WHERE id = ?1 AND status IN ('queued', 'running')",
    [DB_SWEEP_CHECKPOINT] = "UPDATE sweeps SET done = ?2, evaluations = ?3, state = ?4, "
                            "sample = ?5 WHERE id = ?1 AND status = 'running'",
    [DB_SWEEP_FINISH] = "UPDATE sweeps SET status = 'done', result = ?2, finished_at = ?3 "
                        "WHERE id = ?1 AND status = 'running'",
    [DB_SWEEP_FAIL] = "UPDATE sweeps SET status = 'failed', error = ?2, finished_at = ?3 "
                      "WHERE id = ?1 AND status IN ('queued', 'running')",
    [DB_SWEEP_STATE_COUNTS] = "SELECT status, COUNT(*) FROM sweeps GROUP BY status",
    [DB_SWEEP_SAMPLE] = "SELECT kind, status, sample FROM sweeps WHERE id = ?1",
    [DB_POINT_PUT] = "INSERT OR REPLACE INTO sweep_points (sweep_id, idx, point_values, status, "
                     "fits, sample_rate, response) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    [DB_POINT_PAGE] = "SELECT idx, point_values, status, fits, sample_rate, response "
                      "FROM sweep_points "
                      "WHERE sweep_id = ?1 AND idx >= ?2 ORDER BY idx LIMIT ?3",
    [DB_POINT_BEST] = "SELECT idx, point_values, status, fits, sample_rate, response "
                      "FROM sweep_points "
                      "WHERE sweep_id = ?1 AND fits = 1 "
                      "ORDER BY sample_rate DESC, idx ASC LIMIT ?2",
    [DB_POINT_COUNT_GOOD] = "SELECT COUNT(*), COALESCE(SUM(fits), 0) FROM sweep_points "
                            "WHERE sweep_id = ?1",
    [DB_POINTS_DELETE] = "DELETE FROM sweep_points WHERE sweep_id = ?1",
    [DB_PRESET_GET] = "SELECT body, created_at, updated_at FROM user_presets "
                      "WHERE kind = ?1 AND name = ?2",
    [DB_PRESET_COUNT] = "SELECT COUNT(*) FROM user_presets WHERE kind = ?1",
    [DB_PRESET_EXISTS] = "SELECT 1 FROM user_presets WHERE kind = ?1 AND name = ?2",
    [DB_PRESET_PUT] = "INSERT INTO user_presets (kind, name, body, created_at, updated_at) "
                      "VALUES (?1, ?2, ?3, ?4, ?4) ON CONFLICT(kind, name) "
                      "DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at",
    [DB_PRESET_DELETE] = "DELETE FROM user_presets WHERE kind = ?1 AND name = ?2",
    [DB_PRESET_LIST] = "SELECT name, created_at, updated_at FROM user_presets WHERE kind = ?1 "
                       "ORDER BY name",
};

struct db_conn {
    sqlite3 *handle;
    sqlite3_stmt *stmts[DB_STMT__COUNT];
    bool busy;
};

struct sqlite_store {
    store_t base; /* first: the store_t * callers hold points here */
    char *path;
    int lock_fd; /* holds flock(LOCK_EX) on the file while open; -1 when none */
    db_conn_t *conns;
    int nconns;
    /* The one connection that writes, so writers queue on a mutex here instead of spinning in
     * SQLite's busy handler (which sleeps in milliseconds). Readers never wait for it (WAL). */
    db_conn_t writer;
    bool writer_open;
    atomic_bool writes_failing;
    /* Lock order: a reader, then the writer. store_sweep_pending calls back with its reader
     * borrowed and the scheduler's callback claims sweeps (writer_lock) and reads points (a
     * second reader); no call waits for a reader while holding writer_lock. `lock` is a leaf,
     * held only to mark a reader busy or free. */
    pthread_mutex_t writer_lock;
    int version;
    pthread_mutex_t lock; /* guards the readers' busy flags; `freed` is signalled on release */
    pthread_cond_t freed;
};


static int open_handle(const char *path, sqlite3 **out, fathom_error_t *err)
{
    sqlite3 *h = NULL;
    int rc = sqlite3_open_v2(path, &h,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                             NULL);
    if (rc != SQLITE_OK) {
        fathom_error_set(err, FATHOM_E_UNAVAILABLE, NULL, "cannot open database %s: %s", path,
                 h ? sqlite3_errmsg(h) : sqlite3_errstr(rc));
        sqlite3_close(h);
        return -1;
    }
    sqlite3_busy_timeout(h, DB_BUSY_TIMEOUT_MS);
    sqlite3_extended_result_codes(h, 1);
    char *msg = NULL;
    /* journal_mode=WAL persists in the file; the others are per connection. */
    rc = sqlite3_exec(h,
                      "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
                      "PRAGMA foreign_keys=ON;",
                      NULL, NULL, &msg);
    if (rc != SQLITE_OK) {
        fathom_error_set(err, FATHOM_E_UNAVAILABLE, NULL, "database %s is not usable: %s", path,
                 msg ? msg : sqlite3_errmsg(h));
        sqlite3_free(msg);
        sqlite3_close(h);
        return -1;
    }
    *out = h;
    return 0;
}

/* A corrupt or foreign file must be refused at start-up with a clear message, not half-used. */
static int check_integrity(sqlite3 *h, const char *path, fathom_error_t *err)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(h, "PRAGMA quick_check", -1, &st, NULL);
    if (rc != SQLITE_OK) {
        fathom_error_set(err, FATHOM_E_UNAVAILABLE, NULL, "database %s is not a usable SQLite database: %s", path,
                 sqlite3_errmsg(h));
        return -1;
    }
    rc = sqlite3_step(st);
    const char *verdict = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
    int ok = verdict && strcmp(verdict, "ok") == 0;
    if (!ok)
        fathom_error_set(err, FATHOM_E_UNAVAILABLE, NULL, "database %s failed its integrity check: %s", path,
                 verdict ? verdict : sqlite3_errmsg(h));
    sqlite3_finalize(st);
    return ok ? 0 : -1;
}

/* One fathomd per SQLite file: a second one would run the same queued sweeps again (each
 * resumes them at start) and race the first over their checkpoints. flock, not fcntl, so the
 * lock is independent of SQLite's own; and the descriptor is closed only after SQLite's, since
 * closing any descriptor of the file drops the process's fcntl locks on it. */
static int lock_file(db_t *db, fathom_error_t *err)
{
    db->lock_fd = open(db->path, O_RDONLY | O_CLOEXEC);
    if (db->lock_fd < 0 || flock(db->lock_fd, LOCK_EX | LOCK_NB) == 0)
        return 0;
    if (errno == EWOULDBLOCK) {
        fathom_error_set(err, FATHOM_E_UNAVAILABLE, NULL,
                         "database %s is in use by another fathomd (one process per SQLite "
                         "file; several replicas share a postgresql:// database)", db->path);
        return -1;
    }
    return 0; /* a file system without flock (some network mounts): run unguarded, as before */
}

/* Applies one migration file and records it, in a transaction of its own (store_migration_fn;
 * ctx the handle). */
static int apply_one(void *ctx, const char *name, int v, const char *sql, fathom_error_t *err)
{
    sqlite3 *h = ctx;
    sqlite3_stmt *st;
    char *msg = NULL, now[32], tail[256];
    store_now_iso(now);
    int ok = sqlite3_exec(h, "BEGIN IMMEDIATE", NULL, NULL, &msg) == SQLITE_OK &&
             sqlite3_exec(h, sql, NULL, NULL, &msg) == SQLITE_OK;
    if (ok) {
        ok = sqlite3_prepare_v2(h,
                                "INSERT INTO schema_migrations (version, name, applied_at) "
                                "VALUES (?1, ?2, ?3)",
                                -1, &st, NULL) == SQLITE_OK;
        if (ok) {
            sqlite3_bind_int(st, 1, v);
            sqlite3_bind_text(st, 2, name, -1, SQLITE_TRANSIENT);
            sqlite3_bind_text(st, 3, now, -1, SQLITE_TRANSIENT);
            ok = sqlite3_step(st) == SQLITE_DONE;
            sqlite3_finalize(st);
        }
        /* user_version mirrors the table for tools (sqlite3 CLI) that read only the header. */
        snprintf(tail, sizeof tail, "PRAGMA user_version = %d; COMMIT", v);
        ok = ok && sqlite3_exec(h, tail, NULL, NULL, &msg) == SQLITE_OK;
    }
    if (ok)
        return 0;
    fathom_error_set(err, FATHOM_E_UNAVAILABLE, NULL, "migration %s failed: %s", name,
                     msg ? msg : sqlite3_errmsg(h));
    sqlite3_free(msg);
    sqlite3_exec(h, "ROLLBACK", NULL, NULL, NULL);
    return -1;
}

/* Applies migrations NNNN_name.sql above the recorded version, in order, one transaction each. */
static int migrate(sqlite3 *h, const char *dir, int *version, fathom_error_t *err)
{
    char *msg = NULL;
    if (sqlite3_exec(h,
                     "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
                     "name TEXT NOT NULL, applied_at TEXT NOT NULL)",
                     NULL, NULL, &msg) != SQLITE_OK) {
        fathom_error_set(err, FATHOM_E_UNAVAILABLE, NULL, "cannot create schema_migrations: %s", msg);
        sqlite3_free(msg);
        return -1;
    }
    sqlite3_stmt *st;
    int current = 0;
    if (sqlite3_prepare_v2(h, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations", -1, &st,
                           NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW)
            current = sqlite3_column_int(st, 0);
        sqlite3_finalize(st);
    }
    return store__apply_migrations(dir, current, apply_one, h, version, err);
}

store_t *sqlite_open(const char *path, const char *migrations_dir, int pool_size, fathom_error_t *err)
{
    db_t *db = calloc(1, sizeof *db);
    if (!db) {
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
        return NULL;
    }
    db->lock_fd = -1;
    db->path = strdup(path);
    if (!db->path) {
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
        free(db);
        return NULL;
    }
    pthread_mutex_init(&db->lock, NULL);
    pthread_cond_init(&db->freed, NULL);
    pthread_mutex_init(&db->writer_lock, NULL);

    sqlite3 *h = NULL;
    if (open_handle(path, &h, err) || lock_file(db, err) || check_integrity(h, path, err) ||
        migrate(h, migrations_dir, &db->version, err)) {
        sqlite3_close(h);
        sqlite_close(&db->base);
        return NULL;
    }
    sqlite3_close(h);

    db->conns = calloc((size_t)pool_size, sizeof *db->conns);
    if (!db->conns) {
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
        sqlite_close(&db->base);
        return NULL;
    }
    for (int i = 0; i < pool_size; i++) {
        if (open_handle(path, &db->conns[i].handle, err)) {
            sqlite_close(&db->base);
            return NULL;
        }
        db->nconns = i + 1;
    }
    if (open_handle(path, &db->writer.handle, err)) {
        sqlite_close(&db->base);
        return NULL;
    }
    db->writer_open = true;
    /* Page caches are bounded so memory stays flat under load: readers mostly look up one
     * row by its key, the writer walks the B-trees it inserts into. */
    for (int i = 0; i < db->nconns; i++)
        sqlite3_exec(db->conns[i].handle, "PRAGMA cache_size = -64", NULL, NULL, NULL);
    sqlite3_exec(db->writer.handle, "PRAGMA cache_size = -512", NULL, NULL, NULL);
    return &db->base;
}

static void close_conn(db_conn_t *c)
{
    for (int s = 0; s < DB_STMT__COUNT; s++)
        sqlite3_finalize(c->stmts[s]);
    sqlite3_close(c->handle);
}

void sqlite_close(store_t *store)
{
    db_t *db = sqlite_of(store);
    if (!db)
        return;
    if (db->writer_open)
        close_conn(&db->writer);
    for (int i = 0; i < db->nconns; i++)
        close_conn(&db->conns[i]);
    free(db->conns);
    if (db->lock_fd >= 0)
        close(db->lock_fd);
    free(db->path);
    pthread_mutex_destroy(&db->lock);
    pthread_cond_destroy(&db->freed);
    pthread_mutex_destroy(&db->writer_lock);
    free(db);
}

db_conn_t *db_acquire(db_t *db)
{
    pthread_mutex_lock(&db->lock);
    for (;;) {
        for (int i = 0; i < db->nconns; i++) {
            if (!db->conns[i].busy) {
                db->conns[i].busy = true;
                pthread_mutex_unlock(&db->lock);
                return &db->conns[i];
            }
        }
        pthread_cond_wait(&db->freed, &db->lock);
    }
}

db_conn_t *db_acquire_writer(db_t *db)
{
    pthread_mutex_lock(&db->writer_lock);
    return &db->writer;
}

void db_release(db_t *db, db_conn_t *c)
{
    if (c == &db->writer) {
        pthread_mutex_unlock(&db->writer_lock);
        return;
    }
    pthread_mutex_lock(&db->lock);
    c->busy = false;
    pthread_cond_signal(&db->freed);
    pthread_mutex_unlock(&db->lock);
}

sqlite3_stmt *db_stmt(db_conn_t *c, db_stmt_id_t id)
{
    /* Prepared on first use, so a server run against an older schema (its migrations directory
     * lacks newer tables) still serves what that schema has. */
    if (!c->stmts[id] &&
        sqlite3_prepare_v3(c->handle, stmt_sql[id], -1, SQLITE_PREPARE_PERSISTENT, &c->stmts[id],
                           NULL) != SQLITE_OK)
        return NULL;
    sqlite3_stmt *st = c->stmts[id];
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return st;
}

sqlite3 *db_handle(db_conn_t *c)
{
    return c->handle;
}

void db_note_write(db_t *db, int ok)
{
    atomic_store(&db->writes_failing, !ok);
}

bool sqlite_writes_failing(store_t *store)
{
    db_t *db = sqlite_of(store);
    return atomic_load(&db->writes_failing);
}

int sqlite_schema_version(store_t *store)
{
    db_t *db = sqlite_of(store);
    return db->version;
}

bool sqlite_ready(store_t *store)
{
    db_t *db = sqlite_of(store);
    return db && db->nconns > 0;
}

long long sqlite_file_size(store_t *store)
{
    db_t *db = sqlite_of(store);
    struct stat st;
    char wal[4096];
    long long total = 0;
    if (stat(db->path, &st) == 0)
        total += (long long)st.st_size;
    snprintf(wal, sizeof wal, "%s-wal", db->path);
    if (stat(wal, &st) == 0)
        total += (long long)st.st_size;
    return total;
}

int db_begin(db_conn_t *c, bool write)
{
    return sqlite3_exec(c->handle, write ? "BEGIN IMMEDIATE" : "BEGIN", NULL, NULL, NULL) ==
                   SQLITE_OK
               ? 0
               : -1;
}

bool db_end(db_conn_t *c, bool ok)
{
    if (ok && sqlite3_exec(c->handle, "COMMIT", NULL, NULL, NULL) == SQLITE_OK)
        return true;
    sqlite3_exec(c->handle, "ROLLBACK", NULL, NULL, NULL);
    return false;
}

int db_fail(db_conn_t *c, fathom_error_t *err, const char *what)
{
    return fathom_error_set(err, FATHOM_E_UNAVAILABLE, NULL, "%s: %s", what,
                            c ? sqlite3_errmsg(c->handle) : "no connection");
}

char *db_column_dup(sqlite3_stmt *st, int col, fathom_error_t *err)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    if (!t)
        return NULL;
    char *copy = strdup((const char *)t);
    if (!copy)
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory reading the database");
    return copy;
}

void db_column_copy(sqlite3_stmt *st, int col, char *out, size_t outlen)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    snprintf(out, outlen, "%s", t ? (const char *)t : "");
}

/* ------------------------------------------------------------------ cached results ---- */

int sqlite_result_get(store_t *store, const char *hash, store_result_t *out, fathom_error_t *err)
{
    db_t *db = sqlite_of(store);
    memset(out, 0, sizeof *out);
    db_conn_t *c = db_acquire(db);
    sqlite3_stmt *st = db_stmt(c, DB_RESULT_GET);
    int rc = -1;
    if (!st) {
        db_fail(c, err, "cannot read results");
        goto out;
    }
    sqlite3_bind_text(st, 1, hash, -1, SQLITE_STATIC);
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW) {
        fathom_error_t copy = {0};
        out->endpoint = db_column_dup(st, 0, &copy);
        out->request = db_column_dup(st, 1, &copy);
        out->response = db_column_dup(st, 2, &copy);
        db_column_copy(st, 3, out->created_at, sizeof out->created_at);
        out->hit_count = sqlite3_column_int64(st, 4);
        rc = store__result_copied(out, &copy, hash, err);
    } else if (step == SQLITE_DONE) {
        fathom_error_set(err, FATHOM_E_NOT_FOUND, NULL, "no result %s", hash);
    } else {
        db_fail(c, err, "cannot read results");
    }
    sqlite3_reset(st);
out:
    db_release(db, c);
    return rc;
}


typedef void (*bind_row_fn)(sqlite3_stmt *st, const void *rows, int i);

/* Writes n rows with one statement in one transaction through the writer. */
static int write_rows(db_t *db, db_stmt_id_t id, bind_row_fn bind, const void *rows, int n,
                      fathom_error_t *err)
{
    db_conn_t *conn = db_acquire_writer(db);
    bool ok = db_begin(conn, true) == 0;
    for (int i = 0; ok && i < n; i++) {
        sqlite3_stmt *st = db_stmt(conn, id);
        if (!st) {
            ok = false;
            break;
        }
        bind(st, rows, i);
        ok = sqlite3_step(st) == SQLITE_DONE;
        sqlite3_reset(st);
    }
    if (!ok)
        db_fail(conn, err, "cannot store results");
    ok = db_end(conn, ok);
    if (!ok && err->code == FATHOM_E_OK)
        db_fail(conn, err, "cannot commit results");
    db_release(db, conn);
    db_note_write(db, ok);
    return ok ? 0 : -1;
}

static void bind_result(sqlite3_stmt *st, const void *rows, int i)
{
    const store_result_row_t *r = (const store_result_row_t *)rows + i;
    sqlite3_bind_text(st, 1, r->hash, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, r->endpoint, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, FATHOM_ESTIMATOR_VERSION, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, r->request, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, r->response, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 6, r->created_at, -1, SQLITE_STATIC);
}

static void bind_hit(sqlite3_stmt *st, const void *rows, int i)
{
    const store_hit_t *h = (const store_hit_t *)rows + i;
    sqlite3_bind_text(st, 1, h->hash, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, h->last_hit_at, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, h->count);
}

int sqlite_results_put(store_t *store, const store_result_row_t *rows, int n, fathom_error_t *err)
{
    db_t *db = sqlite_of(store);
    fathom_error_clear(err);
    return write_rows(db, DB_RESULT_PUT, bind_result, rows, n, err);
}

int sqlite_results_hit(store_t *store, const store_hit_t *hits, int n, fathom_error_t *err)
{
    db_t *db = sqlite_of(store);
    fathom_error_clear(err);
    return write_rows(db, DB_RESULT_HIT, bind_hit, hits, n, err);
}

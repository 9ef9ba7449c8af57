/* store_pg.c — the PostgreSQL store (libpq): open, migrations under an advisory lock, the pool
 * of connections with reconnecting and back-off, and the cached results' calls. See store.h for
 * the contract and store_pg.h for the pool's design; the sweeps' calls are in store_pg_sweeps.c,
 * the table of calls in store_pg_ops.c. */
#include "store_pg.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "canonical.h" /* FATHOM_ESTIMATOR_VERSION, recorded with each result */
#include "store_migrations.h"

/* Seconds a connection attempt may take before the server counts as unreachable. */
#define PG_CONNECT_TIMEOUT "3"
/* /readyz checks the server with a round trip at most this often. */
#define PG_PING_MS 1000
/* Any constant: the key of the advisory lock that serializes migrating replicas. */
#define PG_MIGRATION_LOCK "7232001"

typedef struct {
    PGconn *conn; /* NULL until connected, and again after it broke */
    bool busy;
} pg_slot_t;

struct pg_store {
    store_t base; /* first: the store_t * callers hold points here */
    char *dsn;
    char replica[128];
    int version;
    pg_slot_t *slots;
    int nslots;
    pthread_mutex_t lock; /* guards slots' busy flags and the back-off below; a leaf */
    pthread_cond_t freed;
    long long retry_at_ms; /* no connection attempt before this (back-off) */
    int backoff_ms;
    atomic_bool ready;
    atomic_bool writes_failing;
    atomic_llong last_ok_ms;
};

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static PGconn *connect_dsn(const char *dsn, fathom_error_t *err)
{
    const char *keys[] = {"dbname", "connect_timeout", "application_name", NULL};
    const char *values[] = {dsn, PG_CONNECT_TIMEOUT, "fathomd", NULL};
    PGconn *c = PQconnectdbParams(keys, values, 1);
    if (!c || PQstatus(c) != CONNECTION_OK) {
        fathom_error_set(err, FATHOM_E_UNAVAILABLE, NULL, "cannot connect to PostgreSQL: %s",
                         c ? PQerrorMessage(c) : "out of memory");
        /* libpq's messages are lines ("...failed: Connection refused\n\tIs the server
         * running...?\n"): one line for the log, its breaks and indents each one space */
        char *m = err->message, *to = m;
        for (const char *from = m; *from; from++) {
            const char ch = (*from == '\n' || *from == '\t') ? ' ' : *from;
            if (ch != ' ' || (to > m && to[-1] != ' '))
                *to++ = ch;
        }
        while (to > m && to[-1] == ' ')
            to--;
        *to = '\0';
        PQfinish(c);
        return NULL;
    }
    return c;
}

/* Whether a failed connection may succeed later without anyone changing anything: the server
 * does not answer (not started, its address not resolvable yet) or answers that it does not
 * accept connections yet (starting up, shutting down, in recovery). libpq's PQpingParams tells
 * these (PQPING_NO_RESPONSE, PQPING_REJECT) from a server that answers and refused this login or
 * database (PQPING_OK) and from a string it cannot use (PQPING_NO_ATTEMPT). */
static bool server_not_up_yet(const char *dsn)
{
    const char *keys[] = {"dbname", "connect_timeout", NULL};
    const char *values[] = {dsn, PG_CONNECT_TIMEOUT, NULL};
    const PGPing p = PQpingParams(keys, values, 1);
    return p == PQPING_NO_RESPONSE || p == PQPING_REJECT;
}

/* The first connection, at start: tried again with the pool's back-off while the server is not up
 * yet, until wait->wait_s has passed (NULL or 0: one try). */
static PGconn *connect_first(const char *dsn, const store_wait_t *wait, fathom_error_t *err)
{
    const long long started = now_ms();
    const long long give_up = started + (wait ? (long long)wait->wait_s * 1000 : 0);
    int backoff = PG_BACKOFF_MIN_MS;
    for (;;) {
        PGconn *c = connect_dsn(dsn, err);
        if (c)
            return c;
        const long long left = give_up - now_ms();
        if (left <= 0 || !server_not_up_yet(dsn))
            break;
        const int pause = backoff < left ? backoff : (int)left;
        if (wait->on_wait)
            wait->on_wait(err->message, pause, wait->ctx);
        const struct timespec ts = {pause / 1000, (long)(pause % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        backoff = backoff * 2 < PG_BACKOFF_MAX_MS ? backoff * 2 : PG_BACKOFF_MAX_MS;
    }
    if (now_ms() - started >= 1000) {
        fathom_error_t last = *err;
        fathom_error_set(err, last.code, NULL, "%s (still, after %lld s of waiting)", last.message,
                         (now_ms() - started) / 1000);
    }
    return NULL;
}

/* ------------------------------------------------------------------------- queries ---- */

static void server_message(PGconn *c, const PGresult *r, const char *what, fathom_error_t *err)
{
    const char *msg = r ? PQresultErrorMessage(r) : "";
    if (!msg || !*msg)
        msg = PQerrorMessage(c);
    char clean[200];
    snprintf(clean, sizeof clean, "%s", msg && *msg ? msg : "no answer from the server");
    for (char *p = clean; *p; p++)
        if (*p == '\n')
            *p = ' ';
    fathom_error_set(err, FATHOM_E_UNAVAILABLE, NULL, "%s: %s", what, clean);
}

PGresult *pg_query(PGconn *c, const char *sql, int n, const char *const *params, const char *what,
                   fathom_error_t *err)
{
    PGresult *r = PQexecParams(c, sql, n, NULL, params, NULL, NULL, 0);
    ExecStatusType s = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK)
        return r;
    server_message(c, r, what, err);
    PQclear(r);
    return NULL;
}

PGconn *pg_acquire_write(pg_t *pg, fathom_error_t *err)
{
    fathom_error_clear(err);
    PGconn *c = pg_acquire(pg, err);
    if (!c)
        pg_note_write(pg, false);
    return c;
}

int pg_finish_write(pg_t *pg, PGconn *c, int rc, fathom_error_t *err)
{
    if (!pg_end(c, rc == 0, err) && rc == 0)
        rc = -1;
    if (rc == 0 || err->code == FATHOM_E_UNAVAILABLE)
        pg_note_write(pg, rc == 0);
    pg_release(pg, c);
    return rc;
}

/* A pooled connection whose server restarted while it sat idle fails its first query, and so
 * does every other idle one: a read, safe to send again, is retried on the next connection until
 * one answers or connecting fails (each broken one is closed on release), so a request right
 * after the server came back does not fail for the pool's stale connections. */
PGresult *pg_read(pg_t *pg, const char *sql, int n, const char *const *params, const char *what,
                  fathom_error_t *err)
{
    for (int attempt = 0; attempt <= pg->nslots; attempt++) {
        PGconn *c = pg_acquire(pg, err);
        if (!c)
            return NULL;
        PGresult *r = pg_query(c, sql, n, params, what, err);
        const bool broken = !r && PQstatus(c) != CONNECTION_OK;
        pg_release(pg, c);
        if (!broken)
            return r;
    }
    return NULL;
}

int pg_command(PGconn *c, const char *sql, int n, const char *const *params, long long *changed,
               const char *what, fathom_error_t *err)
{
    PGresult *r = pg_query(c, sql, n, params, what, err);
    if (!r)
        return -1;
    if (changed)
        *changed = atoll(PQcmdTuples(r));
    PQclear(r);
    return 0;
}

int pg_count_locked(PGconn *c, const char *lock, const char *count_sql, int n,
                    const char *const *params, const char *what, long long *count, bool *found,
                    fathom_error_t *err)
{
    const char *lp[] = {lock};
    if (pg_command(c, "SELECT pg_advisory_xact_lock($1::bigint)", 1, lp, NULL, what, err))
        return -1;
    PGresult *r = pg_query(c, count_sql, n, params, what, err);
    if (!r)
        return -1;
    *count = pg_ll(r, 0, 0);
    *found = pg_ll(r, 0, 1) > 0;
    PQclear(r);
    return 0;
}

int pg_begin(PGconn *c, fathom_error_t *err)
{
    return pg_command(c, "BEGIN", 0, NULL, NULL, "cannot begin a transaction", err);
}

bool pg_end(PGconn *c, bool ok, fathom_error_t *err)
{
    if (ok) {
        fathom_error_t cerr;
        if (pg_command(c, "COMMIT", 0, NULL, NULL, "cannot commit", &cerr) == 0)
            return true;
        *err = cerr;
    }
    if (PQtransactionStatus(c) != PQTRANS_IDLE && PQstatus(c) == CONNECTION_OK) {
        PGresult *r = PQexec(c, "ROLLBACK");
        PQclear(r);
    }
    return false;
}

char *pg_dup(const PGresult *r, int row, int col, fathom_error_t *err)
{
    if (PQgetisnull(r, row, col))
        return NULL;
    char *copy = strdup(PQgetvalue(r, row, col));
    if (!copy)
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory reading the database");
    return copy;
}

void pg_copy(const PGresult *r, int row, int col, char *out, size_t outlen)
{
    snprintf(out, outlen, "%s", PQgetisnull(r, row, col) ? "" : PQgetvalue(r, row, col));
}

long long pg_ll(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? 0 : atoll(PQgetvalue(r, row, col));
}

/* -------------------------------------------------------------------------- the pool ---- */

const char *pg_replica(pg_t *pg)
{
    return pg->replica;
}

void pg_note_write(pg_t *pg, bool ok)
{
    atomic_store(&pg->writes_failing, !ok);
}

/* Connects slot s unless the back-off forbids it now. Called without the lock. */
static PGconn *connect_slot(pg_t *pg, fathom_error_t *err)
{
    pthread_mutex_lock(&pg->lock);
    bool wait = now_ms() < pg->retry_at_ms;
    pthread_mutex_unlock(&pg->lock);
    if (wait) {
        fathom_error_set(err, FATHOM_E_UNAVAILABLE, NULL,
                         "the database is unreachable (retrying with back-off)");
        return NULL;
    }
    fathom_error_t why;
    PGconn *c = connect_dsn(pg->dsn, &why);
    pthread_mutex_lock(&pg->lock);
    if (c) {
        pg->backoff_ms = 0;
        pg->retry_at_ms = 0;
    } else {
        pg->backoff_ms = pg->backoff_ms ? pg->backoff_ms * 2 : PG_BACKOFF_MIN_MS;
        if (pg->backoff_ms > PG_BACKOFF_MAX_MS)
            pg->backoff_ms = PG_BACKOFF_MAX_MS;
        pg->retry_at_ms = now_ms() + pg->backoff_ms;
    }
    pthread_mutex_unlock(&pg->lock);
    if (!c) {
        atomic_store(&pg->ready, false);
        *err = why;
        return NULL;
    }
    PGresult *r = PQexec(c, "SET TIME ZONE 'UTC'");
    PQclear(r);
    atomic_store(&pg->ready, true);
    return c;
}

PGconn *pg_acquire(pg_t *pg, fathom_error_t *err)
{
    pthread_mutex_lock(&pg->lock);
    pg_slot_t *slot = NULL;
    while (!slot) {
        for (int i = 0; i < pg->nslots && !slot; i++)
            if (!pg->slots[i].busy)
                slot = &pg->slots[i];
        if (!slot)
            pthread_cond_wait(&pg->freed, &pg->lock);
    }
    slot->busy = true;
    PGconn *c = slot->conn;
    pthread_mutex_unlock(&pg->lock);
    if (c)
        return c;
    /* Connecting takes a while: not under the lock. slot->conn is written under it, since
     * pg_release reads every slot's to find the one it is given. */
    c = connect_slot(pg, err);
    pthread_mutex_lock(&pg->lock);
    slot->conn = c;
    if (!c) {
        slot->busy = false;
        pthread_cond_signal(&pg->freed);
    }
    pthread_mutex_unlock(&pg->lock);
    return c;
}

void pg_release(pg_t *pg, PGconn *c)
{
    bool broken = PQstatus(c) != CONNECTION_OK;
    if (broken)
        atomic_store(&pg->ready, false); /* the server went away: /readyz says so at once */
    else
        atomic_store(&pg->last_ok_ms, now_ms());
    pthread_mutex_lock(&pg->lock);
    for (int i = 0; i < pg->nslots; i++) {
        if (pg->slots[i].conn == c) {
            if (broken) {
                PQfinish(c);
                pg->slots[i].conn = NULL;
            }
            pg->slots[i].busy = false;
            break;
        }
    }
    pthread_cond_signal(&pg->freed);
    pthread_mutex_unlock(&pg->lock);
}

/* ----------------------------------------------------------------- open and migrate ---- */

static int current_version(PGconn *c, int *version, fathom_error_t *err)
{
    PGresult *r = pg_query(c, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations", 0, NULL,
                           "cannot read schema_migrations", err);
    if (!r)
        return -1;
    *version = (int)pg_ll(r, 0, 0);
    PQclear(r);
    return 0;
}

/* Applies one migration file and records it, inside the caller's transaction
 * (store_migration_fn; ctx the connection). */
static int apply_one(void *ctx, const char *name, int v, const char *sql, fathom_error_t *err)
{
    PGconn *c = ctx;
    char vtext[16], now[32];
    PGresult *r = PQexec(c, sql); /* several statements: the simple protocol, no parameters */
    int ok = r && PQresultStatus(r) == PGRES_COMMAND_OK;
    if (!ok)
        fathom_error_set(err, FATHOM_E_UNAVAILABLE, NULL, "migration %s failed: %s", name,
                 r ? PQresultErrorMessage(r) : PQerrorMessage(c));
    PQclear(r);
    if (!ok)
        return -1;
    snprintf(vtext, sizeof vtext, "%d", v);
    store_now_iso(now);
    const char *params[] = {vtext, name, now};
    return pg_command(c, "INSERT INTO schema_migrations (version, name, applied_at) "
                         "VALUES ($1, $2, $3)", 3, params, NULL, "cannot record the migration",
                      err);
}

/* Applies the migrations above the recorded version, all in one transaction that holds an
 * advisory lock: replicas starting together wait for the first, then find nothing to do. */
static int migrate(PGconn *c, const char *dir, int *version, fathom_error_t *err)
{
    int current = 0, rc = -1;
    if (pg_begin(c, err) ||
        pg_command(c, "SELECT pg_advisory_xact_lock(" PG_MIGRATION_LOCK ")", 0, NULL, NULL,
                   "cannot lock the schema", err) ||
        pg_command(c, "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
                      "name TEXT NOT NULL, applied_at TEXT NOT NULL)",
                   0, NULL, NULL, "cannot create schema_migrations", err) ||
        current_version(c, &current, err))
        goto out;
    rc = store__apply_migrations(dir, current, apply_one, c, version, err);
out:
    if (rc == 0) {
        fathom_error_t commit;
        if (!pg_end(c, true, &commit))
            rc = fathom_error_set(err, FATHOM_E_UNAVAILABLE, NULL,
                                  "cannot commit the migrations: %s", commit.message);
    } else {
        fathom_error_t ignored;
        pg_end(c, false, &ignored);
    }
    return rc;
}

store_t *pg_open(const char *dsn, const char *migrations_dir, int pool_size,
                 const store_wait_t *wait, fathom_error_t *err)
{
    pg_t *pg = calloc(1, sizeof *pg);
    char dir[4096];
    if (!pg || (pg->dsn = strdup(dsn)) == NULL ||
        (pg->slots = calloc((size_t)pool_size, sizeof *pg->slots)) == NULL) {
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
        if (pg)
            free(pg->dsn);
        free(pg);
        return NULL;
    }
    pg->nslots = pool_size;
    pthread_mutex_init(&pg->lock, NULL);
    pthread_cond_init(&pg->freed, NULL);
    char host[64] = "fathomd";
    gethostname(host, sizeof host - 1);
    snprintf(pg->replica, sizeof pg->replica, "%s-%ld", host, (long)getpid());
    PGconn *c = NULL;
    if ((size_t)snprintf(dir, sizeof dir, "%s/" STORE_PG_MIGRATIONS_SUBDIR, migrations_dir) >=
        sizeof dir)
        fathom_error_set(err, FATHOM_E_UNAVAILABLE, NULL, "migrations directory path too long");
    else
        c = connect_first(dsn, wait, err);
    if (!c || migrate(c, dir, &pg->version, err)) {
        PQfinish(c);
        pg_close(&pg->base);
        return NULL;
    }
    pg->slots[0].conn = c; /* the first connection of the pool */
    atomic_store(&pg->ready, true);
    atomic_store(&pg->last_ok_ms, now_ms());
    return &pg->base;
}

void pg_close(store_t *store)
{
    pg_t *pg = pg_of(store);
    for (int i = 0; i < pg->nslots; i++)
        PQfinish(pg->slots[i].conn);
    free(pg->slots);
    free(pg->dsn);
    pthread_mutex_destroy(&pg->lock);
    pthread_cond_destroy(&pg->freed);
    free(pg);
}

bool pg_writes_failing(store_t *store)
{
    return atomic_load(&pg_of(store)->writes_failing);
}

int pg_schema_version(store_t *store)
{
    return pg_of(store)->version;
}

/* Ready when the server answered lately; else one round trip (which also reconnects, within
 * the back-off) decides. */
bool pg_ready(store_t *store)
{
    pg_t *pg = pg_of(store);
    if (atomic_load(&pg->ready) && now_ms() - atomic_load(&pg->last_ok_ms) < PG_PING_MS)
        return true;
    fathom_error_t err;
    PGresult *r = pg_read(pg, "SELECT 1", 0, NULL, "ping", &err);
    PQclear(r);
    if (r)
        atomic_store(&pg->ready, true);
    return r != NULL && atomic_load(&pg->ready);
}

long long pg_file_size(store_t *store)
{
    fathom_error_t err;
    PGresult *r = pg_read(pg_of(store), "SELECT pg_database_size(current_database())", 0, NULL,
                          "size", &err);
    long long size = r ? pg_ll(r, 0, 0) : 0;
    PQclear(r);
    return size;
}

bool pg_shared(store_t *store)
{
    (void)store;
    return true;
}

/* ------------------------------------------------------------------ cached results ---- */

int pg_result_get(store_t *store, const char *hash, store_result_t *out,
                         fathom_error_t *err)
{
    memset(out, 0, sizeof *out);
    const char *params[] = {hash};
    PGresult *r = pg_read(pg_of(store), "SELECT endpoint, request, response, created_at, "
                                        "hit_count FROM results WHERE hash = $1",
                          1, params, "cannot read results", err);
    int rc = -1;
    if (r && PQntuples(r) == 1) {
        fathom_error_t copy = {0};
        out->endpoint = pg_dup(r, 0, 0, &copy);
        out->request = pg_dup(r, 0, 1, &copy);
        out->response = pg_dup(r, 0, 2, &copy);
        pg_copy(r, 0, 3, out->created_at, sizeof out->created_at);
        out->hit_count = pg_ll(r, 0, 4);
        rc = store__result_copied(out, &copy, hash, err);
    } else if (r) {
        fathom_error_set(err, FATHOM_E_NOT_FOUND, NULL, "no result %s", hash);
    }
    PQclear(r);
    return rc;
}

typedef int (*pg_row_fn)(PGconn *c, const void *rows, int i, fathom_error_t *err);

/* Writes n rows, one statement each, in one transaction. */
static int write_rows(pg_t *pg, pg_row_fn write, const void *rows, int n, fathom_error_t *err)
{
    PGconn *c = pg_acquire_write(pg, err);
    if (!c)
        return -1;
    bool ok = pg_begin(c, err) == 0;
    for (int i = 0; ok && i < n; i++)
        ok = write(c, rows, i, err) == 0;
    ok = pg_end(c, ok, err);
    pg_release(pg, c);
    pg_note_write(pg, ok);
    return ok ? 0 : -1;
}

static int put_result(PGconn *c, const void *rows, int i, fathom_error_t *err)
{
    const store_result_row_t *r = (const store_result_row_t *)rows + i;
    const char *params[] = {r->hash, r->endpoint, FATHOM_ESTIMATOR_VERSION, r->request,
                            r->response, r->created_at};
    return pg_command(c, "INSERT INTO results (hash, endpoint, estimator_version, request, "
                         "response, created_at) VALUES ($1, $2, $3, $4, $5, $6) "
                         "ON CONFLICT (hash) DO NOTHING",
                      6, params, NULL, "cannot store results", err);
}

static int put_hit(PGconn *c, const void *rows, int i, fathom_error_t *err)
{
    const store_hit_t *h = (const store_hit_t *)rows + i;
    char count[32];
    snprintf(count, sizeof count, "%lld", h->count);
    const char *params[] = {h->hash, h->last_hit_at, count};
    return pg_command(c, "UPDATE results SET hit_count = hit_count + $3, last_hit_at = $2 "
                         "WHERE hash = $1",
                      3, params, NULL, "cannot store hit counts", err);
}

int pg_results_put(store_t *store, const store_result_row_t *rows, int n,
                          fathom_error_t *err)
{
    return write_rows(pg_of(store), put_result, rows, n, err);
}

int pg_results_hit(store_t *store, const store_hit_t *hits, int n, fathom_error_t *err)
{
    return write_rows(pg_of(store), put_hit, hits, n, err);
}

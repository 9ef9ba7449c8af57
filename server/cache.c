/* cache.c — reading and writing result rows (see cache.h). */
#include "cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "canonical.h"

/* Distinct hashes with pending hits before a flush is forced. */
#define HITS_PENDING_MAX 4096

typedef struct {
    char hash[CODEC_HASH_HEX_LEN + 1];
    long long count;
} pending_hit_t;

struct cache {
    db_t *db;
    pthread_mutex_t lock; /* guards pending */
    pending_hit_t *pending;
    int npending;
};

cache_t *cache_create(db_t *db)
{
    cache_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->pending = calloc(HITS_PENDING_MAX, sizeof *c->pending);
    if (!c->pending) {
        free(c);
        return NULL;
    }
    c->db = db;
    pthread_mutex_init(&c->lock, NULL);
    return c;
}

void cache_free(cache_t *c)
{
    if (!c)
        return;
    cache_flush_hits(c);
    pthread_mutex_destroy(&c->lock);
    free(c->pending);
    free(c);
}

static char *dup_column(sqlite3_stmt *st, int col)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    return strdup(t ? (const char *)t : "");
}

int cache_get(cache_t *cache, const char *hash, cache_entry_t *out)
{
    db_t *db = cache->db;
    db_conn_t *c = db_acquire(db);
    sqlite3_stmt *st = db_stmt(c, DB_RESULT_GET);
    if (!st) {
        db_release(db, c);
        return -1;
    }
    sqlite3_bind_text(st, 1, hash, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st), found = 0;
    if (rc == SQLITE_ROW) {
        memset(out, 0, sizeof *out);
        out->endpoint = dup_column(st, 0);
        out->request = dup_column(st, 1);
        out->response = dup_column(st, 2);
        const unsigned char *t = sqlite3_column_text(st, 3);
        snprintf(out->created_at, sizeof out->created_at, "%s", t ? (const char *)t : "");
        out->hit_count = sqlite3_column_int64(st, 4);
        found = (out->endpoint && out->request && out->response) ? 1 : -1;
        if (found < 0)
            cache_entry_free(out);
    } else if (rc != SQLITE_DONE) {
        found = -1;
    }
    sqlite3_reset(st);
    db_release(db, c);
    return found;
}

void cache_count_hit(cache_t *c, const char *hash)
{
    int flush = 0;
    pthread_mutex_lock(&c->lock);
    int i;
    for (i = 0; i < c->npending; i++)
        if (strcmp(c->pending[i].hash, hash) == 0)
            break;
    if (i == c->npending && c->npending < HITS_PENDING_MAX) {
        snprintf(c->pending[i].hash, sizeof c->pending[i].hash, "%.64s", hash);
        c->pending[i].count = 0;
        c->npending++;
    }
    if (i < c->npending)
        c->pending[i].count++;
    flush = c->npending == HITS_PENDING_MAX;
    pthread_mutex_unlock(&c->lock);
    if (flush)
        cache_flush_hits(c);
}

int cache_flush_hits(cache_t *c)
{
    pthread_mutex_lock(&c->lock);
    int n = c->npending;
    pending_hit_t *batch = n ? malloc((size_t)n * sizeof *batch) : NULL;
    if (batch) {
        memcpy(batch, c->pending, (size_t)n * sizeof *batch);
        c->npending = 0;
    }
    pthread_mutex_unlock(&c->lock);
    if (!batch)
        return n ? -1 : 0;

    char now[32];
    db_now_iso(now);
    db_conn_t *conn = db_acquire_writer(c->db);
    sqlite3 *h = db_handle(conn);
    int ok = sqlite3_exec(h, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK;
    for (int i = 0; ok && i < n; i++) {
        sqlite3_stmt *st = db_stmt(conn, DB_RESULT_HIT);
        if (!st) {
            ok = 0;
            break;
        }
        sqlite3_bind_text(st, 1, batch[i].hash, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, now, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, batch[i].count);
        ok = sqlite3_step(st) == SQLITE_DONE;
        sqlite3_reset(st);
    }
    ok = ok && sqlite3_exec(h, "COMMIT", NULL, NULL, NULL) == SQLITE_OK;
    if (!ok)
        sqlite3_exec(h, "ROLLBACK", NULL, NULL, NULL);
    db_release(c->db, conn);
    free(batch);
    /* Counts that could not be written (read-only or full disk) are dropped: they are
     * statistics, and keeping them would grow without bound while the fault lasts. */
    return ok ? 0 : -1;
}

int cache_put(cache_t *cache, const char *hash, const char *endpoint, const char *request,
              const char *response)
{
    db_t *db = cache->db;
    char now[32];
    db_now_iso(now);
    db_conn_t *c = db_acquire_writer(db);
    sqlite3_stmt *st = db_stmt(c, DB_RESULT_PUT);
    if (!st) {
        db_release(db, c);
        return -1;
    }
    sqlite3_bind_text(st, 1, hash, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, endpoint, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, FATHOM_ESTIMATOR_VERSION, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, request, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, response, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 6, now, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    db_release(db, c);
    return rc == SQLITE_DONE ? 0 : -1;
}

void cache_entry_free(cache_entry_t *e)
{
    free(e->endpoint);
    free(e->request);
    free(e->response);
    e->endpoint = e->request = e->response = NULL;
}

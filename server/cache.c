/* cache.c — reading and writing result rows (see cache.h). */
#include "cache.h"

#include <stdlib.h>
#include <string.h>

#include "canonical.h"

static char *dup_column(sqlite3_stmt *st, int col)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    return strdup(t ? (const char *)t : "");
}

int cache_get(db_t *db, const char *hash, cache_entry_t *out)
{
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

int cache_count_hit(db_t *db, const char *hash)
{
    char now[32];
    db_now_iso(now);
    db_conn_t *c = db_acquire(db);
    sqlite3_stmt *st = db_stmt(c, DB_RESULT_HIT);
    if (!st) {
        db_release(db, c);
        return -1;
    }
    sqlite3_bind_text(st, 1, hash, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, now, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    db_release(db, c);
    return rc == SQLITE_DONE ? 0 : -1;
}

int cache_put(db_t *db, const char *hash, const char *endpoint, const char *request,
              const char *response)
{
    char now[32];
    db_now_iso(now);
    db_conn_t *c = db_acquire(db);
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

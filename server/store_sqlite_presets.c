/* store_sqlite_presets.c — the user presets' calls of store.h over SQLite (table user_presets,
 * migrations/0004_user_presets.sql): get one by its key, create or replace, delete, list.
 *
 * Each call is one statement (a put is a count and an upsert in one write transaction, so the
 * cap on how many presets exist holds whatever other writers do) on one borrowed connection,
 * released before returning. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_sqlite.h"

int sqlite_preset_get(store_t *store, const char *kind, const char *name, store_preset_t *out,
                      fathom_error_t *err)
{
    db_t *db = sqlite_of(store);
    memset(out, 0, sizeof *out);
    db_conn_t *c = db_acquire(db);
    sqlite3_stmt *st = db_stmt(c, DB_PRESET_GET);
    int rc = -1;
    if (!st) {
        db_fail(c, err, "cannot read presets");
        goto out;
    }
    sqlite3_bind_text(st, 1, kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW) {
        fathom_error_t copy = {0};
        snprintf(out->name, sizeof out->name, "%s", name);
        out->body = db_column_dup(st, 0, &copy);
        db_column_copy(st, 1, out->created_at, sizeof out->created_at);
        db_column_copy(st, 2, out->updated_at, sizeof out->updated_at);
        if (copy.code || !out->body)
            fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory reading preset %s",
                             name);
        else
            rc = 0;
    } else if (step == SQLITE_DONE) {
        fathom_error_set(err, FATHOM_E_NOT_FOUND, NULL, "no user preset %s/%s", kind, name);
    } else {
        db_fail(c, err, "cannot read presets");
    }
    sqlite3_reset(st);
out:
    db_release(db, c);
    return rc;
}

/* Whether kind/name exists and how many presets of kind there are, inside the caller's
 * transaction. */
static int count_and_find(db_conn_t *c, const char *kind, const char *name, long long *count,
                          bool *found)
{
    sqlite3_stmt *st = db_stmt(c, DB_PRESET_COUNT);
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, kind, -1, SQLITE_STATIC);
    int step = sqlite3_step(st);
    *count = step == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_reset(st);
    if (step != SQLITE_ROW || (st = db_stmt(c, DB_PRESET_EXISTS)) == NULL)
        return -1;
    sqlite3_bind_text(st, 1, kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
    step = sqlite3_step(st);
    sqlite3_reset(st);
    *found = step == SQLITE_ROW;
    return step == SQLITE_ROW || step == SQLITE_DONE ? 0 : -1;
}

int sqlite_preset_put(store_t *store, const char *kind, const char *name, const char *body,
                      int max_count, bool *created, fathom_error_t *err)
{
    db_t *db = sqlite_of(store);
    char now[32];
    store_now_iso(now);
    *created = false;
    fathom_error_clear(err);
    db_conn_t *c = db_acquire_writer(db);
    long long count = 0;
    bool found = false;
    int rc = -1;
    if (db_begin(c, true) || count_and_find(c, kind, name, &count, &found)) {
        db_fail(c, err, "cannot store the preset");
    } else if (!found && count >= max_count) {
        fathom_error_set(err, FATHOM_E_LIMIT_EXCEEDED, NULL,
                         "%lld user %s presets exist, the limit; delete one first", count, kind);
    } else {
        sqlite3_stmt *st = db_stmt(c, DB_PRESET_PUT);
        if (st) {
            sqlite3_bind_text(st, 1, kind, -1, SQLITE_STATIC);
            sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
            sqlite3_bind_text(st, 3, body, -1, SQLITE_STATIC);
            sqlite3_bind_text(st, 4, now, -1, SQLITE_STATIC);
        }
        if (st && sqlite3_step(st) == SQLITE_DONE)
            rc = 0;
        else
            db_fail(c, err, "cannot store the preset");
        if (st)
            sqlite3_reset(st);
    }
    if (!db_end(c, rc == 0) && rc == 0)
        rc = db_fail(c, err, "cannot store the preset");
    *created = rc == 0 && !found;
    /* A refused slot is not a failed write. */
    if (rc == 0 || err->code == FATHOM_E_UNAVAILABLE)
        db_note_write(db, rc == 0);
    db_release(db, c);
    return rc;
}

int sqlite_preset_delete(store_t *store, const char *kind, const char *name, fathom_error_t *err)
{
    db_t *db = sqlite_of(store);
    db_conn_t *c = db_acquire_writer(db);
    sqlite3_stmt *st = db_stmt(c, DB_PRESET_DELETE);
    int rc = -1;
    bool ok = false;
    if (st) {
        sqlite3_bind_text(st, 1, kind, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
        ok = sqlite3_step(st) == SQLITE_DONE;
        if (ok && sqlite3_changes(db_handle(c)) == 1)
            rc = 0;
        else if (ok)
            fathom_error_set(err, FATHOM_E_NOT_FOUND, NULL, "no user preset %s/%s", kind, name);
        sqlite3_reset(st);
    }
    if (!ok)
        db_fail(c, err, "cannot delete the preset");
    db_note_write(db, ok);
    db_release(db, c);
    return rc;
}

int sqlite_preset_list(store_t *store, const char *kind, store_preset_fn fn, void *ctx,
                       fathom_error_t *err)
{
    db_t *db = sqlite_of(store);
    db_conn_t *c = db_acquire(db);
    sqlite3_stmt *st = db_stmt(c, DB_PRESET_LIST);
    int rc = 0, step = SQLITE_DONE;
    if (!st) {
        rc = db_fail(c, err, "cannot list presets");
        goto out;
    }
    sqlite3_bind_text(st, 1, kind, -1, SQLITE_STATIC);
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        store_preset_t p;
        memset(&p, 0, sizeof p);
        db_column_copy(st, 0, p.name, sizeof p.name);
        db_column_copy(st, 1, p.created_at, sizeof p.created_at);
        db_column_copy(st, 2, p.updated_at, sizeof p.updated_at);
        if (fn(ctx, &p)) {
            rc = fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory listing presets");
            break;
        }
    }
    if (rc == 0 && step != SQLITE_DONE)
        rc = db_fail(c, err, "cannot list presets");
    sqlite3_reset(st);
out:
    db_release(db, c);
    return rc;
}

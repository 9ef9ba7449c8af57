/* store_pg_presets.c — the user presets' calls of store.h over PostgreSQL (table user_presets,
 * migrations/postgresql/0003_user_presets.sql): get one by its key, create or replace, delete,
 * list. As on SQLite, a put counts and upserts in one transaction; here the transaction takes an
 * advisory lock first, so the cap on how many presets exist holds across replicas too. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_pg.h"

/* Any constant: the key of the advisory lock that serializes preset puts (their cap). */
#define PG_PRESET_LOCK "7232003"

int pg_preset_get(store_t *store, const char *kind, const char *name, store_preset_t *out,
                  fathom_error_t *err)
{
    memset(out, 0, sizeof *out);
    const char *params[] = {kind, name};
    PGresult *r = pg_read(pg_of(store), "SELECT body, created_at, updated_at FROM user_presets "
                                        "WHERE kind = $1 AND name = $2",
                          2, params, "cannot read presets", err);
    int rc = -1;
    if (r && PQntuples(r) == 1) {
        fathom_error_t copy = {0};
        snprintf(out->name, sizeof out->name, "%s", name);
        out->body = pg_dup(r, 0, 0, &copy);
        pg_copy(r, 0, 1, out->created_at, sizeof out->created_at);
        pg_copy(r, 0, 2, out->updated_at, sizeof out->updated_at);
        if (copy.code || !out->body)
            fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory reading preset %s",
                             name);
        else
            rc = 0;
    } else if (r) {
        fathom_error_set(err, FATHOM_E_NOT_FOUND, NULL, "no user preset %s/%s", kind, name);
    }
    PQclear(r);
    if (rc)
        store_preset_close(out);
    return rc;
}

/* The put's statements inside the caller's transaction; *found says whether it existed. */
static int put_in(PGconn *c, const char *const params[4], int max_count, bool *found,
                  fathom_error_t *err)
{
    long long count;
    if (pg_count_locked(c, PG_PRESET_LOCK,
                        "SELECT (SELECT COUNT(*) FROM user_presets WHERE kind = $1), "
                        "(SELECT COUNT(*) FROM user_presets WHERE kind = $1 AND name = $2)",
                        2, params, "cannot store the preset", &count, found, err))
        return -1;
    if (!*found && count >= max_count)
        return fathom_error_set(err, FATHOM_E_LIMIT_EXCEEDED, NULL,
                                "%lld user %s presets exist, the limit; delete one first", count,
                                params[0]);
    return pg_command(c, "INSERT INTO user_presets (kind, name, body, created_at, updated_at) "
                         "VALUES ($1, $2, $3, $4, $4) ON CONFLICT (kind, name) "
                         "DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at",
                      4, params, NULL, "cannot store the preset", err);
}

int pg_preset_put(store_t *store, const char *kind, const char *name, const char *body,
                  int max_count, bool *created, fathom_error_t *err)
{
    pg_t *pg = pg_of(store);
    char now[32];
    store_now_iso(now);
    *created = false;
    PGconn *c = pg_acquire_write(pg, err);
    if (!c)
        return -1;
    const char *params[4] = {kind, name, body, now};
    bool found = false;
    int rc = pg_begin(c, err) == 0 ? put_in(c, params, max_count, &found, err) : -1;
    rc = pg_finish_write(pg, c, rc, err);
    *created = rc == 0 && !found;
    return rc;
}

int pg_preset_delete(store_t *store, const char *kind, const char *name, fathom_error_t *err)
{
    pg_t *pg = pg_of(store);
    PGconn *c = pg_acquire_write(pg, err);
    if (!c)
        return -1;
    const char *params[] = {kind, name};
    long long n = 0;
    int rc = pg_command(c, "DELETE FROM user_presets WHERE kind = $1 AND name = $2", 2, params,
                        &n, "cannot delete the preset", err);
    pg_note_write(pg, rc == 0);
    pg_release(pg, c);
    if (rc == 0 && n != 1)
        rc = fathom_error_set(err, FATHOM_E_NOT_FOUND, NULL, "no user preset %s/%s", kind, name);
    return rc;
}

int pg_preset_list(store_t *store, const char *kind, store_preset_fn fn, void *ctx,
                   fathom_error_t *err)
{
    const char *params[] = {kind};
    /* COLLATE "C": byte order, as SQLite sorts, whatever the database's locale. */
    PGresult *r = pg_read(pg_of(store), "SELECT name, created_at, updated_at FROM user_presets "
                                        "WHERE kind = $1 ORDER BY name COLLATE \"C\"",
                          1, params, "cannot list presets", err);
    if (!r)
        return -1;
    int rc = 0;
    for (int i = 0; i < PQntuples(r); i++) {
        store_preset_t p;
        memset(&p, 0, sizeof p);
        pg_copy(r, i, 0, p.name, sizeof p.name);
        pg_copy(r, i, 1, p.created_at, sizeof p.created_at);
        pg_copy(r, i, 2, p.updated_at, sizeof p.updated_at);
        if (fn(ctx, &p)) {
            rc = fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory listing presets");
            break;
        }
    }
    PQclear(r);
    return rc;
}

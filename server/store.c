/* store.c — the store's front: picks the backend at open and forwards each call of store.h to
 * it (store_backend.h). What every backend shares (timestamps, rows) is store_rows.c. */
#include "store_backend.h"
#include "store_migrations.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool store_is_postgres(const char *path)
{
    return strncmp(path, "postgres://", 11) == 0 || strncmp(path, "postgresql://", 13) == 0;
}

store_t *store_open(const char *path, const char *migrations_dir, int pool_size, fathom_error_t *err)
{
    return store_open_waiting(path, migrations_dir, pool_size, NULL, err);
}

store_t *store_open_waiting(const char *path, const char *migrations_dir, int pool_size,
                            const store_wait_t *wait, fathom_error_t *err)
{
    if (store_is_postgres(path))
        return store_pg_open(path, migrations_dir, pool_size, wait, err);
    return store_sqlite_open(path, migrations_dir, pool_size, err);
}

void store_display_name(const char *path, char *out, size_t outlen)
{
    const char *scheme = strstr(path, "://");
    if (!scheme) {
        snprintf(out, outlen, "%s", path);
        return;
    }
    /* scheme://user:secret@host/db?password=... -> scheme://user:***@host/db?*** */
    const char *query = strchr(path, '?');
    size_t len = query ? (size_t)(query - path) : strlen(path);
    const char *at = memchr(scheme + 3, '@', len - (size_t)(scheme + 3 - path));
    const char *colon = at ? memchr(scheme + 3, ':', (size_t)(at - scheme - 3)) : NULL;
    if (colon)
        snprintf(out, outlen, "%.*s:***%.*s%s", (int)(colon - path), path, (int)(path + len - at),
                 at, query ? "?***" : "");
    else
        snprintf(out, outlen, "%.*s%s", (int)len, path, query ? "?***" : "");
}

void store_close(store_t *st)
{
    if (st)
        st->ops->close(st);
}

bool store_writes_failing(store_t *st)
{
    return st->ops->writes_failing(st);
}

int store_schema_version(store_t *st)
{
    return st->ops->schema_version(st);
}

int store_known_schema_version(const char *db_path, const char *migrations_dir,
                               fathom_error_t *err)
{
    char dir[4200];
    snprintf(dir, sizeof dir,
             store_is_postgres(db_path) ? "%s/" STORE_PG_MIGRATIONS_SUBDIR : "%s",
             migrations_dir);
    return store__latest_migration(dir, err);
}

bool store_ready(store_t *st)
{
    return st->ops->ready(st);
}

bool store_shared(store_t *st)
{
    return st->ops->shared && st->ops->shared(st);
}

/* One process: nothing to renew; the sweep must still be running. */
static int renew_by_status(store_t *st, const char *id, fathom_error_t *err)
{
    store_sweep_t sw;
    if (st->ops->sweep_get(st, id, false, &sw, err))
        return -1;
    store_sweep_status_t status = sw.status;
    store_sweep_close(&sw);
    if (status != STORE_SWEEP_RUNNING)
        return fathom_error_set(err, FATHOM_E_NOT_FOUND, NULL, "sweep %s is not running", id);
    return 0;
}

int store_sweep_renew(store_t *st, const char *id, fathom_error_t *err)
{
    return st->ops->sweep_renew ? st->ops->sweep_renew(st, id, err) : renew_by_status(st, id, err);
}

int store_sweep_release(store_t *st, const char *id, fathom_error_t *err)
{
    return st->ops->sweep_release ? st->ops->sweep_release(st, id, err) : 0;
}

/* Units shared by replicas: only a shared backend has them. */
static int no_units(fathom_error_t *err)
{
    return fathom_error_set(err, FATHOM_E_NOT_FOUND, NULL, "units are not shared on this store");
}

int store_unit_help(store_t *st, const char *kind, store_unit_help_t *out, fathom_error_t *err)
{
    out->spec = NULL;
    return st->ops->unit_help ? st->ops->unit_help(st, kind, out, err) : no_units(err);
}

int store_unit_claim(store_t *st, const char *id, long long unit, bool *claimed,
                     fathom_error_t *err)
{
    *claimed = false;
    return st->ops->unit_claim ? st->ops->unit_claim(st, id, unit, claimed, err) : no_units(err);
}

int store_unit_renew(store_t *st, const char *id, long long unit, fathom_error_t *err)
{
    return st->ops->unit_renew ? st->ops->unit_renew(st, id, unit, err) : no_units(err);
}

int store_unit_finish(store_t *st, const char *id, long long unit, const char *state,
                      const char *sample, long long evaluations, fathom_error_t *err)
{
    return st->ops->unit_finish
               ? st->ops->unit_finish(st, id, unit, state, sample, evaluations, err)
               : no_units(err);
}

int store_unit_result(store_t *st, const char *id, long long unit, bool *done, char **state,
                      char **sample, long long *evaluations, fathom_error_t *err)
{
    *done = false;
    *state = *sample = NULL;
    *evaluations = 0;
    return st->ops->unit_result
               ? st->ops->unit_result(st, id, unit, done, state, sample, evaluations, err)
               : no_units(err);
}

long long store_file_size(store_t *st)
{
    return st->ops->file_size(st);
}

int store_result_get(store_t *st, const char *hash, store_result_t *out, fathom_error_t *err)
{
    return st->ops->result_get(st, hash, out, err);
}

int store_results_put(store_t *st, const store_result_row_t *rows, int n, fathom_error_t *err)
{
    return st->ops->results_put(st, rows, n, err);
}

int store_results_hit(store_t *st, const store_hit_t *hits, int n, fathom_error_t *err)
{
    return st->ops->results_hit(st, hits, n, err);
}

int store_sweep_submit(store_t *st, const char *id, const char *kind, const char *spec,
                       long long size, int max_queued, bool *created, fathom_error_t *err)
{
    return st->ops->sweep_submit(st, id, kind, spec, size, max_queued, created, err);
}

int store_sweep_get(store_t *st, const char *id, bool with_sample, store_sweep_t *out,
                    fathom_error_t *err)
{
    return st->ops->sweep_get(st, id, with_sample, out, err);
}

int store_sweep_cancel(store_t *st, const char *id, bool *changed, fathom_error_t *err)
{
    return st->ops->sweep_cancel(st, id, changed, err);
}

int store_sweep_list(store_t *st, int limit, store_sweep_fn fn, void *ctx, fathom_error_t *err)
{
    return st->ops->sweep_list(st, limit, fn, ctx, err);
}

int store_sweep_pending(store_t *st, store_sweep_fn fn, void *ctx, fathom_error_t *err)
{
    return st->ops->sweep_pending(st, fn, ctx, err);
}

int store_sweep_claim(store_t *st, const char *id, long long total_units, fathom_error_t *err)
{
    return st->ops->sweep_claim(st, id, total_units, err);
}

int store_sweep_counts(store_t *st, long long out[STORE_SWEEP__COUNT], fathom_error_t *err)
{
    return st->ops->sweep_counts(st, out, err);
}

int store_sweep_checkpoint(store_t *st, const store_checkpoint_t *cp, fathom_error_t *err)
{
    return st->ops->sweep_checkpoint(st, cp, err);
}

int store_sweep_finish(store_t *st, const char *id, const char *result, fathom_error_t *err)
{
    return st->ops->sweep_finish(st, id, result, err);
}

int store_sweep_fail(store_t *st, const char *id, const char *message, fathom_error_t *err)
{
    return st->ops->sweep_fail(st, id, message, err);
}

int store_points_page(store_t *st, const char *id, long long first_index, long long max_rows,
                      store_point_fn fn, void *ctx, fathom_error_t *err)
{
    return st->ops->points_page(st, id, first_index, max_rows, fn, ctx, err);
}

int store_points_best(store_t *st, const char *id, int top_n, store_point_fn fn, void *ctx,
                      long long *stored, long long *good, fathom_error_t *err)
{
    return st->ops->points_best(st, id, top_n, fn, ctx, stored, good, err);
}

int store_preset_get(store_t *st, const char *kind, const char *name, store_preset_t *out,
                     fathom_error_t *err)
{
    return st->ops->preset_get(st, kind, name, out, err);
}

int store_preset_put(store_t *st, const char *kind, const char *name, const char *body,
                     int max_count, bool *created, fathom_error_t *err)
{
    return st->ops->preset_put(st, kind, name, body, max_count, created, err);
}

int store_preset_delete(store_t *st, const char *kind, const char *name, fathom_error_t *err)
{
    return st->ops->preset_delete(st, kind, name, err);
}

int store_preset_list(store_t *st, const char *kind, store_preset_fn fn, void *ctx,
                      fathom_error_t *err)
{
    return st->ops->preset_list(st, kind, fn, ctx, err);
}

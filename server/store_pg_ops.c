/* store_pg_ops.c — the PostgreSQL backend's entry: its table of calls (store_backend.h), filled
 * from store_pg*.c, and store_pg_open, which opens the pool (store_pg.c) and hands it out with
 * this table. The top of the backend: it calls the other files, none calls it. */
#include "store_pg.h"

/* The PostgreSQL backend's table of calls (store_backend.h). */
static const store_ops_t pg_ops = {
    .close = pg_close,
    .writes_failing = pg_writes_failing,
    .schema_version = pg_schema_version,
    .ready = pg_ready,
    .file_size = pg_file_size,
    .shared = pg_shared,
    .result_get = pg_result_get,
    .results_put = pg_results_put,
    .results_hit = pg_results_hit,
    .sweep_submit = pg_sweep_submit,
    .sweep_get = pg_sweep_get,
    .sweep_cancel = pg_sweep_cancel,
    .sweep_list = pg_sweep_list,
    .sweep_pending = pg_sweep_pending,
    .sweep_claim = pg_sweep_claim,
    .sweep_renew = pg_sweep_renew,
    .sweep_release = pg_sweep_release,
    .sweep_counts = pg_sweep_counts,
    .sweep_checkpoint = pg_sweep_checkpoint,
    .sweep_finish = pg_sweep_finish,
    .sweep_fail = pg_sweep_fail,
    .points_page = pg_points_page,
    .points_best = pg_points_best,
    .unit_help = pg_unit_help,
    .unit_claim = pg_unit_claim,
    .unit_renew = pg_unit_renew,
    .unit_finish = pg_unit_finish,
    .unit_result = pg_unit_result,
    .preset_get = pg_preset_get,
    .preset_put = pg_preset_put,
    .preset_delete = pg_preset_delete,
    .preset_list = pg_preset_list,
};

store_t *store_pg_open(const char *dsn, const char *migrations_dir, int pool_size,
                       const store_wait_t *wait, fathom_error_t *err)
{
    store_t *st = pg_open(dsn, migrations_dir, pool_size, wait, err);
    if (st)
        st->ops = &pg_ops;
    return st;
}

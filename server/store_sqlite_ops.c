/* store_sqlite_ops.c — the SQLite backend's entry: its table of calls (store_backend.h), filled
 * from store_sqlite*.c, and store_sqlite_open, which opens the pool (store_sqlite.c) and hands it
 * out with this table. The top of the backend: it calls the other files, none calls it. */
#include "store_sqlite.h"

/* The SQLite backend's table of calls (store_backend.h). */
static const store_ops_t sqlite_ops = {
    .close = sqlite_close,
    .writes_failing = sqlite_writes_failing,
    .schema_version = sqlite_schema_version,
    .ready = sqlite_ready,
    .file_size = sqlite_file_size,
    .result_get = sqlite_result_get,
    .results_put = sqlite_results_put,
    .results_hit = sqlite_results_hit,
    .sweep_submit = sqlite_sweep_submit,
    .sweep_get = sqlite_sweep_get,
    .sweep_cancel = sqlite_sweep_cancel,
    .sweep_list = sqlite_sweep_list,
    .sweep_pending = sqlite_sweep_pending,
    .sweep_claim = sqlite_sweep_claim,
    .sweep_counts = sqlite_sweep_counts,
    .sweep_checkpoint = sqlite_sweep_checkpoint,
    .sweep_finish = sqlite_sweep_finish,
    .sweep_fail = sqlite_sweep_fail,
    .points_page = sqlite_points_page,
    .points_best = sqlite_points_best,
    .preset_get = sqlite_preset_get,
    .preset_put = sqlite_preset_put,
    .preset_delete = sqlite_preset_delete,
    .preset_list = sqlite_preset_list,
};

store_t *store_sqlite_open(const char *path, const char *migrations_dir, int pool_size,
                           fathom_error_t *err)
{
    store_t *st = sqlite_open(path, migrations_dir, pool_size, err);
    if (st)
        st->ops = &sqlite_ops;
    return st;
}

/* store_backend.h — PRIVATE to the store: the table of calls a backend implements. store.c
 * forwards each public store_* call (store.h) through it; store_sqlite*.c fill one for SQLite
 * and store_pg*.c one for PostgreSQL (libpq), with every other file unchanged. A call a backend
 * leaves NULL gets store.c's default (documented in store.h). */
#ifndef FATHOM_STORE_BACKEND_H
#define FATHOM_STORE_BACKEND_H

#include "store.h"

typedef struct store_ops {
    void (*close)(store_t *st);
    bool (*writes_failing)(store_t *st);
    int (*schema_version)(store_t *st);
    bool (*ready)(store_t *st);
    long long (*file_size)(store_t *st);
    bool (*shared)(store_t *st);
    int (*result_get)(store_t *st, const char *hash, store_result_t *out, fathom_error_t *err);
    int (*results_put)(store_t *st, const store_result_row_t *rows, int n, fathom_error_t *err);
    int (*results_hit)(store_t *st, const store_hit_t *hits, int n, fathom_error_t *err);
    int (*sweep_submit)(store_t *st, const char *id, const char *kind, const char *spec,
                        long long size, int max_queued, bool *created, fathom_error_t *err);
    int (*sweep_get)(store_t *st, const char *id, bool with_sample, store_sweep_t *out,
                     fathom_error_t *err);
    int (*sweep_cancel)(store_t *st, const char *id, bool *changed, fathom_error_t *err);
    int (*sweep_list)(store_t *st, int limit, store_sweep_fn fn, void *ctx, fathom_error_t *err);
    int (*sweep_pending)(store_t *st, store_sweep_fn fn, void *ctx, fathom_error_t *err);
    int (*sweep_claim)(store_t *st, const char *id, long long total_units, fathom_error_t *err);
    int (*sweep_renew)(store_t *st, const char *id, fathom_error_t *err);
    int (*sweep_release)(store_t *st, const char *id, fathom_error_t *err);
    int (*sweep_counts)(store_t *st, long long out[STORE_SWEEP__COUNT], fathom_error_t *err);
    int (*sweep_checkpoint)(store_t *st, const store_checkpoint_t *cp, fathom_error_t *err);
    int (*sweep_finish)(store_t *st, const char *id, const char *result, fathom_error_t *err);
    int (*sweep_fail)(store_t *st, const char *id, const char *message, fathom_error_t *err);
    int (*points_page)(store_t *st, const char *id, long long first_index, long long max_rows,
                       store_point_fn fn, void *ctx, fathom_error_t *err);
    int (*points_best)(store_t *st, const char *id, int top_n, store_point_fn fn, void *ctx,
                       long long *stored, long long *good, fathom_error_t *err);
    int (*unit_help)(store_t *st, const char *kind, store_unit_help_t *out, fathom_error_t *err);
    int (*unit_claim)(store_t *st, const char *id, long long unit, bool *claimed,
                      fathom_error_t *err);
    int (*unit_renew)(store_t *st, const char *id, long long unit, fathom_error_t *err);
    int (*unit_finish)(store_t *st, const char *id, long long unit, const char *state,
                       const char *sample, long long evaluations, fathom_error_t *err);
    int (*unit_result)(store_t *st, const char *id, long long unit, bool *done, char **state,
                       char **sample, long long *evaluations, fathom_error_t *err);
    int (*preset_get)(store_t *st, const char *kind, const char *name, store_preset_t *out,
                      fathom_error_t *err);
    int (*preset_put)(store_t *st, const char *kind, const char *name, const char *body,
                      int max_count, bool *created, fathom_error_t *err);
    int (*preset_delete)(store_t *st, const char *kind, const char *name, fathom_error_t *err);
    int (*preset_list)(store_t *st, const char *kind, store_preset_fn fn, void *ctx,
                       fathom_error_t *err);
} store_ops_t;

/* Every backend's handle starts with this, so a store_t * is also the backend's own handle. */
struct store {
    const store_ops_t *ops;
};

/* The SQLite backend (store_sqlite.c). */
store_t *store_sqlite_open(const char *path, const char *migrations_dir, int pool_size,
                           fathom_error_t *err);

/* The PostgreSQL backend (store_pg.c): dsn is a libpq connection URI or string; wait (may be
 * NULL: one try) as store_open_waiting's. */
store_t *store_pg_open(const char *dsn, const char *migrations_dir, int pool_size,
                       const store_wait_t *wait, fathom_error_t *err);

/* A sweep status's stored name back to its value (an unknown name reads as failed). */
store_sweep_status_t store__status_from_text(const char *t);

/* A cached result a backend has just copied out of its row (`copy`: the copies' error, if any):
 * 0, or -1 with *out closed and err set when a copy ran out of memory or a column was NULL. */
int store__result_copied(store_result_t *out, const fathom_error_t *copy, const char *hash,
                         fathom_error_t *err);

/* A pending sweep a backend has just copied out of its row, handed to fn and closed: 1 when fn
 * asks to stop, -1 with err set when a copy ran out of memory (fn is not called), else 0. */
int store__sweep_deliver(store_sweep_t *sw, const fathom_error_t *copy, store_sweep_fn fn,
                         void *ctx, fathom_error_t *err);

#endif

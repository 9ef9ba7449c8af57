/* sweeps_internal.h — PRIVATE to the sweeps module (sweeps.c, the scheduler; sweep_views.c and
 * sweep_results.c, what HTTP threads ask of it). */
#ifndef FATHOM_SWEEPS_INTERNAL_H
#define FATHOM_SWEEPS_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "search_plan_codec.h"
#include "search_sweep_codec.h"
#include "store.h"
#include "sweeps.h"

/* A grid point made by a worker: owned JSON texts, ready for the store. */
typedef struct {
    long long index;
    char *values, *response;
    int status;
    bool fits, has_sample_rate;
    double sample_rate;
} sweep_point_t;

void sweep_points_free(sweep_point_t *p, size_t n);

/* The scheduler's hooks for the views (any thread). */
server_t *sweeps__server(sweeps_t *s);
const sweep_limits_t *sweeps__limits(sweeps_t *s);
bool sweeps__stopping(sweeps_t *s);
/* Wakes the loop thread to look for new sweeps. */
void sweeps__wake(sweeps_t *s);
/* Raises the cancel flag of the job running sweep id, if any. */
void sweeps__cancel_job(sweeps_t *s, const char *id);

/* A grid's best points so far and its counts, {"best":[...],"counts":{...}} (new reference),
 * or NULL with err. */
json_t *sweeps__grid_best(store_t *store, const char *id, const json_t *spec, fathom_error_t *err);

/* Plans (sweep_plan.c). Candidate `index` of a normalized plan into *p (pool thread): 0; 1 when
 * cancelled; -1 when memory ran out (p partly filled, freed by the caller). */
int sweeps__plan_point(const codec_ctx_t *ctx, const json_t *spec, uint64_t index,
                       volatile int *cancel, sweep_point_t *p, uint64_t *evaluations);
/* A finished plan's result document {"best","counts","plan"} from its stored candidates (new
 * reference), or NULL with err. */
json_t *sweeps__plan_result(store_t *store, const char *id, const json_t *spec,
                            fathom_error_t *err);

#endif

/* sweeps_internal.h — PRIVATE to the sweeps module (sweeps.c, the scheduler; sweep_views.c and
 * sweep_results.c, what HTTP threads ask of it). */
#ifndef FATHOM_SWEEPS_INTERNAL_H
#define FATHOM_SWEEPS_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "store.h"
#include "sweep_kind.h"
#include "sweeps.h"

/* The scheduler's hooks for the views (any thread). */
server_t *sweeps__server(sweeps_t *s);
const sweep_limits_t *sweeps__limits(sweeps_t *s);
bool sweeps__stopping(sweeps_t *s);
/* Wakes the loop thread to look for new sweeps. */
void sweeps__wake(sweeps_t *s);
/* Raises the cancel flag of the job running sweep id, if any. */
void sweeps__cancel_job(sweeps_t *s, const char *id);

/* The stored points of sweep `id` as a kind reads them (sweep_points_t): `at` is borrowed by the
 * reader and must outlive it. */
typedef struct {
    store_t *store;
    const char *id;
} sweeps_points_at_t;
sweep_points_t sweeps__points(sweeps_points_at_t *at);

#endif

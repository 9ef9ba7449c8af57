/* routes_extra.h — routes of modules beyond the core set (sweeps, validation), kept here so
 * routes.c stays the one table while those modules grow. */
#ifndef FATHOM_ROUTES_EXTRA_H
#define FATHOM_ROUTES_EXTRA_H

#include "server.h"

/* Counts of sweeps by state (queued, running, done, failed, cancelled) for /metrics. */
void routes_sweep_gauges(server_t *srv, long long out[5]);

#define ROUTES_EXTRA

#endif

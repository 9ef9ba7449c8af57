/* routes_extra.h — handlers of modules beyond the core set (sweeps, validation), declared here
 * so routes.c stays the one table of routes. */
#ifndef FATHOM_ROUTES_EXTRA_H
#define FATHOM_ROUTES_EXTRA_H

#include "http.h"

/* Counts of sweeps by state (queued, running, done, failed, cancelled) for /metrics. */
void routes_sweep_gauges(server_t *srv, long long out[5]);

enum MHD_Result routes_sweep_create(http_req_t *r, const char *tail);
enum MHD_Result routes_sweep_list(http_req_t *r, const char *tail);
enum MHD_Result routes_sweep_one(http_req_t *r, const char *tail);
enum MHD_Result routes_validation(http_req_t *r, const char *tail);

/* The query parameters each reads (doc/api.md). routes_query_own: the handler checks them
 * (GET /v1/sweep/<id> takes none, its /results format, offset and limit). */
extern const char *const routes_sweeps_query[];
extern const char *const routes_validation_query[];
extern const char *const routes_query_own[];

#define ROUTES_EXTRA                                                                    \
    {"POST", "/v1/sweep", 0, "/v1/sweep", routes_sweep_create, NULL, 0},                \
    {"GET", "/v1/sweeps", 0, "/v1/sweeps", routes_sweep_list, routes_sweeps_query, 0},  \
    {"GET", "/v1/sweep/", 1, "/v1/sweep/{id}", routes_sweep_one, routes_query_own, 0},  \
    {"DELETE", "/v1/sweep/", 1, "/v1/sweep/{id}", routes_sweep_one, NULL, 1},           \
    {"GET", "/v1/validation", 0, "/v1/validation", routes_validation,                   \
     routes_validation_query, 0},

#endif

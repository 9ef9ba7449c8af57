/* metrics.h — counters and histograms for GET /metrics (Prometheus text format 0.0.4).
 *
 * Thread-safe: HTTP threads and sweep workers record concurrently. Route labels are the route
 * patterns of routes.c (a bounded set), never raw paths, so the label space cannot grow with
 * requests. */
#ifndef FATHOM_METRICS_H
#define FATHOM_METRICS_H

#include <stdint.h>

typedef struct metrics metrics_t;

metrics_t *metrics_create(void);
void metrics_free(metrics_t *m);

void metrics_observe_request(metrics_t *m, const char *route, int status, double seconds);
void metrics_cache(metrics_t *m, int hit);
void metrics_evaluations(metrics_t *m, uint64_t n);
void metrics_worker_busy(metrics_t *m, int delta);

/* Gauges read at scrape time, supplied by the caller. */
typedef struct {
    long long db_size_bytes;
    long long sweeps_by_state[5]; /* queued, running, done, failed, cancelled */
} metrics_gauges_t;

/* The whole exposition text (malloc'd). */
char *metrics_render(metrics_t *m, const metrics_gauges_t *g);

#endif

/* metrics.c — request counters, latency histograms and gauges (see metrics.h). */
#include "metrics.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

#define MAX_ROUTES 64
#define MAX_STATUS_SERIES 512

static const double buckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                 0.1,    0.25,  0.5,    1.0,   2.5,  5.0,   10.0};
#define NBUCKETS (sizeof buckets / sizeof buckets[0])

typedef struct {
    const char *route;
    uint64_t counts[NBUCKETS + 1]; /* cumulative only when rendered */
    double sum;
    uint64_t count;
} histogram_t;

typedef struct {
    const char *route;
    int status;
    uint64_t count;
} status_series_t;

struct metrics {
    pthread_mutex_t lock; /* a leaf: nothing else is locked or called while it is held */
    histogram_t hist[MAX_ROUTES];
    int nhist;
    status_series_t series[MAX_STATUS_SERIES];
    int nseries;
    atomic_uint_fast64_t cache_hits, cache_misses, evaluations;
    atomic_int workers_busy;
};

metrics_t *metrics_create(void)
{
    metrics_t *m = calloc(1, sizeof *m);
    if (m)
        pthread_mutex_init(&m->lock, NULL);
    return m;
}

void metrics_free(metrics_t *m)
{
    if (!m)
        return;
    pthread_mutex_destroy(&m->lock);
    free(m);
}

void metrics_observe_request(metrics_t *m, const char *route, int status, double seconds)
{
    if (!route)
        route = "unmatched";
    pthread_mutex_lock(&m->lock);
    int i;
    for (i = 0; i < m->nseries; i++)
        if (m->series[i].status == status && strcmp(m->series[i].route, route) == 0)
            break;
    if (i == m->nseries && m->nseries < MAX_STATUS_SERIES)
        m->series[m->nseries++] = (status_series_t){route, status, 0};
    if (i < m->nseries)
        m->series[i].count++;

    for (i = 0; i < m->nhist; i++)
        if (strcmp(m->hist[i].route, route) == 0)
            break;
    if (i == m->nhist && m->nhist < MAX_ROUTES) {
        memset(&m->hist[i], 0, sizeof m->hist[i]);
        m->hist[m->nhist++].route = route;
    }
    if (i < m->nhist) {
        histogram_t *h = &m->hist[i];
        size_t b = 0;
        while (b < NBUCKETS && seconds > buckets[b])
            b++;
        h->counts[b]++;
        h->sum += seconds;
        h->count++;
    }
    pthread_mutex_unlock(&m->lock);
}

void metrics_cache(metrics_t *m, int hit)
{
    atomic_fetch_add(hit ? &m->cache_hits : &m->cache_misses, 1);
}

void metrics_evaluations(metrics_t *m, uint64_t n)
{
    atomic_fetch_add(&m->evaluations, n);
}

void metrics_worker_busy(metrics_t *m, int delta)
{
    atomic_fetch_add(&m->workers_busy, delta);
}

/* The page is small (routes x statuses); the cap only says so. */
#define METRICS_MAX_BYTES (1024 * 1024)

typedef struct {
    buf_t b;
    int failed; /* an append did not fit: the page is not served half-written */
} text_t;

static void put(text_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text_t *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (buf_appendv(&t->b, fmt, ap))
        t->failed = 1;
    va_end(ap);
}

char *metrics_render(metrics_t *m, const metrics_gauges_t *g)
{
    static const char *const states[] = {"queued", "running", "done", "failed", "cancelled"};
    text_t t = {.failed = 0};
    buf_init(&t.b, METRICS_MAX_BYTES);
    put(&t, "# HELP fathom_build_info Build information.\n# TYPE fathom_build_info gauge\n"
            "fathom_build_info{version=\"%s\"} 1\n", FATHOM_VERSION);
    pthread_mutex_lock(&m->lock);
    put(&t, "# HELP fathom_http_requests_total HTTP requests by route and status.\n"
            "# TYPE fathom_http_requests_total counter\n");
    for (int i = 0; i < m->nseries; i++)
        put(&t, "fathom_http_requests_total{route=\"%s\",status=\"%d\"} %llu\n",
            m->series[i].route, m->series[i].status, (unsigned long long)m->series[i].count);
    put(&t, "# HELP fathom_http_request_duration_seconds Time from request to response.\n"
            "# TYPE fathom_http_request_duration_seconds histogram\n");
    for (int i = 0; i < m->nhist; i++) {
        const histogram_t *h = &m->hist[i];
        uint64_t cum = 0;
        for (size_t b = 0; b < NBUCKETS; b++) {
            cum += h->counts[b];
            put(&t, "fathom_http_request_duration_seconds_bucket{route=\"%s\",le=\"%g\"} %llu\n",
                h->route, buckets[b], (unsigned long long)cum);
        }
        put(&t, "fathom_http_request_duration_seconds_bucket{route=\"%s\",le=\"+Inf\"} %llu\n",
            h->route, (unsigned long long)h->count);
        put(&t, "fathom_http_request_duration_seconds_sum{route=\"%s\"} %.9g\n", h->route, h->sum);
        put(&t, "fathom_http_request_duration_seconds_count{route=\"%s\"} %llu\n", h->route,
            (unsigned long long)h->count);
    }
    pthread_mutex_unlock(&m->lock);
    put(&t, "# HELP fathom_cache_hits_total Estimate requests answered from the cache.\n"
            "# TYPE fathom_cache_hits_total counter\nfathom_cache_hits_total %llu\n",
        (unsigned long long)atomic_load(&m->cache_hits));
    put(&t, "# HELP fathom_cache_misses_total Estimate requests computed.\n"
            "# TYPE fathom_cache_misses_total counter\nfathom_cache_misses_total %llu\n",
        (unsigned long long)atomic_load(&m->cache_misses));
    put(&t, "# HELP fathom_evaluations_total Step-time evaluations run by sweeps.\n"
            "# TYPE fathom_evaluations_total counter\nfathom_evaluations_total %llu\n",
        (unsigned long long)atomic_load(&m->evaluations));
    put(&t, "# HELP fathom_worker_pool_busy Sweep workers running a job.\n"
            "# TYPE fathom_worker_pool_busy gauge\nfathom_worker_pool_busy %d\n",
        atomic_load(&m->workers_busy));
    put(&t, "# HELP fathom_sweeps Sweeps by state.\n# TYPE fathom_sweeps gauge\n");
    for (int s = 0; s < 5; s++)
        put(&t, "fathom_sweeps{state=\"%s\"} %lld\n", states[s], g->sweeps_by_state[s]);
    put(&t, "# HELP fathom_db_size_bytes Size of the database file and its WAL.\n"
            "# TYPE fathom_db_size_bytes gauge\nfathom_db_size_bytes %lld\n", g->db_size_bytes);
    if (t.failed) {
        buf_free(&t.b);
        return NULL;
    }
    return buf_take(&t.b);
}

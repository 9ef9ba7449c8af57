/* sweeps.h — asynchronous sweeps: stored by the store, run on the libuv worker pool.
 *
 * HTTP threads call sweeps_submit / sweeps_cancel / the read functions (sweep_views.c,
 * sweep_results.c); everything else runs on the loop thread (see the DESIGN note in sweeps.c).
 * Every call returns 0, or -1 with err: the HTTP layer answers with the code's status. */
#ifndef FATHOM_SWEEPS_H
#define FATHOM_SWEEPS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#include "server.h"

/* Largest ?limit of GET /v1/sweeps. */
#define SWEEP_LIST_MAX 200

sweeps_t *sweeps_create(server_t *srv, uv_loop_t *loop, fathom_error_t *err);
/* Asks running sweeps to stop at their next checkpoint (they resume after a restart) and stops
 * dispatching work. */
void sweeps_begin_shutdown(sweeps_t *s);
/* Closes the module's libuv handles; the loop then ends once running work items return. */
void sweeps_shutdown(sweeps_t *s);
void sweeps_free(sweeps_t *s);

/* HTTP-thread entry points: 0 with *out (new reference: the answer body), or -1 with err. */
int sweeps_submit(sweeps_t *s, const json_t *body, json_t **out, fathom_error_t *err);
int sweeps_status(sweeps_t *s, const char *id, json_t **out, fathom_error_t *err);
int sweeps_cancel(sweeps_t *s, const char *id, json_t **out, fathom_error_t *err);
/* The newest `limit` sweeps (1..SWEEP_LIST_MAX). */
int sweeps_list(sweeps_t *s, int limit, json_t **out, fathom_error_t *err);
/* A search's sample of the executions that fit, for plotting (not found for a grid). */
int sweeps_sample(sweeps_t *s, const char *id, json_t **out, fathom_error_t *err);
/* Counts of sweeps by state (queued, running, done, failed, cancelled). */
int sweeps_counts(sweeps_t *s, long long out[5], fathom_error_t *err);

/* A download of a sweep's points (grid) or ranked executions (search), JSON or CSV, produced
 * a chunk at a time so memory stays bounded whatever the sweep's size: see sweep_results.c. */
typedef struct sweep_download sweep_download_t;

/* Bytes held by a download at any moment, at most (one point past the soft chunk size). */
#define SWEEP_DOWNLOAD_MAX_BYTES (1024u * 1024)

/* Opens a download of `limit` points from `offset` (a point's index: grids page by key). */
int sweeps_download_open(sweeps_t *s, const char *id, long long offset, long long limit, int csv,
                         sweep_download_t **out, fathom_error_t *err);
/* Copies up to max bytes of the answer into buf: the count, 0 at the end, -1 on a read error
 * (err filled; the answer is then cut short). */
long sweeps_download_read(sweep_download_t *d, char *buf, size_t max, fathom_error_t *err);
/* The download's entity tag: equal while the sweep's status and the page asked for are. */
const char *sweeps_download_etag(const sweep_download_t *d);
/* Whether the download lists every point (a grid, a plan) rather than a ranked top N (a search). */
bool sweeps_download_every_point(const sweep_download_t *d);
void sweeps_download_free(sweep_download_t *d);

#endif

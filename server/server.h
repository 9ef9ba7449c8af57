/* server.h — fathomd's shared state: what every module of the server is handed.
 *
 * DESIGN. libmicrohttpd runs its own pool of polling threads (--threads); each request is
 * handled entirely on the thread that read it: decode, compute, cache, reply (http.h is the
 * request's side). The main thread runs a libuv loop that owns signals, the sweep worker pool and
 * shutdown. Shared state is either immutable after start-up (config, presets, OpenAPI document)
 * or synchronized by its own module (store, metrics, sweeps). No HTTP library type is needed to
 * read this header: only the files that handle requests see libmicrohttpd (http.h). */
#ifndef FATHOM_SERVER_H
#define FATHOM_SERVER_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "presets.h"
#include "store.h"

typedef struct metrics metrics_t;
typedef struct cache cache_t;
typedef struct sweeps sweeps_t;
struct MHD_Daemon;

/* A request being answered (defined in http.h), and the function that answers a complete one:
 * routes.c's routes_handle, handed to http_start by main.c, so the HTTP layer calls no handler
 * by name. Returns 1 when an answer was queued, 0 to drop the connection. */
typedef struct http_req http_req_t;
typedef int (*http_dispatch_fn)(http_req_t *r);

typedef struct server {
    config_t cfg;
    store_t *store;
    cache_t *cache;
    codec_presets_t *presets;
    struct MHD_Daemon *daemon;
    http_dispatch_fn dispatch;
    int quiesced_socket; /* the listening socket once quiesced, closed after the daemon stops */
    metrics_t *metrics;
    sweeps_t *sweeps;
    char *static_root;   /* realpath of cfg.static_dir, or NULL when there is no page */
    atomic_bool ready;   /* false before start-up completes and from the first SIGTERM on */
    atomic_int inflight; /* requests received and not yet completed */
    int bound_port;      /* the port actually bound (for --listen ...:0) */
} server_t;

/* Starts the HTTP daemon (http.c), every complete request answered by `dispatch`: 0, or -1
 * with a message on stderr. */
int http_start(server_t *srv, http_dispatch_fn dispatch);
/* Stops accepting new connections (requests in flight continue). */
void http_quiesce(server_t *srv);
void http_stop(server_t *srv);

/* Monotonic clock in nanoseconds. */
uint64_t now_ns(void);

#endif

/* server.h — fathomd's shared state and the HTTP request context every handler receives.
 *
 * DESIGN. libmicrohttpd runs its own pool of polling threads (--threads); each request is
 * handled entirely on the thread that read it: decode, compute, cache, reply. The main thread
 * runs a libuv loop that owns signals, the sweep worker pool and shutdown. Shared state is
 * either immutable after start-up (config, presets, OpenAPI document) or synchronized by its
 * own module (store, metrics, sweeps). */
#ifndef FATHOM_SERVER_H
#define FATHOM_SERVER_H

#include <jansson.h>
#include <microhttpd.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "buf.h"
#include "config.h"
#include "store.h"
#include "fathom_error.h"
#include "presets.h"

typedef struct metrics metrics_t;
typedef struct cache cache_t;
typedef struct sweeps sweeps_t;

typedef struct server {
    config_t cfg;
    store_t *store;
    cache_t *cache;
    codec_presets_t *presets;
    struct MHD_Daemon *daemon;
    int quiesced_socket; /* the listening socket once quiesced, closed after the daemon stops */
    metrics_t *metrics;
    sweeps_t *sweeps;
    char *static_root;   /* realpath of cfg.static_dir, or NULL when there is no page */
    atomic_bool ready;   /* false before start-up completes and from the first SIGTERM on */
    atomic_int inflight; /* requests received and not yet completed */
    int bound_port;      /* the port actually bound (for --listen ...:0) */
} server_t;

typedef struct http_req {
    server_t *srv;
    struct MHD_Connection *conn;
    const char *method;
    const char *url;
    buf_t body; /* capped at CODEC_MAX_BODY_BYTES; body.data is NULL when there is none */
    bool body_too_large;
    char request_id[33];
    uint64_t start_ns;
    const char *route;      /* metrics label: the route pattern, never the raw path */
    const char *cache;      /* "hit", "miss" or NULL when the route has no cache */
    int status;             /* 0 until a response is queued */
} http_req_t;

/* Sends a response. headers: NULL or a NULL-terminated list of name, value pairs. Every response
 * carries the CORS headers when the request's Origin is allowed (--cors-origins), and a 200 to a
 * GET or HEAD whose ETag the client already holds (If-None-Match) becomes a bodiless 304. */
enum MHD_Result http_send(http_req_t *r, int status, const char *content_type, const char *body,
                          size_t len, const char *const *headers);
/* Sends a body produced while it is sent (chunked): libmicrohttpd calls read(ctx, pos, buf, max)
 * for up to block_size bytes at a time (its one buffer per connection) and free_ctx(ctx) once
 * the response is done with, even when this call fails. */
enum MHD_Result http_send_stream(http_req_t *r, int status, const char *content_type,
                                 size_t block_size, MHD_ContentReaderCallback read,
                                 void *ctx, MHD_ContentReaderFreeCallback free_ctx,
                                 const char *const *headers);
/* A strong entity tag for bytes that are the whole state of an answer: "\"" + FNV-1a 64 of
 * data in hex + "\"" (HTTP_ETAG_LEN chars and a NUL). Equal bytes give equal tags. */
#define HTTP_ETAG_LEN 18
void http_etag(char out[HTTP_ETAG_LEN + 1], const char *data, size_t len);
/* Sends body (reference stolen) as JSON. */
enum MHD_Result http_send_json(http_req_t *r, int status, json_t *body,
                               const char *const *headers);
/* Sends {"error":{code,message,field?,line?,column?}} with the code's HTTP status. */
enum MHD_Result http_send_error(http_req_t *r, const fathom_error_t *err,
                                const char *const *headers);
enum MHD_Result http_send_errorf(http_req_t *r, fathom_code_t code, const char *field,
                                 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Whether the request may write (create or cancel sweeps, store or delete presets): true when
 * fathomd runs without --api-token, else when it carries 'Authorization: Bearer <token>'. */
bool http_authorized(http_req_t *r);
/* 401 with WWW-Authenticate; `what` ends the message ("to create or cancel sweeps"). */
enum MHD_Result http_send_unauthorized(http_req_t *r, const char *what);

/* A per-request preset registry (presets.h): the built-ins plus the user presets of the store,
 * read when a request names one (presets_http.c). Free with codec_presets_free; NULL when out
 * of memory. */
codec_presets_t *server_presets_overlay(server_t *srv);

/* The value of a query-string argument, or NULL. */
const char *http_query(http_req_t *r, const char *name);
/* The value of a request header, or NULL. */
const char *http_header(http_req_t *r, const char *name);

/* Starts and stops the HTTP daemon. http_start returns 0 or -1 with a message on stderr. */
int http_start(server_t *srv);
/* Stops accepting new connections (requests in flight continue). */
void http_quiesce(server_t *srv);
void http_stop(server_t *srv);

/* Answers a CORS preflight (OPTIONS) for a path whose methods are `allow`: 204 with Allow, and
 * the Access-Control-Allow-* headers when the Origin is allowed (without them the browser
 * refuses the call, which is the answer for an origin not on the list). */
enum MHD_Result http_send_preflight(http_req_t *r, const char *allow);

/* Routes a complete request (body read) to its handler. Defined in routes.c. */
enum MHD_Result routes_dispatch(http_req_t *r);

/* Monotonic clock in nanoseconds. */
uint64_t now_ns(void);

#endif

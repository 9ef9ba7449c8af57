/* http.h — the request's side of the HTTP layer (http.c, over libmicrohttpd): the request every
 * handler receives, reading its body, query and headers, and sending answers. Only files that
 * answer requests include it (the handlers, routes.c): the rest of the server never sees
 * libmicrohttpd. Handlers return what libmicrohttpd expects (enum MHD_Result): a check that
 * fails sends its error and returns, so a handler reads as a column of checks. */
#ifndef FATHOM_HTTP_H
#define FATHOM_HTTP_H

#include <jansson.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stdint.h>

#include "buf.h"
#include "server.h"

struct http_req {
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
};

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
/* Sends body (reference stolen) as JSON. */
enum MHD_Result http_send_json(http_req_t *r, int status, json_t *body,
                               const char *const *headers);
/* Sends {"error": the error object} (codec/error_codec.h, its one encoder) with the code's HTTP
 * status. */
enum MHD_Result http_send_error(http_req_t *r, const fathom_error_t *err,
                                const char *const *headers);
enum MHD_Result http_send_errorf(http_req_t *r, fathom_code_t code, const char *field,
                                 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Whether the request may write (create or cancel sweeps, store or delete presets): true when
 * fathomd runs without --api-token, else when it carries 'Authorization: Bearer <token>'. */
bool http_authorized(http_req_t *r);
/* 401 with WWW-Authenticate; `what` ends the message ("to create or cancel sweeps"). */
enum MHD_Result http_send_unauthorized(http_req_t *r, const char *what);

/* The value of a query-string argument, or NULL. */
const char *http_query(http_req_t *r, const char *name);
/* The most names a resource's query may have (http_query_check). */
#define HTTP_QUERY_MAX_NAMES 8
/* 422 naming the first query argument that is not one of `allowed` (NULL-terminated, at most
 * HTTP_QUERY_MAX_NAMES; NULL: the resource takes none) or that is given twice (?limit=1&limit=2
 * would leave one of them unused): -1 with err. 0 when every argument is allowed and single. */
int http_query_check(http_req_t *r, const char *const *allowed, fathom_error_t *err);
/* The value of a request header, or NULL. */
const char *http_header(http_req_t *r, const char *name);

/* Answers a CORS preflight (OPTIONS) for a path whose methods are `allow`: 204 with Allow, and
 * the Access-Control-Allow-* headers when the Origin is allowed (without them the browser
 * refuses the call, which is the answer for an origin not on the list). */
enum MHD_Result http_send_preflight(http_req_t *r, const char *allow);

/* Whether the request's Content-Type allows a JSON body: application/json, none, or curl's
 * default for -d (application/x-www-form-urlencoded). */
bool http_body_is_json(http_req_t *r);
/* The request body as JSON (its Content-Type must allow JSON: application/json, none, or curl's
 * default for -d; no Content-Encoding but identity), or NULL with err (415
 * unsupported_media_type, naming Content-Encoding when that is why; 400 invalid_json; 413). */
json_t *http_json_body(http_req_t *r, fathom_error_t *err);

#endif

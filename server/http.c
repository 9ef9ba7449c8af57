/* http.c — libmicrohttpd glue: reading bodies within limits, sending responses, logging and
 * counting each request once when it completes.
 *
 * DESIGN. MHD calls the access handler several times per request on one of its pool threads:
 * first with no body (we allocate the http_req_t and check the declared length), then once per
 * chunk of body (we append, up to CODEC_MAX_BODY_BYTES), then with an empty chunk (we route).
 * The request context is freed in the completion callback, which also writes the log line and
 * the metrics, so every request is logged exactly once whatever path it took. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "json_parse.h"
#include "log.h"
#include "metrics.h"
#include "error_codec.h"
#include "http.h"

/* Compares the Authorization header with the token in constant time: both are hashed first, so
 * neither the comparison nor an early length check reveals how much of a guess was right. */
bool http_authorized(http_req_t *r)
{
    const char *token = r->srv->cfg.api_token;
    if (!token[0])
        return true;
    const char *auth = http_header(r, "Authorization");
    if (!auth || strncasecmp(auth, "Bearer ", 7) != 0) /* the scheme is case-insensitive */
        return false;
    unsigned char want[crypto_generichash_BYTES], got[crypto_generichash_BYTES];
    crypto_generichash(want, sizeof want, (const unsigned char *)token, strlen(token), NULL, 0);
    crypto_generichash(got, sizeof got, (const unsigned char *)auth + 7, strlen(auth + 7), NULL, 0);
    return sodium_memcmp(want, got, sizeof want) == 0;
}

enum MHD_Result http_send_unauthorized(http_req_t *r, const char *what)
{
    fathom_error_t err;
    fathom_error_set(&err, FATHOM_E_UNAUTHORIZED, NULL,
                     "this server needs 'Authorization: Bearer <token>' %s", what);
    const char *headers[] = {"WWW-Authenticate", "Bearer realm=\"fathom\"", NULL};
    return http_send_error(r, &err, headers);
}

uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The request's Origin when the configured allow-list admits it, else NULL. The list is short
 * and read-only after start-up, so it is scanned on each request rather than parsed into a set. */
static const char *allowed_origin(http_req_t *r)
{
    const char *origin = http_header(r, "Origin");
    const char *list = r->srv->cfg.cors_origins;
    if (!origin || !list[0])
        return NULL;
    size_t olen = strlen(origin);
    for (const char *p = list; *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        const char *end = p;
        while (*end && *end != ',')
            end++;
        size_t n = (size_t)(end - p);
        while (n && p[n - 1] == ' ')
            n--;
        if ((n == 1 && p[0] == '*') || (n == olen && strncmp(p, origin, n) == 0))
            return origin;
        p = end;
    }
    return NULL;
}

/* Whether an If-None-Match value ("*", or a comma-separated list of tags, weak or strong) names
 * etag; weak comparison, as RFC 9110 asks for If-None-Match. */
static int etag_matches(const char *inm, const char *etag)
{
    size_t elen = strlen(etag);
    for (const char *p = inm; *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        if (p[0] == 'W' && p[1] == '/')
            p += 2;
        const char *end = p;
        while (*end && *end != ',' && *end != ' ')
            end++;
        if ((end - p == 1 && *p == '*') || ((size_t)(end - p) == elen && !strncmp(p, etag, elen)))
            return 1;
        p = end;
    }
    return 0;
}

static const char *header_in(const char *const *headers, const char *name)
{
    for (const char *const *h = headers; h && h[0]; h += 2)
        if (strcasecmp(h[0], name) == 0)
            return h[1];
    return NULL;
}

static void add_cors_headers(http_req_t *r, struct MHD_Response *resp)
{
    /* Vary whenever a list is configured: a shared cache must not hand one origin's answer
     * (with or without the allow header) to another. */
    if (r->srv->cfg.cors_origins[0])
        MHD_add_response_header(resp, "Vary", "Origin");
    const char *origin = allowed_origin(r);
    if (!origin)
        return;
    MHD_add_response_header(resp, "Access-Control-Allow-Origin", origin);
    /* Without this a dashboard's script cannot read the result hash or the cache state. */
    MHD_add_response_header(resp, "Access-Control-Expose-Headers",
                            "ETag, X-Fathom-Cache, X-Request-Id, Location, Retry-After");
}

/* Adds the common headers (and CORS) to resp, queues it and counts the request. */
static enum MHD_Result queue_response(http_req_t *r, int status, const char *content_type,
                                      struct MHD_Response *resp, const char *const *headers)
{
    if (content_type)
        MHD_add_response_header(resp, "Content-Type", content_type);
    MHD_add_response_header(resp, "X-Request-Id", r->request_id);
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    add_cors_headers(r, resp);
    for (const char *const *h = headers; h && h[0]; h += 2)
        MHD_add_response_header(resp, h[0], h[1]);
    enum MHD_Result rc = MHD_queue_response(r->conn, (unsigned)status, resp);
    MHD_destroy_response(resp);
    r->status = status;
    /* Counted when the answer is queued, so a client that has its answer also finds it in
     * /metrics; requests never answered are counted at completion. */
    metrics_observe_request(r->srv->metrics, r->route, status,
                            (double)(now_ns() - r->start_ns) / 1e9);
    return rc;
}

enum MHD_Result http_send(http_req_t *r, int status, const char *content_type, const char *body,
                          size_t len, const char *const *headers)
{
    const char *etag = header_in(headers, "ETag");
    const char *inm = http_header(r, "If-None-Match");
    if (status == 200 && etag && inm && etag_matches(inm, etag) &&
        (strcmp(r->method, "GET") == 0 || strcmp(r->method, "HEAD") == 0)) {
        status = 304; /* the client holds this very answer: headers only */
        len = 0;
        content_type = NULL;
    }
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!resp)
        return MHD_NO;
    return queue_response(r, status, content_type, resp, headers);
}

enum MHD_Result http_send_stream(http_req_t *r, int status, const char *content_type,
                                 size_t block_size, MHD_ContentReaderCallback read,
                                 void *ctx, MHD_ContentReaderFreeCallback free_ctx,
                                 const char *const *headers)
{
    const char *etag = header_in(headers, "ETag");
    const char *inm = http_header(r, "If-None-Match");
    if (status == 200 && etag && inm && etag_matches(inm, etag) &&
        (strcmp(r->method, "GET") == 0 || strcmp(r->method, "HEAD") == 0)) {
        /* The client holds this very answer: http_send makes it a 304. The reader is freed
         * after, since the headers (the ETag above all) may live in it. */
        enum MHD_Result rc = http_send(r, 200, content_type, "", 0, headers);
        free_ctx(ctx);
        return rc;
    }
    struct MHD_Response *resp =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, block_size, read, ctx, free_ctx);
    if (!resp) {
        free_ctx(ctx);
        return MHD_NO;
    }
    return queue_response(r, status, content_type, resp, headers);
}

enum MHD_Result http_send_preflight(http_req_t *r, const char *allow)
{
    if (!allowed_origin(r)) {
        const char *headers[] = {"Allow", allow, NULL};
        return http_send(r, 204, NULL, "", 0, headers);
    }
    const char *headers[] = {"Allow", allow,
                             "Access-Control-Allow-Methods", allow,
                             "Access-Control-Allow-Headers",
                             "Content-Type, Authorization, If-None-Match",
                             "Access-Control-Max-Age", "600",
                             NULL};
    return http_send(r, 204, NULL, "", 0, headers);
}

enum MHD_Result http_send_json(http_req_t *r, int status, json_t *body,
                               const char *const *headers)
{
    char *text = json_dumps(body, JSON_INDENT(2) | JSON_REAL_PRECISION(17) | JSON_ENCODE_ANY);
    json_decref(body);
    if (!text) {
        static const char oom[] = "{\"error\":{\"code\":\"internal\",\"message\":\"out of memory\"}}\n";
        return http_send(r, 500, "application/json", oom, sizeof oom - 1, NULL);
    }
    size_t len = strlen(text);
    text[len] = '\n'; /* replaces the NUL: curl users get a final newline */
    enum MHD_Result rc = http_send(r, status, "application/json", text, len + 1, headers);
    free(text);
    return rc;
}

enum MHD_Result http_send_error(http_req_t *r, const fathom_error_t *err,
                                const char *const *headers)
{
    return http_send_json(r, fathom_code_http_status(err->code),
                          json_pack("{s:o}", "error", codec_error_encode(err)), headers);
}

enum MHD_Result http_send_errorf(http_req_t *r, fathom_code_t code, const char *field,
                                 const char *fmt, ...)
{
    fathom_error_t err;
    va_list ap;
    va_start(ap, fmt);
    fathom_error_vset(&err, code, field, fmt, ap);
    va_end(ap);
    return http_send_error(r, &err, NULL);
}

/* Whether the body came with a Content-Encoding other than identity (gzip, deflate…): Fathom
 * decodes none, and reading gzip's bytes as JSON would answer a 400 about a byte at column 1. */
static bool body_encoded(http_req_t *r)
{
    const char *ce = http_header(r, "Content-Encoding");
    if (!ce)
        return false;
    ce += strspn(ce, " \t");
    size_t n = strcspn(ce, " \t");
    return !(n == 8 && strncasecmp(ce, "identity", 8) == 0 && ce[n + strspn(ce + n, " \t")] == 0);
}

/* Bodies are JSON when declared so, undeclared, or declared as curl's default for -d. */
static bool content_type_json(http_req_t *r)
{
    const char *ct = http_header(r, "Content-Type");
    if (!ct)
        return true;
    size_t n = strcspn(ct, ";");
    while (n > 0 && (ct[n - 1] == ' ' || ct[n - 1] == '\t'))
        n--;
    if ((n == 16 && strncasecmp(ct, "application/json", 16) == 0) ||
        (n == 33 && strncasecmp(ct, "application/x-www-form-urlencoded", 33) == 0))
        return true;
    return false;
}

/* JSON as declared, and never encoded. */
bool http_body_is_json(http_req_t *r)
{
    return !body_encoded(r) && content_type_json(r);
}

json_t *http_json_body(http_req_t *r, fathom_error_t *err)
{
    if (body_encoded(r)) {
        fathom_error_set(err, FATHOM_E_UNSUPPORTED_MEDIA_TYPE, "Content-Encoding",
                         "Content-Encoding '%s' is not accepted; send the JSON as is "
                         "(identity)",
                         http_header(r, "Content-Encoding"));
        return NULL;
    }
    if (!content_type_json(r)) {
        fathom_error_set(err, FATHOM_E_UNSUPPORTED_MEDIA_TYPE, NULL,
                         "Content-Type '%s' is not accepted; send application/json",
                         http_header(r, "Content-Type"));
        return NULL;
    }
    return codec_parse_body(r->body.data ? r->body.data : "", r->body.len, err);
}

const char *http_query(http_req_t *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

const char *http_header(http_req_t *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

typedef struct {
    const char *const *allowed;
    int seen[HTTP_QUERY_MAX_NAMES];
    fathom_error_t *err;
    int bad;
} query_check_t;

static enum MHD_Result check_argument(void *cls, enum MHD_ValueKind kind, const char *key,
                                      const char *value)
{
    (void)kind;
    query_check_t *q = cls;
    int i = 0;
    while (q->allowed && q->allowed[i] && strcmp(q->allowed[i], key) != 0)
        i++;
    if (!q->allowed || !q->allowed[i]) {
        char names[160] = "";
        for (int k = 0; q->allowed && q->allowed[k]; k++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", k ? ", " : "",
                     q->allowed[k]);
        fathom_error_set(q->err, FATHOM_E_INVALID_FIELD, key,
                         "is not a query parameter of this resource (%s%s)",
                         names[0] ? "it takes " : "it takes none", names);
    } else if (q->seen[i]++) {
        fathom_error_set(q->err, FATHOM_E_INVALID_FIELD, key,
                         "is given more than once; give it once");
    } else if (!value) {
        /* "?limit" with no "=": libmicrohttpd gives NULL, which http_query cannot tell from
         * an absent parameter, so the resource would silently take its default. */
        fathom_error_set(q->err, FATHOM_E_INVALID_FIELD, key, "has no value; give %s=VALUE",
                         key);
    } else {
        return MHD_YES;
    }
    q->bad = 1;
    return MHD_NO;
}

int http_query_check(http_req_t *r, const char *const *allowed, fathom_error_t *err)
{
    query_check_t q = {.allowed = allowed, .err = err};
    MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, check_argument, &q);
    return q.bad ? -1 : 0;
}

/* ------------------------------------------------------- what a client may send ---- */

static int hex_value(char c)
{
    return c >= '0' && c <= '9' ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* The %HH at s, decoded, or -1 when s does not start one. */
static int escaped_byte(const char *s)
{
    if (s[0] != '%')
        return -1;
    int hi = hex_value(s[1]), lo = hi < 0 ? -1 : hex_value(s[2]);
    return lo < 0 ? -1 : hi * 16 + lo;
}

static bool control_byte(int b)
{
    return (b >= 0 && b < 0x20) || b == 0x7f;
}

/* libmicrohttpd's unescaper for the path and the query's values, as its own but for control
 * bytes (a NUL above all): they stay written as %HH, so a C string is never cut short at a %00
 * ("x%00../../etc" does not become "x"), and the request is refused below, naming where. */
static size_t unescape(void *cls, struct MHD_Connection *conn, char *s)
{
    (void)cls;
    (void)conn;
    char *out = s;
    for (const char *in = s; *in;) {
        int b = escaped_byte(in);
        if (b < 0 || control_byte(b)) {
            *out++ = *in++;
            continue;
        }
        *out++ = (char)b;
        in += 3;
    }
    *out = '\0';
    return (size_t)(out - s);
}

/* Whether text holds a control byte, raw or left written as %HH by unescape. */
static bool has_control_byte(const char *text)
{
    for (const char *p = text; *p; p++)
        if (control_byte((unsigned char)*p) || control_byte(escaped_byte(p)))
            return true;
    return false;
}

typedef struct {
    const char *bad; /* the first query argument whose name or value holds a control byte */
} query_scan_t;

static enum MHD_Result scan_argument(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value)
{
    (void)kind;
    query_scan_t *q = cls;
    if (has_control_byte(key) || (value && has_control_byte(value))) {
        q->bad = key;
        return MHD_NO;
    }
    return MHD_YES;
}

/* 400 for a path or query argument holding a NUL or another control byte: no name, id or
 * value Fathom reads may hold one. NULL when the request is clean. */
static const char *control_bytes_in(http_req_t *r, fathom_error_t *err)
{
    if (has_control_byte(r->url))
        return fathom_error_set(err, FATHOM_E_BAD_REQUEST, "path",
                                "the path holds a NUL or another control byte (%%00 to %%1F, "
                                "%%7F): no name or id may"),
               "path";
    query_scan_t q = {NULL};
    MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, scan_argument, &q);
    if (q.bad)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, q.bad,
                                "the query argument holds a NUL or another control byte (%%00 to "
                                "%%1F, %%7F)"),
               q.bad;
    return NULL;
}

static http_req_t *req_create(server_t *srv, struct MHD_Connection *conn, const char *method,
                              const char *url)
{
    http_req_t *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->srv = srv;
    r->conn = conn;
    r->method = method;
    r->url = url;
    r->start_ns = now_ns();
    buf_init(&r->body, CODEC_MAX_BODY_BYTES);
    unsigned char id[16];
    randombytes_buf(id, sizeof id);
    sodium_bin2hex(r->request_id, sizeof r->request_id, id, sizeof id);
    atomic_fetch_add(&srv->inflight, 1);
    return r;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    (void)version;
    server_t *srv = cls;
    http_req_t *r = *con_cls;
    if (!r) {
        r = req_create(srv, conn, method, url);
        if (!r)
            return MHD_NO;
        *con_cls = r;
        fathom_error_t bad;
        if (control_bytes_in(r, &bad)) {
            r->route = "bad_request";
            return http_send_error(r, &bad, NULL);
        }
        /* A body in a coding libmicrohttpd does not decode (gzip…) would never be seen as
         * complete: answered now, before waiting for it (RFC 9112 §6.1). */
        const char *te = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Transfer-Encoding");
        if (te && strcasecmp(te, "chunked") != 0 && strcasecmp(te, "identity") != 0) {
            r->route = "bad_request";
            r->body_too_large = true; /* discard whatever body follows */
            return http_send_errorf(r, FATHOM_E_BAD_REQUEST, "Transfer-Encoding",
                                    "only chunked bodies are read, not '%s'", te);
        }
        const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
        if (cl && strtoull(cl, NULL, 10) > CODEC_MAX_BODY_BYTES) {
            r->body_too_large = true;
            /* Answer before reading: MHD then closes the connection instead of draining it. */
            return http_send_errorf(r, FATHOM_E_BODY_TOO_LARGE, NULL,
                                    "request body is %s bytes; the limit is %d", cl,
                                    CODEC_MAX_BODY_BYTES);
        }
        return MHD_YES;
    }
    if (r->status) { /* already answered (413): discard whatever else arrives */
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        int appended = r->body_too_large ? BUF_TOO_BIG : buf_append(&r->body, upload_data, n);
        if (appended == BUF_TOO_BIG) { /* capped at CODEC_MAX_BODY_BYTES: answered with 413 */
            r->body_too_large = true;
            return MHD_YES;
        }
        return appended == 0 ? MHD_YES : MHD_NO;
    }
    if (r->body_too_large)
        return http_send_errorf(r, FATHOM_E_BODY_TOO_LARGE, NULL,
                                "request body is larger than the limit of %d bytes",
                                CODEC_MAX_BODY_BYTES);
    return srv->dispatch(r) ? MHD_YES : MHD_NO;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)conn;
    server_t *srv = cls;
    http_req_t *r = *con_cls;
    if (!r)
        return;
    double seconds = (double)(now_ns() - r->start_ns) / 1e9;
    int status = r->status ? r->status : 499; /* client went away before an answer */
    if (!r->status)
        metrics_observe_request(srv->metrics, r->route, status, seconds);
    /* The path as the client sent it may not be UTF-8 (%FF): logged with such bytes as \xHH, so
     * the line keeps its path, status and request id whatever was asked. */
    char path[2048], method[64];
    codec_utf8_clean(r->url, path, sizeof path);
    codec_utf8_clean(r->method, method, sizeof method);
    json_t *fields = json_pack("{s:s,s:s,s:s,s:i,s:f,s:s}", "request_id", r->request_id,
                               "method", method, "path", path, "status", status,
                               "duration_ms", seconds * 1000.0, "route",
                               r->route ? r->route : "unmatched");
    if (r->cache)
        json_object_set_new(fields, "cache", json_string(r->cache));
    if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
        json_object_set_new(fields, "terminated", json_integer((int)toe));
    log_event(status >= 500 ? LOG_ERROR : LOG_INFO, "request", fields);
    buf_free(&r->body);
    free(r);
    *con_cls = NULL;
    atomic_fetch_sub(&srv->inflight, 1);
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char buf[512];
    vsnprintf(buf, sizeof buf, fmt, ap);
    size_t n = strlen(buf);
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        buf[--n] = '\0';
    log_event(LOG_WARN, buf, json_pack("{s:s}", "source", "libmicrohttpd"));
}

int http_start(server_t *srv, http_dispatch_fn dispatch)
{
    srv->dispatch = dispatch;
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    socklen_t sslen;
    /* poll(), not epoll: libmicrohttpd 0.9.75 races in MHD_quiesce_daemon on an epoll thread
     * pool (the calling thread and a worker both remove the listening socket from the worker's
     * epoll set, and the loser aborts the process with "Failed to remove listen FD from epoll
     * set"). With poll() quiescing only wakes each worker through its ITC. */
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ITC |
                         MHD_USE_ERROR_LOG;
    struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
    /* config.c checked the address and took off an IPv6 address's brackets. */
    const char *host = srv->cfg.listen_host;
    if (strcmp(host, "localhost") == 0)
        host = "127.0.0.1";
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)srv->cfg.listen_port);
        sslen = sizeof *v4;
    } else if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)srv->cfg.listen_port);
        sslen = sizeof *v6;
        flags |= MHD_USE_IPv6;
    } else {
        log_event(LOG_ERROR, "cannot start",
                  json_pack("{s:s,s:s}", "reason", "--listen is not an IPv4 or IPv6 address",
                            "host", srv->cfg.listen_host));
        return -1;
    }
    (void)sslen;
    srv->quiesced_socket = MHD_INVALID_SOCKET;
    srv->daemon = MHD_start_daemon(
        flags, (uint16_t)srv->cfg.listen_port, NULL, NULL, on_request, srv,
        MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)srv->cfg.threads,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned int)srv->cfg.max_connections,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)srv->cfg.max_per_ip,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)srv->cfg.connection_timeout_s,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024),
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
        MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL,
        MHD_OPTION_END);
    if (!srv->daemon) {
        log_event(LOG_ERROR, "cannot start",
                  json_pack("{s:s,s:s,s:i}", "reason",
                            "cannot listen (the address is in use or not permitted)", "host",
                            srv->cfg.listen_host, "port", srv->cfg.listen_port));
        return -1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_BIND_PORT);
    srv->bound_port = info ? info->port : srv->cfg.listen_port;
    return 0;
}

void http_quiesce(server_t *srv)
{
    if (srv->daemon && srv->quiesced_socket == MHD_INVALID_SOCKET) {
        srv->quiesced_socket = MHD_quiesce_daemon(srv->daemon);
        /* A worker may still be polling the socket until its ITC wakes it, so the descriptor
         * stays open (closing it could hand its number to another file under the worker) until
         * MHD_stop_daemon; shutting it down already makes the kernel refuse new connections. */
        if (srv->quiesced_socket != MHD_INVALID_SOCKET)
            shutdown(srv->quiesced_socket, SHUT_RDWR);
    }
}

void http_stop(server_t *srv)
{
    if (srv->daemon) {
        MHD_stop_daemon(srv->daemon);
        srv->daemon = NULL;
        if (srv->quiesced_socket != MHD_INVALID_SOCKET)
            close(srv->quiesced_socket);
        srv->quiesced_socket = MHD_INVALID_SOCKET;
    }
}

/* fuzz_http.c — libFuzzer target for what a client sends before any decoder: the request line
 * (method, path, query), the headers and the framing, through libmicrohttpd and Fathom's HTTP
 * layer and route table (server/http.c, server/routes.c) — the paths the decoders' targets do
 * not reach. A whole fathomd (a temporary SQLite store, the presets, the cache, the sweeps'
 * scheduler without its loop: a submitted sweep stays queued) listens on a loopback port of its
 * own; each input is sent as is on a fresh connection, closed for writing after it, and the
 * answer read to its end.
 *
 * Properties: nothing crashes or trips a sanitizer anywhere in the server; an answer from Fathom
 * (it carries X-Request-Id) is never a 5xx; one from libmicrohttpd itself (framing it refuses
 * before Fathom sees the request: doc/api.md) may be anything it chooses; the server answers
 * /healthz after every input. Seeds: tests/fuzz/corpus/http/ (the bad-input corpus of
 * tests/bad_input/, rendered by make_corpus.py). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "cache.h"
#include "fuzz_common.h"
#include "log.h"
#include "metrics.h"
#include "routes.h"
#include "server.h"
#include "sweeps.h"

static server_t srv;
static uv_loop_t loop;

static void die(const char *what, const char *why)
{
    fprintf(stderr, "fuzz_http: %s: %s\n", what, why);
    abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    char *fake[] = {"fuzz_http", "--listen", "127.0.0.1:0", "--threads", "2", "--workers", "1",
                    "--connection-timeout", "5", "--log-level", "error", NULL};
    if (config_load(&srv.cfg, 11, fake))
        die("config", "refused");
    static char dir[] = "/tmp/fathom-fuzz-http-XXXXXX";
    if (!mkdtemp(dir))
        die("mkdtemp", dir);
    snprintf(srv.cfg.db_path, sizeof srv.cfg.db_path, "%s/fathom.db", dir);
    log_set_level(LOG_ERROR);
    fathom_error_t err;
    fathom_error_clear(&err);
    if (!(srv.presets = codec_presets_load(srv.cfg.presets_dir, &err)))
        die("presets", err.message);
    if (!(srv.store = store_open(srv.cfg.db_path, srv.cfg.migrations_dir, 4, &err)))
        die("store", err.message);
    srv.cache = cache_create(srv.store);
    srv.metrics = metrics_create();
    uv_loop_init(&loop);
    if (!srv.cache || !srv.metrics || !(srv.sweeps = sweeps_create(&srv, &loop, &err)))
        die("start-up", err.message);
    atomic_store(&srv.ready, true);
    if (http_start(&srv, routes_handle))
        die("listen", "http_start failed");
    return 0;
}

/* Connects fd to the server. libFuzzer's timers (SIGALRM for -timeout) interrupt blocking
 * calls: an interrupted connect() goes on in the background, so it is waited for and its
 * outcome read, not retried (a second connect() would answer EALREADY). */
static int connect_to_server(int fd, const struct sockaddr_in *a)
{
    if (connect(fd, (const struct sockaddr *)a, sizeof *a) == 0)
        return 0;
    if (errno != EINTR)
        return -1;
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    int r;
    while ((r = poll(&p, 1, 10000)) < 0 && errno == EINTR)
        ;
    int soerr = 0;
    socklen_t len = sizeof soerr;
    return r == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) == 0 && soerr == 0 ? 0 : -1;
}

/* Sends data on a fresh connection and reads the whole answer, keeping its first cap - 1 bytes
 * in buf (NUL-terminated). A send or recv interrupted by a signal is repeated: an empty answer
 * must mean the server sent none, not that the harness gave up (which read as a dead server). */
static size_t exchange(const uint8_t *data, size_t size, char *buf, size_t cap)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)srv.bound_port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    size_t got = 0;
    if (connect_to_server(fd, &a) == 0) {
        for (size_t sent = 0; sent < size;) {
            ssize_t n = send(fd, data + sent, size - sent, MSG_NOSIGNAL);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            sent += (size_t)n;
        }
        shutdown(fd, SHUT_WR);
        char drain[4096];
        for (;;) { /* the head and what fits after it are kept; the rest is read and dropped */
            ssize_t n = got < cap - 1 ? recv(fd, buf + got, cap - 1 - got, 0)
                                      : recv(fd, drain, sizeof drain, 0);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            if (got < cap - 1)
                got += (size_t)n;
        }
    }
    close(fd);
    buf[got] = '\0';
    return got;
}

static char answer[1 << 16];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    exchange(data, size, answer, sizeof answer);
    int status = 0;
    if (sscanf(answer, "HTTP/1.%*d %d", &status) == 1 && status >= 500 &&
        strstr(answer, "\r\nX-Request-Id: ") != NULL) {
        fprintf(stderr, "fuzz_http: Fathom answered %d:\n%.2000s\n", status, answer);
        abort();
    }
    static const char health[] = "GET /healthz HTTP/1.1\r\nHost: f\r\n\r\n";
    exchange((const uint8_t *)health, sizeof health - 1, answer, sizeof answer);
    if (strncmp(answer, "HTTP/1.1 200", 12) != 0) {
        fprintf(stderr, "fuzz_http: /healthz after the input answered:\n%.500s\n", answer);
        abort();
    }
    return 0;
}

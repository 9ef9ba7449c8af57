/* main.c — fathomd: start-up, the main libuv loop, and graceful shutdown.
 *
 * DESIGN. Start-up order: settings → presets → database (migrated) → HTTP daemon → ready. The
 * main thread then runs a libuv loop that owns the signal handlers and (with sweeps) the worker
 * pool. On the first SIGTERM or SIGINT: /readyz turns 503 at once, the listening socket is
 * closed (new connections are refused), requests in flight get up to --shutdown-grace seconds
 * to finish, running sweeps stop at their next checkpoint, and the database is closed cleanly
 * (WAL checkpointed). A second signal skips the grace period. Exit status 0 after a clean stop.
 * SIGHUP is logged and ignored (nothing is reloaded). */
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <sodium.h>
#include <gsl/gsl_errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "alloc_guard.h"
#include "cache.h"
#include "config.h"
#include "store.h"
#include "log.h"
#include "metrics.h"
#include "routes.h"
#include "server.h"
#include "sweeps.h"

#define SHUTDOWN_POLL_MS 20
#define HIT_FLUSH_MS 1000

typedef struct {
    server_t *srv;
    uv_loop_t *loop;
    uv_signal_t sigterm, sigint, sighup;
    uv_timer_t drain;
    uv_timer_t flush;
    uint64_t drain_deadline_ms;
    int stopping;
} app_t;

static void close_handle(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

static void finish(app_t *app)
{
    http_stop(app->srv);
    sweeps_shutdown(app->srv->sweeps);
    uv_timer_stop(&app->drain);
    uv_timer_stop(&app->flush);
    uv_signal_stop(&app->sigterm);
    uv_signal_stop(&app->sigint);
    uv_signal_stop(&app->sighup);
    /* The sweep module's handles close in sweeps_shutdown; close whatever is left. */
    uv_walk(app->loop, close_handle, NULL);
}

static void on_drain_tick(uv_timer_t *t)
{
    app_t *app = t->data;
    int inflight = atomic_load(&app->srv->inflight);
    if (inflight == 0 || uv_now(app->loop) >= app->drain_deadline_ms) {
        if (inflight)
            log_msg(LOG_WARN, "shutdown grace period over with %d request(s) in flight", inflight);
        finish(app);
    }
}

static void on_flush_tick(uv_timer_t *t)
{
    app_t *app = t->data;
    if (cache_flush_hits(app->srv->cache))
        log_msg(LOG_WARN, "could not write cache hit counts (database full or read-only?)");
    /* A burst of connections leaves freed buffers in glibc's arenas; hand them back once the
     * burst is over (trimming walks the arenas under their locks, so never while serving). */
    if (atomic_load(&app->srv->inflight) == 0)
        malloc_trim(0);
}

static void on_signal(uv_signal_t *s, int signum)
{
    app_t *app = s->data;
    if (app->stopping) {
        log_msg(LOG_WARN, "second signal: stopping now");
        app->drain_deadline_ms = 0;
        return;
    }
    app->stopping = 1;
    /* Not ready before the log line says so: a test (or an operator) reading the line may rely
     * on /readyz answering 503 already. */
    atomic_store(&app->srv->ready, false);
    log_event(LOG_INFO, "shutting down",
              json_pack("{s:s,s:i}", "signal", signum == SIGTERM ? "SIGTERM" : "SIGINT",
                        "inflight", atomic_load(&app->srv->inflight)));
    http_quiesce(app->srv);
    sweeps_begin_shutdown(app->srv->sweeps);
    app->drain_deadline_ms = uv_now(app->loop) + (uint64_t)app->srv->cfg.shutdown_grace_s * 1000;
    uv_timer_start(&app->drain, on_drain_tick, 0, SHUTDOWN_POLL_MS);
}

/* SIGHUP's default action would end fathomd at once, mid-request and with the database open,
 * for an operator expecting a reload (or a terminal closing): it is only logged. */
static void on_sighup(uv_signal_t *s, int signum)
{
    (void)s;
    (void)signum;
    log_msg(LOG_WARN, "SIGHUP ignored: settings are read at start only; restart fathomd to "
                      "change them");
}

/* A start that fails after the settings were read: one JSON log line, as every other line
 * fathomd writes, so a log pipeline that reads JSON sees why a pod does not start. */
static void start_failed(const char *reason)
{
    log_event(LOG_ERROR, "cannot start", json_pack("{s:s}", "reason", reason));
}

/* Each wait for a PostgreSQL server that is not up yet at start (store_open_waiting): logged,
 * so an operator sees why the pod is not ready yet. */
static void on_database_wait(const char *reason, int next_try_ms, void *ctx)
{
    (void)ctx;
    log_event(LOG_WARN, "waiting for the database",
              json_pack("{s:s,s:i}", "reason", reason, "next_try_ms", next_try_ms));
}

/* What the process sets before any thread of its own starts: the allocator, the libraries'
 * global state, the environment libuv reads. -1 when a library cannot start. */
static int prepare_process(const server_t *srv)
{
    log_set_level(srv->cfg.log_level);
    signal(SIGPIPE, SIG_IGN);
    /* Connection buffers (64 KiB each) are mapped and unmapped on their own rather than carved
     * from the heap, so a burst of connections leaves no fragments behind: resident memory
     * returns to its working level afterwards. */
    mallopt(M_MMAP_THRESHOLD, 32 * 1024);
    /* GSL's default on error is abort(); the solvers check every status themselves. */
    gsl_set_error_handler_off();
    if (sodium_init() < 0) {
        start_failed("libsodium failed to initialize");
        return -1;
    }
    /* Before any thread: jansson's allocations are watched, so work that stores its result can
     * tell an answer from an allocation failure (alloc_guard.h). */
    alloc_guard_install(NULL);
    /* libuv sizes its pool from this variable when the first work item is queued; set before any
     * thread of ours starts (setenv is not thread-safe against getenv on other threads). */
    char pool_size[16];
    snprintf(pool_size, sizeof pool_size, "%d", srv->cfg.workers);
    setenv("UV_THREADPOOL_SIZE", pool_size, 1);
    return 0;
}

/* The presets, the store, the page's directory, the cache, the metrics and the sweep pool, in
 * that order; -1 (said in the log) when one cannot be had. main() frees what was opened. */
static int open_services(server_t *srv, uv_loop_t *loop)
{
    fathom_error_t err;
    srv->presets = codec_presets_load(srv->cfg.presets_dir, &err);
    if (!srv->presets) {
        start_failed(err.message);
        return -1;
    }
    const store_wait_t database_wait = {srv->cfg.db_wait_s, on_database_wait, NULL};
    srv->store = store_open_waiting(srv->cfg.db_path, srv->cfg.migrations_dir,
                                    srv->cfg.threads + srv->cfg.workers + 2, &database_wait, &err);
    if (!srv->store) {
        start_failed(err.message);
        return -1;
    }
    /* A database a newer fathomd migrated still opens (a rolling update or its rollback runs
     * both builds on it), but this build may not read what the newer one writes: say so. */
    const int known = store_known_schema_version(srv->cfg.db_path, srv->cfg.migrations_dir, &err);
    if (known >= 0 && store_schema_version(srv->store) > known)
        log_event(LOG_WARN, "database schema is newer than this fathomd",
                  json_pack("{s:i,s:i}", "schema_version", store_schema_version(srv->store),
                            "known_schema_version", known));
    char real[PATH_MAX];
    if (realpath(srv->cfg.static_dir, real))
        srv->static_root = strdup(real);
    else
        log_msg(LOG_WARN, "no web page: static directory %s not found", srv->cfg.static_dir);
    srv->cache = cache_create(srv->store);
    srv->metrics = metrics_create();
    fathom_error_clear(&err);
    srv->sweeps = sweeps_create(srv, loop, &err);
    if (!srv->cache || !srv->metrics || !srv->sweeps) {
        start_failed(srv->sweeps ? "out of memory" : err.message);
        return -1;
    }
    return 0;
}

/* SIGTERM and SIGINT drain and stop, SIGHUP is logged and ignored; the hit counts are flushed on
 * a timer. */
static void watch_signals(app_t *app, uv_loop_t *loop)
{
    uv_signal_init(loop, &app->sigterm);
    uv_signal_init(loop, &app->sigint);
    uv_signal_init(loop, &app->sighup);
    uv_timer_init(loop, &app->drain);
    uv_timer_init(loop, &app->flush);
    app->sigterm.data = app->sigint.data = app->drain.data = app->flush.data = app;
    uv_timer_start(&app->flush, on_flush_tick, HIT_FLUSH_MS, HIT_FLUSH_MS);
    uv_signal_start(&app->sigterm, on_signal, SIGTERM);
    uv_signal_start(&app->sigint, on_signal, SIGINT);
    uv_signal_start(&app->sighup, on_sighup, SIGHUP);
}

static void log_listening(const server_t *srv)
{
    char db_name[sizeof srv->cfg.db_path];
    store_display_name(srv->cfg.db_path, db_name, sizeof db_name);
    log_event(LOG_INFO, "listening",
              json_pack("{s:s,s:i,s:s,s:i,s:s,s:i,s:i}", "host", srv->cfg.listen_host, "port",
                        srv->bound_port, "db", db_name, "schema_version",
                        store_schema_version(srv->store), "version", FATHOM_VERSION, "threads",
                        srv->cfg.threads, "workers", srv->cfg.workers));
}

int main(int argc, char **argv)
{
    server_t srv;
    memset(&srv, 0, sizeof srv);
    int rc = config_load(&srv.cfg, argc, argv);
    if (rc != 0)
        return rc > 0 ? 0 : 2;
    if (prepare_process(&srv))
        return 1;

    int status = 1;
    uv_loop_t *loop = uv_default_loop();
    app_t app = {.srv = &srv, .loop = loop};
    if (open_services(&srv, loop) || http_start(&srv, routes_handle))
        goto out;
    watch_signals(&app, loop);
    atomic_store(&srv.ready, true);
    log_listening(&srv);
    uv_run(loop, UV_RUN_DEFAULT);
    status = 0;
    log_msg(LOG_INFO, "stopped cleanly");
out:
    http_stop(&srv);
    sweeps_free(srv.sweeps);
    uv_walk(loop, close_handle, NULL);
    uv_run(loop, UV_RUN_DEFAULT);
    uv_loop_close(loop);
    cache_free(srv.cache); /* writes the last hit counts */
    store_close(srv.store);
    metrics_free(srv.metrics);
    codec_presets_free(srv.presets);
    free(srv.static_root);
    return status;
}

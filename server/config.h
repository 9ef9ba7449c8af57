/* config.h — fathomd's settings: each one a flag and a FATHOM_* environment variable (the flag
 * wins), with the defaults listed by `fathomd --help` and in doc/operations.md. */
#ifndef FATHOM_CONFIG_H
#define FATHOM_CONFIG_H

#include <stdbool.h>

typedef enum { LOG_DEBUG = 0, LOG_INFO, LOG_WARN, LOG_ERROR } log_level_t;

typedef struct {
    char listen_host[256];
    int listen_port;
    char db_path[4096];
    int db_wait_s;            /* how long start waits for a PostgreSQL server to come up */
    char static_dir[4096];
    char presets_dir[4096];
    char migrations_dir[4096];
    char schemas_dir[4096];
    int threads;              /* HTTP thread pool */
    int workers;              /* sweep worker pool */
    int max_queued_sweeps;    /* pending sweeps before 429 */
    long long max_sweep_points;      /* grid points */
    long long max_search_executions; /* executions one search may try */
    int max_connections;
    int max_per_ip;
    int connection_timeout_s;
    int shutdown_grace_s;     /* how long SIGTERM waits for requests in flight */
    log_level_t log_level;
    char api_token[256];      /* empty: writes need no token */
    char cors_origins[4096];  /* comma-separated origins a browser may call from; "*" any; empty none */
} config_t;

/* Fills cfg from defaults, then the environment, then argv. Returns 0 to run, 1 when --help was
 * printed (exit 0), -1 on a bad setting (message printed; exit 2). */
int config_load(config_t *cfg, int argc, char **argv);

#endif

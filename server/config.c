/* config.c — flags, environment variables and defaults of fathomd (see config.h). */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store.h"

typedef enum { OPT_STRING, OPT_INT, OPT_LISTEN, OPT_LEVEL } opt_kind_t;

typedef struct {
    const char *flag;     /* --listen */
    const char *env;      /* FATHOM_LISTEN */
    opt_kind_t kind;
    size_t offset;        /* into config_t */
    size_t size;          /* for strings */
    long long min, max;   /* for integers */
    const char *dflt;     /* as text, shown by --help */
    const char *help;
} option_t;

#define STR(field) OPT_STRING, offsetof(config_t, field), sizeof(((config_t *)0)->field), 0, 0
#define INT(field, lo, hi) OPT_INT, offsetof(config_t, field), sizeof(int), lo, hi

static const option_t options[] = {
    {"--listen", "FATHOM_LISTEN", OPT_LISTEN, 0, 0, 0, 0, "127.0.0.1:8080",
     "address and port to listen on (ADDR:PORT; port 0 picks a free one)"},
    {"--db", "FATHOM_DB", STR(db_path), "fathom.db", "SQLite database file, or a PostgreSQL "
     "connection URI (postgresql://user:password@host:port/db) shared by several replicas"},
    {"--db-wait", "FATHOM_DB_WAIT", INT(db_wait_s, 0, 3600), "60", "seconds to keep trying a "
     "PostgreSQL server that is not up yet at start (0: one try); SQLite does not wait"},
    {"--static", "FATHOM_STATIC", STR(static_dir), "", "directory of the web page (default: ./static "
     "if present, else the installed copy)"},
    {"--presets", "FATHOM_PRESETS", STR(presets_dir), "", "directory of model/system presets "
     "(default: ./presets if present, else the installed copy)"},
    {"--migrations", "FATHOM_MIGRATIONS", STR(migrations_dir), "", "directory of SQL migrations "
     "(default: ./migrations if present, else the installed copy)"},
    {"--schemas", "FATHOM_SCHEMAS", STR(schemas_dir), "", "directory of JSON Schemas and "
     "openapi.json (default: ./schemas if present, else the installed copy)"},
    {"--threads", "FATHOM_THREADS", INT(threads, 1, 256), "4", "HTTP worker threads"},
    {"--workers", "FATHOM_WORKERS", INT(workers, 1, 256), "2", "sweep worker threads"},
    {"--max-queued-sweeps", "FATHOM_MAX_QUEUED_SWEEPS", INT(max_queued_sweeps, 1, 100000), "16",
     "sweeps waiting to run before new ones get 429"},
    {"--max-sweep-points", "FATHOM_MAX_SWEEP_POINTS", OPT_INT,
     offsetof(config_t, max_sweep_points), sizeof(long long), 1, 100000000LL, "100000",
     "most points a grid sweep may have"},
    {"--max-search-executions", "FATHOM_MAX_SEARCH_EXECUTIONS", OPT_INT,
     offsetof(config_t, max_search_executions), sizeof(long long), 1, 100000000000LL, "50000000",
     "most executions an optimal-execution search may try"},
    {"--max-connections", "FATHOM_MAX_CONNECTIONS", INT(max_connections, 1, 100000), "1024",
     "simultaneous connections"},
    {"--max-per-ip", "FATHOM_MAX_PER_IP", INT(max_per_ip, 0, 100000), "512",
     "simultaneous connections from one address (0: no limit)"},
    {"--connection-timeout", "FATHOM_CONNECTION_TIMEOUT", INT(connection_timeout_s, 1, 3600), "15",
     "seconds an idle or slow connection is kept"},
    {"--shutdown-grace", "FATHOM_SHUTDOWN_GRACE", INT(shutdown_grace_s, 0, 3600), "10",
     "seconds SIGTERM waits for requests in flight"},
    {"--log-level", "FATHOM_LOG_LEVEL", OPT_LEVEL, offsetof(config_t, log_level), 0, 0, 0, "info",
     "debug, info, warn or error"},
    {"--api-token", "FATHOM_API_TOKEN", STR(api_token), "", "if set, creating and cancelling "
     "sweeps and storing and deleting user presets need 'Authorization: Bearer TOKEN'"},
    {"--cors-origins", "FATHOM_CORS_ORIGINS", STR(cors_origins), "", "comma-separated origins "
     "(https://dash.example.com) whose pages may call the API from a browser; * for any; "
     "default none"},
};

#define NOPTIONS (sizeof options / sizeof options[0])

static void usage(FILE *f)
{
    fprintf(f, "usage: fathomd [OPTION VALUE]...\n\n"
               "Fathom's estimation service: HTTP/JSON on ADDR:PORT, results in SQLite or "
               "PostgreSQL.\n"
               "Every option can also be set by its environment variable; the flag wins.\n\n");
    for (size_t i = 0; i < NOPTIONS; i++) {
        fprintf(f, "  %-24s $%-30s", options[i].flag, options[i].env);
        if (options[i].dflt[0])
            fprintf(f, " default %s", options[i].dflt);
        fprintf(f, "\n      %s\n", options[i].help);
    }
    fprintf(f, "  --help\n      print this and exit\n");
}

static int set_option(config_t *cfg, const option_t *o, const char *value, const char *source)
{
    char *base = (char *)cfg;
    switch (o->kind) {
    case OPT_STRING:
        if (strlen(value) >= o->size) {
            fprintf(stderr, "fathomd: %s: value is too long\n", source);
            return -1;
        }
        memcpy(base + o->offset, value, strlen(value) + 1);
        return 0;
    case OPT_INT: {
        errno = 0;
        char *end;
        long long v = strtoll(value, &end, 10);
        /* strtoll alone would take " 8", "+8": a setting is digits, with an optional '-'. */
        bool digits = (value[0] >= '0' && value[0] <= '9') ||
                      (value[0] == '-' && value[1] >= '0' && value[1] <= '9');
        if (!digits || errno || end == value || *end || v < o->min || v > o->max) {
            fprintf(stderr, "fathomd: %s: '%s' is not a whole number from %lld to %lld\n", source,
                    value, o->min, o->max);
            return -1;
        }
        if (o->size == sizeof(long long))
            *(long long *)(base + o->offset) = v;
        else
            *(int *)(base + o->offset) = (int)v;
        return 0;
    }
    case OPT_LISTEN: {
        const char *colon = strrchr(value, ':');
        char *end;
        long port = colon ? strtol(colon + 1, &end, 10) : -1;
        /* [::1]:8080: the brackets are syntax, not part of the address. */
        int bracketed = value[0] == '[' && colon && colon > value + 1 && colon[-1] == ']';
        const char *host = value + bracketed;
        size_t hostlen = colon ? (size_t)(colon - host) - (size_t)bracketed : 0;
        char addr[sizeof cfg->listen_host];
        unsigned char bin[sizeof(struct in6_addr)];
        /* Checked here, not when binding: a bad address is a bad setting (exit 2), found before
         * the database is opened or migrated. */
        bool address = false;
        if (hostlen > 0 && hostlen < sizeof addr) {
            memcpy(addr, host, hostlen);
            addr[hostlen] = '\0';
            address = strcmp(addr, "localhost") == 0 || inet_pton(AF_INET6, addr, bin) == 1 ||
                      (!bracketed && inet_pton(AF_INET, addr, bin) == 1);
        }
        if (!colon || !address || *end || end == colon + 1 || colon[1] < '0' || colon[1] > '9' ||
            port < 0 || port > 65535) {
            fprintf(stderr, "fathomd: %s: '%s' is not ADDR:PORT, ADDR an IPv4 or IPv6 address "
                    "(for example 127.0.0.1:8080, 0.0.0.0:8080, [::]:8080)\n", source, value);
            return -1;
        }
        memcpy(cfg->listen_host, addr, hostlen + 1);
        cfg->listen_port = (int)port;
        return 0;
    }
    case OPT_LEVEL: {
        static const char *const levels[] = {"debug", "info", "warn", "error"};
        for (int i = 0; i < 4; i++) {
            if (strcmp(value, levels[i]) == 0) {
                cfg->log_level = (log_level_t)i;
                return 0;
            }
        }
        fprintf(stderr, "fathomd: %s: '%s' is not one of debug, info, warn, error\n", source,
                value);
        return -1;
    }
    }
    return -1;
}

/* A data directory: the configured one, else ./NAME when it exists, else the installed copy. */
static void default_dir(char *dir, size_t cap, const char *name)
{
    if (dir[0])
        return;
    if (access(name, R_OK | X_OK) == 0)
        snprintf(dir, cap, "%s", name);
    else
        snprintf(dir, cap, "%s/%s", FATHOM_DATADIR, name);
}

/* SQLite would take each of these for a file: "" and ":memory:" give every pooled connection a
 * private database (migrations on one, "no such table" on the others, nothing kept at exit); a
 * libpq key=value string (host=db password=...) or another scheme (POSTGRESQL://) would become
 * a file so named, its password in the log. The value may hold a password: never echoed. */
static int check_db(const char *db)
{
    if (store_is_postgres(db))
        return 0;
    size_t key = strspn(db, "abcdefghijklmnopqrstuvwxyz_ ");
    if (!db[0] || strcmp(db, ":memory:") == 0 || strstr(db, "://") || db[key] == '=') {
        fprintf(stderr, "fathomd: --db (or FATHOM_DB) is neither a SQLite file nor a "
                "postgresql://user:password@host:port/db URI\n");
        return -1;
    }
    return 0;
}

int config_load(config_t *cfg, int argc, char **argv)
{
    memset(cfg, 0, sizeof *cfg);
    for (size_t i = 0; i < NOPTIONS; i++)
        if (options[i].dflt[0] && set_option(cfg, &options[i], options[i].dflt, options[i].flag))
            return -1;
    for (size_t i = 0; i < NOPTIONS; i++) {
        const char *v = getenv(options[i].env);
        if (v && set_option(cfg, &options[i], v, options[i].env))
            return -1;
    }
    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--help") == 0 || strcmp(argv[a], "-h") == 0) {
            usage(stdout);
            return 1;
        }
        const option_t *o = NULL;
        const char *value = NULL;
        for (size_t i = 0; i < NOPTIONS && !o; i++) {
            size_t n = strlen(options[i].flag);
            if (strncmp(argv[a], options[i].flag, n) == 0 && argv[a][n] == '=') {
                o = &options[i];
                value = argv[a] + n + 1;
            } else if (strcmp(argv[a], options[i].flag) == 0) {
                o = &options[i];
                if (a + 1 >= argc) {
                    fprintf(stderr, "fathomd: %s needs a value\n", argv[a]);
                    return -1;
                }
                value = argv[++a];
            }
        }
        if (!o) {
            fprintf(stderr, "fathomd: unknown option '%s' (see --help)\n", argv[a]);
            return -1;
        }
        if (set_option(cfg, o, value, o->flag))
            return -1;
    }
    if (check_db(cfg->db_path))
        return -1;
    default_dir(cfg->static_dir, sizeof cfg->static_dir, "static");
    default_dir(cfg->presets_dir, sizeof cfg->presets_dir, "presets");
    default_dir(cfg->migrations_dir, sizeof cfg->migrations_dir, "migrations");
    default_dir(cfg->schemas_dir, sizeof cfg->schemas_dir, "schemas");
    return 0;
}

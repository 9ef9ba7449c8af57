/* cli.h — the subcommands of the `fathom` command-line tool. Each lives in cli/cmd_<name>.c and
 * takes argv after the subcommand name (argv[0] is the subcommand). Returns the process exit
 * status: 0 success, 1 the input was refused (a file unreadable, or the request: error JSON on
 * stdout), 2 usage error (one line on stderr). */
#ifndef FATHOM_CLI_H
#define FATHOM_CLI_H

#include <jansson.h>

#include "endpoint.h"
#include "presets.h"

typedef struct {
    const codec_presets_t *presets;
} cli_env_t;

typedef struct {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv, const cli_env_t *env);
} cli_command_t;

/* Exit statuses of every command (documented in `fathom --help` and doc/operations.md). */
enum { CLI_OK = 0, CLI_REFUSED = 1, CLI_USAGE = 2 };

/* Prints "fathom CMD: <what is wrong>" and a hint to run `fathom CMD --help` on stderr;
 * returns CLI_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Whether arg asks for help (--help or -h). */
int cli_is_help(const char *arg);

/* Parses text as a whole decimal integer in [min, max] into *out; else prints a usage error
 * naming `what` (the flag or argument) and returns CLI_USAGE. */
int cli_parse_int(const char *cmd, const char *what, const char *text, long long min,
                  long long max, long long *out);

/* text as a JSON string; NULL after a usage error naming `what` when it is not valid UTF-8
 * (jansson's json_string refuses it, and a NULL would silently drop the argument). */
json_t *cli_string(const char *cmd, const char *what, const char *text);

/* The default --threads: the CPUs this process may run on (its affinity mask, which cpusets
 * and taskset narrow), fewer under a cgroup CPU quota (cpu_quota.h), at most
 * CODEC_SWEEP_MAX_THREADS. */
int cli_default_threads(void);

/* The arguments of a one-file command (`fathom CMD FILE`, FILE a path or -): CLI_OK with *file
 * set; CLI_OK with *file NULL after printing `usage` on stdout for --help or -h (an unknown
 * option anywhere is still an error); CLI_USAGE after saying what is wrong. */
int cli_one_file_args(const char *cmd, int argc, char **argv, const char *usage,
                      const char **file);

/* Reads a whole file (or "-" for stdin, once per run) of at most CODEC_MAX_BODY_BYTES, as a
 * request body has; a new NUL-terminated buffer and *len, or NULL with a message on stderr. */
char *cli_read_file(const char *path, size_t *len);

/* buf (len bytes, read from path) parsed as a request body; NULL with a message naming path. */
json_t *cli_parse_json(const char *path, const char *buf, size_t len);

/* Reads a JSON file (or "-" for stdin) into a new reference; NULL with a message on stderr. */
json_t *cli_read_json_file(const char *path);

/* An argument that is a file path or a preset name: a path when it names an existing file,
 * otherwise the preset name as a JSON string (the codec resolves it or names the error).
 * NULL after a message, with *rc set to the exit status (CLI_REFUSED: the file could not be read;
 * CLI_USAGE: the name is not valid UTF-8); `what` names the argument (MODEL, SYSTEM). */
json_t *cli_file_or_preset(const char *cmd, const char *what, const char *arg, int *rc);

/* Runs an endpoint on body: normalize, evaluate, print the response (or the error as the server
 * would send it) as indented JSON on stdout. Returns the exit status. */
int cli_run_endpoint(const codec_endpoint_t *ep, const json_t *body, const cli_env_t *env);

/* Runs a sweep body of `kind` (the body's "kind", set by the caller, must be it) on `threads`
 * threads through the sweep-kind table, with a progress bar on stderr when it is a terminal.
 * 0 with *result (new reference: the finished sweep's result, with `flags` as codec_sweep_run
 * takes them), or the exit status of the error printed. */
int cli_run_sweep(const char *kind, const json_t *body, const cli_env_t *env, int threads,
                  int flags, json_t **result);

/* `fathom <command> FILE [--json] [--threads N]` for a planning sweep of `kind` (plan,
 * serving_plan): reads FILE (its "kind" defaulted to `kind`), runs the sweep on N threads
 * (cli_default_threads by default) and prints the result's member `block` as JSON with --json,
 * else through print_table. --help prints usage; `cmd` names the command in errors. Returns the
 * exit status. */
int cli_plan_command(int argc, char **argv, const cli_env_t *env, const char *cmd,
                     const char *kind, const char *block, const char *usage,
                     void (*print_table)(const json_t *));

/* Prints a JSON value to stdout, indented, with a final newline. */
void cli_print_json(const json_t *v);

/* Prints {"error":{…}} as the server would send it, but for pointing to `fathom presets` where
 * the server's message says GET /v1/presets; returns 1 (the exit status). */
int cli_print_error(const fathom_error_t *err);

#endif

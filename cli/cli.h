/* cli.h — the subcommands of the `fathom` command-line tool. Each lives in cli/cmd_<name>.c and
 * takes argv after the subcommand name (argv[0] is the subcommand). Returns the process exit
 * status: 0 success, 1 the request was refused (error JSON on stdout), 2 usage error. */
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

/* Reads a JSON file (or "-" for stdin) into a new reference; NULL with a message on stderr. */
json_t *cli_read_json_file(const char *path);

/* An argument that is a file path or a preset name: a path when it names an existing file,
 * otherwise the preset name as a JSON string (the codec resolves it or names the error). */
json_t *cli_file_or_preset(const char *arg);

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
 * serving_plan): reads FILE (its "kind" defaulted to `kind`), runs the sweep on N threads (the
 * machine's cores by default) and prints the result's member `block` as JSON with --json, else
 * through print_table. --help prints usage. Returns the exit status. */
int cli_plan_command(int argc, char **argv, const cli_env_t *env, const char *kind,
                     const char *block, const char *usage, void (*print_table)(const json_t *));

/* Prints a JSON value to stdout, indented, with a final newline. */
void cli_print_json(const json_t *v);

/* Prints {"error":{…}} as the server would send it; returns 1 (the exit status). */
int cli_print_error(const fathom_error_t *err);

#endif

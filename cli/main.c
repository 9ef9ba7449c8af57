/* main.c — `fathom`, the command-line face of the estimators. It computes locally through the
 * same codec as fathomd (so both give the same JSON) and never needs the server. */
#include <errno.h>
#include <gsl/gsl_errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static int cmd_endpoint(const char *endpoint, int argc, char **argv, const cli_env_t *env,
                        const char *usage)
{
    const char *file;
    const int rc = cli_one_file_args(argv[0], argc, argv, usage, &file);
    if (rc != CLI_OK || !file)
        return rc;
    const codec_endpoint_t *ep = codec_endpoint_by_name(endpoint);
    json_t *body = cli_read_json_file(file);
    if (!ep || !body) {
        json_decref(body);
        return CLI_REFUSED;
    }
    const int status = cli_run_endpoint(ep, body, env);
    json_decref(body);
    return status;
}

static int cmd_transformer(int argc, char **argv, const cli_env_t *env)
{
    return cmd_endpoint(
        "transformer", argc, argv, env,
        "usage: fathom transformer FILE\n\n"
        "Analytic transformer model: parameters, FLOPs, checkpoint size, MFU, training time by\n"
        "6ND, GPUs for a time budget and by memory, LoRA. FILE (or - for stdin) holds the body of\n"
        "POST /v1/transformer, e.g. {\"model\":\"gpt3-175B\",\"tokens\":300e9,...}.\n");
}

static int cmd_from_hf_config(int argc, char **argv, const cli_env_t *env)
{
    return cmd_endpoint(
        "hf_config", argc, argv, env,
        "usage: fathom from-hf-config FILE\n\n"
        "Reads a Hugging Face config.json (FILE, or - for stdin) as a Fathom model object, with its\n"
        "parameter counts and what the reading assumed (POST /v1/models/from-hf-config). Any\n"
        "request also takes {\"model\": {\"hf_config\": {...}, \"seq_size\": N}}.\n");
}

static int cmd_presets(int argc, char **argv, const cli_env_t *env)
{
    int help = 0;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i]))
            help = 1;
        else if (argv[i][0] == '-' && argv[i][1])
            return cli_usage_error("presets", "unknown option %s", argv[i]);
        else
            return cli_usage_error("presets", "takes no arguments, got '%s'", argv[i]);
    }
    if (help) {
        fputs("usage: fathom presets\n\nLists the model and system presets (GET /v1/presets) "
              "that MODEL and SYSTEM\narguments name.\n", stdout);
        return CLI_OK;
    }
    json_t *list = codec_presets_list(env->presets);
    cli_print_json(list);
    json_decref(list);
    return CLI_OK;
}

#include "cli_commands.h"

static const cli_command_t commands[] = {
    {"transformer", "parameters, FLOPs, MFU, 6ND time, GPUs, LoRA (POST /v1/transformer)",
     cmd_transformer},
    {"presets", "list the model and system presets", cmd_presets},
    {"from-hf-config", "a Hugging Face config.json as a model (POST /v1/models/from-hf-config)",
     cmd_from_hf_config},
    CLI_EXTRA_COMMANDS
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *f)
{
    fprintf(f, "usage: fathom [--presets DIR] COMMAND ARGS...\n"
               "       fathom help COMMAND\n\n"
               "Fathom estimates large-model training runs and the fleets that serve them. Commands:\n");
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(f, "  %-14s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n`fathom COMMAND --help` explains one. Output is the JSON the service returns.\n"
               "A FILE argument may be - for standard input (read once).\n"
               "Presets come from --presets DIR, $FATHOM_PRESETS, ./presets, or the installed "
               "copy.\nExit status: 0 success; 1 the input was refused (a file unreadable, or the "
               "request:\nits error JSON on stdout), or the output could not be written; 2 a "
               "usage error\n(bad flags or arguments; one line on stderr).\n");
}

/* Flushes and closes stdout: output that could not be written (a full disk, a closed pipe with
 * SIGPIPE ignored, a closed descriptor) fails the run rather than exiting 0 with it lost. */
static int finish(int rc)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        const int failure = errno;
        fprintf(stderr, "fathom: cannot write the output: %s\n", strerror(failure));
        fclose(stdout);
        return rc ? rc : CLI_REFUSED;
    }
    if (fclose(stdout) != 0) {
        fprintf(stderr, "fathom: cannot write the output: %s\n", strerror(errno));
        return rc ? rc : CLI_REFUSED;
    }
    return rc;
}

static const cli_command_t *command_named(const char *name)
{
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

static int run(int argc, char **argv)
{
    /* GSL's default on error is abort(); the solvers check every status themselves. */
    gsl_set_error_handler_off();
    const char *presets_dir = getenv("FATHOM_PRESETS");
    int a = 1;
    /* --help is answered once every global option is read: an unknown one after it is still
     * a usage error (exit 2), as it is for each command (doc/operations.md). */
    int help = 0;
    while (a < argc && argv[a][0] == '-') {
        if (strcmp(argv[a], "--presets") == 0 && a + 1 < argc) {
            presets_dir = argv[a + 1];
            a += 2;
        } else if (cli_is_help(argv[a])) {
            help = 1;
            a++;
        } else if (strcmp(argv[a], "--presets") == 0) {
            fprintf(stderr, "fathom: --presets needs a directory\n(`fathom --help` gives the "
                            "usage)\n");
            return CLI_USAGE;
        } else {
            fprintf(stderr, "fathom: unknown option %s\n(`fathom --help` gives the usage)\n",
                    argv[a]);
            return CLI_USAGE;
        }
    }
    if (help) {
        usage(stdout);
        return CLI_OK;
    }
    if (a >= argc) {
        fprintf(stderr, "fathom: COMMAND is missing\n(`fathom --help` lists the commands)\n");
        return CLI_USAGE;
    }
    /* `fathom help CMD` is `fathom CMD --help` */
    char *help_argv[] = {NULL, "--help", NULL};
    if (strcmp(argv[a], "help") == 0) {
        if (a + 1 >= argc) {
            usage(stdout);
            return CLI_OK;
        }
        if (a + 2 < argc) {
            fprintf(stderr, "fathom help: one COMMAND, got '%s' too\n(`fathom --help` lists the "
                            "commands)\n", argv[a + 2]);
            return CLI_USAGE;
        }
        help_argv[0] = argv[a + 1];
        argv = help_argv;
        argc = 2;
        a = 0;
    }
    const cli_command_t *cmd = command_named(argv[a]);
    if (!cmd) {
        fprintf(stderr, "fathom: unknown command '%s'\n(`fathom --help` lists the commands)\n",
                argv[a]);
        return CLI_USAGE;
    }
    char fallback[4096];
    if (!presets_dir) {
        FILE *probe = fopen("presets/models", "r");
        if (probe) {
            fclose(probe);
            presets_dir = "presets";
        } else {
            snprintf(fallback, sizeof fallback, "%s/presets", FATHOM_DATADIR);
            presets_dir = fallback;
        }
    }
    fathom_error_t err;
    codec_presets_t *presets = codec_presets_load(presets_dir, &err);
    if (!presets) {
        fprintf(stderr, "fathom: %s\n", err.message);
        return CLI_REFUSED;
    }
    cli_env_t env = {presets};
    const int rc = cmd->run(argc - a, argv + a, &env);
    codec_presets_free(presets);
    return rc;
}

int main(int argc, char **argv)
{
    return finish(run(argc, argv));
}

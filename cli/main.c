/* main.c — `fathom`, the command-line face of the estimators. It computes locally through the
 * same codec as fathomd (so both give the same JSON) and never needs the server. */
#include <gsl/gsl_errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static int cmd_endpoint(const char *endpoint, int argc, char **argv, const cli_env_t *env,
                        const char *usage)
{
    if (argc != 2 || strcmp(argv[1], "--help") == 0) {
        fprintf(argc == 2 ? stdout : stderr, "%s", usage);
        return argc == 2 ? 0 : 2;
    }
    const codec_endpoint_t *ep = codec_endpoint_by_name(endpoint);
    json_t *body = cli_read_json_file(argv[1]);
    if (!ep || !body) {
        json_decref(body);
        return 1;
    }
    int rc = cli_run_endpoint(ep, body, env);
    json_decref(body);
    return rc;
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
    (void)argv;
    if (argc != 1) {
        fprintf(stderr, "usage: fathom presets\n");
        return 2;
    }
    json_t *list = codec_presets_list(env->presets);
    cli_print_json(list);
    json_decref(list);
    return 0;
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
    fprintf(f, "usage: fathom [--presets DIR] COMMAND ARGS...\n\n"
               "Fathom estimates large-model training runs. Commands:\n");
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(f, "  %-14s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n`fathom COMMAND --help` explains one. Output is the JSON the service returns.\n"
               "Presets come from --presets DIR, $FATHOM_PRESETS, ./presets, or the installed copy.\n");
}

int main(int argc, char **argv)
{
    /* GSL's default on error is abort(); the solvers check every status themselves. */
    gsl_set_error_handler_off();
    const char *presets_dir = getenv("FATHOM_PRESETS");
    int a = 1;
    while (a < argc && argv[a][0] == '-') {
        if (strcmp(argv[a], "--presets") == 0 && a + 1 < argc) {
            presets_dir = argv[a + 1];
            a += 2;
        } else if (strcmp(argv[a], "--help") == 0 || strcmp(argv[a], "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "fathom: unknown option %s\n", argv[a]);
            return 2;
        }
    }
    if (a >= argc) {
        usage(stderr);
        return 2;
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
        return 1;
    }
    cli_env_t env = {presets};
    int rc = -1;
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (strcmp(commands[i].name, argv[a]) == 0)
            rc = commands[i].run(argc - a, argv + a, &env);
    if (rc == -1) {
        fprintf(stderr, "fathom: unknown command '%s'\n\n", argv[a]);
        usage(stderr);
        rc = 2;
    }
    codec_presets_free(presets);
    return rc;
}

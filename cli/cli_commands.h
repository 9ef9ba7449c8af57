/* cli_commands.h — subcommands defined in their own files (cmd_<name>.c), listed here so
 * main.c's table stays one table. Each is present when its core module is built. */
#ifndef FATHOM_CLI_COMMANDS_H
#define FATHOM_CLI_COMMANDS_H

#include "cli.h"

int cli_cmd_estimate(int argc, char **argv, const cli_env_t *env);
int cli_cmd_validate(int argc, char **argv, const cli_env_t *env);
int cli_cmd_search(int argc, char **argv, const cli_env_t *env);
int cli_cmd_plan(int argc, char **argv, const cli_env_t *env);
int cli_cmd_scaling(int argc, char **argv, const cli_env_t *env);
int cli_cmd_scaling_fit(int argc, char **argv, const cli_env_t *env);
int cli_cmd_goodput(int argc, char **argv, const cli_env_t *env);
int cli_cmd_calibrate(int argc, char **argv, const cli_env_t *env);
int cli_cmd_infer(int argc, char **argv, const cli_env_t *env);
int cli_cmd_serve_plan(int argc, char **argv, const cli_env_t *env);

#ifdef FATHOM_HAVE_LLM
#define CLI_LLM_COMMANDS                                                                     \
    {"estimate", "step time and memory tiers of one execution (POST /v1/estimate)",           \
     cli_cmd_estimate},                                                                      \
    {"validate", "Calculon's validation against the Megatron paper (GET /v1/validation)",     \
     cli_cmd_validate},
#else
#define CLI_LLM_COMMANDS
#endif
#ifdef FATHOM_HAVE_SEARCH
#define CLI_SEARCH_COMMANDS                                                                  \
    {"search", "fastest executions of a model on N processors (optimal-execution sweep)",     \
     cli_cmd_search},                                                                      \
    {"plan", "which GPUs, how many, which layout, how long, what cost (plan sweep)",          \
     cli_cmd_plan},
#else
#define CLI_SEARCH_COMMANDS
#endif
#ifdef FATHOM_HAVE_SCALING
#define CLI_SCALING_COMMANDS                                                                 \
    {"scaling", "budget to model size, loss and cost (POST /v1/scaling)", cli_cmd_scaling},   \
    {"scaling-fit", "fit scaling laws to runs (POST /v1/scaling/fit)", cli_cmd_scaling_fit},
#else
#define CLI_SCALING_COMMANDS
#endif
#ifdef FATHOM_HAVE_GOODPUT
#define CLI_GOODPUT_COMMANDS                                                                 \
    {"goodput", "Pollux goodput: evaluate, optimize, fit (POST /v1/goodput/...)",             \
     cli_cmd_goodput},
#else
#define CLI_GOODPUT_COMMANDS
#endif

#ifdef FATHOM_HAVE_CALIBRATE
#define CLI_CALIBRATE_COMMANDS                                                               \
    {"calibrate", "fit a system to measured runs, GEMMs and nccl-tests (POST /v1/calibrate)", \
     cli_cmd_calibrate},
#else
#define CLI_CALIBRATE_COMMANDS
#endif

#ifdef FATHOM_HAVE_SERVING
#define CLI_SERVING_COMMANDS                                                                 \
    {"infer", "serving: prefill, decode, KV cache, latency, tokens/s, $/Mtok (POST /v1/inference)", \
     cli_cmd_infer},                                                                        \
    {"serve-plan", "cheapest fleet per GPU meeting TTFT/TPOT targets at a traffic level",     \
     cli_cmd_serve_plan},
#else
#define CLI_SERVING_COMMANDS
#endif

#define CLI_EXTRA_COMMANDS CLI_LLM_COMMANDS CLI_SEARCH_COMMANDS CLI_SCALING_COMMANDS \
    CLI_GOODPUT_COMMANDS CLI_CALIBRATE_COMMANDS CLI_SERVING_COMMANDS

#endif

/* cmd_models.c — CLI commands that mirror one endpoint each: estimate, validate, scaling,
 * scaling-fit and goodput. They build the same request body the endpoint takes and print the
 * same JSON it answers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_commands.h"
#include "json_parse.h"

#ifdef FATHOM_HAVE_SERVING
#include "serving_codec.h"
#include "serving_plan_codec.h"
#endif
#ifdef FATHOM_HAVE_LLM
#include "llm_codec.h"

int cli_cmd_estimate(int argc, char **argv, const cli_env_t *env)
{
    const char *training = NULL;
    const char *pos[3];
    int npos = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0) {
            printf("usage: fathom estimate MODEL EXECUTION SYSTEM [--training FILE]\n\n"
                   "Step time and memory tiers of one execution (Calculon's model), the JSON of\n"
                   "POST /v1/estimate. MODEL and SYSTEM are JSON files or preset names (fathom\n"
                   "presets lists them); EXECUTION is a JSON file with Calculon's execution\n"
                   "fields. --training FILE adds the cost of a run: {\"tokens\", \"gpu_hour_price\",\n"
                   "\"gpu_power_kw\", \"pue\", \"co2_kg_per_kwh\"}.\n");
            return 0;
        } else if (strcmp(argv[i], "--training") == 0 && i + 1 < argc) {
            training = argv[++i];
        } else if (npos < 3) {
            pos[npos++] = argv[i];
        } else {
            npos = 4;
        }
    }
    if (npos != 3) {
        fprintf(stderr, "usage: fathom estimate MODEL EXECUTION SYSTEM [--training FILE]\n");
        return 2;
    }
    json_t *model = cli_file_or_preset(pos[0]);
    json_t *exec = cli_read_json_file(pos[1]);
    json_t *system = cli_file_or_preset(pos[2]);
    json_t *train = training ? cli_read_json_file(training) : NULL;
    int rc = 1;
    if (model && exec && system && (!training || train)) {
        json_t *body = json_pack("{s:O,s:O,s:O}", "model", model, "execution", exec, "system",
                                 system);
        if (train)
            json_object_set(body, "training", train);
        rc = cli_run_endpoint(&codec_estimate_endpoint, body, env);
        json_decref(body);
    }
    json_decref(model);
    json_decref(exec);
    json_decref(system);
    json_decref(train);
    return rc;
}

/* The rows of every --runs file as one array (NULL after printing why), and the source line
 * naming the files; a file that is not an array stands for itself so the report names it. */
static json_t *read_runs(const char *const *files, int n, char *source, size_t cap)
{
    json_t *rows = json_array();
    source[0] = 0;
    for (int k = 0; rows && k < n; k++) {
        json_t *part = cli_read_json_file(files[k]);
        if (!part) {
            json_decref(rows);
            return NULL;
        }
        if (!json_is_array(part) || json_array_extend(rows, part)) {
            json_decref(rows);
            snprintf(source, cap, "%s", files[k]);
            return part;
        }
        json_decref(part);
        const size_t used = strlen(source);
        snprintf(source + used, cap - used, "%s%s", k ? " + " : "", files[k]);
    }
    return rows;
}

/* The report of the rows of every --runs file, built by `build` (NULL with err set, or after
 * printing why the files could not be read: err left clear). */
typedef json_t *report_of_rows_fn(const json_t *rows, const char *source,
                                  const codec_presets_t *presets, fathom_error_t *err);
static json_t *runs_report(const char *const *files, int n, report_of_rows_fn *build,
                           const cli_env_t *env, fathom_error_t *err)
{
    char source[1024];
    json_t *rows = read_runs(files, n, source, sizeof source);
    if (!rows)
        return NULL;
    json_t *report = build(rows, source, env->presets, err);
    json_decref(rows);
    return report;
}

/* Prints a report as its table (as_json: its JSON); takes the report. 0, or 1 after printing
 * err (when set: read_runs has already said why otherwise). */
static int print_report(json_t *report, const fathom_error_t *err, int as_json,
                        char *(*to_text)(const json_t *))
{
    if (!report)
        return err->code != FATHOM_E_OK ? cli_print_error(err) : 1;
    char *text = as_json ? NULL : to_text(report);
    if (text)
        fputs(text, stdout);
    else
        cli_print_json(report);
    free(text);
    json_decref(report);
    return 0;
}

int cli_cmd_validate(int argc, char **argv, const cli_env_t *env)
{
    int as_json = 0, measured = 0, bad = 0, n_runs = 0, inference = 0;
    const char *runs_files[16];
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0)
            as_json = 1;
        else if (strcmp(argv[i], "--measured") == 0)
            measured = 2;
#ifdef FATHOM_HAVE_SERVING
        else if (strcmp(argv[i], "--inference") == 0)
            inference = 1;
#endif
        else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc &&
                 n_runs < (int)(sizeof runs_files / sizeof *runs_files))
            runs_files[n_runs++] = argv[++i], measured = 1;
        else
            bad = 1;
    }
    if (bad || (inference && measured == 2)) {
        printf("usage: fathom validate [--measured] [--runs FILE]... [--inference] [--json]\n\n"
               "Reproduces "
               "Calculon's validation against the Megatron sequence-parallelism paper\n"
               "(Korthikanti et al. 2022): Figure 1 memory, Figure 7 activation ratios, Table 5\nstep times, "
               "with profile, estimate, delta, mean and worst error, printed as\nCalculon prints "
               "them. --measured compares the step model with published\nmeasured training runs "
               "(presets/validation/measured_runs.json): tokens/s/GPU\nmeasured and estimated per "
               "run, mean and worst error. --runs FILE does the same\nfor the runs in FILE (- for "
               "stdin), an array of rows in measured_runs.json's\nformat (doc/measured_runs.md): "
               "your own measurements, "
               "or the files beside it:\npresets/validation/later_releases.json (later releases),\n"
               "presets/validation/verification_cards.json and\npresets/validation/moe_recipes.json "
               "(NVIDIA's tuned recipes),\npresets/validation/blackwell_ultra.json (GB300 and B300 "
               "rows).\nSeveral --runs (up to 16) are read as one set of rows: rows of two files\nthat "
               "Fathom cannot tell apart (the same estimate request) are grouped,\nwith the error "
               "no estimate can beat on them (doc/measured_runs.md).\n--json "
               "prints the JSON of GET /v1/validation (its \"measured\" member with\n--measured or "
               "--runs) instead.\n--inference compares the serving model (POST /v1/inference) "
               "with measured\nserving throughput (presets/validation/inference_runs.json, "
               "doc/serving.md):\noutput tokens/s/GPU per row, mean and worst error, dense and "
               "MoE apart, per\nrevision and leave-one-revision-out. With --runs FILE, the "
               "serving runs in FILE\n(inference_runs.json's format; "
               "presets/validation/inference_external_runs.json\nholds published runs from "
               "outside that folder).\n");
        return strcmp(argv[argc - 1], "--help") == 0 ? 0 : 2;
    }
    fathom_error_t err;
    fathom_error_clear(&err);
#ifdef FATHOM_HAVE_SERVING
    if (inference)
        return print_report(n_runs ? runs_report(runs_files, n_runs, codec_serving_validation_rows,
                                                 env, &err)
                                   : codec_serving_validation_report(env->presets, &err),
                            &err, as_json, codec_serving_validation_text);
#endif
    if (n_runs)
        return print_report(runs_report(runs_files, n_runs, codec_llm_measured_report_rows, env,
                                        &err),
                            &err, as_json, codec_llm_measured_text);
    if (measured)
        return print_report(codec_llm_measured_report(env->presets, &err), &err, as_json,
                            codec_llm_measured_text);
    return print_report(codec_llm_validation_report(env->presets, &err), &err, as_json,
                        codec_llm_validation_text);
}
#endif

/* Runs a one-file endpoint command: FILE is JSON, or (for csv_key) CSV text wrapped as
 * {"<csv_key>": "<text>"} when it does not parse as JSON and ends in .csv. */
__attribute__((unused)) static int one_file(const char *endpoint, const char *csv_key, int argc, char **argv,
                    const cli_env_t *env, const char *usage)
{
    if (argc != 2 || strcmp(argv[1], "--help") == 0) {
        fprintf(argc == 2 ? stdout : stderr, "%s", usage);
        return argc == 2 ? 0 : 2;
    }
    const codec_endpoint_t *ep = codec_endpoint_by_name(endpoint);
    if (!ep)
        return 1;
    json_t *body = NULL;
    size_t len = strlen(argv[1]);
    if (csv_key && len > 4 && strcmp(argv[1] + len - 4, ".csv") == 0) {
        FILE *f = fopen(argv[1], "rb");
        if (!f) {
            perror(argv[1]);
            return 1;
        }
        char *buf = malloc(CODEC_MAX_BODY_BYTES + 1);
        size_t n = buf ? fread(buf, 1, CODEC_MAX_BODY_BYTES, f) : 0;
        fclose(f);
        if (!buf)
            return 1;
        body = json_pack("{s:s%}", csv_key, buf, n);
        free(buf);
    } else {
        body = cli_read_json_file(argv[1]);
    }
    if (!body)
        return 1;
    int rc = cli_run_endpoint(ep, body, env);
    json_decref(body);
    return rc;
}

#ifdef FATHOM_HAVE_SERVING
int cli_cmd_infer(int argc, char **argv, const cli_env_t *env)
{
    return one_file("inference", NULL, argc, argv, env,
                    "usage: fathom infer FILE\n\nServing one model on one system (POST "
                    "/v1/inference): prefill and decode step\ntimes and their breakdown, the KV "
                    "cache and how many requests fit, TTFT,\nTPOT, output tokens/s per GPU and per "
                    "user, the throughput-interactivity\ncurve, $/Mtok and joules per token. FILE "
                    "holds the body, e.g.\n{\"model\": \"llama3-70B\", \"system\": \"h100_sxm\", "
                    "\"serving\": {\"tensor_par\": 4,\n \"weights_datatype\": \"fp8\", "
                    "\"input_tokens\": 2000, \"output_tokens\": 200,\n \"requests_per_s\": 5}} "
                    "(doc/serving.md).\n");
}
#endif

#ifdef FATHOM_HAVE_SCALING
int cli_cmd_scaling(int argc, char **argv, const cli_env_t *env)
{
    return one_file("scaling", NULL, argc, argv, env,
                    "usage: fathom scaling FILE\n\nScaling-law solvers: from a budget (hours, "
                    "dollars or width) to model size, loss,\ncost, kWh and CO2. FILE holds the "
                    "body of POST /v1/scaling, e.g.\n{\"gpu\":\"V100\",\"amp_mode\":\"O0\","
                    "\"dollars\":30}.\n");
}

int cli_cmd_scaling_fit(int argc, char **argv, const cli_env_t *env)
{
    return one_file("scaling_fit", "csv", argc, argv, env,
                    "usage: fathom scaling-fit FILE\n\nFits the loss and parameter laws to "
                    "loss-versus-compute runs. FILE is the body of\nPOST /v1/scaling/fit (JSON), or "
                    "a .csv file in the calculator's layout.\n");
}
#endif

#ifdef FATHOM_HAVE_GOODPUT
int cli_cmd_goodput(int argc, char **argv, const cli_env_t *env)
{
    static const char usage[] =
        "usage: fathom goodput evaluate|optimize|fit FILE\n\nPollux goodput: evaluate a "
        "configuration, optimize batch size and accumulation,\nor fit performance parameters "
        "to measurements. FILE holds the body of\nPOST /v1/goodput/evaluate, /optimize or /fit.\n";
    if (argc < 2 || strcmp(argv[1], "--help") == 0) {
        fprintf(argc < 2 ? stderr : stdout, "%s", usage);
        return argc < 2 ? 2 : 0;
    }
    const char *endpoint = strcmp(argv[1], "evaluate") == 0   ? "goodput_evaluate"
                           : strcmp(argv[1], "optimize") == 0 ? "goodput_optimize"
                           : strcmp(argv[1], "fit") == 0      ? "goodput_fit"
                                                              : NULL;
    if (!endpoint) {
        fprintf(stderr, "%s", usage);
        return 2;
    }
    return one_file(endpoint, NULL, argc - 1, argv + 1, env, usage);
}
#endif

#ifdef FATHOM_HAVE_CALIBRATE
int cli_cmd_calibrate(int argc, char **argv, const cli_env_t *env)
{
    return one_file("calibrate", NULL, argc, argv, env,
                    "usage: fathom calibrate FILE\n\nFits a system's free parameters (efficiency "
                    "curves, attention efficiency, each\nnetwork tier's efficiency and latency) to "
                    "measured runs, GEMM rows and nccl-tests\noutput. FILE (or - for stdin) holds "
                    "the body of POST /v1/calibrate:\n{\"system\":\"a100_80g\",\"runs\":[...],"
                    "\"gemms\":[...],\"collectives\":[...]}.\n");
}
#endif

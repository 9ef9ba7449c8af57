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

static const char estimate_usage[] =
    "usage: fathom estimate MODEL EXECUTION SYSTEM [--training FILE]\n\n"
    "Step time and memory tiers of one execution (Calculon's model), the JSON of\n"
    "POST /v1/estimate. MODEL and SYSTEM are JSON files or preset names (fathom\n"
    "presets lists them); EXECUTION is a JSON file with Calculon's execution\n"
    "fields. Any FILE may be - for standard input, once. --training FILE adds the cost of a\n"
    "run: {\"tokens\", \"gpu_hour_price\", \"gpu_power_kw\", \"pue\", \"co2_kg_per_kwh\"}.\n";

int cli_cmd_estimate(int argc, char **argv, const cli_env_t *env)
{
    const char *training = NULL;
    const char *pos[3];
    int npos = 0, help = 0;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            help = 1;
        } else if (strcmp(argv[i], "--training") == 0) {
            if (i + 1 >= argc)
                return cli_usage_error("estimate", "--training needs a FILE");
            training = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_usage_error("estimate", "unknown option %s", argv[i]);
        } else if (npos < 3) {
            pos[npos++] = argv[i];
        } else {
            return cli_usage_error("estimate", "3 arguments are read; '%s' is one too many",
                                   argv[i]);
        }
    }
    if (help) {
        fputs(estimate_usage, stdout);
        return CLI_OK;
    }
    if (npos != 3)
        return cli_usage_error("estimate", "3 arguments are read (MODEL EXECUTION SYSTEM), got %d",
                               npos);
    int rc = CLI_REFUSED;
    json_t *model = cli_file_or_preset("estimate", "MODEL", pos[0], &rc);
    json_t *exec = model ? cli_read_json_file(pos[1]) : NULL;
    json_t *system = exec ? cli_file_or_preset("estimate", "SYSTEM", pos[2], &rc) : NULL;
    json_t *train = system && training ? cli_read_json_file(training) : NULL;
    if (system && (!training || train)) {
        json_t *body = json_pack("{s:O,s:O,s:O}", "model", model, "execution", exec, "system",
                                 system);
        if (body && train)
            json_object_set(body, "training", train);
        rc = body ? cli_run_endpoint(&codec_estimate_endpoint, body, env) : CLI_REFUSED;
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
    /* a row estimated carries no reason; with none, no error was measured at all */
    size_t i, estimated = 0;
    const json_t *row;
    json_array_foreach(json_object_get(report, "rows"), i, row) estimated +=
        !json_object_get(row, "reason");
    const size_t total = json_array_size(json_object_get(report, "rows"));
    json_decref(report);
    if (estimated == 0 && total > 0) {
        fprintf(stderr, "fathom validate: none of the %zu rows could be estimated (each row's "
                        "reason is above)\n", total);
        return CLI_REFUSED;
    }
    return CLI_OK;
}

static const char validate_usage[] =
    "usage: fathom validate [--measured] [--runs FILE]... [--inference] [--json]\n\n"
    "Reproduces Calculon's validation against the Megatron sequence-parallelism paper\n"
    "(Korthikanti et al. 2022): Figure 1 memory, Figure 7 activation ratios, Table 5\n"
    "step times, with profile, estimate, delta, mean and worst error, printed as\n"
    "Calculon prints them. --measured compares the step model with published\n"
    "measured training runs (presets/validation/measured_runs.json, then the\n"
    "PyTorch-native runs of presets/validation/pytorch_runs.json apart): tokens/s/GPU\n"
    "measured and estimated per run, mean and worst error. --runs FILE does the same\n"
    "for the runs in FILE (- for stdin), an array of rows in measured_runs.json's\n"
    "format (doc/measured_runs.md): your own measurements, or the files beside it:\n"
    "presets/validation/later_releases.json (later releases),\n"
    "presets/validation/verification_cards.json and\n"
    "presets/validation/moe_recipes.json (NVIDIA's tuned recipes),\n"
    "presets/validation/blackwell_ultra.json (GB300 and B300 rows).\n"
    "Several --runs (up to 16) are read as one set of rows: rows of two files\n"
    "that Fathom cannot tell apart (the same estimate request) are grouped,\n"
    "with the error no estimate can beat on them (doc/measured_runs.md).\n"
    "--json prints the JSON of GET /v1/validation (its \"measured\" member with\n"
    "--measured or --runs) instead.\n"
    "--inference compares the serving model (POST /v1/inference) with measured\n"
    "serving throughput (presets/validation/inference_runs.json, doc/serving.md):\n"
    "output tokens/s/GPU per row, mean and worst error, dense and MoE apart, per\n"
    "revision and leave-one-revision-out. With --runs FILE, the serving runs in FILE\n"
    "(inference_runs.json's format; presets/validation/inference_external_runs.json\n"
    "holds published runs from outside that folder).\n"
    "A row of the wrong type is refused, naming it; when no row of --runs can be\n"
    "estimated, the report is printed and the exit status is 1.\n";

int cli_cmd_validate(int argc, char **argv, const cli_env_t *env)
{
    int as_json = 0, measured = 0, n_runs = 0, inference = 0, help = 0;
    const char *runs_files[16];
    const int max_runs = (int)(sizeof runs_files / sizeof *runs_files);
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i]))
            help = 1;
        else if (strcmp(argv[i], "--json") == 0)
            as_json = 1;
        else if (strcmp(argv[i], "--measured") == 0)
            measured = 2;
#ifdef FATHOM_HAVE_SERVING
        else if (strcmp(argv[i], "--inference") == 0)
            inference = 1;
#endif
        else if (strcmp(argv[i], "--runs") == 0 && i + 1 >= argc)
            return cli_usage_error("validate", "--runs needs a FILE");
        else if (strcmp(argv[i], "--runs") == 0 && n_runs == max_runs)
            return cli_usage_error("validate", "at most %d --runs are read", max_runs);
        else if (strcmp(argv[i], "--runs") == 0)
            runs_files[n_runs++] = argv[++i], measured = measured ? measured : 1;
        else if (argv[i][0] == '-' && argv[i][1])
            return cli_usage_error("validate", "unknown option %s", argv[i]);
        else
            return cli_usage_error("validate", "takes no argument '%s' (--runs FILE reads one)",
                                   argv[i]);
    }
    if (help) {
        fputs(validate_usage, stdout);
        return CLI_OK;
    }
    if (inference && measured == 2)
        return cli_usage_error("validate", "--measured compares training runs; --inference the "
                                           "serving runs: give one");
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
__attribute__((unused)) static int one_file(const char *endpoint, const char *csv_key, int argc,
                                            char **argv, const cli_env_t *env, const char *usage)
{
    const char *file;
    const int rc = cli_one_file_args(argv[0], argc, argv, usage, &file);
    if (rc != CLI_OK || !file)
        return rc;
    const codec_endpoint_t *ep = codec_endpoint_by_name(endpoint);
    if (!ep)
        return CLI_REFUSED;
    size_t len;
    char *buf = cli_read_file(file, &len);
    if (!buf)
        return CLI_REFUSED;
    json_t *body = NULL;
    const size_t name_len = strlen(file), skip = strspn(buf, " \t\r\n");
    if (csv_key && ((name_len > 4 && strcmp(file + name_len - 4, ".csv") == 0) ||
                    (strcmp(file, "-") == 0 && buf[skip] != '{'))) {
        body = json_pack("{s:s%}", csv_key, buf, len);
        if (!body)
            fprintf(stderr, "fathom: %s is not valid UTF-8 text\n", file);
    } else {
        body = cli_parse_json(file, buf, len);
    }
    free(buf);
    if (!body)
        return CLI_REFUSED;
    const int status = cli_run_endpoint(ep, body, env);
    json_decref(body);
    return status;
}

#ifdef FATHOM_HAVE_SERVING
int cli_cmd_infer(int argc, char **argv, const cli_env_t *env)
{
    return one_file("inference", NULL, argc, argv, env,
                    "usage: fathom infer FILE\n\n"
                    "Serving one model on one system (POST /v1/inference): prefill and decode "
                    "step\ntimes and their breakdown, the KV cache and how many requests fit, "
                    "TTFT,\nTPOT, output tokens/s per GPU and per user, the "
                    "throughput-interactivity\n"
                    "curve, $/Mtok and joules per token. FILE (or - for stdin) holds the body, "
                    "e.g.\n{\"model\": \"llama3-70B\", \"system\": \"h100_sxm\", \"serving\": "
                    "{\"tensor_par\": 4,\n \"weights_datatype\": \"fp8\", \"input_tokens\": 2000, "
                    "\"output_tokens\": 200,\n \"requests_per_s\": 5}} (doc/serving.md).\n");
}
#endif

#ifdef FATHOM_HAVE_SCALING
int cli_cmd_scaling(int argc, char **argv, const cli_env_t *env)
{
    return one_file("scaling", NULL, argc, argv, env,
                    "usage: fathom scaling FILE\n\nScaling-law solvers: from a budget (hours, "
                    "dollars or width) to model size, loss,\ncost, kWh and CO2. FILE (or - for "
                    "stdin) holds the body of POST /v1/scaling,\ne.g. {\"gpu\":\"V100\","
                    "\"amp_mode\":\"O0\",\"dollars\":30}.\n");
}

int cli_cmd_scaling_fit(int argc, char **argv, const cli_env_t *env)
{
    return one_file("scaling_fit", "csv", argc, argv, env,
                    "usage: fathom scaling-fit FILE\n\nFits the loss and parameter laws to "
                    "loss-versus-compute runs. FILE is the body of\nPOST /v1/scaling/fit (JSON), or "
                    "a .csv file in the calculator's layout; - reads\neither from stdin (CSV when "
                    "it does not start with {). A file over 1 MiB, the\nlimit of a request body, "
                    "is refused.\n");
}
#endif

#ifdef FATHOM_HAVE_GOODPUT
int cli_cmd_goodput(int argc, char **argv, const cli_env_t *env)
{
    static const char usage[] =
        "usage: fathom goodput evaluate|optimize|fit FILE\n\nPollux goodput: evaluate a "
        "configuration, optimize batch size and accumulation,\nor fit performance parameters "
        "to measurements. FILE (or - for stdin) holds the body of\nPOST /v1/goodput/evaluate, "
        "/optimize or /fit.\n";
    int help = 0, first = 1;
    while (first < argc && argv[first][0] == '-' && argv[first][1]) {
        if (!cli_is_help(argv[first]))
            return cli_usage_error("goodput", "unknown option %s", argv[first]);
        help = 1;
        first++;
    }
    if (first >= argc && help) {
        fputs(usage, stdout);
        return CLI_OK;
    }
    if (first >= argc)
        return cli_usage_error("goodput", "evaluate, optimize or fit is missing");
    const char *endpoint = strcmp(argv[first], "evaluate") == 0   ? "goodput_evaluate"
                           : strcmp(argv[first], "optimize") == 0 ? "goodput_optimize"
                           : strcmp(argv[first], "fit") == 0      ? "goodput_fit"
                                                                  : NULL;
    if (!endpoint)
        return cli_usage_error("goodput", "'%s' is none of evaluate, optimize and fit",
                               argv[first]);
    if (help) {
        fputs(usage, stdout);
        return CLI_OK;
    }
    argv[first] = argv[0]; /* errors name the command, goodput */
    return one_file(endpoint, NULL, argc - first, argv + first, env, usage);
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

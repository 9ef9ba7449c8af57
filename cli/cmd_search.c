/* cmd_search.c — `fathom search`: Calculon's optimal-execution search on this machine's cores,
 * printing the same JSON as a finished sweep, with a progress bar on stderr when it is a
 * terminal. */
#ifdef FATHOM_HAVE_SEARCH
#include <stdio.h>
#include <string.h>

#include "cli_commands.h"
#include "json_read.h"
#include "search_codec.h"
#include "sweep_kind.h"

static const char usage[] =
    "usage: fathom search MODEL NUM_PROCS MAX_BATCH DATATYPE SYSTEM [-m|--mbs-break]\n"
    "                     [-t|--top-n N] [--no-tp-overlap] [--no-dp-overlap]\n"
    "                     [--fused-activation true|false|all] [--threads N]\n"
    "                     [--attention-kernel unfused|fused|all] [--fp8 true|false|all]\n"
    "                     [--context-par N|all] [--zero-stage N|all] [--max-tensor-par N]\n"
    "                     [--max-pipeline-par N] [--tensor-par N] [--pipeline-par N]\n"
    "                     [--microbatch-size N] [--activation-recompute full|attn_only|none]\n"
    "                     [--moe-dispatcher alltoall|flex]\n"
    "                     [--recompute-blocks all|fewest] [--recompute-modules none|fewest]\n"
    "                     [--no-offload] [--exact-batch] [--finetune JSON]\n"
    "                     [--pipeline-schedule 1f1b|interleaved|zero_bubble|dualpipe]\n"
    "                     [--moe-a2a-overlap true|false] [--fp8-activation-cache true|false]\n"
    "                     [--fp8-params true|false]\n"
    "                     [--optimizer-state-datatype float32|bfloat16|float16]\n"
    "                     [--low-precision-gradients true|false]\n"
    "                     [--stack megatron|torchtitan|fsdp] [--compile true|false]\n"
    "                     [--loss-kernel torch|fused]\n\n"
    "Finds the fastest executions of MODEL on NUM_PROCS processors of SYSTEM (each a JSON\n"
    "file or a preset name), exactly over Calculon's llm-optimal-execution space: batch size\n"
    "is the largest multiple of data parallelism not above MAX_BATCH. Prints\n"
    "{\"best\": [...], \"counts\": {\"total\", \"good\", \"bad\"}, \"points\": [...]}: the\n"
    "top N executions by sample rate (-t/--top-n, 1 to 100, default 1), how many were tried,\n"
    "and a sample of the executions that fit, [sample_rate, mem_tier1_bytes, mem_tier2_bytes]\n"
    "each (what GET /v1/sweep/<id>/points gives, for plotting). -m/--mbs-break is Calculon's\n"
    "-m: stop growing the microbatch once a size gives no execution that fits. --threads\n"
    "defaults to the CPUs this process may run on, at most 256. The options after it fix\n"
    "or free Fathom's dimensions and constraints\n"
    "as the sweep's options do (POST /v1/sweep, schemas/sweep_optimal_execution.request.json).\n"
    "Modern defaults: a modern model (kv_heads, gated_mlp, ... given) searches with fused\n"
    "attention and FP8 free where SYSTEM has it; DATATYPE auto is its natural datatype\n"
    "(bfloat16). Calculon's models keep float16, unfused attention and no FP8.\n"
    "--finetune '{\"method\":\"lora\",\"rank\":16}' searches fine-tuning (execution.finetune).\n"
    "--stack torchtitan (or fsdp) searches the layouts as that PyTorch stack runs them\n"
    "(execution.stack, doc/stacks.md), eager unless --compile true.\n";

/* Value options: the command-line flag and the sweep option it sets. Their values are given
 * as JSON literals (1, true) or words ("all", "fused"); the codec checks them. */
static const struct {
    const char *flag, *option;
} value_options[] = {{"--attention-kernel", "attention_kernel"}, {"--fp8", "fp8"},
                     {"--context-par", "context_par"},           {"--zero-stage", "zero_stage"},
                     {"--max-tensor-par", "max_tensor_par"},     {"--max-pipeline-par", "max_pipeline_par"},
                     {"--moe-dispatcher", "moe_dispatcher"},     {"--recompute-blocks", "recompute_blocks"},
                     {"--recompute-modules", "recompute_modules"},
                     {"--pipeline-schedule", "pipeline_schedule"},
                     {"--moe-a2a-overlap", "moe_a2a_overlap"},
                     {"--fp8-activation-cache", "fp8_activation_cache"},
                     {"--fp8-params", "fp8_params"},
                     {"--optimizer-state-datatype", "optimizer_state_datatype"},
                     {"--tensor-par", "tensor_par"},
                     {"--pipeline-par", "pipeline_par"},
                     {"--microbatch-size", "microbatch_size"},
                     {"--activation-recompute", "activation_recompute"},
                     {"--low-precision-gradients", "low_precision_gradients"},
                     {"--stack", "stack"},
                     {"--compile", "compile"},
                     {"--loss-kernel", "loss_kernel"}};

/* A word as JSON: a number or true/false when it reads as one, else a string (NULL after a
 * usage error naming `flag` when it is not valid UTF-8). */
static json_t *option_value(const char *flag, const char *word)
{
    json_t *v = json_loads(word, JSON_DECODE_ANY, NULL);
    if (v && (json_is_number(v) || json_is_boolean(v)))
        return v;
    json_decref(v);
    return cli_string("search", flag, word);
}

/* The index in value_options of flag, or -1. */
static int value_option(const char *flag)
{
    for (size_t k = 0; k < sizeof value_options / sizeof value_options[0]; k++)
        if (strcmp(flag, value_options[k].flag) == 0)
            return (int)k;
    return -1;
}

/* Reads the flags into options, *finetune and *threads, and the positional arguments into pos
 * (*npos of them); 0, or the exit status after saying what is wrong. */
static int parse_args(int argc, char **argv, json_t *options, json_t **finetune,
                      long long *threads, const char **pos, int *npos, int *help)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const int takes_value = strcmp(a, "--top-n") == 0 || strcmp(a, "-t") == 0 ||
                                strcmp(a, "--fused-activation") == 0 ||
                                strcmp(a, "--threads") == 0 || strcmp(a, "--finetune") == 0 ||
                                value_option(a) >= 0;
        if (takes_value && i + 1 >= argc)
            return cli_usage_error("search", "%s needs a value", a);
        const char *value = takes_value ? argv[++i] : NULL;
        json_t *v = NULL;
        if (cli_is_help(a)) {
            *help = 1;
        } else if (strcmp(a, "--mbs-break") == 0 || strcmp(a, "-m") == 0) {
            json_object_set_new(options, "mbs_break", json_true());
        } else if (strcmp(a, "--no-tp-overlap") == 0) {
            json_object_set_new(options, "no_tp_overlap", json_true());
        } else if (strcmp(a, "--no-dp-overlap") == 0) {
            json_object_set_new(options, "no_dp_overlap", json_true());
        } else if (strcmp(a, "--no-offload") == 0 || strcmp(a, "--exact-batch") == 0) {
            json_object_set_new(options, a[2] == 'n' ? "no_offload" : "exact_batch", json_true());
        } else if (strcmp(a, "--top-n") == 0 || strcmp(a, "-t") == 0) {
            long long n;
            if (cli_parse_int("search", a, value, 1, SEARCH_TOP_N_MAX, &n))
                return CLI_USAGE;
            json_object_set_new(options, "top_n", json_integer(n));
        } else if (strcmp(a, "--threads") == 0) {
            if (cli_parse_int("search", a, value, 1, CODEC_SWEEP_MAX_THREADS, threads))
                return CLI_USAGE;
        } else if (strcmp(a, "--fused-activation") == 0) {
            if (!(v = cli_string("search", a, value)))
                return CLI_USAGE;
            json_object_set_new(options, "fused_activation", v);
        } else if (strcmp(a, "--finetune") == 0) {
            /* not JSON: the text as a string, and the codec names what is wrong */
            v = json_loads(value, JSON_DECODE_ANY, NULL);
            if (!v && !(v = cli_string("search", a, value)))
                return CLI_USAGE;
            json_decref(*finetune);
            *finetune = v;
        } else if (value_option(a) >= 0) {
            if (!(v = option_value(a, value)))
                return CLI_USAGE;
            json_object_set_new(options, value_options[value_option(a)].option, v);
        } else if (a[0] == '-' && a[1]) {
            return cli_usage_error("search", "unknown option %s", a);
        } else if (*npos < 5) {
            pos[(*npos)++] = a;
        } else {
            return cli_usage_error("search", "5 arguments are read; '%s' is one too many", a);
        }
    }
    return CLI_OK;
}

/* The body of the optimal-execution sweep of the arguments (new reference), or NULL with *rc
 * the exit status after saying what is wrong. */
static json_t *search_body(const char *const *pos, const json_t *options, const json_t *finetune,
                           int *rc)
{
    static const char *const names[] = {"MODEL", "NUM_PROCS", "MAX_BATCH", "DATATYPE", "SYSTEM"};
    long long procs, batch;
    if (cli_parse_int("search", names[1], pos[1], 1, JR_MAX_EXACT_INT, &procs) ||
        cli_parse_int("search", names[2], pos[2], 1, JR_MAX_EXACT_INT, &batch)) {
        *rc = CLI_USAGE;
        return NULL;
    }
    json_t *datatype = strcmp(pos[3], "auto") == 0 ? NULL : cli_string("search", names[3], pos[3]);
    if (strcmp(pos[3], "auto") != 0 && !datatype) {
        *rc = CLI_USAGE;
        return NULL;
    }
    json_t *model = cli_file_or_preset("search", names[0], pos[0], rc);
    json_t *system = model ? cli_file_or_preset("search", names[4], pos[4], rc) : NULL;
    json_t *body = system ? json_pack("{s:s,s:o,s:o,s:I,s:I,s:O}", "kind", "optimal_execution",
                                      "model", model, "system", system, "num_procs",
                                      (json_int_t)procs, "max_batch_size", (json_int_t)batch,
                                      "options", options)
                          : NULL;
    if (!system)
        json_decref(model);
    if (body && datatype)
        json_object_set(body, "datatype", datatype);
    if (body && finetune)
        json_object_set(body, "finetune", (json_t *)finetune);
    json_decref(datatype);
    if (system && !body)
        *rc = CLI_REFUSED;
    return body;
}

int cli_cmd_search(int argc, char **argv, const cli_env_t *env)
{
    const char *pos[5];
    int npos = 0, help = 0;
    long long threads = cli_default_threads();
    json_t *options = json_object(), *finetune = NULL, *body = NULL, *result = NULL;
    int rc = parse_args(argc, argv, options, &finetune, &threads, pos, &npos, &help);
    if (rc == CLI_OK && help)
        fputs(usage, stdout);
    else if (rc == CLI_OK && npos != 5)
        rc = cli_usage_error("search", "5 arguments are read (MODEL NUM_PROCS MAX_BATCH DATATYPE "
                             "SYSTEM), got %d", npos);
    else if (rc == CLI_OK && (body = search_body(pos, options, finetune, &rc)))
        rc = cli_run_sweep("optimal_execution", body, env, (int)threads, SWEEP_RESULT_SAMPLE,
                           &result);
    if (result)
        cli_print_json(result);
    json_decref(result);
    json_decref(body);
    json_decref(options);
    json_decref(finetune);
    return rc;
}
#else
/* Built without the search module: nothing here. */
typedef int cmd_search_empty_t;
#endif

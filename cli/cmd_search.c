/* cmd_search.c — `fathom search`: Calculon's optimal-execution search on this machine's cores,
 * printing the same JSON as a finished sweep, with a progress bar on stderr when it is a
 * terminal. */
#ifdef FATHOM_HAVE_SEARCH
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_commands.h"
#include "sweep_kind.h"

static const char usage[] =
    "usage: fathom search MODEL NUM_PROCS MAX_BATCH DATATYPE SYSTEM [--mbs-break]\n"
    "                     [--top-n N] [--no-tp-overlap] [--no-dp-overlap]\n"
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
    "                     [--optimizer-state-datatype float32|bfloat16|float16]\n\n"
    "Finds the fastest executions of MODEL on NUM_PROCS processors of SYSTEM (each a JSON\n"
    "file or a preset name), exactly over Calculon's llm-optimal-execution space: batch size\n"
    "is the largest multiple of data parallelism not above MAX_BATCH. Prints\n"
    "{\"best\": [...], \"counts\": {\"total\", \"good\", \"bad\"}}. --threads defaults to the\n"
    "number of cores. The options after it fix or free Fathom's dimensions and constraints\n"
    "as the sweep's options do (POST /v1/sweep, schemas/sweep_optimal_execution.request.json).\n"
    "Modern defaults: a modern model (kv_heads, gated_mlp, ... given) searches with fused\n"
    "attention and FP8 free where SYSTEM has it; DATATYPE auto is its natural datatype\n"
    "(bfloat16). Calculon's models keep float16, unfused attention and no FP8.\n"
    "--finetune '{\"method\":\"lora\",\"rank\":16}' searches fine-tuning (execution.finetune).\n";

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
                     {"--activation-recompute", "activation_recompute"}};

/* A word as JSON: a number or true/false when it reads as one, else a string. */
static json_t *option_value(const char *word)
{
    json_t *v = json_loads(word, JSON_DECODE_ANY, NULL);
    if (v && (json_is_number(v) || json_is_boolean(v)))
        return v;
    json_decref(v);
    return json_string(word);
}

int cli_cmd_search(int argc, char **argv, const cli_env_t *env)
{
    const char *pos[5];
    int npos = 0, threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    json_t *options = json_object(), *finetune = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0) {
            fputs(usage, stdout);
            json_decref(options);
            return 0;
        } else if (strcmp(a, "--mbs-break") == 0 || strcmp(a, "-m") == 0) {
            json_object_set_new(options, "mbs_break", json_true());
        } else if (strcmp(a, "--no-tp-overlap") == 0) {
            json_object_set_new(options, "no_tp_overlap", json_true());
        } else if (strcmp(a, "--no-dp-overlap") == 0) {
            json_object_set_new(options, "no_dp_overlap", json_true());
        } else if ((strcmp(a, "--top-n") == 0 || strcmp(a, "-t") == 0) && i + 1 < argc) {
            json_object_set_new(options, "top_n", json_integer(atoll(argv[++i])));
        } else if (strcmp(a, "--fused-activation") == 0 && i + 1 < argc) {
            json_object_set_new(options, "fused_activation", json_string(argv[++i]));
        } else if (strcmp(a, "--threads") == 0 && i + 1 < argc) {
            threads = atoi(argv[++i]);
        } else if (strcmp(a, "--finetune") == 0 && i + 1 < argc) {
            json_decref(finetune);
            finetune = json_loads(argv[++i], JSON_DECODE_ANY, NULL);
            if (!finetune)
                finetune = json_string(argv[i]); /* the codec names what is wrong */
        } else if (strcmp(a, "--no-offload") == 0 || strcmp(a, "--exact-batch") == 0) {
            json_object_set_new(options, a[2] == 'n' ? "no_offload" : "exact_batch", json_true());
        } else if (a[0] == '-' && a[1]) {
            size_t k = 0, n = sizeof value_options / sizeof value_options[0];
            while (k < n && strcmp(a, value_options[k].flag) != 0)
                k++;
            if (k < n && i + 1 < argc) {
                json_object_set_new(options, value_options[k].option, option_value(argv[++i]));
                continue;
            }
            fprintf(stderr, "fathom search: unknown option %s\n\n%s", a, usage);
            json_decref(options);
            json_decref(finetune);
            return 2;
        } else if (npos < 5) {
            pos[npos++] = a;
        } else {
            npos = 6;
        }
    }
    if (npos != 5 || threads < 1 || threads > CODEC_SWEEP_MAX_THREADS) {
        fputs(usage, stderr);
        json_decref(options);
        json_decref(finetune);
        return 2;
    }
    json_t *model = cli_file_or_preset(pos[0]), *system = cli_file_or_preset(pos[4]);
    int rc = 1;
    if (model && system) {
        char *end1, *end2;
        long long procs = strtoll(pos[1], &end1, 10), batch = strtoll(pos[2], &end2, 10);
        if (*end1 || *end2) {
            fprintf(stderr, "fathom search: NUM_PROCS and MAX_BATCH must be whole numbers\n");
            rc = 2;
            goto out;
        }
        json_t *body = json_pack("{s:s,s:O,s:O,s:I,s:I,s:O}", "kind", "optimal_execution",
                                 "model", model, "system", system, "num_procs",
                                 (json_int_t)procs, "max_batch_size", (json_int_t)batch,
                                 "options", options);
        if (body && strcmp(pos[3], "auto") != 0)
            json_object_set_new(body, "datatype", json_string(pos[3]));
        if (body && finetune)
            json_object_set(body, "finetune", finetune);
        json_t *result = NULL;
        rc = body ? cli_run_sweep("optimal_execution", body, env, threads, SWEEP_RESULT_SAMPLE,
                                  &result)
                  : 1;
        if (result)
            cli_print_json(result);
        json_decref(result);
        json_decref(body);
    }
out:
    json_decref(model);
    json_decref(system);
    json_decref(options);
    json_decref(finetune);
    return rc;
}
#else
/* Built without the search module: nothing here. */
typedef int cmd_search_empty_t;
#endif

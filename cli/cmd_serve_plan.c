/* cmd_serve_plan.c — `fathom serve-plan FILE`: a serving plan (the body of a
 * {"kind":"serving_plan"} sweep) run on this machine's cores, printed as a table of each system's
 * cheapest fleet and the Pareto front of cost against TPOT (or, with --json, the serving_plan
 * block a finished sweep carries). */
#ifdef FATHOM_HAVE_SERVING
#include <stdio.h>
#include <string.h>

#include "cli_commands.h"

static const char usage[] =
    "usage: fathom serve-plan FILE [--json] [--threads N]\n\n"
    "Runs the serving plan in FILE (or - for stdin; JSON: the body of POST /v1/sweep with\n"
    "\"kind\": \"serving_plan\"; see schemas/sweep_serving_plan.request.json) on this\n"
    "machine's cores: for a model, a traffic level and latency targets, each system's cheapest\n"
    "fleet (layout, replicas, aggregated or disaggregated), its $/Mtok and GPUs, and\n"
    "the Pareto front of cost against TPOT. Prints a table of each system's cheapest\n"
    "fleet, the cheapest of all (C) and the Pareto front (*); --json prints the plan block\n"
    "a finished serving_plan sweep carries. E.g. {\"model\": \"llama3-70B\", \"traffic\":\n"
    "{\"requests_per_s\": 20, \"input_tokens\": 2000, \"output_tokens\": 200}, \"slo\":\n"
    "{\"ttft_ms_p99\": 2000, \"tpot_ms\": 50}, \"systems\": [\"h100_sxm\", \"h200\", \"b200\"]}\n"
    "(doc/serving.md). --threads defaults to the CPUs this process may run on (at most\n"
    "256).\n";

static double num(const json_t *c, const char *key)
{
    return json_number_value(json_object_get(c, key));
}

static long long integer(const json_t *c, const char *key)
{
    return (long long)json_integer_value(json_object_get(c, key));
}

/* Whether candidate index i is among the integers of `list`. */
static int listed(const json_t *list, long long i)
{
    size_t k;
    const json_t *v;
    json_array_foreach(list, k, v) if (json_integer_value(v) == i) return 1;
    return 0;
}

/* One candidate as a row: marks, system, mode, weights, layout, replicas (decode+prefill when
 * disaggregated), GPUs, cost and latency. */
static void print_row(const char *marks, const json_t *c)
{
    const json_t *l = json_object_get(c, "layout");
    char layout[48], replicas[32];
    snprintf(layout, sizeof layout, "%lld.%lld.%lld.%lld", integer(l, "tensor_par"),
             integer(l, "pipeline_par"), integer(l, "expert_par"),
             integer(l, "attention_data_par"));
    const char *mode = json_string_value(json_object_get(c, "mode"));
    if (mode && strcmp(mode, "disaggregated") == 0)
        snprintf(replicas, sizeof replicas, "%lld+%lld", integer(c, "replicas"),
                 integer(c, "prefill_replicas"));
    else
        snprintf(replicas, sizeof replicas, "%lld", integer(c, "replicas"));
    printf("%-3s %-16s %-13s %-7s %-11s %8s %5lld %9.2f %10.3f %9.0f %9.0f %8.1f %10.0f\n", marks,
           json_string_value(json_object_get(c, "system")), mode ? mode : "-",
           json_string_value(json_object_get(c, "weights_datatype")), layout, replicas,
           integer(c, "gpus"), num(c, "dollars_per_hour"),
           num(c, "dollars_per_million_output_tokens"), 1e3 * num(c, "ttft_p50_s"),
           1e3 * num(c, "ttft_p99_s"), 1e3 * num(c, "tpot_s"),
           num(c, "output_tokens_per_s_per_gpu"));
}

static void print_table(const json_t *plan)
{
    const json_t *candidates = json_object_get(plan, "candidates");
    const json_t *front = json_object_get(plan, "pareto");
    const long long cheapest = json_is_integer(json_object_get(plan, "cheapest"))
                                   ? integer(plan, "cheapest")
                                   : -1;
    printf("%-3s %-16s %-13s %-7s %-11s %8s %5s %9s %10s %9s %9s %8s %10s\n", "", "system", "mode",
           "weights", "tp.pp.ep.dp", "replicas", "gpus", "$/hour", "$/Mtok_out", "ttft_p50",
           "ttft_p99", "tpot", "tok/s/gpu");
    size_t i;
    const json_t *s;
    json_array_foreach(json_object_get(plan, "systems"), i, s)
    {
        const json_t *best = json_object_get(s, "best");
        if (!json_is_object(best)) {
            const char *hint = json_string_value(json_object_get(s, "hint"));
            printf("%-3s %-16s no layout of the %lld tried meets the targets%s%s\n", "",
                   json_string_value(json_object_get(s, "name")), integer(s, "candidates"),
                   hint ? ": " : "", hint ? hint : "");
            continue;
        }
        long long index = -1;
        size_t k;
        const json_t *c;
        json_array_foreach(candidates, k, c) if (json_equal(c, best)) index = (long long)k;
        char marks[4] = "   ";
        marks[0] = listed(front, index) ? '*' : ' ';
        marks[1] = index == cheapest ? 'C' : ' ';
        print_row(marks, best);
    }
    printf("\nPareto front of $/hour against TPOT (every candidate that meets the targets and no\n"
           "other beats on both):\n");
    size_t k;
    const json_t *v;
    json_array_foreach(front, k, v)
    {
        const long long index = (long long)json_integer_value(v);
        print_row(index == cheapest ? "*C " : "*  ",
                  json_array_get(candidates, (size_t)index));
    }
    printf("\nC the cheapest fleet of all, * on the Pareto front; replicas: decode+prefill when\n"
           "disaggregated; ttft and tpot in ms; layout: tensor.pipeline.expert.attention-data\n"
           "parallel\n");
}

int cli_cmd_serve_plan(int argc, char **argv, const cli_env_t *env)
{
    return cli_plan_command(argc, argv, env, "serve-plan", "serving_plan", "serving_plan", usage,
                            print_table);
}
#else
/* Built without the serving module: nothing here. */
typedef int cmd_serve_plan_empty_t;
#endif

/* cmd_plan.c — `fathom plan FILE`: a cluster plan (the body of a {"kind":"plan"} sweep) run on
 * this machine's cores, printed as a table of candidates (or, with --json, the same plan block
 * a finished plan sweep carries). */
#ifdef FATHOM_HAVE_SEARCH
#include <math.h>
#include <stdbool.h>
#include <stdio.h>

#include "cli_commands.h"

static const char usage[] =
    "usage: fathom plan FILE [--json] [--threads N]\n\n"
    "Runs the cluster plan in FILE (or - for stdin; JSON: the body of POST /v1/sweep with\n"
    "\"kind\": \"plan\"; see schemas/sweep_plan.request.json) and prints every candidate —\n"
    "system, GPUs, layout, batch, step time, MFU, days ideal and expected, GPU-hours expected\n"
    "(the tuned stack times what published whole runs paid over it) and their range (those\n"
    "runs' spread), dollars, MWh, tonnes of CO2, the deadline and budget verdicts (within, at\n"
    "risk, misses) — marking the Pareto front (*), the cheapest within the deadline (C) and\n"
    "the fastest within the budget (F), the candidates with warnings (!, each warning then\n"
    "given once below the table), and the reason of each rejected candidate. --json prints\n"
    "the plan block instead. --threads defaults to the CPUs this process may run on (at\n"
    "most 256).\n";

/* Whether candidates a and b are one: the same index. A null pick (no candidate within the
 * deadline or budget) is no candidate, not index 0. */
static bool same(const json_t *a, const json_t *b)
{
    const json_t *ia = json_object_get(a, "index"), *ib = json_object_get(b, "index");
    return json_is_integer(ia) && json_is_integer(ib) &&
           json_integer_value(ia) == json_integer_value(ib);
}

static double num(const json_t *c, const char *key)
{
    const json_t *v = json_object_get(c, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* Each warning code the candidates carry, once: how many candidates carry it and the message
 * of the first (the numbers in a message are that candidate's; --json gives every one). */
static void print_warnings(const json_t *candidates)
{
    json_t *codes = json_object(); /* code -> {"count", "first": candidate, "message"} */
    size_t i;
    const json_t *c;
    json_array_foreach(candidates, i, c)
    {
        size_t k;
        const json_t *w;
        json_array_foreach(json_object_get(c, "warnings"), k, w)
        {
            const char *code = json_string_value(json_object_get(w, "code"));
            if (!code)
                continue;
            json_t *entry = json_object_get(codes, code);
            if (entry)
                json_object_set_new(entry, "count",
                                    json_integer(json_integer_value(
                                                     json_object_get(entry, "count")) + 1));
            else
                json_object_set_new(codes, code,
                                    json_pack("{s:I,s:O,s:O}", "count", (json_int_t)1, "first", c,
                                              "message", json_object_get(w, "message")));
        }
    }
    if (json_object_size(codes) > 0)
        printf("\n! warnings, each once with the first candidate's message (--json: every "
               "candidate's)\n");
    const char *code;
    json_t *entry;
    json_object_foreach(codes, code, entry)
    {
        const json_t *first = json_object_get(entry, "first");
        printf("  %s (%lld of %zu candidates; first: %s, %lld GPUs): %s\n", code,
               (long long)json_integer_value(json_object_get(entry, "count")),
               json_array_size(candidates), json_string_value(json_object_get(first, "system")),
               (long long)json_integer_value(json_object_get(first, "num_procs")),
               json_string_value(json_object_get(entry, "message")));
    }
    json_decref(codes);
}

static void print_table(const json_t *plan)
{
    const json_t *cheap = json_object_get(plan, "cheapest_within_deadline");
    const json_t *fast = json_object_get(plan, "fastest_within_budget");
    const json_t *front = json_object_get(plan, "pareto");
    printf("%-4s %-16s %6s %-14s %7s %9s %6s %8s %8s %10s %-21s %13s %8s %7s %-17s %s\n", "",
           "system", "gpus", "tp.pp.dp.cp", "batch_M", "step_s", "mfu", "days_id", "days",
           "gpu_hours", "gpu_hours_range", "dollars", "mwh", "tCO2", "deadline/budget",
           "verdict");
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(plan, "candidates"), i, c)
    {
        bool on_front = false;
        size_t k;
        const json_t *f;
        json_array_foreach(front, k, f) on_front = on_front || same(c, f);
        char marks[5] = "    ";
        marks[0] = on_front ? '*' : ' ';
        marks[1] = same(c, cheap) ? 'C' : ' ';
        marks[2] = same(c, fast) ? 'F' : ' ';
        marks[3] = json_array_size(json_object_get(c, "warnings")) > 0 ? '!' : ' ';
        const json_t *e = json_object_get(c, "execution");
        char layout[48] = "-";
        if (json_is_object(e))
            snprintf(layout, sizeof layout, "%lld.%lld.%lld.%lld",
                     (long long)json_integer_value(json_object_get(e, "tensor_par")),
                     (long long)json_integer_value(json_object_get(e, "pipeline_par")),
                     (long long)json_integer_value(json_object_get(e, "data_par")),
                     (long long)json_integer_value(json_object_get(e, "context_par")));
        const json_t *reason = json_object_get(c, "reason");
        const json_t *range = json_object_get(c, "gpu_hours_range");
        char rng[32] = "-", verdicts[32];
        if (json_is_array(range))
            snprintf(rng, sizeof rng, "%.4g-%.4g",
                     json_number_value(json_array_get(range, 0)),
                     json_number_value(json_array_get(range, 1)));
        snprintf(verdicts, sizeof verdicts, "%s/%s",
                 json_string_value(json_object_get(c, "deadline_verdict")),
                 json_string_value(json_object_get(c, "budget_verdict")));
        printf("%-4s %-16s %6lld %-14s %7.2f %9.3f %6.3f %8.1f %8.1f %10.4g %-21s %13.0f %8.1f "
               "%7.1f %-17s %s\n",
               marks, json_string_value(json_object_get(c, "system")),
               (long long)json_integer_value(json_object_get(c, "num_procs")), layout,
               num(c, "batch_tokens") / 1048576.0, num(c, "step_time_s"), num(c, "mfu"),
               num(c, "days_ideal"), num(c, "days"), num(c, "gpu_hours"), rng,
               num(c, "dollars"), num(c, "mwh"), num(c, "co2_tonnes"), verdicts,
               json_is_string(reason) ? json_string_value(reason) : "ok");
    }
    printf("\n* Pareto front of days and dollars (expected, with every loss besides the step)\n"
           "C cheapest within the deadline, F fastest within the budget, ! warned (below)\n"
           "batch_M: global batch in 2^20 tokens; gpu_hours: the tuned stack times what published "
           "runs paid over it, gpu_hours_range: their spread (doc/plan.md)\n");
    print_warnings(json_object_get(plan, "candidates"));
}

int cli_cmd_plan(int argc, char **argv, const cli_env_t *env)
{
    return cli_plan_command(argc, argv, env, "plan", "plan", "plan", usage, print_table);
}
#else
/* Built without the search module: nothing here. */
typedef int cmd_plan_empty_t;
#endif

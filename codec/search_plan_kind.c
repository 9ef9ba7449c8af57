/* search_plan_kind.c — the "plan" row of the sweep-kind table (sweep_kind.h): a cluster plan
 * (search_plan_codec.h) whose unit is one candidate (a system and a GPU count), searched and
 * priced by codec_plan_candidate and kept as a point (index = candidate). A restarted plan runs
 * only the candidates not stored. When every candidate is stored the result is made from them:
 * {"best": [] (a plan ranks by days and dollars, not by sample rate), "counts" (candidates, of
 * which good fit), "plan": the plan block}; before that, a status shows nothing of it. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search_plan_codec.h"
#include "search_sweep_codec.h"
#include "sweep_kind.h"

typedef struct {
    const json_t *spec;
    uint64_t ncandidates;
} plan_run_t;

static const plan_run_t *run_of(const sweep_run_t *r)
{
    return (const plan_run_t *)r;
}

static json_t *normalize(const json_t *body, const codec_ctx_t *ctx, const sweep_limits_t *limits,
                         uint64_t *size, fathom_error_t *err)
{
    return codec_plan_normalize(body, ctx, limits->max_search_executions, size, err);
}

static sweep_run_t *open_run(const json_t *spec, const codec_ctx_t *ctx, fathom_error_t *err)
{
    (void)ctx;
    plan_run_t *r = calloc(1, sizeof *r);
    if (!r)
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory"), NULL;
    r->spec = spec;
    r->ncandidates = codec_plan_size(spec);
    return (sweep_run_t *)r;
}

static void close_run(sweep_run_t *run)
{
    free(run);
}

static size_t units(const sweep_run_t *run)
{
    return (size_t)run_of(run)->ncandidates;
}

static int run_unit(const sweep_run_t *run, const codec_ctx_t *ctx, size_t unit,
                    volatile int *cancel, sweep_unit_t *out, fathom_error_t *err)
{
    const json_t *spec = run_of(run)->spec;
    json_t *c = codec_plan_candidate(spec, ctx, unit, cancel, &out->evaluations, err);
    if (!c)
        return -1;
    json_t *values = json_pack("{s:O,s:O}", "system", json_object_get(c, "system"), "num_procs",
                               json_object_get(c, "num_procs"));
    const json_t *rate = json_object_get(c, "tokens_per_s");
    const sweep_point_t p = {.index = (long long)unit,
                             .status = 200,
                             .fits = json_is_true(json_object_get(c, "fits")),
                             .has_sample_rate = json_is_number(rate),
                             .sample_rate = json_number_value(rate)};
    int rc = sweep_unit_one_point(out, &p, values, c, err);
    json_decref(values);
    json_decref(c);
    return rc;
}

/* A plan has no sample of its own: /points lists none. */
static json_t *sample(const char *text, fathom_error_t *err)
{
    (void)text;
    json_t *none = json_array();
    return none ? none : (fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory"), NULL);
}

/* ------------------------------------------------------------------- the result ---- */

static json_t *summarize(const void *ctx, json_t *candidates)
{
    return codec_plan_summarize(ctx, candidates);
}

static json_t *result(const sweep_run_t *run, const sweep_state_t *st, const sweep_points_t *pts,
                      int flags, fathom_error_t *err)
{
    (void)st;
    return sweep_result_of_points(pts, (size_t)run_of(run)->ncandidates, flags, "fits", "plan",
                                  summarize, run_of(run)->spec, err);
}

/* ------------------------------------------------------------------- downloads ---- */

/* Whether every element of list v is null: the range of a run that never finishes. */
static bool all_null(const json_t *v)
{
    size_t k;
    json_t *e;
    json_array_foreach(v, k, e)
    {
        if (!json_is_null(e))
            return false;
    }
    return true;
}

/* A plan cell: a list (the rejection reasons, a range [low, high]) joined by '|' into one
 * string, anything else as it is. A range with no bounds is an empty cell, as its candidate's
 * days and dollars are (it was "|"). */
static json_t *plan_cell(json_t *v)
{
    if (!json_is_array(v) || (json_array_size(v) > 0 && all_null(v)))
        return codec_sweep_cell(json_is_array(v) ? json_null() : v);
    char joined[256] = "";
    size_t k, len = 0;
    json_t *e;
    json_array_foreach(v, k, e)
    {
        const char *code = json_string_value(e) ? json_string_value(e) : "";
        if (len < sizeof joined && json_is_number(e))
            len += (size_t)snprintf(joined + len, sizeof joined - len, "%s%.17g", k ? "|" : "",
                                    json_number_value(e));
        else if (len < sizeof joined)
            len += (size_t)snprintf(joined + len, sizeof joined - len, "%s%s", k ? "|" : "",
                                    code);
    }
    return json_string(joined);
}

const sweep_kind_t codec_plan_kind = {
    .name = "plan",
    .keeps = SWEEP_KEEPS_POINTS,
    .normalize = normalize,
    .open = open_run,
    .close = close_run,
    .units = units,
    .run_unit = run_unit,
    .sample = sample,
    .result = result,
    .csv_columns = codec_plan_csv_columns, /* a candidate's cells, by path (plan_cell) */
    .csv_cell = plan_cell,
};

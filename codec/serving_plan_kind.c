/* serving_plan_kind.c — the "serving_plan" row of the sweep-kind table (sweep_kind.h): a serving
 * plan (serving_plan_codec.h) whose unit is one layout of one system, searched for the fewest
 * replicas meeting the latency targets by serving_plan_candidate and kept as a point (index =
 * unit; "fits" = meets the targets, ranked by output tokens/s per GPU). A restarted plan runs
 * only the units not stored. When every unit is stored the result is made from them:
 * {"best": [] (a plan ranks by dollars, not by a sample rate), "counts" (candidates, of which
 * good meet), "serving_plan": the plan block}; before that, a status shows nothing of it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serving_codec.h"
#include "serving_plan_codec.h"
#include "sweep_kind.h"

typedef struct {
    codec_serving_plan_t *plan;
} run_t;

static const codec_serving_plan_t *plan_of(const sweep_run_t *r)
{
    return ((const run_t *)r)->plan;
}

static json_t *normalize(const json_t *body, const codec_ctx_t *ctx, const sweep_limits_t *limits,
                         uint64_t *size, fathom_error_t *err)
{
    (void)limits; /* a plan's units are bounded by its systems (16) and their layouts (512) */
    codec_serving_plan_t *p = codec_serving_plan_decode(body, ctx->presets, err);
    if (!p)
        return NULL;
    *size = (uint64_t)p->num_units;
    json_t *spec = codec_serving_plan_normalized(p);
    codec_serving_plan_free(p);
    if (!spec)
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    return spec;
}

static sweep_run_t *open_run(const json_t *spec, const codec_ctx_t *ctx, fathom_error_t *err)
{
    run_t *r = calloc(1, sizeof *r);
    if (!r)
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory"), NULL;
    if (!(r->plan = codec_serving_plan_decode(spec, ctx->presets, err))) {
        free(r);
        return NULL;
    }
    return (sweep_run_t *)r;
}

static void close_run(sweep_run_t *run)
{
    if (run)
        codec_serving_plan_free(((run_t *)run)->plan);
    free(run);
}

static size_t units(const sweep_run_t *run)
{
    return (size_t)plan_of(run)->num_units;
}

static int run_unit(const sweep_run_t *run, const codec_ctx_t *ctx, size_t unit,
                    volatile int *cancel, sweep_unit_t *out, fathom_error_t *err)
{
    (void)ctx;
    if (cancel && *cancel)
        return fathom_error_set(err, FATHOM_E_CANCELLED, NULL, "cancelled");
    const codec_serving_plan_t *p = plan_of(run);
    serving_plan_candidate_t c;
    codec_serving_plan_run_unit(p, (int)unit, &c);
    out->evaluations += (uint64_t)c.evaluations;
    json_t *j = codec_serving_plan_candidate_encode(p, &c);
    json_t *values = j ? json_pack("{s:O,s:O,s:O,s:O}", "system", json_object_get(j, "system"),
                                   "mode", json_object_get(j, "mode"), "layout",
                                   json_object_get(j, "layout"), "weights_datatype",
                                   json_object_get(j, "weights_datatype"))
                       : NULL;
    const sweep_point_t pt = {.index = (long long)unit,
                              .status = 200,
                              .fits = c.meets,
                              .has_sample_rate = c.meets,
                              .sample_rate = c.output_tokens_per_s_per_gpu};
    int rc = sweep_unit_one_point(out, &pt, values, j, err);
    json_decref(values);
    json_decref(j);
    return rc;
}

/* ------------------------------------------------------------------- the result ---- */

static json_t *summarize(const void *ctx, json_t *candidates)
{
    return codec_serving_plan_summarize(ctx, candidates);
}

static json_t *result(const sweep_run_t *run, const sweep_state_t *st, const sweep_points_t *pts,
                      int flags, fathom_error_t *err)
{
    (void)st;
    const codec_serving_plan_t *p = plan_of(run);
    return sweep_result_of_points(pts, (size_t)p->num_units, flags, "meets", "serving_plan",
                                  summarize, p, err);
}

/* ------------------------------------------------------------------- downloads ---- */

/* "index" first, as a plan's: a client resumes a cut CSV from the last index it got. */
static const char *const columns[] = {
    "index",
    "system",       "mode",       "weights_datatype", "layout.tensor_par",
    "layout.pipeline_par", "layout.expert_par", "layout.attention_data_par", "meets",
    "replicas",     "prefill_replicas", "gpus",     "dollars_per_hour",
    "dollars_per_million_output_tokens", "ttft_p50_s", "ttft_p99_s", "tpot_s",
    "output_tokens_per_s_per_gpu", "reason", NULL};

const sweep_kind_t codec_serving_plan_kind = {
    .name = "serving_plan",
    .keeps = SWEEP_KEEPS_POINTS,
    .normalize = normalize,
    .open = open_run,
    .close = close_run,
    .units = units,
    .run_unit = run_unit,
    .result = result,
    .csv_columns = columns, /* a candidate's values, by path (one level of nesting) */
};

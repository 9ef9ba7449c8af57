/* sweep_plan.c — what the scheduler does for a cluster plan ({"kind":"plan"} sweeps): a plan's
 * unit is one candidate (a system and a GPU count), searched and priced on a pool thread by
 * codec_plan_candidate and stored as a point (index = candidate); when every candidate is
 * stored, the result document is made from the points: {"best": [] (a plan ranks by days and
 * dollars, not by sample rate), "counts" (candidates, of which good fit), "plan": the plan
 * block, which the status shows}. Progress, checkpoints, cancel and resume are the grid's
 * (sweeps.c): a plan's candidates are points, so a restarted plan runs only the candidates not
 * stored. */
#include <stdlib.h>
#include <string.h>

#include "alloc_guard.h"
#include "search_plan_codec.h"
#include "sweeps_internal.h"

int sweeps__plan_point(const codec_ctx_t *ctx, const json_t *spec, uint64_t index,
                       volatile int *cancel, sweep_point_t *p, uint64_t *evaluations)
{
    fathom_error_t err;
    fathom_error_clear(&err);
    alloc_guard_take(); /* forget failures of earlier work on this thread */
    p->index = (long long)index;
    json_t *c = codec_plan_candidate(spec, ctx, index, cancel, evaluations, &err);
    if (!c)
        return err.code == FATHOM_E_UNAVAILABLE ? 1 : -1;
    json_t *values = json_pack("{s:O,s:O}", "system", json_object_get(c, "system"), "num_procs",
                               json_object_get(c, "num_procs"));
    p->status = 200;
    p->fits = json_is_true(json_object_get(c, "fits"));
    p->has_sample_rate = json_is_number(json_object_get(c, "tokens_per_s"));
    p->sample_rate = json_number_value(json_object_get(c, "tokens_per_s"));
    p->values = values ? json_dumps(values, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    p->response = json_dumps(c, JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(values);
    json_decref(c);
    return p->values && p->response && !alloc_guard_take() ? 0 : -1;
}

typedef struct {
    json_t *candidates;
    int failed;
} collect_t;

static int collect(void *ctx, const store_point_t *p)
{
    collect_t *w = ctx;
    json_t *c = json_loads(p->response, 0, NULL);
    if (!c || json_array_append_new(w->candidates, c)) {
        w->failed = 1;
        return 1;
    }
    return 0;
}

json_t *sweeps__plan_result(store_t *store, const char *id, const json_t *spec,
                            fathom_error_t *err)
{
    collect_t w = {json_array(), 0};
    uint64_t n = codec_plan_size(spec);
    while (w.candidates && !w.failed && json_array_size(w.candidates) < n) {
        size_t before = json_array_size(w.candidates);
        if (store_points_page(store, id, (long long)before, 256, collect, &w, err)) {
            json_decref(w.candidates);
            return NULL;
        }
        if (json_array_size(w.candidates) == before)
            break; /* fewer points than candidates: not every unit is stored */
    }
    json_t *plan = NULL, *doc = NULL;
    if (w.candidates && !w.failed && json_array_size(w.candidates) == n)
        plan = codec_plan_summarize(spec, w.candidates);
    long long good = 0;
    size_t i;
    json_t *c;
    json_array_foreach(w.candidates, i, c) good += json_is_true(json_object_get(c, "fits"));
    if (plan)
        doc = json_pack("{s:[],s:{s:I,s:I,s:I},s:o}", "best", "counts", "total", (json_int_t)n,
                        "good", (json_int_t)good, "bad",
                        (json_int_t)((long long)n - good), "plan", plan);
    json_decref(w.candidates);
    if (!doc)
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "cannot make the plan from its candidates");
    return doc;
}

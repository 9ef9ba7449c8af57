/* search_grid_kind.c — the "grid" row of the sweep-kind table (sweep_kind.h): every point of a
 * grid of estimates (search_sweep_codec.h expands the spec), GRID_POINTS_PER_UNIT points a unit,
 * each evaluated as POST /v1/estimate would and kept as a point (its answer, or its refusal:
 * a point the model refuses does not fail the sweep). The result is the top_n fastest points
 * that fit, read from the stored points, with the counts. */
#include <stdlib.h>
#include <string.h>

#include "error_codec.h"
#include "search_sweep_codec.h"
#include "sweep_kind.h"

#define GRID_POINTS_PER_UNIT 64

typedef struct {
    const json_t *spec;
    uint64_t npoints;
    const char *axes[SWEEP_GRID_MAX_AXES]; /* in point order, borrowed from spec */
    int naxes;
} grid_run_t;

static const grid_run_t *run_of(const sweep_run_t *r)
{
    return (const grid_run_t *)r;
}

static sweep_run_t *open_run(const json_t *spec, const codec_ctx_t *ctx, fathom_error_t *err)
{
    (void)ctx;
    grid_run_t *r = calloc(1, sizeof *r);
    if (!r)
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory"), NULL;
    r->spec = spec;
    r->npoints = codec_grid_size(spec);
    r->naxes = codec_grid_axes(spec, r->axes);
    return (sweep_run_t *)r;
}

static void close_run(sweep_run_t *run)
{
    free(run);
}

static size_t units(const sweep_run_t *run)
{
    return (size_t)((run_of(run)->npoints + GRID_POINTS_PER_UNIT - 1) / GRID_POINTS_PER_UNIT);
}

/* Evaluates point idx into *p. -1 with err only when memory ran out (p is then partly filled,
 * freed by the caller); a point the model refuses is its status and error. */
static int run_point(const json_t *spec, const codec_ctx_t *ctx, uint64_t idx, sweep_point_t *p,
                     uint64_t *evaluations, fathom_error_t *err)
{
    json_t *body = NULL, *values = NULL, *norm = NULL, *resp = NULL;
    fathom_error_t why;
    fathom_error_clear(&why);
    int rc = -1;
    p->index = (long long)idx;
    if (codec_grid_point(spec, idx, &body, &values))
        goto out; /* the spec was checked when submitted: only memory can fail here */
    if ((norm = codec_estimate_endpoint.normalize(body, ctx, &why)) != NULL) {
        resp = codec_estimate_endpoint.evaluate(norm, ctx, &why);
        (*evaluations)++;
    }
    if (why.code == FATHOM_E_INTERNAL)
        goto out; /* out of memory inside the codec: not the point's answer */
    if (resp) {
        json_t *rate = json_object_get(json_object_get(resp, "summary"), "sample_rate");
        p->status = 200;
        p->fits = json_is_true(json_object_get(resp, "fits_memory"));
        p->has_sample_rate = json_is_number(rate);
        p->sample_rate = json_number_value(rate);
    } else {
        resp = json_pack("{s:o}", "error", codec_error_encode(&why));
        p->status = fathom_code_http_status(why.code);
        p->fits = false;
    }
    rc = sweep_point_texts(p, values, resp);
out:
    json_decref(body);
    json_decref(values);
    json_decref(norm);
    json_decref(resp);
    return rc ? fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory") : 0;
}

static int run_unit(const sweep_run_t *run, const codec_ctx_t *ctx, size_t unit,
                    volatile int *cancel, sweep_unit_t *out, fathom_error_t *err)
{
    const grid_run_t *g = run_of(run);
    uint64_t first = (uint64_t)unit * GRID_POINTS_PER_UNIT;
    uint64_t last = first + GRID_POINTS_PER_UNIT;
    if (last > g->npoints)
        last = g->npoints;
    out->points = calloc((size_t)(last - first), sizeof *out->points);
    if (!out->points)
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    for (uint64_t idx = first; idx < last; idx++) {
        if (cancel && __atomic_load_n(cancel, __ATOMIC_RELAXED))
            return fathom_error_set(err, FATHOM_E_CANCELLED, NULL, "cancelled");
        if (run_point(g->spec, ctx, idx, &out->points[out->npoints++], &out->evaluations, err))
            return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------- the result ---- */

typedef struct {
    const json_t *spec;
    json_t *best;
    int failed;
} best_walk_t;

static int add_best(void *ctx, const sweep_point_t *p)
{
    best_walk_t *w = ctx;
    json_t *resp = json_loads(p->response, 0, NULL), *body = NULL, *values = NULL;
    int bad = !resp || codec_grid_point(w->spec, (uint64_t)p->index, &body, &values);
    json_t *e = bad ? NULL
                    : json_pack("{s:I,s:o*,s:O*,s:O*,s:O*}", "index", (json_int_t)p->index,
                                "values", values, "execution", json_object_get(body, "execution"),
                                "summary", json_object_get(resp, "summary"), "stats",
                                json_object_get(resp, "stats"));
    if (bad)
        json_decref(values);
    json_decref(body);
    json_decref(resp);
    return codec_sweep_gather(w->best, e, &w->failed);
}

/* The top_n points that fit, fastest first, and the counts: the same before the end. */
static json_t *result(const sweep_run_t *run, const sweep_state_t *st, const sweep_points_t *pts,
                      int flags, fathom_error_t *err)
{
    (void)st;
    (void)flags;
    const grid_run_t *g = run_of(run);
    best_walk_t w = {g->spec, json_array(), 0};
    long long stored = 0, good = 0;
    if (!w.best)
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory"), NULL;
    if (pts->best(pts->self, codec_grid_top_n(g->spec), add_best, &w, &stored, &good, err)) {
        json_decref(w.best);
        return NULL;
    }
    json_t *doc = w.failed ? NULL
                           : json_pack("{s:o,s:{s:I,s:I,s:I,s:I}}", "best", w.best, "counts",
                                       "total", (json_int_t)stored, "good", (json_int_t)good,
                                       "bad", (json_int_t)(stored - good), "points",
                                       (json_int_t)g->npoints);
    if (w.failed)
        json_decref(w.best);
    if (!doc)
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory listing the best points");
    return doc;
}

/* ------------------------------------------------------------------- downloads ---- */

static int csv_head(const sweep_run_t *run, const json_t *first, json_t *names)
{
    (void)first;
    const grid_run_t *g = run_of(run);
    const char *fixed[] = {"status", "fits_memory", "error"};
    int rc = json_array_append_new(names, json_string("index"));
    for (int i = 0; i < g->naxes && !rc; i++)
        rc = json_array_append_new(names, json_string(g->axes[i]));
    for (int i = 0; i < 3 && !rc; i++)
        rc = json_array_append_new(names, json_string(fixed[i]));
    return rc ? rc : codec_sweep_stat_names(names);
}

/* A point: its index, its value on each axis, its status, whether it fits, its refusal's
 * message, its statistics. */
static int csv_row(const sweep_run_t *run, const json_t *first, const json_t *row, json_t *cells)
{
    (void)first;
    const grid_run_t *g = run_of(run);
    const json_t *values = json_object_get(row, "values");
    int rc = json_array_append_new(cells, codec_sweep_cell(json_object_get(row, "index")));
    for (int i = 0; i < g->naxes && !rc; i++)
        rc = json_array_append_new(cells, codec_sweep_cell(json_object_get(values, g->axes[i])));
    if (!rc)
        rc = json_array_append_new(cells, codec_sweep_cell(json_object_get(row, "status")));
    if (!rc)
        rc = json_array_append_new(cells, codec_sweep_cell(json_object_get(row, "fits_memory")));
    if (!rc)
        rc = json_array_append_new(
            cells, codec_sweep_cell(json_object_get(json_object_get(row, "error"), "message")));
    return rc ? rc : codec_sweep_stat_cells(json_object_get(row, "stats"), cells);
}

const sweep_kind_t codec_grid_kind = {
    .name = "grid",
    .keeps = SWEEP_KEEPS_POINTS,
    .normalize = codec_grid_normalize,
    .open = open_run,
    .close = close_run,
    .units = units,
    .run_unit = run_unit,
    .result = result,
    .csv_head = csv_head,
    .csv_row = csv_row,
};

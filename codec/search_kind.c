/* search_kind.c — the "optimal_execution" row of the sweep-kind table (sweep_kind.h): Calculon's
 * optimal-execution search as sweep units. A unit is one of the search plan's work units
 * (core/search); units merge into a search_result_t (the best executions, the counts, the
 * sample), which is the state a checkpoint keeps.
 *
 * The checkpoint (encode_state / decode_state) is this file's own format, not the response:
 *   state  {"format": "fathom.search.state", "version": 1,
 *           "counts": {"total", "good", "bad", "pruned", "estimated"},
 *           "best": [{"unit", "index", "execution"}, …best first]}
 *   sample [[sample_rate, mem_tier1_bytes, mem_tier2_bytes, unit, index], …]
 * A best entry keeps its execution and enumeration position only: its statistics are estimated
 * again when read back (deterministic, so identical). Checkpoints written before the format had
 * a version (the response's best list with "unit" and "index" added to each entry, and
 * counts.estimated) are read too, so a sweep running across an upgrade resumes. */
#include <stdlib.h>
#include <string.h>

#include "llm.h"
#include "llm_codec.h"
#include "search_codec.h"
#include "search_sweep_codec.h"
#include "sweep_kind.h"

#define STATE_FORMAT "fathom.search.state"
#define STATE_VERSION 1

typedef struct {
    search_request_t req;
    search_plan_t *plan;
} search_run_t;

static const search_run_t *run_of(const sweep_run_t *r)
{
    return (const search_run_t *)r;
}

static search_result_t *state_of(sweep_state_t *s)
{
    return (search_result_t *)s;
}

static json_t *normalize(const json_t *body, const codec_ctx_t *ctx, const sweep_limits_t *limits,
                         uint64_t *size, fathom_error_t *err)
{
    json_t *norm = codec_search_normalize(body, ctx, err);
    if (!norm)
        return NULL;
    search_request_t req;
    search_plan_t *plan = NULL;
    if (codec_search_decode(norm, ctx, &req, err) || !(plan = search_plan_create(&req, err))) {
        json_decref(norm);
        return NULL;
    }
    *size = search_plan_max_executions(plan);
    search_plan_free(plan);
    /* a search with nothing to walk would finish "done" with an empty best list: refused as
     * the plan refuses a count no layout can use, naming the option that rules them all out */
    uint64_t exhaustive, two_stage;
    codec_search_size(&req, &exhaustive, &two_stage);
    if (exhaustive == 0 && codec_search_no_layout(&req, err)) {
        json_decref(norm);
        return NULL;
    }
    if (*size > limits->max_search_executions) {
        fathom_error_set(err, FATHOM_E_LIMIT_EXCEEDED, "num_procs",
                         "this search would try %llu executions; the limit of this server is "
                         "%llu (--max-search-executions)",
                         (unsigned long long)*size,
                         (unsigned long long)limits->max_search_executions);
        json_decref(norm);
        return NULL;
    }
    return norm;
}

static sweep_run_t *open_run(const json_t *spec, const codec_ctx_t *ctx, fathom_error_t *err)
{
    search_run_t *r = calloc(1, sizeof *r);
    if (!r)
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory"), NULL;
    if (codec_search_decode(spec, ctx, &r->req, err) ||
        !(r->plan = search_plan_create(&r->req, err))) {
        free(r);
        return NULL;
    }
    return (sweep_run_t *)r;
}

static void close_run(sweep_run_t *run)
{
    search_run_t *r = (search_run_t *)run;
    if (r)
        search_plan_free(r->plan);
    free(r);
}

static size_t units(const sweep_run_t *run)
{
    return search_plan_units(run_of(run)->plan);
}

static int run_unit(const sweep_run_t *run, const codec_ctx_t *ctx, size_t unit,
                    volatile int *cancel, sweep_unit_t *out, fathom_error_t *err)
{
    (void)ctx;
    search_result_t *acc = state_of(out->state);
    uint64_t before = acc->estimated;
    search_unit_status_t st = search_run_unit(run_of(run)->plan, unit, acc, cancel);
    out->evaluations += acc->estimated - before;
    if (st == SEARCH_UNIT_CANCELLED)
        return fathom_error_set(err, FATHOM_E_CANCELLED, NULL, "cancelled");
    return 0;
}

static sweep_state_t *state_new(const sweep_run_t *run, fathom_error_t *err)
{
    search_result_t *res = malloc(sizeof *res);
    if (!res)
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory"), NULL;
    if (search_result_init(res, run_of(run)->req.options.top_n, err)) {
        free(res);
        return NULL;
    }
    return (sweep_state_t *)res;
}

static void state_free(sweep_state_t *st)
{
    if (!st)
        return;
    search_result_close(state_of(st));
    free(st);
}

static void merge(const sweep_run_t *run, sweep_state_t *into, const sweep_state_t *from)
{
    (void)run;
    search_merge(state_of(into), (const search_result_t *)from);
}

/* ------------------------------------------------------------------ the checkpoint ---- */

static char *dump(json_t *doc)
{
    char *text = doc ? json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
    json_decref(doc);
    return text;
}

static json_t *state_encode(const search_result_t *res)
{
    json_t *best = json_array();
    for (int i = 0; best && i < res->n_best; i++) {
        const search_entry_t *e = &res->best[i];
        if (json_array_append_new(best, json_pack("{s:I,s:I,s:o}", "unit", (json_int_t)e->unit,
                                                  "index", (json_int_t)e->index, "execution",
                                                  codec_llm_execution_encode(&e->execution)))) {
            json_decref(best);
            best = NULL;
        }
    }
    return json_pack("{s:s,s:i,s:{s:I,s:I,s:I,s:I,s:I},s:o*}", "format", STATE_FORMAT,
                     "version", STATE_VERSION, "counts", "total", (json_int_t)res->total, "good",
                     (json_int_t)res->good, "bad", (json_int_t)res->bad, "pruned",
                     (json_int_t)res->pruned, "estimated", (json_int_t)res->estimated, "best",
                     best);
}

static int encode_state(const sweep_run_t *run, const sweep_state_t *st, char **state,
                        char **sample, fathom_error_t *err)
{
    (void)run;
    const search_result_t *res = (const search_result_t *)st;
    *state = dump(state_encode(res));
    *sample = dump(codec_search_points_encode(res, true));
    if (*state && *sample)
        return 0;
    free(*state);
    free(*sample);
    *state = *sample = NULL;
    return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory encoding a checkpoint");
}

static int bad_state(fathom_error_t *err, const char *what)
{
    return fathom_error_set(err, FATHOM_E_INVALID_JSON, NULL,
                            "the stored search checkpoint is malformed: %s", what);
}

/* A non-negative integer member of obj, at most max. */
static int count_of(const json_t *obj, const char *key, uint64_t max, uint64_t *out)
{
    const json_t *v = json_object_get(obj, key);
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        (uint64_t)json_integer_value(v) > max)
        return -1;
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

static const char *const counts_keys[] = {"total", "good", "bad", "pruned", "estimated", NULL};

static int decode_counts(const json_t *counts, bool strict, search_result_t *res,
                         fathom_error_t *err)
{
    uint64_t *dst[] = {&res->total, &res->good, &res->bad, &res->pruned, &res->estimated};
    if (!json_is_object(counts) || (strict && json_object_size(counts) != 5))
        return bad_state(err, "counts");
    for (int i = 0; counts_keys[i]; i++)
        if (count_of(counts, counts_keys[i], UINT64_MAX >> 1, dst[i]))
            return bad_state(err, counts_keys[i]);
    return 0;
}

/* The best list: each entry's execution decoded and estimated again. */
static int decode_best(const search_request_t *req, const json_t *best, bool strict,
                       search_result_t *res, fathom_error_t *err)
{
    if (!json_is_array(best) || json_array_size(best) > (size_t)res->top_n)
        return bad_state(err, "best");
    size_t i;
    json_t *e;
    json_array_foreach(best, i, e)
    {
        search_entry_t *entry = &res->best[i];
        uint64_t unit, index;
        if (!json_is_object(e) || (strict && json_object_size(e) != 3) ||
            count_of(e, "unit", UINT32_MAX, &unit) || count_of(e, "index", UINT32_MAX, &index))
            return bad_state(err, "a best entry");
        if (codec_llm_execution_decode(json_object_get(e, "execution"), "execution",
                                       &entry->execution, err) ||
            llm_estimate(&req->model, &req->system, &entry->execution, &entry->result, err))
            return -1;
        entry->unit = (uint32_t)unit;
        entry->index = (uint32_t)index;
        res->n_best = (int)i + 1;
    }
    return 0;
}

static int decode_sample(const char *text, search_result_t *res, fathom_error_t *err)
{
    json_t *rows = json_loads(text, 0, NULL);
    int rc = 0;
    size_t i;
    json_t *row;
    if (!json_is_array(rows) || json_array_size(rows) > SEARCH_SAMPLE_MAX)
        rc = bad_state(err, "the sample");
    res->n_points = 0;
    json_array_foreach(rows, i, row)
    {
        uint64_t pos[2];
        bool numbers = json_array_size(row) == 5;
        for (size_t k = 0; numbers && k < 3; k++)
            numbers = json_is_number(json_array_get(row, k));
        for (size_t k = 0; numbers && k < 2; k++) {
            const json_t *v = json_array_get(row, 3 + k);
            numbers = json_is_integer(v) && json_integer_value(v) >= 0 &&
                      json_integer_value(v) <= UINT32_MAX;
            pos[k] = numbers ? (uint64_t)json_integer_value(v) : 0;
        }
        if (!numbers) {
            rc = bad_state(err, "a sample row");
            break;
        }
        const search_point_t p = {json_number_value(json_array_get(row, 0)),
                                  json_number_value(json_array_get(row, 1)),
                                  json_number_value(json_array_get(row, 2)), (uint32_t)pos[0],
                                  (uint32_t)pos[1]};
        search_result_add_point(res, &p);
    }
    json_decref(rows);
    return rc;
}

static int decode_state(const sweep_run_t *run, const char *state, const char *sample,
                        sweep_state_t *st, fathom_error_t *err)
{
    search_result_t *res = state_of(st);
    json_error_t jerr;
    json_t *doc = json_loads(state, 0, &jerr);
    int rc = -1;
    if (!doc) {
        if (json_error_code(&jerr) == json_error_out_of_memory)
            return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
        return bad_state(err, "not JSON");
    }
    /* Version 1 has exactly its members; a checkpoint from before versions (no "version") is
     * the response's document with positions added, read for counts and best only. */
    const json_t *version = json_object_get(doc, "version");
    bool strict = version != NULL;
    if (!json_is_object(doc))
        bad_state(err, "not an object");
    else if (strict && (!json_is_integer(version) || json_integer_value(version) != STATE_VERSION))
        fathom_error_set(err, FATHOM_E_INVALID_JSON, NULL,
                         "the stored search checkpoint has version %s; this fathomd reads "
                         "version %d",
                         json_is_integer(version) ? "another" : "no valid", STATE_VERSION);
    else if (strict && (json_object_size(doc) != 4 ||
                        !json_is_string(json_object_get(doc, "format")) ||
                        strcmp(json_string_value(json_object_get(doc, "format")), STATE_FORMAT)))
        bad_state(err, "format");
    else if (!strict && json_object_get(doc, "format"))
        bad_state(err, "a format without a version");
    else if (decode_counts(json_object_get(doc, "counts"), strict, res, err) == 0 &&
             decode_best(&run_of(run)->req, json_object_get(doc, "best"), strict, res, err) ==
                 0 &&
             (!sample || decode_sample(sample, res, err) == 0))
        rc = 0;
    json_decref(doc);
    return rc;
}

/* The public rows of the sample: without their enumeration positions. */
static json_t *sample(const char *text, fathom_error_t *err)
{
    json_t *rows = text ? json_loads(text, 0, NULL) : json_array();
    if (!json_is_array(rows)) {
        json_decref(rows);
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "cannot read the stored sample"),
               NULL;
    }
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r)
    {
        while (json_array_size(r) > 3)
            json_array_remove(r, 3);
    }
    return rows;
}

static json_t *result(const sweep_run_t *run, const sweep_state_t *st, const sweep_points_t *pts,
                      int flags, fathom_error_t *err)
{
    (void)pts;
    json_t *doc = codec_search_result_encode(&run_of(run)->req, (const search_result_t *)st);
    if (!doc)
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory"), NULL;
    if (!(flags & SWEEP_RESULT_SAMPLE))
        json_object_del(doc, "points"); /* its own column, and its own view (/points) */
    return doc;
}

/* ------------------------------------------------------------------- downloads ---- */

static int csv_head(const sweep_run_t *run, const json_t *first, json_t *names)
{
    (void)run;
    const char *key;
    json_t *unused;
    int rc = json_array_append_new(names, json_string("rank"));
    json_object_foreach(json_object_get(first, "execution"), key, unused)
    {
        if (!rc)
            rc = json_array_append_new(names, json_string(key));
    }
    return rc ? rc : codec_sweep_stat_names(names);
}

/* A row: its rank, its execution (the first row's members name the columns), its statistics. */
static int csv_row(const sweep_run_t *run, const json_t *first, const json_t *row, json_t *cells)
{
    (void)run;
    const json_t *exec = json_object_get(row, "execution");
    const char *key;
    json_t *unused;
    int rc = json_array_append(cells, json_object_get(row, "rank"));
    json_object_foreach(json_object_get(first, "execution"), key, unused)
    {
        if (!rc)
            rc = json_array_append_new(cells, codec_sweep_cell(json_object_get(exec, key)));
    }
    return rc ? rc : codec_sweep_stat_cells(json_object_get(row, "stats"), cells);
}

const sweep_kind_t codec_search_kind = {
    .name = "optimal_execution",
    .keeps = SWEEP_KEEPS_STATE,
    .normalize = normalize,
    .open = open_run,
    .close = close_run,
    .units = units,
    .run_unit = run_unit,
    .state_new = state_new,
    .state_free = state_free,
    .merge = merge,
    .encode_state = encode_state,
    .decode_state = decode_state,
    .sample = sample,
    .result = result,
    .csv_head = csv_head,
    .csv_row = csv_row,
};

/* ------------------------------------------------- a decoded request, on threads ---- */

int codec_search_run_request(const search_request_t *req, int threads, volatile int *cancel,
                             sweep_progress_fn progress, void *progress_user,
                             search_result_t *out, fathom_error_t *err)
{
    search_run_t run = {.req = *req};
    if (!(run.plan = search_plan_create(req, err)))
        return -1;
    int rc = codec_sweep_run_units(&codec_search_kind, (const sweep_run_t *)&run, NULL, threads,
                                   cancel, progress, progress_user, (sweep_state_t *)out, NULL,
                                   NULL, err);
    search_plan_free(run.plan);
    return rc;
}

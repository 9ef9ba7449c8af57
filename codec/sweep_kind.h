/* sweep_kind.h — the table of sweep kinds: what a sweep of kind K is, to the server's scheduler,
 * its replicas and the CLI alike (codec/endpoint.h is the same idea for synchronous endpoints).
 *
 * A sweep is a normalized spec (its id is the spec's config hash) cut into units that run
 * independently, on any thread, in any order, on any replica. A kind says how, in one row:
 * normalize (the POST /v1/sweep body, strictly), open (the stored spec decoded once, shared
 * read-only by every unit), units, run_unit, and how results are kept, which is one of two ways:
 *  - SWEEP_KEEPS_POINTS (grid, plan): a unit makes points (sweep_point_t: a grid point, a plan
 *    candidate), stored as they are merged; the result is made from the stored points at the end,
 *    and a download lists every point.
 *  - SWEEP_KEEPS_STATE (optimal_execution): a unit's results merge into one state (the best
 *    executions, the counts, a sample), checkpointed whole by encode_state in a format of the
 *    kind's own — versioned, read back by a strict decode_state, never the public response — and
 *    a download lists the result's ranked best. A unit's state travels the same way when another
 *    replica runs it (store_unit_finish).
 * Runners (server/sweeps.c on libuv, codec_sweep_run here on pthreads) call only these functions:
 * none of them knows a kind by name.
 *
 * Anatomy of a new kind: codec/<module>_<name>_kind.c defining the row
 *   const sweep_kind_t codec_<name>_kind = {.name = "<name>", .keeps = ..., .normalize = ..., …};
 * its declaration below and its line in the table (sweep_kind.c), a request schema
 * (schemas/sweep_<name>.request.json, listed in sweep.request.json) and a test. Nothing in the
 * server changes. tests/unit/server/test_sweep_kinds.c runs a made-up kind through the
 * scheduler (registered with sweep_kind_register). */
#ifndef FATHOM_SWEEP_KIND_H
#define FATHOM_SWEEP_KIND_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "endpoint.h"
#include "fathom_error.h"

/* A point as a unit makes it and the store keeps it. Made by a unit, its texts are owned
 * (sweep_points_free); read from the store, they are borrowed for the duration of a callback. */
typedef struct {
    long long index;
    char *values;   /* JSON object: what varies at this point (a grid's axes; a candidate's system
                     * and GPU count) */
    int status;     /* the HTTP status the point's own answer has (200, or its refusal's) */
    bool fits;
    bool has_sample_rate;
    double sample_rate; /* what the best points are ranked by */
    char *response; /* JSON: the point's answer, or {"error": {...}} */
} sweep_point_t;

void sweep_points_free(sweep_point_t *points, size_t n);
/* Sets p's texts as the store keeps them (values with sorted keys, response with reals to 17
 * digits) from values and response (borrowed; either may be NULL, when memory ran out making
 * it). 0, or -1 when a text is missing (memory ran out). */
int sweep_point_texts(sweep_point_t *p, const json_t *values, const json_t *response);

/* Reads the stored points of one sweep (the server's store, or the CLI's memory). fn's point is
 * valid during the call only; fn returning non-zero stops early. */
typedef int (*sweep_point_fn)(void *ctx, const sweep_point_t *p);
typedef struct {
    void *self;
    /* Up to max points with index >= first, in index order. 0, or -1 with err. */
    int (*page)(void *self, long long first, long long max, sweep_point_fn fn, void *ctx,
                fathom_error_t *err);
    /* The top_n points that fit, highest sample_rate first (ties by index), and the counts of
     * points stored and of those that fit. 0, or -1 with err. */
    int (*best)(void *self, int top_n, sweep_point_fn fn, void *ctx, long long *stored,
                long long *good, fathom_error_t *err);
} sweep_points_t;

/* A server's limits on what one sweep may ask (its --max-* options). */
typedef struct {
    uint64_t max_grid_points;       /* refuse grids with more points (limit_exceeded) */
    uint64_t max_search_executions; /* refuse searches that would try more */
} sweep_limits_t;

typedef struct sweep_run sweep_run_t;     /* a kind's opened spec (opaque: the kind's own) */
typedef struct sweep_state sweep_state_t; /* a SWEEP_KEEPS_STATE kind's merged results */

typedef enum { SWEEP_KEEPS_POINTS, SWEEP_KEEPS_STATE } sweep_keeps_t;

/* A CSV cell made of a row's value (which may be NULL): a new reference, NULL when memory ran
 * out. */
typedef json_t *(*sweep_cell_fn)(json_t *v);

/* What one unit made. */
typedef struct {
    sweep_state_t *state;  /* KEEPS_STATE: the caller's state; the unit's results merge into it */
    sweep_point_t *points; /* KEEPS_POINTS: the unit's points, in index order (owned) */
    size_t npoints;
    uint64_t evaluations;  /* model evaluations the unit made are added here */
} sweep_unit_t;

/* result's flags. */
enum {
    SWEEP_RESULT_FINAL = 1,  /* every unit is merged: the finished sweep's document (else the
                              * answer so far, for a status) */
    SWEEP_RESULT_SAMPLE = 2, /* KEEPS_STATE: include the sample as "points" (the CLI's answer) */
};

typedef struct sweep_kind {
    const char *name; /* the body's "kind"; stored with each sweep */
    sweep_keeps_t keeps;

    /* Decodes a POST /v1/sweep body strictly (field errors name paths inside it) and returns
     * its normalized spec (new reference); *size is what the sweep evaluates at most (points,
     * executions, candidates). NULL with err. */
    json_t *(*normalize)(const json_t *body, const codec_ctx_t *ctx, const sweep_limits_t *limits,
                         uint64_t *size, fathom_error_t *err);
    /* Opens a normalized spec (borrowed: it outlives the run). NULL with err. */
    sweep_run_t *(*open)(const json_t *spec, const codec_ctx_t *ctx, fathom_error_t *err);
    void (*close)(sweep_run_t *run);
    size_t (*units)(const sweep_run_t *run);
    /* Runs unit `unit` on the calling thread into *out (see sweep_unit_t). Polls *cancel (may be
     * NULL) often. 0; -1 with err: FATHOM_E_CANCELLED once *cancel is set, FATHOM_E_INTERNAL when
     * memory ran out (then *out may hold part of the unit: the caller frees it and runs the unit
     * again). A point the model refuses is a point with its error, not a failure. */
    int (*run_unit)(const sweep_run_t *run, const codec_ctx_t *ctx, size_t unit,
                    volatile int *cancel, sweep_unit_t *out, fathom_error_t *err);

    /* KEEPS_STATE only (NULL otherwise). A state with nothing merged (NULL with err). */
    sweep_state_t *(*state_new)(const sweep_run_t *run, fathom_error_t *err);
    void (*state_free)(sweep_state_t *st);
    /* Merges `from` into `into`; the outcome does not depend on the order units are merged. */
    void (*merge)(const sweep_run_t *run, sweep_state_t *into, const sweep_state_t *from);
    /* The checkpoint: *state (the merged results) and *sample (the plotted sample, a column of
     * its own: /points reads it without the rest), malloc'd JSON texts. 0, or -1 with err. */
    int (*encode_state)(const sweep_run_t *run, const sweep_state_t *st, char **state,
                        char **sample, fathom_error_t *err);
    /* Reads a checkpoint back into st (fresh from state_new), strictly: a text not in a format
     * this kind wrote is refused (FATHOM_E_INVALID_JSON naming what is wrong). sample may be NULL
     * (the state without its sample). 0, or -1 with err. */
    int (*decode_state)(const sweep_run_t *run, const char *state, const char *sample,
                        sweep_state_t *st, fathom_error_t *err);
    /* The public rows of a stored sample (GET /v1/sweep/<id>/points), new reference; NULL with
     * err. A kind without a sample leaves this NULL (the points view answers 404). */
    json_t *(*sample)(const char *sample, fathom_error_t *err);

    /* The answer {"best": [...], "counts": {...}, and any members of the kind's own} from the
     * merged state (KEEPS_STATE; NULL otherwise) and the stored points (KEEPS_POINTS). flags:
     * SWEEP_RESULT_*. A status before the end may get an object without best or counts (then
     * shown empty). New reference, or NULL with err. */
    json_t *(*result)(const sweep_run_t *run, const sweep_state_t *st, const sweep_points_t *pts,
                      int flags, fathom_error_t *err);

    /* A download's CSV (GET /v1/sweep/<id>/results?format=csv): the header's column names and
     * one row's cells, appended to the arrays given. A row is what the JSON download lists: for
     * KEEPS_POINTS {"index","values","status", and the point's response's members}, for
     * KEEPS_STATE {"rank", and the best entry's members}. `first` is a KEEPS_STATE download's
     * first row (NULL when it has none, and for KEEPS_POINTS: their columns come from the
     * spec). 0, or -1 when memory ran out. */
    int (*csv_head)(const sweep_run_t *run, const json_t *first, json_t *names);
    int (*csv_row)(const sweep_run_t *run, const json_t *first, const json_t *row, json_t *cells);
    /* Or, for a kind whose CSV is fixed columns (a plan, a serving plan), instead of csv_head and
     * csv_row: the columns (NULL-ended paths into a row, as sweep_row_at reads them) and what a
     * cell is made of a value (NULL: the value as it is, null when absent; else a new reference,
     * NULL when memory ran out). The header and the cells then come from these alone, so such
     * kinds share one way of reading a row rather than each writing the same two callbacks. */
    const char *const *csv_columns;
    sweep_cell_fn csv_cell;
} sweep_kind_t;

extern const sweep_kind_t codec_search_kind; /* "optimal_execution": codec/search_kind.c */
extern const sweep_kind_t codec_grid_kind;   /* "grid": codec/search_grid_kind.c */
extern const sweep_kind_t codec_plan_kind;   /* "plan": codec/search_plan_kind.c */
extern const sweep_kind_t codec_serving_plan_kind; /* "serving_plan": codec/serving_plan_kind.c */

/* The table (sweep_kind.c): its rows, NULL-terminated, and a lookup (NULL when unknown). */
const sweep_kind_t *const *sweep_kinds(size_t *count);
const sweep_kind_t *sweep_kind_by_name(const char *name);
/* Adds a kind to the table's rows (a test's made-up kind; a program's own): call before any
 * thread reads the table. -1 when its name is taken or the room for added kinds is used up. */
int sweep_kind_register(const sweep_kind_t *kind);

/* Decodes a POST /v1/sweep body: its "kind" picks the row (required; one of the table's names),
 * whose normalize does the rest. NULL with err. */
json_t *codec_sweep_normalize(const json_t *body, const codec_ctx_t *ctx,
                              const sweep_limits_t *limits, const sweep_kind_t **kind,
                              uint64_t *size, fathom_error_t *err);

/* ---- running a whole sweep on this machine's threads (the CLI, benchmarks, tests) ---- */

typedef struct {
    size_t units_done, units_total;
    uint64_t evaluations; /* of the units done */
} sweep_progress_t;

/* Called from the thread that called codec_sweep_run about ten times a second while units run
 * and once at the end. */
typedef void (*sweep_progress_fn)(const sweep_progress_t *progress, void *user);

/* Runs every unit of an opened sweep on `threads` pthreads (1..CODEC_SWEEP_MAX_THREADS). A
 * KEEPS_STATE kind's units merge into `into` (the caller's, from state_new); a KEEPS_POINTS
 * kind's points are handed to *points (index order, *npoints of them; the caller frees them).
 * cancel (may be NULL): once non-zero, every thread stops within a unit's next poll and -1 is
 * returned with FATHOM_E_CANCELLED. 0, or -1 with err. */
#define CODEC_SWEEP_MAX_THREADS 256
int codec_sweep_run_units(const sweep_kind_t *kind, const sweep_run_t *run,
                          const codec_ctx_t *ctx, int threads, volatile int *cancel,
                          sweep_progress_fn progress, void *progress_user, sweep_state_t *into,
                          sweep_point_t **points, size_t *npoints, fathom_error_t *err);

/* Opens a normalized spec, runs it whole (codec_sweep_run_units) and returns its result with
 * `flags` | SWEEP_RESULT_FINAL (new reference). NULL with err. */
json_t *codec_sweep_run(const sweep_kind_t *kind, const json_t *spec, const codec_ctx_t *ctx,
                        int threads, volatile int *cancel, sweep_progress_fn progress,
                        void *progress_user, int flags, fathom_error_t *err);

/* ---- for kinds whose answer is made of all their points (a plan, a serving plan) ---- */

/* The result of such a kind (its `result`, from the stored points): every stored point's
 * response, parsed, in index order, handed to summarize (which returns the kind's block, a new
 * reference, or NULL when memory ran out), as {"best": [] (it ranks otherwise), "counts":
 * {"total": the n points, "good": those whose member `good` is true, "bad"}, member: the block}.
 * Before the end (flags without SWEEP_RESULT_FINAL) only the counts of the points stored so far
 * (`good` from their `fits`, which such a kind sets to the member `good`), as a grid's. New reference, or NULL with err (fewer than n points stored, or memory ran out). */
typedef json_t *(*sweep_summarize_fn)(const void *ctx, json_t *points);
json_t *sweep_result_of_points(const sweep_points_t *pts, size_t n, int flags, const char *good,
                               const char *member, sweep_summarize_fn summarize, const void *ctx,
                               fathom_error_t *err);
/* The value at a CSV column's path in a row ("system", "layout.tensor_par": one level of
 * nesting), or NULL. */
json_t *sweep_row_at(const json_t *row, const char *path);
/* A download's CSV header and one row's cells (see csv_head, csv_row), appended to the arrays
 * given: the kind's callbacks, or its fixed columns (csv_columns) when it has them. What every
 * runner calls. 0, or -1 when memory ran out. */
int sweep_csv_head(const sweep_kind_t *kind, const sweep_run_t *run, const json_t *first,
                   json_t *names);
int sweep_csv_row(const sweep_kind_t *kind, const sweep_run_t *run, const json_t *first,
                  const json_t *row, json_t *cells);

/* A unit that is one point (a plan's candidate): out->points holds a copy of *point (index,
 * status, fits, rank; its texts are ignored) with its texts from values and response (borrowed;
 * either may be NULL, when memory ran out making it). 0, or -1 with err when memory ran out
 * (out may then hold the point: the caller frees it). */
int sweep_unit_one_point(sweep_unit_t *out, const sweep_point_t *point, const json_t *values,
                         const json_t *response, fathom_error_t *err);

/* Points held in memory in index order (codec_sweep_run's), and a reader over them that answers
 * as a store would. The list must outlive the reader. */
typedef struct {
    const sweep_point_t *points;
    size_t n;
} sweep_point_list_t;
sweep_points_t sweep_points_of_list(sweep_point_list_t *list);

#endif

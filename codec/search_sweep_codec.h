/* search_sweep_codec.h — the body of POST /v1/sweep: an optimal-execution search or a grid of
 * estimates, decoded strictly and normalized (its config hash is the sweep's id), and the
 * expansion of a grid into its points.
 *
 * Grid: {"kind":"grid","base":{"model","system","execution"[,"training"]},
 *        "axes":{"<json path>":[values…],…},"top_n":10}
 * `base` is normalized as POST /v1/estimate would (presets resolved, defaults explicit); each axis
 * names a path inside it ("execution.tensor_par", "system.mem1.GiB",
 * "system.networks[0].bandwidth", "model.seq_size") that must exist there. Points are the
 * cartesian product, axes taken in sorted order with the last varying fastest; point i's body
 * is the base with each axis's value set. A point the estimator refuses is recorded with its
 * error; it does not fail the sweep. */
#ifndef FATHOM_SEARCH_SWEEP_CODEC_H
#define FATHOM_SEARCH_SWEEP_CODEC_H

#include <jansson.h>
#include <stdint.h>

#include "endpoint.h"
#include "fathom_error.h"
#include "sweep_kind.h"

#define SWEEP_GRID_MAX_AXES 16
#define SWEEP_GRID_MAX_VALUES 10000 /* per axis */
#define SWEEP_TOP_N_MAX 100

/* Decodes and normalizes a {"kind":"grid"} body (the grid row's normalize, search_grid_kind.c):
 * *size is its point count. NULL with err when refused. */
json_t *codec_grid_normalize(const json_t *body, const codec_ctx_t *ctx,
                             const sweep_limits_t *limits, uint64_t *size, fathom_error_t *err);

/* For a normalized grid spec: its number of points, its top_n, and its axis names in point
 * order (borrowed strings, valid while spec lives; names has room for SWEEP_GRID_MAX_AXES). */
uint64_t codec_grid_size(const json_t *spec);
int codec_grid_top_n(const json_t *spec);
int codec_grid_axes(const json_t *spec, const char **names);

/* Point `index` of a normalized grid spec: *body is an estimate request (new reference) and
 * *values maps each axis to its value here (new reference). 0, or -1 (index out of range or
 * out of memory). */
int codec_grid_point(const json_t *spec, uint64_t index, json_t **body, json_t **values);

/* Downloads' CSV cells shared by the kinds whose rows are estimates (search_kind.c,
 * search_grid_kind.c): an estimate's statistic names in "stats" order, appended to names; a
 * row's statistics in that order, appended to cells; and a value as a cell (v with a reference
 * added, or null when absent: an empty cell). 0, or -1 when memory ran out. */
int codec_sweep_stat_names(json_t *names);
/* For a walk over stored points (a sweep_point_fn) that gathers them into array: appends item
 * (reference stolen, NULL when making it ran out of memory) and returns 0 to go on; on failure
 * sets *failed and returns 1 to stop the walk. */
int codec_sweep_gather(json_t *array, json_t *item, int *failed);
int codec_sweep_stat_cells(const json_t *stats, json_t *cells);
json_t *codec_sweep_cell(json_t *v);

#endif

/* scaling_fit_codec.c — POST /v1/scaling/fit: loss-versus-compute runs in, the calculator's two
 * fits (loss_fit, param_fit) and the compute frontier out.
 *
 * The body holds exactly one of "runs" ([{"name","params","points":[[x,loss],…]}…], x in
 * FLOs/86400) or "csv" (the calculator's CSV text). Normalization turns a CSV into the runs array
 * and makes every run's name and parameter count explicit, so the same data hashes alike in both
 * forms; errors of the fit itself therefore name "runs". */
#include "scaling_codec.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "endpoint.h"
#include "json_read.h"

/* Largest parameter count a run may declare or derive. */
#define RUN_MAX_PARAMS 1e16

#define RUN_NAME_MAX 256

/* ---- CSV ---- */

/* One field of a CSV line starting at *pos (RFC 4180 quoting, "" inside quotes); copies it,
 * truncated to cap - 1 bytes, into out and advances *pos past the separator. Returns 1 when the
 * line goes on, 0 at its end, -1 on an unterminated quote. */
static int csv_field(const char *text, size_t len, size_t *pos, char *out, size_t cap,
                     size_t *flen)
{
    size_t i = *pos, n = 0;
    bool quoted = i < len && text[i] == '"';
    if (quoted)
        i++;
    for (;;) {
        if (i >= len) {
            if (quoted)
                return -1;
            break;
        }
        char ch = text[i];
        if (quoted && ch == '"') {
            if (i + 1 < len && text[i + 1] == '"') {
                i++;
            } else {
                quoted = false;
                i++;
                continue;
            }
        } else if (!quoted && (ch == ',' || ch == '\n' || ch == '\r')) {
            break;
        }
        if (n + 1 < cap)
            out[n++] = ch;
        i++;
    }
    out[n] = '\0';
    *flen = n;
    int more = i < len && text[i] == ',';
    if (i < len && text[i] == '\r')
        i++;
    if (i < len)
        i++; /* the ',' or '\n' */
    *pos = i;
    return more;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* Parses a number cell strictly (the whole cell); "undefined" and "" are no value (returns 0). */
static int csv_number(const char *cell, double *out)
{
    if (cell[0] == '\0' || strcmp(cell, "undefined") == 0)
        return 0;
    char *end;
    errno = 0;
    double v = strtod(cell, &end);
    if (*end != '\0' || errno == ERANGE || !isfinite(v))
        return -1;
    *out = v;
    return 1;
}

/* A CSV being read into runs: the text and where the reader is, the header's columns (x_col
 * is global_step's; col_run[c] is column c's run index + 1, or 0) and the runs so far. */
typedef struct {
    const char *text, *field;
    size_t len, pos, ncols, x_col;
    int *col_run;
    json_t *runs;
    fathom_error_t *err;
} csv_reader_t;

/* Header: "global_step" is x; each "<name> - valid_loss" (or any "…loss" column, as the
 * calculator takes every key containing "loss") is a run. */
static int csv_header(csv_reader_t *r)
{
    char cell[RUN_NAME_MAX + 32];
    size_t flen;
    for (int more = 1; more == 1;) {
        if (r->ncols == SCALING_CSV_MAX_COLUMNS)
            return fathom_error_set(r->err, FATHOM_E_LIMIT_EXCEEDED, r->field,
                                    "has more than %d columns", SCALING_CSV_MAX_COLUMNS);
        more = csv_field(r->text, r->len, &r->pos, cell, sizeof cell, &flen);
        if (more < 0)
            return fathom_error_set(r->err, FATHOM_E_INVALID_FIELD, r->field,
                                    "header: unterminated quote");
        if (strcmp(cell, "global_step") == 0 && r->x_col == SIZE_MAX) {
            r->x_col = r->ncols;
        } else if (strstr(cell, "loss")) {
            if (ends_with(cell, " - valid_loss"))
                cell[strlen(cell) - strlen(" - valid_loss")] = '\0';
            json_t *run = json_pack("{s:s,s:[]}", "name", cell, "points");
            if (!run || json_array_append_new(r->runs, run))
                return fathom_error_set(r->err, FATHOM_E_INTERNAL, NULL, "out of memory");
            r->col_run[r->ncols] = (int)json_array_size(r->runs);
        }
        r->ncols++;
    }
    if (r->x_col == SIZE_MAX)
        return fathom_error_set(r->err, FATHOM_E_INVALID_FIELD, r->field,
                                "has no \"global_step\" column");
    if (json_array_size(r->runs) == 0)
        return fathom_error_set(r->err, FATHOM_E_INVALID_FIELD, r->field,
                                "has no \"… - valid_loss\" column");
    return 0;
}

/* One data row (the nrows-th) into row[] and has[] (1: a number, 0: no value). */
static int csv_row(csv_reader_t *r, size_t nrows, double *row, signed char *has)
{
    char cell[RUN_NAME_MAX + 32];
    size_t flen, c = 0;
    int rc = 0;
    for (int more = 1; more == 1 && rc == 0; c++) {
        more = csv_field(r->text, r->len, &r->pos, cell, sizeof cell, &flen);
        if (more < 0 || c >= r->ncols)
            return fathom_error_set(r->err, FATHOM_E_INVALID_FIELD, r->field, "row %zu: %s",
                                    nrows,
                                    more < 0 ? "unterminated quote"
                                             : "more cells than the header");
        int got = csv_number(cell, &row[c]);
        if (got < 0)
            rc = fathom_error_set(r->err, FATHOM_E_INVALID_FIELD, r->field,
                                  "row %zu column %zu: \"%.32s\" is not a number", nrows, c + 1,
                                  cell);
        has[c] = (signed char)got;
    }
    for (; c < r->ncols; c++)
        has[c] = 0;
    return rc;
}

/* The data rows: each row's loss cells become points of their runs at the row's x. */
static int csv_rows(csv_reader_t *r)
{
    double *row = malloc(r->ncols * sizeof *row);
    signed char *has = malloc(r->ncols);
    if (!row || !has) {
        free(row);
        free(has);
        return fathom_error_set(r->err, FATHOM_E_INTERNAL, NULL, "out of memory");
    }
    size_t nrows = 0, npoints = 0;
    int rc = 0;
    while (r->pos < r->len && rc == 0) {
        if (r->text[r->pos] == '\n' || r->text[r->pos] == '\r') { /* blank line */
            r->pos++;
            continue;
        }
        if (++nrows > SCALING_CSV_MAX_ROWS) {
            rc = fathom_error_set(r->err, FATHOM_E_LIMIT_EXCEEDED, r->field,
                                  "has more than %d rows", SCALING_CSV_MAX_ROWS);
            break;
        }
        if ((rc = csv_row(r, nrows, row, has)) != 0)
            break;
        if (!has[r->x_col])
            continue; /* no compute on this row: none of its cells can be placed */
        for (size_t k = 0; k < r->ncols && rc == 0; k++) {
            if (!r->col_run[k] || !has[k])
                continue;
            if (++npoints > SCALING_FIT_MAX_POINTS) {
                rc = fathom_error_set(r->err, FATHOM_E_LIMIT_EXCEEDED, r->field,
                                      "has more than %d points", SCALING_FIT_MAX_POINTS);
                break;
            }
            json_t *pts =
                json_object_get(json_array_get(r->runs, (size_t)r->col_run[k] - 1), "points");
            if (json_array_append_new(pts, json_pack("[f,f]", row[r->x_col], row[k])))
                rc = fathom_error_set(r->err, FATHOM_E_INTERNAL, NULL, "out of memory");
        }
    }
    free(row);
    free(has);
    return rc;
}

json_t *codec_scaling_csv_to_runs(const char *text, size_t len, const char *field,
                                  fathom_error_t *err)
{
    if (len > SCALING_CSV_MAX_BYTES) {
        fathom_error_set(err, FATHOM_E_LIMIT_EXCEEDED, field, "is %zu bytes; the limit is %d",
                         len, SCALING_CSV_MAX_BYTES);
        return NULL;
    }
    csv_reader_t r = {.text = text, .field = field, .len = len, .x_col = SIZE_MAX, .err = err};
    r.runs = json_array();
    r.col_run = calloc(SCALING_CSV_MAX_COLUMNS, sizeof *r.col_run);
    if (!r.runs || !r.col_run) {
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    } else if (csv_header(&r) == 0 && csv_rows(&r) == 0) {
        /* A column with no value at all is no run (the calculator drops short runs anyway). */
        for (size_t i = json_array_size(r.runs); i-- > 0;)
            if (json_array_size(json_object_get(json_array_get(r.runs, i), "points")) == 0)
                json_array_remove(r.runs, i);
        free(r.col_run);
        return r.runs;
    }
    free(r.col_run);
    json_decref(r.runs);
    return NULL;
}

/* ---- request ---- */

static const char *const body_keys[] = {"runs", "csv", NULL};
static const char *const run_keys[] = {"name", "params", "points", NULL};

/* Each element of `in` made into a new array by `one` (a new reference, or NULL with err; i is
 * the element's index): the loop, its out-of-memory check and its clean-up, which a run's
 * points and the runs share. NULL with err. */
typedef json_t *(*decode_one_fn)(const json_t *e, size_t i, void *ctx, fathom_error_t *err);
static json_t *decode_each(const json_t *in, decode_one_fn one, void *ctx, fathom_error_t *err)
{
    json_t *out = json_array();
    if (!out) {
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < json_array_size(in); i++) {
        json_t *e = one(json_array_get(in, i), i, ctx, err);
        if (!e || json_array_append_new(out, e)) {
            if (e)
                fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

typedef struct {
    const char *pp; /* the points' path */
    double x0;      /* the first point's x */
} points_ctx_t;

/* One point [x, loss] (decode_each's one). */
static json_t *decode_point(const json_t *pt, size_t k, void *ctx, fathom_error_t *err)
{
    points_ctx_t *c = ctx;
    char q[JR_PATH_MAX], qx[JR_PATH_MAX + 8];
    double x, loss;
    jr_path_index(q, sizeof q, c->pp, k);
    if (jr_expect_array(pt, q, 2, 2, err))
        return NULL;
    snprintf(qx, sizeof qx, "%s[0]", q);
    if (jr_value_real(json_array_get(pt, 0), qx, 1e-300, 1e300, &x, err))
        return NULL;
    snprintf(qx, sizeof qx, "%s[1]", q);
    if (jr_value_real(json_array_get(pt, 1), qx, 1e-300, 1e300, &loss, err))
        return NULL;
    if (k == 0)
        c->x0 = x;
    json_t *out = json_pack("[f,f]", x, loss);
    if (!out)
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    return out;
}

/* One run, normalized (names and params explicit; decode_each's one); *ctx counts the points
 * of the runs so far. */
static json_t *decode_run(const json_t *run, size_t i, void *ctx, fathom_error_t *err)
{
    size_t *total = ctx;
    const char *name;
    char dflt[32], p[JR_PATH_MAX], pp[JR_PATH_MAX];
    jr_path_index(p, sizeof p, "runs", i);
    jr_path(pp, sizeof pp, p, "points");
    snprintf(dflt, sizeof dflt, "run %zu", i);
    if (jr_expect_object(run, p, err) || jr_check_keys(run, p, run_keys, err) ||
        jr_string(run, p, "name", JR_OPTIONAL, dflt, RUN_NAME_MAX, &name, err))
        return NULL;
    const json_t *points = json_object_get(run, "points");
    if (jr_expect_array(points, pp, 1, SCALING_FIT_MAX_POINTS, err))
        return NULL;
    *total += json_array_size(points);
    if (*total > SCALING_FIT_MAX_POINTS) {
        fathom_error_set(err, FATHOM_E_LIMIT_EXCEEDED, pp, "more than %d points in all",
                         SCALING_FIT_MAX_POINTS);
        return NULL;
    }
    points_ctx_t pc = {.pp = pp, .x0 = 0.0};
    double params;
    json_t *npts = decode_each(points, decode_point, &pc, err);
    if (!npts)
        return NULL;
    const double derived = scaling_run_default_params(pc.x0);
    int bad = jr_positive(run, p, "params", JR_OPTIONAL, derived, RUN_MAX_PARAMS, &params, err);
    if (!bad && !jr_has(run, "params") && !(derived > 0.0 && derived <= RUN_MAX_PARAMS)) {
        /* The default comes from the first point: name that point, not a field the user
         * never wrote, and refuse it here so the normalized request is always valid. */
        bad = fathom_error_set(err, FATHOM_E_INVALID_FIELD, pp,
                               "the first point's compute gives %.3g parameters, outside "
                               "(0, %.0e]; give params for this run",
                               derived, RUN_MAX_PARAMS);
    }
    if (bad) {
        json_decref(npts);
        return NULL;
    }
    /* "o" takes npts even when json_pack fails. */
    json_t *out = json_pack("{s:s,s:f,s:o}", "name", name, "params", params, "points", npts);
    if (!out)
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    return out;
}

/* Decodes the runs array into normalized JSON (names and params explicit). */
static json_t *normalize_runs(const json_t *runs, fathom_error_t *err)
{
    if (jr_expect_array(runs, "runs", 1, SCALING_FIT_MAX_RUNS, err))
        return NULL;
    size_t total = 0;
    return decode_each(runs, decode_run, &total, err);
}

static json_t *fit_normalize(const json_t *body, const codec_ctx_t *ctx, fathom_error_t *err)
{
    (void)ctx;
    if (jr_expect_object(body, "", err) || jr_check_keys(body, "", body_keys, err))
        return NULL;
    const json_t *runs = json_object_get(body, "runs");
    const json_t *csv = json_object_get(body, "csv");
    if (runs && csv) {
        fathom_error_set(err, FATHOM_E_INVALID_FIELD, "csv", "give either runs or csv, not both");
        return NULL;
    }
    if (!runs && !csv) {
        fathom_error_set(err, FATHOM_E_INVALID_FIELD, "runs", "is required (or csv)");
        return NULL;
    }
    json_t *from_csv = NULL;
    if (csv) {
        if (!json_is_string(csv)) {
            fathom_error_set(err, FATHOM_E_INVALID_FIELD, "csv", "must be a string");
            return NULL;
        }
        from_csv = codec_scaling_csv_to_runs(json_string_value(csv), json_string_length(csv),
                                             "csv", err);
        if (!from_csv)
            return NULL;
        runs = from_csv;
    }
    json_t *norm = normalize_runs(runs, err);
    /* A CSV user cannot see the derived array: the error names "csv" and quotes the path. */
    if (!norm && from_csv && strncmp(err->field, "runs", 4) == 0) {
        char msg[FATHOM_ERROR_MESSAGE_MAX];
        snprintf(msg, sizeof msg, "%.200s: %.200s", err->field, err->message);
        fathom_error_set(err, err->code, "csv", "%s", msg);
    }
    json_decref(from_csv);
    if (!norm)
        return NULL;
    json_t *out = json_pack("{s:o}", "runs", norm);
    if (!out)
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    return out;
}

/* ---- evaluation ---- */

static json_t *fit_evaluate(const json_t *normalized, const codec_ctx_t *ctx,
                            fathom_error_t *err)
{
    json_t *norm = fit_normalize(normalized, ctx, err); /* the same checks, idempotent */
    if (!norm)
        return NULL;
    const json_t *runs = json_object_get(norm, "runs");
    size_t n = json_array_size(runs), total = 0;
    for (size_t i = 0; i < n; i++)
        total += json_array_size(json_object_get(json_array_get(runs, i), "points"));
    json_t *out = NULL;
    scaling_run_t *rs = calloc(n, sizeof *rs);
    double *buf = calloc(2 * total + 1, sizeof *buf);
    scaling_fit_result_t fit = {0};
    if (!rs || !buf) {
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
        goto done;
    }
    double *cur = buf;
    for (size_t i = 0; i < n; i++) {
        const json_t *run = json_array_get(runs, i);
        const json_t *pts = json_object_get(run, "points");
        size_t m = json_array_size(pts);
        rs[i] = (scaling_run_t){cur, cur + m, m, json_real_value(json_object_get(run, "params"))};
        for (size_t k = 0; k < m; k++) {
            cur[k] = json_number_value(json_array_get(json_array_get(pts, k), 0));
            cur[m + k] = json_number_value(json_array_get(json_array_get(pts, k), 1));
        }
        cur += 2 * m;
    }
    if (scaling_fit(rs, n, "runs", &fit, err))
        goto done;
    json_t *frontier = json_array();
    for (size_t i = 0; frontier && i < fit.n_frontier; i++) {
        const scaling_point_t *pt = &fit.frontier[i];
        const json_t *run = json_array_get(runs, pt->run);
        const char *name = json_string_value(json_object_get(run, "name"));
        if (json_array_append_new(frontier, json_pack("{s:s,s:f,s:f,s:f}", "run", name, "x",
                                                      pt->x, "flos", pt->x * SCALING_DAY_S,
                                                      "loss", pt->loss))) {
            json_decref(frontier);
            frontier = NULL;
        }
    }
    out = json_pack("{s:{s:f,s:f,s:f},s:{s:f,s:f,s:f},s:o,s:I,s:I}", "loss_fit", "a",
                    fit.loss_fit.a, "b", fit.loss_fit.b, "c", fit.loss_fit.c, "param_fit", "d",
                    fit.param_fit.d, "e", fit.param_fit.e, "f", fit.param_fit.f, "frontier",
                    frontier, "runs_used", (json_int_t)fit.n_runs_used, "frontier_runs",
                    (json_int_t)fit.n_param_pairs);
    if (!out)
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
done:
    scaling_fit_result_close(&fit);
    free(rs);
    free(buf);
    json_decref(norm);
    return out;
}

const codec_endpoint_t codec_scaling_fit_endpoint = {"scaling_fit", "/v1/scaling/fit",
                                                     fit_normalize, fit_evaluate};

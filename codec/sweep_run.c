/* sweep_run.c — a whole sweep run on this machine's threads, through its kind's row (the CLI's
 * `fathom search` and `fathom plan`, benchmarks and tests; the server runs units on its libuv pool
 * instead, server/sweeps.c), and a reader over points held in memory.
 *
 * DESIGN. The calling thread starts `threads` pthreads and then only reports progress. Each
 * thread takes the next unit from one atomic counter until none is left, a unit fails, or the
 * caller cancels. A KEEPS_STATE kind's thread merges its units into a state of its own; the
 * caller's state gets every thread's at the end (a kind's merge does not depend on the order).
 * A KEEPS_POINTS kind's unit leaves its points in that unit's slot; the slots are joined in unit
 * order at the end, which is index order (a unit's points follow the previous unit's). The first
 * error wins (under `lock`); the others stop at their next unit. */
#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sweep_kind.h"

void sweep_points_free(sweep_point_t *points, size_t n)
{
    for (size_t i = 0; points && i < n; i++) {
        free(points[i].values);
        free(points[i].response);
    }
    free(points);
}

/* The two texts' formats are the store's, so every kind writes them here: values with sorted
 * keys (equal values, equal texts), responses with 17 significant digits (doubles read back
 * exactly). */
int sweep_point_texts(sweep_point_t *p, const json_t *values, const json_t *response)
{
    p->values = values ? json_dumps(values, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    p->response = response ? json_dumps(response, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
    return p->values && p->response ? 0 : -1;
}

int sweep_unit_one_point(sweep_unit_t *out, const sweep_point_t *point, const json_t *values,
                         const json_t *response, fathom_error_t *err)
{
    if (!values || !response || !(out->points = calloc(1, sizeof *out->points)))
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    out->npoints = 1;
    *out->points = *point;
    if (sweep_point_texts(out->points, values, response))
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    return 0;
}

/* ------------------------------------------------------------ points in memory ---- */

static int list_page(void *self, long long first, long long max, sweep_point_fn fn, void *ctx,
                     fathom_error_t *err)
{
    (void)err;
    const sweep_point_list_t *l = self;
    long long sent = 0;
    for (size_t i = 0; i < l->n && sent < max; i++) {
        if (l->points[i].index < first)
            continue;
        sent++;
        if (fn(ctx, &l->points[i]))
            break;
    }
    return 0;
}

/* The stores' order: highest sample rate first, points without one last, ties by index. */
static int faster(const sweep_point_t *a, const sweep_point_t *b)
{
    if (a->has_sample_rate != b->has_sample_rate)
        return a->has_sample_rate;
    if (a->has_sample_rate && a->sample_rate != b->sample_rate)
        return a->sample_rate > b->sample_rate;
    return a->index < b->index;
}

static int list_best(void *self, int top_n, sweep_point_fn fn, void *ctx, long long *stored,
                     long long *good, fathom_error_t *err)
{
    const sweep_point_list_t *l = self;
    *stored = (long long)l->n;
    *good = 0;
    const sweep_point_t **best = calloc(top_n > 0 ? (size_t)top_n : 1, sizeof *best);
    if (!best)
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    int nbest = 0;
    for (size_t i = 0; i < l->n; i++) {
        const sweep_point_t *p = &l->points[i];
        if (!p->fits)
            continue;
        (*good)++;
        /* insertion into the sorted top list */
        int at = nbest;
        while (at > 0 && faster(p, best[at - 1]))
            at--;
        if (at >= top_n)
            continue;
        if (nbest < top_n)
            nbest++;
        memmove(&best[at + 1], &best[at], (size_t)(nbest - 1 - at) * sizeof *best);
        best[at] = p;
    }
    for (int i = 0; i < nbest; i++)
        if (fn(ctx, best[i]))
            break;
    free(best);
    return 0;
}

sweep_points_t sweep_points_of_list(sweep_point_list_t *list)
{
    return (sweep_points_t){list, list_page, list_best};
}

/* -------------------------------------------------- kinds made of all their points ---- */

typedef struct {
    json_t *all;
    int failed;
} gather_t;

static int gather(void *ctx, const sweep_point_t *p)
{
    gather_t *g = ctx;
    json_t *r = json_loads(p->response, 0, NULL);
    if (r && json_array_append_new(g->all, r) == 0)
        return 0;
    g->failed = 1;
    return 1;
}

/* Every stored point's response, parsed, in index order; NULL with err when fewer than n are
 * stored or memory ran out. */
static json_t *points_all(const sweep_points_t *pts, size_t n, fathom_error_t *err)
{
    gather_t g = {json_array(), 0};
    while (g.all && !g.failed && json_array_size(g.all) < n) {
        size_t before = json_array_size(g.all);
        if (pts->page(pts->self, (long long)before, 256, gather, &g, err)) {
            json_decref(g.all);
            return NULL;
        }
        if (json_array_size(g.all) == before)
            break; /* fewer points than units: not every unit is stored */
    }
    if (g.all && !g.failed && json_array_size(g.all) == n)
        return g.all;
    json_decref(g.all);
    fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "cannot read every stored point");
    return NULL;
}

static int no_point(void *ctx, const sweep_point_t *p)
{
    (void)ctx;
    (void)p;
    return 1;
}

json_t *sweep_result_of_points(const sweep_points_t *pts, size_t n, int flags, const char *good,
                               const char *member, sweep_summarize_fn summarize, const void *ctx,
                               fathom_error_t *err)
{
    json_t *doc = NULL;
    if (!(flags & SWEEP_RESULT_FINAL)) {
        /* Before the end: the counts so far, as a grid's (the store counts them; no point is
         * read), and no block: a summary of some candidates would read as the plan's. */
        long long stored = 0, fit = 0;
        if (pts->best(pts->self, 0, no_point, NULL, &stored, &fit, err))
            return NULL;
        doc = json_pack("{s:{s:I,s:I,s:I}}", "counts", "total", (json_int_t)stored, "good",
                        (json_int_t)fit, "bad", (json_int_t)(stored - fit));
    } else {
        json_t *points = points_all(pts, n, err);
        if (!points)
            return NULL;
        size_t i;
        long long fit = 0;
        json_t *p;
        json_array_foreach(points, i, p) fit += json_is_true(json_object_get(p, good));
        json_t *block = summarize(ctx, points);
        doc = block ? json_pack("{s:[],s:{s:I,s:I,s:I},s:o}", "best", "counts", "total",
                                (json_int_t)n, "good", (json_int_t)fit, "bad",
                                (json_int_t)((long long)n - fit), member, block)
                    : NULL;
        json_decref(points);
    }
    if (!doc)
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "cannot make the answer of its points");
    return doc;
}

/* A CSV header of fixed columns (NULL-ended) appended to names. */
static int csv_names(const char *const *columns, json_t *names)
{
    int rc = 0;
    for (int i = 0; columns[i] && !rc; i++)
        rc = json_array_append_new(names, json_string(columns[i]));
    return rc;
}

json_t *sweep_row_at(const json_t *row, const char *path)
{
    const char *dot = strchr(path, '.');
    if (!dot)
        return json_object_get(row, path);
    char head[64];
    snprintf(head, sizeof head, "%.*s", (int)(dot - path), path);
    return json_object_get(json_object_get(row, head), dot + 1);
}

/* The cells of a row of fixed columns (paths as sweep_row_at's) appended to cells: each value
 * as it is (null when absent), or what `cell` makes of it when cell is not NULL. */
static int csv_cells(const char *const *columns, const json_t *row, sweep_cell_fn cell,
                     json_t *cells)
{
    int rc = 0;
    for (int i = 0; columns[i] && !rc; i++) {
        json_t *v = sweep_row_at(row, columns[i]);
        rc = json_array_append_new(cells, cell ? cell(v) : v ? json_incref(v) : json_null());
    }
    return rc;
}

int sweep_csv_head(const sweep_kind_t *kind, const sweep_run_t *run, const json_t *first,
                   json_t *names)
{
    return kind->csv_columns ? csv_names(kind->csv_columns, names)
                             : kind->csv_head(run, first, names);
}

int sweep_csv_row(const sweep_kind_t *kind, const sweep_run_t *run, const json_t *first,
                  const json_t *row, json_t *cells)
{
    return kind->csv_columns ? csv_cells(kind->csv_columns, row, kind->csv_cell, cells)
                             : kind->csv_row(run, first, row, cells);
}

/* ------------------------------------------------------------------ the runner ---- */

typedef struct {
    sweep_point_t *points;
    size_t npoints;
} slot_t;

typedef struct {
    const sweep_kind_t *kind;
    const sweep_run_t *run;
    const codec_ctx_t *ctx;
    volatile int *cancel;
    size_t units;
    _Atomic size_t next_unit, units_done;
    _Atomic uint64_t evaluations;
    _Atomic int stop;     /* a unit failed or was cancelled: take no more */
    pthread_mutex_t lock; /* guards err */
    fathom_error_t err;   /* the first failure */
    slot_t *slots;        /* KEEPS_POINTS: one a unit */
} runner_t;

typedef struct {
    runner_t *r;
    sweep_state_t *state; /* KEEPS_STATE: this thread's merged units */
} worker_t;

static void give_up(runner_t *r, const fathom_error_t *e)
{
    pthread_mutex_lock(&r->lock);
    if (!atomic_load(&r->stop))
        r->err = *e;
    atomic_store(&r->stop, 1);
    pthread_mutex_unlock(&r->lock);
}

static void *work(void *arg)
{
    worker_t *w = arg;
    runner_t *r = w->r;
    fathom_error_t e;
    while (!atomic_load(&r->stop)) {
        if (r->cancel && __atomic_load_n(r->cancel, __ATOMIC_RELAXED)) {
            fathom_error_set(&e, FATHOM_E_CANCELLED, NULL, "cancelled");
            give_up(r, &e);
            break;
        }
        size_t u = atomic_fetch_add(&r->next_unit, 1);
        if (u >= r->units)
            break;
        sweep_unit_t out = {.state = w->state};
        fathom_error_clear(&e);
        if (r->kind->run_unit(r->run, r->ctx, u, r->cancel, &out, &e)) {
            sweep_points_free(out.points, out.npoints);
            give_up(r, &e);
            break;
        }
        if (r->slots)
            r->slots[u] = (slot_t){out.points, out.npoints};
        else
            sweep_points_free(out.points, out.npoints);
        atomic_fetch_add(&r->evaluations, out.evaluations);
        atomic_fetch_add(&r->units_done, 1);
    }
    return NULL;
}

static void report(runner_t *r, sweep_progress_fn progress, void *user)
{
    sweep_progress_t p = {atomic_load(&r->units_done), r->units, atomic_load(&r->evaluations)};
    progress(&p, user);
}

/* Joins the units' points in unit order into one array. 0, or -1 when memory ran out. */
static int join_points(runner_t *r, sweep_point_t **points, size_t *npoints)
{
    size_t n = 0;
    for (size_t u = 0; u < r->units; u++)
        n += r->slots[u].npoints;
    sweep_point_t *all = calloc(n ? n : 1, sizeof *all);
    if (!all)
        return -1;
    size_t at = 0;
    for (size_t u = 0; u < r->units; u++) {
        if (r->slots[u].npoints)
            memcpy(&all[at], r->slots[u].points, r->slots[u].npoints * sizeof *all);
        at += r->slots[u].npoints;
        free(r->slots[u].points); /* the texts moved to `all` */
        r->slots[u] = (slot_t){NULL, 0};
    }
    *points = all;
    *npoints = n;
    return 0;
}

int codec_sweep_run_units(const sweep_kind_t *kind, const sweep_run_t *run,
                          const codec_ctx_t *ctx, int threads, volatile int *cancel,
                          sweep_progress_fn progress, void *progress_user, sweep_state_t *into,
                          sweep_point_t **points, size_t *npoints, fathom_error_t *err)
{
    if (threads < 1 || threads > CODEC_SWEEP_MAX_THREADS)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "threads", "must be 1 to %d",
                                CODEC_SWEEP_MAX_THREADS);
    const bool state = kind->keeps == SWEEP_KEEPS_STATE;
    runner_t r = {.kind = kind, .run = run, .ctx = ctx, .cancel = cancel,
                  .units = kind->units(run)};
    atomic_init(&r.next_unit, 0);
    atomic_init(&r.units_done, 0);
    atomic_init(&r.evaluations, 0);
    atomic_init(&r.stop, 0);
    pthread_mutex_init(&r.lock, NULL);
    worker_t *workers = calloc((size_t)threads, sizeof *workers);
    pthread_t *tids = calloc((size_t)threads, sizeof *tids);
    int rc = -1, started = 0;
    if (!workers || !tids || (!state && !(r.slots = calloc(r.units ? r.units : 1,
                                                           sizeof *r.slots)))) {
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
        goto out;
    }
    for (int i = 0; i < threads; i++) {
        workers[i].r = &r;
        if (state && !(workers[i].state = kind->state_new(run, err)))
            goto out;
    }
    for (; started < threads; started++)
        if (pthread_create(&tids[started], NULL, work, &workers[started]))
            break;
    if (started == 0)
        work(&workers[0]); /* no thread could start: run here */
    while (progress && started > 0 && atomic_load(&r.units_done) < r.units &&
           !atomic_load(&r.stop)) {
        report(&r, progress, progress_user);
        nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
    }
    for (int i = 0; i < started; i++)
        pthread_join(tids[i], NULL);
    if (atomic_load(&r.stop)) {
        *err = r.err;
        goto out;
    }
    if (progress)
        report(&r, progress, progress_user);
    if (state) {
        for (int i = 0; i < threads; i++)
            kind->merge(run, into, workers[i].state);
    } else if (join_points(&r, points, npoints)) {
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
        goto out;
    }
    rc = 0;
out:
    for (int i = 0; workers && i < threads; i++)
        if (workers[i].state)
            kind->state_free(workers[i].state);
    for (size_t u = 0; r.slots && u < r.units; u++)
        sweep_points_free(r.slots[u].points, r.slots[u].npoints);
    free(r.slots);
    free(workers);
    free(tids);
    pthread_mutex_destroy(&r.lock);
    return rc;
}

json_t *codec_sweep_run(const sweep_kind_t *kind, const json_t *spec, const codec_ctx_t *ctx,
                        int threads, volatile int *cancel, sweep_progress_fn progress,
                        void *progress_user, int flags, fathom_error_t *err)
{
    sweep_run_t *run = kind->open(spec, ctx, err);
    if (!run)
        return NULL;
    sweep_state_t *st = NULL;
    sweep_point_t *points = NULL;
    size_t npoints = 0;
    json_t *doc = NULL;
    if (kind->keeps == SWEEP_KEEPS_STATE && !(st = kind->state_new(run, err)))
        goto out;
    if (codec_sweep_run_units(kind, run, ctx, threads, cancel, progress, progress_user, st,
                              &points, &npoints, err))
        goto out;
    sweep_point_list_t list = {points, npoints};
    sweep_points_t reader = sweep_points_of_list(&list);
    doc = kind->result(run, st, &reader, flags | SWEEP_RESULT_FINAL, err);
out:
    sweep_points_free(points, npoints);
    if (st)
        kind->state_free(st);
    kind->close(run);
    return doc;
}

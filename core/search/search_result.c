/* search_result.c — a search's result: the best list, kept in the search's total order (sample
 * rate descending, then enumeration position), the plotted sample points, the counts, and the
 * merge of one thread's result into another's, which gives the same list whatever the order
 * (search.c's DESIGN). */
#include "search.h"
#include "search_result.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int search_result_init(search_result_t *r, int top_n, fathom_error_t *err)
{
    memset(r, 0, sizeof *r);
    if (top_n < 1 || top_n > SEARCH_TOP_N_MAX)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "options.top_n",
                                "must be in [1, %d], got %d", SEARCH_TOP_N_MAX, top_n);
    r->best = calloc((size_t)top_n, sizeof *r->best);
    r->points = malloc(SEARCH_SAMPLE_MAX * sizeof *r->points);
    if (!r->best || !r->points) {
        free(r->best);
        free(r->points);
        r->best = NULL;
        r->points = NULL;
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    }
    r->top_n = top_n;
    return 0;
}

void search_result_close(search_result_t *r)
{
    free(r->best);
    free(r->points);
    memset(r, 0, sizeof *r);
}

/* True when (rate, unit, index) ranks before entry e. */
static bool ranks_before(double rate, uint32_t unit, uint32_t index, const search_entry_t *e)
{
    double er = e->result.stats.sample_rate;
    if (rate != er)
        return rate > er;
    return unit != e->unit ? unit < e->unit : index < e->index;
}

int search__insertion_point(const search_result_t *r, double rate, uint32_t unit, uint32_t index)
{
    if (isnan(rate))
        return -1;
    if (r->n_best == r->top_n && !ranks_before(rate, unit, index, &r->best[r->n_best - 1]))
        return -1;
    int at = r->n_best;
    while (at > 0 && ranks_before(rate, unit, index, &r->best[at - 1]))
        at--;
    return at;
}

void search__insert_at(search_result_t *r, int at, const llm_execution_t *e,
                       const llm_result_t *res, uint32_t unit, uint32_t index)
{
    int last = r->n_best < r->top_n ? r->n_best : r->top_n - 1;
    memmove(&r->best[at + 1], &r->best[at], (size_t)(last - at) * sizeof *r->best);
    r->best[at].execution = *e;
    r->best[at].result = *res;
    r->best[at].unit = unit;
    r->best[at].index = index;
    if (r->n_best < r->top_n)
        r->n_best++;
}

static int point_before(const search_point_t *a, const search_point_t *b)
{
    return a->unit != b->unit ? a->unit < b->unit : a->index < b->index;
}

static int point_cmp(const void *a, const void *b)
{
    const search_point_t *x = a, *y = b;
    return point_before(x, y) ? -1 : point_before(y, x) ? 1 : 0;
}

void search_points_sort(search_point_t *points, int n)
{
    qsort(points, (size_t)n, sizeof *points, point_cmp);
}

void search_result_add_point(search_result_t *r, const search_point_t *p)
{
    if (r->n_points < SEARCH_SAMPLE_MAX) {
        r->points[r->n_points++] = *p;
        return;
    }
    /* Full (rare: the stride aims below the cap): the latest point gives way to an earlier. */
    int last = 0;
    for (int i = 1; i < r->n_points; i++)
        if (point_before(&r->points[last], &r->points[i]))
            last = i;
    if (point_before(p, &r->points[last]))
        r->points[last] = *p;
}

void search_merge(search_result_t *dst, const search_result_t *src)
{
    for (int i = 0; i < src->n_points; i++)
        search_result_add_point(dst, &src->points[i]);
    dst->total += src->total;
    dst->good += src->good;
    dst->bad += src->bad;
    dst->pruned += src->pruned;
    dst->estimated += src->estimated;
    for (int i = 0; i < src->n_best; i++) {
        const search_entry_t *s = &src->best[i];
        int at = search__insertion_point(dst, s->result.stats.sample_rate, s->unit, s->index);
        if (at < 0)
            break; /* src is sorted: nothing after it ranks either */
        search__insert_at(dst, at, &s->execution, &s->result, s->unit, s->index);
    }
}

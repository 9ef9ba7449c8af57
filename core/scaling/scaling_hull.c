/* scaling_hull.c — the compute frontier of the 2020 calculator: the two-dimensional convex hull
 * that Qhull 2019.1 builds for scipy.spatial.ConvexHull(points, qhull_options="QG0"), and its
 * facets visible from the anchor point.
 *
 * Why not an exact hull: the calculator's constants come out of Qhull, and Qhull is not exact on
 * this data. Compute runs to ~5e12 while losses are ~3–6, so Qhull's round-off bound
 * (DISTround ≈ ε·3·max|coord| ≈ 3e-3 in loss units) is large, and with its default pre-merging a
 * point becomes a vertex only when it lies at least MINoutside = 4·DISTround above a facet at
 * the moment it is the furthest point of that facet's outside set. An exact hull keeps 47
 * frontier points of the reference CSV where Qhull keeps 21, and moves the fitted constants by a
 * few percent. So this file replays Qhull's incremental algorithm in two dimensions with its
 * thresholds and its facet-list order (libqhull_r: qh_initbuild, qh_partitionall,
 * qh_nextfurthest, qh_addpoint, qh_findhorizon, qh_makenewfacets, qh_premerge,
 * qh_partitionvisible, qh_findgood):
 *
 *   - round-off: DISTround = ε·(2·min(√2·M, S)·1.01 + M), M the largest |coordinate|, S the sum
 *     over dimensions of the largest |coordinate|; centrum radius, MINvisible and MAXcoplanar
 *     are 2·DISTround and MINoutside is twice that (option C-0, Qhull's default);
 *   - the anchor ("QG0", point 0) takes no part in the hull;
 *   - initial triangle: the first points of least and greatest x, and the point of greatest
 *     |det| with them (on such data Qhull always falls back to searching every point); the hull
 *     is "narrow" when two of its edges have normals within cos = −0.99999999 (loss curves always
 *     are), and a narrow hull keeps points down to −MAXcoplanar in outside sets but only takes a
 *     furthest point that is at least MINoutside out;
 *   - build: from qh.facet_next, a facet's furthest point; visible facets are it and,
 *     transitively, neighbours the point is more than MINvisible above; one new facet per
 *     horizon facet, appended to the facet list; pre-merge: a new facet whose horizon the point
 *     was within MAXcoplanar of is merged into it, then, unless every new facet is clearly
 *     convex, centrum tests merge coplanar and concave neighbours (coplanar first, smallest
 *     distance first), each into the neighbour that moves its vertices least; a merged facet
 *     keeps its hyperplane. The visible and merged-away facets' outside points then go to the
 *     new facets;
 *   - good facets: those the anchor is strictly above (distance > 0).
 * A data set with more than 50 merges, or degenerate facets, follows Qhull less closely (Qhull
 * then switches searches); the reference CSV has no merge at all. Checked against Qhull 2019.1
 * on the reference CSV and on 200 variants of it (subsets of runs, noise, rescaled compute). */
#include "scaling_internal.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NONE ((size_t)-1)
#define MAX_NARROW (-0.99999999) /* qh_MAXnarrow */

typedef enum { MRG_COPLANAR = 1, MRG_CONCAVE = 3, MRG_CONCAVECOPLANAR = 4 } merge_type_t;

typedef struct {
    size_t a, b;            /* vertices (point indices), counter-clockwise a → b */
    size_t nb_a, nb_b;      /* neighbour facets through a and through b */
    size_t prev, next;      /* facet list */
    double nx, ny, ox, oy;  /* hyperplane: outward unit normal through (ox, oy); kept on merges */
    size_t *out;            /* outside set, furthest last */
    size_t nout, cap;
    double furthest;
    size_t replace;         /* a deleted facet's successor (qh f.replace) */
    bool visible, horizon, coplanar_horizon, isnew, merged, tested, visited, mergehorizon;
} facet_t;

typedef struct {
    size_t f1, f2;
    merge_type_t type;
    double dist;
} merge_t;

typedef struct {
    const double *x, *y;
    facet_t *f;
    size_t nf;
    size_t head, tail; /* tail: sentinel facet (index 0) */
    size_t next_f;     /* qh.facet_next */
    size_t newlist;    /* qh.newfacet_list, NONE when unset */
    size_t vislist;    /* qh.visible_list, NONE when unset */
    double distround, min_visible, max_coplanar, min_outside, centrum_radius, max_outside;
    bool narrow;
    size_t total_merges;
    size_t *vid;     /* vertex id of each point (creation order), 0 if not a vertex */
    size_t next_vid;
    size_t *vis;     /* scratch: visible facets, room for every facet */
    merge_t *merges; /* scratch: merge set, room for 2 per facet */
} hull_t;

static double dist_xy(const hull_t *h, size_t fi, double px, double py)
{
    const facet_t *f = &h->f[fi];
    return f->nx * (px - f->ox) + f->ny * (py - f->oy);
}

static double dist(const hull_t *h, size_t fi, size_t p)
{
    return dist_xy(h, fi, h->x[p], h->y[p]);
}

static double dist_outside(const hull_t *h)
{
    /* qh_DISToutside */
    return (h->total_merges > 50 ? 2.0 : 1.0) * fmax(2.0 * h->min_outside, h->max_outside);
}

static size_t new_facet(hull_t *h, size_t a, size_t b)
{
    size_t i = h->nf++;
    facet_t *f = &h->f[i];
    memset(f, 0, sizeof *f);
    f->a = a;
    f->b = b;
    f->nb_a = f->nb_b = f->prev = f->next = f->replace = NONE;
    double dx = h->x[b] - h->x[a], dy = h->y[b] - h->y[a], len = hypot(dx, dy);
    f->nx = dy / len;
    f->ny = -dx / len;
    f->ox = h->x[a];
    f->oy = h->y[a];
    f->furthest = -DBL_MAX;
    return i;
}

/* ---- Qhull's facet list (qh_appendfacet, qh_removefacet, qh_prependfacet) ---- */

static void append_facet(hull_t *h, size_t fi)
{
    size_t t = h->tail;
    if (t == h->newlist) {
        h->newlist = fi;
        if (t == h->vislist)
            h->vislist = fi;
    }
    if (t == h->next_f)
        h->next_f = fi;
    h->f[fi].prev = h->f[t].prev;
    h->f[fi].next = t;
    if (h->f[t].prev != NONE)
        h->f[h->f[t].prev].next = fi;
    else
        h->head = fi;
    h->f[t].prev = fi;
}

static void remove_facet(hull_t *h, size_t fi)
{
    size_t next = h->f[fi].next, prev = h->f[fi].prev;
    if (fi == h->newlist)
        h->newlist = next;
    if (fi == h->next_f)
        h->next_f = next;
    if (fi == h->vislist)
        h->vislist = next;
    if (prev != NONE) {
        h->f[prev].next = next;
        h->f[next].prev = prev;
    } else {
        h->head = next;
        h->f[next].prev = NONE;
    }
}

/* Puts fi just before *list (the tail if NONE), which becomes fi. */
static void prepend_facet(hull_t *h, size_t fi, size_t *list)
{
    if (*list == NONE)
        *list = h->tail;
    size_t at = *list, prev = h->f[at].prev;
    h->f[fi].prev = prev;
    if (prev != NONE)
        h->f[prev].next = fi;
    h->f[at].prev = fi;
    h->f[fi].next = at;
    if (h->head == at)
        h->head = fi;
    if (h->next_f == at)
        h->next_f = fi;
    *list = fi;
}

/* ---- outside sets ---- */

static int push_outside(facet_t *f, size_t p, double d)
{
    if (f->nout == f->cap) {
        size_t cap = f->cap ? 2 * f->cap : 8;
        size_t *o = realloc(f->out, cap * sizeof *o);
        if (!o)
            return -1;
        f->out = o;
        f->cap = cap;
    }
    if (f->nout == 0 || d > f->furthest) { /* the new furthest goes last */
        f->out[f->nout++] = p;
        f->furthest = d;
    } else { /* one before the last */
        f->out[f->nout] = f->out[f->nout - 1];
        f->out[f->nout - 1] = p;
        f->nout++;
    }
    return 0;
}

/* The second half of qh_partitionpoint: the point joins facet `best` (distance d) if it is
 * outside, and a facet that gains its first outside point is queued again. */
static int assign(hull_t *h, size_t p, size_t best, double d)
{
    bool outside = h->narrow ? d >= -h->max_coplanar : d >= h->min_outside;
    if (!outside || best == NONE)
        return 0; /* coplanar or inside: dropped, as Qhull does without 'Qc'/'Qi' */
    facet_t *f = &h->f[best];
    bool was_empty = f->nout == 0;
    double previous = f->furthest;
    if (push_outside(f, p, d))
        return -1;
    bool newly_outside = was_empty ? (!h->narrow || d > h->min_outside)
                                   : (h->narrow && previous < h->min_outside &&
                                      d >= h->min_outside);
    if (newly_outside && h->next_f != best) {
        if (f->isnew) {
            if (h->f[h->next_f].isnew)
                h->next_f = h->newlist;
        } else {
            remove_facet(h, best);
            append_facet(h, best);
            if (h->newlist != NONE)
                f->isnew = true;
        }
    }
    return 0;
}

/* ---- neighbours ---- */

/* Qhull lists a two-dimensional facet's vertices newest first, and its neighbours opposite
 * them: the neighbour through the older vertex comes first. That order decides which new facet
 * is made first, and so the facet list. */
static void neighbours_in_order(const hull_t *h, size_t fi, size_t nb[2])
{
    const facet_t *f = &h->f[fi];
    bool a_older = h->vid[f->a] < h->vid[f->b];
    nb[0] = a_older ? f->nb_a : f->nb_b;
    nb[1] = a_older ? f->nb_b : f->nb_a;
}

/* qh_findbesthorizon, reduced: a neighbour of `best` that is not new and holds the point
 * better. */
static size_t better_horizon(const hull_t *h, size_t p, size_t best, double *bestd)
{
    size_t nb[2] = {h->f[best].nb_a, h->f[best].nb_b}, out = best;
    for (int k = 0; k < 2; k++) {
        if (h->f[nb[k]].isnew)
            continue;
        double d = dist(h, nb[k], p);
        if (d > *bestd) {
            *bestd = d;
            out = nb[k];
        }
    }
    return out;
}

/* qh_findbest from the replacement facet over new facets (no merge this round). */
static int repartition_simple(hull_t *h, size_t p, size_t start, size_t other)
{
    double bestd = dist(h, start, p);
    size_t best = start;
    if (bestd < h->min_outside) {
        double d1 = dist(h, other, p);
        if (d1 > bestd) {
            best = other;
            bestd = d1;
        }
        if (bestd < h->min_outside)
            best = better_horizon(h, p, best, &bestd);
    }
    return assign(h, p, best, bestd);
}

/* qh_findbestnew: new facets from `start` to the end, then from the first new facet; the first
 * the point is qh_DISToutside above wins, else the furthest. */
static int repartition_new(hull_t *h, size_t p, size_t start)
{
    double bestd = -DBL_MAX, lim = dist_outside(h);
    size_t best = NONE;
    for (int pass = 0; pass < 2; pass++) {
        size_t from = pass == 0 ? start : h->newlist;
        for (size_t fi = from; fi != NONE && fi != h->tail; fi = h->f[fi].next) {
            if (pass == 1 && fi == start)
                break;
            double d = dist(h, fi, p);
            if (d > bestd) {
                best = fi;
                bestd = d;
                if (d >= lim)
                    return assign(h, p, best, bestd);
            }
        }
    }
    if (best == NONE)
        return 0;
    best = better_horizon(h, p, best, &bestd);
    return assign(h, p, best, bestd);
}

/* qh_partitionall's second half for the points not clearly outside one facet: qh_findbestnew
 * over the whole list. */
static int partition_point(hull_t *h, size_t p)
{
    size_t best = NONE;
    double bestd = -DBL_MAX, lim = dist_outside(h);
    for (size_t fi = h->head; fi != h->tail; fi = h->f[fi].next) {
        double d = dist(h, fi, p);
        if (d > bestd) {
            best = fi;
            bestd = d;
            if (d >= lim)
                break;
        }
    }
    return assign(h, p, best, bestd);
}

/* ---- merging (qh_premerge in two dimensions) ---- */

static void centrum(const hull_t *h, size_t fi, double *cx, double *cy)
{
    const facet_t *f = &h->f[fi];
    *cx = 0.5 * (h->x[f->a] + h->x[f->b]);
    *cy = 0.5 * (h->y[f->a] + h->y[f->b]);
    if (f->merged) { /* onto the kept hyperplane */
        double d = dist_xy(h, fi, *cx, *cy);
        *cx -= d * f->nx;
        *cy -= d * f->ny;
    }
}

/* qh_test_centrum_merge: appends a merge of fi and nb when they are not clearly convex. */
static void test_merge(hull_t *h, size_t fi, size_t nb, size_t *nm)
{
    double cx, cy, r = h->centrum_radius;
    centrum(h, fi, &cx, &cy);
    double d1 = dist_xy(h, nb, cx, cy);
    bool concave = false, coplanar = false;
    if (d1 > r)
        concave = true;
    else if (d1 >= -r)
        coplanar = true;
    centrum(h, nb, &cx, &cy);
    double d2 = dist_xy(h, fi, cx, cy);
    if (d2 > r)
        concave = true;
    else if (!coplanar && d2 >= -r)
        coplanar = true;
    if (!concave && !coplanar)
        return;
    merge_t m = {fi, nb, MRG_COPLANAR, fmin(fabs(d1), fabs(d2))};
    if (concave && coplanar)
        m = d1 > d2 ? (merge_t){fi, nb, MRG_CONCAVECOPLANAR, d1}
                    : (merge_t){nb, fi, MRG_CONCAVECOPLANAR, d2};
    else if (concave)
        m = (merge_t){fi, nb, MRG_CONCAVE, fmax(d1, d2)};
    h->merges[(*nm)++] = m;
}

/* Merges come out of qh_all_merges coplanar first, then concave, smallest distance first. */
static int merge_order(const void *pa, const void *pb)
{
    const merge_t *a = pa, *b = pb;
    if (a->type != b->type)
        return a->type < b->type ? -1 : 1;
    if (a->dist != b->dist)
        return a->dist < b->dist ? -1 : 1;
    return 0;
}

/* qh_getdistance: how far fi's vertex that nb lacks is from nb's hyperplane. */
static double vertex_distance(const hull_t *h, size_t fi, size_t nb, double *mind, double *maxd)
{
    const facet_t *f = &h->f[fi], *g = &h->f[nb];
    size_t v = (f->a == g->a || f->a == g->b) ? f->b : f->a;
    double d = dist(h, nb, v);
    *mind = fmin(d, 0.0);
    *maxd = fmax(d, 0.0);
    return fmax(*maxd, -*mind);
}

/* qh_findbestneighbor */
static size_t best_neighbour(const hull_t *h, size_t fi, double *d, double *mind, double *maxd)
{
    size_t nb[2], best = NONE;
    neighbours_in_order(h, fi, nb);
    *d = DBL_MAX;
    for (int k = 0; k < 2; k++) {
        double mn, mx, dd = vertex_distance(h, fi, nb[k], &mn, &mx);
        if (dd < *d) {
            *d = dd;
            *mind = mn;
            *maxd = mx;
            best = nb[k];
        }
    }
    return best;
}

/* qh_mergefacet + qh_mergefacet2d + qh_willdelete: f1 goes, f2 spans both and keeps its
 * hyperplane; the vertex they shared is no longer a vertex. */
static void merge_facet(hull_t *h, size_t f1, size_t f2, double maxd)
{
    facet_t *a = &h->f[f1], *b = &h->f[f2];
    h->max_outside = fmax(h->max_outside, maxd);
    if (a->b == b->a) { /* a then b, counter-clockwise */
        b->a = a->a;
        b->nb_a = a->nb_a;
        h->f[a->nb_a].nb_b = f2;
    } else { /* b then a */
        b->b = a->b;
        b->nb_b = a->nb_b;
        h->f[a->nb_b].nb_a = f2;
    }
    b->merged = true;
    b->tested = false;
    remove_facet(h, f2);
    append_facet(h, f2);
    b->isnew = true;
    h->total_merges++;
    remove_facet(h, f1);
    prepend_facet(h, f1, &h->vislist);
    a->visible = true;
    a->replace = f2;
}

static void merge_nonconvex(hull_t *h, size_t f1, size_t f2)
{
    size_t bestfacet = f1, other = f2;
    if (!h->f[f1].isnew) {
        bestfacet = f2;
        other = f1;
    }
    double d1, mn1, mx1, d2, mn2, mx2;
    size_t nb1 = best_neighbour(h, bestfacet, &d1, &mn1, &mx1);
    size_t nb2 = best_neighbour(h, other, &d2, &mn2, &mx2);
    if (d1 < d2)
        merge_facet(h, bestfacet, nb1, mx1);
    else
        merge_facet(h, other, nb2, mx2);
}

/* qh_checkzero for the new facets: each is clearly below its neighbours' far vertices. */
static bool clearly_convex(const hull_t *h, const size_t made[2])
{
    double lim = -2.0 * h->distround;
    for (int i = 0; i < 2; i++) {
        const facet_t *f = &h->f[made[i]];
        size_t other = made[1 - i];
        size_t hz = f->nb_a == other ? f->nb_b : f->nb_a;
        if (h->f[hz].merged || f->mergehorizon)
            return false;
        size_t v = f->a == h->f[other].a || f->a == h->f[other].b ? f->b : f->a;
        if (dist(h, other, v) >= lim)
            return false;
        size_t hv = h->f[hz].a == f->a || h->f[hz].a == f->b ? h->f[hz].b : h->f[hz].a;
        if (dist(h, made[i], hv) >= lim)
            return false;
    }
    return true;
}

static void premerge(hull_t *h, const size_t made[2])
{
    /* qh_mergecycle_all: a new facet with a coplanar horizon joins it. */
    for (int i = 0; i < 2; i++) {
        facet_t *f = &h->f[made[i]];
        if (f->mergehorizon && !f->visible) {
            size_t hz = h->f[f->nb_a].isnew ? f->nb_b : f->nb_a;
            merge_facet(h, made[i], hz, 0.0);
        }
    }
    /* qh_getmergeset_initial, then qh_all_merges until no merge is left. */
    for (size_t fi = h->newlist; fi != NONE && fi != h->tail; fi = h->f[fi].next)
        h->f[fi].visited = false;
    bool initial = true;
    for (;;) {
        size_t nm = 0;
        for (size_t fi = h->newlist; fi != NONE && fi != h->tail; fi = h->f[fi].next) {
            facet_t *f = &h->f[fi];
            if (!initial && f->tested)
                continue;
            f->visited = true;
            size_t nb[2];
            neighbours_in_order(h, fi, nb);
            for (int k = 0; k < 2; k++)
                if (!h->f[nb[k]].visited || !h->f[nb[k]].isnew)
                    test_merge(h, fi, nb[k], &nm);
            f->tested = true;
        }
        for (size_t fi = h->newlist; fi != NONE && fi != h->tail; fi = h->f[fi].next)
            h->f[fi].visited = false;
        initial = false;
        if (nm == 0)
            break;
        qsort(h->merges, nm, sizeof *h->merges, merge_order);
        for (size_t i = 0; i < nm; i++) {
            merge_t *m = &h->merges[i];
            facet_t *a = &h->f[m->f1], *b = &h->f[m->f2];
            if (a->visible || b->visible)
                continue;
            if (m->type == MRG_COPLANAR &&
                ((!a->tested && a->isnew) || (!b->tested && b->isnew)))
                continue; /* qh.MERGEindependent: retested next round */
            merge_nonconvex(h, m->f1, m->f2);
        }
    }
}

/* ---- build ---- */

/* qh_findhorizon: visible facets in discovery order (into h->vis, their count in *nvis);
 * neighbours more than MINvisible below the point join, the others are the horizon. The
 * visible facets move to the end of the list: qh.visible_list. */
static int find_horizon(hull_t *h, size_t fi, size_t p, size_t horizon[2], size_t *nhorizon,
                        size_t *nvis)
{
    size_t *vis = h->vis, n = 0, head = 0, nhz = 0;
    vis[n++] = fi;
    h->f[fi].visible = true;
    while (head < n) {
        size_t nb[2];
        neighbours_in_order(h, vis[head++], nb);
        for (int k = 0; k < 2; k++) {
            facet_t *g = &h->f[nb[k]];
            if (g->visible || g->horizon)
                continue;
            double d = dist(h, nb[k], p);
            if (d > h->min_visible) {
                g->visible = true;
                vis[n++] = nb[k];
            } else {
                if (nhz == 2)
                    return -1; /* a chain has two ends */
                g->horizon = true;
                g->coplanar_horizon = d >= -h->max_coplanar;
                if (g->coplanar_horizon && d > 0.0)
                    h->max_outside = fmax(h->max_outside, d);
                horizon[nhz++] = nb[k];
            }
        }
    }
    h->vislist = NONE;
    for (size_t i = 0; i < n; i++) {
        remove_facet(h, vis[i]);
        append_facet(h, vis[i]);
        if (i == 0)
            h->vislist = vis[0];
    }
    *nvis = n;
    *nhorizon = nhz;
    return 0;
}

/* qh_makenewfacets: one new facet per horizon neighbour, visible list order (made[0..1], in
 * the order made), joined to each other at p: side[0] ends at p, side[1] starts there. */
static int make_new_facets(hull_t *h, size_t nvis, size_t p, size_t made[2], size_t side[2])
{
    const size_t *vis = h->vis;
    h->vid[p] = h->next_vid++;
    h->newlist = h->tail;
    size_t nmade = 0;
    for (size_t i = 0; i < nvis; i++) {
        size_t nb[2];
        neighbours_in_order(h, vis[i], nb);
        for (int k = 0; k < 2; k++) {
            size_t hz = nb[k];
            if (!h->f[hz].horizon)
                continue;
            if (nmade == 2)
                return -1;
            const facet_t *v = &h->f[vis[i]];
            size_t nf;
            if (hz == v->nb_a) { /* horizon before the chain: hz.b = v.a */
                nf = new_facet(h, v->a, p);
                h->f[nf].nb_a = hz;
                h->f[hz].nb_b = nf;
            } else {
                nf = new_facet(h, p, v->b);
                h->f[nf].nb_b = hz;
                h->f[hz].nb_a = nf;
            }
            h->f[nf].isnew = true;
            h->f[nf].mergehorizon = h->f[hz].coplanar_horizon;
            h->f[vis[i]].replace = nf;
            append_facet(h, nf);
            made[nmade++] = nf;
        }
    }
    if (nmade != 2)
        return -1;
    size_t left = h->f[made[0]].b == p ? made[0] : made[1]; /* the one ending at p */
    size_t right = left == made[0] ? made[1] : made[0];
    h->f[left].nb_b = right;
    h->f[right].nb_a = left;
    side[0] = left;
    side[1] = right;
    return 0;
}

/* qh_partitionvisible over qh.visible_list (merged-away facets first), then
 * qh_deletevisible; side = the new facets ending and starting at the point. */
static int partition_visible(hull_t *h, const size_t side[2], bool findbestnew)
{
    size_t *vis = h->vis, nlist = 0;
    for (size_t v = h->vislist; v != NONE && v != h->newlist && v != h->tail; v = h->f[v].next)
        vis[nlist++] = v;
    for (size_t i = 0; i < nlist; i++) {
        facet_t *v = &h->f[vis[i]];
        size_t start = vis[i];
        while (start != NONE && h->f[start].visible)
            start = h->f[start].replace;
        if (start == NONE)
            start = h->newlist;
        for (size_t k = 0; k < v->nout; k++) {
            int rc = findbestnew ? repartition_new(h, v->out[k], start)
                                 : repartition_simple(h, v->out[k], start,
                                                      start == side[0] ? side[1] : side[0]);
            if (rc)
                return -1;
        }
    }
    for (size_t i = 0; i < nlist; i++) {
        facet_t *v = &h->f[vis[i]];
        free(v->out);
        v->out = NULL;
        v->nout = v->cap = 0;
        remove_facet(h, vis[i]);
    }
    return 0;
}

static int add_point(hull_t *h, size_t fi, size_t p)
{
    size_t horizon[2], nhz, nvis, made[2], side[2];
    if (find_horizon(h, fi, p, horizon, &nhz, &nvis) || make_new_facets(h, nvis, p, made, side))
        return -1;
    for (size_t i = 0; i < nhz; i++)
        h->f[horizon[i]].horizon = h->f[horizon[i]].coplanar_horizon = false;

    size_t merges_before = h->total_merges;
    if (!clearly_convex(h, made))
        premerge(h, made);
    bool findbestnew = h->total_merges != merges_before || h->total_merges > 50;
    if (partition_visible(h, side, findbestnew))
        return -1;
    /* qh_resetlists */
    for (size_t f2 = h->newlist; f2 != NONE && f2 != h->tail; f2 = h->f[f2].next)
        h->f[f2].isnew = false;
    h->newlist = NONE;
    h->vislist = NONE;
    return 0;
}

/* Qhull's round-off and thresholds (qh_maxmin, qh_distround, qh_detroundoff) into h, and the
 * points of least and greatest x (the initial simplex's first two). */
static void roundoff(hull_t *h, const double *x, const double *y, size_t n, size_t *pmin,
                     size_t *pmax)
{
    *pmin = *pmax = 0;
    double maxabs = 0.0, sumabs = 0.0, mx[2] = {x[0], y[0]}, mn[2] = {x[0], y[0]};
    for (size_t i = 1; i < n; i++) {
        if (x[i] > x[*pmax])
            *pmax = i;
        else if (x[i] < x[*pmin])
            *pmin = i;
        mx[0] = fmax(mx[0], x[i]);
        mn[0] = fmin(mn[0], x[i]);
        mx[1] = fmax(mx[1], y[i]);
        mn[1] = fmin(mn[1], y[i]);
    }
    for (int k = 0; k < 2; k++) {
        double m = fmax(mx[k], -mn[k]);
        maxabs = fmax(maxabs, m);
        sumabs += m;
    }
    double distround = DBL_EPSILON * (2.0 * fmin(sqrt(2.0) * maxabs, sumabs) * 1.01 + maxabs);
    memset(h, 0, sizeof *h);
    h->x = x;
    h->y = y;
    h->newlist = h->vislist = NONE;
    h->next_vid = 1;
    h->distround = distround;
    h->centrum_radius = 2.0 * distround; /* premerge_centrum: 0 ('C-0') + 2·DISTround */
    h->min_visible = h->centrum_radius;
    h->max_coplanar = h->min_visible;
    h->min_outside = 2.0 * h->min_visible;
}

/* The initial simplex's third point: furthest from the line through pmin and pmax (NONE when
 * every point is on it). */
static size_t third_point(const double *x, const double *y, size_t n, size_t pmin, size_t pmax)
{
    size_t p3 = NONE;
    double best_det = 0.0;
    for (size_t i = 0; i < n; i++) {
        double det =
            (x[pmax] - x[pmin]) * (y[i] - y[pmin]) - (y[pmax] - y[pmin]) * (x[i] - x[pmin]);
        if (fabs(det) > best_det) {
            best_det = fabs(det);
            p3 = i;
        }
    }
    return p3;
}

/* The initial triangle's facets in Qhull's order, (pmin, pmax), (pmin, p3), (pmax, p3), into
 * init; 2 when its centroid is not clearly inside every facet (qh_initialhull: "initial simplex
 * is flat", where Qhull and so the calculator stop), else 0. */
static int initial_simplex(hull_t *h, size_t pmin, size_t pmax, size_t p3, size_t init[3])
{
    const double *x = h->x, *y = h->y;
    double orient =
        (x[pmax] - x[pmin]) * (y[p3] - y[pmin]) - (y[pmax] - y[pmin]) * (x[p3] - x[pmin]);
    /* counter-clockwise pmin → pmax → p3, else pmin → p3 → pmax: each facet's ends oriented so,
     * its neighbours the next two facets round the triangle in that direction */
    const bool ccw = orient > 0;
    const size_t ccw_ends[3][2] = {{pmin, pmax}, {p3, pmin}, {pmax, p3}};
    const size_t cw_ends[3][2] = {{pmax, pmin}, {pmin, p3}, {p3, pmax}};
    const size_t(*ends)[2] = ccw ? ccw_ends : cw_ends;
    for (int i = 0; i < 3; i++)
        init[i] = new_facet(h, ends[i][0], ends[i][1]);
    for (int i = 0; i < 3; i++) {
        h->f[init[i]].nb_a = init[(i + (ccw ? 1 : 2)) % 3];
        h->f[init[i]].nb_b = init[(i + (ccw ? 2 : 1)) % 3];
        append_facet(h, init[i]);
    }
    double minangle = 1.0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            if (i != j)
                minangle = fmin(minangle, h->f[init[i]].nx * h->f[init[j]].nx +
                                              h->f[init[i]].ny * h->f[init[j]].ny);
    h->narrow = minangle < MAX_NARROW;
    double cx = (x[pmin] + x[pmax] + x[p3]) / 3.0, cy = (y[pmin] + y[pmax] + y[p3]) / 3.0;
    for (int i = 0; i < 3; i++)
        if (dist_xy(h, init[i], cx, cy) > -h->distround)
            return 2;
    return 0;
}

/* qh_partitionall: every point not yet taken goes to the outside set of the first initial facet
 * it is clearly outside, the rest by partition_point; then qh_furthestnext puts the facet with
 * the furthest point of all first. -1 when out of memory. */
static int partition_all(hull_t *h, const size_t init[3], size_t n, bool *taken)
{
    h->next_f = h->head;
    for (int k = 0; k < 3; k++) {
        facet_t *f = &h->f[init[k]];
        for (size_t i = 0; i < n; i++) {
            if (taken[i])
                continue;
            double d = dist(h, init[k], i);
            if (d >= dist_outside(h)) {
                taken[i] = true;
                if (push_outside(f, i, d))
                    return -1;
            }
        }
    }
    for (size_t i = 0; i < n; i++)
        if (!taken[i] && partition_point(h, i))
            return -1;
    size_t bestf = NONE;
    double bestd = -DBL_MAX;
    for (size_t fi = h->head; fi != h->tail; fi = h->f[fi].next)
        if (h->f[fi].nout && h->f[fi].furthest > bestd) {
            bestd = h->f[fi].furthest;
            bestf = fi;
        }
    h->next_f = h->head;
    if (bestf != NONE) {
        remove_facet(h, bestf);
        prepend_facet(h, bestf, &h->next_f);
    }
    return 0;
}

/* qh_buildhull / qh_nextfurthest: each facet's furthest outside point is added in turn (a
 * narrow hull skips points not clearly outside). -1 when out of memory. */
static int build_hull(hull_t *h)
{
    h->next_f = h->head;
    while (h->next_f != h->tail) {
        size_t fi = h->next_f;
        facet_t *f = &h->f[fi];
        if (f->nout == 0 || (h->narrow && f->furthest < h->min_outside)) {
            h->next_f = f->next;
            continue;
        }
        size_t p = f->out[--f->nout]; /* the furthest; fi is visible from it and goes */
        if (add_point(h, fi, p))
            return -1;
    }
    return 0;
}

int scaling__qhull_frontier(const double *x, const double *y, size_t n, double anchor_x,
                            double anchor_y, bool *good_vertex, size_t *n_good)
{
    *n_good = 0;
    memset(good_vertex, 0, n * sizeof *good_vertex);
    if (n < 3)
        return 1;
    hull_t h;
    size_t pmin, pmax;
    roundoff(&h, x, y, n, &pmin, &pmax);
    size_t p3 = third_point(x, y, n, pmin, pmax);
    if (pmin == pmax || p3 == NONE)
        return 1; /* all points on a line: Qhull refuses such input */

    int rc = -1;
    h.f = calloc(2 * n + 8, sizeof *h.f);
    bool *taken = calloc(n, sizeof *taken);
    h.vid = calloc(n, sizeof *h.vid);
    h.vis = calloc(2 * n + 8, sizeof *h.vis);
    h.merges = calloc(4 * n + 16, sizeof *h.merges);
    if (!h.f || !taken || !h.vid || !h.vis || !h.merges)
        goto out;
    h.nf = 1; /* facet 0 is the list's sentinel tail */
    h.f[0].prev = h.f[0].next = NONE;
    h.tail = h.head = h.next_f = 0;

    size_t init[3];
    if (initial_simplex(&h, pmin, pmax, p3, init)) {
        rc = 2;
        goto out;
    }
    taken[pmin] = taken[pmax] = taken[p3] = true;
    h.vid[pmin] = h.next_vid++;
    h.vid[pmax] = h.next_vid++;
    h.vid[p3] = h.next_vid++;
    if (partition_all(&h, init, n, taken) || build_hull(&h))
        goto out;

    /* qh_findgood with 'QG0': good facets have the anchor strictly above them. */
    for (size_t fi = h.head; fi != h.tail; fi = h.f[fi].next)
        if (dist_xy(&h, fi, anchor_x, anchor_y) > 0.0)
            good_vertex[h.f[fi].a] = good_vertex[h.f[fi].b] = true;
    for (size_t i = 0; i < n; i++)
        *n_good += good_vertex[i];
    rc = 0;
out:
    if (h.f)
        for (size_t i = 0; i < h.nf; i++)
            free(h.f[i].out);
    free(h.f);
    free(taken);
    free(h.vid);
    free(h.vis);
    free(h.merges);
    return rc;
}

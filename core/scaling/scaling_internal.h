/* scaling_internal.h — private to core/scaling: what its files share and nothing else uses. */
#ifndef FATHOM_SCALING_INTERNAL_H
#define FATHOM_SCALING_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "scaling.h"

/* The calculator's compute frontier (scaling_hull.c): marks good_vertex[i] for the points
 * (x[i], y[i]) that are vertices of hull facets visible from the anchor, replaying Qhull's
 * "QG0" hull; *n_good counts them. Returns 0; 1 when the points span no hull (fewer than 3, or
 * collinear); 2 when they are too flat for Qhull's round-off (Qhull, and so the calculator,
 * stops there with "initial simplex is flat"); -1 on allocation failure. good_vertex has room
 * for n flags. */
int scaling__qhull_frontier(const double *x, const double *y, size_t n, double anchor_x,
                            double anchor_y, bool *good_vertex, size_t *n_good);

#endif

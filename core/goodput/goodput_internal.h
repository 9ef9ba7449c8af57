/* goodput_internal.h — private to core/goodput: what goodput_model.c and goodput_fit.c share.
 * Not part of the module's API; nothing outside core/goodput includes it. */
#ifndef FATHOM_GOODPUT_INTERNAL_H
#define FATHOM_GOODPUT_INTERNAL_H

#include <stdint.h>

#include "fathom_error.h"

/* 1 <= nodes <= GOODPUT_MAX_NODES, 1 <= replicas <= GOODPUT_MAX_REPLICAS, nodes <= replicas;
 * errors name nodes_field or replicas_field. */
int goodput__check_allocation(int64_t nodes, int64_t replicas, const char *nodes_field,
                              const char *replicas_field, fathom_error_t *err);

#endif

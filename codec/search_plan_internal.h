/* search_plan_internal.h — PRIVATE to the plan codec (search_plan_codec.c: the request;
 * search_plan_run.c: candidates and the answer). */
#ifndef FATHOM_SEARCH_PLAN_INTERNAL_H
#define FATHOM_SEARCH_PLAN_INTERNAL_H

#include <jansson.h>
#include <stdint.h>

#include "fathom_error.h"

/* Fills err with FATHOM_E_INTERNAL "out of memory"; returns -1. */
int codec_plan__oom(fathom_error_t *err);

/* The search sweep's request for one candidate and batch of a normalized plan (new reference;
 * NULL when memory ran out): the plan's model, datatype and options, the system object given,
 * num_procs, and max_batch_size = batch_tokens / seq_size. */
json_t *codec_plan__search_body(const json_t *spec, const json_t *system, int64_t num_procs,
                                int64_t batch_tokens, const json_t *options);

#endif

/* search_plan_internal.h — PRIVATE to the plan codec (search_plan_codec.c: the request;
 * search_plan_run.c: candidates and the answer). */
#ifndef FATHOM_SEARCH_PLAN_INTERNAL_H
#define FATHOM_SEARCH_PLAN_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "endpoint.h"
#include "fathom_error.h"
#include "search.h"

/* Fills err with FATHOM_E_INTERNAL "out of memory"; returns -1. */
int codec_plan__oom(fathom_error_t *err);

/* The search sweep's request for one candidate and batch of a normalized plan (new reference;
 * NULL when memory ran out): the plan's model, datatype and options, the system object given,
 * num_procs, and max_batch_size = batch_tokens / seq_size. */
json_t *codec_plan__search_body(const json_t *spec, const json_t *system, int64_t num_procs,
                                int64_t batch_tokens, const json_t *options);

/* A candidate's search request for one batch (decoded by the search's own decoder), and how it
 * is walked: in one exhaustive walk up to PLAN_EXHAUSTIVE_MAX executions, in the search's two
 * stages beyond (options.refine_units = SEARCH_REFINE_UNITS; core/search/search.h). *executions
 * gets the executions it will try at most, *exhaustive those of one exhaustive walk (both 0
 * when the search refuses the count: more work units than it takes). -1 with err when the
 * request does not decode (err names the field) or memory ran out. */
int codec_plan__search_request(const json_t *spec, const codec_ctx_t *ctx, const json_t *system,
                               int64_t num_procs, int64_t batch_tokens, bool fed,
                               search_request_t *req, uint64_t *executions, uint64_t *exhaustive,
                               fathom_error_t *err);

/* The batches a candidate tries, in tokens, into out (room for PLAN_MAX_BATCHES); *fed is true
 * for "auto": the search rounds each to its layout (options.fed_batch) instead of needing the
 * data-parallel degree to divide it. "auto" is the law's batch in whole sequences (at least
 * one), and with goodput statistics also PLAN_AUTO_GOODPUT_FACTORS times it. Returns how many. */
size_t codec_plan__batches(const json_t *spec, int64_t *out, bool *fed);

#endif

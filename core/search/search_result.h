/* search_result.h — PRIVATE to core/search: how the walk (search.c) puts an estimated
 * execution into a result's best list (search_result.c). */
#ifndef FATHOM_SEARCH_RESULT_H
#define FATHOM_SEARCH_RESULT_H

#include <stdint.h>

#include "search.h"

/* Where a candidate of this rate and enumeration position goes in r->best, or -1 when it does
 * not rank. */
int search__insertion_point(const search_result_t *r, double rate, uint32_t unit, uint32_t index);
/* Puts the candidate at `at` (from search__insertion_point), dropping the last when full. */
void search__insert_at(search_result_t *r, int at, const llm_execution_t *e,
                       const llm_result_t *res, uint32_t unit, uint32_t index);

#endif

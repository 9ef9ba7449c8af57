/* search_bound.h — PRIVATE to core/search: what lets the walk skip executions
 * that provably cannot enter the top N, without estimating them (the bound
 * pruning of search.c).
 *
 * A lower bound on the step time of every execution that differs from a given
 * one only in its network assignment and offload choices is that execution's
 * step time estimated on the "ideal network" system (every tier as good as the
 * best tier in every respect, taking no compute) with nothing offloaded: in the
 * model each communication term is a non-negative time that does not shrink
 * when a tier gets slower, and offloading only adds exposed transfer time.
 * Tests check the bound against every execution of small searches. */
#ifndef FATHOM_SEARCH_BOUND_H
#define FATHOM_SEARCH_BOUND_H

#include "search.h"

/* The system whose every network tier is the best of the system's tiers in
 * every respect (bandwidth, efficiency, latency, op scalars) and taking no
 * compute from the processors, of unbounded size and nothing required to be
 * filled (so any assignment is accepted). Memories and processors are the
 * system's own. */
void search_ideal_system(const llm_system_t *s, llm_system_t *out);

/* The execution whose estimate on the ideal system bounds e's group from below: e with nothing
 * offloaded, every degree on tier 0, and a flex dispatch costing nothing (the ideal system's one
 * tier never splits an expert group into domains, where flex sends less than the plain
 * all-to-all, so that is the bound that holds). With fewest_blocks, full recompute of one block
 * per chunk: the least any recompute_blocks the walk may choose reruns (the step time grows with
 * it). */
void search_ideal_execution(const llm_execution_t *e, bool fewest_blocks, llm_execution_t *out);

/* Whether a refusal of llm_estimate naming this field holds for every microbatch size of the
 * execution: the offload, ZeRO, context-parallel, kernel, FP8, interleaving, expert-layout and
 * overlap rules do not read the microbatch. (tensor_par's rule on microbatch·seq does, as do
 * the network and efficiency-curve refusals: those are not listed.) */
bool search_refusal_spans_microbatches(const char *field);

/* The top_n highest sample rates seen, highest first: the rate an execution
 * must beat to rank. */
typedef struct {
    int top_n, n;
    double rate[SEARCH_TOP_N_MAX];
} search_rates_t;

void search_rates_init(search_rates_t *t, int top_n);
void search_rates_add(search_rates_t *t, double rate);
/* The N-th best rate once N rates were seen, else 0 (nothing can be ruled out
 * yet). */
double search_rates_floor(const search_rates_t *t);

/* Whether no execution with a step time of at least `bound_s` seconds can rank:
 * its rate batch / bound_s stays strictly below floor_rate, with a relative
 * margin of 1e-9 so that the rounding of two different sums can never turn a
 * tie into a skip. bound_s <= 0 (no bound known) rules nothing out. */
bool search_out_of_reach(double batch, double bound_s, double floor_rate);

#endif

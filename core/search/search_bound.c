/* search_bound.c — the ideal-network system and the running top-N floor behind
 * the search's bound pruning (search_bound.h). */
#include "search_bound.h"

#include <math.h>
#include <string.h>

void search_ideal_system(const llm_system_t *s, llm_system_t *out)
{
    /* The best of every tier in every respect: the highest bandwidth and
     * efficiency, the lowest latency, processor usage and op scalars and offsets.
     * A collective costs latency + bytes·scalar·(1 + offset/peers) /
     * (bandwidth·efficiency), each factor no larger here than on any real tier,
     * so no assignment of the degrees to tiers communicates faster. (The lowest
     * processor usage is taken, then set to 0 below.) */
    llm_network_t best = s->networks[0];
    for (int i = 1; i < s->num_networks; i++) {
        const llm_network_t *n = &s->networks[i];
        best.bandwidth_gbps = fmax(best.bandwidth_gbps, n->bandwidth_gbps);
        best.efficiency = fmax(best.efficiency, n->efficiency);
        best.latency_s = fmin(best.latency_s, n->latency_s);
        best.processor_usage = fmin(best.processor_usage, n->processor_usage);
        /* the NCCL model's (doc/collectives.md): the most in-switch reduction, the least falloff */
        best.nvls_efficiency = fmax(best.nvls_efficiency, n->nvls_efficiency);
        best.sharp = best.sharp || n->sharp;
        best.scale_falloff = fmin(best.scale_falloff, n->scale_falloff);
        for (int op = 0; op < LLM_OP__COUNT; op++) {
            best.ops[op].scalar = fmin(best.ops[op].scalar, n->ops[op].scalar);
            best.ops[op].offset = fmin(best.ops[op].offset, n->ops[op].offset);
        }
    }
    /* communication takes no compute; any assignment of the degrees is accepted,
     * and an all-to-all never leaves the tier */
    best.processor_usage = 0;
    best.size = INT64_MAX / 4;
    best.must_be_filled = false;
    /* NVLink's hops, the shortest (every group of the ideal execution sits on tier 0) */
    best.link = LLM_LINK_NVLINK;
    *out = *s;
    for (int i = 0; i < out->num_networks; i++)
        out->networks[i] = best;
    /* The host stays as it is: the same execution launches the same kernels, and a pass lasts
     * max(host, GPU) (llm_host.h), which a faster GPU side never makes longer. (Its exposed
     * part, max(0, host − GPU), does grow; the step does not, now that data parallelism's
     * windows are the pass as it lasts, llm_stages.c. Leaving the host out here hid that
     * double count and loosened the bound for every host-bound layout.) */
}

void search_ideal_execution(const llm_execution_t *e, bool fewest_blocks, llm_execution_t *out)
{
    *out = *e;
    if (fewest_blocks && out->activation_recompute == LLM_RECOMPUTE_FULL)
        out->recompute_blocks = 1;
    out->weight_offload = out->activations_offload = out->optimizer_offload = false;
    out->tensor_par_net = out->pipeline_par_net = out->data_par_net = 0;
    out->context_par_net = out->expert_par_net = 0;
    if (out->moe_dispatcher == LLM_MOE_DISPATCH_FLEX)
        out->moe_dispatcher = LLM_MOE_DISPATCH__FREE;
}

void search_rates_init(search_rates_t *t, int top_n)
{
    memset(t, 0, sizeof *t);
    t->top_n = top_n < 1 ? 1 : top_n > SEARCH_TOP_N_MAX ? SEARCH_TOP_N_MAX : top_n;
}

void search_rates_add(search_rates_t *t, double rate)
{
    if (!(rate > 0))
        return; /* NaN never ranks */
    if (t->n == t->top_n && !(rate > t->rate[t->n - 1]))
        return;
    int at = t->n < t->top_n ? t->n++ : t->n - 1;
    while (at > 0 && t->rate[at - 1] < rate) {
        t->rate[at] = t->rate[at - 1];
        at--;
    }
    t->rate[at] = rate;
}

double search_rates_floor(const search_rates_t *t)
{
    return t->n == t->top_n ? t->rate[t->n - 1] : 0;
}

bool search_out_of_reach(double batch, double bound_s, double floor_rate)
{
    if (!(bound_s > 0) || !(floor_rate > 0))
        return false;
    return batch / bound_s < floor_rate * (1 - 1e-9);
}

bool search_refusal_spans_microbatches(const char *field)
{
    static const char *const spanning[] = {
        "execution.weight_offload",        "execution.activations_offload",
        "execution.optimizer_offload",     "execution.zero_stage",
        "execution.context_par",           "execution.shard_group",
        "execution.fp8",                   "execution.attention_kernel",
        "execution.pipeline_interleaving", "execution.attention_type",
        "execution.expert_par",            "execution.expert_tensor_par",
        "execution.tensor_par_overlap",    "execution.seq_par_ag_redo",
        "execution.activation_recompute",  "execution.data_par_overlap",
        "execution.datatype"};
    for (size_t i = 0; i < sizeof spanning / sizeof spanning[0]; i++)
        if (strcmp(field, spanning[i]) == 0)
            return true;
    return false;
}

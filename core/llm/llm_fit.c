/* llm_fit.c — the cheapest change that makes an execution fit in memory (llm.h,
 * llm_cheapest_fitting_change; doc/memory.md "The cheapest fitting change").
 *
 * A layout that does not fit is not an answer a planner can use; the step-time page offers the
 * change that makes it fit at the least step time. Each candidate changes what the runs change
 * when they run out of memory and nothing else (the datatype, the layout's degrees and the
 * batch stay as given):
 *   selective recompute   each module set of llm_recompute_module_ladder (with the current
 *                         activation_recompute "none" or "attn_only"); under torchtitan, which
 *                         has no module sets, per-op checkpointing (llm_selective_op_applies)
 *   FP8 storage           with fp8: the activations' FP8 cache, FP8 primary weights
 *   16-bit moments        optimizer_state_datatype bfloat16
 *   a larger shard group  the next ZeRO stage (to 3), every data-parallel rank in the group
 *   a smaller microbatch  half the microbatch (more microbatches, the same batch)
 *   full recompute        of the fewest blocks of each pipeline chunk (recompute_blocks), then
 *                         of every block
 * and, when none of them fits alone, all the savers above at once with each full-recompute
 * choice. Every candidate is estimated (llm_estimate); the fitting one with the least step time
 * wins, ties going to the earlier. Pure and allocation-free like llm_estimate. */
#include <string.h>

#include "llm_internal.h"

/* Estimates c and keeps it in *out when it fits and is faster than what *out holds. */
static void consider(const fathom_model_t *m, const llm_system_t *s, const llm_execution_t *c,
                     llm_fit_change_t *out)
{
    llm_result_t r;
    if (llm_estimate(m, s, c, &r, NULL) || !r.fits_memory)
        return;
    if (out->found && !(r.stats.total_time < out->step_time))
        return;
    out->found = true;
    out->execution = *c;
    out->step_time = r.stats.total_time;
    out->mem_tier1_bytes = r.mem_tier1_bytes;
}

/* torchtitan's per-op selective checkpointing on c where it applies (llm_selective_op_applies):
 * it chooses what a block reruns itself, so with activation_recompute "none". */
static void select_op(llm_execution_t *c)
{
    if (!llm_selective_op_applies(c))
        return;
    c->activation_recompute = LLM_RECOMPUTE_NONE;
    c->selective_ac = LLM_SAC_OP;
}

/* Every memory saver the execution can take at once (the last resort before full recompute). */
static llm_execution_t all_savers(const fathom_model_t *m, const llm_execution_t *e)
{
    llm_execution_t c = *e;
    unsigned sets[LLM_RECOMPUTE_MODULE_SETS];
    const int n = llm_recompute_module_ladder(m, e, sets);
    if (n > 0)
        c.recompute_modules |= sets[n - 1];
    select_op(&c);
    if (e->fp8) {
        c.fp8_activation_cache = true;
        c.fp8_params = true;
    }
    c.optimizer_state_datatype = LLM_STATE_BFLOAT16;
    if (e->data_par * llm_context_par(e) > 1) {
        c.zero_stage = 3;
        c.optimizer_sharding = true;
        c.shard_group = 0;
    }
    return c;
}

/* Full recompute of the fewest blocks of each chunk that fit, then of every block. */
static void full_recompute(const fathom_model_t *m, const llm_system_t *s,
                           const llm_execution_t *e, int64_t chunk, llm_fit_change_t *out)
{
    llm_execution_t c = *e;
    c.activation_recompute = LLM_RECOMPUTE_FULL;
    c.recompute_modules = 0;
    for (int64_t n = 1; !m->calculon_block && !c.activations_offload && n < chunk; n++) {
        c.recompute_blocks = n;
        llm_result_t r;
        if (llm_estimate(m, s, &c, &r, NULL) == 0 && r.fits_memory) {
            consider(m, s, &c, out);
            return; /* more blocks only cost more */
        }
    }
    c.recompute_blocks = 0;
    consider(m, s, &c, out);
}

int llm_cheapest_fitting_change(const fathom_model_t *m, const llm_system_t *s,
                                const llm_execution_t *e, llm_fit_change_t *out)
{
    memset(out, 0, sizeof *out);
    llm_result_t base;
    if (!e->training || llm_estimate(m, s, e, &base, NULL) || base.fits_memory)
        return 0;
    llm_execution_t c;
    if (e->activation_recompute != LLM_RECOMPUTE_FULL) {
        unsigned sets[LLM_RECOMPUTE_MODULE_SETS];
        const int n = llm_recompute_module_ladder(m, e, sets);
        for (int i = 0; i < n; i++) {
            c = *e;
            c.recompute_modules |= sets[i];
            consider(m, s, &c, out);
        }
        c = *e;
        select_op(&c);
        if (c.selective_ac != e->selective_ac)
            consider(m, s, &c, out);
    }
    if (!m->calculon_block) {
        if (e->fp8 && !e->fp8_activation_cache) {
            c = *e;
            c.fp8_activation_cache = true;
            consider(m, s, &c, out);
        }
        if (e->fp8 && !e->fp8_params) {
            c = *e;
            c.fp8_params = true;
            consider(m, s, &c, out);
        }
        if (e->optimizer_state_datatype == LLM_STATE_FLOAT32) {
            c = *e;
            c.optimizer_state_datatype = LLM_STATE_BFLOAT16;
            consider(m, s, &c, out);
        }
        const int zero = llm_zero_stage(e);
        if (e->data_par * llm_context_par(e) > 1 && zero < 3) {
            c = *e;
            c.zero_stage = zero + 1;
            c.optimizer_sharding = true;
            consider(m, s, &c, out);
        }
        if (zero >= 1 && llm_shard_group(e) < e->data_par * llm_context_par(e)) {
            c = *e;
            c.shard_group = 0;
            consider(m, s, &c, out);
        }
    }
    if (e->microbatch_size > 1 && e->microbatch_size % 2 == 0) {
        c = *e;
        c.microbatch_size = e->microbatch_size / 2;
        consider(m, s, &c, out);
    }
    const int64_t chunk = llm_largest_chunk(base.blocks_per_proc, e->pipeline_interleaving);
    full_recompute(m, s, e, chunk, out);
    if (!out->found && !m->calculon_block) {
        c = all_savers(m, e);
        consider(m, s, &c, out);
        if (!out->found)
            full_recompute(m, s, &c, chunk, out);
    }
    out->base_step_time = base.stats.total_time;
    return 0;
}

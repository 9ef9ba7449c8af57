/* llm_fit.c — the cheapest change that makes an execution fit in memory (llm.h,
 * llm_cheapest_fitting_change; doc/memory.md "The cheapest fitting change").
 *
 * A layout that does not fit is not an answer a planner can use; the step-time page offers the
 * change that makes it fit at the least step time. Each saver changes what the runs change
 * when they run out of memory and nothing else (the datatype, the layout's degrees and the
 * batch stay as given):
 *   selective recompute   one module set of llm_recompute_module_ladder (with the current
 *                         activation_recompute "none" or "attn_only"); under a PyTorch stack,
 *                         per-op checkpointing (llm_selective_op_applies): torchtitan's one
 *                         choice, as it has no module sets, the fsdp stack's last
 *   FP8 storage           with fp8: the activations' FP8 cache, FP8 primary weights
 *   16-bit moments        optimizer_state_datatype bfloat16
 *   a larger shard group  a higher ZeRO stage (to 3), every data-parallel rank in the group
 *   a smaller microbatch  half the microbatch (more microbatches, the same batch)
 * Every combination of them is a candidate (at most 5·2·2·2·8·2 = 640, those changing fewer
 * things first; a layout that needs two savers gets the two, not all of them at once); then
 * full recompute of the fewest blocks of each pipeline chunk (recompute_blocks), then of every
 * block, and when nothing fits, full recompute with all the savers. Every candidate is
 * estimated (llm_estimate); the fitting one with the least step time wins, ties going to the
 * earlier. Pure and allocation-free like llm_estimate. */
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

/* Full recompute of the fewest blocks of each chunk that fit, then of every block. */
static void full_recompute(const fathom_model_t *m, const llm_system_t *s,
                           const llm_execution_t *e, int64_t chunk, llm_fit_change_t *out)
{
    llm_execution_t c = *e;
    c.activation_recompute = LLM_RECOMPUTE_FULL;
    c.recompute_modules = 0; /* a whole block reruns every module and op */
    c.selective_ac = LLM_SAC_NONE;
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

/* The savers a candidate combines, one choice each: choice 0 leaves the execution as given. */
enum { SAVE_MODULES, SAVE_FP8_CACHE, SAVE_FP8_PARAMS, SAVE_MOMENTS, SAVE_SHARDS, SAVE_MICROBATCH,
       SAVERS };
/* ZeRO stages after the given one, each with the given shard group and with the whole group */
#define SHARD_CHOICES 8

typedef struct {
    int count[SAVERS];
    unsigned sets[LLM_RECOMPUTE_MODULE_SETS];
    bool op; /* SAVE_MODULES' last choice is per-op checkpointing (after any module sets) */
    int zero[SHARD_CHOICES];
    bool whole[SHARD_CHOICES];
} savers_t;

static void savers_of(const fathom_model_t *m, const llm_execution_t *e, savers_t *v)
{
    for (int d = 0; d < SAVERS; d++)
        v->count[d] = 1;
    v->zero[0] = llm_zero_stage(e);
    v->whole[0] = false;
    if (e->activation_recompute != LLM_RECOMPUTE_FULL)
        v->count[SAVE_MODULES] += llm_recompute_module_ladder(m, e, v->sets);
    v->op = llm_selective_op_applies(e);
    v->count[SAVE_MODULES] += v->op;
    if (!m->calculon_block) {
        v->count[SAVE_FP8_CACHE] += e->fp8 && !e->fp8_activation_cache;
        v->count[SAVE_FP8_PARAMS] += e->fp8 && !e->fp8_params;
        v->count[SAVE_MOMENTS] += e->optimizer_state_datatype == LLM_STATE_FLOAT32;
        const int64_t all = e->data_par * llm_context_par(e);
        const bool partial = llm_shard_group(e) < all;
        int n = 1;
        for (int z = v->zero[0]; all > 1 && z <= 3; z++) {
            if (z > v->zero[0]) {
                v->zero[n] = z;
                v->whole[n++] = false;
            }
            if (partial && z >= 1) {
                v->zero[n] = z;
                v->whole[n++] = true;
            }
        }
        v->count[SAVE_SHARDS] = n;
    }
    v->count[SAVE_MICROBATCH] += e->microbatch_size > 1 && e->microbatch_size % 2 == 0;
}

/* The execution of choice c[d] of every saver d. */
static llm_execution_t combine(const llm_execution_t *e, const savers_t *v, const int c[SAVERS])
{
    llm_execution_t x = *e;
    if (v->op && c[SAVE_MODULES] == v->count[SAVE_MODULES] - 1) { /* it chooses what a block
                                                                      * reruns itself */
        x.activation_recompute = LLM_RECOMPUTE_NONE;
        x.selective_ac = LLM_SAC_OP;
    } else if (c[SAVE_MODULES] > 0) {
        x.recompute_modules |= v->sets[c[SAVE_MODULES] - 1];
    }
    if (c[SAVE_FP8_CACHE])
        x.fp8_activation_cache = true;
    if (c[SAVE_FP8_PARAMS])
        x.fp8_params = true;
    if (c[SAVE_SHARDS] > 0) {
        x.zero_stage = v->zero[c[SAVE_SHARDS]];
        x.optimizer_sharding = true;
        if (v->whole[c[SAVE_SHARDS]])
            x.shard_group = 0;
    }
    /* FSDP2 keeps its moments in fp32 (llm_stack.c refuses 16-bit ones there): with weights
     * sharded under a PyTorch stack this saver is not one, or every-saver's fallback below
     * would be refused whole (Llama 3 8B under torchtitan on 8 A100 40GB at ZeRO 0 found no
     * change, where ZeRO-3, full recompute and half the microbatch fit) */
    if (c[SAVE_MOMENTS] && (x.stack == LLM_STACK_MEGATRON || !llm_fsdp_sharded_weights(&x)))
        x.optimizer_state_datatype = LLM_STATE_BFLOAT16;
    if (c[SAVE_MICROBATCH])
        x.microbatch_size = e->microbatch_size / 2;
    return x;
}

/* Every combination of the savers, those that change fewer things first (a tie in step time
 * goes to the fewer changes): the cheapest may need two savers where each alone falls short
 * (ZeRO-3 and half the microbatch rather than all of them at once). */
static void combinations(const fathom_model_t *m, const llm_system_t *s, const llm_execution_t *e,
                         const savers_t *v, llm_fit_change_t *out)
{
    for (int changes = 1; changes <= SAVERS; changes++) {
        int c[SAVERS] = {0};
        for (;;) {
            int d = 0, changed = 0;
            for (int k = 0; k < SAVERS; k++)
                changed += c[k] > 0;
            if (changed == changes) {
                const llm_execution_t x = combine(e, v, c);
                consider(m, s, &x, out);
            }
            while (d < SAVERS && ++c[d] == v->count[d])
                c[d++] = 0;
            if (d == SAVERS)
                break;
        }
    }
}

int llm_cheapest_fitting_change(const fathom_model_t *m, const llm_system_t *s,
                                const llm_execution_t *e, llm_fit_change_t *out)
{
    memset(out, 0, sizeof *out);
    llm_result_t base;
    if (!e->training || llm_estimate(m, s, e, &base, NULL) || base.fits_memory)
        return 0;
    savers_t v;
    savers_of(m, e, &v);
    combinations(m, s, e, &v, out);
    const int64_t chunk = llm_largest_chunk(base.blocks_per_proc, e->pipeline_interleaving);
    full_recompute(m, s, e, chunk, out);
    if (!out->found && !m->calculon_block) {
        int all[SAVERS]; /* every saver at its last choice: the most each saves */
        for (int d = 0; d < SAVERS; d++)
            all[d] = v.count[d] - 1;
        const llm_execution_t c = combine(e, &v, all);
        full_recompute(m, s, &c, chunk, out);
    }
    out->base_step_time = base.stats.total_time;
    return 0;
}

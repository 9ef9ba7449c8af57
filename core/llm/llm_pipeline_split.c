/* llm_pipeline_split.c — which blocks each pipeline stage holds: the even split (the first
 * L mod pp stages one block more), the end stages a request or a stack's own split gives
 * (torchtitan's split points, DualPipe's balanced ends), and the largest interleaved chunk. The
 * step (llm_model.c split_pipeline) and the memory of every rank (llm_memory.c) read it. */
#include <stdint.h>

#include "llm_internal.h"

int64_t llm_largest_chunk(int64_t blocks_per_proc, int64_t interleaving)
{
    return (blocks_per_proc + interleaving - 1) / interleaving;
}

void llm_end_stage_blocks(const fathom_model_t *m, const llm_execution_t *e, int64_t *first,
                          int64_t *last)
{
    *first = e->first_stage_blocks;
    *last = e->last_stage_blocks;
    const int64_t L = m->num_blocks, pp = e->pipeline_par, mtp = m->mtp_blocks;
    if (*first >= 1 || *last >= 1 || m->calculon_block || pp < 2 || L < pp)
        return;
    if (e->stack == LLM_STACK_TORCHTITAN) {
        /* torchtitan's generate_split_points (pipelining_utils.py at 9dec370) over S = pp·v
         * stages, stage j on rank j mod pp: base = L / S blocks each, the first stage base and
         * the next L mod S stages one more. When those are all but the two end stages the end
         * ranks hold v·(base + 1) − 1 and every other rank v·(base + 1); otherwise the ranks are
         * not first/middle/last alike and the even split stands. */
        const int64_t v = e->pipeline_interleaving > 1 ? e->pipeline_interleaving : 1;
        const int64_t S = pp * v, base = L / S;
        if (S > 2 && L % S == S - 2)
            *first = *last = v * (base + 1) - 1;
        return;
    }
    if (llm_pp_schedule(e) != LLM_PP_DUALPIPE)
        return;
    /* DualPipe's rank 0 holds both end stages (DeepSeek-V3 report sec. 3.2.3): counted in
     * blocks, the embedding, the output layer with its loss and each MTP depth weigh one each
     * (Megatron's account_for_embedding_in_pipeline_split / account_for_loss_in_pipeline_split;
     * Megatron-Bridge places the MTP depths with the loss; a model without a vocabulary has
     * neither end layer). U = L + 2 + mtp units over pp
     * stages: the middle ones take m = min(ceil(U/pp), floor((L − 2)/(pp − 2))) blocks, the
     * ends the rest R = L − (pp − 2)·m, split so that their units f + 1 and l + 1 + mtp are as
     * even as they can be, each end at least one block. */
    const int64_t U = L + (m->vocab_size > 0 ? 2 : 0) + mtp;
    int64_t mid = (U + pp - 1) / pp;
    if (pp > 2 && (L - 2) / (pp - 2) < mid)
        mid = (L - 2) / (pp - 2);
    const int64_t R = L - (pp - 2) * mid;
    int64_t f = (R + mtp + 1) / 2;
    f = f > R - 1 ? R - 1 : f;
    *first = f;
    *last = R - f;
}

int64_t llm_stage_blocks(const fathom_model_t *m, const llm_execution_t *e, int64_t stage,
                         int64_t *first)
{
    int64_t f, l;
    llm_end_stage_blocks(m, e, &f, &l);
    return llm__stage_blocks_given(m, e, f, l, stage, first);
}

int64_t llm__stage_blocks_given(const fathom_model_t *m, const llm_execution_t *e, int64_t f,
                                int64_t l, int64_t stage, int64_t *first)
{
    const int64_t L = m->num_blocks, pp = e->pipeline_par;
    int64_t start, n;
    if (f < 1 && l < 1) {
        const int64_t bpp = (L + pp - 1) / pp, full = L % pp == 0 ? pp : L % pp;
        start = stage < full ? stage * bpp : full * bpp + (stage - full) * (bpp - 1);
        n = stage < full ? bpp : bpp - 1;
    } else {
        const int64_t given = (f >= 1) + (l >= 1), middle = pp - given;
        const int64_t each = middle > 0 ? (L - (f >= 1 ? f : 0) - (l >= 1 ? l : 0)) / middle : 0;
        const int64_t first_n = f >= 1 ? f : each;
        if (stage == 0) {
            start = 0;
            n = first_n;
        } else if (stage == pp - 1 && l >= 1) {
            start = L - l;
            n = l;
        } else {
            start = first_n + (stage - 1) * each;
            n = each;
        }
    }
    if (first)
        *first = start;
    return n;
}

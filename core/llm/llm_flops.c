/* llm_flops.c — the model FLOPs of a training step: the numerator of MFU, counted the way
 * Megatron-LM's num_floating_point_operations counts them (megatron/training/training.py), so
 * Fathom's MFU can be compared with the MFU runs publish.
 *
 * Per token, forward, with h hidden, q = heads·d and g = kv_heads·d projection widths, f the
 * feedforward width, s the sequence, V the vocabulary (2 FLOPs per multiply-add):
 *   Q, K, V projections     2·h·(q + 2g)
 *   scores and weighted sum 2·2·s·q · c      c = 1/2 for a causal mask, 1 otherwise
 *   output projection       2·q·h
 *   MLP                     2·h·f·(3 if gated else 2)
 *   logits                  2·h·V            (once per token, after the last block)
 * and backward twice forward: a step is 3·(forward)·batch·s. Not counted (as Megatron): the
 * embedding lookup, norms, activations, softmax, biases, the loss, and recomputation (that is
 * hardware FLOPs: llm_result_t.extra.hardware_flops).
 *
 * Calculon's block is counted as the step model runs it: the blocks only, no logits, and the
 * s×s scores in full (unfused attention computes them all). */
#include "llm.h"

/* Attention of one block per token, forward. MLA (n heads, rq, rkv, nope, rope, v; Megatron's
 * count, whose "+1" per LoRA rank stands for the latent norm):
 *   q     2·rq·(h + n·(nope+rope) + 1), or 2·h·n·(nope+rope) without q LoRA
 *   kv    2·(rkv·(h + n·(nope+v) + 1) + h·rope)
 *   out   2·n·v·h
 *   core  2·s·n·(nope + rope + v)·c       (Q·Kᵀ at the query width, P·V at v) */
static double attention_flops(const fathom_model_t *m, double c)
{
    const double h = (double)m->hidden, s = (double)m->seq_size, n = (double)m->attn_heads;
    if (m->mla.present) {
        const model_mla_t *a = &m->mla;
        const double rq = (double)a->q_lora_rank, rkv = (double)a->kv_lora_rank;
        const double qk = (double)(a->qk_nope_head_dim + a->qk_rope_head_dim);
        const double v = (double)a->v_head_dim;
        const double q = rq > 0 ? rq * (h + n * qk + 1) : h * n * qk;
        const double kv = rkv * (h + n * ((double)a->qk_nope_head_dim + v) + 1) +
                          h * (double)a->qk_rope_head_dim;
        return 2 * (q + kv + n * v * h) + 2 * s * n * (qk + v) * c;
    }
    const double q = n * (double)m->attn_size;
    const double g = (double)model_kv_heads(m) * (double)m->attn_size;
    return 2 * h * (q + 2 * g) + 2 * 2 * s * q * c + 2 * q * h;
}

/* MLP of one block per token, forward: dense 2·h·f·(3|2); MoE 2·h·(top_k·fe + S·fs)·(3|2) —
 * the top_k routed experts and the S shared ones; the router GEMM is not counted (Megatron). */
static double mlp_flops(const fathom_model_t *m, bool moe, double mult)
{
    const double h = (double)m->hidden;
    if (!moe)
        return 2 * h * (double)m->feedforward * mult;
    const model_moe_t *x = &m->moe;
    return 2 * h *
           ((double)x->top_k * (double)x->expert_feedforward +
            (double)x->shared_experts * (double)x->shared_expert_feedforward) *
           mult;
}

double llm_model_flops(const fathom_model_t *m, int64_t batch_size, bool training)
{
    const double h = (double)m->hidden, f = (double)m->feedforward, s = (double)m->seq_size;
    const double q = (double)m->attn_heads * (double)m->attn_size;
    const double g = (double)model_kv_heads(m) * (double)m->attn_size;
    const bool calculon = m->calculon_block;
    const double c = !calculon && m->causal ? 0.5 : 1.0;
    const double mlp = calculon || !m->gated_mlp ? 2.0 : 3.0;
    if (m->moe.num_experts > 0 || m->mla.present || m->mtp_blocks > 0) {
        /* per block kind; an MTP depth is a block of the last block's kind, plus its 2h→h
         * projection and three norms counted as 2·(3h + 2h²), plus one more output layer */
        const double attn = attention_flops(m, c), V = (double)m->vocab_size;
        double token = 0;
        for (int64_t i = 0; i < m->num_blocks; i++)
            token += attn + mlp_flops(m, model_block_is_moe(m, i), mlp);
        const double mtp = attn + mlp_flops(m, model_block_is_moe(m, m->num_blocks - 1), mlp) +
                           2 * (3 * h + 2 * h * h) + 2 * h * V;
        token += (double)m->mtp_blocks * mtp + 2 * h * V;
        return (training ? 3.0 : 1.0) * token * (double)batch_size * s;
    }
    double block = 2 * h * (q + 2 * g) + 2 * 2 * s * q * c + 2 * q * h + 2 * h * f * mlp;
    double token = (double)m->num_blocks * block + (calculon ? 0 : 2 * h * (double)m->vocab_size);
    return (training ? 3.0 : 1.0) * token * (double)batch_size * s;
}

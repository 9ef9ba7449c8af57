/* model_params.c — parameters of a model as its checkpoint counts them, by block kind and by
 * how tensor and expert parallelism lay them out (model.h). Shared by the analytic model
 * (core/transformer) and the step model's parameter counts and state memory (core/llm). */
#include "model.h"

/* One MLP of width f: up (×2 gated) and down, with biases when the model has them. */
double model_mlp_params(const fathom_model_t *m, double f)
{
    const double h = (double)m->hidden, b = m->bias ? 1 : 0, up = m->gated_mlp ? 2 : 1;
    return up * (h * f + b * f) + f * h + b * h;
}

/* Attention projections of one block, split into what TP divides and what it replicates.
 * Standard: h·(q + 2g) Q/K/V (+ biases) and q·h out (+ bias), all divided.
 * MLA (n heads, rq, rkv, nope, rope, v): q_a h·rq and its norm rq, kv_a h·(rkv + rope) and its
 * norm rkv are replicated; q_b rq·n·(nope + rope) (or h·n·(nope + rope) without q LoRA), kv_b
 * rkv·n·(nope + v) and out n·v·h are divided. */
static void attn_params(const fathom_model_t *m, double *split, double *replicated)
{
    const double h = (double)m->hidden, n = (double)m->attn_heads;
    if (m->mla.present) {
        const model_mla_t *a = &m->mla;
        const double rq = (double)a->q_lora_rank, rkv = (double)a->kv_lora_rank;
        const double qk = (double)(a->qk_nope_head_dim + a->qk_rope_head_dim);
        *replicated = (rq > 0 ? h * rq + rq : 0) + h * (rkv + (double)a->qk_rope_head_dim) + rkv;
        *split = (rq > 0 ? rq : h) * n * qk +
                 rkv * n * (double)(a->qk_nope_head_dim + a->v_head_dim) +
                 n * (double)a->v_head_dim * h;
        return;
    }
    const double q = n * (double)m->attn_size, g = (double)model_kv_heads(m) * (double)m->attn_size;
    const double qb = m->bias || m->qkv_bias ? 1 : 0, b = m->bias ? 1 : 0;
    *replicated = 0;
    *split = h * (q + 2 * g) + qb * (q + 2 * g) + q * h + b * h;
}

model_block_params_t model_block_params(const fathom_model_t *m, bool moe)
{
    model_block_params_t p;
    attn_params(m, &p.split, &p.replicated);
    p.replicated += 2 * model_norm_params(m);
    p.routed = 0;
    if (!moe) {
        p.split += model_mlp_params(m, (double)m->feedforward);
        return p;
    }
    const model_moe_t *x = &m->moe;
    const double E = (double)x->num_experts;
    p.replicated += (double)m->hidden * E + (x->router_bias ? E : 0); /* router GEMM h×E */
    p.split +=
        (double)x->shared_experts * model_mlp_params(m, (double)x->shared_expert_feedforward);
    p.routed = E * model_mlp_params(m, (double)x->expert_feedforward);
    return p;
}

double model_mtp_extra_params(const fathom_model_t *m)
{
    const double h = (double)m->hidden;
    return 2 * h * h + 3 * model_norm_params(m);
}

void model_parameters(const fathom_model_t *m, model_params_t *p)
{
    const double h = (double)m->hidden, V = (double)m->vocab_size;
    const double k = m->moe.num_experts > 0 ? (double)m->moe.top_k / (double)m->moe.num_experts
                                            : 0;
    double total = V * h + (m->position_embedding == MODEL_POS_LEARNED
                                ? h * (double)m->seq_size
                                : 0);
    total += model_norm_params(m) + (m->tied_embeddings ? 0 : V * h);
    double routed = 0, mtp = 0, mtp_routed = 0;
    const bool last_moe = model_block_is_moe(m, m->num_blocks - 1);
    for (int64_t i = 0; i < m->num_blocks + m->mtp_blocks; i++) {
        /* an MTP depth's block is of the kind of the last main block */
        model_block_params_t b =
            model_block_params(m, i < m->num_blocks ? model_block_is_moe(m, i) : last_moe);
        const double block = b.split + b.replicated + b.routed +
                             (i >= m->num_blocks ? model_mtp_extra_params(m) : 0);
        total += block;
        routed += b.routed;
        if (i >= m->num_blocks) {
            mtp += block;
            mtp_routed += b.routed;
        }
    }
    p->total = total;
    p->routed = routed;
    p->active = total - routed + routed * k; /* top_k of num_experts routed experts per token */
    p->mtp = mtp;
    p->mtp_active = mtp - mtp_routed + mtp_routed * k;
}

/* megatron_config.h — a Fathom model as Megatron-LM's arguments (megref_config_t), and a preset
 * by name, for the tests that compare the step model with the megatron_ref oracle. Vocabulary
 * unpadded; the router bias (DeepSeek-V3's score correction) is Megatron's linear bias of the
 * router, the only place its memory count reads --disable-bias-linear. */
#ifndef FATHOM_MEGATRON_CONFIG_H
#define FATHOM_MEGATRON_CONFIG_H

#include <string.h>

#include "megatron_ref.h"
#include "model_codec.h"

static inline megref_config_t megatron_config(const fathom_model_t *m)
{
    megref_config_t c;
    memset(&c, 0, sizeof c);
    c.num_layers = m->num_blocks;
    c.hidden = m->hidden;
    c.ffn_hidden = m->feedforward;
    c.num_heads = m->attn_heads;
    c.num_query_groups = model_kv_heads(m);
    c.kv_channels = m->attn_size;
    c.vocab = m->vocab_size;
    c.seq_length = m->seq_size;
    c.swiglu = m->gated_mlp;
    c.group_query_attention = !m->mla.present && model_kv_heads(m) != m->attn_heads;
    c.untie_embeddings = !m->tied_embeddings;
    c.rmsnorm = m->norm == MODEL_NORM_RMSNORM;
    c.disable_bias_linear = !m->moe.router_bias;
    c.num_experts = m->moe.num_experts;
    c.moe_router_topk = m->moe.top_k;
    c.moe_ffn_hidden = m->moe.expert_feedforward;
    c.moe_shared_expert_intermediate = m->moe.shared_experts * m->moe.shared_expert_feedforward;
    c.first_k_dense = m->moe.first_dense_blocks;
    c.moe_every = m->moe.every;
    c.multi_latent_attention = m->mla.present;
    c.q_lora_rank = m->mla.q_lora_rank;
    c.kv_lora_rank = m->mla.kv_lora_rank;
    c.qk_head_dim = m->mla.qk_nope_head_dim;
    c.qk_pos_emb_head_dim = m->mla.qk_rope_head_dim;
    c.v_head_dim = m->mla.v_head_dim;
    c.mtp_num_layers = m->mtp_blocks;
    return c;
}

/* A model preset by name (the test fails when it cannot be read). */
static inline fathom_model_t preset(const codec_presets_t *registry, const char *name)
{
    fathom_model_t m;
    fathom_error_t err;
    json_t *v = json_string(name);
    int rc = codec_model_decode(v, "model", registry, &m, &err);
    json_decref(v);
    if (rc)
        fail_msg("%s: %s", name, err.message);
    return m;
}

#endif

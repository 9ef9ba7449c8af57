/* model_codec.c — decoding and encoding the shared "model" member (see model_codec.h). */
#include "model_codec.h"

#include <string.h>

#include "hf_config.h"
#include "json_read.h"

static const char *const model_keys[] = {
    "hidden",     "feedforward", "seq_size",        "attn_heads",         "attn_size",
    "num_blocks", "vocab_size",  "bias",            "tied_embeddings",    "position_embedding",
    "kv_heads",   "gated_mlp",   "norm",            "qkv_bias",           "causal",
    "moe",        "mla",         "mtp_blocks",      "sliding_window",     "full_attention_every",
    "chunked_attention", "checkpoint_weights", NULL};
/* The fields of the modern block: a model giving none of them is Calculon's block. */
static const char *const modern_keys[] = {"kv_heads", "gated_mlp", "norm",       "qkv_bias",
                                          "causal",   "moe",       "mla",        "mtp_blocks",
                                          "sliding_window", "full_attention_every",
                                          "chunked_attention", NULL};
static const char *const moe_keys[] = {"num_experts",        "top_k",
                                       "expert_feedforward", "shared_experts",
                                       "shared_expert_feedforward", "first_dense_blocks",
                                       "every",              "router_bias",
                                       "router_groups",      "router_group_top_k", NULL};
static const char *const mla_keys[] = {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
                                       "qk_rope_head_dim", "v_head_dim", NULL};
#define MODEL_MAX_EXPERTS 4096
#define MODEL_MAX_MTP 16
const char *const codec_weights_format_names[] = {"bf16", "fp8",   "fp4",
                                                  "int4", "nvfp4", "mxfp4", NULL};

model_weights_t codec_weights_format(int index)
{
    return index == 4 ? MODEL_WEIGHTS_FP4 : index == 5 ? MODEL_WEIGHTS_MXFP4 : (model_weights_t)index;
}

const char *codec_weights_format_name(model_weights_t w)
{
    return codec_weights_format_names[w == MODEL_WEIGHTS_MXFP4 ? 5 : (int)w];
}

static const char *const position_names[] = {"learned", "none", "rope", NULL};
static const char *const norm_names[] = {"layernorm", "rmsnorm", NULL};

/* Group-limited routing (model.h): both fields or neither; the groups split the experts evenly
 * (Megatron asserts it), a token uses 1..router_groups of them, and those groups hold at least
 * top_k experts. router_groups 1 with router_group_top_k 1 is routing without groups. */
static int decode_router_groups(const model_moe_t *x, const char *p, fathom_error_t *err)
{
    char q[JR_PATH_MAX];
    const int64_t g = x->router_groups, gk = x->router_group_top_k;
    if (g == 0 && gk == 0)
        return 0;
    if (g == 0 || gk == 0) {
        jr_path(q, sizeof q, p, g == 0 ? "router_groups" : "router_group_top_k");
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, q,
                                "is needed with %s: group-limited routing takes both",
                                g == 0 ? "router_group_top_k" : "router_groups");
    }
    if (x->num_experts % g != 0) {
        jr_path(q, sizeof q, p, "router_groups");
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, q,
                                "must divide num_experts (%lld) into equal groups, got %lld",
                                (long long)x->num_experts, (long long)g);
    }
    jr_path(q, sizeof q, p, "router_group_top_k");
    if (gk > g)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, q,
                                "must be at most router_groups (%lld), got %lld", (long long)g,
                                (long long)gk);
    if (gk * (x->num_experts / g) < x->top_k)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, q,
                                "leaves %lld experts in the chosen groups, fewer than top_k "
                                "(%lld)",
                                (long long)(gk * (x->num_experts / g)), (long long)x->top_k);
    return 0;
}

/* model.moe (model.h): the experts of the MoE blocks; m->num_blocks is already read. */
static int decode_moe(const json_t *v, const char *path, fathom_model_t *m, fathom_error_t *err)
{
    char p[JR_PATH_MAX];
    jr_path(p, sizeof p, path, "moe");
    if (jr_expect_object(v, p, err) || jr_check_keys(v, p, moe_keys, err))
        return -1;
    model_moe_t *x = &m->moe;
    if (jr_int(v, p, "num_experts", JR_REQUIRED, 0, 1, MODEL_MAX_EXPERTS, &x->num_experts, err) ||
        jr_int(v, p, "top_k", JR_REQUIRED, 0, 1, MODEL_MAX_EXPERTS, &x->top_k, err) ||
        /* an MLP's width, as feedforward (its default) may be */
        jr_int(v, p, "expert_feedforward", JR_OPTIONAL, m->feedforward, 1, 4 * MODEL_MAX_DIM,
               &x->expert_feedforward, err) ||
        jr_int(v, p, "shared_experts", JR_OPTIONAL, 0, 0, MODEL_MAX_EXPERTS, &x->shared_experts,
               err) ||
        jr_int(v, p, "shared_expert_feedforward", JR_OPTIONAL, x->expert_feedforward, 1,
               4 * MODEL_MAX_DIM, &x->shared_expert_feedforward, err) ||
        jr_int(v, p, "first_dense_blocks", JR_OPTIONAL, 0, 0, MODEL_MAX_BLOCKS,
               &x->first_dense_blocks, err) ||
        jr_int(v, p, "every", JR_OPTIONAL, 1, 1, MODEL_MAX_BLOCKS, &x->every, err) ||
        jr_bool(v, p, "router_bias", JR_OPTIONAL, false, &x->router_bias, err) ||
        jr_int(v, p, "router_groups", JR_OPTIONAL, 0, 0, MODEL_MAX_EXPERTS, &x->router_groups,
               err) ||
        jr_int(v, p, "router_group_top_k", JR_OPTIONAL, 0, 0, MODEL_MAX_EXPERTS,
               &x->router_group_top_k, err) ||
        decode_router_groups(x, p, err))
        return -1;
    char q[JR_PATH_MAX];
    if (x->top_k > x->num_experts) {
        jr_path(q, sizeof q, p, "top_k");
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, q,
                                "must be at most num_experts (%lld): a token is routed to top_k "
                                "distinct experts, got %lld",
                                (long long)x->num_experts, (long long)x->top_k);
    }
    if (x->first_dense_blocks >= m->num_blocks) {
        jr_path(q, sizeof q, p, "first_dense_blocks");
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, q,
                                "must be less than num_blocks (%lld): no block would be an MoE "
                                "block, got %lld",
                                (long long)m->num_blocks, (long long)x->first_dense_blocks);
    }
    return 0;
}

/* model.mla (model.h). */
static int decode_mla(const json_t *v, const char *path, fathom_model_t *m, fathom_error_t *err)
{
    char p[JR_PATH_MAX];
    jr_path(p, sizeof p, path, "mla");
    if (jr_expect_object(v, p, err) || jr_check_keys(v, p, mla_keys, err))
        return -1;
    model_mla_t *x = &m->mla;
    x->present = true;
    return jr_int(v, p, "q_lora_rank", JR_OPTIONAL, 0, 0, MODEL_MAX_DIM, &x->q_lora_rank, err) ||
                   jr_int(v, p, "kv_lora_rank", JR_REQUIRED, 0, 1, MODEL_MAX_DIM,
                          &x->kv_lora_rank, err) ||
                   jr_int(v, p, "qk_nope_head_dim", JR_REQUIRED, 0, 1, MODEL_MAX_DIM,
                          &x->qk_nope_head_dim, err) ||
                   jr_int(v, p, "qk_rope_head_dim", JR_REQUIRED, 0, 0, MODEL_MAX_DIM,
                          &x->qk_rope_head_dim, err) ||
                   jr_int(v, p, "v_head_dim", JR_REQUIRED, 0, 1, MODEL_MAX_DIM, &x->v_head_dim,
                          err)
               ? -1
               : 0;
}

/* sliding_window, full_attention_every and chunked_attention (model.h); m->causal is already
 * read. */
static int decode_window(const json_t *v, const char *path, fathom_model_t *m,
                         fathom_error_t *err)
{
    if (jr_int(v, path, "sliding_window", JR_OPTIONAL, 0, 1, MODEL_MAX_DIM, &m->sliding_window,
               err) ||
        jr_int(v, path, "full_attention_every", JR_OPTIONAL, 0, 1, MODEL_MAX_BLOCKS,
               &m->full_attention_every, err) ||
        jr_bool(v, path, "chunked_attention", JR_OPTIONAL, false, &m->chunked_attention, err))
        return -1;
    char p[JR_PATH_MAX];
    if (m->chunked_attention && m->sliding_window == 0) {
        jr_path(p, sizeof p, path, "chunked_attention");
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p,
                                "says the windowed blocks attend within chunks: give "
                                "sliding_window (the chunk size) too");
    }
    if (m->full_attention_every > 0 && m->sliding_window == 0) {
        jr_path(p, sizeof p, path, "full_attention_every");
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p,
                                "says which blocks skip the sliding window: give "
                                "sliding_window too");
    }
    if (m->sliding_window > 0 && !m->causal) {
        jr_path(p, sizeof p, path, "sliding_window");
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p,
                                "a sliding window looks back over the causal sequence: needs "
                                "causal true");
    }
    return 0;
}

/* The fields of the modern block (model.h); m->attn_heads is already read. */
static int decode_modern(const json_t *v, const char *path, fathom_model_t *m,
                         fathom_error_t *err)
{
    int norm = 0;
    m->calculon_block = true;
    for (const char *const *k = modern_keys; *k; k++)
        if (jr_has(v, *k))
            m->calculon_block = false;
    if (jr_int(v, path, "kv_heads", JR_OPTIONAL, m->attn_heads, 1, MODEL_MAX_HEADS, &m->kv_heads,
               err) ||
        jr_bool(v, path, "gated_mlp", JR_OPTIONAL, false, &m->gated_mlp, err) ||
        jr_enum(v, path, "norm", JR_OPTIONAL, MODEL_NORM_LAYERNORM, norm_names, &norm, err) ||
        jr_bool(v, path, "qkv_bias", JR_OPTIONAL, false, &m->qkv_bias, err) ||
        jr_bool(v, path, "causal", JR_OPTIONAL, true, &m->causal, err) ||
        jr_int(v, path, "mtp_blocks", JR_OPTIONAL, 0, 0, MODEL_MAX_MTP, &m->mtp_blocks, err) ||
        decode_window(v, path, m, err))
        return -1;
    m->norm = (model_norm_t)norm;
    const json_t *moe = json_object_get(v, "moe"), *mla = json_object_get(v, "mla");
    if ((moe && decode_moe(moe, path, m, err)) || (mla && decode_mla(mla, path, m, err)))
        return -1;
    if (m->attn_heads % m->kv_heads != 0) {
        char p[JR_PATH_MAX];
        jr_path(p, sizeof p, path, "kv_heads");
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p,
                                "must divide attn_heads (%lld): each key/value head serves a "
                                "whole group of query heads, got %lld",
                                (long long)m->attn_heads, (long long)m->kv_heads);
    }
    return 0;
}

/* {"hf_config": {...}, "seq_size"?}: the config.json read as a model object (hf_config.h),
 * then decoded as one, so its rules and errors are the model's. */
static int decode_hf_config(const json_t *v, const char *path, fathom_model_t *out,
                            fathom_error_t *err)
{
    static const char *const keys[] = {"hf_config", "seq_size", NULL};
    char p[JR_PATH_MAX];
    int64_t seq = 0;
    if (jr_check_keys(v, path, keys, err) ||
        jr_int(v, path, "seq_size", JR_OPTIONAL, 0, 1, MODEL_MAX_DIM, &seq, err))
        return -1;
    jr_path(p, sizeof p, path, "hf_config");
    json_t *m = hf_config_to_model(json_object_get(v, "hf_config"), p, seq, NULL, NULL, err);
    if (!m)
        return -1;
    int rc = codec_model_decode(m, path, NULL, out, err);
    json_decref(m);
    if (rc)
        hf_config_name_key(json_object_get(v, "hf_config"), p, path, err);
    return rc;
}

/* A model variant: {"preset": "<model preset>", <members>} — the preset's object with each
 * member given replacing its own ("seq_size": 131072 for Llama 3.1 8B's long-context stage),
 * and a given "moe" or "mla" object replacing only the members it names, as the system's GPU
 * variants do (llm_system_variant.c). The merged object is then decoded as any model object, so
 * a member's error names it at path, and the normalized request holds the whole model: a
 * variant and the object it stands for are one request. */
static int decode_preset_variant(const json_t *v, const char *path,
                                 const codec_presets_t *presets, fathom_model_t *out,
                                 fathom_error_t *err)
{
    char p[JR_PATH_MAX];
    const char *name;
    const json_t *base;
    jr_path(p, sizeof p, path, "preset");
    if (jr_string(v, path, "preset", JR_REQUIRED, NULL, CODEC_PRESET_NAME_MAX, &name, err) ||
        codec_presets_resolve(presets, PRESET_MODEL, name, &base, err))
        return -1;
    if (!base)
        return codec_presets_unknown(presets, PRESET_MODEL, name, p, err);
    if (jr_has(v, "hf_config")) {
        jr_path(p, sizeof p, path, "hf_config");
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p,
                                "a model is a preset with members replaced or a config.json, "
                                "not both");
    }
    json_t *merged = json_deep_copy(base);
    const char *key;
    json_t *value;
    int rc = merged ? 0 : -1;
    json_object_foreach((json_t *)v, key, value)
    {
        json_t *own = json_object_get(merged, key);
        if (rc || strcmp(key, "preset") == 0)
            continue;
        if (json_is_object(own) && json_is_object(value) &&
            (strcmp(key, "moe") == 0 || strcmp(key, "mla") == 0))
            rc = json_object_update(own, value);
        else
            rc = json_object_set(merged, key, value);
    }
    if (rc) {
        json_decref(merged);
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    }
    rc = codec_model_decode(merged, path, NULL, out, err);
    json_decref(merged);
    return rc;
}

/* checkpoint_weights: the released checkpoint's format, named as a serving request's
 * weights_datatype is (model.h); after the experts, since mxfp4 needs them. */
static int decode_checkpoint(const json_t *v, const char *path, fathom_model_t *m,
                             fathom_error_t *err)
{
    int index = 0;
    if (jr_enum(v, path, "checkpoint_weights", JR_OPTIONAL, 0, codec_weights_format_names,
                &index, err))
        return -1;
    m->checkpoint_weights = codec_weights_format(index);
    const char *refusal = model_weights_refusal(m, m->checkpoint_weights);
    if (refusal) {
        char p[JR_PATH_MAX];
        jr_path(p, sizeof p, path, "checkpoint_weights");
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p, "%s", refusal);
    }
    return 0;
}

int codec_model_decode(const json_t *v, const char *path, const codec_presets_t *presets,
                       fathom_model_t *out, fathom_error_t *err)
{
    if (codec_presets_deref(presets, PRESET_MODEL, &v, path, err) ||
        jr_expect_object(v, path, err))
        return -1;
    if (jr_has(v, "preset"))
        return decode_preset_variant(v, path, presets, out, err);
    if (jr_has(v, "hf_config"))
        return decode_hf_config(v, path, out, err);
    if (jr_check_keys(v, path, model_keys, err))
        return -1;
    fathom_model_t m = {0};
    int pos = 0;
    if (jr_int(v, path, "hidden", JR_REQUIRED, 0, 1, MODEL_MAX_DIM, &m.hidden, err) ||
        jr_int(v, path, "feedforward", JR_OPTIONAL, 4 * m.hidden, 1, 4 * MODEL_MAX_DIM,
               &m.feedforward, err) ||
        jr_int(v, path, "seq_size", JR_REQUIRED, 0, 1, MODEL_MAX_DIM, &m.seq_size, err) ||
        jr_int(v, path, "attn_heads", JR_REQUIRED, 0, 1, MODEL_MAX_HEADS, &m.attn_heads, err))
        return -1;
    if (!jr_has(v, "attn_size") && m.hidden % m.attn_heads != 0) {
        char p[JR_PATH_MAX];
        jr_path(p, sizeof p, path, "attn_size");
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p,
                                "is required when attn_heads (%lld) does not divide hidden (%lld)",
                                (long long)m.attn_heads, (long long)m.hidden);
    }
    if (jr_int(v, path, "attn_size", JR_OPTIONAL, m.hidden / m.attn_heads, 1, MODEL_MAX_DIM,
               &m.attn_size, err) ||
        jr_int(v, path, "num_blocks", JR_REQUIRED, 0, 1, MODEL_MAX_BLOCKS, &m.num_blocks, err) ||
        jr_int(v, path, "vocab_size", JR_OPTIONAL, 0, 0, MODEL_MAX_DIM, &m.vocab_size, err) ||
        jr_bool(v, path, "bias", JR_OPTIONAL, false, &m.bias, err) ||
        jr_bool(v, path, "tied_embeddings", JR_OPTIONAL, true, &m.tied_embeddings, err) ||
        jr_enum(v, path, "position_embedding", JR_OPTIONAL, MODEL_POS_LEARNED, position_names,
                &pos, err))
        return -1;
    m.position_embedding = (model_position_t)pos;
    if (decode_modern(v, path, &m, err) || decode_checkpoint(v, path, &m, err))
        return -1;
    *out = m;
    return 0;
}

json_t *codec_model_encode(const fathom_model_t *m)
{
    json_t *o = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:b,s:b,s:s}", "hidden", (json_int_t)m->hidden,
                     "feedforward", (json_int_t)m->feedforward, "seq_size",
                     (json_int_t)m->seq_size, "attn_heads", (json_int_t)m->attn_heads,
                     "attn_size", (json_int_t)m->attn_size, "num_blocks",
                     (json_int_t)m->num_blocks, "vocab_size", (json_int_t)m->vocab_size, "bias",
                     m->bias, "tied_embeddings", m->tied_embeddings, "position_embedding",
                     position_names[m->position_embedding]);
    /* only when not BF16, so that the canonical form (and cache key) of other models is
     * unchanged */
    if (o && m->checkpoint_weights != MODEL_WEIGHTS_BF16 &&
        json_object_set_new(o, "checkpoint_weights",
                            json_string(codec_weights_format_name(m->checkpoint_weights)))) {
        json_decref(o);
        return NULL;
    }
    /* Calculon's block stays without the modern fields, so it decodes back as Calculon's. */
    if (!o || m->calculon_block)
        return o;
    if (json_object_set_new(o, "kv_heads", json_integer((json_int_t)model_kv_heads(m))) ||
        json_object_set_new(o, "gated_mlp", json_boolean(m->gated_mlp)) ||
        json_object_set_new(o, "norm", json_string(norm_names[m->norm])) ||
        json_object_set_new(o, "qkv_bias", json_boolean(m->qkv_bias)) ||
        json_object_set_new(o, "causal", json_boolean(m->causal)) ||
        (m->mtp_blocks > 0 &&
         json_object_set_new(o, "mtp_blocks", json_integer((json_int_t)m->mtp_blocks))) ||
        (m->sliding_window > 0 &&
         json_object_set_new(o, "sliding_window", json_integer((json_int_t)m->sliding_window))) ||
        (m->full_attention_every > 0 &&
         json_object_set_new(o, "full_attention_every",
                             json_integer((json_int_t)m->full_attention_every))) ||
        (m->chunked_attention &&
         json_object_set_new(o, "chunked_attention", json_true()))) {
        json_decref(o);
        return NULL;
    }
    const model_moe_t *x = &m->moe;
    if (x->num_experts > 0 &&
        json_object_set_new(
            o, "moe",
            json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:b}", "num_experts",
                      (json_int_t)x->num_experts, "top_k", (json_int_t)x->top_k,
                      "expert_feedforward", (json_int_t)x->expert_feedforward, "shared_experts",
                      (json_int_t)x->shared_experts, "shared_expert_feedforward",
                      (json_int_t)x->shared_expert_feedforward, "first_dense_blocks",
                      (json_int_t)x->first_dense_blocks, "every", (json_int_t)x->every,
                      "router_bias", x->router_bias))) {
        json_decref(o);
        return NULL;
    }
    /* only when set, so that the canonical form (and cache key) of other models is unchanged */
    json_t *moe = json_object_get(o, "moe");
    if (moe && x->router_groups > 0 &&
        (json_object_set_new(moe, "router_groups", json_integer((json_int_t)x->router_groups)) ||
         json_object_set_new(moe, "router_group_top_k",
                             json_integer((json_int_t)x->router_group_top_k)))) {
        json_decref(o);
        return NULL;
    }
    const model_mla_t *a = &m->mla;
    if (a->present &&
        json_object_set_new(o, "mla",
                            json_pack("{s:I,s:I,s:I,s:I,s:I}", "q_lora_rank",
                                      (json_int_t)a->q_lora_rank, "kv_lora_rank",
                                      (json_int_t)a->kv_lora_rank, "qk_nope_head_dim",
                                      (json_int_t)a->qk_nope_head_dim, "qk_rope_head_dim",
                                      (json_int_t)a->qk_rope_head_dim, "v_head_dim",
                                      (json_int_t)a->v_head_dim))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* hf_config.c — a Hugging Face config.json read as a Fathom model object (hf_config.h).
 *
 * One row per architecture says what its family's config.json holds beyond the Llama keys every
 * family shares (hidden_size, intermediate_size, num_hidden_layers, num_attention_heads,
 * num_key_value_heads, head_dim, vocab_size, tie_word_embeddings; GPTBigCode and BLOOM name them
 * as GPT-2 does): biases, the experts' keys, multi-latent attention, sliding windows. The key
 * names and their defaults are those of the families' configuration classes in
 * huggingface/transformers (models/<family>/configuration_*.py): tie_word_embeddings defaults to
 * false except for Gemma, GPTBigCode and BLOOM; a null head_dim is hidden/heads. A
 * vision-language class reads its text model from text_config. */
#include "hf_config.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "json_read.h"
#include "model_codec.h"

/* MOE_QWEN: Qwen3-MoE's routed experts; MOE_QWEN_SHARED: Qwen2-MoE's, with one shared expert of
 * shared_expert_intermediate_size beside them (Qwen2MoeSparseMoeBlock). */
typedef enum {
    MOE_NONE,
    MOE_MIXTRAL,
    MOE_QWEN,
    MOE_QWEN_SHARED,
    MOE_DEEPSEEK,
    MOE_GPT_OSS,
    MOE_LLAMA4
} moe_kind_t;
/* WINDOW_ALL: sliding_window (null: none) on every block (Mistral, Phi-3); WINDOW_QWEN: only
 * with use_sliding_window true, which is refused; WINDOW_ALTERNATE: the even blocks windowed,
 * the odd ones full (Gemma 2's is_sliding = layer_idx % 2 == 0, GPT-OSS's layer_types);
 * WINDOW_PERIODIC: every k-th block full, the others windowed, k from layer_types or else
 * sliding_window_pattern (Gemma 3: is_sliding = (layer_idx + 1) % pattern != 0, default 6);
 * WINDOW_CHUNKED: Llama 4's chunked attention (attention_chunk_size) in its RoPE blocks and global
 * attention in every no_rope_layer_interval-th (default 4), Fathom's window marked
 * chunked_attention. */
typedef enum {
    WINDOW_NONE,
    WINDOW_ALL,
    WINDOW_QWEN,
    WINDOW_ALTERNATE,
    WINDOW_PERIODIC,
    WINDOW_CHUNKED
} window_kind_t;

/* The shape keys' defaults in a family's configuration class: what transformers reads when the
 * config.json leaves a key out. Only families whose published configs rely on them carry a table;
 * every key taken from one is named in the notes. */
typedef struct {
    const char *key;
    int64_t value;
} class_default_t;

typedef struct {
    const char *class_name;
    class_default_t keys[12]; /* up to the first NULL key */
} class_defaults_t;

/* Gemma3TextConfig.__init__ (huggingface/transformers, models/gemma3/configuration_gemma3.py at
 * 008f5c8): the multimodal checkpoints' text_config gives only what differs from these (gemma-3-4b
 * gives neither heads nor head_dim nor vocab_size). Their sizes agree with the Gemma 3 report's
 * table 1: 4B 3,209M non-embedding parameters = 34 blocks of 8 heads of 256, 4 KV heads. */
static const class_defaults_t gemma3_text_defaults = {
    "Gemma3TextConfig",
    {{"vocab_size", 262208},
     {"hidden_size", 2304},
     {"intermediate_size", 9216},
     {"num_hidden_layers", 26},
     {"num_attention_heads", 8},
     {"num_key_value_heads", 4},
     {"head_dim", 256},
     {"max_position_embeddings", 131072},
     {"sliding_window", 4096},
     {NULL, 0}},
};

/* The keys that size a model: Llama's names (llama_keys), or a GPT-2-lineage family's. */
typedef struct {
    const char *hidden, *ff, *layers, *heads, *max_position;
} shape_keys_t;

static const shape_keys_t llama_keys = {"hidden_size", "intermediate_size", "num_hidden_layers",
                                        "num_attention_heads", "max_position_embeddings"};

/* The GPT-2 lineage: LayerNorm, an MLP of two matrices (up, GELU, down) of ff, every linear and
 * LayerNorm biased, and its own key names (keys.ff NULL: ff is 4·hidden; keys.max_position
 * NULL: the config gives no length). */
typedef struct {
    shape_keys_t keys;
    bool multi_query;         /* multi_query (default true) one key/value head, else one per
                               * query head; false: one per query head always */
    bool learned_positions;   /* a table of max_position rows; false: ALiBi, no table */
    int64_t trained_seq;      /* the family's pre-training length where the config has none */
    const char *trained_from; /* its source */
} gpt2_style_t;

/* GPTBigCodeConfig (transformers, models/gpt_bigcode/configuration_gpt_bigcode.py at 05ff2e9:
 * StarCoder, StarCoderBase, SantaCoder, Granite Code 20B and 34B): n_inner null is 4·n_embd,
 * n_positions the rows of the position table. */
static const gpt2_style_t gpt_bigcode_style = {
    {"n_embd", "n_inner", "n_layer", "n_head", "n_positions"}, true, true, 0, NULL};
/* BloomConfig (models/bloom/configuration_bloom.py at 04efa88; BloomMLP is 4·hidden_size wide
 * whatever n_inner says): ALiBi, so no position table and no length in the config; every BLOOM
 * model was pre-trained at 2,048 tokens (BigScience 2022, arXiv:2211.05100, table 3). */
static const gpt2_style_t bloom_style = {
    {"hidden_size", NULL, "n_layer", "n_head", NULL}, false, false, 2048,
    "every BLOOM model's pre-training length (BigScience 2022, arXiv:2211.05100, table 3); the "
    "config gives none (ALiBi)"};

typedef struct {
    const char *arch, *family;
    bool tied;          /* tie_word_embeddings default */
    bool qkv_bias;      /* biases on q, k and v always (Qwen2) */
    bool attention_bias;/* attention_bias means q, k, v and o (Llama, Mistral, Qwen3) */
    bool all_bias;      /* every linear carries a bias (GPT-OSS: attention_bias and the experts) */
    bool mla;
    moe_kind_t moe;
    window_kind_t window;
    const char *unmodelled; /* tensors Fathom does not count, said in the notes (NULL none) */
    const class_defaults_t *defaults; /* the class's defaults of the shape keys (NULL: none) */
    const gpt2_style_t *gpt2; /* the GPT-2 lineage's block and key names (NULL: Llama's) */
} family_t;

#define QK_NORM_UNMODELLED                                                                        \
    "the per-head RMSNorm of queries and keys (q_norm, k_norm: 2·head_dim parameters a block)"
#define GEMMA3_UNMODELLED                                                                         \
    "the norms after attention and after the MLP and the RMSNorm of queries and keys "            \
    "(post_attention_layernorm, post_feedforward_layernorm, q_norm, k_norm: 2·hidden_size + "     \
    "2·head_dim parameters a block)"

static const family_t families[] = {
    {.arch = "LlamaForCausalLM", .family = "llama", .attention_bias = true},
    {.arch = "MistralForCausalLM", .family = "mistral", .window = WINDOW_ALL},
    {.arch = "Qwen2ForCausalLM", .family = "qwen2", .qkv_bias = true, .window = WINDOW_QWEN},
    {.arch = "Qwen3ForCausalLM", .family = "qwen3", .attention_bias = true, .window = WINDOW_QWEN,
     .unmodelled = QK_NORM_UNMODELLED},
    {.arch = "Qwen3MoeForCausalLM", .family = "qwen3_moe", .attention_bias = true,
     .moe = MOE_QWEN, .window = WINDOW_QWEN, .unmodelled = QK_NORM_UNMODELLED},
    {.arch = "MixtralForCausalLM", .family = "mixtral", .moe = MOE_MIXTRAL, .window = WINDOW_ALL},
    {.arch = "DeepseekV2ForCausalLM", .family = "deepseek_v2", .mla = true, .moe = MOE_DEEPSEEK},
    {.arch = "DeepseekV3ForCausalLM", .family = "deepseek_v3", .mla = true, .moe = MOE_DEEPSEEK},
    {.arch = "GptOssForCausalLM", .family = "gpt_oss", .all_bias = true, .moe = MOE_GPT_OSS,
     .window = WINDOW_ALTERNATE,
     .unmodelled = "the attention sinks (one learned logit per head and block)"},
    {.arch = "GemmaForCausalLM", .family = "gemma", .tied = true, .attention_bias = true},
    {.arch = "Gemma2ForCausalLM", .family = "gemma2", .tied = true, .attention_bias = true,
     .window = WINDOW_ALTERNATE,
     .unmodelled = "the norms after attention and after the MLP (post_attention_layernorm, "
                   "post_feedforward_layernorm: 2·hidden_size parameters a block)"},
    {.arch = "Phi3ForCausalLM", .family = "phi3", .window = WINDOW_ALL},
    {.arch = "Qwen2MoeForCausalLM", .family = "qwen2_moe", .qkv_bias = true,
     .moe = MOE_QWEN_SHARED, .window = WINDOW_QWEN,
     .unmodelled = "the shared expert's sigmoid gate (shared_expert_gate: hidden_size "
                   "parameters a block)"},
    {.arch = "Olmo2ForCausalLM", .family = "olmo2", .attention_bias = true,
     .unmodelled = "the RMSNorm of the whole query and key projections (q_norm, k_norm: "
                   "(num_attention_heads + num_key_value_heads)·head_dim parameters a block); "
                   "OLMo 2 puts its two norms after attention and the MLP, which counts the "
                   "same"},
    {.arch = "Glm4MoeForCausalLM", .family = "glm4_moe", .attention_bias = true,
     .moe = MOE_DEEPSEEK,
     .unmodelled = "the per-head RMSNorm of queries and keys where use_qk_norm is true "
                   "(2·head_dim parameters a block); partial_rotary_factor (RoPE on part of "
                   "each head) costs as full RoPE"},
    {.arch = "Gemma3ForCausalLM", .family = "gemma3_text", .tied = true, .attention_bias = true,
     .window = WINDOW_PERIODIC, .defaults = &gemma3_text_defaults,
     .unmodelled = GEMMA3_UNMODELLED},
    {.arch = "Llama4ForConditionalGeneration", .family = "llama4", .attention_bias = true,
     .moe = MOE_LLAMA4, .window = WINDOW_CHUNKED,
     .unmodelled = "the vision encoder and its projector (vision_config): the text tower "
                   "(text_config) is the model"},
    /* the Gemma 3 report's table 1 puts the SigLIP encoder at 417M parameters */
    {.arch = "Gemma3ForConditionalGeneration", .family = "gemma3", .tied = true,
     .attention_bias = true, .window = WINDOW_PERIODIC, .defaults = &gemma3_text_defaults,
     .unmodelled = GEMMA3_UNMODELLED "; the vision encoder and its projector (vision_config, "
                                     "417M parameters in the Gemma 3 report): the text tower "
                                     "(text_config) is the model"},
    {.arch = "GPTBigCodeForCausalLM", .family = "gpt_bigcode", .tied = true,
     .gpt2 = &gpt_bigcode_style},
    {.arch = "BloomForCausalLM", .family = "bloom", .tied = true, .gpt2 = &bloom_style,
     .unmodelled = "the LayerNorm after the token embedding (word_embeddings_layernorm: "
                   "2·hidden_size parameters)"},
};
#define NFAMILIES (sizeof families / sizeof families[0])

/* obj[key] as an integer in [min, max]; absent or null: dflt (config.json writes null for "not
 * set": head_dim, q_lora_rank, sliding_window). */
static int opt_int(const json_t *cfg, const char *p, const char *key, int64_t dflt, int64_t min,
                   int64_t max, int64_t *out, fathom_error_t *err)
{
    const json_t *v = json_object_get(cfg, key);
    if (!v || json_is_null(v)) {
        *out = dflt;
        return 0;
    }
    return jr_int(cfg, p, key, JR_REQUIRED, 0, min, max, out, err);
}

static int opt_bool(const json_t *cfg, const char *p, const char *key, bool dflt, bool *out,
                    fathom_error_t *err)
{
    const json_t *v = json_object_get(cfg, key);
    if (!v || json_is_null(v)) {
        *out = dflt;
        return 0;
    }
    return jr_bool(cfg, p, key, JR_REQUIRED, dflt, out, err);
}

static int set_int(json_t *o, const char *key, int64_t v)
{
    return json_object_set_new(o, key, json_integer((json_int_t)v));
}

static void note(json_t *notes, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(json_t *notes, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    json_array_append_new(notes, json_string(buf));
}

/* transformers names every vision-language (or audio-language) model class so */
static bool is_wrapper(const char *arch)
{
    static const char suffix[] = "ForConditionalGeneration";
    const size_t n = strlen(arch), ns = sizeof suffix - 1;
    return n > ns && strcmp(arch + n - ns, suffix) == 0;
}

/* The known names, comma-separated into out: every architecture, or (text_models) the families
 * a ...ForConditionalGeneration's text_config.model_type may name. */
static void known_names(char *out, size_t cap, bool text_models)
{
    *out = '\0';
    for (size_t i = 0; i < NFAMILIES; i++) {
        if (text_models && is_wrapper(families[i].arch))
            continue;
        snprintf(out + strlen(out), cap - strlen(out), "%s%s", *out ? ", " : "",
                 text_models ? families[i].family : families[i].arch);
    }
}

/* A ...ForConditionalGeneration class wraps a text model beside its vision tower: its shape keys
 * are under text_config, whose path goes to q. */
static const json_t *text_config_of(const json_t *cfg, const char *p, const char *arch,
                                    char q[JR_PATH_MAX], fathom_error_t *err)
{
    jr_path(q, JR_PATH_MAX, p, "text_config");
    const json_t *text = json_object_get(cfg, "text_config");
    if (!json_is_object(text))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, q,
                                "is required: %.64s keeps its text model's keys there", arch),
               NULL;
    return text;
}

/* A ...ForConditionalGeneration class with no row of its own (LLaVA, Mistral 3, PaliGemma, ...)
 * wraps a text model of a known family beside its vision tower: text_config.model_type names the
 * family, as transformers' AutoModelForCausalLM reads it. */
static const family_t *find_wrapped_family(const json_t *cfg, const char *p, const char *arch,
                                           fathom_error_t *err)
{
    char tp[JR_PATH_MAX], q[JR_PATH_MAX];
    const json_t *text = text_config_of(cfg, p, arch, tp, err);
    if (!text)
        return NULL;
    jr_path(q, sizeof q, tp, "model_type");
    const char *type = json_string_value(json_object_get(text, "model_type"));
    if (!type)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, q,
                                "is required: it names the family of %.64s's text model", arch),
               NULL;
    for (size_t i = 0; i < NFAMILIES; i++)
        if (!is_wrapper(families[i].arch) && strcmp(type, families[i].family) == 0)
            return &families[i];
    char known[FATHOM_ERROR_MESSAGE_MAX - 96];
    known_names(known, sizeof known, true);
    return fathom_error_set(err, FATHOM_E_INVALID_FIELD, q,
                            "'%.48s' is not a known text model; known: %s", type, known),
           NULL;
}

/* The family whose architecture name is the first of `architectures`. */
static const family_t *find_family(const json_t *cfg, const char *p, const char **arch,
                                   fathom_error_t *err)
{
    char q[JR_PATH_MAX];
    jr_path(q, sizeof q, p, "architectures");
    const json_t *a = json_object_get(cfg, "architectures");
    if (!a)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, q,
                                "is required: the config.json's model class names its family"),
               NULL;
    char qi[JR_PATH_MAX];
    jr_path_index(qi, sizeof qi, q, 0);
    if (jr_expect_array(a, q, 1, 16, err))
        return NULL;
    const json_t *name = json_array_get(a, 0);
    if (!json_is_string(name))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, qi, "must be a string"), NULL;
    *arch = json_string_value(name);
    for (size_t i = 0; i < NFAMILIES; i++)
        if (strcmp(*arch, families[i].arch) == 0)
            return &families[i];
    if (is_wrapper(*arch))
        return find_wrapped_family(cfg, p, *arch, err);
    char known[FATHOM_ERROR_MESSAGE_MAX - 64];
    known_names(known, sizeof known, false);
    /* a ...ForConditionalGeneration never comes here (find_wrapped_family) */
    return fathom_error_set(err, FATHOM_E_INVALID_FIELD, q,
                            "'%.48s' is not a known architecture; known: %s", *arch, known),
           NULL;
}

/* The sequence: the request's, else the pre-training length (header). */
static int read_seq(const json_t *cfg, const char *p, const family_t *f, int64_t seq_size,
                    json_t *notes, int64_t *out, fathom_error_t *err)
{
    const char *const max_key = (f->gpt2 ? &f->gpt2->keys : &llama_keys)->max_position;
    if (seq_size > 0) {
        *out = seq_size;
        return 0;
    }
    if (!max_key) {
        *out = f->gpt2->trained_seq;
        note(notes, "seq_size %lld: %s; give seq_size beside hf_config for another length",
             (long long)*out, f->gpt2->trained_from);
        return 0;
    }
    int64_t window = 0, original = 0;
    /* the window after long-context training may exceed any sequence Fathom runs (Llama 4
     * Scout: 10,485,760); it only matters when no original length is given, and is cut below */
    if (opt_int(cfg, p, max_key, 0, 1, INT64_C(1) << 40, &window, err))
        return -1;
    /* transformers 5 writes the RoPE block as rope_parameters (rope_theta inside it) where
     * earlier releases wrote rope_scaling; a config holds one or the other */
    static const char *const rope_keys[] = {"rope_scaling", "rope_parameters"};
    for (int i = 0; i < 2; i++) {
        const json_t *v = json_object_get(cfg, rope_keys[i]);
        char q[JR_PATH_MAX];
        jr_path(q, sizeof q, p, rope_keys[i]);
        if (v && !json_is_null(v) && !json_is_object(v))
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, q,
                                    "must be an object (or null), not %s", jr_type_name(v));
    }
    const char *rope_key = json_is_object(json_object_get(cfg, "rope_scaling"))
                               ? "rope_scaling"
                               : "rope_parameters";
    const json_t *rs = json_object_get(cfg, rope_key);
    if (json_is_object(rs)) {
        char q[JR_PATH_MAX];
        jr_path(q, sizeof q, p, rope_key);
        if (opt_int(rs, q, "original_max_position_embeddings", 0, 1, INT64_C(1) << 40,
                    &original, err))
            return -1;
    }
    int64_t s = original > 0 ? original : window;
    if (s <= 0) {
        char q[JR_PATH_MAX];
        jr_path(q, sizeof q, p, max_key);
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, q,
                                "is required when the request gives no seq_size");
    }
    char from[64];
    snprintf(from, sizeof from, "%s", original > 0 ? rope_key : max_key);
    if (original > 0)
        snprintf(from + strlen(from), sizeof from - strlen(from),
                 ".original_max_position_embeddings");
    if (s > HF_CONFIG_MAX_DEFAULT_SEQ) {
        note(notes, "seq_size %d: the config's %s %lld is the context after long-context "
                    "training; give seq_size beside hf_config for another length",
             HF_CONFIG_MAX_DEFAULT_SEQ, from, (long long)s);
        s = HF_CONFIG_MAX_DEFAULT_SEQ;
    } else {
        note(notes, "seq_size %lld from the config's %s", (long long)s, from);
    }
    *out = s;
    return 0;
}

/* Key/value heads: num_key_value_heads (default: the query heads) for the Llama names; for the
 * GPT-2 lineage one under multi_query where the family has it (gpt2_style_t), else the query
 * heads. */
static int read_kv_heads(const json_t *cfg, const char *p, const family_t *f, int64_t n,
                         int64_t *kv, fathom_error_t *err)
{
    bool multi_query = false;
    if (!f->gpt2)
        return opt_int(cfg, p, "num_key_value_heads", n, 1, MODEL_MAX_HEADS, kv, err);
    if (f->gpt2->multi_query && opt_bool(cfg, p, "multi_query", true, &multi_query, err))
        return -1;
    *kv = multi_query ? 1 : n;
    return 0;
}

/* The block's kind: Llama's (RMSNorm, gated MLP, RoPE) or the GPT-2 lineage's (LayerNorm, two
 * matrices, learned positions or ALiBi's none). */
static int set_block_kind(const family_t *f, json_t *o, fathom_error_t *err)
{
    const bool gpt2 = f->gpt2 != NULL;
    const char *position = !gpt2 ? "rope" : f->gpt2->learned_positions ? "learned" : "none";
    return json_object_set_new(o, "position_embedding", json_string(position)) ||
                   json_object_set_new(o, "norm", json_string(gpt2 ? "layernorm" : "rmsnorm")) ||
                   json_object_set_new(o, "gated_mlp", json_boolean(!gpt2)) ||
                   json_object_set_new(o, "causal", json_true())
               ? fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory")
               : 0;
}

/* The keys every family shares (header; the GPT-2 lineage's by its own names), into o. */
static int read_common(const json_t *cfg, const char *p, const family_t *f, json_t *o,
                       fathom_error_t *err)
{
    const shape_keys_t *k = f->gpt2 ? &f->gpt2->keys : &llama_keys;
    int64_t h, ff = 0, L, n, kv, d, V;
    bool tied;
    if (jr_int(cfg, p, k->hidden, JR_REQUIRED, 0, 1, MODEL_MAX_DIM, &h, err) ||
        (k->ff && opt_int(cfg, p, k->ff, 0, 1, 4 * MODEL_MAX_DIM, &ff, err)) ||
        jr_int(cfg, p, k->layers, JR_REQUIRED, 0, 1, MODEL_MAX_BLOCKS, &L, err) ||
        jr_int(cfg, p, k->heads, JR_REQUIRED, 0, 1, MODEL_MAX_HEADS, &n, err) ||
        read_kv_heads(cfg, p, f, n, &kv, err) ||
        jr_int(cfg, p, "vocab_size", JR_REQUIRED, 0, 1, MODEL_MAX_DIM, &V, err) ||
        opt_bool(cfg, p, "tie_word_embeddings", f->tied, &tied, err))
        return -1;
    char q[JR_PATH_MAX];
    if (ff == 0 && f->moe != MOE_DEEPSEEK && !f->gpt2) {
        jr_path(q, sizeof q, p, k->ff);
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, q, "is required");
    }
    if (!jr_has(cfg, "head_dim") || json_is_null(json_object_get(cfg, "head_dim"))) {
        if (h % n != 0) {
            jr_path(q, sizeof q, p, "head_dim");
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, q,
                                    "is required when %s (%lld) does not divide %s (%lld)",
                                    k->heads, (long long)n, k->hidden, (long long)h);
        }
    }
    if (opt_int(cfg, p, "head_dim", h / n, 1, MODEL_MAX_DIM, &d, err))
        return -1;
    if (n % kv != 0) {
        jr_path(q, sizeof q, p, "num_key_value_heads");
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, q, "must divide %s (%lld), got %lld",
                                k->heads, (long long)n, (long long)kv);
    }
    if (set_int(o, "hidden", h) || set_int(o, "feedforward", ff > 0 ? ff : 4 * h) ||
        set_int(o, "attn_heads", n) || set_int(o, "attn_size", d) ||
        set_int(o, "num_blocks", L) || set_int(o, "vocab_size", V) ||
        json_object_set_new(o, "tied_embeddings", json_boolean(tied)) ||
        (!f->mla && set_int(o, "kv_heads", kv)))
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    return set_block_kind(f, o, err);
}

/* Biases (family_t): qkv_bias for Q/K/V only, bias for every linear. */
static int read_bias(const json_t *cfg, const char *p, const family_t *f, json_t *o,
                     json_t *notes, fathom_error_t *err)
{
    bool attn = false, mlp = false;
    if (f->gpt2) /* every linear and LayerNorm biased */
        return json_object_set_new(o, "qkv_bias", json_true()) ||
                       json_object_set_new(o, "bias", json_true())
                   ? fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory")
                   : 0;
    if (opt_bool(cfg, p, "attention_bias", f->all_bias, &attn, err) ||
        opt_bool(cfg, p, "mlp_bias", false, &mlp, err))
        return -1;
    bool qkv = f->qkv_bias || (f->attention_bias && attn), all = f->all_bias && attn;
    /* attention_bias biases o_proj too in Llama's attention, not in GLM-4.5's
     * (Glm4MoeAttention: o_proj bias=False) */
    if (f->attention_bias && attn)
        note(notes, strcmp(f->family, "glm4_moe") == 0
                        ? "attention_bias: the biases of q, k and v are counted (o_proj has none)"
                        : "attention_bias: the biases of q, k and v are counted; o_proj's "
                          "(hidden_size a block) is not");
    if (mlp) {
        char q[JR_PATH_MAX];
        jr_path(q, sizeof q, p, "mlp_bias");
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, q,
                                "true is not modelled: Fathom's biases are on q, k and v only or "
                                "on every linear");
    }
    if (json_object_set_new(o, "qkv_bias", json_boolean(qkv || all)) ||
        json_object_set_new(o, "bias", json_boolean(all)))
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    return 0;
}

/* layer_types (GPT-OSS, Gemma 3): a full block every k-th from the k-th on and sliding blocks
 * between (*every = k, 2 for GPT-OSS's alternation), or all full (*every = 0, no window); absent
 * or null leaves *every as it is. Anything else has no Fathom equivalent. */
static int read_layer_types(const json_t *cfg, const char *p, int64_t blocks, int *every,
                            fathom_error_t *err)
{
    const json_t *t = json_object_get(cfg, "layer_types");
    char q[JR_PATH_MAX];
    jr_path(q, sizeof q, p, "layer_types");
    if (!t || json_is_null(t))
        return 0;
    if (jr_expect_array(t, q, (size_t)blocks, (size_t)blocks, err))
        return -1;
    size_t first_full = 0;
    bool found = false;
    for (size_t i = 0; i < json_array_size(t); i++) {
        const char *s = json_string_value(json_array_get(t, i));
        if (!s || (strcmp(s, "full_attention") != 0 && strcmp(s, "sliding_attention") != 0))
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, q,
                                    "must hold \"full_attention\" or \"sliding_attention\"");
        if (!found && strcmp(s, "full_attention") == 0)
            first_full = i, found = true;
    }
    const size_t k = first_full + 1;
    bool periodic = found, full = true;
    for (size_t i = 0; i < json_array_size(t); i++) {
        const char *type = json_string_value(json_array_get(t, i));
        const bool is_full = strcmp(type, "full_attention") == 0;
        periodic &= is_full == ((i + 1) % k == 0);
        full &= is_full;
    }
    if (!periodic && !full)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, q,
                                "is not modelled: Fathom takes a full-attention block every k-th "
                                "(from the k-th on) with sliding blocks between, or full "
                                "attention everywhere");
    *every = full ? 0 : (int)k;
    return 0;
}

/* Llama 4 (Llama4TextConfig): block i uses RoPE and chunked attention iff no_rope_layers[i] is
 * 1, and the list defaults to (i + 1) % no_rope_layer_interval != 0: global NoPE attention every
 * interval-th block. An empty or absent list is that default; a given one must be it. */
static int read_chunked(const json_t *cfg, const char *p, json_t *o, fathom_error_t *err)
{
    int64_t chunk, every, blocks = json_integer_value(json_object_get(o, "num_blocks"));
    if (opt_int(cfg, p, "attention_chunk_size", 0, 1, MODEL_MAX_DIM, &chunk, err) ||
        opt_int(cfg, p, "no_rope_layer_interval", 4, 1, MODEL_MAX_BLOCKS, &every, err))
        return -1;
    const json_t *list = json_object_get(cfg, "no_rope_layers");
    if (list && !json_is_null(list) && !(json_is_array(list) && json_array_size(list) == 0)) {
        char q[JR_PATH_MAX];
        jr_path(q, sizeof q, p, "no_rope_layers");
        if (jr_expect_array(list, q, (size_t)blocks, (size_t)blocks, err))
            return -1;
        for (size_t i = 0; i < json_array_size(list); i++) {
            const json_t *v = json_array_get(list, i);
            if (!json_is_integer(v) ||
                json_integer_value(v) != ((int64_t)(i + 1) % every != 0 ? 1 : 0))
                return fathom_error_set(err, FATHOM_E_INVALID_FIELD, q,
                                        "is not modelled: Fathom takes a global (NoPE) block every "
                                        "no_rope_layer_interval-th (%lld), chunked RoPE blocks "
                                        "between (1 a RoPE block, 0 a NoPE one)",
                                        (long long)every);
        }
    }
    if (chunk == 0)
        return 0;
    return set_int(o, "sliding_window", chunk) ||
                   (every > 1 && set_int(o, "full_attention_every", every)) ||
                   json_object_set_new(o, "chunked_attention", json_true())
               ? fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory")
               : 0;
}

static int read_window(const json_t *cfg, const char *p, const family_t *f, json_t *o,
                       fathom_error_t *err)
{
    char q[JR_PATH_MAX];
    int64_t w = 0, blocks = json_integer_value(json_object_get(o, "num_blocks"));
    if (f->window == WINDOW_NONE)
        return 0;
    if (f->window == WINDOW_QWEN) {
        bool use = false;
        if (opt_bool(cfg, p, "use_sliding_window", false, &use, err))
            return -1;
        jr_path(q, sizeof q, p, "use_sliding_window");
        return use ? fathom_error_set(err, FATHOM_E_INVALID_FIELD, q,
                                      "true is not modelled (windows on the blocks from "
                                      "max_window_layers on)")
                   : 0;
    }
    if (f->window == WINDOW_CHUNKED)
        return read_chunked(cfg, p, o, err);
    if (opt_int(cfg, p, "sliding_window", 0, 1, MODEL_MAX_DIM, &w, err))
        return -1;
    int every = 0;
    if (f->window == WINDOW_ALTERNATE) {
        every = 2;
        if (f->moe == MOE_GPT_OSS && read_layer_types(cfg, p, blocks, &every, err))
            return -1;
        if (every == 0)
            w = 0;
    } else if (f->window == WINDOW_PERIODIC) {
        int64_t pattern;
        if (opt_int(cfg, p, "sliding_window_pattern", 6, 1, MODEL_MAX_BLOCKS, &pattern, err))
            return -1;
        every = pattern > 1 ? (int)pattern : 0;
        if (read_layer_types(cfg, p, blocks, &every, err))
            return -1;
        if (every == 0)
            w = 0;
    }
    if (w == 0)
        return 0;
    if (set_int(o, "sliding_window", w) || (every > 0 && set_int(o, "full_attention_every", every)))
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    return 0;
}

/* Qwen's decoder_sparse_step k: block i is MoE iff (i + 1) % k == 0, Fathom's
 * first_dense_blocks k − 1 and every k; mlp_only_layers (dense blocks named one by one) is not.
 * shared: Qwen2-MoE's one shared expert of shared_expert_intermediate_size in every MoE block. */
static int read_qwen_moe(const json_t *cfg, const char *p, bool shared, json_t *moe,
                         fathom_error_t *err)
{
    int64_t E, k, ff, step, sff = 0;
    char q[JR_PATH_MAX];
    if (jr_int(cfg, p, "num_experts", JR_REQUIRED, 0, 1, 4096, &E, err) ||
        jr_int(cfg, p, "num_experts_per_tok", JR_REQUIRED, 0, 1, 4096, &k, err) ||
        jr_int(cfg, p, "moe_intermediate_size", JR_REQUIRED, 0, 1, 4 * MODEL_MAX_DIM, &ff, err) ||
        opt_int(cfg, p, "decoder_sparse_step", 1, 1, MODEL_MAX_BLOCKS, &step, err) ||
        (shared && jr_int(cfg, p, "shared_expert_intermediate_size", JR_REQUIRED, 0, 1,
                          4 * MODEL_MAX_DIM, &sff, err)))
        return -1;
    const json_t *only = json_object_get(cfg, "mlp_only_layers");
    if (only && !json_is_null(only) && !(json_is_array(only) && json_array_size(only) == 0)) {
        jr_path(q, sizeof q, p, "mlp_only_layers");
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, q,
                                "is not modelled: Fathom's dense blocks are the first ones or "
                                "every decoder_sparse_step-th");
    }
    return set_int(moe, "num_experts", E) || set_int(moe, "top_k", k) ||
                   set_int(moe, "expert_feedforward", ff) ||
                   set_int(moe, "first_dense_blocks", step - 1) || set_int(moe, "every", step) ||
                   (shared && (set_int(moe, "shared_experts", 1) ||
                               set_int(moe, "shared_expert_feedforward", sff)))
               ? fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory")
               : 0;
}

/* DeepSeek-V2/V3: block i is MoE iff i >= first_k_dense_replace and i % moe_layer_freq == 0;
 * routing is group-limited for topk_method group_limited_greedy and noaux_tc (n_group groups,
 * topk_group of them), and noaux_tc adds the score-correction bias per expert. */
static int read_deepseek_moe(const json_t *cfg, const char *p, json_t *o, json_t *moe,
                             fathom_error_t *err)
{
    int64_t E, k, ff, shared, first, freq, groups, gk, mtp;
    const char *method = "noaux_tc";
    char q[JR_PATH_MAX];
    if (jr_int(cfg, p, "n_routed_experts", JR_REQUIRED, 0, 1, 4096, &E, err) ||
        jr_int(cfg, p, "num_experts_per_tok", JR_REQUIRED, 0, 1, 4096, &k, err) ||
        jr_int(cfg, p, "moe_intermediate_size", JR_REQUIRED, 0, 1, 4 * MODEL_MAX_DIM, &ff, err) ||
        opt_int(cfg, p, "n_shared_experts", 0, 0, 4096, &shared, err) ||
        opt_int(cfg, p, "first_k_dense_replace", 0, 0, MODEL_MAX_BLOCKS, &first, err) ||
        opt_int(cfg, p, "moe_layer_freq", 1, 1, MODEL_MAX_BLOCKS, &freq, err) ||
        opt_int(cfg, p, "n_group", 1, 1, 4096, &groups, err) ||
        opt_int(cfg, p, "topk_group", 1, 1, 4096, &gk, err) ||
        opt_int(cfg, p, "num_nextn_predict_layers", 0, 0, 16, &mtp, err) ||
        jr_string(cfg, p, "topk_method", JR_OPTIONAL, method, 64, &method, err))
        return -1;
    if (first % freq != 0) {
        jr_path(q, sizeof q, p, "moe_layer_freq");
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, q,
                                "must divide first_k_dense_replace (%lld) for Fathom's layout of "
                                "MoE blocks, got %lld",
                                (long long)first, (long long)freq);
    }
    const bool noaux = strcmp(method, "noaux_tc") == 0;
    const bool grouped = (noaux || strcmp(method, "group_limited_greedy") == 0) && groups > 1;
    if (set_int(moe, "num_experts", E) || set_int(moe, "top_k", k) ||
        set_int(moe, "expert_feedforward", ff) || set_int(moe, "shared_experts", shared) ||
        set_int(moe, "shared_expert_feedforward", ff) ||
        set_int(moe, "first_dense_blocks", first) || set_int(moe, "every", freq) ||
        json_object_set_new(moe, "router_bias", json_boolean(noaux)) ||
        (grouped && (set_int(moe, "router_groups", groups) ||
                     set_int(moe, "router_group_top_k", gk))) ||
        (mtp > 0 && set_int(o, "mtp_blocks", mtp)))
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    return 0;
}

/* Llama 4: block i is MoE iff (i + 1) % interleave_moe_layer_step == 0 (Llama4TextConfig's
 * moe_layers), Fathom's first_dense_blocks step − 1 and every step; each MoE block routes
 * num_local_experts experts of intermediate_size beside one shared expert of the same width, and
 * the dense blocks' MLP is intermediate_size_mlp wide. */
static int read_llama4_moe(const json_t *cfg, const char *p, json_t *o, json_t *moe,
                           fathom_error_t *err)
{
    int64_t E, k, ff, dense_ff, step;
    if (jr_int(cfg, p, "num_local_experts", JR_REQUIRED, 0, 1, 4096, &E, err) ||
        jr_int(cfg, p, "num_experts_per_tok", JR_REQUIRED, 0, 1, 4096, &k, err) ||
        jr_int(cfg, p, "intermediate_size", JR_REQUIRED, 0, 1, 4 * MODEL_MAX_DIM, &ff, err) ||
        jr_int(cfg, p, "intermediate_size_mlp", JR_REQUIRED, 0, 1, 4 * MODEL_MAX_DIM, &dense_ff,
               err) ||
        opt_int(cfg, p, "interleave_moe_layer_step", 1, 1, MODEL_MAX_BLOCKS, &step, err))
        return -1;
    return set_int(o, "feedforward", dense_ff) || set_int(moe, "num_experts", E) ||
                   set_int(moe, "top_k", k) || set_int(moe, "expert_feedforward", ff) ||
                   set_int(moe, "shared_experts", 1) ||
                   set_int(moe, "shared_expert_feedforward", ff) ||
                   (step > 1 && (set_int(moe, "first_dense_blocks", step - 1) ||
                                 set_int(moe, "every", step)))
               ? fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory")
               : 0;
}

static int read_moe(const json_t *cfg, const char *p, const family_t *f, json_t *o,
                    fathom_error_t *err)
{
    if (f->moe == MOE_NONE)
        return 0;
    json_t *moe = json_object();
    if (!moe || json_object_set_new(o, "moe", moe))
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    if (f->moe == MOE_QWEN || f->moe == MOE_QWEN_SHARED)
        return read_qwen_moe(cfg, p, f->moe == MOE_QWEN_SHARED, moe, err);
    if (f->moe == MOE_DEEPSEEK)
        return read_deepseek_moe(cfg, p, o, moe, err);
    if (f->moe == MOE_LLAMA4)
        return read_llama4_moe(cfg, p, o, moe, err);
    /* Mixtral and GPT-OSS: every block routes num_local_experts experts of intermediate_size */
    int64_t E, k;
    if (jr_int(cfg, p, "num_local_experts", JR_REQUIRED, 0, 1, 4096, &E, err))
        return -1;
    const char *topk = jr_has(cfg, "num_experts_per_tok") || f->moe != MOE_GPT_OSS
                           ? "num_experts_per_tok"
                           : "experts_per_token";
    if (jr_int(cfg, p, topk, JR_REQUIRED, 0, 1, 4096, &k, err))
        return -1;
    return set_int(moe, "num_experts", E) || set_int(moe, "top_k", k) ||
                   set_int(moe, "expert_feedforward",
                           json_integer_value(json_object_get(o, "feedforward"))) ||
                   json_object_set_new(moe, "router_bias", json_boolean(f->moe == MOE_GPT_OSS))
               ? fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory")
               : 0;
}

/* Multi-latent attention: q_lora_rank null is the plain query projection (DeepSeek-V2-Lite). */
static int read_mla(const json_t *cfg, const char *p, json_t *o, fathom_error_t *err)
{
    int64_t rq, rkv, nope, rope, v;
    if (opt_int(cfg, p, "q_lora_rank", 0, 1, MODEL_MAX_DIM, &rq, err) ||
        jr_int(cfg, p, "kv_lora_rank", JR_REQUIRED, 0, 1, MODEL_MAX_DIM, &rkv, err) ||
        jr_int(cfg, p, "qk_nope_head_dim", JR_REQUIRED, 0, 1, MODEL_MAX_DIM, &nope, err) ||
        jr_int(cfg, p, "qk_rope_head_dim", JR_REQUIRED, 0, 0, MODEL_MAX_DIM, &rope, err) ||
        jr_int(cfg, p, "v_head_dim", JR_REQUIRED, 0, 1, MODEL_MAX_DIM, &v, err))
        return -1;
    json_t *mla = json_pack("{s:I,s:I,s:I,s:I,s:I}", "q_lora_rank", (json_int_t)rq,
                            "kv_lora_rank", (json_int_t)rkv, "qk_nope_head_dim", (json_int_t)nope,
                            "qk_rope_head_dim", (json_int_t)rope, "v_head_dim", (json_int_t)v);
    /* attn_size is not used by MLA; the value head's width keeps the object readable */
    if (!mla || json_object_set_new(o, "mla", mla) || set_int(o, "attn_size", v))
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    return 0;
}

/* The checkpoint's datatype: torch_dtype (dtype in transformers 5), a string or null. One Fathom
 * does not run (int8, float8_e4m3fn, auto) leaves the datatype to the request, and a note says
 * so; *out NULL then, and when the config gives none. */
static int read_datatype(const json_t *cfg, const char *p, json_t *notes, const char **out,
                         fathom_error_t *err)
{
    static const char *const known[] = {"bfloat16", "float16", "float32", NULL};
    static const char *const keys[] = {"torch_dtype", "dtype"};
    *out = NULL;
    for (int i = 0; i < 2 && !*out; i++) {
        const json_t *v = json_object_get(cfg, keys[i]);
        if (!v || json_is_null(v))
            continue;
        char q[JR_PATH_MAX];
        jr_path(q, sizeof q, p, keys[i]);
        if (!json_is_string(v))
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, q,
                                    "must be a string naming a torch dtype (\"bfloat16\"), not %s",
                                    jr_type_name(v));
        for (const char *const *k = known; *k && !*out; k++)
            if (strcmp(json_string_value(v), *k) == 0)
                *out = *k;
        if (!*out) {
            note(notes, "datatype: the config's %s \"%.32s\" is not one Fathom runs (bfloat16, "
                        "float16, float32); the datatype is the request's",
                 q, json_string_value(v));
            return 0;
        }
    }
    return 0;
}

/* The format a quantized checkpoint's quantization_config names (the `quant_method` values of
 * transformers' and vLLM's quantization classes), as the model's checkpoint_weights: NULL for
 * one Fathom does not serve, *why then saying what the config holds. mxfp4: gpt-oss (experts in
 * MXFP4); fp8 and fbgemm_fp8: FP8 weights (DeepSeek-V3's and Qwen3's 128×128 blocks; FBGEMM's
 * per-channel scales, transformers' FbgemmFp8Config); awq and gptq: 4-bit integer weights when
 * "bits" (AWQ's "w_bit") is 4; modelopt: NVIDIA Model Optimizer's quant_algo, FP8 (with
 * FP8_PER_CHANNEL_PER_TOKEN and FP8_PB_WO) or NVFP4; compressed-tensors: its "format",
 * float-quantized (FP8) or nvfp4-pack-quantized. */
static const char *quantized_format(const json_t *q, const char *method, char *why, size_t cap)
{
    const char *algo = json_string_value(json_object_get(q, "quant_algo"));
    const char *format = json_string_value(json_object_get(q, "format"));
    const json_t *bits = json_object_get(q, "bits");
    if (!bits)
        bits = json_object_get(q, "w_bit");
    if (strcmp(method, "mxfp4") == 0)
        return "mxfp4";
    if (strcmp(method, "fp8") == 0 || strcmp(method, "fbgemm_fp8") == 0)
        return "fp8";
    if (strcmp(method, "awq") == 0 || strcmp(method, "gptq") == 0) {
        if (json_is_integer(bits) && json_integer_value(bits) == 4)
            return "int4";
        if (json_is_integer(bits))
            snprintf(why, cap, "quant_method \"%s\" at %lld bits", method,
                     (long long)json_integer_value(bits));
        else
            snprintf(why, cap, "quant_method \"%s\" without bits", method);
        return NULL;
    }
    if (strcmp(method, "modelopt") == 0 && algo) {
        if (strncmp(algo, "FP8", 3) == 0)
            return "fp8";
        if (strcmp(algo, "NVFP4") == 0)
            return "fp4";
    }
    if (strcmp(method, "compressed-tensors") == 0 && format) {
        if (strcmp(format, "float-quantized") == 0)
            return "fp8";
        if (strcmp(format, "nvfp4-pack-quantized") == 0)
            return "fp4";
    }
    snprintf(why, cap, "quant_method \"%.32s\"%s%.32s%s", method,
             algo ? ", quant_algo \"" : format ? ", format \"" : "",
             algo ? algo : format ? format : "", algo || format ? "\"" : "");
    return NULL;
}

/* quantization_config (absent or null: a 16-bit checkpoint) read as checkpoint_weights, a note
 * saying where from, or that the format is not one Fathom serves (checkpoint_weights then left
 * at bf16: a serving request names its own). */
static int read_quantization(const json_t *cfg, const char *p, json_t *o, json_t *notes,
                             fathom_error_t *err)
{
    const json_t *q = json_object_get(cfg, "quantization_config");
    if (!q || json_is_null(q))
        return 0;
    char qp[JR_PATH_MAX], why[128];
    const char *method;
    jr_path(qp, sizeof qp, p, "quantization_config");
    if (jr_expect_object(q, qp, err) ||
        jr_string(q, qp, "quant_method", JR_REQUIRED, NULL, 64, &method, err))
        return -1;
    const char *format = quantized_format(q, method, why, sizeof why);
    if (!format) {
        note(notes, "checkpoint_weights left at bf16: the config's %s (%s) is not a format "
                    "Fathom serves (bf16, fp8, fp4, int4, mxfp4); a serving request may name its "
                    "weights_datatype",
             qp, why);
        return 0;
    }
    note(notes, "checkpoint_weights %s from the config's %s.quant_method \"%s\"", format, qp,
         method);
    if (json_object_set_new(o, "checkpoint_weights", json_string(format)))
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    return 0;
}

/* text with the class's defaults (family_t.defaults) set where it leaves a shape key out, as
 * transformers reads it, every key so set named in one note; NULL on out of memory. */
static json_t *with_class_defaults(const json_t *text, const class_defaults_t *d, json_t *notes)
{
    json_t *filled = json_deep_copy(text);
    char taken[400] = "";
    for (const class_default_t *k = d->keys; filled && k->key; k++) {
        if (json_object_get(filled, k->key))
            continue;
        if (set_int(filled, k->key, k->value)) {
            json_decref(filled);
            return NULL;
        }
        snprintf(taken + strlen(taken), sizeof taken - strlen(taken), "%s%s %lld",
                 *taken ? ", " : "", k->key, (long long)k->value);
    }
    if (filled && *taken)
        note(notes, "not in the config, so %s's defaults (transformers): %s", d->class_name,
             taken);
    return filled;
}

/* The config keys a field of the model object comes from, by family: the first the config (or
 * its text_config) has is the one named. */
static const struct {
    const char *field;
    const char *keys[4];
} field_keys[] = {
    {"hidden", {"hidden_size", "n_embd"}},
    {"feedforward", {"intermediate_size_mlp", "intermediate_size", "n_inner"}},
    {"num_blocks", {"num_hidden_layers", "n_layer"}},
    {"attn_heads", {"num_attention_heads", "n_head"}},
    {"kv_heads", {"num_key_value_heads", "multi_query"}},
    {"attn_size", {"head_dim"}},
    {"vocab_size", {"vocab_size"}},
    {"sliding_window", {"sliding_window", "attention_chunk_size"}},
    {"full_attention_every", {"layer_types", "sliding_window_pattern", "no_rope_layer_interval"}},
    {"mtp_blocks", {"num_nextn_predict_layers"}},
    {"checkpoint_weights", {"quantization_config"}},
    {"moe.num_experts", {"num_experts", "n_routed_experts", "num_local_experts"}},
    {"moe.top_k", {"num_experts_per_tok", "experts_per_token"}},
    {"moe.expert_feedforward", {"moe_intermediate_size", "intermediate_size"}},
    {"moe.shared_experts", {"n_shared_experts"}},
    {"moe.shared_expert_feedforward",
     {"shared_expert_intermediate_size", "moe_intermediate_size", "intermediate_size"}},
    {"moe.first_dense_blocks",
     {"decoder_sparse_step", "first_k_dense_replace", "interleave_moe_layer_step"}},
    {"moe.every", {"decoder_sparse_step", "moe_layer_freq", "interleave_moe_layer_step"}},
    {"moe.router_groups", {"n_group"}},
    {"moe.router_group_top_k", {"topk_group"}},
    {"mla.q_lora_rank", {"q_lora_rank"}},
    {"mla.kv_lora_rank", {"kv_lora_rank"}},
    {"mla.qk_nope_head_dim", {"qk_nope_head_dim"}},
    {"mla.qk_rope_head_dim", {"qk_rope_head_dim"}},
    {"mla.v_head_dim", {"v_head_dim"}},
};

void hf_config_name_key(const json_t *cfg, const char *path, const char *model_path,
                        fathom_error_t *err)
{
    const size_t n = strlen(model_path);
    if (strncmp(err->field, model_path, n) != 0 || (n && err->field[n] != '.'))
        return;
    const char *rel = err->field + (n ? n + 1 : 0);
    const json_t *text = json_object_get(cfg, "text_config");
    for (size_t i = 0; i < sizeof field_keys / sizeof field_keys[0]; i++) {
        if (strcmp(field_keys[i].field, rel) != 0)
            continue;
        for (int k = 0; k < 4 && field_keys[i].keys[k]; k++) {
            const char *key = field_keys[i].keys[k];
            char base[JR_PATH_MAX], q[JR_PATH_MAX], msg[FATHOM_ERROR_MESSAGE_MAX];
            if (json_is_object(text) && jr_has(text, key))
                jr_path(base, sizeof base, path, "text_config");
            else if (jr_has(cfg, key))
                snprintf(base, sizeof base, "%s", path);
            else
                continue;
            jr_path(q, sizeof q, base, key);
            snprintf(msg, sizeof msg, "%.400s (read as the model's %.64s)", err->message, rel);
            fathom_error_set(err, err->code, q, "%s", msg);
            return;
        }
    }
}

json_t *hf_config_to_model(const json_t *cfg, const char *path, int64_t seq_size,
                           hf_config_info_t *info, json_t **notes_out, fathom_error_t *err)
{
    if (notes_out)
        *notes_out = NULL;
    if (jr_expect_object(cfg, path, err))
        return NULL;
    hf_config_info_t in = {0};
    const family_t *f = find_family(cfg, path, &in.architecture, err);
    if (!f)
        return NULL;
    in.family = f->family;
    /* A ...ForConditionalGeneration class wraps a text model beside its vision tower: the shape
     * keys are the text model's, under text_config (Llama 4, Gemma 3, find_wrapped_family) */
    const json_t *text = cfg;
    char text_path[JR_PATH_MAX];
    const char *p = path;
    if (is_wrapper(in.architecture)) {
        if (!(text = text_config_of(cfg, path, in.architecture, text_path, err)))
            return NULL;
        p = text_path;
    }
    json_t *o = json_object(), *notes = json_array(), *filled = NULL;
    int64_t seq = 0;
    if (!o || !notes ||
        (f->defaults && !(filled = with_class_defaults(text, f->defaults, notes)))) {
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
        goto fail;
    }
    if (read_datatype(cfg, path, notes, &in.datatype, err) ||
        (!in.datatype && text != cfg && !jr_has(cfg, "torch_dtype") && !jr_has(cfg, "dtype") &&
         read_datatype(text, p, notes, &in.datatype, err)))
        goto fail;
    if (filled)
        text = filled;
    if (read_common(text, p, f, o, err) || read_bias(text, p, f, o, notes, err) ||
        read_window(text, p, f, o, err) || read_moe(text, p, f, o, err) ||
        (f->mla && read_mla(text, p, o, err)) ||
        read_seq(text, p, f, seq_size, notes, &seq, err) ||
        read_quantization(cfg, path, o, notes, err))
        goto fail;
    if (set_int(o, "seq_size", seq)) {
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
        goto fail;
    }
    if (f->unmodelled)
        note(notes, "not counted: %s", f->unmodelled);
    if (strcmp(f->arch, in.architecture) != 0)
        note(notes, "not counted: %.64s's vision tower and projector (vision_config); its text "
                    "model (text_config, model_type %s) is the model, read as %s",
             in.architecture, f->family, f->arch);
    if (info)
        *info = in;
    if (notes_out)
        *notes_out = notes;
    else
        json_decref(notes);
    json_decref(filled);
    return o;
fail:
    json_decref(o);
    json_decref(notes);
    json_decref(filled);
    return NULL;
}

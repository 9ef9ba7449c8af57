/* hf_config.h — a Hugging Face config.json read as a Fathom model object (model.h's fields).
 *
 * A planner's model is the config.json its checkpoint ships with. The families below are read
 * by their `architectures` name (the first entry): Llama, Mistral, Qwen2/2.5, Qwen3, Qwen3-MoE,
 * Qwen2-MoE, Mixtral, DeepSeek-V2/V3, GLM-4.5 (MoE), GPT-OSS, Gemma, Gemma 2, Gemma 3 (text),
 * OLMo 2, Phi-3/Phi-4 and Llama 4 (Llama4ForConditionalGeneration: the text model under
 * text_config, the vision tower noted). Anything else is a 422
 * naming `architectures` and listing the known ones. The keys a family reads are checked
 * strictly (type, range, null where Hugging Face writes null); the many keys that do not change
 * the shape (rope_theta, rms_norm_eps, token ids, ...) are ignored, as a config.json has dozens.
 * What the translation assumes or leaves out (the sequence length, tensors Fathom does not
 * model) is listed in `notes`, so nothing is chosen silently. */
#ifndef FATHOM_HF_CONFIG_H
#define FATHOM_HF_CONFIG_H

#include <jansson.h>
#include <stdint.h>

#include "fathom_error.h"

/* The sequence a config's context window is cut to when the request gives none: the main
 * pre-training stage of these families runs at 4,096 (DeepSeek-V3, Qwen2.5/3, GPT-OSS) or
 * 8,192 tokens (Llama 3); max_position_embeddings is the window after long-context training. */
#define HF_CONFIG_MAX_DEFAULT_SEQ 8192

typedef struct {
    const char *architecture; /* the matched entry of `architectures` (borrowed from cfg) */
    const char *family;       /* "llama", "deepseek_v3", ... (static) */
    const char *datatype;     /* torch_dtype (or dtype) when it names one Fathom runs, else NULL
                               * (a note says when the config names another) */
} hf_config_info_t;

/* Reads cfg (a config.json object; path names it, e.g. "model.hf_config") into a new Fathom
 * model object (new reference: every field explicit, decodable by codec_model_decode). seq_size
 * > 0 is the sequence; 0 takes the config's pre-training length (rope_scaling's
 * original_max_position_embeddings, else max_position_embeddings) capped at
 * HF_CONFIG_MAX_DEFAULT_SEQ. notes (may be NULL) receives a new array of strings. Returns NULL
 * with err filled (field under path) when the config cannot be read. */
json_t *hf_config_to_model(const json_t *cfg, const char *path, int64_t seq_size,
                           hf_config_info_t *info, json_t **notes, fathom_error_t *err);

/* err, a refusal of the model cfg reads as naming its field under model_path ("model.moe.top_k"),
 * renamed to the config key that gave it ("<path>.num_experts_per_tok"), the model's field kept
 * in the message: the user wrote the config, not the model object. Left as is otherwise. */
void hf_config_name_key(const json_t *cfg, const char *path, const char *model_path,
                        fathom_error_t *err);

#endif

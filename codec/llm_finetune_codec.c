/* llm_finetune_codec.c — execution.finetune (core/llm/llm_finetune.c), decoded strictly and
 * encoded back in full: {"method": "full"|"lora"|"qlora", "rank", "targets", "base_datatype",
 * "routed_experts"}. targets is a list of PEFT's names or "all-linear" (PEFT's own word for every
 * linear layer but the output layer; the default). Absent, the execution is pre-training and
 * its normalized form (and cache key) is unchanged. */
#include <string.h>

#include "json_read.h"
#include "llm_codec.h"

#define FINETUNE_MAX_RANK 65536

int codec_llm_finetune_decode(const json_t *v, const char *path, llm_datatype_t datatype,
                              llm_finetune_t *out, fathom_error_t *err)
{
    static const char *const keys[] = {"method", "rank", "targets", "base_datatype",
                                       "routed_experts", NULL};
    static const char *const methods[] = {"full", "lora", "qlora", NULL};
    memset(out, 0, sizeof *out);
    if (!v)
        return 0;
    int method = 0, base = 0;
    char p[JR_PATH_MAX];
    if (jr_expect_object(v, path, err) || jr_check_keys(v, path, keys, err) ||
        jr_enum(v, path, "method", JR_REQUIRED, 0, methods, &method, err))
        return -1;
    out->method = (llm_finetune_method_t)(method + 1);
    if (out->method == LLM_FINETUNE_FULL) {
        for (const char *const *k = keys + 1; *k; k++)
            if (jr_has(v, *k)) {
                jr_path(p, sizeof p, path, *k);
                return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p,
                                        "is for lora and qlora: full fine-tuning trains every "
                                        "weight in execution.datatype");
            }
        return 0;
    }
    const bool qlora = out->method == LLM_FINETUNE_QLORA;
    if (jr_int(v, path, "rank", JR_REQUIRED, 0, 1, FINETUNE_MAX_RANK, &out->rank, err) ||
        jr_enum(v, path, "base_datatype", JR_OPTIONAL, qlora ? LLM_BASE_NF4 : (int)datatype,
                llm_base_datatype_names, &base, err))
        return -1;
    jr_path(p, sizeof p, path, "base_datatype");
    if (qlora && base != LLM_BASE_NF4)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p,
                                "qlora's base is nf4 (QLoRA's 4-bit NormalFloat); for a base in "
                                "%s use method lora",
                                llm_base_datatype_names[base]);
    if (!qlora && base == LLM_BASE_NF4)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p,
                                "nf4 is qlora's base: use method qlora");
    out->base_datatype = base;
    bool routed = true;
    if (jr_bool(v, path, "routed_experts", JR_OPTIONAL, true, &routed, err))
        return -1;
    out->skip_routed_experts = !routed;
    const json_t *t = json_object_get(v, "targets");
    jr_path(p, sizeof p, path, "targets");
    if (!t || (json_is_string(t) && strcmp(json_string_value(t), "all-linear") == 0)) {
        out->targets = LLM_LORA_ALL_TARGETS;
        return 0;
    }
    if (json_is_string(t))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p,
                                "must be \"all-linear\" or a list of projection names");
    if (jr_enum_set(v, path, "targets", JR_REQUIRED, llm_lora_target_names, &out->targets, err))
        return -1;
    if (!out->targets)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p,
                                "must name at least one of q_proj, k_proj, v_proj, o_proj, "
                                "gate_proj, up_proj, down_proj, q_a_proj, q_b_proj, "
                                "kv_a_proj_with_mqa, kv_b_proj (or be \"all-linear\")");
    if (out->targets == LLM_LORA_ALL_TARGETS) /* no model has k_proj and kv_b_proj both */
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p,
                                "lists every name, which no model has together: say "
                                "\"all-linear\" for every projection the model has");
    return 0;
}

json_t *codec_llm_finetune_encode(const llm_finetune_t *f)
{
    if (f->method == LLM_FINETUNE_NONE)
        return NULL;
    json_t *o = json_pack("{s:s}", "method", llm_finetune_method_names[f->method]);
    if (!o || f->method == LLM_FINETUNE_FULL)
        return o;
    json_t *targets = f->targets == LLM_LORA_ALL_TARGETS ? json_string("all-linear") : json_array();
    int failed = !targets;
    for (int i = 0; !failed && json_is_array(targets) && llm_lora_target_names[i]; i++)
        if (f->targets & (1u << i))
            failed |= json_array_append_new(targets, json_string(llm_lora_target_names[i]));
    failed |= json_object_set_new(o, "rank", json_integer((json_int_t)f->rank));
    failed |= json_object_set_new(o, "targets", targets);
    failed |= json_object_set_new(o, "base_datatype",
                                  json_string(llm_base_datatype_names[f->base_datatype]));
    failed |= json_object_set_new(o, "routed_experts", json_boolean(!f->skip_routed_experts));
    if (failed) {
        json_decref(o);
        return NULL;
    }
    return o;
}

int codec_llm_finetune_check_request(const fathom_model_t *m, const llm_finetune_t *f,
                                     fathom_error_t *err)
{
    llm_execution_t e;
    memset(&e, 0, sizeof e);
    e.training = true;
    e.finetune = *f;
    if (llm_finetune_check(m, &e, err) == 0)
        return 0;
    if (err && strncmp(err->field, "execution.", 10) == 0) /* the request's own name */
        memmove(err->field, err->field + 10, strlen(err->field + 10) + 1);
    return -1;
}

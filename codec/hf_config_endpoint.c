/* hf_config_endpoint.c — POST /v1/models/from-hf-config: a config.json as published in, the
 * Fathom model object out (hf_config.h), with its parameter counts and what the translation
 * assumed. The normalized request is the model it reads as, so two configs that differ only in
 * keys Fathom ignores share one cache entry. */
#include <stdbool.h>

#include "endpoint.h"
#include "hf_config.h"
#include "model_codec.h"

static json_t *normalize(const json_t *body, const codec_ctx_t *ctx, fathom_error_t *err)
{
    (void)ctx;
    hf_config_info_t info;
    json_t *notes = NULL;
    json_t *raw = hf_config_to_model(body, "", 0, &info, &notes, err);
    if (!raw)
        return NULL;
    fathom_model_t m;
    int rc = codec_model_decode(raw, "model", NULL, &m, err);
    json_decref(raw);
    if (rc) {
        hf_config_name_key(body, "", "model", err);
        json_decref(notes);
        return NULL;
    }
    json_t *out = json_pack("{s:s,s:s,s:s*,s:o,s:o}", "architecture", info.architecture,
                            "family", info.family, "datatype", info.datatype, "model",
                            codec_model_encode(&m), "notes", notes);
    if (!out)
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    return out;
}

static json_t *count(double x)
{
    return json_integer((json_int_t)x);
}

static json_t *evaluate(const json_t *req, const codec_ctx_t *ctx, fathom_error_t *err)
{
    (void)ctx;
    fathom_model_t m;
    if (codec_model_decode(json_object_get(req, "model"), "model", NULL, &m, err))
        return NULL;
    model_params_t p;
    model_parameters(&m, &p);
    json_t *out = json_deep_copy(req);
    if (!out || json_object_set_new(out, "parameters",
                                    json_pack("{s:o,s:o,s:o,s:o,s:o}", "total", count(p.total),
                                              "active", count(p.active), "mtp", count(p.mtp),
                                              "mtp_active", count(p.mtp_active), "routed",
                                              count(p.routed)))) {
        json_decref(out);
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
        return NULL;
    }
    return out;
}

const codec_endpoint_t codec_hf_config_endpoint = {"hf_config", "/v1/models/from-hf-config",
                                                   normalize, evaluate};

/* llm_estimate.c — POST /v1/estimate: one model, one system, one execution → Calculon's step
 * time, its breakdown and the memory per tier (codec_estimate_endpoint).
 *
 * Request  {"model": preset name | model object, "system": preset name | Calculon system object,
 *           "execution": Calculon execution object (defaults in llm_codec.h),
 *           "training": optional {tokens, gpu_hour_price, gpu_power_kw, pue, co2_kg_per_kwh}}
 *           — with training the response adds "run": steps, wall time, days, GPU-hours,
 *           dollars, kWh and CO2 of the whole run at the estimated step time.
 * Response {"feasible": true, "fits_memory": bool, "violations": [...], "stats": {96},
 *           "summary": {...}, "warnings": [{"code","message"}] (llm_warnings.c)} — a configuration that does not fit memory is still a 200; one the
 *           model cannot run is a 422 (infeasible_execution / invalid_field naming the field). */
#include <string.h>

#include "endpoint.h"
#include "json_read.h"
#include "llm_codec.h"
#include "model_codec.h"
#include "scaling_run_codec.h"

static const char *const request_keys[] = {"model", "system", "execution", "training", NULL};

typedef struct {
    fathom_model_t model;
    llm_system_t system;
    llm_execution_t execution;
    bool has_training; /* optional: the cost of a whole run at this step time */
    scaling_training_t training;
} estimate_request_t;

static int decode_request(const json_t *body, const codec_presets_t *presets,
                          estimate_request_t *req, fathom_error_t *err)
{
    if (jr_expect_object(body, "", err) || jr_check_keys(body, "", request_keys, err))
        return -1;
    const json_t *model = json_object_get(body, "model");
    const json_t *system = json_object_get(body, "system");
    const json_t *execution = json_object_get(body, "execution");
    if (!model)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "model", "is required");
    if (!system)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "system", "is required");
    if (!execution)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution", "is required");
    if (codec_model_decode(model, "model", presets, &req->model, err) ||
        codec_llm_system_decode(system, "system", presets, &req->system, err) ||
        codec_llm_execution_decode(execution, "execution", &req->execution, err))
        return -1;
    codec_llm_execution_default_nets(execution, &req->system, &req->execution);
    const json_t *training = json_object_get(body, "training");
    req->has_training = training && !json_is_null(training);
    codec_gpu_cost_t gpu;
    if (req->has_training &&
        (codec_llm_system_cost_decode(system, "system", presets, &gpu, err) ||
         codec_training_decode(training, "training", &gpu, &req->training, err)))
        return -1;
    return 0;
}

static json_t *estimate_normalize(const json_t *body, const codec_ctx_t *ctx, fathom_error_t *err)
{
    estimate_request_t req;
    if (decode_request(body, ctx->presets, &req, err))
        return NULL;
    json_t *out = json_pack("{s:o,s:o,s:o}", "model", codec_model_encode(&req.model), "system",
                            codec_llm_system_encode(&req.system), "execution",
                            codec_llm_execution_encode(&req.execution));
    if (out && req.has_training &&
        json_object_set_new(out, "training", codec_training_encode(&req.training))) {
        json_decref(out); /* a request without its training member would be another request */
        out = NULL;
    }
    if (!out)
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    return out;
}

static json_t *estimate_evaluate(const json_t *normalized, const codec_ctx_t *ctx,
                                 fathom_error_t *err)
{
    estimate_request_t req;
    if (decode_request(normalized, ctx->presets, &req, err))
        return NULL;
    llm_result_t r;
    if (llm_estimate(&req.model, &req.system, &req.execution, &r, err))
        return NULL;
    scaling_run_cost_t run;
    if (req.has_training &&
        scaling_run_cost(r.stats.total_time, req.execution.batch_size, req.model.seq_size,
                         req.execution.num_procs, &req.training, &run, err))
        return NULL;
    json_t *out = codec_llm_result_encode(&req.model, &req.execution, &r);
    if (out && json_object_set_new(out, "warnings", codec_llm_warnings_encode(&req.model,
                                                                              &req.system,
                                                                              &req.execution, &r))) {
        json_decref(out);
        out = NULL;
    }
    if (out && req.has_training && json_object_set_new(out, "run", codec_run_encode(&run))) {
        json_decref(out);
        out = NULL;
    }
    if (!out)
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    return out;
}

const codec_endpoint_t codec_estimate_endpoint = {"estimate", "/v1/estimate", estimate_normalize,
                                                  estimate_evaluate};

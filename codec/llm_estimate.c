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
    req->has_training = training != NULL; /* null is not absent: a 422 naming training */
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

/* The cheapest change that makes a layout that does not fit fit (llm_cheapest_fitting_change):
 * {"changes": {field: new value, a dropped field null}, "execution": the changed execution,
 * "step_time_s", "step_time_change_pct" against this layout's, "mem_tier1_bytes"}; null when
 * the layout fits, does not train, or nothing tried fits. */
static json_t *fitting_change(const fathom_model_t *m, const llm_system_t *s,
                              const llm_execution_t *e, const llm_result_t *r)
{
    llm_fit_change_t fc;
    if (r->fits_memory || llm_cheapest_fitting_change(m, s, e, &fc) || !fc.found)
        return json_null();
    json_t *base = codec_llm_execution_encode(e), *to = codec_llm_execution_encode(&fc.execution);
    json_t *changes = json_object();
    const char *key;
    json_t *v;
    bool ok = base && to && changes;
    json_object_foreach(to, key, v) {
        if (ok && !json_equal(v, json_object_get(base, key)))
            ok = json_object_set(changes, key, v) == 0;
    }
    json_object_foreach(base, key, v) {
        if (ok && !json_object_get(to, key))
            ok = json_object_set_new(changes, key, json_null()) == 0;
    }
    json_t *out = ok ? json_pack("{s:o,s:O,s:f,s:f,s:f}", "changes", changes, "execution", to,
                                 "step_time_s", fc.step_time, "step_time_change_pct",
                                 fc.base_step_time > 0
                                     ? 100.0 * (fc.step_time - fc.base_step_time) /
                                           fc.base_step_time
                                     : 0.0,
                                 "mem_tier1_bytes", fc.mem_tier1_bytes)
                     : NULL;
    if (!ok)
        json_decref(changes);
    json_decref(base);
    json_decref(to);
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
    if (out && json_object_set_new(out, "cheapest_fitting_change",
                                   fitting_change(&req.model, &req.system, &req.execution, &r))) {
        json_decref(out);
        out = NULL;
    }
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

/* transformer_codec.c — POST /v1/transformer: the analytic transformer model's request and
 * response (see core/transformer/transformer.h for the model, schemas/transformer.*.json for
 * the wire format). */
#include <math.h>

#include "endpoint.h"
#include "json_read.h"
#include "model_codec.h"
#include "scaling_run_codec.h"
#include "transformer.h"

/* Bounds that keep every product finite and meaningful; far beyond any real run. */
#define TF_MAX_BATCH 1e9
#define TF_MAX_SECONDS 1e9
#define TF_MAX_FLOPS 1e21      /* per GPU, FLOP/s */
#define TF_MAX_GIB 1e6
#define TF_MAX_GPUS 1e8
#define TF_MAX_TOKENS 1e16
#define TF_MAX_DAYS 1e5
#define TF_MAX_PARAMS 1e15

static const char *const request_keys[] = {
    "model", "batch_size", "measured_step_time_s", "gpu_peak_flops", "gpu_memory_gib", "mfu",
    "num_gpus", "tokens", "time_budget_days", "param_count", "recompute_overhead",
    "backward_forward_ratio", "tensor_par", "micro_batch_size", "lora", "training", NULL};
static const char *const lora_keys[] = {"rank", "tuned_layers", NULL};

/* Reads an optional positive real into (*has, *out). */
static int opt_positive(const json_t *body, const char *key, double max, bool *has, double *out,
                        fathom_error_t *err)
{
    *has = jr_has(body, key) && !json_is_null(json_object_get(body, key));
    return jr_positive(body, "", key, JR_OPTIONAL, 0.0, max, out, err);
}

/* The optional "training" object prices the run of the 6ND time (see scaling_run_codec.h). */
typedef struct {
    bool has;
    scaling_training_t t;
} tf_training_t;

static int decode(const json_t *body, const codec_ctx_t *ctx, fathom_model_t *m, tf_inputs_t *in,
                  tf_training_t *training, fathom_error_t *err)
{
    if (jr_expect_object(body, "", err) || jr_check_keys(body, "", request_keys, err))
        return -1;
    if (!jr_has(body, "model"))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "model", "is required");
    if (codec_model_decode(json_object_get(body, "model"), "model", ctx->presets, m, err))
        return -1;
    tf_inputs_init(in);
    int64_t gpus = 0, tp = 1, mbs = 1;
    if (opt_positive(body, "batch_size", TF_MAX_BATCH, &in->has_batch_size, &in->batch_size, err) ||
        opt_positive(body, "measured_step_time_s", TF_MAX_SECONDS, &in->has_measured_step_time,
                     &in->measured_step_time_s, err) ||
        opt_positive(body, "gpu_peak_flops", TF_MAX_FLOPS, &in->has_gpu_peak_flops,
                     &in->gpu_peak_flops, err) ||
        opt_positive(body, "gpu_memory_gib", TF_MAX_GIB, &in->has_gpu_memory, &in->gpu_memory_gib,
                     err) ||
        opt_positive(body, "mfu", 1.0, &in->has_mfu, &in->mfu, err) ||
        opt_positive(body, "tokens", TF_MAX_TOKENS, &in->has_tokens, &in->tokens, err) ||
        opt_positive(body, "time_budget_days", TF_MAX_DAYS, &in->has_time_budget,
                     &in->time_budget_days, err) ||
        opt_positive(body, "param_count", TF_MAX_PARAMS, &in->has_param_count, &in->param_count,
                     err) ||
        jr_real(body, "", "recompute_overhead", JR_OPTIONAL, 0.0, 0.0, 10.0,
                &in->recompute_overhead, err) ||
        jr_real(body, "", "backward_forward_ratio", JR_OPTIONAL, 2.0, 0.0, 10.0,
                &in->backward_forward_ratio, err) ||
        jr_int(body, "", "num_gpus", JR_OPTIONAL, 0, 1, (int64_t)TF_MAX_GPUS, &gpus, err) ||
        jr_int(body, "", "tensor_par", JR_OPTIONAL, 1, 1, MODEL_MAX_HEADS, &tp, err) ||
        jr_int(body, "", "micro_batch_size", JR_OPTIONAL, 1, 1, (int64_t)TF_MAX_BATCH, &mbs, err))
        return -1;
    in->has_num_gpus = gpus > 0;
    in->num_gpus = (double)gpus;
    in->tensor_par = (double)tp;
    in->micro_batch_size = (double)mbs;

    const json_t *lora = json_object_get(body, "lora");
    if (lora) { /* null is not absent: jr_expect_object refuses it */
        int64_t rank, tuned;
        if (jr_expect_object(lora, "lora", err) || jr_check_keys(lora, "lora", lora_keys, err) ||
            jr_int(lora, "lora", "rank", JR_REQUIRED, 0, 1, MODEL_MAX_DIM, &rank, err) ||
            jr_int(lora, "lora", "tuned_layers", JR_OPTIONAL, m->num_blocks, 1, m->num_blocks,
                   &tuned, err))
            return -1;
        in->has_lora = true;
        in->lora_rank = (double)rank;
        in->lora_tuned_layers = (double)tuned;
    }

    const json_t *tr = json_object_get(body, "training");
    training->has = tr != NULL; /* null is refused by codec_training_decode */
    if (training->has) {
        if (codec_training_decode(tr, "training", NULL, &training->t, err))
            return -1;
        /* One token budget: the run's. A different top-level figure would be two answers. */
        if (in->has_tokens && in->tokens != training->t.tokens)
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "tokens",
                                    "differs from training.tokens; give the token budget once");
        in->has_tokens = true;
        in->tokens = training->t.tokens;
    }
    return 0;
}

/* Sets key to a real when has is true (absent inputs stay absent in the normalized form). */
static void set_opt(json_t *o, const char *key, bool has, double v)
{
    if (has)
        json_object_set_new(o, key, json_real(v));
}

static json_t *encode_request(const fathom_model_t *m, const tf_inputs_t *in,
                              const tf_training_t *training)
{
    json_t *o = json_object();
    json_object_set_new(o, "model", codec_model_encode(m));
    set_opt(o, "batch_size", in->has_batch_size, in->batch_size);
    set_opt(o, "measured_step_time_s", in->has_measured_step_time, in->measured_step_time_s);
    set_opt(o, "gpu_peak_flops", in->has_gpu_peak_flops, in->gpu_peak_flops);
    set_opt(o, "gpu_memory_gib", in->has_gpu_memory, in->gpu_memory_gib);
    set_opt(o, "mfu", in->has_mfu, in->mfu);
    set_opt(o, "tokens", in->has_tokens, in->tokens);
    set_opt(o, "time_budget_days", in->has_time_budget, in->time_budget_days);
    set_opt(o, "param_count", in->has_param_count, in->param_count);
    if (in->has_num_gpus)
        json_object_set_new(o, "num_gpus", json_integer((json_int_t)in->num_gpus));
    json_object_set_new(o, "recompute_overhead", json_real(in->recompute_overhead));
    json_object_set_new(o, "backward_forward_ratio", json_real(in->backward_forward_ratio));
    json_object_set_new(o, "tensor_par", json_integer((json_int_t)in->tensor_par));
    json_object_set_new(o, "micro_batch_size", json_integer((json_int_t)in->micro_batch_size));
    if (in->has_lora)
        json_object_set_new(o, "lora",
                            json_pack("{s:I,s:I}", "rank", (json_int_t)in->lora_rank,
                                      "tuned_layers", (json_int_t)in->lora_tuned_layers));
    if (training->has) {
        json_object_set_new(o, "training", codec_training_encode(&training->t));
        json_object_del(o, "tokens"); /* carried by training.tokens */
    }
    return o;
}

static json_t *normalize(const json_t *body, const codec_ctx_t *ctx, fathom_error_t *err)
{
    fathom_model_t m;
    tf_inputs_t in;
    tf_training_t training;
    if (decode(body, ctx, &m, &in, &training, err))
        return NULL;
    return encode_request(&m, &in, &training);
}

/* Integral counts go out as JSON integers when they fit exactly, so 124337664 reads as such. */
static json_t *count(double v)
{
    if (fabs(v) <= 9007199254740992.0 && v == floor(v))
        return json_integer((json_int_t)v);
    return json_real(v);
}

static json_t *encode_params(const tf_params_t *p)
{
    json_t *o = json_object();
#define P(name) json_object_set_new(o, #name, count(p->name))
    P(embedding_position); P(embedding_token); P(embedding);
    P(attention_ln); P(attention_kqv); P(attention_proj); P(attention);
    P(mlp_ln); P(mlp_ffw); P(mlp_proj); P(mlp);
    P(block); P(transformer); P(ln_f); P(dense); P(total);
#undef P
    return o;
}

static json_t *encode_flops(const tf_flops_t *f)
{
    json_t *o = json_object();
#define F(name) json_object_set_new(o, #name, count(f->name))
    F(attention_kqv); F(attention_scores); F(attention_reduce); F(attention_proj); F(attention);
    F(mlp_ffw1); F(mlp_ffw2); F(mlp); F(block); F(transformer); F(dense);
    F(forward_total); F(backward_total); F(total);
#undef F
    return o;
}

/* An input at the far edge of its range (a step time of 1e-300 s, a peak of 1e-300 FLOP/s) can
 * make a result overflow to Infinity, which JSON cannot carry: jansson would drop the member and
 * the answer would be a 200 without it. Each result the answer shows is checked here, and a
 * non-finite one is refused naming the input that divides it. */
static int check_finite(const tf_result_t *r, fathom_error_t *err)
{
    const struct {
        bool shown;
        double value;
        const char *what, *field, *divisor;
    } checks[] = {
        {r->has_mfu, r->achieved_flops_per_s, "mfu.achieved_flops_per_s", "measured_step_time_s",
         "measured_step_time_s"},
        {r->has_mfu, r->mfu, "mfu.fraction", "gpu_peak_flops", "gpu_peak_flops x num_gpus"},
        {r->has_train_time, r->train_seconds, "training.seconds", "gpu_peak_flops",
         "gpu_peak_flops x num_gpus x mfu"},
        {r->has_gpus_for_budget, r->gpus_for_budget, "training.gpus_for_time_budget",
         "gpu_peak_flops", "gpu_peak_flops x mfu x time_budget_days"},
        {r->has_lora_gpus_by_compute, r->lora_gpus_by_compute, "lora.gpus_by_compute",
         "gpu_peak_flops", "gpu_peak_flops x mfu x time_budget_days"},
    };
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++)
        if (checks[i].shown && !isfinite(checks[i].value))
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, checks[i].field,
                                    "is too small: dividing by %s makes the answer's %s %g, "
                                    "which is not a finite number",
                                    checks[i].divisor, checks[i].what, checks[i].value);
    return 0;
}

static json_t *evaluate(const json_t *normalized, const codec_ctx_t *ctx, fathom_error_t *err)
{
    fathom_model_t m;
    tf_inputs_t in;
    tf_result_t r;
    tf_training_t training;
    if (decode(normalized, ctx, &m, &in, &training, err))
        return NULL;
    tf_estimate(&m, &in, &r);
    if (check_finite(&r, err))
        return NULL;
    scaling_run_cost_t run;
    bool has_run = false;
    if (training.has && r.has_train_time && in.has_batch_size) {
        /* The 6ND time as steps of batch_size sequences, so the bill counts whole steps the way
         * /v1/estimate's does. */
        double step_s = r.train_seconds * in.batch_size * (double)m.seq_size / in.tokens;
        if (scaling_run_cost(step_s, (int64_t)in.batch_size, m.seq_size, (int64_t)in.num_gpus,
                             &training.t, &run, err))
            return NULL;
        has_run = true;
    }

    json_t *out = json_object();
    json_t *warnings = json_array();
    json_object_set_new(out, "params", encode_params(&r.params));
    json_object_set_new(out, "flops", encode_flops(&r.flops));
    json_object_set_new(out, "units",
                        json_pack("{s:s,s:s}", "params", "parameters", "flops",
                                  "FLOP for one sequence of seq_size tokens (matrix multiplies)"));
    json_object_set_new(out, "budget_params", count(r.budget_params));
    json_object_set_new(out, "palm",
                        json_pack("{s:o,s:o}", "flops_per_token", count(r.palm_flops_per_token),
                                  "flops_per_sequence", count(r.palm_flops_per_sequence)));
    json_object_set_new(out, "checkpoint_bytes", count(r.checkpoint_bytes));
    json_object_set_new(out, "train_flops_per_token", count(r.train_flops_per_token));
    if (r.has_mfu)
        json_object_set_new(out, "mfu",
                            json_pack("{s:f,s:f}", "achieved_flops_per_s",
                                      r.achieved_flops_per_s, "fraction", r.mfu));
    if (in.has_tokens) {
        json_t *t = json_pack("{s:o}", "flops", count(r.train_flops));
        if (r.has_train_time) {
            json_object_set_new(t, "seconds", json_real(r.train_seconds));
            json_object_set_new(t, "days", json_real(r.train_days));
        }
        if (r.has_gpus_for_budget)
            json_object_set_new(t, "gpus_for_time_budget", count(r.gpus_for_budget));
        json_object_set_new(out, "training", t);
    }
    json_t *mem = json_pack("{s:o}", "training_bytes", count(r.memory_bytes));
    if (r.has_gpus_by_memory)
        json_object_set_new(mem, "gpus_by_memory", count(r.gpus_by_memory));
    json_object_set_new(out, "memory", mem);
    if (r.has_lora) {
        json_t *l = json_pack("{s:o,s:o,s:o,s:o,s:o}", "params", count(r.lora_params),
                              "step_flops", count(r.lora_step_flops), "memory_bytes",
                              count(r.lora_memory_bytes), "backbone_memory_bytes",
                              count(r.lora_backbone_memory_bytes), "adapter_memory_bytes",
                              count(r.lora_adapter_memory_bytes));
        if (r.has_lora_gpus_by_compute)
            json_object_set_new(l, "gpus_by_compute", count(r.lora_gpus_by_compute));
        if (r.has_lora_gpus_by_memory)
            json_object_set_new(l, "gpus_by_memory", count(r.lora_gpus_by_memory));
        json_object_set_new(out, "lora", l);
    }
    if (has_run)
        json_object_set_new(out, "run", codec_run_encode(&run));
    else if (training.has)
        json_array_append_new(warnings,
                              json_string("training: the run's cost needs batch_size, "
                                          "gpu_peak_flops, mfu and num_gpus"));
    /* Above 1 the inputs contradict each other (no GPU does more than its peak): most often a
     * global batch_size with the GPUs that ran it left out. Said, not refused: the other answers
     * do not depend on it. */
    if (r.has_mfu && r.mfu > 1.0)
        json_array_append_new(
            warnings, json_string(in.has_num_gpus
                                      ? "mfu.fraction is above 1: batch_size sequences in "
                                        "measured_step_time_s need more than num_gpus GPUs' peak"
                                      : "mfu.fraction is above 1: batch_size is the global batch; "
                                        "give num_gpus, the GPUs that ran the measured step"));
    if (m.vocab_size == 0)
        json_array_append_new(warnings,
                              json_string("model.vocab_size not given: embedding and output "
                                          "layers are not counted"));
    json_object_set_new(out, "warnings", warnings);
    (void)err;
    return out;
}

const codec_endpoint_t codec_transformer_endpoint = {"transformer", "/v1/transformer", normalize,
                                                     evaluate};

/* search_codec.c — JSON ⇄ search request and result (see search_codec.h for the wire format).
 * The search as sweep units, its checkpoint and its runs on threads are search_kind.c. */
#include "search_codec.h"

#include <stdlib.h>
#include <string.h>

#include "json_read.h"
#include "llm_codec.h"
#include "model_codec.h"

static const char *const request_keys[] = {"kind",     "model",          "system", "num_procs",
                                           "max_batch_size", "datatype", "options", "finetune",
                                           NULL};
static const char *const option_keys[] = {"mbs_break",     "top_n",           "no_tp_overlap",
                                          "no_dp_overlap", "fused_activation", "no_offload",
                                          "exact_batch",   "max_tensor_par",  "max_pipeline_par",
                                          "attention_kernel", "fp8",        "context_par",
                                          "zero_stage",    "moe_dispatcher", "recompute_blocks",
                                          "recompute_modules", "low_precision_gradients",
                                          "stack",         "compile",       "loss_kernel",
                                          "pipeline_schedule", "moe_a2a_overlap",
                                          "fp8_activation_cache", "fp8_params",
                                          "optimizer_state_datatype", "tensor_par",
                                          "pipeline_par", "microbatch_size",
                                          "activation_recompute", NULL};
static const char *const kernel_picks[] = {"unfused", "fused", "all", NULL};
static const char *const recompute_blocks_picks[] = {"all", "fewest", NULL};
static const char *const recompute_modules_picks[] = {"none", "fewest", NULL};

/* An integer option from min to max that may also be "all" (SEARCH_FREE); absent: dflt. */
static int decode_int_or_all(const json_t *options, const char *key, int64_t dflt, int64_t min,
                             int64_t max, int64_t *out, fathom_error_t *err)
{
    const json_t *v = options ? json_object_get(options, key) : NULL;
    if (json_is_string(v)) {
        if (strcmp(json_string_value(v), "all") != 0) {
            char p[JR_PATH_MAX];
            jr_path(p, sizeof p, "options", key);
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p,
                                    "must be an integer or \"all\"");
        }
        *out = SEARCH_FREE;
        return 0;
    }
    if (!options)
        return *out = dflt, 0;
    return jr_int(options, "options", key, JR_OPTIONAL, dflt, min, max, out, err);
}

/* The execution fields an option fixes for every execution of the walk (search.h):
 * pipeline_schedule, moe_a2a_overlap, fp8_activation_cache, fp8_params and
 * optimizer_state_datatype, each with execution.<field>'s names and default. What they need of
 * the model and of options.fp8 is search_plan_create's check (errors name options.<field>). */
static int decode_fixed_execution(const json_t *o, search_options_t *opt, fathom_error_t *err)
{
    int schedule = LLM_PP_1F1B, state = LLM_STATE_FLOAT32;
    if (jr_enum(o, "options", "pipeline_schedule", JR_OPTIONAL, LLM_PP_1F1B,
                llm_pp_schedule_names, &schedule, err) ||
        jr_bool(o, "options", "moe_a2a_overlap", JR_OPTIONAL, false, &opt->moe_a2a_overlap,
                err) ||
        jr_bool(o, "options", "fp8_activation_cache", JR_OPTIONAL, false,
                &opt->fp8_activation_cache, err) ||
        jr_bool(o, "options", "fp8_params", JR_OPTIONAL, false, &opt->fp8_params, err) ||
        jr_enum(o, "options", "optimizer_state_datatype", JR_OPTIONAL, LLM_STATE_FLOAT32,
                llm_state_dtype_names, &state, err))
        return -1;
    opt->pipeline_schedule = (llm_pp_schedule_t)schedule;
    opt->optimizer_state_datatype = (llm_state_dtype_t)state;
    return 0;
}

/* options.fp8: false, true or "all". */
static int decode_fp8(const json_t *options, search_pick_t dflt, search_pick_t *out,
                      fathom_error_t *err)
{
    const json_t *v = options ? json_object_get(options, "fp8") : NULL;
    if (!v) {
        *out = dflt;
        return 0;
    }
    if (json_is_boolean(v)) {
        *out = json_is_true(v) ? SEARCH_PICK_ON : SEARCH_PICK_OFF;
        return 0;
    }
    if (json_is_string(v) && strcmp(json_string_value(v), "all") == 0) {
        *out = SEARCH_PICK_ALL;
        return 0;
    }
    return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "options.fp8",
                            "must be false, true or \"all\"");
}
static const char *const kind_names[] = {"optimal_execution", NULL};

llm_datatype_t codec_natural_datatype(const fathom_model_t *m, const llm_system_t *s)
{
    const bool bf16 = s->matrix.rate[LLM_DT_BFLOAT16].present &&
                      s->vector.rate[LLM_DT_BFLOAT16].present;
    return !m->calculon_block && bf16 ? LLM_DT_BFLOAT16 : LLM_DT_FLOAT16;
}

search_pick_t codec_default_attention_kernel(const fathom_model_t *m)
{
    return m->calculon_block ? SEARCH_PICK_OFF : SEARCH_PICK_ON;
}

search_pick_t codec_default_fp8(const fathom_model_t *m, const llm_system_t *s, llm_datatype_t dt)
{
    const bool half = dt == LLM_DT_BFLOAT16 || dt == LLM_DT_FLOAT16;
    return !m->calculon_block && half && s->matrix.rate[LLM_DT_FLOAT8].present ? SEARCH_PICK_ALL
                                                                               : SEARCH_PICK_OFF;
}

/* The top-level "finetune" (execution.finetune of every execution), checked against the model
 * at once so a search that could find nothing says why. */
static int decode_search_finetune(const json_t *body, search_request_t *r, fathom_error_t *err)
{
    return codec_llm_finetune_decode(json_object_get(body, "finetune"), "finetune", r->datatype,
                                     &r->finetune, err) ||
           codec_llm_finetune_check_request(&r->model, &r->finetune, err);
}

static int decode_fused(const json_t *options, search_fused_t *out, fathom_error_t *err)
{
    const json_t *v = options ? json_object_get(options, "fused_activation") : NULL;
    if (!v) {
        *out = SEARCH_FUSED_TRUE;
        return 0;
    }
    if (json_is_boolean(v)) {
        *out = json_is_true(v) ? SEARCH_FUSED_TRUE : SEARCH_FUSED_FALSE;
        return 0;
    }
    int idx = 0;
    if (jr_enum(options, "options", "fused_activation", JR_REQUIRED, 0, search_fused_names, &idx,
                err))
        return -1;
    *out = (search_fused_t)idx;
    return 0;
}

/* The searched model on its system: model, system, GPU count, batch, datatype, fine-tuning. */
static int decode_search_subject(const json_t *body, const codec_ctx_t *ctx, search_request_t *r,
                                 fathom_error_t *err)
{
    int kind = 0, dt = LLM_DT_FLOAT16;
    if (jr_enum(body, "", "kind", JR_OPTIONAL, 0, kind_names, &kind, err))
        return -1;
    if (!jr_has(body, "model"))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "model", "is required");
    if (codec_model_decode(json_object_get(body, "model"), "model", ctx->presets, &r->model, err))
        return -1;
    if (!jr_has(body, "system"))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "system", "is required");
    if (codec_llm_system_decode(json_object_get(body, "system"), "system", ctx->presets,
                                &r->system, err))
        return -1;
    /* Modern defaults (codec_search_modern_defaults): a modern model searches at its natural
     * datatype with fused attention, and FP8 free where the system has it; Calculon's block
     * keeps Calculon's defaults (float16, unfused, no FP8), so its golden searches hold. */
    if (jr_int(body, "", "num_procs", JR_REQUIRED, 0, 1, SEARCH_MAX_PROCS, &r->num_procs, err) ||
        jr_int(body, "", "max_batch_size", JR_REQUIRED, 0, 1, SEARCH_MAX_BATCH,
               &r->max_batch_size, err) ||
        jr_enum(body, "", "datatype", JR_OPTIONAL,
                (int)codec_natural_datatype(&r->model, &r->system), llm_datatype_names, &dt, err))
        return -1;
    r->datatype = (llm_datatype_t)dt;
    if (decode_search_finetune(body, r, err))
        return -1;
    if (!r->system.matrix.rate[r->datatype].present || !r->system.vector.rate[r->datatype].present)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "datatype",
                                "the system has no %s rate", llm_datatype_name(r->datatype));
    return 0;
}

/* The options that narrow the layouts, and the stated layout a search may be pinned to. */
static int decode_layout_options(const json_t *o, search_options_t *opt, fathom_error_t *err)
{
    int64_t top_n = 1;
    if (jr_expect_object(o, "options", err) || jr_check_keys(o, "options", option_keys, err) ||
        jr_bool(o, "options", "mbs_break", JR_OPTIONAL, false, &opt->mbs_break, err) ||
        jr_int(o, "options", "top_n", JR_OPTIONAL, 1, 1, SEARCH_TOP_N_MAX, &top_n, err) ||
        jr_bool(o, "options", "no_tp_overlap", JR_OPTIONAL, false, &opt->no_tp_overlap, err) ||
        jr_bool(o, "options", "no_dp_overlap", JR_OPTIONAL, false, &opt->no_dp_overlap, err) ||
        jr_bool(o, "options", "no_offload", JR_OPTIONAL, false, &opt->no_offload, err) ||
        jr_bool(o, "options", "exact_batch", JR_OPTIONAL, false, &opt->exact_batch, err) ||
        jr_int(o, "options", "max_tensor_par", JR_OPTIONAL, 0, 1, SEARCH_MAX_PROCS,
               &opt->max_tensor_par, err) ||
        jr_int(o, "options", "max_pipeline_par", JR_OPTIONAL, 0, 1, SEARCH_MAX_PROCS,
               &opt->max_pipeline_par, err) ||
        jr_int(o, "options", "tensor_par", JR_OPTIONAL, 0, 1, SEARCH_MAX_PROCS, &opt->tensor_par,
               err) ||
        jr_int(o, "options", "pipeline_par", JR_OPTIONAL, 0, 1, SEARCH_MAX_PROCS,
               &opt->pipeline_par, err) ||
        jr_int(o, "options", "microbatch_size", JR_OPTIONAL, 0, 1, SEARCH_MAX_BATCH,
               &opt->microbatch_size, err) ||
        jr_enum(o, "options", "activation_recompute", JR_OPTIONAL, SEARCH_FREE,
                llm_recompute_names, &opt->recompute, err) ||
        jr_bool(o, "options", "low_precision_gradients", JR_OPTIONAL, false,
                &opt->low_precision_gradients, err) ||
        decode_fixed_execution(o, opt, err))
        return -1;
    opt->top_n = (int)top_n;
    return 0;
}

/* The stack the layouts run on (options.stack, compile, loss_kernel), and what each stack
 * refuses. */
static int decode_stack_options(const json_t *o, search_request_t *r, fathom_error_t *err)
{
    int stack = LLM_STACK_MEGATRON, loss = 0;
    if ((o && jr_enum(o, "options", "stack", JR_OPTIONAL, LLM_STACK_MEGATRON, llm_stack_names,
                      &stack, err)) ||
        (o && jr_bool(o, "options", "compile", JR_OPTIONAL, false, &r->options.compile, err)) ||
        (o && jr_enum(o, "options", "loss_kernel", JR_OPTIONAL, LLM_LOSS_TORCH,
                      llm_loss_kernel_names, &loss, err)))
        return -1;
    r->options.stack = (llm_stack_t)stack;
    r->options.loss_kernel = (llm_loss_kernel_t)loss;
    if (r->options.loss_kernel != LLM_LOSS_TORCH && r->options.stack == LLM_STACK_MEGATRON)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "options.loss_kernel",
                                "chooses a PyTorch stack's cross-entropy: set options.stack to "
                                "torchtitan or fsdp (Megatron's is its vocab-parallel loss)");
    if (r->options.compile && r->options.stack == LLM_STACK_MEGATRON)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "options.compile",
                                "torch.compile is a PyTorch stack's option: set options.stack "
                                "to torchtitan or fsdp");
    if (r->options.stack != LLM_STACK_MEGATRON && r->model.calculon_block)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "options.stack",
                                "the PyTorch stacks run the modern block: give the model one of "
                                "kv_heads, gated_mlp, norm, qkv_bias or causal");
    return 0;
}

/* The choices a search makes or is told: fused activation, attention kernel, MoE dispatcher,
 * recompute of blocks and modules, FP8, context parallelism and ZeRO stage. */
static int decode_free_choices(const json_t *o, search_request_t *r, fathom_error_t *err)
{
    /* a modern model frees the selective-recompute modules by default (the runs of 2024-2026
     * recompute norms, activations and MLA's up-projections before whole blocks); Calculon's
     * models keep Calculon's space, none */
    int kernel = (int)codec_default_attention_kernel(&r->model), dispatcher = 0, blocks = 0,
        modules = r->model.calculon_block ? 0 : 1;
    if (decode_fused(o, &r->options.fused_activation, err) ||
        (o && jr_enum(o, "options", "attention_kernel", JR_OPTIONAL, kernel, kernel_picks,
                      &kernel, err)) ||
        (o && jr_enum(o, "options", "moe_dispatcher", JR_OPTIONAL, LLM_MOE_DISPATCH_ALLTOALL,
                      llm_moe_dispatcher_names, &dispatcher, err)) ||
        (o && jr_enum(o, "options", "recompute_blocks", JR_OPTIONAL, 0, recompute_blocks_picks,
                      &blocks, err)) ||
        (o && jr_enum(o, "options", "recompute_modules", JR_OPTIONAL, modules,
                      recompute_modules_picks, &modules, err)) ||
        decode_fp8(o, codec_default_fp8(&r->model, &r->system, r->datatype), &r->options.fp8,
                   err))
        return -1;
    r->options.attention_kernel = (search_pick_t)kernel;
    r->options.moe_dispatcher = (llm_moe_dispatcher_t)dispatcher;
    r->options.fewest_recompute_blocks = blocks == 1;
    r->options.fewest_recompute_modules = modules == 1;
    int64_t cp = 1, zero = SEARCH_ZERO_CALCULON;
    if (decode_int_or_all(o, "context_par", 1, 1, SEARCH_MAX_PROCS, &cp, err) ||
        decode_int_or_all(o, "zero_stage", SEARCH_ZERO_CALCULON, 0, 3, &zero, err))
        return -1;
    r->options.context_par = cp;
    r->options.zero_stage = (int)zero;
    return 0;
}

int codec_search_decode(const json_t *body, const codec_ctx_t *ctx, search_request_t *out,
                        fathom_error_t *err)
{
    if (jr_expect_object(body, "", err) || jr_check_keys(body, "", request_keys, err))
        return -1;
    search_request_t r;
    memset(&r, 0, sizeof r);
    if (decode_search_subject(body, ctx, &r, err))
        return -1;
    search_options_default(&r.options);
    const json_t *o = json_object_get(body, "options");
    if ((o && decode_layout_options(o, &r.options, err)) || decode_stack_options(o, &r, err) ||
        decode_free_choices(o, &r, err) || search_check_fixed_execution(&r, err))
        return -1;
    r.mode = SEARCH_EVALUATE;
    *out = r;
    return 0;
}

json_t *codec_search_request_encode(const search_request_t *r)
{
    json_t *model = codec_model_encode(&r->model);
    json_t *system = codec_llm_system_encode(&r->system);
    json_t *fp8 = r->options.fp8 == SEARCH_PICK_ALL ? json_string("all")
                                                     : json_boolean(r->options.fp8 == SEARCH_PICK_ON);
    json_t *options = json_pack("{s:b,s:i,s:b,s:b,s:s,s:s,s:o}", "mbs_break", r->options.mbs_break,
                                "top_n", r->options.top_n, "no_tp_overlap",
                                r->options.no_tp_overlap, "no_dp_overlap",
                                r->options.no_dp_overlap, "fused_activation",
                                search_fused_names[r->options.fused_activation],
                                "attention_kernel", kernel_picks[r->options.attention_kernel],
                                "fp8", fp8);
    /* The constraints appear only when set: a search without them keeps the normalized form,
     * and so the id, it had before they existed. */
    if (options && r->options.context_par != 1)
        json_object_set_new(options, "context_par",
                            r->options.context_par == SEARCH_FREE
                                ? json_string("all")
                                : json_integer(r->options.context_par));
    if (options && r->options.zero_stage != SEARCH_ZERO_CALCULON)
        json_object_set_new(options, "zero_stage",
                            r->options.zero_stage == SEARCH_FREE
                                ? json_string("all")
                                : json_integer(r->options.zero_stage));
    if (options && r->options.moe_dispatcher != LLM_MOE_DISPATCH_ALLTOALL)
        json_object_set_new(options, "moe_dispatcher",
                            json_string(llm_moe_dispatcher_names[r->options.moe_dispatcher]));
    if (options && r->options.fewest_recompute_blocks)
        json_object_set_new(options, "recompute_blocks", json_string("fewest"));
    /* only when not the model's default (fewest for the modern block, none for Calculon's) */
    if (options && r->options.fewest_recompute_modules == r->model.calculon_block)
        json_object_set_new(options, "recompute_modules",
                            json_string(r->options.fewest_recompute_modules ? "fewest" : "none"));
    if (options && r->options.low_precision_gradients)
        json_object_set_new(options, "low_precision_gradients", json_true());
    if (options && r->options.stack != LLM_STACK_MEGATRON)
        json_object_set_new(options, "stack", json_string(llm_stack_names[r->options.stack]));
    if (options && r->options.compile)
        json_object_set_new(options, "compile", json_true());
    if (options && r->options.loss_kernel != LLM_LOSS_TORCH)
        json_object_set_new(options, "loss_kernel",
                            json_string(llm_loss_kernel_names[r->options.loss_kernel]));
    if (options && r->options.pipeline_schedule != LLM_PP_1F1B)
        json_object_set_new(options, "pipeline_schedule",
                            json_string(llm_pp_schedule_names[r->options.pipeline_schedule]));
    if (options && r->options.moe_a2a_overlap)
        json_object_set_new(options, "moe_a2a_overlap", json_true());
    if (options && r->options.fp8_activation_cache)
        json_object_set_new(options, "fp8_activation_cache", json_true());
    if (options && r->options.fp8_params)
        json_object_set_new(options, "fp8_params", json_true());
    if (options && r->options.optimizer_state_datatype != LLM_STATE_FLOAT32)
        json_object_set_new(
            options, "optimizer_state_datatype",
            json_string(llm_state_dtype_names[r->options.optimizer_state_datatype]));
    if (options && r->options.no_offload)
        json_object_set_new(options, "no_offload", json_true());
    if (options && r->options.exact_batch)
        json_object_set_new(options, "exact_batch", json_true());
    if (options && r->options.max_tensor_par > 0)
        json_object_set_new(options, "max_tensor_par", json_integer(r->options.max_tensor_par));
    if (options && r->options.max_pipeline_par > 0)
        json_object_set_new(options, "max_pipeline_par",
                            json_integer(r->options.max_pipeline_par));
    if (options && r->options.tensor_par > 0)
        json_object_set_new(options, "tensor_par", json_integer(r->options.tensor_par));
    if (options && r->options.pipeline_par > 0)
        json_object_set_new(options, "pipeline_par", json_integer(r->options.pipeline_par));
    if (options && r->options.microbatch_size > 0)
        json_object_set_new(options, "microbatch_size",
                            json_integer(r->options.microbatch_size));
    if (options && r->options.recompute != SEARCH_FREE)
        json_object_set_new(options, "activation_recompute",
                            json_string(llm_recompute_names[r->options.recompute]));
    if (!model || !system || !options) {
        json_decref(model);
        json_decref(system);
        json_decref(options);
        return NULL;
    }
    /* "o" steals the references, also when json_pack fails. */
    json_t *out = json_pack("{s:s,s:o,s:o,s:I,s:I,s:s,s:o}", "kind", "optimal_execution", "model",
                            model, "system", system, "num_procs", (json_int_t)r->num_procs,
                            "max_batch_size", (json_int_t)r->max_batch_size, "datatype",
                            llm_datatype_name(r->datatype), "options", options);
    /* only when set: a pre-training search keeps its normalized form and id */
    if (out && r->finetune.method != LLM_FINETUNE_NONE &&
        json_object_set_new(out, "finetune", codec_llm_finetune_encode(&r->finetune))) {
        json_decref(out);
        return NULL;
    }
    return out;
}

void codec_search_size(const search_request_t *req, uint64_t *exhaustive, uint64_t *two_stage)
{
    search_request_t count = *req;
    count.options.refine_units = SEARCH_REFINE_UNITS;
    count.mode = count.options.mbs_break ? SEARCH_EVALUATE : SEARCH_COUNT_ONLY;
    fathom_error_t none; /* refused by the search itself (too many units): no layout here */
    search_plan_t *plan = search_plan_create(&count, &none);
    *exhaustive = plan ? search_plan_exhaustive_executions(plan) : 0;
    *two_stage = plan ? search_plan_max_executions(plan) : 0;
    search_plan_free(plan);
}

/* The pins and narrowing options that can leave no layout, each with the request freed of it. */
enum { PIN_TP, PIN_PP, PIN_MBS, PIN_CP, PIN_SCHEDULE, PIN_EXACT, PIN_MAX_PP, PIN__COUNT };
static const char *const pin_fields[PIN__COUNT] = {
    "options.tensor_par", "options.pipeline_par", "options.microbatch_size",
    "options.context_par", "options.pipeline_schedule", "options.exact_batch",
    "options.max_pipeline_par"};

static bool pin_freed(const search_request_t *req, int pin, search_request_t *out)
{
    *out = *req;
    search_options_t *o = &out->options;
    switch (pin) {
    case PIN_TP: o->tensor_par = 0; return req->options.tensor_par != 0;
    case PIN_PP: o->pipeline_par = 0; return req->options.pipeline_par != 0;
    case PIN_MBS: o->microbatch_size = 0; return req->options.microbatch_size != 0;
    case PIN_CP: o->context_par = 1; return req->options.context_par > 1;
    case PIN_SCHEDULE:
        o->pipeline_schedule = LLM_PP_1F1B;
        return req->options.pipeline_schedule != LLM_PP_1F1B;
    case PIN_EXACT: o->exact_batch = false; return req->options.exact_batch;
    default: o->max_pipeline_par = 0; return req->options.max_pipeline_par != 0;
    }
}

int codec_search_no_layout(const search_request_t *req, fathom_error_t *err)
{
    /* as a plan takes it (usable_but_for_schedule): where only the schedule rules every layout
     * out (DualPipe on one GPU), the search runs and ranks nothing */
    search_request_t freed;
    uint64_t exhaustive, two_stage;
    if (pin_freed(req, PIN_SCHEDULE, &freed)) {
        codec_search_size(&freed, &exhaustive, &two_stage);
        if (exhaustive > 0)
            return 0;
    }
    for (int pin = 0; pin < PIN__COUNT; pin++) {
        if (pin == PIN_SCHEDULE || !pin_freed(req, pin, &freed))
            continue;
        codec_search_size(&freed, &exhaustive, &two_stage);
        if (exhaustive > 0)
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, pin_fields[pin],
                                    "no layout of the model on %lld GPUs can meet it with the "
                                    "other options as given (a degree must divide the GPUs and "
                                    "the model's heads or blocks; a microbatch, the batch of a "
                                    "data-parallel replica): without it there are %llu "
                                    "executions to search",
                                    (long long)req->num_procs, (unsigned long long)exhaustive);
    }
    return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "num_procs",
                            "no layout of the model uses %lld GPUs with these options (no split "
                            "into tensor, pipeline and data parallelism fits its heads, its "
                            "blocks and a data-parallel degree dividing max_batch_size)",
                            (long long)req->num_procs);
}

json_t *codec_search_normalize(const json_t *body, const codec_ctx_t *ctx, fathom_error_t *err)
{
    search_request_t r;
    if (codec_search_decode(body, ctx, &r, err))
        return NULL;
    json_t *out = codec_search_request_encode(&r);
    if (!out)
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    return out;
}

json_t *codec_search_result_encode(const search_request_t *req, const search_result_t *res)
{
    json_t *best = json_array();
    json_t *out = NULL;
    if (!best)
        goto out;
    for (int i = 0; i < res->n_best; i++) {
        const search_entry_t *e = &res->best[i];
        json_t *item = json_pack(
            "{s:o,s:o,s:o,s:o}", "execution", codec_llm_execution_encode(&e->execution), "stats",
            codec_llm_stats_encode(&e->result.stats), "summary",
            codec_llm_summary_encode(&req->model, &e->execution, &e->result), "warnings",
            codec_llm_warnings_encode(&req->model, &req->system, &e->execution, &e->result));
        if (!item || json_array_append_new(best, item))
            goto out;
    }
    out = json_pack("{s:o,s:{s:I,s:I,s:I,s:I},s:o}", "best", best, "counts", "total",
                    (json_int_t)res->total, "good", (json_int_t)res->good, "bad",
                    (json_int_t)res->bad, "pruned", (json_int_t)res->pruned, "points",
                    codec_search_points_encode(res, false));
    best = NULL; /* handed to json_pack ("o" steals even on failure) */
out:
    json_decref(best);
    return out;
}

json_t *codec_search_points_encode(const search_result_t *res, bool with_position)
{
    search_point_t *sorted = malloc((size_t)(res->n_points ? res->n_points : 1) * sizeof *sorted);
    json_t *arr = json_array();
    if (!sorted || !arr) {
        free(sorted);
        json_decref(arr);
        return NULL;
    }
    memcpy(sorted, res->points, (size_t)res->n_points * sizeof *sorted);
    search_points_sort(sorted, res->n_points);
    for (int i = 0; i < res->n_points; i++) {
        const search_point_t *p = &sorted[i];
        json_t *row = with_position
                          ? json_pack("[f,f,f,I,I]", p->sample_rate, p->mem_tier1_bytes,
                                      p->mem_tier2_bytes, (json_int_t)p->unit,
                                      (json_int_t)p->index)
                          : json_pack("[f,f,f]", p->sample_rate, p->mem_tier1_bytes,
                                      p->mem_tier2_bytes);
        json_array_append_new(arr, row);
    }
    free(sorted);
    return arr;
}

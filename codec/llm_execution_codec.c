/* llm_execution_codec.c — Calculon's execution object, strictly decoded (Calculon's fields, the
 * modern block's and the stacks', each bad value a field error) and fully encoded; the default
 * tiers of a layout left to the system (llm_codec.h). */
#include "llm_codec.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "json_read.h"
#include "json_write.h"
#include "model_codec.h"
#include "transformer.h"

#define num(x) jw_num(x)

static const char *const execution_keys[] = {
    "num_procs",           "tensor_par",         "pipeline_par",      "data_par",
    "tensor_par_net",      "pipeline_par_net",   "data_par_net",      "batch_size",
    "microbatch_size",     "datatype",           "fused_activation",  "attention_type",
    "activation_recompute", "pipeline_interleaving", "optimizer_sharding",
    "tensor_par_comm_type", "tensor_par_overlap", "seq_par_ag_redo",  "data_par_overlap",
    "weight_offload",      "activations_offload", "optimizer_offload", "training",
    "attention_kernel",    "fp8",                "context_par",       "context_par_net",
    "zero_stage",          "shard_group",        "expert_par",        "expert_tensor_par",
    "expert_par_net",      "moe_load_imbalance", "moe_capacity_factor", "moe_a2a_overlap",
    "fp8_params",          "moe_dispatcher",     "recompute_blocks",  "recompute_modules",
    "low_precision_gradients", "stack",           "compile",           "fp8_recipe",
    "async_tp",            "loss_kernel",        "selective_ac",      "pipeline_schedule",
    "fp8_activation_cache",
    "optimizer_state_datatype", "first_stage_blocks", "last_stage_blocks",
    "expandable_segments", "finetune",         "cuda_graphs",       "moe_fp8_dispatch",
    NULL};

/* a*b, saturating: three factors of up to 2^30 overflow int64. */
static int64_t mul_sat(int64_t a, int64_t b)
{
    return a > INT64_MAX / b ? INT64_MAX : a * b;
}

/* zero_stage and optimizer_sharding say one thing twice: optimizer_sharding true is stage 1.
 * Either may be left out; given together they must agree. The degrees are read (decode_degrees):
 * a stage with one data-parallel rank is refused here, naming the member the request gave (the
 * step model's own check can only name optimizer_sharding). */
static int decode_zero(const json_t *v, const char *path, llm_execution_t *e, fathom_error_t *err)
{
    int64_t zero = 0;
    bool sharding = false;
    const bool has_zero = jr_has(v, "zero_stage"), has_sharding = jr_has(v, "optimizer_sharding");
    if (jr_int(v, path, "zero_stage", JR_OPTIONAL, 0, 0, 3, &zero, err) ||
        jr_bool(v, path, "optimizer_sharding", JR_OPTIONAL, false, &sharding, err))
        return -1;
    if (has_zero && has_sharding && (zero >= 1) != sharding) {
        char p[JR_PATH_MAX];
        jr_path(p, sizeof p, path, "zero_stage");
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p,
                                "zero_stage %lld contradicts optimizer_sharding %s (stage 1 and up "
                                "shard the optimizer state)",
                                (long long)zero, sharding ? "true" : "false");
    }
    e->zero_stage = (int)(has_zero ? zero : sharding ? 1 : 0);
    e->optimizer_sharding = e->zero_stage >= 1;
    if (llm_zero_without_data_par(e)) {
        char p[JR_PATH_MAX];
        jr_path(p, sizeof p, path, has_zero ? "zero_stage" : "optimizer_sharding");
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p, LLM_ZERO_WITHOUT_DATA_PAR_MSG);
    }
    return 0;
}

/* The parallel degrees and the processor count: data_par defaults to what num_procs leaves,
 * num_procs to the product of the degrees. */
static int decode_degrees(const json_t *v, const char *path, llm_execution_t *e,
                          fathom_error_t *err)
{
    if (jr_int(v, path, "tensor_par", JR_OPTIONAL, 1, 1, LLM_CODEC_MAX_PROCS, &e->tensor_par,
               err) ||
        jr_int(v, path, "pipeline_par", JR_OPTIONAL, 1, 1, LLM_CODEC_MAX_PROCS, &e->pipeline_par,
               err) ||
        jr_int(v, path, "context_par", JR_OPTIONAL, 1, 1, LLM_CODEC_MAX_PROCS, &e->context_par,
               err) ||
        jr_int(v, path, "num_procs", JR_OPTIONAL, 0, 1, LLM_CODEC_MAX_PROCS, &e->num_procs, err))
        return -1;
    /* tensor, pipeline and context degrees are each at most 2^30: saturate their product */
    const int64_t tpc = mul_sat(mul_sat(e->tensor_par, e->pipeline_par), e->context_par);
    int64_t dflt_dp = 1;
    if (e->num_procs > 0 && e->num_procs % tpc == 0)
        dflt_dp = e->num_procs / tpc;
    if (e->num_procs > 0 && !jr_has(v, "data_par") && e->num_procs % tpc != 0) {
        char p[JR_PATH_MAX];
        jr_path(p, sizeof p, path, "num_procs");
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p,
                                "must be a multiple of tensor_par*%spipeline_par (%lld) when "
                                "data_par is left out",
                                e->context_par > 1 ? "context_par*" : "", (long long)tpc);
    }
    if (jr_int(v, path, "data_par", JR_OPTIONAL, dflt_dp, 1, LLM_CODEC_MAX_PROCS, &e->data_par,
               err))
        return -1;
    if (e->num_procs == 0) {
        /* each factor is at most 2^30: compare in double before multiplying */
        double procs = (double)e->tensor_par * (double)e->pipeline_par * (double)e->data_par *
                       (double)e->context_par;
        e->num_procs = procs <= (double)LLM_CODEC_MAX_PROCS
                           ? e->tensor_par * e->pipeline_par * e->data_par * e->context_par
                           : LLM_CODEC_MAX_PROCS + 1;
        if (e->num_procs > LLM_CODEC_MAX_PROCS) {
            char p[JR_PATH_MAX];
            jr_path(p, sizeof p, path, "data_par");
            return fathom_error_set(err, FATHOM_E_LIMIT_EXCEEDED, p,
                                    "tensor_par*pipeline_par*data_par exceeds %lld processors",
                                    LLM_CODEC_MAX_PROCS);
        }
    }
    return 0;
}

/* Calculon's own execution fields: networks, batches, datatype, recompute, the TP and DP
 * collectives' kind and overlap, offload. */
static int decode_calculon_fields(const json_t *v, const char *path, llm_execution_t *e,
                                  fathom_error_t *err)
{
    int64_t nets[3];
    int dt = 0, attn = 0, rec = 0, comm = 0, ovl = 0;
    if (jr_int(v, path, "tensor_par_net", JR_OPTIONAL, 0, 0, LLM_MAX_NETWORKS - 1, &nets[0], err) ||
        jr_int(v, path, "pipeline_par_net", JR_OPTIONAL, 0, 0, LLM_MAX_NETWORKS - 1, &nets[1],
               err) ||
        jr_int(v, path, "data_par_net", JR_OPTIONAL, 0, 0, LLM_MAX_NETWORKS - 1, &nets[2], err) ||
        jr_int(v, path, "batch_size", JR_REQUIRED, 0, 1, LLM_CODEC_MAX_BATCH, &e->batch_size,
               err) ||
        jr_int(v, path, "microbatch_size", JR_OPTIONAL, 1, 1, LLM_CODEC_MAX_MICROBATCH,
               &e->microbatch_size, err) ||
        jr_enum(v, path, "datatype", JR_OPTIONAL, LLM_DT_FLOAT16, llm_datatype_names, &dt, err) ||
        jr_bool(v, path, "fused_activation", JR_OPTIONAL, true, &e->fused_activation, err) ||
        jr_enum(v, path, "attention_type", JR_OPTIONAL, LLM_ATTN_MULTIHEAD, llm_attention_names,
                &attn, err) ||
        jr_enum(v, path, "activation_recompute", JR_OPTIONAL,
                e->training ? LLM_RECOMPUTE_FULL : LLM_RECOMPUTE_NONE, llm_recompute_names, &rec,
                err) ||
        jr_int(v, path, "pipeline_interleaving", JR_OPTIONAL, 1, 1, LLM_CODEC_MAX_MICROBATCH,
               &e->pipeline_interleaving, err) ||
        decode_zero(v, path, e, err) ||
        jr_enum(v, path, "tensor_par_comm_type", JR_OPTIONAL, LLM_TP_COMM_AR, llm_tp_comm_names,
                &comm, err) ||
        jr_enum(v, path, "tensor_par_overlap", JR_OPTIONAL, LLM_TP_OVERLAP_NONE,
                llm_tp_overlap_names, &ovl, err) ||
        jr_bool(v, path, "seq_par_ag_redo", JR_OPTIONAL, false, &e->seq_par_ag_redo, err) ||
        jr_bool(v, path, "data_par_overlap", JR_OPTIONAL, false, &e->data_par_overlap, err) ||
        jr_bool(v, path, "weight_offload", JR_OPTIONAL, false, &e->weight_offload, err) ||
        jr_bool(v, path, "activations_offload", JR_OPTIONAL, false, &e->activations_offload,
                err) ||
        jr_bool(v, path, "optimizer_offload", JR_OPTIONAL, false, &e->optimizer_offload, err))
        return -1;
    e->tensor_par_net = (int)nets[0];
    e->pipeline_par_net = (int)nets[1];
    e->data_par_net = (int)nets[2];
    e->datatype = (llm_datatype_t)dt;
    e->attention_type = (llm_attention_t)attn;
    e->activation_recompute = (llm_recompute_t)rec;
    e->tensor_par_comm_type = (llm_tp_comm_t)comm;
    e->tensor_par_overlap = (llm_tp_overlap_t)ovl;
    return 0;
}

/* What Calculon has no field for: the attention kernel, FP8, context parallelism, FSDP
 * sharding, experts, partial recompute. */
static int decode_modern_fields(const json_t *v, const char *path, llm_execution_t *e,
                                fathom_error_t *err)
{
    int kernel = 0, dispatcher = 0, schedule = 0, state = 0, graphs = 0;
    bool expandable = true;
    int64_t cp_net = 0, ep_net = 0;
    /* shard_group left out (0) means every processor of the group: the encoder writes it */
    if (jr_enum(v, path, "attention_kernel", JR_OPTIONAL, LLM_ATTN_KERNEL_UNFUSED,
                llm_attn_kernel_names, &kernel, err) ||
        jr_bool(v, path, "fp8", JR_OPTIONAL, false, &e->fp8, err) ||
        jr_bool(v, path, "fp8_params", JR_OPTIONAL, false, &e->fp8_params, err) ||
        jr_bool(v, path, "low_precision_gradients", JR_OPTIONAL, false,
                &e->low_precision_gradients, err) ||
        jr_int(v, path, "context_par_net", JR_OPTIONAL, 0, 0, LLM_MAX_NETWORKS - 1, &cp_net,
               err) ||
        jr_int(v, path, "shard_group", JR_OPTIONAL, 0, 1, LLM_CODEC_MAX_PROCS, &e->shard_group,
               err) ||
        jr_int(v, path, "expert_par", JR_OPTIONAL, 1, 1, LLM_CODEC_MAX_PROCS, &e->expert_par,
               err) ||
        jr_int(v, path, "expert_tensor_par", JR_OPTIONAL, 1, 1, LLM_CODEC_MAX_PROCS,
               &e->expert_tensor_par, err) ||
        jr_int(v, path, "expert_par_net", JR_OPTIONAL, e->tensor_par_net, 0,
               LLM_MAX_NETWORKS - 1, &ep_net, err) ||
        jr_real(v, path, "moe_load_imbalance", JR_OPTIONAL, 1.0, 1.0, 1e6,
                &e->moe_load_imbalance, err) ||
        jr_real(v, path, "moe_capacity_factor", JR_OPTIONAL, 0.0, 0.0, 1e6,
                &e->moe_capacity_factor, err) ||
        jr_bool(v, path, "moe_a2a_overlap", JR_OPTIONAL, false, &e->moe_a2a_overlap, err) ||
        jr_bool(v, path, "moe_fp8_dispatch", JR_OPTIONAL, false, &e->moe_fp8_dispatch, err) ||
        jr_enum(v, path, "moe_dispatcher", JR_OPTIONAL, LLM_MOE_DISPATCH_ALLTOALL,
                llm_moe_dispatcher_names, &dispatcher, err) ||
        jr_int(v, path, "recompute_blocks", JR_OPTIONAL, 0, 1, MODEL_MAX_BLOCKS,
               &e->recompute_blocks, err) ||
        jr_enum_set(v, path, "recompute_modules", JR_OPTIONAL, llm_recompute_module_names,
                    &e->recompute_modules, err) ||
        jr_enum(v, path, "pipeline_schedule", JR_OPTIONAL, LLM_PP_1F1B, llm_pp_schedule_names,
                &schedule, err) ||
        jr_bool(v, path, "fp8_activation_cache", JR_OPTIONAL, false, &e->fp8_activation_cache,
                err) ||
        jr_enum(v, path, "optimizer_state_datatype", JR_OPTIONAL, LLM_STATE_FLOAT32,
                llm_state_dtype_names, &state, err) ||
        jr_int(v, path, "first_stage_blocks", JR_OPTIONAL, 0, 1, MODEL_MAX_BLOCKS,
               &e->first_stage_blocks, err) ||
        jr_int(v, path, "last_stage_blocks", JR_OPTIONAL, 0, 1, MODEL_MAX_BLOCKS,
               &e->last_stage_blocks, err) ||
        jr_bool(v, path, "expandable_segments", JR_OPTIONAL, true, &expandable, err) ||
        jr_enum(v, path, "cuda_graphs", JR_OPTIONAL, LLM_GRAPHS_NONE, llm_cuda_graphs_names,
                &graphs, err))
        return -1;
    e->cuda_graphs = (llm_cuda_graphs_t)graphs;
    e->fixed_segments = !expandable;
    /* 1F1B with interleaving is the interleaved schedule: saying "1f1b" beside it contradicts */
    if (schedule == LLM_PP_1F1B && e->pipeline_interleaving > 1 && jr_has(v, "pipeline_schedule")) {
        char p[JR_PATH_MAX];
        jr_path(p, sizeof p, path, "pipeline_schedule");
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p,
                                "\"1f1b\" runs one chunk per rank, but pipeline_interleaving is "
                                "%lld: say \"interleaved\" or leave it out",
                                (long long)e->pipeline_interleaving);
    }
    e->pipeline_schedule = (llm_pp_schedule_t)schedule;
    e->optimizer_state_datatype = (llm_state_dtype_t)state;
    char fp[JR_PATH_MAX];
    jr_path(fp, sizeof fp, path, "finetune");
    if (codec_llm_finetune_decode(json_object_get(v, "finetune"), fp, e->datatype, &e->finetune,
                                  err))
        return -1;
    e->attention_kernel = (llm_attn_kernel_t)kernel;
    e->context_par_net = (int)cp_net;
    e->expert_par_net = (int)ep_net;
    e->moe_dispatcher = (llm_moe_dispatcher_t)dispatcher;
    return 0;
}

/* The software stack and what it is asked to do (doc/stacks.md): stack "megatron" (the
 * behaviour of every other field), compile and async_tp false, and fp8_recipe the stack's
 * default (llm_default_fp8_recipe) — given only with fp8 true. */
static int decode_stack_fields(const json_t *v, const char *path, llm_execution_t *e,
                               fathom_error_t *err)
{
    int stack = 0, recipe = 0, sac = 0, loss = 0;
    if (jr_enum(v, path, "stack", JR_OPTIONAL, LLM_STACK_MEGATRON, llm_stack_names, &stack,
                err) ||
        jr_enum(v, path, "selective_ac", JR_OPTIONAL, LLM_SAC_NONE, llm_selective_ac_names, &sac,
                err) ||
        jr_bool(v, path, "compile", JR_OPTIONAL, false, &e->compile, err) ||
        jr_bool(v, path, "async_tp", JR_OPTIONAL, false, &e->async_tp, err) ||
        jr_enum(v, path, "loss_kernel", JR_OPTIONAL, LLM_LOSS_TORCH, llm_loss_kernel_names, &loss,
                err) ||
        jr_enum(v, path, "fp8_recipe", JR_OPTIONAL,
                (int)llm_default_fp8_recipe((llm_stack_t)stack), llm_fp8_recipe_names, &recipe,
                err))
        return -1;
    e->stack = (llm_stack_t)stack;
    e->selective_ac = (llm_selective_ac_t)sac;
    e->loss_kernel = (llm_loss_kernel_t)loss;
    /* a PyTorch stack calls F.scaled_dot_product_attention unless told another kernel */
    if (e->stack != LLM_STACK_MEGATRON && !jr_has(v, "attention_kernel"))
        e->attention_kernel = LLM_ATTN_KERNEL_SDPA;
    if (jr_has(v, "fp8_recipe") && !e->fp8) {
        char p[JR_PATH_MAX];
        jr_path(p, sizeof p, path, "fp8_recipe");
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p,
                                "a recipe needs FP8 training: set execution.fp8 true");
    }
    /* without FP8 the recipe is the zero value, so an execution without FP8 has one form */
    e->fp8_recipe = e->fp8 ? (llm_fp8_recipe_t)recipe : LLM_FP8_CURRENT;
    return 0;
}

int codec_llm_execution_decode(const json_t *v, const char *path, llm_execution_t *out,
                               fathom_error_t *err)
{
    if (jr_expect_object(v, path, err) || jr_check_keys(v, path, execution_keys, err))
        return -1;
    llm_execution_t e;
    memset(&e, 0, sizeof e);
    if (jr_bool(v, path, "training", JR_OPTIONAL, true, &e.training, err) ||
        decode_degrees(v, path, &e, err) || decode_calculon_fields(v, path, &e, err) ||
        decode_modern_fields(v, path, &e, err) || decode_stack_fields(v, path, &e, err))
        return -1;
    /* A shard group is a set of the G = data_par × context_par ranks that holds one copy of the
     * shards, so it divides G. Checked here, on the request as given: the normalized form writes
     * the group in force, min(shard_group, G), and a group larger than G would otherwise be
     * answered as G without a word. */
    const int64_t group = e.data_par * llm_context_par(&e);
    if (e.shard_group >= 1 && (e.shard_group > group || group % e.shard_group != 0)) {
        char p[JR_PATH_MAX];
        jr_path(p, sizeof p, path, "shard_group");
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p,
                                "must divide data_par × context_par (%lld) and be at most it, "
                                "got %lld",
                                (long long)group, (long long)e.shard_group);
    }
    *out = e;
    return 0;
}


void codec_llm_execution_default_nets(const json_t *v, const llm_system_t *s, llm_execution_t *e)
{
    /* context parallelism next to tensor parallelism, as Megatron orders ranks */
    static const char *const keys[4] = {"tensor_par_net", "context_par_net", "pipeline_par_net",
                                        "data_par_net"};
    int *nets[4] = {&e->tensor_par_net, &e->context_par_net, &e->pipeline_par_net,
                    &e->data_par_net};
    const int64_t par[4] = {e->tensor_par, llm_context_par(e), e->pipeline_par, e->data_par};
    int64_t used[LLM_MAX_NETWORKS];
    for (int t = 0; t < LLM_MAX_NETWORKS; t++)
        used[t] = 1;
    /* Given fields first: they occupy their tier before any default is placed beside them. */
    for (int k = 0; k < 4; k++)
        if (jr_has(v, keys[k]) && *nets[k] >= 0 && *nets[k] < s->num_networks && par[k] > 1)
            used[*nets[k]] = mul_sat(used[*nets[k]], par[k]);
    for (int k = 0; k < 4; k++) {
        if (jr_has(v, keys[k]) || s->num_networks < 1)
            continue;
        int t = 0;
        if (par[k] > 1) {
            t = s->num_networks - 1;
            for (int c = 0; c < s->num_networks; c++)
                if (used[c] <= s->networks[c].size / par[k]) {
                    t = c;
                    break;
                }
            used[t] = mul_sat(used[t], par[k]);
        }
        *nets[k] = t;
    }
    /* The expert-parallel group left out: on the first tier that connects its expert_par ×
     * expert_tensor_par processors, as the search places it. Megatron lays expert layers out
     * with their own rank order (expert-TP, then EP, then expert-DP: parallel_state.py's
     * expert RankGenerator), so an EP group is that many consecutive ranks whatever attention's
     * TP is. It was tensor parallelism's tier, and an EP group wider than the node was refused. */
    const int64_t span = mul_sat(e->expert_par, e->expert_tensor_par);
    if (!jr_has(v, "expert_par_net") && s->num_networks > 0)
        e->expert_par_net = span > 1 ? llm_first_tier_connecting(s, span) : e->tensor_par_net;
}

/* Members set through the local json_t *o, each failure or-ed into the local int failed. */
#define I(k, x) failed |= json_object_set_new(o, k, json_integer((json_int_t)(x)))
#define B(k, x) failed |= json_object_set_new(o, k, json_boolean(x))
#define S(k, x) failed |= json_object_set_new(o, k, json_string(x))

/* Calculon's own execution fields, every one always written. Nonzero when one could not be. */
static int encode_calculon_fields(json_t *o, const llm_execution_t *e)
{
    int failed = 0;
    I("num_procs", e->num_procs);
    I("tensor_par", e->tensor_par);
    I("pipeline_par", e->pipeline_par);
    I("data_par", e->data_par);
    I("tensor_par_net", e->tensor_par_net);
    I("pipeline_par_net", e->pipeline_par_net);
    I("data_par_net", e->data_par_net);
    I("batch_size", e->batch_size);
    I("microbatch_size", e->microbatch_size);
    S("datatype", llm_datatype_names[e->datatype]);
    B("fused_activation", e->fused_activation);
    S("attention_type", llm_attention_names[e->attention_type]);
    S("activation_recompute", llm_recompute_names[e->activation_recompute]);
    I("pipeline_interleaving", e->pipeline_interleaving);
    B("optimizer_sharding", e->optimizer_sharding);
    S("tensor_par_comm_type", llm_tp_comm_names[e->tensor_par_comm_type]);
    S("tensor_par_overlap", llm_tp_overlap_names[e->tensor_par_overlap]);
    B("seq_par_ag_redo", e->seq_par_ag_redo);
    B("data_par_overlap", e->data_par_overlap);
    B("weight_offload", e->weight_offload);
    B("activations_offload", e->activations_offload);
    B("optimizer_offload", e->optimizer_offload);
    B("training", e->training);
    return failed;
}

/* The modern fields: attention kernel, FP8, context parallelism and sharding always; the MoE,
 * schedule, memory and recompute fields only when they say something, so that existing
 * configurations keep their form. */
static int encode_modern_fields(json_t *o, const llm_execution_t *e)
{
    int failed = 0;
    S("attention_kernel", llm_attn_kernel_names[e->attention_kernel]);
    B("fp8", e->fp8);
    if (e->fp8_params) /* only when set, so existing configurations keep their form */
        B("fp8_params", e->fp8_params);
    if (e->low_precision_gradients) /* likewise */
        B("low_precision_gradients", e->low_precision_gradients);
    I("context_par", llm_context_par(e));
    I("context_par_net", e->context_par_net);
    I("zero_stage", llm_zero_stage(e));
    I("shard_group", llm_shard_group(e));
    /* MoE fields only when they say something, so existing configurations keep their form. */
    if (e->expert_par > 1 || e->expert_tensor_par > 1 || e->moe_load_imbalance > 1 ||
        e->moe_capacity_factor > 0 || e->moe_a2a_overlap || e->expert_par_net != e->tensor_par_net) {
        I("expert_par", e->expert_par);
        I("expert_tensor_par", e->expert_tensor_par);
        I("expert_par_net", e->expert_par_net);
        json_object_set_new(o, "moe_load_imbalance", json_real(e->moe_load_imbalance));
        json_object_set_new(o, "moe_capacity_factor", json_real(e->moe_capacity_factor));
        B("moe_a2a_overlap", e->moe_a2a_overlap);
    }
    if (e->moe_fp8_dispatch) /* only when set: a datatype dispatch keeps the form */
        B("moe_fp8_dispatch", e->moe_fp8_dispatch);
    if (e->moe_dispatcher == LLM_MOE_DISPATCH_FLEX) /* only when set: alltoall keeps the form */
        S("moe_dispatcher", llm_moe_dispatcher_names[e->moe_dispatcher]);
    if (e->cuda_graphs != LLM_GRAPHS_NONE) /* only when set: eager launches keep the form */
        S("cuda_graphs", llm_cuda_graphs_names[e->cuda_graphs]);
    if (e->recompute_blocks > 0) /* only when set: recomputing every block keeps the form */
        I("recompute_blocks", e->recompute_blocks);
    /* the memory fields only when they say something, so existing configurations keep their
     * form: the schedule beyond 1F1B and interleaving, the FP8 cache, 16-bit moments */
    if (e->pipeline_schedule == LLM_PP_ZERO_BUBBLE || e->pipeline_schedule == LLM_PP_DUALPIPE)
        S("pipeline_schedule", llm_pp_schedule_names[e->pipeline_schedule]);
    if (e->fp8_activation_cache)
        B("fp8_activation_cache", true);
    if (e->optimizer_state_datatype != LLM_STATE_FLOAT32)
        S("optimizer_state_datatype", llm_state_dtype_names[e->optimizer_state_datatype]);
    if (e->first_stage_blocks > 0)
        I("first_stage_blocks", e->first_stage_blocks);
    if (e->last_stage_blocks > 0)
        I("last_stage_blocks", e->last_stage_blocks);
    if (e->fixed_segments)
        B("expandable_segments", false);
    if (e->recompute_modules) { /* likewise: no selective recompute keeps the form */
        json_t *mods = json_array();
        for (int i = 0; llm_recompute_module_names[i]; i++)
            if (e->recompute_modules & (1u << i))
                failed |= json_array_append_new(mods, json_string(llm_recompute_module_names[i]));
        failed |= json_object_set_new(o, "recompute_modules", mods);
    }
    return failed;
}

/* The stack's fields and a fine-tuning method, only when they differ from pre-training on
 * Megatron. */
static int encode_stack_fields(json_t *o, const llm_execution_t *e)
{
    int failed = 0;
    /* the stack's fields only when they differ from Megatron's, so existing configurations
     * keep their form; the recipe when FP8 runs one other than the stack's default */
    if (e->stack != LLM_STACK_MEGATRON)
        S("stack", llm_stack_names[e->stack]);
    if (e->compile)
        B("compile", e->compile);
    if (e->async_tp)
        B("async_tp", e->async_tp);
    if (e->selective_ac != LLM_SAC_NONE)
        S("selective_ac", llm_selective_ac_names[e->selective_ac]);
    if (e->loss_kernel != LLM_LOSS_TORCH)
        S("loss_kernel", llm_loss_kernel_names[e->loss_kernel]);
    if (e->fp8 && e->fp8_recipe != llm_default_fp8_recipe(e->stack))
        S("fp8_recipe", llm_fp8_recipe_names[e->fp8_recipe]);
    if (e->finetune.method != LLM_FINETUNE_NONE) /* only when set: pre-training keeps the form */
        failed |= json_object_set_new(o, "finetune", codec_llm_finetune_encode(&e->finetune));
    return failed;
}
#undef I
#undef B
#undef S

json_t *codec_llm_execution_encode(const llm_execution_t *e)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    /* one after the other: the members keep the order a reader finds them in */
    int failed = encode_calculon_fields(o, e);
    failed |= encode_modern_fields(o, e);
    failed |= encode_stack_fields(o, e);
    return jw_finish(o, !failed);
}

/* llm_codec.c — the encoders of an estimate's result: its statistics, the summary (step, MFU,
 * memory per stage, FLOPs) and the memory violations (llm_codec.h). The system and execution
 * objects are llm_system_codec.c's and llm_execution_codec.c's. */
#include "llm_codec.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "json_read.h"
#include "json_write.h"
#include "model_codec.h"
#include "transformer.h"

#define num(x) jw_num(x)

/* Statistics are doubles; an integral one is written as an integer like Calculon's. */
json_t *codec_llm_stats_encode(const llm_stats_t *s)
{
    json_t *o = json_object();
    bool ok = o != NULL;
    for (int i = 0; ok && i < LLM_STAT__COUNT; i++)
        ok = json_object_set_new(o, llm_stat_name((llm_stat_t)i),
                                 num(llm_stat_value(s, (llm_stat_t)i))) == 0;
    return jw_finish(o, ok);
}

json_t *codec_llm_violations_encode(const llm_result_t *r)
{
    json_t *a = json_array();
    bool ok = a != NULL;
    const double need[2] = {r->mem_tier1_bytes, r->mem_tier2_bytes};
    const double cap[2] = {r->mem_tier1_capacity_bytes, r->mem_tier2_capacity_bytes};
    const bool fits[2] = {r->fits_tier1, r->fits_tier2};
    for (int t = 0; ok && t < 2; t++) {
        if (fits[t])
            continue;
        char msg[256], ratio[48] = "";
        if (cap[t] > 0) /* no ratio to an empty tier (it would read "infx") */
            snprintf(ratio, sizeof ratio, " (%.2fx)", need[t] / cap[t]);
        snprintf(msg, sizeof msg,
                 "memory tier %d (%s) needs %.3f GiB per processor but has %.3f GiB%s", t + 1,
                 t == 0 ? "device memory" : "offload memory", need[t] / 1073741824.0,
                 cap[t] / 1073741824.0, ratio);
        ok = json_array_append_new(a, json_pack("{s:i,s:o,s:o,s:s}", "tier", t + 1,
                                                "needed_bytes", num(need[t]), "capacity_bytes",
                                                num(cap[t]), "message", msg)) == 0;
    }
    return jw_finish(a, ok);
}

static json_t *encode_stage(const char *name, const llm_stage_memory_t *m)
{
    /* expert: the routed experts' weights, gradients and optimizer; non_expert: the rest */
    json_t *o = json_pack("{s:s,s:I,s:o,s:o,s:o,s:o,s:o,s:o,s:{s:o,s:o,s:o},s:{s:o,s:o,s:o}}",
                          "stage", name, "blocks", (json_int_t)m->blocks, "weights",
                          num(m->weights), "gradients", num(m->gradients), "optimizer",
                          num(m->optimizer), "activations", num(m->activations), "buffers",
                          num(m->buffers), "total", num(m->total), "expert", "weights",
                          num(m->expert_weights), "gradients", num(m->expert_gradients),
                          "optimizer", num(m->expert_optimizer), "non_expert", "weights",
                          num(m->weights - m->expert_weights), "gradients",
                          num(m->gradients - m->expert_gradients), "optimizer",
                          num(m->optimizer - m->expert_optimizer));
    /* the modern block's terms (llm_memory.c): the rank, what its schedule keeps in flight, the
     * gathered ZeRO-3 blocks, the dispatcher's buffers and the fixed reserve */
    json_t *more = json_pack("{s:I,s:o,s:o,s:o,s:o,s:{s:o,s:o,s:o,s:o}}", "rank",
                             (json_int_t)m->index, "microbatches_in_flight",
                             num(m->microbatches), "stored_activations",
                             num(m->stored_activations), "gathered_weights",
                             num(m->gathered_weights), "moe_buffers", num(m->moe_buffers),
                             "reserve", "cuda_context", num(m->cuda_context), "nccl",
                             num(m->nccl), "workspaces", num(m->workspaces), "fragmentation",
                             num(m->fragmentation));
    if (!o || !more || json_object_update(o, more)) {
        json_decref(o);
        o = NULL;
    }
    json_decref(more);
    return o;
}

/* Ranks listed one by one in per_stage up to this pipeline depth (beyond it, the first, last
 * and heaviest stand for all). */
#define PER_STAGE_MAX 1024

/* Per-stage memory of the first and last pipeline stage (and of the heaviest when it is
 * neither), the heaviest named, every rank's total (modern block), and the bytes per
 * parameter of each kind of state. */
static json_t *encode_memory_breakdown(const fathom_model_t *m, const llm_execution_t *e,
                                       const llm_result_t *r)
{
    const llm_step_extra_t *x = &r->extra;
    static const char *const names[3] = {"first", "last", "middle"};
    json_t *stages = json_array();
    if (stages) {
        json_array_append_new(stages, encode_stage("first", &x->stages[0]));
        if (x->heaviest_stage == 2)
            json_array_append_new(stages, encode_stage("middle", &x->heaviest));
        json_array_append_new(stages, encode_stage("last", &x->stages[1]));
    }
    json_t *per = json_array();
    const int64_t pp = e->pipeline_par;
    for (int64_t i = 0; per && !m->calculon_block && pp <= PER_STAGE_MAX && i < pp; i++) {
        llm_stage_memory_t st;
        llm_stage_memory(m, e, r, i, &st);
        if (json_array_append_new(per, json_pack("{s:I,s:I,s:o}", "rank", (json_int_t)i, "blocks",
                                                 (json_int_t)st.blocks, "total",
                                                 num(st.total)))) {
            json_decref(per);
            per = NULL;
        }
    }
    return json_pack("{s:s,s:I,s:o,s:o,s:{s:o,s:o,s:o}}", "heaviest_stage",
                     names[x->heaviest_stage], "heaviest_rank", (json_int_t)x->heaviest.index,
                     "stages", stages, "per_stage", per, "bytes_per_parameter", "weights",
                     num(x->weight_bytes_per_param), "gradients", num(x->grad_bytes_per_param),
                     "optimizer", num(x->optimizer_bytes_per_param));
}

/* Parameters, FLOP counts, MFU and throughput per processor. */
static json_t *encode_flops(const fathom_model_t *m, const llm_execution_t *e,
                            const llm_result_t *r)
{
    llm_params_t params;
    llm_parameters(m, &params);
    const llm_stats_t *s = &r->stats;
    const double model = llm_step_model_flops(m, e); /* LoRA: the frozen model's share */
    const double tokens = (double)e->batch_size * (double)m->seq_size;
    const double per_proc_s = s->total_time * (double)e->num_procs;
    return json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}",
                     "parameters_total",
                     num(params.total), "parameters_active", num(params.active),
                     "parameters_mtp", num(params.mtp), "parameters_mtp_active",
                     num(params.mtp_active), "parameters_trainable",
                     num(llm_finetune_trainable_params(m, e)),
                     "routed_expert_compute_s", num(r->extra.routed_expert_compute),
                     "expert_parallel_tier",
                     r->extra.expert_parallel_tier >= 0
                         ? json_integer(r->extra.expert_parallel_tier)
                         : json_null(),
                     "model_flops_per_step", num(model), "hardware_flops_per_step",
                     num(r->extra.hardware_flops), "model_flops_per_token", num(model / tokens),
                     "mfu", num(per_proc_s > 0 ? model / (per_proc_s * r->extra.peak_flops) : 0),
                     "tflops_per_proc", num(per_proc_s > 0 ? model / per_proc_s / 1e12 : 0),
                     "outer_layers_time_s", num(r->extra.outer_layers_time),
                     "host_block_s", json_pack("{s:o,s:o}", "forward",
                                               num(r->extra.host_block_fw), "backward",
                                               num(r->extra.host_block_bw)));
}

json_t *codec_llm_summary_encode(const fathom_model_t *m, const llm_execution_t *e,
                                 const llm_result_t *r)
{
    const llm_stats_t *s = &r->stats;
    double tokens_per_s = s->sample_rate * (double)m->seq_size;
    double flops_per_s = s->total_time > 0 ? s->useful_flops * (double)r->blocks_per_proc *
                                                 (double)r->num_microbatches / s->total_time
                                           : 0;
    const llm_step_extra_t *x = &r->extra;
    json_t *breakdown = json_pack(
        "{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "forward", num(s->fw_time),
        "backward", num(s->bw_time), "optimizer", num(s->optim_step_time), "recompute",
        num(s->recompute_time), "recommunication", num(s->recomm_exposed_time), "bubble",
        num(s->bubble_time), "tensor_parallel_comm", num(s->tp_comm_exposed_time),
        "pipeline_parallel_comm", num(s->pp_comm_exposed_time), "data_parallel_comm",
        num(s->dp_comm_exposed_time), "forward_offload", num(s->fw_offload_exposed_time),
        "backward_offload", num(s->bw_offload_exposed_time), "context_parallel_comm",
        num(x->cp_comm_exposed));
    if (breakdown && (json_object_set_new(breakdown, "expert_parallel_comm",
                                          num(r->extra.expert_parallel_comm)) ||
                      json_object_set_new(breakdown, "host_launch", num(x->host_exposed)))) {
        json_decref(breakdown);
        breakdown = NULL;
    }
    /* what the data-parallel line is made of (modern block; zeros for Calculon's) */
    json_t *dp = json_pack("{s:o,s:o,s:o,s:o,s:o}", "grad_reduce_s", num(x->dp_grad_reduce),
                           "param_gather_s", num(x->dp_param_gather), "exposed_s",
                           num(s->dp_comm_exposed_time), "last_bucket_s",
                           num(x->dp_exposed_last_bucket), "first_gather_s",
                           num(x->dp_exposed_first_gather));
    json_t *o = json_pack(
        "{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:I,s:I,s:I,s:o,s:o,s:o}", "step_time_s",
        num(s->total_time), "sample_rate", num(s->sample_rate), "tokens_per_s", num(tokens_per_s),
        "total_efficiency", num(s->total_efficiency), "compute_efficiency",
        num(s->compute_efficiency), "system_efficiency", num(s->system_efficiency),
        "useful_flops_per_s_per_proc", num(flops_per_s), "mem_tier1_bytes",
        num(r->mem_tier1_bytes), "mem_tier1_capacity_bytes", num(r->mem_tier1_capacity_bytes),
        "mem_tier2_bytes", num(r->mem_tier2_bytes), "mem_tier2_capacity_bytes",
        num(r->mem_tier2_capacity_bytes), "blocks_per_proc", (json_int_t)r->blocks_per_proc,
        "num_microbatches", (json_int_t)r->num_microbatches, "num_procs",
        (json_int_t)e->num_procs, "time_breakdown_s", breakdown, "memory",
        encode_memory_breakdown(m, e, r), "tokens_per_s_per_proc",
        num(tokens_per_s / (double)e->num_procs));
    if (!o) {
        json_decref(dp);
    } else if (json_object_set_new(o, "data_parallel", dp)) { /* steals dp even on failure */
        json_decref(o);
        o = NULL;
    }
    json_t *flops = encode_flops(m, e, r);
    if (!o || !flops || json_object_update(o, flops)) {
        json_decref(o);
        o = NULL;
    }
    json_decref(flops);
    return o;
}

json_t *codec_llm_result_encode(const fathom_model_t *m, const llm_execution_t *e,
                                const llm_result_t *r)
{
    return json_pack("{s:b,s:b,s:o,s:o,s:o}", "feasible", 1, "fits_memory", r->fits_memory,
                     "violations", codec_llm_violations_encode(r), "stats",
                     codec_llm_stats_encode(&r->stats), "summary",
                     codec_llm_summary_encode(m, e, r));
}

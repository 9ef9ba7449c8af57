/* llm_system.c — the hardware side of the LLM model: efficiency curves of the processing
 * engines and memories, collective costs on a network tier, the processing-mode rule, and the
 * consistency check of a system description. Formulas follow Calculon's processor.py,
 * memory.py, network.py and system.py; unit conversions are done in the same order so the
 * results agree to the last bits. */
#include <math.h>
#include <stdio.h>

#include "llm_internal.h"

const char *const llm_datatype_names[] = {"float8", "float16", "bfloat16", "float32", NULL};
const char *const llm_attention_names[] = {"multihead", "multiquery", NULL};
const char *const llm_recompute_names[] = {"full", "attn_only", "none", NULL};
const char *const llm_tp_comm_names[] = {"ar", "p2p_rs_ag", "rs_ag", NULL};
const char *const llm_tp_overlap_names[] = {"none", "ring", "pipe", NULL};
const char *const llm_processing_mode_names[] = {"roofline", "no_overlap", NULL};
const char *const llm_net_op_names[] = {"p2p", "reduce_scatter", "all_gather", "all_reduce",
                                        NULL};
const char *const llm_link_names[] = {"nvlink", "pcie", "network", NULL};
const char *const llm_attn_kernel_names[] = {"unfused", "fused", "flash2", "flash3",
                                             "cudnn",   "sdpa",  "triton", NULL};
const char *const llm_moe_dispatcher_names[] = {"alltoall", "flex", NULL};
const char *const llm_collectives_names[] = {"calculon", "nccl", NULL};
const char *const llm_cuda_graphs_names[] = {"none", "attention", "partial", "full", "router",
                                             NULL};
const char *const llm_recompute_module_names[] = {
    "moe_act", "mla_up_proj", "moe", "layernorm", "mlp", "core_attn", "shared_experts", NULL};
const char *const llm_pp_schedule_names[] = {"1f1b", "interleaved", "zero_bubble", "dualpipe",
                                             NULL};
const char *const llm_state_dtype_names[] = {"float32", "bfloat16", "float16", NULL};

static const int datatype_bytes[LLM_DT__COUNT] = {1, 2, 2, 4};

int llm_datatype_bytes(llm_datatype_t dt)
{
    return (unsigned)dt < LLM_DT__COUNT ? datatype_bytes[dt] : 0;
}


double llm_gradient_bytes_per_param(const llm_execution_t *e)
{
    return e->low_precision_gradients ? llm_datatype_bytes(e->datatype) : 4;
}

const char *llm_datatype_name(llm_datatype_t dt)
{
    return (unsigned)dt < LLM_DT__COUNT ? llm_datatype_names[dt] : "?";
}

double llm__net_time(const llm_network_t *n, llm_net_op_t op, double bytes, double peers)
{
    double size = bytes * n->ops[op].scalar;
    double chunk = 1.0 / peers * size;
    size += chunk * n->ops[op].offset;
    return n->latency_s + size / (n->bandwidth_gbps * 1e9 * n->efficiency);
}

double llm_net_op_time(const llm_system_t *s, int net, llm_net_op_t op, double bytes, double peers)
{
    return llm__net_time(&s->networks[net], op, bytes, peers);
}

int llm_first_tier_connecting(const llm_system_t *s, int64_t span)
{
    for (int i = 0; i < s->num_networks; i++)
        if (s->networks[i].size >= span)
            return i;
    return s->num_networks - 1;
}

double llm_curve_efficiency(const llm_curve_t *c, double size)
{
    for (int i = 0; i < c->num_points; i++)
        if (size >= c->points[i].threshold)
            return c->points[i].efficiency;
    return 0;
}

/* ---- system check ---- */

static int check_curve(const llm_curve_t *curve, bool decreasing, const char *path,
                       fathom_error_t *err)
{
    if (curve->num_points < 1 || curve->num_points > LLM_MAX_CURVE_POINTS)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, path,
                                "must have 1 to %d points", LLM_MAX_CURVE_POINTS);
    for (int i = 0; i < curve->num_points; i++) {
        const llm_curve_point_t *p = &curve->points[i];
        char f[FATHOM_ERROR_FIELD_MAX];
        snprintf(f, sizeof f, "%s[%d]", path, i);
        if (!(p->efficiency > 0.0 && p->efficiency <= 1.0))
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, f,
                                    "efficiency must be in (0, 1], got %g", p->efficiency);
        if (!(p->threshold >= 0.0) || !isfinite(p->threshold))
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, f,
                                    "threshold must be a finite number >= 0");
        if (decreasing && i > 0 && !(p->threshold < curve->points[i - 1].threshold))
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, f,
                                    "thresholds must be strictly decreasing");
    }
    return 0;
}

static int check_processor(const llm_processor_t *p, const char *name, fathom_error_t *err)
{
    int present = 0;
    for (int dt = 0; dt < LLM_DT__COUNT; dt++) {
        const llm_rate_t *r = &p->rate[dt];
        if (!r->present)
            continue;
        present++;
        char f[FATHOM_ERROR_FIELD_MAX];
        snprintf(f, sizeof f, "system.%s.%s.tflops", name, llm_datatype_names[dt]);
        if (!(r->tflops > 0.0) || !isfinite(r->tflops))
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, f, "must be > 0");
        snprintf(f, sizeof f, "system.%s.%s.gflops_efficiency", name, llm_datatype_names[dt]);
        if (check_curve(&r->gflops_efficiency, true, f, err))
            return -1;
    }
    if (!present) {
        char f[FATHOM_ERROR_FIELD_MAX];
        snprintf(f, sizeof f, "system.%s", name);
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, f, "must give at least one datatype");
    }
    return 0;
}

static int check_memory(const llm_memory_t *m, const char *name, fathom_error_t *err)
{
    char f[FATHOM_ERROR_FIELD_MAX];
    snprintf(f, sizeof f, "system.%s.GiB", name);
    if (!(m->gib >= 0.0) || !isfinite(m->gib))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, f, "must be >= 0");
    snprintf(f, sizeof f, "system.%s.GBps", name);
    if (!(m->gbps > 0.0) || !isfinite(m->gbps))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, f, "must be > 0");
    snprintf(f, sizeof f, "system.%s.MB_efficiency", name);
    return check_curve(&m->mb_efficiency, false, f, err);
}

int llm_system_check(const llm_system_t *s, fathom_error_t *err)
{
    if (check_processor(&s->matrix, "matrix", err) || check_processor(&s->vector, "vector", err) ||
        check_memory(&s->mem1, "mem1", err) || check_memory(&s->mem2, "mem2", err))
        return -1;
    if (s->processing_mode != LLM_PROC_ROOFLINE && s->processing_mode != LLM_PROC_NO_OVERLAP)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "system.processing_mode",
                                "must be \"roofline\" or \"no_overlap\"");
    if (!(s->attention_efficiency > 0.0 && s->attention_efficiency <= 1.0))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "system.attention_efficiency",
                                "must be in (0, 1], got %g", s->attention_efficiency);
    const double host[2] = {s->host_launch_s, s->graph_launch_s};
    static const char *const host_fields[2] = {"system.host_launch_s", "system.graph_launch_s"};
    for (int i = 0; i < 2; i++)
        if (!(host[i] >= 0.0 && host[i] < 1.0))
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, host_fields[i],
                                    "must be in [0, 1) seconds, got %g", host[i]);
    if (s->num_networks < 1 || s->num_networks > LLM_MAX_NETWORKS)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "system.networks",
                                "must have 1 to %d network tiers", LLM_MAX_NETWORKS);
    for (int i = 0; i < s->num_networks; i++) {
        const llm_network_t *n = &s->networks[i];
        char f[FATHOM_ERROR_FIELD_MAX];
#define NET_FIELD(name) snprintf(f, sizeof f, "system.networks[%d]." name, i)
        NET_FIELD("bandwidth");
        if (!(n->bandwidth_gbps > 0.0) || !isfinite(n->bandwidth_gbps))
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, f, "must be > 0");
        NET_FIELD("efficiency");
        if (!(n->efficiency > 0.0 && n->efficiency <= 1.0))
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, f, "must be in (0, 1]");
        NET_FIELD("size");
        if (n->size < 0)
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, f, "must be >= 0");
        NET_FIELD("latency");
        if (!(n->latency_s >= 0.0) || !isfinite(n->latency_s))
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, f, "must be >= 0");
        NET_FIELD("processor_usage");
        if (!(n->processor_usage >= 0.0 && n->processor_usage < 1.0))
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, f, "must be in [0, 1)");
        NET_FIELD("link");
        if (!(n->link >= LLM_LINK_AUTO && n->link <= LLM_LINK_NETWORK))
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, f,
                                    "must be \"nvlink\", \"pcie\" or \"network\"");
#undef NET_FIELD
        for (int op = 0; op < LLM_OP__COUNT; op++) {
            snprintf(f, sizeof f, "system.networks[%d].ops.%s", i, llm_net_op_names[op]);
            if (!(n->ops[op].scalar > 0.0) || !isfinite(n->ops[op].scalar))
                return fathom_error_set(err, FATHOM_E_INVALID_FIELD, f, "scalar must be > 0");
            if (!isfinite(n->ops[op].offset) || (op == LLM_OP_P2P && n->ops[op].offset != 0.0))
                return fathom_error_set(err, FATHOM_E_INVALID_FIELD, f,
                                        "offset must be finite (and null for p2p)");
        }
    }
    return 0;
}

llm_link_t llm_network_link(const llm_system_t *s, int tier)
{
    const llm_link_t l = s->networks[tier].link;
    if (l != LLM_LINK_AUTO)
        return l;
    return tier == 0 ? LLM_LINK_NVLINK
                     : tier == s->num_networks - 1 ? LLM_LINK_NETWORK : LLM_LINK_PCIE;
}

double llm_power_capped_clock(double board_w, double limit_w)
{
    const double idle = LLM_IDLE_POWER_SHARE * board_w;
    if (!(limit_w < board_w))
        return 1.0;
    if (!(limit_w > idle))
        return 0.0;
    return (limit_w - idle) / (board_w - idle);
}

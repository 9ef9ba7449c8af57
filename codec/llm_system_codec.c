/* llm_system_codec.c — Calculon's system object, strictly decoded (a preset name, a variant of
 * one or an object, every member's bad value a field error) and fully encoded, with the members
 * Fathom adds: attention kernels, price and power, serving's rates (llm_codec.h). */
#include "llm_codec.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "json_read.h"
#include "json_write.h"
#include "model_codec.h"
#include "transformer.h"

#define num(x) jw_num(x)

/* Point i of a curve, [x, efficiency]: x in [xmin, xmax], the efficiency in (0, 1]. */
static int decode_point(const json_t *v, const char *path, size_t i, double xmin, double xmax,
                        double *x, double *eff, fathom_error_t *err)
{
    char p[JR_PATH_MAX], q[JR_PATH_MAX];
    const json_t *pt = json_array_get(v, i);
    jr_path_index(p, sizeof p, path, i);
    if (jr_expect_array(pt, p, 2, 2, err))
        return -1;
    jr_path_index(q, sizeof q, p, 0);
    if (jr_value_real(json_array_get(pt, 0), q, xmin, xmax, x, err))
        return -1;
    jr_path_index(q, sizeof q, p, 1);
    if (jr_value_real(json_array_get(pt, 1), q, 0, 1, eff, err))
        return -1;
    if (!(*eff > 0))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, q, "must be in (0, 1]");
    return 0;
}

static int decode_curve(const json_t *v, const char *path, llm_curve_t *out, fathom_error_t *err)
{
    if (jr_expect_array(v, path, 1, LLM_MAX_CURVE_POINTS, err))
        return -1;
    out->num_points = (int)json_array_size(v);
    for (size_t i = 0; i < json_array_size(v); i++)
        if (decode_point(v, path, i, 0, 1e18, &out->points[i].threshold,
                         &out->points[i].efficiency, err))
            return -1;
    return 0;
}

static int decode_processor(const json_t *v, const char *path, llm_processor_t *out,
                            fathom_error_t *err)
{
    static const char *const rate_keys[] = {"tflops", "gflops_efficiency", NULL};
    if (jr_expect_object(v, path, err) || jr_check_keys(v, path, llm_datatype_names, err))
        return -1;
    memset(out, 0, sizeof *out);
    if (json_object_size(v) == 0)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, path,
                                "must give at least one datatype");
    for (int dt = 0; dt < LLM_DT__COUNT; dt++) {
        const json_t *r = json_object_get(v, llm_datatype_names[dt]);
        if (!r)
            continue;
        char p[JR_PATH_MAX], q[JR_PATH_MAX];
        jr_path(p, sizeof p, path, llm_datatype_names[dt]);
        if (jr_expect_object(r, p, err) || jr_check_keys(r, p, rate_keys, err) ||
            jr_positive(r, p, "tflops", JR_REQUIRED, 0, 1e9, &out->rate[dt].tflops, err))
            return -1;
        jr_path(q, sizeof q, p, "gflops_efficiency");
        if (decode_curve(json_object_get(r, "gflops_efficiency"), q,
                         &out->rate[dt].gflops_efficiency, err))
            return -1;
        out->rate[dt].present = true;
    }
    return 0;
}

static int decode_memory(const json_t *v, const char *path, llm_memory_t *out,
                         fathom_error_t *err)
{
    static const char *const keys[] = {"GiB", "GBps", "MB_efficiency", NULL};
    char p[JR_PATH_MAX];
    if (jr_expect_object(v, path, err) || jr_check_keys(v, path, keys, err) ||
        jr_real(v, path, "GiB", JR_REQUIRED, 0, 0, 1e12, &out->gib, err) ||
        jr_positive(v, path, "GBps", JR_REQUIRED, 0, 1e12, &out->gbps, err))
        return -1;
    /* Tier 2 may be absent (0 GiB: no offload memory); a GPU without device memory is a typo. */
    size_t plen = strlen(path);
    if (out->gib <= 0 && plen >= 4 && strcmp(path + plen - 4, "mem1") == 0) {
        jr_path(p, sizeof p, path, "GiB");
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p,
                                "must be greater than 0: tier 1 is the GPU's own memory");
    }
    jr_path(p, sizeof p, path, "MB_efficiency");
    return decode_curve(json_object_get(v, "MB_efficiency"), p, &out->mb_efficiency, err);
}

static int decode_network(const json_t *v, const char *path, llm_network_t *out,
                          fathom_error_t *err)
{
    static const char *const keys[] = {"bandwidth", "efficiency", "size", "latency", "ops",
                                       "must_be_filled", "processor_usage", "nvls_efficiency",
                                       "sharp", "scale_falloff", "link", NULL};
    int link;
    if (jr_expect_object(v, path, err) || jr_check_keys(v, path, keys, err) ||
        jr_positive(v, path, "bandwidth", JR_REQUIRED, 0, 1e12, &out->bandwidth_gbps, err) ||
        jr_positive(v, path, "efficiency", JR_REQUIRED, 0, 1, &out->efficiency, err) ||
        jr_int(v, path, "size", JR_REQUIRED, 0, 0, JR_MAX_EXACT_INT, &out->size, err) ||
        jr_real(v, path, "latency", JR_REQUIRED, 0, 0, 1e6, &out->latency_s, err) ||
        jr_bool(v, path, "must_be_filled", JR_REQUIRED, false, &out->must_be_filled, err) ||
        jr_real(v, path, "processor_usage", JR_REQUIRED, 0, 0, 1, &out->processor_usage, err) ||
        jr_real(v, path, "nvls_efficiency", JR_OPTIONAL, 0, 0, 2, &out->nvls_efficiency, err) ||
        jr_bool(v, path, "sharp", JR_OPTIONAL, false, &out->sharp, err) ||
        jr_real(v, path, "scale_falloff", JR_OPTIONAL, 0, 0, 1, &out->scale_falloff, err) ||
        jr_enum(v, path, "link", JR_OPTIONAL, -1, llm_link_names, &link, err))
        return -1;
    out->link = (llm_link_t)(link + 1); /* absent: AUTO, the position rule */
    if (!(out->processor_usage < 1)) {
        char p[JR_PATH_MAX];
        jr_path(p, sizeof p, path, "processor_usage");
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p, "must be below 1");
    }
    char opath[JR_PATH_MAX];
    jr_path(opath, sizeof opath, path, "ops");
    const json_t *ops = json_object_get(v, "ops");
    if (jr_expect_object(ops, opath, err) || jr_check_keys(ops, opath, llm_net_op_names, err))
        return -1;
    for (int op = 0; op < LLM_OP__COUNT; op++) {
        char p[JR_PATH_MAX], q[JR_PATH_MAX];
        const json_t *o = json_object_get(ops, llm_net_op_names[op]);
        jr_path(p, sizeof p, opath, llm_net_op_names[op]);
        if (jr_expect_array(o, p, 2, 2, err))
            return -1;
        jr_path_index(q, sizeof q, p, 0);
        if (jr_value_real(json_array_get(o, 0), q, 0, 1e6, &out->ops[op].scalar, err))
            return -1;
        if (!(out->ops[op].scalar > 0))
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, q, "scalar must be > 0");
        jr_path_index(q, sizeof q, p, 1);
        const json_t *off = json_array_get(o, 1);
        if (op == LLM_OP_P2P) {
            if (!json_is_null(off))
                return fathom_error_set(err, FATHOM_E_INVALID_FIELD, q,
                                        "must be null (p2p has no offset)");
            out->ops[op].offset = 0;
        } else if (jr_value_real(off, q, -1e6, 1e6, &out->ops[op].offset, err)) {
            return -1;
        }
    }
    return 0;
}

static int decode_system_object(const json_t *v, const char *path,
                                const codec_presets_t *presets, llm_system_t *out,
                                fathom_error_t *err);

/* One curve of an attention kernel: [[seq, efficiency], ...], seq strictly increasing and
 * positive, efficiency in (0, 1]. */
static int decode_attn_curve(const json_t *v, const char *path, llm_attn_curve_t *out,
                             fathom_error_t *err)
{
    if (jr_expect_array(v, path, 1, LLM_MAX_ATTN_POINTS, err))
        return -1;
    out->n = (int)json_array_size(v);
    for (size_t i = 0; i < json_array_size(v); i++) {
        if (decode_point(v, path, i, 1, 1e9, &out->seq[i], &out->eff[i], err))
            return -1;
        if (i > 0 && !(out->seq[i] > out->seq[i - 1])) {
            char p[JR_PATH_MAX], q[JR_PATH_MAX];
            jr_path_index(p, sizeof p, path, i);
            jr_path_index(q, sizeof q, p, 0);
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, q,
                                    "sequence lengths must increase");
        }
    }
    return 0;
}

/* system.attention_kernels: {"flash2": {"fwd", "bwd", "fwd_causal", "bwd_causal",
 * "head_dim_64"}, ...} for the named kernels (doc/stacks.md). */
static int decode_attn_kernels(const json_t *v, const char *path, llm_system_t *out,
                               fathom_error_t *err)
{
    static const char *const named[] = {"flash2", "flash3", "cudnn", "sdpa", "triton", NULL};
    static const char *const keys[] = {"fwd", "bwd", "fwd_causal", "bwd_causal", "head_dim_64",
                                       NULL};
    if (!v)
        return 0;
    if (jr_expect_object(v, path, err) || jr_check_keys(v, path, named, err))
        return -1;
    for (int k = LLM_ATTN_KERNEL_FLASH2; k < LLM_ATTN_KERNEL__COUNT; k++) {
        const json_t *t = json_object_get(v, llm_attn_kernel_names[k]);
        if (!t)
            continue;
        char p[JR_PATH_MAX], q[JR_PATH_MAX];
        jr_path(p, sizeof p, path, llm_attn_kernel_names[k]);
        llm_attn_kernel_table_t *o = &out->attention_kernels[k];
        llm_attn_curve_t *curves[4] = {&o->fwd, &o->bwd, &o->fwd_causal, &o->bwd_causal};
        if (jr_expect_object(t, p, err) || jr_check_keys(t, p, keys, err) ||
            jr_real(t, p, "head_dim_64", JR_OPTIONAL, 1, 0, 2, &o->head_dim_64, err))
            return -1;
        for (int c = 0; c < 4; c++) {
            jr_path(q, sizeof q, p, keys[c]);
            const json_t *cv = json_object_get(t, keys[c]);
            if (!cv)
                return fathom_error_set(err, FATHOM_E_INVALID_FIELD, q, "is required");
            if (decode_attn_curve(cv, q, curves[c], err))
                return -1;
        }
        o->present = true;
    }
    return 0;
}

static json_t *encode_attn_curve(const llm_attn_curve_t *c);

int codec_llm_system_decode(const json_t *v, const char *path, const codec_presets_t *presets,
                            llm_system_t *out, fathom_error_t *err)
{
    const json_t *sys;
    json_t *owned;
    if (codec_llm_system_resolve(v, path, presets, &sys, &owned, err))
        return -1;
    const int rc = decode_system_object(sys, path, presets, out, err);
    json_decref(owned);
    return rc;
}

static int decode_system_object(const json_t *v, const char *path,
                                const codec_presets_t *presets, llm_system_t *out,
                                fathom_error_t *err)
{
    static const char *const keys[] = {"matrix",   "vector",  "mem1",
                                       "mem2",     "processing_mode",  "networks",
                                       "attention_efficiency", "host_launch_s",
                                       "graph_launch_s", "collectives", "attention_kernels",
                                       "price_per_gpu_hour", "power_per_gpu_kw",
                                       /* serving's (codec/serving_codec.c): the FP4 rate and
                                        * its GEMMs' efficiency, decode attention's share of
                                        * memory bandwidth */
                                       "float4_tflops", "float4_efficiency",
                                       "decode_attention_efficiency", NULL};
    if (jr_expect_object(v, path, err) || jr_check_keys(v, path, keys, err))
        return -1;
    memset(out, 0, sizeof *out);
    char p[JR_PATH_MAX];
    int mode = 0;
    jr_path(p, sizeof p, path, "matrix");
    if (decode_processor(json_object_get(v, "matrix"), p, &out->matrix, err))
        return -1;
    jr_path(p, sizeof p, path, "vector");
    if (decode_processor(json_object_get(v, "vector"), p, &out->vector, err))
        return -1;
    jr_path(p, sizeof p, path, "mem1");
    if (decode_memory(json_object_get(v, "mem1"), p, &out->mem1, err))
        return -1;
    jr_path(p, sizeof p, path, "mem2");
    if (decode_memory(json_object_get(v, "mem2"), p, &out->mem2, err))
        return -1;
    int collectives = 0;
    jr_path(p, sizeof p, path, "attention_kernels");
    if (jr_enum(v, path, "collectives", JR_OPTIONAL, LLM_COLLECTIVES_BY_STACK,
                llm_collectives_names, &collectives, err) ||
        decode_attn_kernels(json_object_get(v, "attention_kernels"), p, out, err))
        return -1;
    out->collectives = (llm_collectives_t)collectives;
    if (jr_enum(v, path, "processing_mode", JR_REQUIRED, 0, llm_processing_mode_names, &mode, err) ||
        jr_positive(v, path, "attention_efficiency", JR_OPTIONAL, LLM_DEFAULT_ATTENTION_EFFICIENCY,
                    1, &out->attention_efficiency, err) ||
        jr_real(v, path, "host_launch_s", JR_OPTIONAL, 0, 0, 1, &out->host_launch_s, err) ||
        jr_real(v, path, "graph_launch_s", JR_OPTIONAL, 0, 0, 1, &out->graph_launch_s, err))
        return -1;
    out->processing_mode = (llm_processing_mode_t)mode;
    jr_path(p, sizeof p, path, "networks");
    const json_t *nets = json_object_get(v, "networks");
    if (jr_expect_array(nets, p, 1, LLM_MAX_NETWORKS, err))
        return -1;
    out->num_networks = (int)json_array_size(nets);
    for (size_t i = 0; i < json_array_size(nets); i++) {
        char q[JR_PATH_MAX];
        jr_path_index(q, sizeof q, p, i);
        if (decode_network(json_array_get(nets, i), q, &out->networks[i], err))
            return -1;
    }
    codec_gpu_cost_t cost; /* not part of the system: checked here, read by those who bill */
    if (codec_llm_system_cost_decode(v, path, presets, &cost, err))
        return -1;
    /* the remaining rules (curve order) are the core's; report them under this path */
    if (llm_system_check(out, err)) {
        if (err && strncmp(err->field, "system", 6) == 0 && strcmp(path, "system") != 0) {
            char f[FATHOM_ERROR_FIELD_MAX];
            const char *rest = err->field + 6;
            snprintf(f, sizeof f, "%s%s", path, path[0] || rest[0] != '.' ? rest : rest + 1);
            snprintf(err->field, sizeof err->field, "%s", f);
        }
        return -1;
    }
    return 0;
}

int codec_llm_system_cost_decode(const json_t *v, const char *path,
                                 const codec_presets_t *presets, codec_gpu_cost_t *out,
                                 fathom_error_t *err)
{
    memset(out, 0, sizeof *out);
    const json_t *sys;
    json_t *owned;
    if (codec_llm_system_resolve(v, path, presets, &sys, &owned, err))
        return -1;
    int rc = 0;
    if (json_is_object(sys)) {
        out->has_price = json_object_get(sys, "price_per_gpu_hour") != NULL;
        out->has_power = json_object_get(sys, "power_per_gpu_kw") != NULL;
        rc = jr_real(sys, path, "price_per_gpu_hour", JR_OPTIONAL, 0, 0, TRAINING_MAX_PRICE,
                     &out->price_per_gpu_hour, err) ||
                     jr_real(sys, path, "power_per_gpu_kw", JR_OPTIONAL, 0, 0,
                             TRAINING_MAX_POWER_KW, &out->power_per_gpu_kw, err)
                 ? -1
                 : 0;
    }
    json_decref(owned);
    return rc;
}

static json_t *encode_curve(const llm_curve_t *c)
{
    json_t *a = json_array();
    bool ok = a != NULL;
    for (int i = 0; ok && i < c->num_points; i++)
        ok = json_array_append_new(a, json_pack("[o,o]", num(c->points[i].threshold),
                                                num(c->points[i].efficiency))) == 0;
    return jw_finish(a, ok);
}

static json_t *encode_attn_curve(const llm_attn_curve_t *c)
{
    json_t *a = json_array();
    bool ok = a != NULL;
    for (int i = 0; ok && i < c->n; i++)
        ok = json_array_append_new(a, json_pack("[o,o]", num(c->seq[i]), num(c->eff[i]))) == 0;
    return jw_finish(a, ok);
}

static json_t *encode_processor(const llm_processor_t *p)
{
    json_t *o = json_object();
    bool ok = o != NULL;
    for (int dt = 0; ok && dt < LLM_DT__COUNT; dt++)
        if (p->rate[dt].present)
            ok = json_object_set_new(o, llm_datatype_names[dt],
                                     json_pack("{s:o,s:o}", "tflops", num(p->rate[dt].tflops),
                                               "gflops_efficiency",
                                               encode_curve(&p->rate[dt].gflops_efficiency))) ==
                 0;
    return jw_finish(o, ok);
}

static json_t *encode_memory(const llm_memory_t *m)
{
    return json_pack("{s:o,s:o,s:o}", "GiB", num(m->gib), "GBps", num(m->gbps), "MB_efficiency",
                     encode_curve(&m->mb_efficiency));
}

json_t *codec_llm_system_encode(const llm_system_t *s)
{
    json_t *nets = json_array();
    bool ok = nets != NULL;
    for (int i = 0; ok && i < s->num_networks; i++) {
        const llm_network_t *n = &s->networks[i];
        json_t *ops = json_object();
        bool ops_ok = ops != NULL;
        for (int op = 0; ops_ok && op < LLM_OP__COUNT; op++)
            ops_ok = json_object_set_new(
                         ops, llm_net_op_names[op],
                         json_pack("[o,o]", num(n->ops[op].scalar),
                                   op == LLM_OP_P2P ? json_null() : num(n->ops[op].offset))) == 0;
        json_t *net = json_pack("{s:o,s:o,s:I,s:o,s:o,s:b,s:o}", "bandwidth",
                                num(n->bandwidth_gbps), "efficiency", num(n->efficiency), "size",
                                (json_int_t)n->size, "latency", num(n->latency_s), "ops",
                                jw_finish(ops, ops_ok), "must_be_filled", n->must_be_filled,
                                "processor_usage", num(n->processor_usage));
        /* the NCCL model's members only when set, so Calculon's tiers keep their form */
        if (net && ((n->nvls_efficiency > 0 &&
                     json_object_set_new(net, "nvls_efficiency", num(n->nvls_efficiency))) ||
                    (n->sharp && json_object_set_new(net, "sharp", json_true())) ||
                    (n->scale_falloff > 0 &&
                     json_object_set_new(net, "scale_falloff", num(n->scale_falloff))) ||
                    (n->link != LLM_LINK_AUTO &&
                     json_object_set_new(net, "link", json_string(llm_link_names[n->link - 1]))))) {
            json_decref(net);
            net = NULL;
        }
        ok = json_array_append_new(nets, net) == 0;
    }
    nets = jw_finish(nets, ok);
    json_t *o = json_pack("{s:o,s:o,s:o,s:o,s:s,s:o,s:o}", "matrix", encode_processor(&s->matrix),
                          "vector", encode_processor(&s->vector), "mem1", encode_memory(&s->mem1),
                          "mem2", encode_memory(&s->mem2), "processing_mode",
                          llm_processing_mode_names[s->processing_mode], "networks", nets,
                          "attention_efficiency", num(s->attention_efficiency));
    json_t *kernels = json_object();
    bool any = false;
    for (int k = LLM_ATTN_KERNEL_FLASH2; o && kernels && k < LLM_ATTN_KERNEL__COUNT; k++) {
        const llm_attn_kernel_table_t *t = &s->attention_kernels[k];
        if (!t->present)
            continue;
        any = true;
        if (json_object_set_new(kernels, llm_attn_kernel_names[k],
                                json_pack("{s:o,s:o,s:o,s:o,s:o}", "fwd", encode_attn_curve(&t->fwd),
                                          "bwd", encode_attn_curve(&t->bwd), "fwd_causal",
                                          encode_attn_curve(&t->fwd_causal), "bwd_causal",
                                          encode_attn_curve(&t->bwd_causal), "head_dim_64",
                                          num(t->head_dim_64)))) {
            json_decref(kernels);
            json_decref(o);
            return NULL;
        }
    }
    if (!kernels || (any ? json_object_set_new(o, "attention_kernels", kernels)
                         : (json_decref(kernels), 0))) {
        json_decref(o);
        return NULL;
    }
    /* the host side and the collectives model only when given, so Calculon's systems keep
     * their form */
    if (o && ((s->collectives != LLM_COLLECTIVES_BY_STACK &&
               json_object_set_new(o, "collectives",
                                   json_string(llm_collectives_names[s->collectives]))) ||
              (s->host_launch_s > 0 &&
               json_object_set_new(o, "host_launch_s", num(s->host_launch_s))) ||
              (s->graph_launch_s > 0 &&
               json_object_set_new(o, "graph_launch_s", num(s->graph_launch_s))))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *codec_llm_system_with_cost(json_t *o, const codec_gpu_cost_t *c)
{
    if (o && ((c->has_price &&
               json_object_set_new(o, "price_per_gpu_hour", num(c->price_per_gpu_hour))) ||
              (c->has_power &&
               json_object_set_new(o, "power_per_gpu_kw", num(c->power_per_gpu_kw))))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

int codec_llm_system_serving_hw_decode(const json_t *sys, const char *path, codec_serving_hw_t *out,
                                       fathom_error_t *err)
{
    memset(out, 0, sizeof *out);
    return jr_real(sys, path, "float4_tflops", JR_OPTIONAL, 0, 0, 1e6, &out->float4_tflops,
                   err) ||
                   jr_positive(sys, path, "decode_attention_efficiency", JR_OPTIONAL, 0, 1,
                               &out->decode_attention_efficiency, err) ||
                   jr_positive(sys, path, "float4_efficiency", JR_OPTIONAL, 0, 1,
                               &out->float4_efficiency, err)
               ? -1
               : 0;
}

json_t *codec_llm_system_with_serving_hw(json_t *o, const codec_serving_hw_t *h)
{
    if (o && ((h->float4_tflops > 0 &&
               json_object_set_new(o, "float4_tflops", num(h->float4_tflops))) ||
              (h->float4_efficiency > 0 &&
               json_object_set_new(o, "float4_efficiency", num(h->float4_efficiency))) ||
              (h->decode_attention_efficiency > 0 &&
               json_object_set_new(o, "decode_attention_efficiency",
                                   num(h->decode_attention_efficiency))))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

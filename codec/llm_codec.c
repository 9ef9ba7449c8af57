/* llm_codec.c — strict decoding and full encoding of Calculon's system and execution objects,
 * and the encoders of an estimate's statistics, summary and memory violations (llm_codec.h). */
#include "llm_codec.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "json_read.h"
#include "model_codec.h"
#include "transformer.h"

/* ---- system ---- */

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

/* A real that reads back as the same double; integral values are written as integers so the
 * normalized form looks like the files people write. */
static json_t *num(double x)
{
    if (!isfinite(x))
        return json_null();
    if (x == floor(x) && fabs(x) < 9007199254740992.0)
        return json_integer((json_int_t)x);
    return json_real(x);
}

/* jansson's _new setters take their value even when they fail (a NULL value fails too), so an
 * encoder counts failures and gives back NULL after any: an answer is never encoded with a
 * member or a point missing, which a decoder would read as a different request. */
static json_t *finish(json_t *v, bool ok)
{
    if (!ok) {
        json_decref(v);
        return NULL;
    }
    return v;
}

static json_t *encode_curve(const llm_curve_t *c)
{
    json_t *a = json_array();
    bool ok = a != NULL;
    for (int i = 0; ok && i < c->num_points; i++)
        ok = json_array_append_new(a, json_pack("[o,o]", num(c->points[i].threshold),
                                                num(c->points[i].efficiency))) == 0;
    return finish(a, ok);
}

static json_t *encode_attn_curve(const llm_attn_curve_t *c)
{
    json_t *a = json_array();
    bool ok = a != NULL;
    for (int i = 0; ok && i < c->n; i++)
        ok = json_array_append_new(a, json_pack("[o,o]", num(c->seq[i]), num(c->eff[i]))) == 0;
    return finish(a, ok);
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
    return finish(o, ok);
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
                                finish(ops, ops_ok), "must_be_filled", n->must_be_filled,
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
    nets = finish(nets, ok);
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

/* ---- execution ---- */

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

json_t *codec_llm_execution_encode(const llm_execution_t *e)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    int failed = 0;
#define I(k, x) failed |= json_object_set_new(o, k, json_integer((json_int_t)(x)))
#define B(k, x) failed |= json_object_set_new(o, k, json_boolean(x))
#define S(k, x) failed |= json_object_set_new(o, k, json_string(x))
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
#undef I
#undef B
#undef S
    return finish(o, !failed);
}

/* ---- results ---- */

/* Statistics are doubles; an integral one is written as an integer like Calculon's. */
json_t *codec_llm_stats_encode(const llm_stats_t *s)
{
    json_t *o = json_object();
    bool ok = o != NULL;
    for (int i = 0; ok && i < LLM_STAT__COUNT; i++)
        ok = json_object_set_new(o, llm_stat_name((llm_stat_t)i),
                                 num(llm_stat_value(s, (llm_stat_t)i))) == 0;
    return finish(o, ok);
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
    return finish(a, ok);
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

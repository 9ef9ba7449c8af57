/* goodput_codec.c — POST /v1/goodput/evaluate and /v1/goodput/optimize, and the model members
 * ("perf_params", "grad_params", "init_batch_size") all three goodput endpoints share. See
 * goodput_codec.h for the wire format and schemas/goodput_*.json for its schemas.
 *
 * Integer members that may be a scalar or an array are read into an int_list_t: a scalar is
 * kept as one value (it repeats), an array is copied into a buffer whose length was checked
 * against GOODPUT_MAX_CONFIGS before it was allocated. Core refusals name the member
 * ("atomic_bsz"); when that member is an array the codec adds the index ("atomic_bsz[3]"). */
#include "goodput_codec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "endpoint.h"
#include "json_read.h"

static const char *const perf_keys[] = {"alpha_c", "beta_c", "alpha_n", "beta_n",
                                        "alpha_r", "beta_r", "gamma",   NULL};
static const char *const grad_keys[] = {"sqr", "var", NULL};

int codec_goodput_model_decode(const json_t *body, goodput_model_t *out, fathom_error_t *err)
{
    const json_t *perf = json_object_get(body, "perf_params");
    const json_t *grad = json_object_get(body, "grad_params");
    goodput_model_t m;
    goodput_perf_params_t *p = &m.perf;
    const double max_s = CODEC_GOODPUT_MAX_SECONDS;
    if (jr_expect_object(perf, "perf_params", err) ||
        jr_check_keys(perf, "perf_params", perf_keys, err) ||
        jr_positive(perf, "perf_params", "alpha_c", JR_REQUIRED, 0, max_s, &p->alpha_c, err) ||
        jr_positive(perf, "perf_params", "beta_c", JR_REQUIRED, 0, max_s, &p->beta_c, err) ||
        jr_positive(perf, "perf_params", "alpha_n", JR_REQUIRED, 0, max_s, &p->alpha_n, err) ||
        jr_positive(perf, "perf_params", "beta_n", JR_REQUIRED, 0, max_s, &p->beta_n, err) ||
        jr_positive(perf, "perf_params", "alpha_r", JR_REQUIRED, 0, max_s, &p->alpha_r, err) ||
        jr_positive(perf, "perf_params", "beta_r", JR_REQUIRED, 0, max_s, &p->beta_r, err) ||
        jr_real(perf, "perf_params", "gamma", JR_REQUIRED, 0, GOODPUT_GAMMA_MIN,
                GOODPUT_GAMMA_MAX, &p->gamma, err))
        return -1;
    if (jr_expect_object(grad, "grad_params", err) ||
        jr_check_keys(grad, "grad_params", grad_keys, err) ||
        jr_real(grad, "grad_params", "sqr", JR_REQUIRED, 0, 0, 1e300, &m.grad.sqr, err) ||
        jr_real(grad, "grad_params", "var", JR_REQUIRED, 0, 0, 1e300, &m.grad.var, err) ||
        jr_int(body, "", "init_batch_size", JR_REQUIRED, 0, 1, GOODPUT_MAX_BATCH,
               &m.init_batch_size, err))
        return -1;
    if (goodput_model_check(&m, err))
        return -1;
    *out = m;
    return 0;
}

json_t *codec_goodput_perf_params_encode(const goodput_perf_params_t *p)
{
    return json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "alpha_c", p->alpha_c, "beta_c", p->beta_c,
                     "alpha_n", p->alpha_n, "beta_n", p->beta_n, "alpha_r", p->alpha_r,
                     "beta_r", p->beta_r, "gamma", p->gamma);
}

void codec_goodput_model_encode(const goodput_model_t *m, json_t *obj)
{
    json_object_set_new(obj, "perf_params", codec_goodput_perf_params_encode(&m->perf));
    json_object_set_new(obj, "grad_params",
                        json_pack("{s:f,s:f}", "sqr", m->grad.sqr, "var", m->grad.var));
    json_object_set_new(obj, "init_batch_size", json_integer((json_int_t)m->init_batch_size));
}

/* ---- integer scalars or arrays ---- */

typedef struct {
    int64_t *values; /* is_array: n values (malloc'd); otherwise NULL */
    int64_t one;     /* the scalar */
    size_t n;        /* 1 for a scalar */
    bool is_array;
} int_list_t;

static int64_t list_at(const int_list_t *l, size_t i)
{
    return l->is_array ? l->values[i] : l->one;
}

static void list_free(int_list_t *l)
{
    free(l->values);
    l->values = NULL;
}

static int read_int_list(const json_t *body, const char *key, jr_presence_t presence, int64_t dflt,
                         int64_t min, int64_t max, int_list_t *out, fathom_error_t *err)
{
    *out = (int_list_t){.one = dflt, .n = 1};
    const json_t *v = json_object_get(body, key);
    if (!v) { /* null is not absent: jr_value_int below refuses it */
        if (presence == JR_REQUIRED)
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, key, "is required");
        return 0;
    }
    if (!json_is_array(v))
        return jr_value_int(v, key, min, max, &out->one, err);
    if (jr_expect_array(v, key, 1, GOODPUT_MAX_CONFIGS, err))
        return -1;
    size_t n = json_array_size(v);
    int64_t *values = malloc(n * sizeof *values);
    if (!values)
        return fathom_error_set(err, FATHOM_E_INTERNAL, key, "out of memory");
    for (size_t i = 0; i < n; i++) {
        char p[JR_PATH_MAX];
        jr_path_index(p, sizeof p, key, i);
        if (jr_value_int(json_array_get(v, i), p, min, max, &values[i], err)) {
            free(values);
            return -1;
        }
    }
    out->values = values;
    out->n = n;
    out->is_array = true;
    return 0;
}

static json_t *list_encode(const int_list_t *l, size_t n)
{
    if (!l->is_array && n == 0)
        return json_integer((json_int_t)l->one);
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_integer((json_int_t)list_at(l, i)));
    return a;
}

/* A core refusal names a member; when that member was given as an array, add the index. */
static void index_field(fathom_error_t *err, const char *const *names,
                        const int_list_t *const *lists, size_t count, size_t i)
{
    for (size_t k = 0; k < count; k++) {
        if (strcmp(err->field, names[k]) == 0 && lists[k]->is_array) {
            jr_path_index(err->field, sizeof err->field, names[k], i);
            return;
        }
    }
}

/* ---- evaluate ---- */

static const char *const eval_keys[] = {"perf_params", "grad_params", "init_batch_size",
                                        "num_nodes",   "num_replicas", "atomic_bsz",
                                        "accum_steps", NULL};
enum { L_NODES, L_REPLICAS, L_ATOMIC, L_ACCUM, L_COUNT };
static const char *const eval_lists[L_COUNT] = {"num_nodes", "num_replicas", "atomic_bsz",
                                                "accum_steps"};

typedef struct {
    goodput_model_t model;
    int_list_t lists[L_COUNT];
    size_t n;      /* rows */
    bool is_array; /* any member was an array */
} eval_req_t;

static void eval_req_free(eval_req_t *r)
{
    for (int k = 0; k < L_COUNT; k++)
        list_free(&r->lists[k]);
}

static goodput_config_t eval_row(const eval_req_t *r, size_t i)
{
    return (goodput_config_t){list_at(&r->lists[L_NODES], i), list_at(&r->lists[L_REPLICAS], i),
                              list_at(&r->lists[L_ATOMIC], i), list_at(&r->lists[L_ACCUM], i)};
}

/* On failure everything read so far is freed. */
static int eval_decode(const json_t *body, eval_req_t *r, fathom_error_t *err)
{
    memset(r, 0, sizeof *r);
    if (jr_expect_object(body, "", err) || jr_check_keys(body, "", eval_keys, err) ||
        codec_goodput_model_decode(body, &r->model, err))
        return -1;
    static const struct {
        jr_presence_t presence;
        int64_t dflt, min, max;
    } spec[L_COUNT] = {{JR_REQUIRED, 0, 1, GOODPUT_MAX_NODES},
                       {JR_REQUIRED, 0, 1, GOODPUT_MAX_REPLICAS},
                       {JR_REQUIRED, 0, 1, GOODPUT_MAX_BATCH},
                       {JR_OPTIONAL, 0, 0, GOODPUT_MAX_BATCH}};
    const char *first_array = NULL;
    r->n = 1;
    for (int k = 0; k < L_COUNT; k++) {
        int_list_t *l = &r->lists[k];
        if (read_int_list(body, eval_lists[k], spec[k].presence, spec[k].dflt, spec[k].min,
                          spec[k].max, l, err))
            goto fail;
        if (!l->is_array)
            continue;
        if (first_array && l->n != r->n) {
            fathom_error_set(err, FATHOM_E_INVALID_FIELD, eval_lists[k],
                             "has %zu elements but %s has %zu: arrays must have one length", l->n,
                             first_array, r->n);
            goto fail;
        }
        first_array = first_array ? first_array : eval_lists[k];
        r->n = l->n;
        r->is_array = true;
    }
    const int_list_t *lists[L_COUNT] = {&r->lists[0], &r->lists[1], &r->lists[2], &r->lists[3]};
    for (size_t i = 0; i < r->n; i++) {
        goodput_config_t c = eval_row(r, i);
        if (goodput_config_check(&r->model, &c, err)) {
            index_field(err, eval_lists, lists, L_COUNT, i);
            goto fail;
        }
    }
    return 0;
fail:
    eval_req_free(r);
    return -1;
}

static json_t *eval_normalize(const json_t *body, const codec_ctx_t *ctx, fathom_error_t *err)
{
    (void)ctx;
    eval_req_t r;
    if (eval_decode(body, &r, err))
        return NULL;
    json_t *o = json_object();
    codec_goodput_model_encode(&r.model, o);
    for (int k = 0; k < L_COUNT; k++)
        json_object_set_new(o, eval_lists[k], list_encode(&r.lists[k], r.is_array ? r.n : 0));
    eval_req_free(&r);
    return o;
}

static void set_eval(json_t *o, const goodput_eval_t *ev)
{
    json_object_set_new(o, "batch_size", json_integer((json_int_t)ev->batch_size));
    json_object_set_new(o, "throughput_samples_per_s", json_real(ev->throughput));
    json_object_set_new(o, "efficiency", json_real(ev->efficiency));
    json_object_set_new(o, "goodput_samples_per_s", json_real(ev->goodput));
}

static json_t *eval_evaluate(const json_t *normalized, const codec_ctx_t *ctx, fathom_error_t *err)
{
    (void)ctx;
    eval_req_t r;
    if (eval_decode(normalized, &r, err))
        return NULL;
    json_t *out = json_object();
    json_t *rows = r.is_array ? json_array() : NULL;
    for (size_t i = 0; i < r.n; i++) {
        goodput_config_t c = eval_row(&r, i);
        goodput_eval_t ev;
        if (goodput_evaluate(&r.model, &c, &ev, err)) { /* perf_params: a time that underflows */
            json_decref(rows);
            json_decref(out);
            out = NULL;
            goto done;
        }
        if (!rows) {
            set_eval(out, &ev);
            continue;
        }
        json_t *row = json_pack("{s:I,s:I,s:I,s:I}", "num_nodes", (json_int_t)c.num_nodes,
                                "num_replicas", (json_int_t)c.num_replicas, "atomic_bsz",
                                (json_int_t)c.atomic_bsz, "accum_steps", (json_int_t)c.accum_steps);
        set_eval(row, &ev);
        json_array_append_new(rows, row);
    }
    if (rows)
        json_object_set_new(out, "results", rows);
done:
    eval_req_free(&r);
    return out;
}

const codec_endpoint_t codec_goodput_evaluate_endpoint = {
    "goodput_evaluate", "/v1/goodput/evaluate", eval_normalize, eval_evaluate};

/* ---- optimize ---- */

static const char *const opt_keys[] = {"perf_params",    "grad_params",    "init_batch_size",
                                       "num_nodes",      "num_replicas",   "max_batch_size",
                                       "atomic_bsz_range", "accumulation", "curve", NULL};

typedef struct {
    goodput_model_t model;
    int_list_t nodes, replicas;
    goodput_optimize_opts_t opts; /* every member explicit after decoding */
    bool curve;
    bool is_table; /* either list was an array */
} opt_req_t;

static void opt_req_free(opt_req_t *r)
{
    list_free(&r->nodes);
    list_free(&r->replicas);
}

/* "atomic_bsz_range": [min|null, max|null]; a null bound stays 0 (the default). */
static int read_range(const json_t *body, int64_t *min, int64_t *max, fathom_error_t *err)
{
    *min = *max = 0;
    const json_t *v = json_object_get(body, "atomic_bsz_range");
    if (!v || json_is_null(v))
        return 0;
    if (jr_expect_array(v, "atomic_bsz_range", 2, 2, err))
        return -1;
    int64_t *bounds[2] = {min, max};
    for (size_t i = 0; i < 2; i++) {
        const json_t *b = json_array_get(v, i);
        char p[JR_PATH_MAX];
        jr_path_index(p, sizeof p, "atomic_bsz_range", i);
        if (!json_is_null(b) && jr_value_int(b, p, 1, GOODPUT_MAX_BATCH, bounds[i], err))
            return -1;
    }
    return 0;
}

static size_t valid_pairs(const opt_req_t *r)
{
    size_t count = 0;
    for (size_t i = 0; i < r->nodes.n; i++)
        for (size_t j = 0; j < r->replicas.n; j++)
            count += list_at(&r->nodes, i) <= list_at(&r->replicas, j);
    return count;
}

static int opt_decode(const json_t *body, opt_req_t *r, fathom_error_t *err)
{
    memset(r, 0, sizeof *r);
    int64_t max_batch = 0, min_atomic = 0, max_atomic = 0;
    if (jr_expect_object(body, "", err) || jr_check_keys(body, "", opt_keys, err) ||
        codec_goodput_model_decode(body, &r->model, err) ||
        read_int_list(body, "num_nodes", JR_REQUIRED, 0, 1, GOODPUT_MAX_NODES, &r->nodes, err) ||
        read_int_list(body, "num_replicas", JR_REQUIRED, 0, 1, GOODPUT_MAX_REPLICAS, &r->replicas,
                      err) ||
        jr_int(body, "", "max_batch_size", JR_OPTIONAL, r->model.init_batch_size, 1,
               GOODPUT_MAX_BATCH, &max_batch, err) ||
        read_range(body, &min_atomic, &max_atomic, err) ||
        jr_bool(body, "", "accumulation", JR_OPTIONAL, false, &r->opts.accumulation, err) ||
        jr_bool(body, "", "curve", JR_OPTIONAL, false, &r->curve, err))
        goto fail;
    r->opts.max_batch_size = max_batch;
    r->opts.min_atomic_bsz = min_atomic ? min_atomic : 1;
    r->opts.max_atomic_bsz = max_atomic ? max_atomic : max_batch;
    if (goodput_optimize_check(&r->model, &r->opts, err))
        goto fail;
    r->is_table = r->nodes.is_array || r->replicas.is_array;
    if (r->nodes.n * r->replicas.n > GOODPUT_MAX_CONFIGS) {
        fathom_error_set(err, FATHOM_E_LIMIT_EXCEEDED, "num_replicas",
                         "%zu num_nodes x %zu num_replicas = %zu pairs; the limit is %d",
                         r->nodes.n, r->replicas.n, r->nodes.n * r->replicas.n,
                         GOODPUT_MAX_CONFIGS);
        goto fail;
    }
    size_t pairs = valid_pairs(r);
    if (pairs == 0) {
        if (r->is_table)
            fathom_error_set(err, FATHOM_E_INVALID_FIELD, "num_nodes",
                             "no (num_nodes, num_replicas) pair has num_nodes <= num_replicas");
        else
            fathom_error_set(err, FATHOM_E_INVALID_FIELD, "num_nodes",
                             "must not exceed num_replicas (%lld), got %lld",
                             (long long)r->replicas.one, (long long)r->nodes.one);
        goto fail;
    }
    if (r->curve && pairs > CODEC_GOODPUT_MAX_CURVE_PAIRS) {
        fathom_error_set(err, FATHOM_E_LIMIT_EXCEEDED, "curve",
                         "curves are returned for at most %d pairs; this table has %zu",
                         CODEC_GOODPUT_MAX_CURVE_PAIRS, pairs);
        goto fail;
    }
    return 0;
fail:
    opt_req_free(r);
    return -1;
}

static json_t *opt_normalize(const json_t *body, const codec_ctx_t *ctx, fathom_error_t *err)
{
    (void)ctx;
    opt_req_t r;
    if (opt_decode(body, &r, err))
        return NULL;
    json_t *o = json_object();
    codec_goodput_model_encode(&r.model, o);
    json_object_set_new(o, "num_nodes", list_encode(&r.nodes, r.nodes.is_array ? r.nodes.n : 0));
    json_object_set_new(o, "num_replicas",
                        list_encode(&r.replicas, r.replicas.is_array ? r.replicas.n : 0));
    json_object_set_new(o, "max_batch_size", json_integer((json_int_t)r.opts.max_batch_size));
    json_object_set_new(o, "atomic_bsz_range",
                        json_pack("[I,I]", (json_int_t)r.opts.min_atomic_bsz,
                                  (json_int_t)r.opts.max_atomic_bsz));
    json_object_set_new(o, "accumulation", json_boolean(r.opts.accumulation));
    json_object_set_new(o, "curve", json_boolean(r.curve));
    opt_req_free(&r);
    return o;
}

static json_t *candidate_encode(const goodput_candidate_t *c, bool with_target)
{
    json_t *o = json_pack("{s:f,s:I,s:I,s:I}", "goodput_samples_per_s", c->goodput, "atomic_bsz",
                          (json_int_t)c->atomic_bsz, "accum_steps", (json_int_t)c->accum_steps,
                          "batch_size", (json_int_t)c->batch_size);
    if (o && with_target)
        json_object_set_new(o, "target_batch_size", json_real(c->target_batch_size));
    return o;
}

static void set_optimum(json_t *o, const goodput_optimum_t *best, bool curve)
{
    json_t *b = candidate_encode(&best->best, false);
    json_object_update(o, b);
    json_decref(b);
    if (!curve)
        return;
    json_t *a = json_array();
    for (int i = 0; i < GOODPUT_NUM_CANDIDATES; i++)
        json_array_append_new(a, candidate_encode(&best->curve[i], true));
    json_object_set_new(o, "curve", a);
}

static json_t *opt_evaluate(const json_t *normalized, const codec_ctx_t *ctx, fathom_error_t *err)
{
    (void)ctx;
    opt_req_t r;
    if (opt_decode(normalized, &r, err))
        return NULL;
    json_t *out = json_object();
    json_t *rows = r.is_table ? json_array() : NULL;
    for (size_t i = 0; i < r.nodes.n; i++) {
        for (size_t j = 0; j < r.replicas.n; j++) {
            int64_t nodes = list_at(&r.nodes, i), replicas = list_at(&r.replicas, j);
            if (nodes > replicas)
                continue; /* not an allocation; a scalar pair was refused in decode */
            goodput_optimum_t best;
            if (goodput_optimize(&r.model, nodes, replicas, &r.opts, &best, err)) {
                json_decref(rows);
                json_decref(out);
                out = NULL;
                goto done;
            }
            if (!rows) {
                set_optimum(out, &best, r.curve);
                continue;
            }
            json_t *row = json_pack("{s:I,s:I}", "num_nodes", (json_int_t)nodes, "num_replicas",
                                    (json_int_t)replicas);
            set_optimum(row, &best, r.curve);
            json_array_append_new(rows, row);
        }
    }
    if (rows)
        json_object_set_new(out, "results", rows);
done:
    opt_req_free(&r);
    return out;
}

const codec_endpoint_t codec_goodput_optimize_endpoint = {
    "goodput_optimize", "/v1/goodput/optimize", opt_normalize, opt_evaluate};

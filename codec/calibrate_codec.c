/* calibrate_codec.c — POST /v1/calibrate: a base system plus measurements → the calibrated
 * system and how well it and the base predict each measurement (core/calibrate/calibrate.h has
 * the fit, its parameters and bounds).
 *
 * Request  {"system": preset name | system object,
 *           "runs":  [{"model", "execution", "measured": {"step_time_s" | "tokens_per_s_per_proc"
 *                      | "tflops_per_proc": x}}],                     (optional)
 *           "gemms": [{"m", "n", "k", "datatype", "tflops"}],         (optional)
 *           "collectives": [{"collective": "all_reduce" | "all_gather" | "reduce_scatter" |
 *                            "alltoall" | "sendrecv", "procs": ranks, "network": tier index,
 *                            "output": nccl-tests' output pasted as text}]}  (optional)
 * Response {"system": the calibrated system (usable as is in /v1/estimate; the input's price and
 *                     power carried over unfitted),
 *           "parameters": [{"name","base","fitted","change_pct","lower","upper","at_bound"}],
 *           "objective": {"before","after","lambda","evaluations","stopped"},
 *           "fit": [{"kind","index",…,"measured","before","after","error_before_pct",
 *                    "error_after_pct"[,"loo","error_loo_pct"]}],
 *           "summary": {"<kind>": {"count","mean_abs_error_before_pct",
 *                        "mean_abs_error_after_pct"[,"mean_abs_error_loo_pct"]}}}
 * Errors: 422 naming the field; a malformed paste names collectives[i].output and its line. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate.h"
#include "calibrate_codec.h"
#include "endpoint.h"
#include "json_read.h"
#include "llm_codec.h"
#include "model_codec.h"

#define MAX_COLLECTIVE_TABLES 64
#define MAX_OUTPUT_BYTES (1 << 20)
#define MAX_GEMM_DIM 1e8

static const char *const request_keys[] = {"system", "runs", "gemms", "collectives", NULL};
static const char *const run_keys[] = {"model", "execution", "measured", NULL};
static const char *const measured_keys[] = {"step_time_s", "tokens_per_s_per_proc",
                                            "tflops_per_proc", NULL};
static const char *const gemm_keys[] = {"m", "n", "k", "datatype", "tflops", NULL};
static const char *const coll_keys[] = {"collective", "procs", "network", "output", NULL};

typedef enum { U_STEP = 0, U_TOKENS = 1, U_TFLOPS = 2 } unit_t;

typedef struct {
    llm_system_t system;
    codec_gpu_cost_t cost; /* not fitted: handed back so the calibrated system bills the same */
    size_t n_runs, n_gemms, n_tables, n_rows;
    fathom_model_t *models;
    calibrate_run_t *runs;
    unit_t *units;
    double *measured; /* runs, in their unit */
    calibrate_gemm_t *gemms;
    /* tables */
    calibrate_collective_t ops[MAX_COLLECTIVE_TABLES];
    int64_t procs[MAX_COLLECTIVE_TABLES];
    int network[MAX_COLLECTIVE_TABLES];
    const char *output[MAX_COLLECTIVE_TABLES]; /* borrowed from the body */
    calibrate_coll_row_t *rows;                /* every table's rows, in order */
    size_t *row_table;                         /* table of each row */
    int *row_line;                             /* line of each row in its paste */
} request_t;

static void request_free(request_t *r)
{
    free(r->models);
    free(r->runs);
    free(r->units);
    free(r->measured);
    free(r->gemms);
    free(r->rows);
    free(r->row_table);
    free(r->row_line);
}

/* Step seconds ⇄ the unit a run was measured in: tokens/s per processor =
 * batch·seq / (step·procs); TFLOP/s per processor = model FLOPs / (step·procs) / 1e12, with the
 * model FLOPs of the step as /v1/estimate counts them for its tflops_per_proc
 * (llm_step_model_flops: a LoRA step's frozen base does no weight-gradient GEMMs), so that an
 * estimate's own figure reads back as its own step time. Both are inversely proportional to the
 * step time, so one function converts either way. */
static double convert(unit_t u, const fathom_model_t *m, const llm_execution_t *e, double x)
{
    double procs = (double)e->num_procs;
    switch (u) {
    case U_TOKENS: return (double)e->batch_size * (double)m->seq_size / (x * procs);
    case U_TFLOPS: return llm_step_model_flops(m, e) / (x * procs * 1e12);
    default: return x;
    }
}

static int decode_runs(const json_t *v, const codec_ctx_t *ctx, request_t *r, fathom_error_t *err)
{
    if (jr_expect_array(v, "runs", 0, CALIBRATE_MAX_RUNS, err))
        return -1;
    size_t n = json_array_size(v);
    r->n_runs = n;
    r->models = calloc(n ? n : 1, sizeof *r->models);
    r->runs = calloc(n ? n : 1, sizeof *r->runs);
    r->units = calloc(n ? n : 1, sizeof *r->units);
    r->measured = calloc(n ? n : 1, sizeof *r->measured);
    if (!r->models || !r->runs || !r->units || !r->measured)
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const json_t *o = json_array_get(v, i);
        char p[JR_PATH_MAX], pm[JR_PATH_MAX], pe[JR_PATH_MAX], pq[JR_PATH_MAX];
        jr_path_index(p, sizeof p, "runs", i);
        jr_path(pm, sizeof pm, p, "model");
        jr_path(pe, sizeof pe, p, "execution");
        jr_path(pq, sizeof pq, p, "measured");
        if (jr_expect_object(o, p, err) || jr_check_keys(o, p, run_keys, err))
            return -1;
        const json_t *model = json_object_get(o, "model"), *exe = json_object_get(o, "execution"),
                     *meas = json_object_get(o, "measured");
        if (!model)
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, pm, "is required");
        if (!exe)
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, pe, "is required");
        if (!meas)
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, pq, "is required");
        if (codec_model_decode(model, pm, ctx->presets, &r->models[i], err) ||
            codec_llm_execution_decode(exe, pe, &r->runs[i].execution, err))
            return -1;
        codec_llm_execution_default_nets(exe, &r->system, &r->runs[i].execution);
        r->runs[i].model = &r->models[i];
        if (jr_expect_object(meas, pq, err) || jr_check_keys(meas, pq, measured_keys, err))
            return -1;
        if (json_object_size(meas) != 1)
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, pq,
                                    "must have exactly one of step_time_s, "
                                    "tokens_per_s_per_proc, tflops_per_proc");
        for (int u = 0; measured_keys[u]; u++)
            if (jr_has(meas, measured_keys[u])) {
                if (jr_positive(meas, pq, measured_keys[u], JR_REQUIRED, 0, 1e15,
                                &r->measured[i], err))
                    return -1;
                r->units[i] = (unit_t)u;
            }
        r->runs[i].step_time_s =
            convert(r->units[i], &r->models[i], &r->runs[i].execution, r->measured[i]);
    }
    return 0;
}

static int decode_gemms(const json_t *v, request_t *r, fathom_error_t *err)
{
    if (jr_expect_array(v, "gemms", 0, CALIBRATE_MAX_GEMMS, err))
        return -1;
    size_t n = json_array_size(v);
    r->n_gemms = n;
    r->gemms = calloc(n ? n : 1, sizeof *r->gemms);
    if (!r->gemms)
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const json_t *o = json_array_get(v, i);
        char p[JR_PATH_MAX];
        jr_path_index(p, sizeof p, "gemms", i);
        calibrate_gemm_t *g = &r->gemms[i];
        int dt;
        if (jr_expect_object(o, p, err) || jr_check_keys(o, p, gemm_keys, err) ||
            jr_positive(o, p, "m", JR_REQUIRED, 0, MAX_GEMM_DIM, &g->m, err) ||
            jr_positive(o, p, "n", JR_REQUIRED, 0, MAX_GEMM_DIM, &g->n, err) ||
            jr_positive(o, p, "k", JR_REQUIRED, 0, MAX_GEMM_DIM, &g->k, err) ||
            jr_enum(o, p, "datatype", JR_REQUIRED, 0, llm_datatype_names, &dt, err) ||
            jr_positive(o, p, "tflops", JR_REQUIRED, 0, 1e6, &g->tflops, err))
            return -1;
        g->datatype = (llm_datatype_t)dt;
    }
    return 0;
}

/* Reads the tables' settings; parse = true also reads every paste into r->rows. */
static int decode_collectives(const json_t *v, request_t *r, bool parse, fathom_error_t *err)
{
    if (jr_expect_array(v, "collectives", 0, MAX_COLLECTIVE_TABLES, err))
        return -1;
    r->n_tables = json_array_size(v);
    codec_nccl_table_t *t = malloc(sizeof *t);
    if (!t)
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    int rc = -1;
    size_t cap = 0;
    for (size_t i = 0; i < r->n_tables; i++) {
        const json_t *o = json_array_get(v, i);
        char p[JR_PATH_MAX], po[JR_PATH_MAX];
        jr_path_index(p, sizeof p, "collectives", i);
        jr_path(po, sizeof po, p, "output");
        int op;
        int64_t net;
        if (jr_expect_object(o, p, err) || jr_check_keys(o, p, coll_keys, err) ||
            jr_enum(o, p, "collective", JR_REQUIRED, 0, calibrate_collective_names, &op, err) ||
            jr_int(o, p, "procs", JR_REQUIRED, 0, 2, LLM_CODEC_MAX_PROCS, &r->procs[i], err) ||
            jr_int(o, p, "network", JR_REQUIRED, 0, 0, LLM_MAX_NETWORKS - 1, &net, err) ||
            jr_string(o, p, "output", JR_REQUIRED, NULL, MAX_OUTPUT_BYTES, &r->output[i], err))
            goto out;
        r->ops[i] = (calibrate_collective_t)op;
        r->network[i] = (int)net;
        if (net >= r->system.num_networks) {
            char pn[JR_PATH_MAX];
            jr_path(pn, sizeof pn, p, "network");
            fathom_error_set(err, FATHOM_E_INVALID_FIELD, pn,
                             "the system has %d network tiers, got index %lld",
                             r->system.num_networks, (long long)net);
            goto out;
        }
        if (codec_nccl_parse(r->output[i], po, t, err))
            goto out;
        /* busbw/algbw is nccl-tests' factor for the ranks it ran on: a table whose ratio says
         * another rank count than procs was pasted with the wrong procs (or collective). Rows
         * under 1 GB/s are skipped: printed with two decimals, their ratio is noise. */
        const double want = calibrate_busbw_factor((calibrate_collective_t)op, r->procs[i]);
        for (size_t j = 0; j < t->n_rows; j++) {
            const codec_nccl_row_t *row = &t->rows[j];
            if (row->algbw_gbps < 1.0)
                continue;
            const double got = row->busbw_gbps / row->algbw_gbps;
            if (fabs(got / want - 1.0) > 0.05) {
                char pp[JR_PATH_MAX];
                jr_path(pp, sizeof pp, p, "procs");
                fathom_error_set(err, FATHOM_E_INVALID_FIELD, pp,
                                 "line %d of the output has busbw/algbw = %.3f, but %s on %lld "
                                 "ranks has %.3f: check procs and collective",
                                 row->line, got, calibrate_collective_names[op],
                                 (long long)r->procs[i], want);
                goto out;
            }
        }
        if (!parse)
            continue;
        if (r->n_rows + t->n_rows > CALIBRATE_MAX_COLLECTIVE_ROWS) {
            fathom_error_set(err, FATHOM_E_LIMIT_EXCEEDED, "collectives",
                             "more than %d rows in all", CALIBRATE_MAX_COLLECTIVE_ROWS);
            goto out;
        }
        if (r->n_rows + t->n_rows > cap) {
            cap = r->n_rows + t->n_rows;
            calibrate_coll_row_t *nr = realloc(r->rows, cap * sizeof *nr);
            if (nr)
                r->rows = nr;
            size_t *nt = realloc(r->row_table, cap * sizeof *nt);
            if (nt)
                r->row_table = nt;
            int *nl = realloc(r->row_line, cap * sizeof *nl);
            if (nl)
                r->row_line = nl;
            if (!nr || !nt || !nl) {
                fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
                goto out;
            }
        }
        for (size_t j = 0; j < t->n_rows; j++) {
            r->rows[r->n_rows] = (calibrate_coll_row_t){r->ops[i], r->network[i], r->procs[i],
                                                        t->rows[j].bytes, t->rows[j].time_s};
            r->row_table[r->n_rows] = i;
            r->row_line[r->n_rows] = t->rows[j].line;
            r->n_rows++;
        }
    }
    rc = 0;
out:
    free(t);
    return rc;
}

static int decode(const json_t *body, const codec_ctx_t *ctx, request_t *r, bool parse,
                  fathom_error_t *err)
{
    memset(r, 0, sizeof *r);
    if (jr_expect_object(body, "", err) || jr_check_keys(body, "", request_keys, err))
        return -1;
    const json_t *system = json_object_get(body, "system");
    if (!system)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "system", "is required");
    if (codec_llm_system_decode(system, "system", ctx->presets, &r->system, err) ||
        codec_llm_system_cost_decode(system, "system", ctx->presets, &r->cost, err))
        return -1;
    /* null is not absent: each decoder refuses it as not an array, naming it */
    const json_t *runs = json_object_get(body, "runs"), *gemms = json_object_get(body, "gemms"),
                 *colls = json_object_get(body, "collectives");
    if ((runs && decode_runs(runs, ctx, r, err)) || (gemms && decode_gemms(gemms, r, err)) ||
        (colls && decode_collectives(colls, r, parse, err)))
        return -1;
    if (r->n_runs + r->n_gemms + r->n_tables == 0)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "runs",
                                "no measurement: give runs, gemms or collectives");
    return 0;
}

static json_t *normalize(const json_t *body, const codec_ctx_t *ctx, fathom_error_t *err)
{
    request_t r;
    json_t *out = NULL;
    if (decode(body, ctx, &r, false, err))
        goto done;
    json_t *runs = json_array(), *gemms = json_array(), *colls = json_array();
    for (size_t i = 0; i < r.n_runs; i++)
        json_array_append_new(
            runs, json_pack("{s:o,s:o,s:{s:f}}", "model", codec_model_encode(&r.models[i]),
                            "execution", codec_llm_execution_encode(&r.runs[i].execution),
                            "measured", measured_keys[r.units[i]], r.measured[i]));
    for (size_t i = 0; i < r.n_gemms; i++) {
        const calibrate_gemm_t *g = &r.gemms[i];
        json_array_append_new(gemms, json_pack("{s:f,s:f,s:f,s:s,s:f}", "m", g->m, "n", g->n,
                                               "k", g->k, "datatype",
                                               llm_datatype_names[g->datatype], "tflops",
                                               g->tflops));
    }
    for (size_t i = 0; i < r.n_tables; i++)
        json_array_append_new(colls, json_pack("{s:s,s:I,s:i,s:s}", "collective",
                                               calibrate_collective_names[r.ops[i]], "procs",
                                               (json_int_t)r.procs[i], "network", r.network[i],
                                               "output", r.output[i]));
    json_t *sys = codec_llm_system_with_cost(codec_llm_system_encode(&r.system), &r.cost);
    out = json_pack("{s:o,s:o,s:o,s:o}", "system", sys, "runs", runs, "gemms", gemms,
                    "collectives", colls);
    if (!out)
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
done:
    request_free(&r);
    return out;
}

static json_t *num(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

/* 100·(predicted/measured − 1) */
static double pct(double pred, double meas)
{
    return 100.0 * (pred / meas - 1.0);
}

typedef struct {
    size_t n;
    double before, after, loo;
} acc_t;

static void add(acc_t *a, double b, double af, double loo)
{
    a->n++;
    a->before += fabs(b);
    a->after += fabs(af);
    a->loo += fabs(loo);
}

static json_t *acc_encode(const acc_t *a, bool loo)
{
    double n = a->n ? (double)a->n : NAN;
    json_t *o = json_pack("{s:I,s:o,s:o}", "count", (json_int_t)a->n, "mean_abs_error_before_pct",
                          num(a->before / n), "mean_abs_error_after_pct", num(a->after / n));
    if (o && loo)
        json_object_set_new(o, "mean_abs_error_loo_pct", num(a->loo / n));
    return o;
}

static json_t *evaluate(const json_t *normalized, const codec_ctx_t *ctx, fathom_error_t *err)
{
    request_t r;
    json_t *out = NULL;
    calibrate_result_t *res = malloc(sizeof *res);
    calibrate_prediction_t *gp = NULL, *cp = NULL, *rp = NULL;
    if (!res) {
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
        return NULL;
    }
    if (decode(normalized, ctx, &r, true, err))
        goto done;
    gp = calloc(r.n_gemms + 1, sizeof *gp);
    cp = calloc(r.n_rows + 1, sizeof *cp);
    rp = calloc(r.n_runs + 1, sizeof *rp);
    if (!gp || !cp || !rp) {
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
        goto done;
    }
    calibrate_input_t in = {r.gemms, r.n_gemms, r.rows, r.n_rows, r.runs, r.n_runs};
    if (calibrate_fit(&r.system, &in, res, gp, cp, rp, err))
        goto done;

    json_t *params = json_array(), *fit = json_array();
    for (int k = 0; k < res->n_params; k++) {
        const calibrate_param_t *p = &res->params[k];
        json_array_append_new(
            params, json_pack("{s:s,s:o,s:o,s:o,s:f,s:f,s:s}", "name", p->name, "base",
                              num(p->base), "fitted", num(p->fitted), "change_pct",
                              num(p->base != 0 ? pct(p->fitted, p->base) : NAN), "lower",
                              p->lower, "upper", p->upper, "at_bound",
                              p->at_bound < 0 ? "lower" : p->at_bound > 0 ? "upper" : "no"));
    }
    acc_t ag = {0}, ac = {0}, ar = {0};
    for (size_t i = 0; i < r.n_gemms; i++) {
        const calibrate_gemm_t *g = &r.gemms[i];
        double eb = pct(gp[i].before, g->tflops), ea = pct(gp[i].after, g->tflops);
        add(&ag, eb, ea, 0);
        json_array_append_new(
            fit, json_pack("{s:s,s:I,s:s,s:f,s:f,s:f,s:s,s:f,s:o,s:o,s:o,s:o}", "kind", "gemm",
                           "index", (json_int_t)i, "unit", "tflops", "m", g->m, "n", g->n, "k",
                           g->k, "datatype", llm_datatype_names[g->datatype], "measured",
                           g->tflops, "before", num(gp[i].before), "after", num(gp[i].after),
                           "error_before_pct", num(eb), "error_after_pct", num(ea)));
    }
    for (size_t i = 0; i < r.n_rows; i++) {
        const calibrate_coll_row_t *c = &r.rows[i];
        double eb = pct(cp[i].before, c->time_s), ea = pct(cp[i].after, c->time_s);
        add(&ac, eb, ea, 0);
        json_array_append_new(
            fit, json_pack("{s:s,s:I,s:I,s:s,s:I,s:i,s:f,s:s,s:f,s:o,s:o,s:o,s:o}", "kind",
                           "collective", "index", (json_int_t)r.row_table[i], "line",
                           (json_int_t)r.row_line[i], "collective",
                           calibrate_collective_names[c->op], "procs", (json_int_t)c->procs,
                           "network", c->network, "bytes", c->bytes, "unit", "s", "measured",
                           c->time_s, "before", num(cp[i].before), "after", num(cp[i].after),
                           "error_before_pct", num(eb), "error_after_pct", num(ea)));
    }
    for (size_t i = 0; i < r.n_runs; i++) {
        const fathom_model_t *m = &r.models[i];
        const llm_execution_t *e = &r.runs[i].execution;
        unit_t u = r.units[i];
        /* Errors are of the measured quantity in its own unit. */
        double b = convert(u, m, e, rp[i].before), a = convert(u, m, e, rp[i].after),
               l = convert(u, m, e, rp[i].loo);
        double eb = pct(b, r.measured[i]), ea = pct(a, r.measured[i]), el = pct(l, r.measured[i]);
        add(&ar, eb, ea, el);
        json_array_append_new(
            fit, json_pack("{s:s,s:I,s:s,s:f,s:o,s:o,s:o,s:o,s:o,s:o}", "kind", "run",
                           "index", (json_int_t)i, "unit", measured_keys[u], "measured",
                           r.measured[i], "before", num(b), "after", num(a), "loo", num(l),
                           "error_before_pct", num(eb), "error_after_pct", num(ea),
                           "error_loo_pct", num(el)));
    }
    out = json_pack("{s:o,s:o,s:{s:f,s:f,s:f,s:i,s:s},s:o,s:{s:o,s:o,s:o}}", "system",
                    codec_llm_system_with_cost(codec_llm_system_encode(&res->system), &r.cost),
                    "parameters", params, "objective",
                    "before", res->objective_before, "after", res->objective_after, "lambda",
                    CALIBRATE_LAMBDA, "evaluations", res->evaluations, "stopped",
                    calibrate_stop_names[res->stopped], "fit", fit, "summary",
                    "gemm", acc_encode(&ag, false), "collective", acc_encode(&ac, false), "run",
                    acc_encode(&ar, r.n_runs >= 2));
    if (!out)
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
done:
    request_free(&r);
    free(gp);
    free(cp);
    free(rp);
    free(res);
    return out;
}

const codec_endpoint_t codec_calibrate_endpoint = {"calibrate", "/v1/calibrate", normalize,
                                                   evaluate};

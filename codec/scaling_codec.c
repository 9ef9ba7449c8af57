/* scaling_codec.c — POST /v1/scaling: JSON ⇄ core/scaling for a budget plan (the 2020 calculator,
 * "law":"hf2020", the default) or the Chinchilla law ("law":"chinchilla").
 *
 * hf2020 request: gpu (name or object), amp_mode (default "O0"), exactly one of hours | dollars |
 * width, co2_kg_per_kwh (default 0.534), loss_fit {a,b,c} and param_fit {d,e,f} (default: the
 * calculator's own fits). chinchilla request (Epoch AI's fit, core/scaling/scaling_chinchilla.c):
 * flops (the compute-optimal split of that budget), params alone (the compute-optimal tokens of
 * that model size: the plan's "chinchilla" tokens) or params + tokens (the loss of that pair). Members of the other law are refused by
 * name. The normalized request has every default explicit and the GPU as its full object, so a
 * GPU named or spelled out hashes alike. */
#include "scaling_codec.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "endpoint.h"
#include "json_read.h"

typedef enum { LAW_HF2020 = 0, LAW_CHINCHILLA = 1 } law_t;
static const char *const law_names[] = {"hf2020", "chinchilla", NULL};
static const char *const amp_names[] = {"O0", "O1", "O2", NULL};
static const char *const budget_names[] = {"hours", "dollars", "width"};

static const char *const hf_keys[] = {"law",   "gpu",     "amp_mode", "hours",
                                      "dollars", "width", "co2_kg_per_kwh", "loss_fit",
                                      "param_fit", NULL};
static const char *const chin_keys[] = {"law", "flops", "params", "tokens", NULL};
static const char *const gpu_keys[] = {"k",        "k1",       "k2",         "b",
                                       "c",        "layer_base", "price_per_hour", "power_kw",
                                       "batch_size", NULL};

#define MAX_HOURS 1e9
#define MAX_DOLLARS 1e12
#define MAX_FLOPS 1e40
#define MAX_CHIN_PARAMS 1e16
#define MAX_CHIN_TOKENS 1e18

typedef struct {
    law_t law;
    scaling_plan_request_t plan;
    bool chin_optimal; /* flops given (else params + tokens) */
    double flops, params, tokens;
} request_t;

/* ---- GPU ---- */

int codec_scaling_gpu_decode(const json_t *v, const char *path, scaling_gpu_t *out,
                             fathom_error_t *err)
{
    if (json_is_string(v)) {
        const scaling_gpu_t *g = scaling_gpu_find(json_string_value(v));
        if (!g) {
            char names[512] = "";
            for (size_t i = 0; scaling_gpu_name(i); i++) {
                strncat(names, i ? ", \"" : "\"", sizeof names - strlen(names) - 1);
                strncat(names, scaling_gpu_name(i), sizeof names - strlen(names) - 1);
                strncat(names, "\"", sizeof names - strlen(names) - 1);
            }
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, path,
                                    "\"%.64s\" is not a known GPU (one of %s, or an object)",
                                    json_string_value(v), names);
        }
        *out = *g;
        return 0;
    }
    if (jr_expect_object(v, path, err) || jr_check_keys(v, path, gpu_keys, err))
        return -1;
    scaling_gpu_t g;
    int64_t batch;
    if (jr_positive(v, path, "k", JR_REQUIRED, 0, 1e30, &g.k, err) ||
        jr_positive(v, path, "k1", JR_REQUIRED, 0, 1e3, &g.k1, err) ||
        jr_positive(v, path, "k2", JR_REQUIRED, 0, 1e3, &g.k2, err) ||
        jr_real(v, path, "b", JR_REQUIRED, 0, 0, 10, &g.b, err) ||
        jr_real(v, path, "c", JR_REQUIRED, 0, -10, 10, &g.c, err) ||
        jr_real(v, path, "layer_base", JR_REQUIRED, 0, 0, 1e6, &g.layer_base, err) ||
        jr_real(v, path, "price_per_hour", JR_REQUIRED, 0, 0, 1e6, &g.price_per_hour, err) ||
        jr_real(v, path, "power_kw", JR_REQUIRED, 0, 0, 1e3, &g.power_kw, err) ||
        jr_int(v, path, "batch_size", JR_REQUIRED, 0, 1, 1 << 24, &batch, err))
        return -1;
    g.batch_size = (double)batch;
    *out = g;
    return 0;
}

json_t *codec_scaling_gpu_encode(const scaling_gpu_t *g)
{
    return json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:I}", "k", g->k, "k1", g->k1, "k2", g->k2,
                     "b", g->b, "c", g->c, "layer_base", g->layer_base, "price_per_hour",
                     g->price_per_hour, "power_kw", g->power_kw, "batch_size",
                     (json_int_t)g->batch_size);
}

/* ---- request ---- */

static int decode_fits(const json_t *body, scaling_plan_request_t *p, fathom_error_t *err)
{
    static const char *const loss_keys[] = {"a", "b", "c", NULL};
    static const char *const param_keys[] = {"d", "e", "f", NULL};
    p->loss_fit = scaling_hf2020_loss_fit;
    p->param_fit = scaling_hf2020_param_fit;
    const json_t *lf = json_object_get(body, "loss_fit");
    if (lf && (jr_expect_object(lf, "loss_fit", err) ||
               jr_check_keys(lf, "loss_fit", loss_keys, err) ||
               jr_positive(lf, "loss_fit", "a", JR_REQUIRED, 0, 1e12, &p->loss_fit.a, err) ||
               jr_positive(lf, "loss_fit", "b", JR_REQUIRED, 0, 10, &p->loss_fit.b, err) ||
               jr_real(lf, "loss_fit", "c", JR_REQUIRED, 0, -1e6, 1e6, &p->loss_fit.c, err)))
        return -1;
    const json_t *pf = json_object_get(body, "param_fit");
    if (pf && (jr_expect_object(pf, "param_fit", err) ||
               jr_check_keys(pf, "param_fit", param_keys, err) ||
               jr_positive(pf, "param_fit", "d", JR_REQUIRED, 0, 1e12, &p->param_fit.d, err) ||
               jr_positive(pf, "param_fit", "e", JR_REQUIRED, 0, 10, &p->param_fit.e, err) ||
               jr_real(pf, "param_fit", "f", JR_REQUIRED, 0, -1e15, 1e15, &p->param_fit.f, err)))
        return -1;
    return 0;
}

/* A member of the other law, refused by name rather than as merely unknown. */
static int refuse_foreign(const json_t *body, const char *const *foreign, const char *law,
                          fathom_error_t *err)
{
    for (const char *const *k = foreign; *k; k++)
        if (strcmp(*k, "law") != 0 && jr_has(body, *k))
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, *k,
                                    "is not used with \"law\":\"%s\"", law);
    return 0;
}

static int decode_hf2020(const json_t *body, request_t *r, fathom_error_t *err)
{
    scaling_plan_request_t *p = &r->plan;
    int amp = 0;
    if (refuse_foreign(body, chin_keys, "hf2020", err) || jr_check_keys(body, "", hf_keys, err))
        return -1;
    const json_t *gpu = json_object_get(body, "gpu");
    if (!gpu)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "gpu", "is required");
    if (codec_scaling_gpu_decode(gpu, "gpu", &p->gpu, err) ||
        jr_enum(body, "", "amp_mode", JR_OPTIONAL, 0, amp_names, &amp, err) ||
        jr_real(body, "", "co2_kg_per_kwh", JR_OPTIONAL, SCALING_DEFAULT_CO2_KG_PER_KWH, 0, 10,
                &p->co2_kg_per_kwh, err) ||
        decode_fits(body, p, err))
        return -1;
    p->amp = (scaling_amp_t)amp;

    int found = -1;
    for (int i = 0; i < 3; i++) {
        if (!jr_has(body, budget_names[i]))
            continue;
        if (found >= 0)
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, budget_names[i],
                                    "give only one budget: %s is already given",
                                    budget_names[found]);
        found = i;
    }
    if (found < 0)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "hours",
                                "one budget is required: hours, dollars or width");
    p->budget_kind = (scaling_budget_kind_t)found;
    const double max[] = {MAX_HOURS, MAX_DOLLARS, SCALING_MAX_WIDTH};
    if (jr_positive(body, "", budget_names[found], JR_REQUIRED, 0, max[found], &p->budget, err))
        return -1;
    if (p->budget_kind == SCALING_BUDGET_WIDTH && p->budget < SCALING_MIN_WIDTH)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "width",
                                "must be at least %g (the calculator's smallest width), got %.17g",
                                SCALING_MIN_WIDTH, p->budget);
    if (p->budget_kind == SCALING_BUDGET_DOLLARS && !(p->gpu.price_per_hour > 0.0))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "dollars",
                                "needs a GPU with a price_per_hour above 0");
    return 0;
}

static int decode_chinchilla(const json_t *body, request_t *r, fathom_error_t *err)
{
    if (refuse_foreign(body, hf_keys, "chinchilla", err) ||
        jr_check_keys(body, "", chin_keys, err))
        return -1;
    if (jr_has(body, "flops")) {
        if (jr_has(body, "params") || jr_has(body, "tokens"))
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD,
                                    jr_has(body, "params") ? "params" : "tokens",
                                    "give either flops or params and tokens, not both");
        r->chin_optimal = true;
        return jr_positive(body, "", "flops", JR_REQUIRED, 0, MAX_FLOPS, &r->flops, err);
    }
    if (!jr_has(body, "params") && !jr_has(body, "tokens"))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "flops",
                                "is required (or params, or params and tokens)");
    /* params alone: the compute-optimal tokens of that size */
    r->chin_optimal = !jr_has(body, "tokens");
    return jr_positive(body, "", "params", JR_REQUIRED, 0, MAX_CHIN_PARAMS, &r->params, err) ||
           (!r->chin_optimal &&
            jr_positive(body, "", "tokens", JR_REQUIRED, 0, MAX_CHIN_TOKENS, &r->tokens, err));
}

static int decode(const json_t *body, request_t *r, fathom_error_t *err)
{
    memset(r, 0, sizeof *r);
    int law = 0;
    if (jr_expect_object(body, "", err) ||
        jr_enum(body, "", "law", JR_OPTIONAL, LAW_HF2020, law_names, &law, err))
        return -1;
    r->law = (law_t)law;
    return r->law == LAW_HF2020 ? decode_hf2020(body, r, err) : decode_chinchilla(body, r, err);
}

static json_t *encode_request(const request_t *r)
{
    if (r->law == LAW_CHINCHILLA)
        return r->chin_optimal && r->params <= 0
                   ? json_pack("{s:s,s:f}", "law", "chinchilla", "flops", r->flops)
               : r->chin_optimal
                   ? json_pack("{s:s,s:f}", "law", "chinchilla", "params", r->params)
                   : json_pack("{s:s,s:f,s:f}", "law", "chinchilla", "params", r->params,
                               "tokens", r->tokens);
    const scaling_plan_request_t *p = &r->plan;
    return json_pack("{s:s,s:o,s:s,s:f,s:f,s:{s:f,s:f,s:f},s:{s:f,s:f,s:f}}", "law", "hf2020",
                     "gpu", codec_scaling_gpu_encode(&p->gpu), "amp_mode", amp_names[p->amp],
                     budget_names[p->budget_kind], p->budget, "co2_kg_per_kwh",
                     p->co2_kg_per_kwh, "loss_fit", "a", p->loss_fit.a, "b", p->loss_fit.b, "c",
                     p->loss_fit.c, "param_fit", "d", p->param_fit.d, "e", p->param_fit.e, "f",
                     p->param_fit.f);
}

/* ---- response ---- */

static json_t *encode_plan(const request_t *r, const scaling_plan_t *s)
{
    json_t *warnings = json_array();
    if (!warnings)
        return NULL;
    if (s->below_tip) {
        const char *fmt =
            r->plan.budget_kind == SCALING_BUDGET_WIDTH
                ? "width %.6g is below the tipping width %.6g: a wider model up to that width "
                  "reaches its compute optimum sooner"
                : "the budget is below the tipping point (%.6g h at width %.6g): no model "
                  "reaches its compute optimum that fast; the figures are the tipping point's";
        char msg[256];
        if (r->plan.budget_kind == SCALING_BUDGET_WIDTH)
            snprintf(msg, sizeof msg, fmt, r->plan.budget, s->tip.width);
        else
            snprintf(msg, sizeof msg, fmt, s->tip.hours, s->tip.width);
        json_array_append_new(warnings, json_string(msg));
    }
    return json_pack("{s:s,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:{s:I,s:I},s:{s:I,s:I},"
                     "s:{s:f,s:f},s:o}",
                     "law", "hf2020", "hours", s->hours, "dollars", s->dollars, "kwh", s->kwh,
                     "co2_kg", s->co2_kg, "width", s->width, "model_params", s->model_params,
                     "flos", s->flos, "optimal_params", s->optimal_params, "loss", s->loss,
                     "optimal_shape", "depth", (json_int_t)s->optimal_shape.depth, "width",
                     (json_int_t)s->optimal_shape.width, "alternate_shape", "depth",
                     (json_int_t)s->alternate_shape.depth, "width",
                     (json_int_t)s->alternate_shape.width, "tipping_point", "width", s->tip.width,
                     "hours", s->tip.hours, "warnings", warnings);
}

static json_t *scaling_normalize(const json_t *body, const codec_ctx_t *ctx, fathom_error_t *err)
{
    (void)ctx;
    request_t r;
    if (decode(body, &r, err))
        return NULL;
    json_t *out = encode_request(&r);
    if (!out)
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    return out;
}

static bool all_finite(const double *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return false;
    return true;
}

/* Hoffmann et al. 2022 trained over 400 models of 70 M to 16 B parameters on 5 B to 500 B
 * tokens (the paper's abstract), the runs Besiroglu et al. 2024 refitted: a point outside is an
 * extrapolation, said in "warnings" (strings, as the hf2020 answer's). */
#define CHIN_FIT_PARAMS_LO 70e6
#define CHIN_FIT_PARAMS_HI 16e9
#define CHIN_FIT_TOKENS_LO 5e9
#define CHIN_FIT_TOKENS_HI 500e9

static json_t *chinchilla_warnings(const scaling_chinchilla_point_t *c)
{
    json_t *list = json_array();
    const bool params_out = c->params < CHIN_FIT_PARAMS_LO || c->params > CHIN_FIT_PARAMS_HI;
    const bool tokens_out = c->tokens < CHIN_FIT_TOKENS_LO || c->tokens > CHIN_FIT_TOKENS_HI;
    if (list && (params_out || tokens_out)) {
        char msg[512];
        snprintf(msg, sizeof msg,
                 "%.3g parameters on %.3g tokens is outside the runs the law was fitted on "
                 "(Hoffmann et al. 2022's runs, refitted by Besiroglu et al. 2024: 70 M to 16 B "
                 "parameters, 5 B to 500 B tokens): the loss "
                 "and the compute-optimal split are extrapolated",
                 c->params, c->tokens);
        json_array_append_new(list, json_string(msg));
    }
    return list;
}

static json_t *evaluate_chinchilla(const request_t *r, fathom_error_t *err)
{
    const scaling_chinchilla_t *law = &scaling_chinchilla_law;
    scaling_chinchilla_point_t c =
        !r->chin_optimal ? scaling_chinchilla_loss(law, r->params, r->tokens)
        : r->params > 0  ? scaling_chinchilla_optimal_for_params(law, r->params)
                         : scaling_chinchilla_optimal(law, r->flops);
    /* every figure the answer prints, the ratio too: a subnormal params gives finite points
     * and an infinite tokens per parameter, which JSON cannot carry */
    const double tokens_per_param = c.tokens / c.params;
    const double all[] = {c.flos, c.params, c.tokens, c.loss, tokens_per_param};
    if (!all_finite(all, sizeof all / sizeof all[0])) {
        fathom_error_set(err, FATHOM_E_INVALID_FIELD, r->chin_optimal ? "flops" : "params",
                         "is out of the law's range");
        return NULL;
    }
    return json_pack("{s:s,s:s,s:b,s:f,s:f,s:f,s:f,s:f,s:o}", "law", "chinchilla", "fit",
                     "besiroglu2024", "compute_optimal", r->chin_optimal, "flops", c.flos,
                     "params", c.params, "tokens", c.tokens, "tokens_per_param",
                     tokens_per_param, "loss", c.loss, "warnings", chinchilla_warnings(&c));
}

static json_t *evaluate_hf2020(const request_t *r, fathom_error_t *err)
{
    scaling_plan_t s;
    if (scaling_plan(&r->plan, &s, err))
        return NULL;
    const double all[] = {s.hours, s.dollars, s.kwh, s.co2_kg, s.width, s.model_params,
                          s.flos, s.optimal_params, s.loss, s.tip.width, s.tip.hours};
    if (!all_finite(all, sizeof all / sizeof all[0])) {
        fathom_error_set(err, FATHOM_E_NO_CONVERGENCE, "gpu",
                         "these GPU constants and fits give no finite plan");
        return NULL;
    }
    return encode_plan(r, &s);
}

static json_t *scaling_evaluate(const json_t *normalized, const codec_ctx_t *ctx,
                                fathom_error_t *err)
{
    (void)ctx;
    request_t r;
    if (decode(normalized, &r, err))
        return NULL;
    fathom_error_t local;
    fathom_error_t *e = err ? err : &local;
    fathom_error_clear(e);
    json_t *out = r.law == LAW_CHINCHILLA ? evaluate_chinchilla(&r, e) : evaluate_hf2020(&r, e);
    if (!out && e->code == FATHOM_E_OK)
        fathom_error_set(e, FATHOM_E_INTERNAL, NULL, "out of memory"); /* json_pack failed */
    return out;
}

const codec_endpoint_t codec_scaling_endpoint = {"scaling", "/v1/scaling", scaling_normalize,
                                                 scaling_evaluate};

/* serving_plan.c — the serving plan: for a traffic level (R requests a second of I prompt and O
 * output tokens) and latency targets (TTFT p50/p99, TPOT), each system's cheapest fleet.
 *
 * A layout serves R with n replicas each taking λ = R/n requests a second (Poisson; the
 * estimate solves Little's law for its concurrency and queues prompts for the token budget).
 * Fewer replicas mean more load on each: latencies rise with λ and past the replica's saturated
 * rate it is overloaded. So the fewest replicas meeting the targets are found by search:
 *   1. at no load (one request in flight) the layout must meet the targets at all — else no
 *      replica count will (the reason says which target fails);
 *   2. n starts at ceil(R / saturated rate) (fewer cannot keep up) and doubles until it meets;
 *   3. bisection between the last that failed and the first that met.
 * Disaggregated layouts count their prefill replicas as the estimate sizes them per decode
 * replica, rounded up for the fleet. Cost: GPUs × price per GPU-hour; per million output tokens
 * that over R·O·3600/10^6. */
#include <math.h>
#include <string.h>

#include "serving_internal.h"

static const int64_t degrees[] = {1, 2, 4, 8, 16, 32, 64};
#define SV_DEGREES ((int)(sizeof degrees / sizeof degrees[0]))

/* The formats a plan tries unless told: the model's checkpoint, and from a BF16 checkpoint FP8
 * too on a GPU with an FP8 rate (vLLM's and SGLang's --quantization fp8 quantize BF16 weights as
 * they load them; TensorRT-LLM serves the FP8 checkpoints ModelOpt makes, as NVIDIA publishes for
 * these models). A quantized checkpoint is served as it ships. */
static unsigned default_formats(const fathom_model_t *m, const serving_system_t *s)
{
    unsigned f = 1u << m->checkpoint_weights;
    if (m->checkpoint_weights == MODEL_WEIGHTS_BF16 && s->hw.matrix.rate[LLM_DT_FLOAT8].present)
        f |= 1u << SERVING_DT_FP8;
    return f;
}

/* A request for one layout, without a load. */
static serving_request_t base_request(const serving_plan_spec_t *p, serving_dtype_t w)
{
    serving_request_t r;
    memset(&r, 0, sizeof r);
    r.weights = w;
    r.kv = w == SERVING_DT_FP8 || w == SERVING_DT_FP4 ? SERVING_DT_FP8 : SERVING_DT_BF16;
    r.input_tokens = p->input_tokens;
    r.output_tokens = p->output_tokens;
    r.input_spread = p->input_spread;
    r.output_spread = p->output_spread;
    r.input_low = p->input_low, r.input_high = p->input_high;
    r.output_low = p->output_low, r.output_high = p->output_high;
    r.engine = p->engine;
    r.chunked_prefill = -1;
    r.no_curve = true;
    return r;
}

int64_t serving_plan_max_gpus(const serving_system_t *s, const serving_plan_spec_t *p)
{
    const int64_t node = s->hw.networks[0].size;
    return p->max_gpus > 0 ? p->max_gpus : (node > 8 ? node : 8);
}

int serving_plan_layouts(const fathom_model_t *m, const serving_system_t *s,
                         const serving_plan_spec_t *p, serving_request_t *out, int cap)
{
    const int64_t node = s->hw.networks[0].size;
    const int64_t max_gpus = serving_plan_max_gpus(s, p);
    const unsigned formats = p->datatypes ? p->datatypes : default_formats(m, s);
    const bool agg = p->aggregated || !p->disaggregated, dis = p->disaggregated || !p->aggregated;
    const bool moe = m->moe.num_experts > 0;
    int n = 0;
    for (int w = 0; w < SERVING_DT__COUNT; w++) {
        if (!(formats & (1u << w)))
            continue;
        for (int a = 0; a < SV_DEGREES; a++)
            for (int d = 0; d < (moe ? SV_DEGREES : 1); d++)
                for (int q = 0; q < SV_DEGREES; q++) {
                    const int64_t tp = degrees[a], dp = degrees[d], pp = degrees[q];
                    /* tensor and attention-data parallelism stay inside the first tier (or 8 GPUs) */
                    if (tp * dp * pp > max_gpus || tp * dp > (node > 8 ? node : 8) ||
                        m->attn_heads % tp != 0 || pp > m->num_blocks)
                        continue;
                    for (int e = 0; e < (moe ? 2 : 1); e++) {
                        const int64_t ep = e ? tp * dp : 1;
                        if (e && (ep == 1 || m->moe.num_experts % ep != 0))
                            continue;
                        for (int mode = 0; mode < 2; mode++) {
                            if ((mode == 0 && !agg) || (mode == 1 && !dis))
                                continue;
                            if (n == cap)
                                return n;
                            serving_request_t r = base_request(p, (serving_dtype_t)w);
                            r.layout = (serving_layout_t){tp, pp, ep, dp};
                            if (mode == 1) {
                                r.disaggregated = true;
                                r.prefill_layout = r.layout;
                                r.kv_transfer_net = s->hw.num_networks - 1;
                            }
                            out[n++] = r;
                        }
                    }
                }
    }
    return n;
}

typedef struct {
    bool ok;       /* estimated (fits, not overloaded) */
    bool meets;
    const char *why;
    serving_result_t res;
} trial_t;

static void trial_one(const fathom_model_t *m, const serving_system_t *s,
                      const serving_plan_spec_t *p, serving_request_t *r, trial_t *t, int *evals)
{
    fathom_error_t err;
    (*evals)++;
    t->ok = t->meets = false;
    t->why = "";
    if (serving_estimate(m, s, r, &t->res, &err)) {
        t->why = "the layout cannot run the model";
        return;
    }
    if (!t->res.fits_memory) {
        t->why = "does not fit in memory";
        return;
    }
    if (t->res.warnings & SERVING_WARN_OVERLOADED) {
        t->why = "overloaded";
        return;
    }
    t->ok = true;
    if (p->ttft_p50_s > 0 && !(t->res.ttft_p50_s <= p->ttft_p50_s))
        t->why = "TTFT p50 above the target";
    else if (p->ttft_p99_s > 0 && !(t->res.ttft_p99_s <= p->ttft_p99_s))
        t->why = "TTFT p99 above the target";
    else if (p->tpot_s > 0 && !(t->res.tpot_s <= p->tpot_s))
        t->why = "TPOT above the target";
    else
        t->meets = true;
}

/* One trial at a load; for a disaggregated layout under a rate (the fleet's n decode replicas
 * at r->requests_per_s each), the fewest prefill replicas for the fleet meeting the targets:
 * from what the rate needs (rounded up) to twice that, the queue in the prefill pool counted.
 * *prefill_replicas gets the count (0 aggregated). */
static void trial(const fathom_model_t *m, const serving_system_t *s,
                  const serving_plan_spec_t *p, serving_request_t *r, int64_t n, trial_t *t,
                  int *evals, int64_t *prefill_replicas)
{
    *prefill_replicas = 0;
    r->prefill_per_decode = 0;
    trial_one(m, s, p, r, t, evals);
    if (!r->disaggregated || r->requests_per_s <= 0 || !t->ok)
        return;
    const double g = (double)serving_layout_gpus(&r->prefill_layout);
    const int64_t least = (int64_t)ceil((double)n * t->res.prefill_gpus / g - 1e-9);
    for (int64_t np = least < 1 ? 1 : least; np <= 2 * least + 2; np++) {
        r->prefill_per_decode = (double)np / (double)n;
        trial_one(m, s, p, r, t, evals);
        *prefill_replicas = np;
        if (t->meets || !t->ok)
            return;
    }
}

static void fleet(const serving_system_t *s, const serving_plan_spec_t *p, int64_t n,
                  int64_t prefill_replicas, const trial_t *t, serving_plan_candidate_t *c)
{
    const serving_request_t *r = &c->request;
    c->replicas = n;
    c->prefill_replicas = prefill_replicas;
    c->gpus = (double)(n * serving_layout_gpus(&r->layout));
    if (r->disaggregated)
        c->gpus += (double)c->prefill_replicas * (double)serving_layout_gpus(&r->prefill_layout);
    c->dollars_per_hour = c->gpus * s->price_per_gpu_hour;
    const double out_per_hour = p->requests_per_s * p->output_tokens * 3600.0;
    c->dollars_per_million_output = c->dollars_per_hour / out_per_hour * 1e6;
    c->ttft_p50_s = t->res.ttft_p50_s;
    c->ttft_p99_s = t->res.ttft_p99_s;
    c->tpot_s = t->res.tpot_s;
    c->output_tokens_per_s_per_gpu = p->requests_per_s * p->output_tokens / c->gpus;
}

void serving_plan_candidate(const fathom_model_t *m, const serving_system_t *s, int system,
                            const serving_plan_spec_t *p, const serving_request_t *layout,
                            serving_plan_candidate_t *out)
{
    memset(out, 0, sizeof *out);
    out->system = system;
    out->request = *layout;
    out->reason = "";
    serving_request_t r = *layout;
    trial_t t;
    int64_t np = 0, best_np = 0;
    /* 1. at no load: one request in flight */
    r.concurrency = 1, r.requests_per_s = 0;
    trial(m, s, p, &r, 1, &t, &out->evaluations, &np);
    if (!t.ok) {
        out->reason = t.why;
        return;
    }
    out->fits = true;
    if (!t.meets) {
        /* the least the layout does: latencies only rise with load */
        out->reason = t.why;
        out->ttft_p50_s = t.res.ttft_p50_s;
        out->ttft_p99_s = t.res.ttft_p99_s;
        out->tpot_s = t.res.tpot_s;
        return;
    }
    /* the replica's saturated request rate bounds the replicas from below */
    r.concurrency = 0;
    trial(m, s, p, &r, 1, &t, &out->evaluations, &np);
    const double sat = t.ok ? t.res.requests_per_s : 0;
    if (!(sat > 0)) {
        out->reason = "no throughput at saturation";
        return;
    }
    /* 2. doubling from the fewest that can keep up */
    int64_t lo = 0, hi = (int64_t)ceil(p->requests_per_s / sat - 1e-9);
    if (hi < 1)
        hi = 1;
    trial_t best;
    double best_x = 0;
    for (;;) {
        r.requests_per_s = p->requests_per_s / (double)hi;
        trial(m, s, p, &r, hi, &t, &out->evaluations, &np);
        if (t.meets)
            break;
        lo = hi;
        if (hi > ((int64_t)1 << 40)) {
            out->reason = t.why;
            return;
        }
        hi *= 2;
    }
    best = t, best_np = np, best_x = r.prefill_per_decode;
    /* 3. bisection: lo fails (or is 0), hi meets */
    while (hi - lo > 1) {
        const int64_t mid = lo + (hi - lo) / 2;
        r.requests_per_s = p->requests_per_s / (double)mid;
        trial(m, s, p, &r, mid, &t, &out->evaluations, &np);
        if (t.meets)
            hi = mid, best = t, best_np = np, best_x = r.prefill_per_decode;
        else
            lo = mid;
    }
    r.requests_per_s = p->requests_per_s / (double)hi;
    r.prefill_per_decode = best_x;
    r.no_curve = false; /* the request as /v1/inference takes it */
    out->request = r;
    out->meets = true;
    fleet(s, p, hi, best_np, &best, out);
}

void serving_plan_select(serving_plan_candidate_t *c, int n, int num_systems, int *best)
{
    for (int k = 0; k < num_systems; k++)
        best[k] = -1;
    for (int i = 0; i < n; i++) {
        c[i].pareto = false;
        if (!c[i].meets)
            continue;
        const int k = c[i].system;
        if (k >= 0 && k < num_systems &&
            (best[k] < 0 || c[i].dollars_per_hour < c[best[k]].dollars_per_hour ||
             (c[i].dollars_per_hour == c[best[k]].dollars_per_hour &&
              c[i].tpot_s < c[best[k]].tpot_s)))
            best[k] = i;
        bool dominated = false;
        for (int j = 0; j < n && !dominated; j++)
            dominated = j != i && c[j].meets && c[j].dollars_per_hour <= c[i].dollars_per_hour &&
                        c[j].tpot_s <= c[i].tpot_s &&
                        (c[j].dollars_per_hour < c[i].dollars_per_hour || c[j].tpot_s < c[i].tpot_s);
        c[i].pareto = !dominated;
    }
}

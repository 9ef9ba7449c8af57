/* serving_model.c — one serving configuration under load: how many requests a replica holds,
 * the mean step under continuous batching, TTFT and TPOT, throughput per GPU and per user, the
 * throughput–interactivity curve, disaggregated prefill and decode, dollars and joules per token.
 *
 * Continuous batching in steady state (every request alike: I prompt tokens, O output tokens; a
 * fraction h of the prompt found in the prefix cache, I' = I·(1 − h) computed). A request spends
 * k_pre steps in prefill (1 without chunking; ceil(I'/chunk) with it) and then (O − 1)/τ decode
 * steps, τ the tokens a sequence gains per step (1, or with speculative decoding of k drafts
 * accepted each with probability α, τ = (1 − α^(k+1))/(1 − α); Leviathan et al. 2023, eq. 1). Of
 * the C requests a replica holds, a step therefore carries (per attention rank and micro-batch,
 * n = C/(dp·pp) of them)
 *   decode sequences  n·((O − 1)/τ)/L,   prompt tokens  n·I'/L,   L = k_pre + (O − 1)/τ,
 * each decode sequence attending to I + O/2 tokens on average. With the mean step t (slowest
 * stage; serving_step.c) and pp stages taking turns:
 *   TPOT = pp·(t + t_draft)/τ
 *   output tokens/s per replica = C·O / (L·pp·(t + t_draft))
 *   TTFT = k_pre·pp·t_p + pp·t/2 + W   (t_p: the step that carries the prompt's chunk; a prompt
 *          waits half a step for the next one to start; W: queueing, below)
 * Load: a concurrency, or a request rate λ solved by Little's law (C = λ·(TTFT + (O − 1)·TPOT),
 * bisection on C; beyond the largest C the replica holds it is overloaded), or neither: as many
 * as fit (an offline benchmark); with num_requests, a finite run of that many requests, at once
 * or at requests_per_s, followed step by step (serving_offline.c). Queueing for prompt-token budget at rate λ: utilisation
 * ρ = (prompt tokens a step must take)/(budget left after decode tokens); an M/D/1 queue with
 * service s = pp·t_p·I'/budget waits W = ρ·s/(2(1 − ρ)) on average (Pollaczek–Khinchine), and
 * P(wait > x) ≈ ρ·exp(−x·ρ/W), so p50 and p99 at (W/ρ)·ln(ρ/0.5) and (W/ρ)·ln(ρ/0.01). A p99
 * prompt is I + 2.326·σ_I long (normal spread).
 *
 * How many requests fit: the KV pool (engine fraction of memory, serving_engine.c) over one
 * request's KV cache on the busiest stage, at I + O tokens for TensorRT-LLM (its
 * GUARANTEED_NO_EVICT scheduler reserves a request's whole length, in blocks of 32 tokens) and
 * I + O/2 + σ_O²/(2·O) for vLLM and SGLang (pages allocated as tokens arrive; the mean
 * occupancy of a slot, serving__settings), times the
 * attention ranks; at most max_batch_size per micro-batch; and at most what the token budget
 * sustains, C_r·(((O − 1)/τ)·t_s + I')/L ≤ max_batch_tokens (memory_for; a disaggregated
 * decode replica's steps without the prompt). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "serving_internal.h"

const char *const serving_warning_codes[] = {
    "weight_only_dequant", "overloaded",     "concurrency_capped", "kv_replicated",
    "few_requests_fit",    "no_fp4_rate",    "prompt_over_budget", "weights_over_memory",
    "no_request_fits",     NULL};
const char *const serving_warning_messages[] = {
    "the weight format has no tensor-core rate on this GPU: weights are dequantized into 16-bit "
    "GEMMs (weight-only), so the memory saving holds and the FLOP rate is the 16-bit one",
    "the request rate is beyond what one replica serves: the figures are at the most it holds",
    "the concurrency asked is beyond what fits (KV cache, max_batch_size or the token budget): "
    "the figures are at max_concurrency",
    "tensor_par is beyond the KV heads (or the model uses MLA): every rank keeps a copy of the "
    "KV cache; attention_data_par would keep one",
    "fewer than 8 requests fit in the KV cache: throughput is far from what the GPUs can do",
    "fp4 weights on a GPU without an FP4 tensor rate: run weight-only (dequantized)",
    "chunked prefill is off and the prompt is longer than max_batch_tokens: the engine must take "
    "it in one step anyway (TensorRT-LLM refuses such prompts)",
    "the weights and workspace of the busiest GPU exceed its memory (memory.weights_bytes, "
    "memory.capacity_bytes): split the model over more GPUs (tensor_par, pipeline_par, "
    "expert_par) or store it in a smaller weights_datatype",
    "the weights fit, but not one request's KV cache beside them (memory.kv_bytes_per_request "
    "against memory.kv_capacity_bytes): more GPUs per replica, a smaller kv_datatype or shorter "
    "requests",
    NULL};

static double tokens_per_step(const serving_spec_t *sp)
{
    if (sp->method == SERVING_SPEC_NONE)
        return 1;
    const double a = sp->acceptance, k = (double)sp->tokens;
    if (a >= 1)
        return k + 1;
    return (1 - pow(a, k + 1)) / (1 - a);
}

static int check_request(const fathom_model_t *m, const serving_system_t *s,
                         const serving_request_t *r, fathom_error_t *err)
{
    if (!(r->input_tokens >= 1 && r->input_tokens <= SERVING_MAX_TOKENS))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "serving.input_tokens",
                                "must be in [1, %g]", SERVING_MAX_TOKENS);
    if (!(r->output_tokens >= 1 && r->output_tokens <= SERVING_MAX_TOKENS))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "serving.output_tokens",
                                "must be in [1, %g]", SERVING_MAX_TOKENS);
    if (!(r->input_spread >= 0) || !(r->output_spread >= 0))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD,
                                r->input_spread >= 0 ? "serving.output_tokens.spread"
                                                     : "serving.input_tokens.spread",
                                "must be >= 0");
    if (r->concurrency > 0 && r->requests_per_s > 0)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "serving.requests_per_s",
                                "give concurrency or requests_per_s, not both");
    if (r->num_requests > 0 && r->concurrency > 0)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "serving.num_requests",
                                "a finite run takes requests_per_s or nothing, not concurrency");
    if (!(r->num_requests >= 0 && r->num_requests <= SERVING_MAX_REQUESTS))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "serving.num_requests",
                                "must be in [0, %g]", SERVING_MAX_REQUESTS);
    if (r->num_requests != floor(r->num_requests))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "serving.num_requests",
                                "must be an integer (a count of requests)");
    const char *refusal = model_weights_refusal(m, (model_weights_t)r->weights);
    if (refusal)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "serving.weights_datatype", "%s",
                                refusal);
    if (!(r->prefix_cache_hit >= 0 && r->prefix_cache_hit < 1))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "serving.prefix_cache_hit",
                                "must be in [0, 1)");
    const serving_spec_t *sp = &r->speculative;
    if (sp->method != SERVING_SPEC_NONE) {
        if (sp->tokens < 1 || sp->tokens > SERVING_MAX_SPEC_TOKENS)
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "serving.speculative.tokens",
                                    "must be in [1, %d]", SERVING_MAX_SPEC_TOKENS);
        if (!(sp->acceptance >= 0 && sp->acceptance <= 1))
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD,
                                    "serving.speculative.acceptance", "must be in [0, 1]");
        if (sp->method == SERVING_SPEC_MTP && m->mtp_blocks < 1)
            return fathom_error_set(err, FATHOM_E_INFEASIBLE_EXECUTION,
                                    "serving.speculative.method",
                                    "mtp needs a model with multi-token-prediction blocks "
                                    "(model.mtp_blocks); use draft");
        if (sp->method == SERVING_SPEC_DRAFT && !sp->draft)
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "serving.speculative.model",
                                    "is required with method draft");
    }
    if (r->disaggregated &&
        (r->kv_transfer_net < 0 || r->kv_transfer_net >= s->hw.num_networks))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD,
                                "serving.disaggregated.kv_transfer_net",
                                "must index one of the system's %d network tiers",
                                s->hw.num_networks);
    if (!(r->prefill_per_decode >= 0 && r->prefill_per_decode <= 1e6))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD,
                                "serving.disaggregated.prefill_per_decode", "must be in [0, 1e6]");
    if (r->kv_memory_fraction < 0 || r->kv_memory_fraction > 1)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "serving.kv_memory_fraction",
                                "must be in (0, 1]");
    return 0;
}

void serving__settings(const sv_ctx_t *c, const serving_request_t *r, sv_settings_t *st)
{
    serving_engine_defaults_t d;
    serving_engine_defaults(r->engine, c->m, c->s, &c->l, &d);
    st->max_batch_tokens = r->max_batch_tokens > 0 ? r->max_batch_tokens : d.max_batch_tokens;
    st->max_batch_size = r->max_batch_size > 0 ? r->max_batch_size : d.max_batch_size;
    st->chunked = r->chunked_prefill >= 0 ? r->chunked_prefill == 1 : d.chunked_prefill;
    st->kv_fraction = r->kv_memory_fraction > 0 ? r->kv_memory_fraction : d.kv_memory_fraction;
    st->tau = tokens_per_step(&r->speculative);
    st->tps = r->speculative.method == SERVING_SPEC_NONE ? 1 : (double)r->speculative.tokens + 1;
    st->prefix = r->input_tokens * r->prefix_cache_hit;
    st->in_eff = r->input_tokens - st->prefix;
    /* A decode slot's sequence, over time: a request of O output tokens holds its slot O steps,
     * at I + 1 … I + O tokens, so the slots hold long outputs in proportion to their length
     * (length-biased sampling, the inspection paradox): E[I·O + O²/2]/E[O] = I + E[O²]/(2·E[O])
     * = I + O/2 + σ_O²/(2·O) with O the mean and σ_O the spread of the outputs (independent of
     * the prompts). With no spread, I + O/2. */
    st->decode_context = r->input_tokens + r->output_tokens / 2 +
                         r->output_spread * r->output_spread / (2 * r->output_tokens);
    /* paged engines hold what their sequences hold; TensorRT-LLM reserves each request's whole
     * length in its 32-token blocks up front */
    const double full = r->input_tokens + r->output_tokens;
    st->reserve_tokens = r->engine == SERVING_ENGINE_TRTLLM ? 32.0 * ceil(full / 32.0)
                                                            : st->decode_context;
}

/* KV pool and requests that fit, per attention rank (the busiest stage binds). */
static void memory_for(const sv_ctx_t *c, const sv_settings_t *st, serving_result_t *o)
{
    const double cap = c->s->hw.mem1.gib * 1073741824.0;
    const bool mtp = c->r->speculative.method == SERVING_SPEC_MTP;
    double worst_w = 0, worst_ws = 0, worst_pool = INFINITY, fit = INFINITY;
    const double ws = serving__workspace_bytes(c, st->max_batch_tokens, st->max_batch_size);
    /* A draft model lives where its time is costed (serving__draft_ctx): on the GPUs of the
     * target's last stage (beside the sampler, as the MTP depth), split as the target's stage
     * and not pipelined; it holds its weights there and its own KV cache for every request:
     *   W_draft = serving__weight_bytes of its one stage, KV_draft = its cache at the request's
     *   reserved tokens. */
    double draft_w = 0, draft_kv = 0;
    sv_draft_t d;
    if (c->r->speculative.method == SERVING_SPEC_DRAFT && !serving__draft_ctx(c, &d, NULL)) {
        draft_w = serving__weight_bytes(&d.c, &d.c.stages[0]);
        draft_kv = serving__kv_request_bytes(&d.c, &d.c.stages[0], st->reserve_tokens);
    }
    for (int i = 0; i < c->num_stages; i++) {
        const sv_stage_t *sg = &c->stages[i];
        double w = serving__weight_bytes(c, sg);
        double per_req = serving__kv_request_bytes(c, sg, st->reserve_tokens);
        if (mtp && sg->last) /* the MTP depth lives on the last stage, with its own cache */
            per_req += c->kv_block_token * (double)c->m->mtp_blocks * st->reserve_tokens,
                w += c->bpw * (double)c->m->mtp_blocks *
                     (model_block_params(c->m, model_block_is_moe(c->m, c->m->num_blocks - 1))
                          .split /
                      c->tp);
        if (sg->last)
            w += draft_w, per_req += draft_kv;
        double pool;
        switch (c->engine) {
        case SERVING_ENGINE_VLLM:
            pool = st->kv_fraction * cap - w - ws;
            break;
        case SERVING_ENGINE_SGLANG:
            pool = st->kv_fraction * cap - w;
            break;
        default:
            pool = st->kv_fraction * (cap - w - ws);
            break;
        }
        pool = sv_max(pool, 0);
        if (w > worst_w)
            worst_w = w, worst_ws = ws;
        worst_pool = sv_min(worst_pool, pool);
        fit = sv_min(fit, per_req > 0 ? floor(pool / per_req) : INFINITY);
    }
    o->weight_bytes = worst_w;
    o->workspace_bytes = worst_ws;
    o->kv_capacity_bytes = worst_pool;
    o->capacity_bytes = cap;
    o->fits_memory = worst_w + worst_ws <= cap && fit >= 1;
    if (worst_w + worst_ws > cap)
        o->warnings |= SERVING_WARN_WEIGHTS_OVER_MEMORY;
    else if (fit < 1)
        o->warnings |= SERVING_WARN_NO_REQUEST_FITS;
    /* requests per attention rank: KV, the batch cap (per micro-batch), the token budget. The
     * budget sustains C requests whose tokens over their L steps fit it a step:
     * C·(dec·tps + I′)/L ≤ max_batch_tokens, L = k + dec, k the prompt's steps (1 whole; at
     * least ceil(I′/max_batch_tokens) in chunks — counted as 1, a 20,000-token prompt under
     * vLLM's 8,192 with one or two output tokens did not fit at all). A disaggregated decode
     * replica runs no prompt: its steps carry the decode tokens alone (the prompt counted, its
     * requests had been bounded by tokens it never takes: Llama 3.1 8B at 20,000 in, 100 out
     * held 40, where the KV pool holds 93). */
    const serving_request_t *r = c->r;
    const double dec = (r->output_tokens - 1) / st->tau;
    const double B = (double)st->max_batch_tokens;
    const double k_pre = r->disaggregated ? 0 : st->chunked ? ceil(st->in_eff / B) : 1;
    const double work = dec * st->tps + (r->disaggregated ? 0 : st->in_eff);
    const double budget_fit = work > 0 ? B * (k_pre + dec) / work : INFINITY;
    double per_rank = sv_min(fit, (double)st->max_batch_size * c->pp);
    if (st->chunked || c->r->disaggregated)
        per_rank = sv_min(per_rank, floor(budget_fit * c->pp));
    else
        per_rank = sv_min(per_rank, floor(sv_max(budget_fit, 1) * c->pp));
    o->max_concurrency = sv_max(per_rank, 0) * c->dp;
}

int serving__draft_ctx(const sv_ctx_t *c, sv_draft_t *d, fathom_error_t *err)
{
    const serving_spec_t *sp = &c->r->speculative;
    d->m = sp->method == SERVING_SPEC_DRAFT ? *sp->draft : *c->m;
    if (sp->method == SERVING_SPEC_MTP) {
        const bool moe = model_block_is_moe(c->m, c->m->num_blocks - 1);
        d->m.num_blocks = c->m->mtp_blocks;
        d->m.moe.first_dense_blocks = 0;
        if (!moe)
            d->m.moe.num_experts = 0;
    }
    d->m.mtp_blocks = 0;
    d->r = *c->r;
    d->r.speculative.method = SERVING_SPEC_NONE;
    d->r.disaggregated = false;
    d->r.layout = c->l;
    d->r.layout.pipeline_par = 1;
    if (d->m.moe.num_experts == 0)
        d->r.layout.expert_par = 1;
    return serving__ctx_init(&d->c, &d->m, c->s, &d->r, &d->r.layout, err);
}

/* The step of a draft model (or the MTP depths) for n decode sequences, k times. */
double serving__draft_time(const sv_ctx_t *c, const sv_settings_t *st, double n, double context)
{
    const serving_spec_t *sp = &c->r->speculative;
    if (sp->method == SERVING_SPEC_NONE || n <= 0)
        return 0;
    sv_draft_t d;
    if (serving__draft_ctx(c, &d, NULL))
        return 0; /* refused before (serving_estimate checks the draft's split) */
    sv_load_t ld = {n, 1, context, 0, 0, 0, 0};
    serving_step_t s;
    serving__step(&d.c, &ld, &s);
    (void)st;
    return (double)sp->tokens * s.total_s;
}

/* A prompt of `computed` tokens after `prefix` cached ones, taken at most `chunk` a step: k =
 * ceil(computed/chunk) steps of computed/k tokens (the engine's last chunk is the short one; the
 * same tokens in all). Attention is causal: the prompt's token at position p attends to p
 * tokens, so averaged over its tokens, chunked or not, a token attends to prefix +
 * (computed + 1)/2, and a chunk reads the KV cache of prefix + (computed − computed/k)/2 earlier
 * tokens on average (chunk j of k: prefix + j·computed/k). The prompt finishes (its first token
 * sampled) in one of the k steps. k of these steps cost what the prompt's chunks cost, its
 * attention FLOPs the whole prompt's; priced at the first chunk's context instead, a 100,000-
 * token prompt in 8,192-token chunks came out 3.5 times faster than the same prompt whole. */
typedef struct {
    double k, tokens, context, earlier, finishing;
} sv_chunks_t;

static sv_chunks_t prompt_chunks(double prefix, double computed, double chunk)
{
    sv_chunks_t ch;
    ch.k = ceil(computed / sv_max(chunk, 1));
    ch.tokens = computed / ch.k;
    ch.context = prefix + (computed + 1) / 2;
    ch.earlier = prefix + (computed - ch.tokens) / 2;
    ch.finishing = 1 / ch.k;
    return ch;
}

/* One operating point at concurrency C (aggregated, or the decode side when disaggregated). */
typedef struct {
    double C, L_steps, k_pre, chunk;
    serving_step_t mean, decode_only, prefill;
    double t_draft, tpot, ttft_base, out_rate, step_s, budget_left, pre_tokens;
    double out_per_request; /* output tokens a request makes (a finite run's: its lengths' mean) */
    double in_per_request;  /* and its prompt tokens */
} sv_point_t;

/* out = (1 − f)·a + f·b, line by line (the bound: b's where f > 1/2). */
static void step_mix(const serving_step_t *a, const serving_step_t *b, double f,
                     serving_step_t *out)
{
    const double g = 1 - f;
#define SV_MIX(x) out->x = g * a->x + f * b->x
    SV_MIX(tokens);
    SV_MIX(gemm_s);
    SV_MIX(weights_read_s);
    SV_MIX(gemm_compute_s);
    SV_MIX(attention_s);
    SV_MIX(kv_read_s);
    SV_MIX(attention_compute_s);
    SV_MIX(elementwise_s);
    SV_MIX(moe_experts_s);
    SV_MIX(tp_collectives_s);
    SV_MIX(moe_dispatch_s);
    SV_MIX(pp_transfer_s);
    SV_MIX(host_s);
    SV_MIX(total_s);
    SV_MIX(weight_bytes);
    SV_MIX(kv_bytes);
    SV_MIX(flops);
#undef SV_MIX
    out->bound = f > 0.5 ? b->bound : a->bound;
}

static void point_at(const sv_ctx_t *c, const sv_settings_t *st, double C, sv_point_t *p)
{
    const serving_request_t *r = c->r;
    const double n = C / (c->dp * c->pp);
    const double dec = (r->output_tokens - 1) / st->tau;
    const double ctx = st->decode_context;
    memset(p, 0, sizeof *p);
    p->C = C;
    if (r->disaggregated) {
        p->k_pre = 0;
        p->L_steps = sv_max(dec, 1e-9);
        sv_load_t ld = {n, st->tps, ctx, 0, 0, 0, 0};
        serving__step(c, &ld, &p->mean);
        p->decode_only = p->mean;
        p->t_draft = serving__draft_time(c, st, n, ctx);
        p->step_s = p->mean.total_s + p->t_draft;
        p->tpot = c->pp * p->step_s / st->tau;
        p->out_rate = C * (r->output_tokens - 1) / (p->L_steps * c->pp * p->step_s);
        return;
    }
    /* prompt chunking: the budget left after the decode tokens of a step */
    const double dec_tokens0 = n * st->tps;
    p->chunk = st->chunked ? sv_max(1, (double)st->max_batch_tokens - dec_tokens0) : st->in_eff;
    const sv_chunks_t ch = prompt_chunks(st->prefix, st->in_eff, p->chunk);
    p->k_pre = ch.k;
    p->L_steps = p->k_pre + dec;
    const double seqs = n * dec / p->L_steps;
    p->pre_tokens = n * st->in_eff / p->L_steps;
    /* Prompt work does not ride on every step: a share f of the steps carries it (the prompt
     * tokens a step must take over what one step holds — a whole prompt without chunking, a
     * chunk with it), the others are decode alone (replayed CUDA graphs):
     *   f = min(1, (n/L)) without chunking, min(1, (n·I'/L)/chunk) with it;
     *   mean step = (1 − f)·t(decode) + f·t(decode + prompt tokens/f). */
    const double prompts = n / p->L_steps;
    const double f = sv_min(1, st->chunked ? p->pre_tokens / sv_max(p->chunk, 1) : prompts);
    sv_load_t only = {seqs, st->tps, ctx, 0, 0, 0, 0};
    serving__step(c, &only, &p->decode_only);
    serving_step_t with;
    sv_load_t ld = {seqs,
                    st->tps,
                    ctx,
                    p->pre_tokens / f,
                    ch.context,
                    n * ch.k * ch.earlier / p->L_steps / f,
                    prompts / f};
    serving__step(c, &ld, &with);
    step_mix(&p->decode_only, &with, f, &p->mean);
    /* the step carrying one of the prompt's chunks (at their mean position) */
    sv_load_t pre = {seqs, st->tps, ctx, ch.tokens, ch.context, ch.earlier, ch.finishing};
    serving__step(c, &pre, &p->prefill);
    p->t_draft = serving__draft_time(c, st, seqs, ctx);
    p->step_s = p->mean.total_s + p->t_draft;
    p->tpot = c->pp * p->step_s / st->tau;
    p->ttft_base = p->k_pre * c->pp * (p->prefill.total_s + p->t_draft) + c->pp * p->step_s / 2;
    p->out_rate = C * r->output_tokens / (p->L_steps * c->pp * p->step_s);
    p->budget_left = sv_max(1, (double)st->max_batch_tokens - seqs * st->tps);
}

/* Queueing for the prompt-token budget at arrival rate lambda (per replica). */
static void queue_wait(const sv_ctx_t *c, const sv_settings_t *st, const sv_point_t *p,
                       double lambda, double *mean, double *p50, double *p99)
{
    *mean = *p50 = *p99 = 0;
    if (lambda <= 0 || c->r->disaggregated)
        return;
    const double per_rank = lambda / c->dp;
    const double rho = per_rank * st->in_eff * c->pp * p->step_s / (c->pp * p->budget_left);
    if (rho <= 0)
        return;
    if (rho >= 1) {
        *mean = *p50 = *p99 = INFINITY;
        return;
    }
    const double s = c->pp * p->prefill.total_s * sv_min(1, st->in_eff / p->budget_left);
    const double W = rho * s / (2 * (1 - rho));
    *mean = W;
    *p50 = rho > 0.5 ? W / rho * log(rho / 0.5) : 0;
    *p99 = rho > 0.01 ? W / rho * log(rho / 0.01) : 0;
}

/* Prefill seconds of a prompt of `tokens` beside the point's decode batch (TTFT's first term). */
static double prefill_latency(const sv_ctx_t *c, const sv_settings_t *st, const sv_point_t *p,
                              double tokens)
{
    const serving_request_t *r = c->r;
    const double computed = tokens * (1 - r->prefix_cache_hit), prefix = tokens - computed;
    const sv_chunks_t ch = prompt_chunks(prefix, computed, st->chunked ? p->chunk : computed);
    const double seqs = p->C / (c->dp * c->pp) * ((r->output_tokens - 1) / st->tau) /
                        sv_max(p->L_steps, 1e-9);
    sv_load_t ld = {r->disaggregated ? 0 : seqs, st->tps, st->decode_context,
                    ch.tokens, ch.context, ch.earlier, ch.finishing};
    serving_step_t s;
    serving__step(c, &ld, &s);
    return ch.k * c->pp * s.total_s;
}

/* The prompt a request at the 99th percentile of the spread brings: I + 2.326·σ_I (a normal
 * spread's 99th percentile), or low + 0.99·(high − low) for uniform lengths. */
static double p99_prompt(const serving_request_t *r)
{
    if (r->input_high > 0)
        return r->input_low + 0.99 * (r->input_high - r->input_low);
    return r->input_tokens + 2.326 * r->input_spread;
}

/* The disaggregated prefill side: a prefill replica's prompt rate and one prompt's latency, at
 * the mean prompt and at the p99 one (TTFT's p99 takes the p99 prompt's own steps and KV
 * transfer, as the aggregated replica's does through prefill_latency). */
typedef struct {
    double rate, latency, gpus, kv_transfer_s, step_s;
    double latency99, kv_transfer99_s; /* of the p99 prompt (the mean's without a spread) */
    serving_step_t step;
} sv_prefill_side_t;

/* One prompt of `tokens` alone on a prefill replica (its share `hit` found in the prefix cache):
 * chunks of at most the budget, a step each, on each of its pp stages in turn. */
static double pool_prompt_latency(const sv_ctx_t *pc, double budget, double tokens, double hit,
                                  serving_step_t *step)
{
    const double prefix = tokens * hit, computed = tokens - prefix;
    const sv_chunks_t ch = prompt_chunks(prefix, computed, budget);
    sv_load_t one = {0, 1, 0, ch.tokens, ch.context, ch.earlier, ch.finishing};
    serving__step(pc, &one, step);
    return ch.k * pc->pp * step->total_s;
}

/* The KV cache of a prompt of `tokens` crossing tier kv_transfer_net, every GPU of the smaller
 * replica sending its share in parallel: latency + bytes/(links·bandwidth·efficiency). */
static double kv_transfer_time(const fathom_model_t *m, const serving_system_t *s,
                               const serving_request_t *r, double links, double tokens)
{
    const llm_network_t *n = &s->hw.networks[r->kv_transfer_net];
    const double bytes = serving_kv_bytes(m, r->kv, tokens, false);
    return n->latency_s + bytes / (links * n->bandwidth_gbps * 1e9 * n->efficiency);
}

static int prefill_side(const fathom_model_t *m, const serving_system_t *s,
                        const serving_request_t *r, const sv_settings_t *st,
                        sv_prefill_side_t *ps, fathom_error_t *err)
{
    sv_ctx_t pc;
    if (serving__ctx_init(&pc, m, s, r, &r->prefill_layout, err))
        return -1;
    sv_settings_t pst;
    serving__settings(&pc, r, &pst);
    const double budget = (double)pst.max_batch_tokens;
    const sv_chunks_t ch = prompt_chunks(st->prefix, st->in_eff, budget);
    ps->latency = pool_prompt_latency(&pc, budget, r->input_tokens, r->prefix_cache_hit,
                                      &ps->step);
    /* throughput: full steps of `budget` prompt tokens on every attention rank (whole prompts
     * or chunks of them) */
    sv_load_t full = {0, 1, 0, budget, ch.context, ch.earlier * budget / ch.tokens,
                      budget / st->in_eff};
    serving_step_t fs;
    serving__step(&pc, &full, &fs);
    ps->step_s = fs.total_s;
    ps->rate = budget * pc.dp / (st->in_eff * fs.total_s);
    ps->gpus = (double)serving_layout_gpus(&r->prefill_layout);
    const double links = sv_min(ps->gpus, (double)serving_layout_gpus(&r->layout));
    ps->kv_transfer_s = kv_transfer_time(m, s, r, links, r->input_tokens);
    ps->latency99 = ps->latency, ps->kv_transfer99_s = ps->kv_transfer_s;
    const double p99_in = p99_prompt(r);
    if (p99_in > r->input_tokens) {
        serving_step_t s99;
        ps->latency99 = pool_prompt_latency(&pc, budget, p99_in, r->prefix_cache_hit, &s99);
        ps->kv_transfer99_s = kv_transfer_time(m, s, r, links, p99_in);
    }
    return 0;
}

/* Latency and rate of the point at concurrency C with arrivals lambda (0: closed loop). */
typedef struct {
    double ttft, ttft50, ttft99, tpot, rate_out, lifetime;
} sv_latency_t;

static void latency_at(const sv_ctx_t *c, const sv_settings_t *st, const sv_point_t *p,
                       const sv_prefill_side_t *ps, double lambda, sv_latency_t *lt)
{
    const serving_request_t *r = c->r;
    double W, W50, W99;
    queue_wait(c, st, p, lambda, &W, &W50, &W99);
    const double p99_in = p99_prompt(r);
    lt->tpot = p->tpot;
    if (r->disaggregated) {
        /* the prefill pool: x replicas per decode replica take its lambda prompts a second at
         * x·rate; an M/D/1 queue with service 1/(x·rate) (as above) when x is given */
        double Wp = 0, Wp50 = 0, Wp99 = 0;
        const double x = r->prefill_per_decode;
        if (x > 0 && lambda > 0) {
            const double rho = lambda / (x * ps->rate), svc = 1 / (x * ps->rate);
            if (rho >= 1) {
                Wp = Wp50 = Wp99 = INFINITY;
            } else if (rho > 0) {
                Wp = rho * svc / (2 * (1 - rho));
                Wp50 = rho > 0.5 ? Wp / rho * log(rho / 0.5) : 0;
                Wp99 = rho > 0.01 ? Wp / rho * log(rho / 0.01) : 0;
            }
        }
        /* the prompt's own steps and KV transfer, then half a decode step to join the batch;
         * the p99 request brings the p99 prompt and waits the whole step (as aggregated) */
        const double base = ps->latency + ps->kv_transfer_s + c->pp * p->step_s / 2;
        const double base99 = ps->latency99 + ps->kv_transfer99_s + c->pp * p->step_s / 2;
        lt->ttft = base + Wp;
        lt->ttft50 = base + Wp50;
        lt->ttft99 = base99 + c->pp * p->step_s / 2 + Wp99;
    } else {
        lt->ttft = p->ttft_base + W;
        lt->ttft50 = p->ttft_base + W50;
        /* the draft's steps ride on every prefill step, as in ttft_base */
        lt->ttft99 = (p99_in > r->input_tokens ? prefill_latency(c, st, p, p99_in)
                                               : p->k_pre * c->pp * p->prefill.total_s) +
                     p->k_pre * c->pp * p->t_draft + c->pp * p->step_s + W99;
    }
    lt->lifetime = lt->ttft + (r->output_tokens - 1) * lt->tpot;
    lt->rate_out = p->out_rate;
}

/* Little's law: the concurrency at which a replica completes lambda requests a second (queue:
 * the arrivals queue for the prompt budget or the prefill pool at lambda; false: they do not). */
static double solve_concurrency(const sv_ctx_t *c, const sv_settings_t *st,
                                const sv_prefill_side_t *ps, double lambda, bool queue,
                                double cmax, bool *overloaded)
{
    sv_point_t p;
    sv_latency_t lt;
    const double q = queue ? lambda : 0;
    point_at(c, st, cmax, &p);
    latency_at(c, st, &p, ps, q, &lt);
    const double out_rate_max = p.out_rate / c->r->output_tokens;
    if (lambda >= out_rate_max || lambda * lt.lifetime >= cmax) {
        *overloaded = true;
        return cmax;
    }
    double lo = sv_min(1e-6, cmax), hi = cmax;
    for (int i = 0; i < 60 && hi - lo > 1e-6 * hi; i++) {
        const double mid = 0.5 * (lo + hi);
        point_at(c, st, mid, &p);
        latency_at(c, st, &p, ps, q, &lt);
        if (lambda * lt.lifetime > mid)
            lo = mid;
        else
            hi = mid;
    }
    *overloaded = false;
    return hi;
}

/* A decode replica holding C requests, fed by a prefill pool that passes at most `pool`
 * requests a second (prefill_per_decode given; INFINITY when the pool is sized to the rate):
 * when the decode side at C would finish requests faster than the pool feeds them, it is served
 * at the pool's rate holding only C_d = pool · lifetime requests (Little's law, solved as
 * solve_concurrency does without queueing), and true is returned with *Cd. False (*Cd = C) when
 * the pool does not bind, or the decode side could not reach its rate. */
static bool pool_binds(const sv_ctx_t *c, const sv_settings_t *st, const sv_prefill_side_t *ps,
                       double pool, double C, double *Cd)
{
    *Cd = C;
    if (!(pool < INFINITY))
        return false;
    sv_point_t q;
    point_at(c, st, C, &q);
    if (!(q.out_rate / c->r->output_tokens > pool))
        return false;
    bool decode_bound = false;
    const double held = solve_concurrency(c, st, ps, pool, false, C, &decode_bound);
    if (decode_bound || !(held < C))
        return false;
    *Cd = held;
    return true;
}

static void fill_curve(const sv_ctx_t *c, const sv_settings_t *st, const sv_prefill_side_t *ps,
                       double pool, double gpus, serving_result_t *o)
{
    const double cmax = o->max_concurrency;
    o->num_curve = 0;
    if (cmax < 1)
        return;
    const int n = (int)sv_min(SERVING_CURVE_POINTS, 1 + floor(log2(cmax)) + 1);
    double last = 0;
    for (int i = 0; i < n; i++) {
        double C = n == 1 ? cmax : floor(pow(cmax, (double)i / (double)(n - 1)) + 0.5);
        C = sv_max(1, sv_min(C, cmax));
        if (C <= last)
            continue;
        last = C;
        /* each point a closed loop of C requests; a given prefill pool (its GPUs fixed at
         * prefill_per_decode replicas) may bind, the others waiting in its queue as at the
         * operating point: (C − C_d)/pool more TTFT */
        double Cd;
        const bool bound = pool_binds(c, st, ps, pool, C, &Cd);
        sv_point_t p;
        sv_latency_t lt;
        point_at(c, st, Cd, &p);
        latency_at(c, st, &p, ps, 0, &lt);
        serving_curve_point_t *cp = &o->curve[o->num_curve++];
        cp->concurrency = C;
        const double rate = bound ? pool : p.out_rate / c->r->output_tokens;
        const double g = !c->r->disaggregated ? gpus
                         : pool < INFINITY
                             ? (double)serving_layout_gpus(&c->l) +
                                   c->r->prefill_per_decode * ps->gpus
                             : (double)serving_layout_gpus(&c->l) + rate / ps->rate * ps->gpus;
        cp->output_tokens_per_s_per_gpu = rate * c->r->output_tokens / g;
        cp->output_tokens_per_s_per_user = 1 / lt.tpot;
        cp->ttft_s = lt.ttft + (bound ? (C - Cd) / pool : 0);
        cp->tpot_s = lt.tpot;
    }
}

static void money_and_energy(const serving_system_t *s, double f_in, double gpus_in,
                             double gpus_out, double in_rate, double out_rate,
                             serving_result_t *o)
{
    /* time share: aggregated replicas split their GPU-seconds between the prompt work (f_in of
     * each step) and the decode work; disaggregated ones by pool */
    const double in_gpu = gpus_in + f_in * gpus_out, out_gpu = (1 - f_in) * gpus_out;
    if (s->price_per_gpu_hour > 0) {
        const double per_s = s->price_per_gpu_hour / 3600.0;
        o->dollars_per_million_input = in_rate > 0 ? in_gpu * per_s / in_rate * 1e6 : 0;
        o->dollars_per_million_output = out_rate > 0 ? out_gpu * per_s / out_rate * 1e6 : 0;
    }
    if (s->power_per_gpu_kw > 0) {
        const double w = s->power_per_gpu_kw * 1000.0;
        o->joules_per_input_token = in_rate > 0 ? in_gpu * w / in_rate : 0;
        o->joules_per_output_token = out_rate > 0 ? out_gpu * w / out_rate : 0;
    }
}

/* What the layout and the engine's settings decide before any load: batch limits, kernels, the
 * KV cache a request holds, and the warnings that follow from them alone. */
static void settings_answers(const sv_ctx_t *c, const sv_settings_t *st, const fathom_model_t *m,
                             const serving_request_t *r, serving_result_t *o)
{
    o->max_batch_tokens = st->max_batch_tokens;
    o->max_batch_size = st->max_batch_size;
    o->chunked_prefill = st->chunked;
    o->kv_memory_fraction = st->kv_fraction;
    o->prefill_kernel = serving__attention_kernel(c, false);
    o->decode_kernel = serving__attention_kernel(c, true);
    const double full = r->input_tokens + r->output_tokens;
    /* what the engine holds, as its pool is sized (serving__kv_window) */
    o->kv_bytes_per_request = serving__kv_bytes(m, r->kv, full,
                                                r->speculative.method == SERVING_SPEC_MTP,
                                                c->kv_window);
    o->kv_cache_bytes_per_token = o->kv_bytes_per_request / full;
    if (c->weight_only)
        o->warnings |= r->weights == SERVING_DT_FP4 ? SERVING_WARN_NO_FP4_RATE
                                                    : SERVING_WARN_WEIGHT_ONLY;
    if (c->kv_replicated)
        o->warnings |= SERVING_WARN_KV_REPLICATED;
    if (!st->chunked && !r->disaggregated && r->input_tokens > (double)st->max_batch_tokens)
        o->warnings |= SERVING_WARN_LONG_PREFILL;
}

/* A draft model must split as the target does: its refusal names serving.speculative.model and
 * says which of the draft's dimensions the target's layout cannot divide. */
static int check_draft(const sv_ctx_t *c, const serving_request_t *r, fathom_error_t *err)
{
    if (r->speculative.method != SERVING_SPEC_DRAFT)
        return 0;
    sv_draft_t d;
    if (!serving__draft_ctx(c, &d, err))
        return 0;
    char why[FATHOM_ERROR_MESSAGE_MAX], what[FATHOM_ERROR_FIELD_MAX];
    snprintf(why, sizeof why, "%s", err->message);
    const size_t pre = strncmp(err->field, "serving.", 8) == 0 ? 8 : 0;
    snprintf(what, sizeof what, "%s", err->field + pre);
    return fathom_error_set(err, FATHOM_E_INFEASIBLE_EXECUTION, "serving.speculative.model",
                            "the draft runs on the target's GPUs, split as the target "
                            "(not pipelined): its %s %s", what, why);
}

/* The load a replica runs at: the requests it holds (C), the concurrency asked, and, when a
 * given prefill pool binds, the pool's rate and the wait a closed loop adds in its queue. */
typedef struct {
    double C, C_asked;
    double pool, pool_rate, pool_wait;
    bool overloaded;
} sv_operating_t;

static void operating_load(const sv_ctx_t *c, const sv_settings_t *st,
                           const sv_prefill_side_t *ps, const serving_request_t *r,
                           serving_result_t *o, sv_operating_t *l)
{
    memset(l, 0, sizeof *l);
    l->C = o->max_concurrency;
    /* Disaggregated with prefill_per_decode x given, the prefill pool passes at most
     *   pool = x · R_p   requests a second per decode replica (R_p: one prefill replica's
     * prompts a second, prefill_side), so no more than that is served. Arrivals at or beyond it
     * overload the pool (its queue grows without bound: figures with no queue, as an
     * overloaded aggregated replica's); a load the decode side alone would serve faster
     * (saturation, a concurrency) is served at the pool's rate, the decode replica holding
     * C_d = pool · lifetime requests (Little's law), and a closed loop's other C − C_d requests
     * wait in the pool's queue, (C − C_d)/pool more TTFT (Little's law on the queue). */
    l->pool = r->disaggregated && r->prefill_per_decode > 0 ? r->prefill_per_decode * ps->rate
                                                            : INFINITY;
    if (r->concurrency > 0) {
        l->C = sv_min(r->concurrency, o->max_concurrency);
        if (r->concurrency > o->max_concurrency)
            o->warnings |= SERVING_WARN_CONCURRENCY_CAPPED;
    } else if (r->requests_per_s >= l->pool) {
        l->overloaded = true;
    } else if (r->requests_per_s > 0) {
        l->C = solve_concurrency(c, st, ps, r->requests_per_s, true, o->max_concurrency,
                                 &l->overloaded);
    }
    if (l->overloaded)
        o->warnings |= SERVING_WARN_OVERLOADED;
    l->C_asked = l->C;
    double Cd;
    if ((r->requests_per_s <= 0 || l->overloaded) && pool_binds(c, st, ps, l->pool, l->C, &Cd)) {
        l->pool_rate = l->pool;
        l->pool_wait = r->concurrency > 0 ? (l->C - Cd) / l->pool : 0;
        l->C = Cd;
    }
}

/* The steps and latencies at that load: a steady state, or a finite run (num_requests) as it
 * went, its makespan setting the rate (N · O / makespan, and N / makespan requests a second;
 * O the mean of the lengths its requests made) and its requests the latency. lambda is the
 * request rate served (0: what the point gives). */
static int latency_of_load(const sv_ctx_t *c, const sv_settings_t *st,
                           const sv_prefill_side_t *ps, const serving_request_t *r,
                           const serving_result_t *o, sv_operating_t *l, sv_point_t *p,
                           sv_latency_t *lt, double *lambda, bool *finite, fathom_error_t *err)
{
    sv_offline_t off = {0};
    const bool offline = r->num_requests > 0 && r->concurrency <= 0 && !r->disaggregated;
    if (offline) {
        if (serving__offline(c, st, o->max_concurrency, r->num_requests, r->requests_per_s,
                             &off, err))
            return -1;
        if (off.makespan_s > 0)
            l->C = off.mean_concurrency;
    }
    point_at(c, st, l->C, p);
    *finite = offline && off.makespan_s > 0;
    p->out_per_request = *finite ? off.output_per_request : r->output_tokens;
    p->in_per_request = *finite ? off.input_per_request : r->input_tokens;
    *lambda = r->requests_per_s > 0 && !l->overloaded ? r->requests_per_s : 0;
    latency_at(c, st, p, ps, *finite ? 0 : *lambda, lt);
    if (l->pool_rate > 0) {
        *lambda = l->pool_rate;
        lt->ttft += l->pool_wait, lt->ttft50 += l->pool_wait, lt->ttft99 += l->pool_wait;
    }
    if (*finite) {
        p->out_rate = r->num_requests * off.output_per_request / off.makespan_s;
        *lambda = r->num_requests / off.makespan_s;
        lt->ttft = off.ttft_s;
        lt->ttft50 = off.ttft_p50_s;
        lt->ttft99 = off.ttft_p99_s;
        lt->tpot = off.tpot_s > 0 ? off.tpot_s : lt->tpot;
    }
    return 0;
}

/* The answer's rates, GPUs, dollars and joules at the point. */
static int point_answers(const serving_system_t *s, const serving_request_t *r,
                         const sv_prefill_side_t *ps, const sv_operating_t *l, const sv_point_t *p,
                         const sv_latency_t *lt, double lambda, bool finite, serving_result_t *o,
                         fathom_error_t *err)
{
    o->saturated = l->overloaded || (r->concurrency <= 0 && r->requests_per_s <= 0);
    o->concurrency = r->concurrency > 0 ? l->C_asked : l->C;
    o->requests_per_s = lambda > 0 ? lambda : p->out_rate / r->output_tokens;
    /* a steady state serves no more than arrives (an overloaded replica: what it holds) */
    if (r->requests_per_s > 0 && !finite)
        o->requests_per_s = sv_min(o->requests_per_s, r->requests_per_s);
    o->decode = p->decode_only;
    o->prefill = r->disaggregated ? ps->step : p->prefill;
    /* A rate the system states near 0 (an efficiency or a peak of 1e-300) passes every range
     * check and makes a step of 1e297 s, whose token rate underflows to 0 and whose dollars and
     * joules per token are then not finite (answered as null, "no price"). As the training
     * estimate does (llm_estimate), a step beyond LLM_MAX_STEP_S (10^12 s, 31,700 years) is
     * refused naming the system. */
    if (!(o->decode.total_s <= LLM_MAX_STEP_S) || !(o->prefill.total_s <= LLM_MAX_STEP_S))
        return fathom_error_set(err, FATHOM_E_INFEASIBLE_EXECUTION, "system",
                                "gives a %s step of %g s, more than 1e12 s: a rate, bandwidth or "
                                "efficiency of the system is too close to 0",
                                o->decode.total_s <= LLM_MAX_STEP_S ? "prefill" : "decode",
                                o->decode.total_s <= LLM_MAX_STEP_S ? o->prefill.total_s
                                                                    : o->decode.total_s);
    o->ttft_s = lt->ttft;
    o->ttft_p50_s = lt->ttft50;
    o->ttft_p99_s = lt->ttft99;
    o->tpot_s = lt->tpot;
    o->output_tokens_per_s = o->requests_per_s * p->out_per_request;
    o->prefill_gpus = !r->disaggregated             ? 0
                      : r->prefill_per_decode > 0 ? r->prefill_per_decode * ps->gpus
                                                  : o->requests_per_s / ps->rate * ps->gpus;
    o->gpus = o->decode_gpus + o->prefill_gpus;
    o->kv_transfer_s = ps->kv_transfer_s;
    o->output_tokens_per_s_per_gpu = o->output_tokens_per_s / o->gpus;
    o->output_tokens_per_s_per_user = 1 / lt->tpot;
    o->input_tokens_per_s_per_gpu = o->requests_per_s * p->in_per_request / o->gpus;
    const double f_in =
        r->disaggregated ? 0 : sv_max(0, 1 - p->decode_only.total_s / p->mean.total_s);
    money_and_energy(s, f_in, o->prefill_gpus, o->decode_gpus,
                     o->requests_per_s * p->in_per_request, o->output_tokens_per_s, o);
    return 0;
}

int serving_estimate(const fathom_model_t *m, const serving_system_t *s,
                     const serving_request_t *r, serving_result_t *o, fathom_error_t *err)
{
    memset(o, 0, sizeof *o);
    if (check_request(m, s, r, err))
        return -1;
    sv_ctx_t c;
    if (serving__ctx_init(&c, m, s, r, &r->layout, err))
        return -1;
    sv_settings_t st;
    serving__settings(&c, r, &st);
    settings_answers(&c, &st, m, r, o);
    if (check_draft(&c, r, err))
        return -1;
    memory_for(&c, &st, o);
    sv_prefill_side_t ps = {0};
    if (r->disaggregated && prefill_side(m, s, r, &st, &ps, err))
        return -1;
    o->decode_gpus = (double)serving_layout_gpus(&r->layout);
    if (!o->fits_memory || o->max_concurrency < 1) {
        o->fits_memory = false;
        return 0;
    }
    if (o->max_concurrency < 8)
        o->warnings |= SERVING_WARN_LOW_KV;
    o->tokens_per_step = st.tau;

    sv_operating_t load;
    operating_load(&c, &st, &ps, r, o, &load);
    sv_point_t p;
    sv_latency_t lt;
    double lambda;
    bool finite;
    if (latency_of_load(&c, &st, &ps, r, o, &load, &p, &lt, &lambda, &finite, err) ||
        point_answers(s, r, &ps, &load, &p, &lt, lambda, finite, o, err))
        return -1;
    if (!r->no_curve)
        fill_curve(&c, &st, &ps, load.pool, o->decode_gpus, o);
    return 0;
}

/* serving_offline.c — a finite benchmark as the tools run it: num_requests requests, their
 * prompts and outputs as long as the dataset's spreads make them (serving__length_at_rank),
 * queued at t = 0 (trtllm-bench throughput, vLLM's benchmark_throughput) or sent at a request
 * rate λ (Triton's and vLLM's serving benchmarks: Poisson arrivals, request i at i/λ on average —
 * the mean of the sum of i exponential gaps of mean 1/λ), served step by step by continuous
 * batching until the last one finishes; throughput = num_requests · O / makespan (O the mean of
 * the lengths made), the makespan from the first arrival to the last token (how those tools time
 * a run).
 *
 * A finite run at a rate is not the steady state: it cannot hold more than num_requests (an
 * overloaded steady state would grow its queue without bound), and its makespan is the arrival
 * span (N − 1)/λ plus the last request's own time (TTFT + (O − 1) · TPOT), so at N = 500,
 * λ = 32/s and 2 s of generation the rate is 500 · O / 17.6 s, not 32 · O.
 *
 * A steady state is never reached when the batch holds a third or half of the requests: the run
 * starts with every slot in prefill (the token budget admits max_batch_tokens of prompt a step,
 * less the decode tokens) and ends with a shrinking batch. The loop follows that:
 *   1. admission: up to max_concurrency requests run (the KV cache and batch limits), first come
 *      first served (TensorRT-LLM's GUARANTEED_NO_EVICT and vLLM's and SGLang's FCFS alike);
 *   2. a step takes every decode sequence (t_s tokens each) and prompt tokens up to the budget,
 *      whole prompts without chunked prefill (the engine's rule), chunks with it;
 *   3. its time is serving_step's for that load, per attention rank and micro-batch (the totals
 *      over dp·pp), times pp (a micro-batch crosses every stage);
 *   4. a prompt's last step emits its first token; each decode step τ more; a request of its
 *      O tokens leaves, freeing its slot.
 * Requests alike move in cohorts (those admitted and finished together), so the loop costs one
 * step per event; runs of pure decode steps between events are taken at once, their step costed
 * at the middle context. At most SV_COHORTS cohorts are kept (the two nearest in what they have
 * left to produce merge beyond that: 48 move the validation rows' estimates by at most 0.6 % from
 * 512).
 *
 * TTFT percentiles: the run knows when each cohort's requests got their first token, so the
 * p-th percentile is the TTFT of the request at rank ceil(p·N) (1-based) when the N requests
 * are ordered by TTFT, a cohort's n requests counted at its TTFT (the mean's approximation).
 * Queued at once with room for one request at a time, request i waits for the i − 1 before it:
 * TTFT_i = (i − 1)·L + TTFT_1 (L one request's lifetime), so the p99 of N = 10 is request 10's,
 * 9·L + TTFT_1, and the mean 4.5·L + TTFT_1 (unit test `finite_ttft_percentiles`). */
#include <gsl/gsl_cdf.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "serving_internal.h"

#define SV_COHORTS 48
/* Events followed at most: SV_BASE_STEPS plus SV_STEPS_PER_REQUEST a request, enough for a run
 * of requests taken one at a time (a prompt step and a run of decode steps each) at the largest
 * num_requests; a run that needs more (millions of prompt chunks of one token) is refused. */
#define SV_BASE_STEPS 2000000.0
#define SV_STEPS_PER_REQUEST 4.0

typedef struct {
    double n;       /* requests */
    double done;    /* prompt tokens computed (prefill) */
    double decoded; /* output tokens produced; < 0: still in prefill */
    double first;   /* time of the first token (sum over the cohort's requests / n) */
    double arrive;  /* mean arrival time of the cohort's requests */
    double out;     /* output tokens each produces (its group's length; the mean in prefill) */
    double prompt;  /* prompt tokens each has (its group's length) */
    double cached;  /* of which found in the prefix cache (prompt · prefix_cache_hit) */
} cohort_t;

/* The prompt tokens a cohort's requests compute (those not in the prefix cache). */
static double to_compute(const cohort_t *x)
{
    return x->prompt - x->cached;
}

typedef struct {
    cohort_t c[SV_COHORTS];
    int n;
} cohorts_t;

static void push(cohorts_t *cs, cohort_t x)
{
    if (cs->n == SV_COHORTS) {
        /* merge the two decode cohorts nearest in what they have left to produce (they
         * finish together; with one length of output, the two nearest in progress) */
        int best = -1;
        double gap = INFINITY;
        for (int i = 0; i + 1 < cs->n; i++) {
            const cohort_t *a = &cs->c[i], *b = &cs->c[i + 1];
            const double d = fabs((a->out - b->out) - (a->decoded - b->decoded));
            if (a->decoded >= 0 && b->decoded >= 0 && d < gap)
                gap = d, best = i;
        }
        if (best < 0)
            best = cs->n - 2;
        cohort_t *a = &cs->c[best], *b = &cs->c[best + 1];
        const double n = a->n + b->n;
        a->decoded = (a->decoded * a->n + b->decoded * b->n) / n;
        a->done = (a->done * a->n + b->done * b->n) / n;
        a->first = (a->first * a->n + b->first * b->n) / n;
        a->arrive = (a->arrive * a->n + b->arrive * b->n) / n;
        if (a->out != b->out)
            a->out = (a->out * a->n + b->out * b->n) / n;
        if (a->prompt != b->prompt) {
            a->prompt = (a->prompt * a->n + b->prompt * b->n) / n;
            a->cached = (a->cached * a->n + b->cached * b->n) / n;
        }
        a->n = n;
        memmove(b, b + 1, (size_t)(cs->n - best - 2) * sizeof *b);
        cs->n--;
    }
    cs->c[cs->n++] = x;
}

/* A finite run's lengths. A benchmark draws each request's prompt and output lengths from its
 * dataset (vLLM's and SGLang's random datasets, trtllm-bench's token-norm-dist with a stdev),
 * and a run of N requests ends with its longest output, decoding in a shrinking batch after the
 * others have left: the run is longer, and its rate lower, than N requests of the mean make it.
 * The N requests take the N lengths of the normal distribution of the mean and spread σ at the
 * plotting positions (r + ½)/N, r = 0 … N − 1 (Hazen's, the quantiles a sample of N stands for):
 *   len_r = mean + σ · Φ⁻¹((r + ½)/N),   at least one token.
 * The positions are symmetric about ½, so the lengths average the mean (none at the floor), and
 * the longest, Φ⁻¹(1 − ½/N), is the expected largest of N draws to within a few percent of σ
 * (N = 500: 3.09·σ above the mean against 3.04·σ, Blom's Φ⁻¹((N − 0.375)/(N + 0.25))).
 * Uniform lengths between low and high (a benchmark's random dataset) take the uniform's
 * quantiles at the same positions: len_r = low + (high − low)·(r + ½)/N. */
double serving__length_at_rank(const serving_lengths_t *l, double rank, double n)
{
    if (l->high > 0)
        return l->low + (l->high - l->low) * (rank + 0.5) / n;
    if (!(l->spread > 0))
        return l->mean;
    return fmax(1, l->mean + l->spread * gsl_cdf_ugaussian_Pinv((rank + 0.5) / n));
}

/* j with its base-b digits (`digits` of them) reversed: consecutive j spread over [0, b^digits)
 * as evenly as their count allows (van der Corput's sequence in base b; bases 2 and 3 together
 * are Halton's, whose two coordinates are as independent as two draws). */
static uint64_t digits_reversed(uint64_t j, unsigned base, int digits)
{
    uint64_t r = 0;
    for (int i = 0; i < digits; i++, j /= base)
        r = r * base + j % base;
    return r;
}

/* The lengths of one kind (prompts or outputs) dealt to the requests in turn: the next rank is
 * the next of the reversed-digit sequence below base^digits that falls under N, so that any run
 * of consecutive requests spans the lengths as a shuffled dataset does; prompts deal in base 3
 * and outputs in base 2, so a request's prompt and output ranks are independent (Halton). */
typedef struct {
    serving_lengths_t lengths;
    double made; /* the tokens dealt so far */
    uint64_t cursor;
    unsigned base;
    int digits;
} dealer_t;

static dealer_t dealer(serving_lengths_t l, unsigned base, double num_requests)
{
    dealer_t d = {l, 0, 0, base, 0};
    while (d.digits < 40 && pow(base, d.digits) < num_requests)
        d.digits++;
    return d;
}

static void drop(cohorts_t *cs, int i)
{
    memmove(&cs->c[i], &cs->c[i + 1], (size_t)(cs->n - i - 1) * sizeof cs->c[0]);
    cs->n--;
}

/* Seconds of one replica step carrying these totals (pre_earlier: the tokens before the prompt
 * pieces taken, cached or computed in earlier chunks, whose KV the step reads). */
static double step_time(const sv_ctx_t *c, const sv_settings_t *st, double gen, double ctx,
                        double pre_tokens, double pre_context, double pre_earlier,
                        double pre_seqs)
{
    const double per = c->dp * c->pp;
    sv_load_t ld = {gen / per,         st->tps,  ctx, pre_tokens / per, pre_context,
                    pre_earlier / per, pre_seqs / per};
    serving_step_t s;
    serving__step(c, &ld, &s);
    return c->pp * (s.total_s + serving__draft_time(c, st, gen / per, ctx));
}

/* Whether no admitted prompt can take a token this step while sequences decode: the budget left
 * after the decode tokens (`left`) is under one token, or, without chunked prefill, under every
 * remaining prompt (a whole prompt or nothing). Nothing changes until a decode cohort finishes
 * and frees budget, so those steps are pure decode and are taken at once (a prompt beyond the
 * budget waits for the batch to drain: one step each would be O steps per request). */
static bool prompts_stalled(const cohorts_t *cs, const sv_settings_t *st, double left)
{
    bool decoding = false;
    double rem_min = INFINITY;
    for (int i = 0; i < cs->n; i++) {
        if (cs->c[i].decoded >= 0)
            decoding = true;
        else
            rem_min = fmin(rem_min, to_compute(&cs->c[i]) - cs->c[i].done);
    }
    if (!decoding)
        return false; /* an idle engine runs a prompt beyond the budget alone */
    return left < 1 || (!st->chunked && left < rem_min);
}

/* Requests arrived by time t: request i (0-based) at i/λ; λ = 0: all at t = 0. */
static double arrived_by(double t, double rate, double num_requests)
{
    return rate > 0 ? fmin(num_requests, floor(t * rate + 1e-9) + 1) : num_requests;
}

/* n requests that got their first token ttft seconds after they arrived. */
typedef struct {
    double ttft, n;
} first_t;

/* The run as the loop follows it: the cohorts (two buffers: a prefill step builds the next list
 * in the other and the two swap), the running sums and every cohort's first token. */
typedef struct {
    cohorts_t buf[2];
    cohorts_t *cur, *nxt;
    double admitted, running, t, area, ttft_sum, tpot_sum, steps;
    double step_start; /* when the step that ended at t began (t after an idle wait) */
    double tpot_n;     /* requests of more than one output token (those with a TPOT) */
    double num_requests, cache_hit;
    /* prompt lengths are dealt as requests are admitted, output lengths as their prompts
     * finish (first come, first served: both in the order the requests arrived) */
    dealer_t prompts, outputs;
    double *lengths; /* one cohort's lengths, being grouped */
    size_t cap_lengths;
    first_t *firsts;
    size_t num_firsts, cap_firsts;
    bool no_memory;
} run_t;

static void record_first(run_t *u, double n, double ttft)
{
    u->ttft_sum += n * ttft;
    if (u->num_firsts == u->cap_firsts) {
        const size_t cap = u->cap_firsts ? 2 * u->cap_firsts : 64;
        first_t *f = realloc(u->firsts, cap * sizeof *f);
        if (!f) {
            u->no_memory = true;
            return;
        }
        u->firsts = f, u->cap_firsts = cap;
    }
    u->firsts[u->num_firsts++] = (first_t){ttft, n};
}

static int by_ttft(const void *a, const void *b)
{
    const double x = ((const first_t *)a)->ttft, y = ((const first_t *)b)->ttft;
    return (x > y) - (x < y);
}

/* The TTFT of the request at rank ceil(q·N) (1-based) of firsts sorted by TTFT. */
static double ttft_at_rank(const first_t *f, size_t k, double N, double q)
{
    const double rank = ceil(q * N - 1e-9);
    double seen = 0;
    for (size_t i = 0; i < k; i++) {
        seen += f[i].n;
        if (seen >= rank - 1e-9)
            return f[i].ttft;
    }
    return k ? f[k - 1].ttft : 0;
}

/* The mean arrival time of the `admit` requests admitted now (indices admitted … admitted +
 * admit − 1). Request i arrives at i/λ, except one that arrived during the step just ended
 * (step_start, t]: Poisson arrivals fall anywhere in the step, so it waited half the step on
 * average (a uniform arrival's wait for the step's end), and is counted at the step's middle.
 * Taken at i/λ, its wait was the distance from i/λ to the next step boundary, which aliases
 * with the rate: a higher rate could put every arrival just before a boundary and give a
 * shorter TTFT (up to 10 % at 128 in, 2,048 out; test_serving_properties.py). The requests that
 * waited longer queued through whole steps and keep i/λ. */
static double mean_arrival(const run_t *u, double admit, double rate, double num_requests)
{
    const double a0 = u->admitted, end = a0 + admit;
    const double recent0 = fmax(a0, fmin(end, arrived_by(u->step_start, rate, num_requests)));
    const double older = recent0 - a0; /* indices a0 … recent0 − 1 */
    const double sum = older * (a0 + recent0 - 1) / 2 / rate +
                       (end - recent0) * (u->step_start + u->t) / 2;
    return sum / admit;
}

static int ascending(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* k requests that move together, as groups of the lengths dealt them (d): with no spread one
 * group of the mean; otherwise each takes the next rank (serving__length_at_rank) and they
 * split, shortest first, into groups of similar length: from each end of the sorted lengths
 * groups of 1, 1, 2, 4, … requests (the tails kept fine, the longest request on its own), each
 * at its mean length. Returns the number of groups (0: out of memory, said in u). */
#define SV_MAX_GROUPS 128
typedef struct {
    double n, len;
} group_t;

static int dealt_groups(run_t *u, dealer_t *d, double k, group_t g[SV_MAX_GROUPS])
{
    const size_t n = (size_t)llround(k);
    if (!(d->lengths.spread > 0) || n < 1) { /* (k is a whole number of requests: admissions are) */
        g[0] = (group_t){k, d->lengths.mean};
        return 1;
    }
    if (n > u->cap_lengths) {
        double *l = realloc(u->lengths, n * sizeof *l);
        if (!l) {
            u->no_memory = true;
            return 0;
        }
        u->lengths = l, u->cap_lengths = n;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t r;
        do
            r = digits_reversed(d->cursor++, d->base, d->digits);
        while ((double)r >= u->num_requests);
        u->lengths[i] = serving__length_at_rank(&d->lengths, (double)r, u->num_requests);
        d->made += u->lengths[i];
    }
    qsort(u->lengths, n, sizeof *u->lengths, ascending);
    /* group sizes, taken in turn from the short end and the long end: 1, 1, 2, 4, … (at most
     * 2·(log2 n + 2) groups); in ascending order the short end's, then the long end's reversed */
    size_t sizes[SV_MAX_GROUPS], upper[SV_MAX_GROUPS / 2], ns = 0, nu = 0, left = n, size = 1;
    for (int taken = 0; left > 0; taken++) {
        size_t s = size < left ? size : left;
        sizes[ns++] = s, left -= s;
        if (left > 0) {
            s = size < left ? size : left;
            upper[nu++] = s, left -= s;
        }
        if (taken >= 1)
            size *= 2;
    }
    while (nu > 0)
        sizes[ns++] = upper[--nu];
    size_t start = 0;
    for (size_t j = 0; j < ns; j++) {
        double sum = 0;
        for (size_t i = start; i < start + sizes[j]; i++)
            sum += u->lengths[i];
        g[j] = (group_t){(double)sizes[j], sum / (double)sizes[j]};
        start += sizes[j];
    }
    return (int)ns;
}

/* 1. Admission of the requests that have arrived by t, up to max_concurrency running; an idle
 * engine waits for the next. Returns how many have arrived and still wait. */
static double admit_arrivals(run_t *u, double max_concurrency, double num_requests, double rate)
{
    double waiting = arrived_by(u->t, rate, num_requests) - u->admitted;
    if (u->cur->n == 0 && waiting < 1 && rate > 0) {
        u->t = fmax(u->t, u->admitted / rate);
        u->step_start = u->t; /* the engine was idle: no step to wait for */
        waiting = arrived_by(u->t, rate, num_requests) - u->admitted;
    }
    const double admit = fmin(waiting, floor(max_concurrency - u->running + 1e-9));
    if (admit >= 1 || (admit > 0 && u->admitted + admit >= num_requests)) {
        const double arrive = rate > 0 ? mean_arrival(u, admit, rate, num_requests) : 0;
        group_t g[SV_MAX_GROUPS];
        const int ng = dealt_groups(u, &u->prompts, admit, g);
        for (int j = 0; j < ng; j++)
            push(u->cur, (cohort_t){g[j].n, 0, -1, 0, arrive, u->outputs.lengths.mean, g[j].len,
                                    g[j].len * u->cache_hit});
        u->admitted += admit;
        waiting -= admit;
        u->running += admit;
    }
    return waiting;
}

/* A run of m pure decode steps from context ctx: each costed at the run's middle context. */
static double decode_run_step(const sv_ctx_t *c, const sv_settings_t *st, double gen, double ctx,
                              double m)
{
    return step_time(c, st, gen, ctx + (m - 1) * st->tau / 2, 0, 0, 0, 0);
}

/* Whether m pure decode steps of dt each reach `gap` seconds. */
static bool reaches(double m, double dt, double gap)
{
    return m >= gap / dt - 1e-9;
}

/* How many pure decode steps to take at once, and their step time *dt (decode_run_step): `cap`
 * (the next cohort finishing; INFINITY: none decodes) or, when the next arrival `gap` seconds
 * away comes first, the fewest steps that reach it. The run must be counted with the step it is
 * costed at, since the step grows with the context: a count from the first step's time
 * overshoots an arrival by m · (the growth), seconds of TTFT at a low rate (runs of hundreds of
 * steps between arrivals). m · dt(m) rises with m; u = ceil(gap / dt(1)) reaches the arrival
 * (dt(u) ≥ dt(1)), and ceil(gap / dt(u)) does not pass the fewest m* that do (dt(m*) ≤ dt(u)):
 * the bracket, a step or two wide, is bisected. Two to four step times a run, so a finite run
 * of a million requests stays a few seconds. */
static double decode_steps_until(const sv_ctx_t *c, const sv_settings_t *st, double gen,
                                 double ctx, double cap, double gap, double *dt)
{
    if (!(gap < INFINITY)) {
        *dt = decode_run_step(c, st, gen, ctx, cap);
        return cap;
    }
    double hi = fmax(1, ceil(gap / decode_run_step(c, st, gen, ctx, 1) - 1e-9));
    if (cap <= hi) { /* the cohort may come first */
        *dt = decode_run_step(c, st, gen, ctx, cap);
        if (!reaches(cap, *dt, gap))
            return cap;
        hi = cap;
    } else {
        *dt = decode_run_step(c, st, gen, ctx, hi);
    }
    double lo = fmax(0, ceil(gap / *dt - 1e-9) - 1); /* does not reach (0: none) */
    while (hi - lo > 1) {
        const double mid = floor((lo + hi) / 2), d = decode_run_step(c, st, gen, ctx, mid);
        if (reaches(mid, d, gap)) {
            hi = mid;
            *dt = d;
        } else {
            lo = mid;
        }
    }
    return hi;
}

/* 2–3 without prompts: pure decode until the next cohort finishes (or the next arrival, at
 * next_arrival), the steps taken at once and costed at their middle context. */
static void decode_until_event(const sv_ctx_t *c, const sv_settings_t *st, run_t *u, double gen,
                               double ctx, double next_arrival)
{
    cohorts_t *cs = u->cur;
    double m = INFINITY, dt;
    for (int i = 0; i < cs->n; i++) /* the stalled prompts wait as they are */
        if (cs->c[i].decoded >= 0)
            m = fmin(m, ceil((cs->c[i].out - cs->c[i].decoded) / st->tau - 1e-9));
    m = decode_steps_until(c, st, gen, ctx, fmax(m, 1), next_arrival - u->t, &dt);
    u->step_start = u->t + (m - 1) * dt;
    u->t += m * dt;
    u->area += m * dt * u->running;
    u->steps += m;
    for (int i = 0; i < cs->n; i++)
        if (cs->c[i].decoded >= 0)
            cs->c[i].decoded += m * st->tau;
}

/* The k requests of cohort x whose prompts finish now, as decode cohorts by their outputs. */
static void start_decoding(run_t *u, cohorts_t *next, double k, const cohort_t *x)
{
    group_t g[SV_MAX_GROUPS];
    const int ng = dealt_groups(u, &u->outputs, k, g);
    for (int j = 0; j < ng; j++)
        push(next, (cohort_t){g[j].n, to_compute(x), 0, 0, x->arrive, g[j].len, x->prompt,
                              x->cached});
}

/* 2–4 with prompts: one step of every decode sequence and prompt tokens up to the budget left
 * after them (whole prompts, or chunks with chunked prefill); a prompt's last step emits its
 * first token. */
static void prefill_step(const sv_ctx_t *c, const sv_settings_t *st, run_t *u, double gen,
                         double ctx, double budget)
{
    cohorts_t *cs = u->cur, *next = u->nxt;
    double left = budget - gen * st->tps, tokens = 0, attended = 0, earlier = 0, seqs = 0;
    next->n = 0;
    for (int i = 0; i < cs->n; i++) {
        cohort_t x = cs->c[i];
        if (x.decoded >= 0 || left <= 0) {
            push(next, x);
            continue;
        }
        const double rem = to_compute(&x) - x.done;
        double k = fmin(x.n, floor(left / rem));
        if (k < 1 && tokens == 0 && gen == 0)
            k = 1; /* a prompt beyond the budget still runs (alone) */
        if (k >= 1) {
            tokens += k * rem;
            attended += k * rem * (x.cached + x.done + (rem + 1) / 2);
            earlier += k * (x.cached + x.done); /* each reads its cached and earlier KV */
            seqs += k;
            left -= k * rem;
            start_decoding(u, next, k, &x); /* first token at the end */
            x.n -= k;
        }
        if (x.n > 0 && st->chunked && left >= 1) {
            tokens += left;
            attended += left * (x.cached + x.done + (left + 1) / 2);
            earlier += x.cached + x.done;
            if (x.n > 1)
                push(next, (cohort_t){x.n - 1, x.done, -1, 0, x.arrive, x.out, x.prompt,
                                      x.cached});
            x.n = 1;
            x.done += left;
            left = 0;
        }
        if (x.n > 0)
            push(next, x);
    }
    const double dt =
        step_time(c, st, gen, ctx, tokens, tokens > 0 ? attended / tokens : 0, earlier, seqs);
    u->step_start = u->t;
    u->t += dt;
    u->area += dt * u->running;
    u->steps += 1;
    u->nxt = cs;
    u->cur = cs = next;
    for (int i = 0; i < cs->n; i++) {
        if (cs->c[i].decoded > 0)
            cs->c[i].decoded += st->tau;
        else if (cs->c[i].decoded == 0 && cs->c[i].done >= to_compute(&cs->c[i])) {
            cs->c[i].decoded = 1; /* the prompt's step emitted the first token */
            cs->c[i].first = u->t;
            record_first(u, cs->c[i].n, u->t - cs->c[i].arrive);
        }
    }
}

/* 4. Requests that are done leave, freeing their slots. */
static void retire_finished(run_t *u)
{
    cohorts_t *cs = u->cur;
    for (int i = cs->n - 1; i >= 0; i--)
        if (cs->c[i].decoded >= cs->c[i].out - 1e-9) {
            const double O = cs->c[i].out;
            if (O > 1) {
                u->tpot_sum += cs->c[i].n * (u->t - cs->c[i].first) / (O - 1);
                u->tpot_n += cs->c[i].n;
            }
            u->running -= cs->c[i].n;
            drop(cs, i);
        }
}

int serving__offline(const sv_ctx_t *c, const sv_settings_t *st, double max_concurrency,
                     double num_requests, double rate, sv_offline_t *out, fathom_error_t *err)
{
    const serving_request_t *r = c->r;
    const double budget = (double)st->max_batch_tokens * c->dp * c->pp;
    run_t u = {0};
    u.cur = &u.buf[0];
    u.nxt = &u.buf[1];
    u.num_requests = num_requests;
    u.cache_hit = r->prefix_cache_hit;
    u.prompts = dealer((serving_lengths_t){r->input_tokens, r->input_spread, r->input_low,
                                           r->input_high},
                       3, num_requests);
    u.outputs = dealer((serving_lengths_t){r->output_tokens, r->output_spread, r->output_low,
                                           r->output_high},
                       2, num_requests);
    memset(out, 0, sizeof *out);
    const double max_steps = SV_BASE_STEPS + SV_STEPS_PER_REQUEST * num_requests;
    double guard = 0;
    for (; guard < max_steps && (u.admitted < num_requests || u.cur->n > 0); guard++) {
        const double waiting = admit_arrivals(&u, max_concurrency, num_requests, rate);
        /* the next arrival the engine could admit (none: INFINITY) */
        const double next_arrival = rate > 0 && u.admitted < num_requests &&
                                            u.running < max_concurrency - 1e-9
                                        ? u.admitted / rate
                                        : INFINITY;
        /* the step's load */
        const cohorts_t *cs = u.cur;
        double gen = 0, ctx_sum = 0;
        bool prefill = false;
        for (int i = 0; i < cs->n; i++) {
            if (cs->c[i].decoded >= 0)
                gen += cs->c[i].n, ctx_sum += cs->c[i].n * (cs->c[i].prompt + cs->c[i].decoded);
            else
                prefill = true;
        }
        const double ctx = gen > 0 ? ctx_sum / gen : 0;
        if ((!prefill || prompts_stalled(cs, st, budget - gen * st->tps)) &&
            (waiting <= 0 || u.running >= max_concurrency - 1e-9))
            decode_until_event(c, st, &u, gen, ctx, next_arrival);
        else
            prefill_step(c, st, &u, gen, ctx, budget);
        retire_finished(&u);
    }
    free(u.lengths);
    if (u.no_memory) {
        free(u.firsts);
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    }
    if (guard >= max_steps) {
        free(u.firsts);
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "serving.num_requests",
                                "this finite run takes more than %.0f steps to follow (prompts in "
                                "chunks of few tokens?): give fewer requests, a larger "
                                "max_batch_tokens, or leave num_requests out for the steady state",
                                max_steps);
    }
    out->makespan_s = u.t;
    out->mean_concurrency = u.t > 0 ? u.area / u.t : 0;
    out->ttft_s = num_requests > 0 ? u.ttft_sum / num_requests : 0;
    out->tpot_s = u.tpot_n > 0 ? u.tpot_sum / u.tpot_n : 0;
    out->output_per_request =
        u.outputs.lengths.spread > 0 ? u.outputs.made / num_requests : r->output_tokens;
    out->input_per_request =
        u.prompts.lengths.spread > 0 ? u.prompts.made / num_requests : r->input_tokens;
    out->steps = u.steps;
    qsort(u.firsts, u.num_firsts, sizeof *u.firsts, by_ttft);
    out->ttft_p50_s = ttft_at_rank(u.firsts, u.num_firsts, num_requests, 0.5);
    out->ttft_p99_s = ttft_at_rank(u.firsts, u.num_firsts, num_requests, 0.99);
    free(u.firsts);
    return 0;
}

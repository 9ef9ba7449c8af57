/* search.c — the optimal-execution search: plan (work units), the walk of one unit, top-N
 * bookkeeping and merging. The space and its order are described in search.h.
 *
 * DESIGN. A plan lists Calculon's outer tuples (tp, pp, interleaving, recompute, optimizer
 * sharding, TP comm type) as work units; each unit walks the inner loops on the caller's thread.
 * Every execution gets an enumeration position (unit, index); the best list is ordered by
 * (sample rate descending, position ascending), a total order, so results merged from any
 * number of threads in any order are identical.
 *
 * PRUNING (SEARCH_EVALUATE). Nothing good is ever skipped: only executions already known to be
 * bad are counted without being estimated. Two facts of Calculon's model make that exact:
 *  1. Whether the network assignment (tn, pn, dn) is accepted depends only on tp, pp, dp, the
 *     assignment and the system (Llm._check_network_assignments); nets_valid below is that rule.
 *  2. Every other refusal (interleaving vs blocks per processor, offloading with < 3 blocks per
 *     processor, a datatype or efficiency curve the system lacks) and the memory verdict do not
 *     depend on the network assignment nor on data_par_overlap: memory needs come from the layer
 *     table's weight/activation/gradient/optimizer spaces, which the networks and DP overlap do
 *     not enter (they only change times), while the layer table does depend on everything else
 *     (TP overlap changes layers, so it is part of the key).
 * So within one unit, executions that differ only in (data_par_overlap, tn, pn, dn) share one
 * verdict: once one with valid networks is refused or does not fit, the others with valid
 * networks are bad too and are counted as such without estimating. The tests compare this mode
 * against SEARCH_EVALUATE_ALL (which estimates everything, like Calculon) on whole searches.
 *
 * BOUND PRUNING (the modern block, without mbs_break; Calculon's block keeps Calculon's counts).
 * The best list needs only the executions that can rank. For each (seq_par_ag_redo, DP overlap,
 * TP overlap, fused, microbatch) of a unit, one estimate on the ideal-network system with nothing
 * offloaded (search_bound.h) bounds the step time of all its offload choices and network
 * assignments from below. When even that bound cannot beat the floor — the unit's own N-th best
 * so far or the plan's seed floor (the N-th best of one seed execution per unit and the whole
 * walks of the most promising units, computed once when the plan is made) — the group is counted
 * without estimating: good or bad when its verdict is already known, else "pruned". Sample
 * points are always estimated, so the plotted sample is exact; the best list is exact because
 * nothing skipped could rank. Both floors depend on the plan and the unit alone, so every count
 * is the same whatever the threads. And memory needs do not shrink as the microbatch grows: a
 * microbatch that estimates but does not fit (or is refused by a rule that does not read the
 * microbatch) makes the larger ones of its group bad. Tests check the bound and both rules
 * execution by execution, and the result against the unpruned walk. */
#include "search.h"
#include "search_bound.h"
#include "search_result.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

const char *const search_fused_names[] = {"true", "false", "all", NULL};

/* One work unit: Calculon's outer tuple, with the batch size its dp gives. */
typedef struct {
    int64_t tp, cp, pp, dp, ppint, batch;
    llm_recompute_t recompute;
    bool sharding;
    int zero; /* the ZeRO stage (sharding is zero >= 1) */
    llm_tp_comm_t comm;
    uint64_t max_executions; /* size of its walk without mbs_break */
    uint64_t coarse_executions; /* size of its coarse walk (TWO STAGES, search.h) */
} unit_t;

struct search_plan {
    search_request_t req;
    unit_t *units;
    size_t n_units;
    uint64_t max_executions;
    uint64_t exhaustive_executions; /* every unit's walk: max_executions unless two-stage */
    uint64_t sample_stride; /* see search_point_t */
    /* Bound pruning (see PRUNING): on for the modern block in SEARCH_EVALUATE without
     * mbs_break. ideal is the system with ideal networks; seed_floor the N-th best rate of
     * one seed execution per unit (0 when fewer than N fit), a floor every unit may use. */
    bool bound;
    llm_system_t ideal;
    double seed_floor;
    _Atomic uint64_t units_done;
    _Atomic uint64_t executions;
};

/* Verdict of a group of executions that differ only in DP overlap and networks. */
enum { V_UNKNOWN = 0, V_BAD, V_FITS };

#define CANCEL_EVERY 4096u

void search_options_default(search_options_t *o)
{
    o->mbs_break = false;
    o->top_n = 1;
    o->no_tp_overlap = false;
    o->no_dp_overlap = false;
    o->fused_activation = SEARCH_FUSED_TRUE;
    o->attention_kernel = SEARCH_PICK_OFF;
    o->fp8 = SEARCH_PICK_OFF;
    o->context_par = 1;
    o->zero_stage = SEARCH_ZERO_CALCULON;
    o->no_offload = false;
    o->exact_batch = false;
    o->fed_batch = false;
    o->max_tensor_par = 0;
    o->max_pipeline_par = 0;
    o->tensor_par = 0;
    o->pipeline_par = 0;
    o->microbatch_size = 0;
    o->recompute = SEARCH_FREE;
    o->fewest_recompute_blocks = false;
    o->fewest_recompute_modules = false;
    o->stack = LLM_STACK_MEGATRON;
    o->compile = false;
    o->loss_kernel = LLM_LOSS_TORCH;
    o->refine_units = 0;
    o->pipeline_schedule = LLM_PP_1F1B;
    o->moe_a2a_overlap = false;
    o->fp8_activation_cache = false;
    o->fp8_params = false;
    o->optimizer_state_datatype = LLM_STATE_FLOAT32;
}

/* The options that fix an execution field (search.h) against the model and options.fp8. */
int search_check_fixed_execution(const search_request_t *r, fathom_error_t *err)
{
    const fathom_model_t *m = &r->model;
    if ((unsigned)r->options.pipeline_schedule >= LLM_PP__COUNT)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "options.pipeline_schedule",
                                "must be \"1f1b\", \"interleaved\", \"zero_bubble\" or "
                                "\"dualpipe\"");
    if ((r->options.pipeline_schedule == LLM_PP_ZERO_BUBBLE ||
         r->options.pipeline_schedule == LLM_PP_DUALPIPE) && m->calculon_block)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "options.pipeline_schedule",
                                "\"%s\" needs the modern block: give the model one of kv_heads, "
                                "gated_mlp, norm, qkv_bias or causal",
                                llm_pp_schedule_names[r->options.pipeline_schedule]);
    if ((unsigned)r->options.optimizer_state_datatype >= LLM_STATE__COUNT)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "options.optimizer_state_datatype",
                                "must be \"float32\", \"bfloat16\" or \"float16\"");
    if (r->options.optimizer_state_datatype != LLM_STATE_FLOAT32 && m->calculon_block)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "options.optimizer_state_datatype",
                                "needs the modern block: give the model one of kv_heads, "
                                "gated_mlp, norm, qkv_bias or causal");
    if (r->options.moe_a2a_overlap && m->moe.num_experts == 0)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "options.moe_a2a_overlap",
                                "overlaps the experts' all-to-all: the model has no experts");
    if ((r->options.fp8_params || r->options.fp8_activation_cache) &&
        r->options.fp8 == SEARCH_PICK_OFF)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD,
                                r->options.fp8_params ? "options.fp8_params"
                                                      : "options.fp8_activation_cache",
                                "is FP8 storage of FP8 training: set options.fp8 to true or "
                                "\"all\"");
    if (r->options.zero_stage == 1 && r->options.stack != LLM_STACK_MEGATRON)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "options.zero_stage",
                                "a PyTorch stack has no ZeRO-1 (Megatron's distributed "
                                "optimizer): 0 (DDP), 2, 3 or \"all\"");
    return 0;
}

/* Whether the schedule (options.pipeline_schedule) runs pp stages of `chunks` chunks each, as
 * llm_model.c's check_schedule has it: 1F1B anything (interleaved when chunks > 1),
 * interleaved only chunks > 1, zero-bubble one chunk on pp >= 2, DualPipe that on an even pp. */
static bool schedule_runs(llm_pp_schedule_t sc, int64_t pp, int64_t chunks)
{
    switch (sc) {
    case LLM_PP_INTERLEAVED:
        return chunks > 1;
    case LLM_PP_ZERO_BUBBLE:
        return pp >= 2 && chunks == 1;
    case LLM_PP_DUALPIPE:
        return pp >= 2 && pp % 2 == 0 && chunks == 1;
    default:
        return true;
    }
}

/* Divisors of n (n >= 1) in increasing order; returns how many (at most cap). */
static int divisors(int64_t n, int64_t *out, int cap)
{
    int lo = 0, hi = 0;
    int64_t high[SEARCH_MAX_DIVISORS];
    for (int64_t d = 1; d * d <= n; d++) {
        if (n % d != 0)
            continue;
        if (lo < cap)
            out[lo++] = d;
        if (d * d != n && hi < SEARCH_MAX_DIVISORS)
            high[hi++] = n / d;
    }
    while (hi > 0 && lo < cap)
        out[lo++] = high[--hi];
    return lo;
}

/* Calculon's OptimalExecution.get_batch_size: the largest multiple of dp not above max, or 0. */
static int64_t batch_for(int64_t dp, int64_t max_batch)
{
    return dp > max_batch ? 0 : (max_batch / dp) * dp;
}

/* options.fed_batch: the multiple of dp nearest `target` (halves up), at least dp·pp; 0 past
 * SEARCH_MAX_BATCH. Under DualPipe (options.pipeline_schedule) every replica runs an even number
 * of microbatches, at least 2·pp (check_schedule, llm_model.c): the multiple of 2·dp nearest,
 * at least 2·dp·pp, so that microbatch 1 can run it. */
static int64_t fed_batch(int64_t dp, int64_t pp, llm_pp_schedule_t sc, int64_t target)
{
    const int64_t per = sc == LLM_PP_DUALPIPE ? 2 : 1; /* samples a replica's count steps by */
    const int64_t step = per * dp;
    int64_t b = (target + step / 2) / step * step;
    if (b < step * pp)
        b = step * pp;
    return b > SEARCH_MAX_BATCH ? 0 : b;
}

static int64_t count_options(bool cond, int64_t n)
{
    return cond ? n : 1;
}

/* Number of microbatch sizes of a unit: divisors of the local batch m with m*seq % tp == 0. */
static int microbatches(const search_request_t *r, const unit_t *u, int64_t *out)
{
    int64_t all[SEARCH_MAX_DIVISORS];
    int n = divisors(u->batch / u->dp, all, SEARCH_MAX_DIVISORS);
    int k = 0;
    for (int i = 0; i < n; i++)
        if ((all[i] * r->model.seq_size) % u->tp == 0 &&
            (r->options.microbatch_size == 0 || all[i] == r->options.microbatch_size))
            out[k++] = all[i];
    return k;
}

/* Expert layouts of a unit (MoE models; (1, 1) alone otherwise), in walk order: expert_par
 * dividing num_experts, then expert_tensor_par dividing expert_feedforward, with
 * expert_par × expert_tensor_par dividing tp × cp × dp (the fold of llm_moe.c). */
#define SEARCH_MAX_EXPERT_LAYOUTS 256
static int expert_layouts(const search_request_t *r, const unit_t *u, int64_t *ep, int64_t *etp)
{
    const model_moe_t *x = &r->model.moe;
    if (x->num_experts == 0) {
        ep[0] = etp[0] = 1;
        return 1;
    }
    int64_t de[SEARCH_MAX_DIVISORS], df[SEARCH_MAX_DIVISORS];
    const int64_t fold = u->tp * u->cp * u->dp; /* as llm_moe.c's fold_size */
    int ne = divisors(x->num_experts, de, SEARCH_MAX_DIVISORS);
    int nf = divisors(x->expert_feedforward < fold ? x->expert_feedforward : fold, df,
                      SEARCH_MAX_DIVISORS);
    int n = 0;
    for (int i = 0; i < ne; i++)
        for (int j = 0; j < nf && n < SEARCH_MAX_EXPERT_LAYOUTS; j++)
            if (x->expert_feedforward % df[j] == 0 && fold % (de[i] * df[j]) == 0) {
                ep[n] = de[i];
                etp[n++] = df[j];
            }
    return n;
}

/* The sizes of the inner loops of a unit, in walk order. The full walk's DP-overlap loop of one
 * value is off and its network loops run over tiers 0..n-1; a coarse walk (TWO STAGES,
 * search.h) fixes DP overlap to dpo_fixed and walks its n_rep representative network
 * assignments (rep[i] = tensor, pipeline, data, context tiers) as the tensor-network loop, the
 * other three of one value. */
#define COARSE_MAX_REPS 2
typedef struct {
    int n_kernel, n_fp8, n_redo, n_dpo, n_tpo, n_wo, n_ao, n_oo, n_fa, n_tn, n_pn, n_dn, n_cn;
    bool dpo_fixed;
    int n_rep;
    int rep[COARSE_MAX_REPS][4];
} loops_t;

static bool nets_valid(const llm_system_t *s, const llm_execution_t *e);

/* Sets e's network tiers for the loop values (tn, pn, dn, cn) of l. */
static void set_networks(llm_execution_t *e, const loops_t *l, int tn, int pn, int dn, int cn)
{
    if (l->n_rep > 0) {
        const int *t = l->rep[tn];
        tn = t[0], pn = t[1], dn = t[2], cn = t[3];
    }
    e->tensor_par_net = tn;
    e->pipeline_par_net = pn;
    e->data_par_net = dn;
    e->context_par_net = cn;
}

/* Puts each degree of order[] (indices into tensor, pipeline, data, context) on the lowest tier
 * that still holds the product of the degrees put there, into tier[]. */
static void pack_networks(const llm_system_t *s, const int64_t degree[4], const int order[4],
                          int tier[4])
{
    int64_t used[LLM_MAX_NETWORKS];
    for (int i = 0; i < s->num_networks; i++)
        used[i] = 1;
    for (int k = 0; k < 4; k++) {
        const int d = order[k];
        tier[d] = 0;
        if (degree[d] < 2)
            continue;
        int t = 0;
        while (t < s->num_networks - 1 && used[t] * degree[d] > s->networks[t].size)
            t++;
        tier[d] = t;
        used[t] *= degree[d];
    }
}

/* The coarse walk's network assignments: the fastest tier first to tensor, then context, data
 * and pipeline parallelism (Megatron's rank order), and the same with pipeline before data
 * (on a large first tier, pipeline stages there may beat data-parallel replicas); each kept
 * when the system accepts it and it differs from the first. When it accepts neither, the full
 * walk's first accepted assignment; tier 0 everywhere when none is accepted (counted bad). */
static void coarse_networks(const search_request_t *r, const unit_t *u, const loops_t *full,
                            loops_t *l)
{
    static const int orders[COARSE_MAX_REPS][4] = {{0, 3, 2, 1}, {0, 3, 1, 2}};
    const llm_system_t *s = &r->system;
    const int64_t degree[4] = {u->tp, u->pp, u->dp, u->cp};
    llm_execution_t e;
    memset(&e, 0, sizeof e);
    e.tensor_par = u->tp;
    e.pipeline_par = u->pp;
    e.data_par = u->dp;
    e.context_par = u->cp;
    l->n_rep = 0;
    for (int o = 0; o < COARSE_MAX_REPS; o++) {
        int tier[4];
        pack_networks(s, degree, orders[o], tier);
        l->rep[l->n_rep][0] = e.tensor_par_net = tier[0];
        l->rep[l->n_rep][1] = e.pipeline_par_net = tier[1];
        l->rep[l->n_rep][2] = e.data_par_net = tier[2];
        l->rep[l->n_rep][3] = e.context_par_net = tier[3];
        if (nets_valid(s, &e) &&
            (l->n_rep == 0 || memcmp(l->rep[0], l->rep[l->n_rep], sizeof l->rep[0]) != 0))
            l->n_rep++;
    }
    if (l->n_rep > 0)
        return;
    l->n_rep = 1;
    memset(l->rep[0], 0, sizeof l->rep[0]);
    for (int tn = 0; tn < full->n_tn; tn++)
        for (int pn = 0; pn < full->n_pn; pn++)
            for (int dn = 0; dn < full->n_dn; dn++)
                for (int cn = 0; cn < full->n_cn; cn++) {
                    e.tensor_par_net = tn;
                    e.pipeline_par_net = pn;
                    e.data_par_net = dn;
                    e.context_par_net = cn;
                    if (nets_valid(s, &e)) {
                        l->rep[0][0] = tn, l->rep[0][1] = pn, l->rep[0][2] = dn, l->rep[0][3] = cn;
                        return;
                    }
                }
}

static loops_t unit_loops(const search_request_t *r, const unit_t *u, bool coarse)
{
    const search_options_t *o = &r->options;
    bool has_mem2 = r->system.mem2.gib > 0;
    int nn = r->system.num_networks;
    loops_t l;
    l.n_kernel = o->attention_kernel == SEARCH_PICK_ALL ? 2 : 1;
    l.n_fp8 = o->fp8 == SEARCH_PICK_ALL ? 2 : 1;
    l.n_redo = (u->comm == LLM_TP_COMM_RS_AG && u->recompute != LLM_RECOMPUTE_FULL) ? 2 : 1;
    l.n_dpo = (u->dp * u->cp > 1 && !o->no_dp_overlap) ? 2 : 1;
    /* Transformer Engine's tiled TP overlap is Megatron's (none, ring, pipe); torchtitan's is
     * async TP (off, on), a torch.compile pass (llm_stack.c); FSDP1 has no TP to overlap */
    l.n_tpo = u->tp < 2 || o->no_tp_overlap    ? 1
              : o->stack == LLM_STACK_MEGATRON ? 3
              : o->stack == LLM_STACK_TORCHTITAN && o->compile ? 2
                                                               : 1;
    bool offload = has_mem2 && !o->no_offload;
    l.n_wo = offload ? 2 : 1;
    /* torchtitan's CPU offload keeps activations on the GPU (llm_stack.c) */
    l.n_ao = (offload && u->recompute != LLM_RECOMPUTE_FULL && o->stack != LLM_STACK_TORCHTITAN)
                 ? 2
                 : 1;
    l.n_oo = offload ? 2 : 1;
    l.n_fa = o->fused_activation == SEARCH_FUSED_ALL ? 2 : 1;
    l.n_tn = (int)count_options(u->tp > 1, nn);
    l.n_pn = (int)count_options(u->pp > 1, nn);
    l.n_dn = (int)count_options(u->dp > 1, nn);
    l.n_cn = (int)count_options(u->cp > 1, nn);
    l.dpo_fixed = false;
    l.n_rep = 0;
    if (coarse) { /* a representative of each choice that moves only communication */
        const loops_t full = l;
        l.dpo_fixed = full.n_dpo == 2;
        l.n_redo = l.n_dpo = l.n_wo = l.n_ao = l.n_oo = 1;
        coarse_networks(r, u, &full, &l);
        l.n_tn = l.n_rep;
        l.n_pn = l.n_dn = l.n_cn = 1;
    }
    return l;
}

static uint64_t unit_size(const search_request_t *r, const unit_t *u, bool coarse)
{
    int64_t mbs[SEARCH_MAX_DIVISORS];
    loops_t l = unit_loops(r, u, coarse);
    uint64_t n = (uint64_t)microbatches(r, u, mbs);
    int64_t ep[SEARCH_MAX_EXPERT_LAYOUTS], etp[SEARCH_MAX_EXPERT_LAYOUTS];
    n *= (uint64_t)expert_layouts(r, u, ep, etp);
    return n * (uint64_t)(l.n_kernel * l.n_fp8) *
           (uint64_t)(l.n_redo * l.n_dpo * l.n_tpo * l.n_wo * l.n_ao * l.n_oo * l.n_fa) *
           (uint64_t)(l.n_tn * l.n_pn * l.n_dn * l.n_cn);
}

static int check_request(const search_request_t *r, fathom_error_t *err)
{
    const fathom_model_t *m = &r->model;
    if (r->num_procs < 1 || r->num_procs > SEARCH_MAX_PROCS)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "num_procs",
                                "must be in [1, %d], got %lld", SEARCH_MAX_PROCS,
                                (long long)r->num_procs);
    if (r->max_batch_size < 1 || r->max_batch_size > SEARCH_MAX_BATCH)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "max_batch_size",
                                "must be in [1, %d], got %lld", SEARCH_MAX_BATCH,
                                (long long)r->max_batch_size);
    if ((int)r->datatype < 0 || r->datatype >= LLM_DT__COUNT)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "datatype", "unknown datatype");
    if (r->options.top_n < 1 || r->options.top_n > SEARCH_TOP_N_MAX)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "options.top_n",
                                "must be in [1, %d], got %d", SEARCH_TOP_N_MAX,
                                r->options.top_n);
    if (r->options.context_par != SEARCH_FREE &&
        (r->options.context_par < 1 || r->options.context_par > r->num_procs))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "options.context_par",
                                "must be 1 to num_procs, or \"all\"");
    if (r->options.zero_stage != SEARCH_FREE && r->options.zero_stage != SEARCH_ZERO_CALCULON &&
        (r->options.zero_stage < 0 || r->options.zero_stage > 3))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "options.zero_stage",
                                "must be 0, 1, 2, 3 or \"all\"");
    if (m->calculon_block && (r->options.context_par != 1 ||
                              r->options.zero_stage == SEARCH_FREE || r->options.zero_stage >= 2))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD,
                                r->options.context_par != 1 ? "options.context_par"
                                                            : "options.zero_stage",
                                "context parallelism and ZeRO-2/3 need the modern block: give the "
                                "model one of kv_heads, gated_mlp, norm, qkv_bias or causal");
    if ((unsigned)r->options.attention_kernel > SEARCH_PICK_ALL)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "options.attention_kernel",
                                "must be unfused, fused or all");
    if ((unsigned)r->options.fp8 > SEARCH_PICK_ALL)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "options.fp8",
                                "must be false, true or all");
    if (search_check_fixed_execution(r, err))
        return -1;
    if (r->options.fp8 != SEARCH_PICK_OFF &&
        (!r->system.matrix.rate[LLM_DT_FLOAT8].present ||
         (r->datatype != LLM_DT_FLOAT16 && r->datatype != LLM_DT_BFLOAT16)))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "options.fp8",
                                "FP8 GEMMs need a float8 matrix rate in the system and a float16 "
                                "or bfloat16 datatype");
    if ((int)r->options.fused_activation < 0 || r->options.fused_activation > SEARCH_FUSED_ALL)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "options.fused_activation",
                                "must be true, false or all");
    if (r->options.max_tensor_par < 0 || r->options.max_pipeline_par < 0)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD,
                                r->options.max_tensor_par < 0 ? "options.max_tensor_par"
                                                              : "options.max_pipeline_par",
                                "must be at least 1 (or absent for no cap)");
    if (r->options.tensor_par < 0 || r->options.pipeline_par < 0 ||
        r->options.microbatch_size < 0)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD,
                                r->options.tensor_par < 0     ? "options.tensor_par"
                                : r->options.pipeline_par < 0 ? "options.pipeline_par"
                                                              : "options.microbatch_size",
                                "must be at least 1 (or absent to search it)");
    if (r->options.recompute != SEARCH_FREE &&
        (r->options.recompute < LLM_RECOMPUTE_FULL || r->options.recompute > LLM_RECOMPUTE_NONE))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "options.activation_recompute",
                                "must be full, attn_only or none (or absent to search it)");
    if (r->options.fed_batch && r->options.exact_batch)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "options.exact_batch",
                                "a fed batch is rounded to each layout: not exact");
    if (r->options.refine_units < 0)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "options.refine_units",
                                "must be 0 (one exhaustive walk) or more");
    if (r->mode == SEARCH_COUNT_ONLY && r->options.mbs_break)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "options.mbs_break",
                                "cannot count a search with mbs_break without estimating it");
    if (m->hidden < 1 || m->attn_heads < 1 || m->num_blocks < 1 || m->seq_size < 1)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "model",
                                "hidden, attn_heads, num_blocks and seq_size must be >= 1");
    if (r->system.num_networks < 1 || r->system.num_networks > LLM_MAX_NETWORKS)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "system.networks",
                                "must have 1 to %d networks", LLM_MAX_NETWORKS);
    return 0;
}

/* Context-parallel degrees of a unit: 1, or when freed every divisor of the processors left
 * whose two chunks per rank split the sequence. */
static int context_degrees(const search_request_t *r, int64_t rest, int64_t *out)
{
    if (r->options.context_par != SEARCH_FREE) {
        out[0] = r->options.context_par;
        return rest % r->options.context_par == 0 ? 1 : 0;
    }
    int64_t all[SEARCH_MAX_DIVISORS];
    int n = divisors(rest, all, SEARCH_MAX_DIVISORS), k = 0;
    for (int i = 0; i < n; i++)
        if (r->model.seq_size % (2 * all[i]) == 0 || all[i] == 1)
            out[k++] = all[i];
    return k;
}

/* Pipeline degrees: Calculon's (dividing num_blocks and the processors left) for its block;
 * for the modern block every divisor of the processors left up to num_blocks (uneven splits
 * give the first stages the extra blocks). */
static int pipeline_degrees(const fathom_model_t *m, int64_t rest, int64_t *out)
{
    int64_t max_pp = rest < m->num_blocks ? rest : m->num_blocks;
    int64_t all[SEARCH_MAX_DIVISORS];
    int n = divisors(m->calculon_block ? max_pp : rest, all, SEARCH_MAX_DIVISORS), k = 0;
    for (int i = 0; i < n; i++) {
        if (rest % all[i] != 0 || all[i] > m->num_blocks)
            continue;
        if (m->calculon_block && m->num_blocks % all[i] != 0)
            continue;
        out[k++] = all[i];
    }
    return k;
}

/* The ZeRO stages of a unit, in walk order: Calculon's sharding loop (true, then false) by
 * default; a fixed stage; or every stage (1, 0, 2, 3: Calculon's two first; a PyTorch stack
 * has no 1). Stages 1-3 need
 * more than one processor to shard over.
 * A PyTorch stack's default is its own sharding instead: FSDP shards the weights, gradients and
 * optimizer state over data parallelism (ZeRO-3: torchtitan's fully_shard with
 * reshard_after_forward, FSDP1's FULL_SHARD, Composer's default sharding_strategy) or keeps the
 * weights gathered between forward and backward (ZeRO-2: reshard_after_forward=False,
 * SHARD_GRAD_OP). Megatron's distributed optimizer (ZeRO-1) is not what these stacks run, so
 * Calculon's loop would plan an fsdp run that cannot shard its weights (MPT-7B on 440 A100
 * 40GB: ZeRO-1 keeps 6.65e9 x (2 + 4) bytes = 37 GiB of bf16 weights and fp32 gradients on
 * every GPU before an activation; ZeRO-3 keeps 6.65e9 x 16 / 440 = 0.23 GiB). */
static int zero_stage_list(const search_options_t *o, int64_t dp, int64_t cp, int *out)
{
    const bool shardable = dp * cp > 1;
    if (o->zero_stage == SEARCH_ZERO_CALCULON && o->stack != LLM_STACK_MEGATRON) {
        if (!shardable) {
            out[0] = 0;
            return 1;
        }
        out[0] = 3;
        out[1] = 2;
        return 2;
    }
    if (o->zero_stage == SEARCH_ZERO_CALCULON) {
        if (dp < 2) { /* Calculon's rule: sharding needs data parallelism */
            out[0] = 0;
            return 1;
        }
        out[0] = 1;
        out[1] = 0;
        return 2;
    }
    if (o->zero_stage == SEARCH_FREE) {
        if (!shardable) {
            out[0] = 0;
            return 1;
        }
        int n = 0;
        if (o->stack == LLM_STACK_MEGATRON)
            out[n++] = 1; /* a PyTorch stack has no ZeRO-1 (llm_stack.c) */
        out[n++] = 0;
        out[n++] = 2;
        out[n++] = 3;
        return n;
    }
    out[0] = o->zero_stage;
    return o->zero_stage == 0 || shardable ? 1 : 0;
}

/* zero_stage_list without a stage that is another's run: a PyTorch stack's ZeRO-2 under PP is
 * the run its ZeRO-3 is (llm_fsdp_sharded_weights), walked once, as ZeRO-3, when both are. */
static int zero_stages(const search_options_t *o, int64_t dp, int64_t cp, int64_t pp, int *out)
{
    const int n = zero_stage_list(o, dp, cp, out);
    bool has3 = false;
    for (int z = 0; z < n; z++)
        has3 = has3 || out[z] == 3;
    if (o->stack == LLM_STACK_MEGATRON || pp < 2 || !has3)
        return n;
    int kept = 0;
    for (int z = 0; z < n; z++)
        if (out[z] != 2)
            out[kept++] = out[z];
    return kept;
}

static void unit_execution(const search_request_t *r, const unit_t *u, llm_execution_t *e);

/* FP8 training on or off for e, with what goes with it: the recipe, its stack's own when it
 * trains in FP8 (Transformer Engine's current scaling for Megatron, torchao's tensorwise for the
 * PyTorch stacks), else none; and the FP8 storage the request asks of FP8 executions
 * (options.fp8_params, options.fp8_activation_cache), which a BF16 execution does not have. */
static void set_fp8(const search_request_t *r, llm_execution_t *e, bool fp8)
{
    e->fp8 = fp8;
    e->fp8_recipe = fp8 ? llm_default_fp8_recipe(r->options.stack) : LLM_FP8_CURRENT;
    e->fp8_params = fp8 && r->options.fp8_params;
    e->fp8_activation_cache = fp8 && r->options.fp8_activation_cache;
}

/* The first network assignment of the walk's order that the system accepts for e. */
static bool first_valid_networks(const llm_system_t *s, const loops_t *l, llm_execution_t *e)
{
    for (int tn = 0; tn < l->n_tn; tn++)
        for (int pn = 0; pn < l->n_pn; pn++)
            for (int dn = 0; dn < l->n_dn; dn++)
                for (int cn = 0; cn < l->n_cn; cn++) {
                    e->tensor_par_net = tn;
                    e->pipeline_par_net = pn;
                    e->data_par_net = dn;
                    e->context_par_net = cn;
                    if (nets_valid(s, e))
                        return true;
                }
    return false;
}

/* The attention kernel of choice ak (0 unfused, 1 fused) of a unit's kernel loop l: the fused
 * kernel is the stack's, Transformer Engine's ("fused") under Megatron and, under a PyTorch stack,
 * the one its model code calls unless told another (F.scaled_dot_product_attention, "sdpa", as
 * an estimate under that stack defaults it: codec/llm_execution_codec.c). With one choice in the
 * loop, options.attention_kernel says which. */
static llm_attn_kernel_t attention_kernel_of(const search_request_t *r, const loops_t *l, int ak)
{
    const bool fused = l->n_kernel == 2 ? ak == 1 : r->options.attention_kernel == SEARCH_PICK_ON;
    if (!fused)
        return LLM_ATTN_KERNEL_UNFUSED;
    return r->options.stack == LLM_STACK_MEGATRON ? LLM_ATTN_KERNEL_FUSED : LLM_ATTN_KERNEL_SDPA;
}

/* The rate of one execution of unit u's walk (its first expert layout, the last
 * attention-kernel and FP8 values, the first values of the boolean loops but nothing offloaded,
 * no TP overlap, the smallest microbatch, the first accepted networks), or 0 when it does not
 * fit or is refused. */
static double seed_rate(const search_request_t *r, const unit_t *u)
{
    const loops_t l = unit_loops(r, u, false);
    int64_t mbs[SEARCH_MAX_DIVISORS], eps[SEARCH_MAX_EXPERT_LAYOUTS],
        etps[SEARCH_MAX_EXPERT_LAYOUTS];
    if (microbatches(r, u, mbs) < 1 || expert_layouts(r, u, eps, etps) < 1)
        return 0;
    llm_execution_t e;
    unit_execution(r, u, &e);
    e.expert_par = eps[0];
    e.expert_tensor_par = etps[0];
    /* the lowest tier the expert group of ep·etp processors fits in */
    e.expert_par_net = llm_first_tier_connecting(&r->system, eps[0] * etps[0]);
    e.attention_kernel = attention_kernel_of(r, &l, l.n_kernel - 1); /* fused when free */
    set_fp8(r, &e, l.n_fp8 == 2 || r->options.fp8 == SEARCH_PICK_ON);
    e.seq_par_ag_redo = l.n_redo == 2;
    e.data_par_overlap = l.n_dpo == 2;
    e.tensor_par_overlap = LLM_TP_OVERLAP_NONE;
    e.fused_activation = r->options.fused_activation == SEARCH_FUSED_TRUE;
    e.microbatch_size = mbs[0];
    if (!first_valid_networks(&r->system, &l, &e))
        return 0;
    llm_result_t res;
    if (llm_estimate(&r->model, &r->system, &e, &res, NULL) != 0 || !res.fits_memory)
        return 0;
    return res.stats.sample_rate;
}

typedef struct {
    double rate;
    size_t unit;
} seeded_unit_t;

static int seeded_cmp(const void *a, const void *b)
{
    const seeded_unit_t *x = a, *y = b;
    if (x->rate != y->rate)
        return x->rate > y->rate ? -1 : 1;
    return x->unit < y->unit ? -1 : x->unit > y->unit;
}

/* How a unit is walked: in full; in full as the seed floor's pilot (no progress reported); or
 * coarse, stage 1 of the two-stage search (no sample points). */
typedef enum { WALK_FULL = 0, WALK_PILOT, WALK_COARSE } walk_kind_t;

static int walk_unit(search_plan_t *p, size_t unit, search_result_t *acc, volatile int *cancel,
                     walk_kind_t kind);

/* The seed floor of the bound pruning, a rate the final N best all reach, so that every unit may
 * skip what provably stays below it: one seed execution per unit (seed_rate), then the whole
 * walks of the SEARCH_PILOT_UNITS units whose seed ran fastest (where the best usually is); the
 * N-th best rate of all those executions. Every one is in the space, and the choice depends on
 * the plan alone, so the floor — and with it what the units skip — is deterministic. 0 when
 * fewer than N fit, or out of memory. */
#define SEARCH_PILOT_UNITS 32
static double seed_floor(search_plan_t *p)
{
    const search_request_t *r = &p->req;
    seeded_unit_t *seeds = malloc((p->n_units ? p->n_units : 1) * sizeof *seeds);
    search_result_t pilot;
    if (!seeds || search_result_init(&pilot, r->options.top_n, NULL)) {
        free(seeds);
        return 0;
    }
    search_rates_t rates;
    search_rates_init(&rates, r->options.top_n);
    for (size_t i = 0; i < p->n_units; i++) {
        seeds[i].unit = i;
        seeds[i].rate = seed_rate(r, &p->units[i]);
        search_rates_add(&rates, seeds[i].rate);
    }
    p->seed_floor = search_rates_floor(&rates);
    qsort(seeds, p->n_units, sizeof *seeds, seeded_cmp);
    for (size_t i = 0; i < p->n_units && i < SEARCH_PILOT_UNITS && seeds[i].rate > 0; i++)
        walk_unit(p, seeds[i].unit, &pilot, NULL, WALK_PILOT);
    for (int i = 0; i < pilot.n_best; i++)
        search_rates_add(&rates, pilot.best[i].result.stats.sample_rate);
    search_result_close(&pilot);
    free(seeds);
    return search_rates_floor(&rates);
}

static int by_size_descending(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x > y ? -1 : x < y;
}

/* A two-stage plan's executions at most: every coarse walk, and the refine_units largest full
 * walks (the units stage 2 picks are not known before stage 1). */
static uint64_t staged_executions(const search_plan_t *p)
{
    uint64_t total = 0;
    uint64_t *sizes = malloc((p->n_units ? p->n_units : 1) * sizeof *sizes);
    for (size_t i = 0; i < p->n_units; i++) {
        total += p->units[i].coarse_executions;
        if (sizes)
            sizes[i] = p->units[i].max_executions;
    }
    if (!sizes) /* out of memory: an upper bound without the sort */
        return total + p->exhaustive_executions;
    qsort(sizes, p->n_units, sizeof *sizes, by_size_descending);
    for (size_t i = 0; i < p->n_units && i < (size_t)p->req.options.refine_units; i++)
        total += sizes[i];
    free(sizes);
    return total;
}

/* The work units of one (tp, cp, pp) layout, from index n: every pipeline interleaving,
 * recompute, ZeRO stage and TP communication its batch allows. Written into p->units when
 * `fill`; returns the index after the last. */
static size_t layout_units(const search_request_t *req, search_plan_t *p, bool fill, size_t n,
                           int64_t tp, int64_t cp, int64_t pp)
{
    const fathom_model_t *m = &req->model;
    const search_options_t *o = &req->options;
    int64_t ints[SEARCH_MAX_DIVISORS];
    const int64_t dp = req->num_procs / tp / cp / pp;
    const int64_t bpp = (m->num_blocks + pp - 1) / pp;
    int n_int = 1;
    ints[0] = 1;
    if (pp > 1)
        n_int = divisors(bpp, ints, SEARCH_MAX_DIVISORS);
    int64_t batch = o->fed_batch ? fed_batch(dp, pp, o->pipeline_schedule, req->max_batch_size)
                                 : batch_for(dp, req->max_batch_size);
    if (o->exact_batch && batch != req->max_batch_size)
        batch = 0; /* dp does not divide the fixed batch */
    if (batch == 0)
        return n;
    int zeros[4];
    const int n_zero = zero_stages(o, dp, cp, pp, zeros);
    for (int c = 0; c < n_int; c++)
        for (int rc = LLM_RECOMPUTE_FULL;
             schedule_runs(o->pipeline_schedule, pp, ints[c]) && rc <= LLM_RECOMPUTE_NONE; rc++)
            for (int z = 0; z < n_zero; z++)
                for (int cm = LLM_TP_COMM_AR; cm <= LLM_TP_COMM_RS_AG; cm++) {
                    if (o->recompute != SEARCH_FREE && rc != o->recompute)
                        continue; /* a pinned recompute walks only its own */
                    if (rc == LLM_RECOMPUTE_ATTN_ONLY && o->stack == LLM_STACK_TORCHTITAN)
                        continue; /* not torchtitan's (llm_stack.c): op is tried instead */
                    if (fill) {
                        unit_t *u = &p->units[n];
                        u->tp = tp;
                        u->cp = cp;
                        u->pp = pp;
                        u->dp = dp;
                        u->ppint = ints[c];
                        u->batch = batch;
                        u->recompute = (llm_recompute_t)rc;
                        u->zero = zeros[z];
                        u->sharding = zeros[z] >= 1;
                        u->comm = (llm_tp_comm_t)cm;
                        u->max_executions = unit_size(req, u, false);
                        u->coarse_executions = unit_size(req, u, true);
                        p->exhaustive_executions += u->max_executions;
                    }
                    n++;
                }
    return n;
}

/* The search's work units over every tensor-, context- and pipeline-parallel degree the
 * model and the options allow: counted (fill false), then written. */
static size_t enumerate_units(const search_request_t *req, search_plan_t *p, bool fill)
{
    const fathom_model_t *m = &req->model;
    const search_options_t *o = &req->options;
    int64_t tps[SEARCH_MAX_DIVISORS], cps[SEARCH_MAX_DIVISORS], pps[SEARCH_MAX_DIVISORS];
    const int n_tp = divisors(req->num_procs, tps, SEARCH_MAX_DIVISORS);
    size_t n = 0;
    for (int a = 0; a < n_tp; a++) {
        const int64_t tp = tps[a];
        if (m->hidden % tp != 0 || m->attn_heads % tp != 0 ||
            (o->max_tensor_par > 0 && tp > o->max_tensor_par) ||
            (o->tensor_par > 0 && tp != o->tensor_par))
            continue;
        const int n_cp = context_degrees(req, req->num_procs / tp, cps);
        for (int d = 0; d < n_cp; d++) {
            const int64_t cp = cps[d];
            const int n_pp = pipeline_degrees(m, req->num_procs / tp / cp, pps);
            for (int b = 0; b < n_pp; b++) {
                const int64_t pp = pps[b];
                if ((o->max_pipeline_par > 0 && pp > o->max_pipeline_par) ||
                    (o->pipeline_par > 0 && pp != o->pipeline_par))
                    continue;
                n = layout_units(req, p, fill, n, tp, cp, pp);
            }
        }
    }
    return n;
}

search_plan_t *search_plan_create(const search_request_t *req, fathom_error_t *err)
{
    if (check_request(req, err))
        return NULL;
    search_plan_t *p = calloc(1, sizeof *p);
    if (!p) {
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
        return NULL;
    }
    p->req = *req;
    atomic_init(&p->units_done, 0);
    atomic_init(&p->executions, 0);

    const fathom_model_t *m = &req->model;
    const search_options_t *o = &req->options;
    /* Two passes: count, then fill, so the allocation is exact and capped before it happens. */
    const size_t n = enumerate_units(req, p, false);
    if (n > SEARCH_MAX_UNITS) {
        fathom_error_set(err, FATHOM_E_LIMIT_EXCEEDED, "num_procs",
                         "the search has %zu work units, more than the limit %d", n,
                         SEARCH_MAX_UNITS);
        free(p);
        return NULL;
    }
    p->units = calloc(n ? n : 1, sizeof *p->units);
    if (!p->units) {
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
        free(p);
        return NULL;
    }
    p->n_units = enumerate_units(req, p, true);
    p->max_executions = o->refine_units > 0 ? staged_executions(p) : p->exhaustive_executions;
    p->sample_stride = (p->max_executions + SEARCH_SAMPLE_MAX - 1) / SEARCH_SAMPLE_MAX;
    if (p->sample_stride < 1)
        p->sample_stride = 1;
    p->bound = req->mode == SEARCH_EVALUATE && !o->mbs_break && !m->calculon_block;
    if (p->bound)
        search_ideal_system(&req->system, &p->ideal);
    if (p->bound && o->refine_units == 0) /* two stages: stage 1 gives the floor */
        p->seed_floor = seed_floor(p);
    return p;
}

void search_plan_free(search_plan_t *p)
{
    if (!p)
        return;
    free(p->units);
    free(p);
}

size_t search_plan_units(const search_plan_t *p)
{
    return p->n_units;
}

const search_request_t *search_plan_request(const search_plan_t *p)
{
    return &p->req;
}

uint64_t search_plan_max_executions(const search_plan_t *p)
{
    return p->max_executions;
}

uint64_t search_plan_exhaustive_executions(const search_plan_t *p)
{
    return p->exhaustive_executions;
}

void search_progress(const search_plan_t *p, search_progress_t *out)
{
    out->units_done = atomic_load(&((search_plan_t *)p)->units_done);
    out->units_total = p->n_units;
    out->executions = atomic_load(&((search_plan_t *)p)->executions);
}

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}


/* Calculon's Llm._check_network_assignments: each network tier carries the product of the
 * degrees (> 1) mapped on it; the product must fit the tier, and divide it when the tier must
 * be filled. */
static bool nets_valid(const llm_system_t *s, const llm_execution_t *e)
{
    const struct {
        int64_t degree;
        int net;
    } mapped[] = {{e->tensor_par, e->tensor_par_net},
                  {e->pipeline_par, e->pipeline_par_net},
                  {e->data_par, e->data_par_net},
                  {e->context_par, e->context_par_net}};
    int64_t size[LLM_MAX_NETWORKS];
    bool used[LLM_MAX_NETWORKS] = {false};
    for (int i = 0; i < s->num_networks; i++)
        size[i] = 1;
    for (size_t d = 0; d < sizeof mapped / sizeof mapped[0]; d++) {
        if (mapped[d].degree > 1) {
            used[mapped[d].net] = true;
            size[mapped[d].net] *= mapped[d].degree;
        }
    }
    for (int i = 0; i < s->num_networks; i++) {
        if (!used[i])
            continue;
        const llm_network_t *n = &s->networks[i];
        if (size[i] > n->size)
            return false;
        if (n->must_be_filled && n->size % size[i] != 0)
            return false;
    }
    return true;
}

/* A verdict per (tp overlap, weight, activations, optimizer offload, fused, microbatch) of one
 * seq_par_ag_redo value: 3*2*2*2*2 groups of microbatch sizes. */
#define GROUPS (3 * 2 * 2 * 2 * 2)
/* A step-time bound per (data-parallel overlap, tp overlap, fused, microbatch) of one
 * seq_par_ag_redo value: it holds for every offload choice and network assignment. (Calculon's
 * DP overlap can expose more than no overlap, so the bound is not shared across it.) */
#define BOUND_SLOTS (2 * 3 * 2)

/* The state of one unit's walk. */
typedef struct {
    search_plan_t *plan;
    const search_request_t *req;
    search_result_t *acc;
    volatile int *cancel;
    uint32_t unit;
    uint32_t index;    /* enumeration position of the next execution */
    uint32_t reported; /* executions already added to the plan's progress */
    bool prune, estimate;
    bool pilot;  /* the seed floor's walk: no progress reported */
    bool coarse; /* stage 1 of two: no sample points */
    int larger_mbs; /* microbatch sizes after the current one (their verdicts follow it) */
    /* Whether each network assignment of the unit is accepted (nets_valid), in walk order: it
     * depends on the degrees alone, so it is worked out once per unit. */
    bool nets_ok[LLM_MAX_NETWORKS * LLM_MAX_NETWORKS * LLM_MAX_NETWORKS * LLM_MAX_NETWORKS];
    /* Counts of this walk, added to acc at its end: counters written on every execution stay
     * in this thread's stack, not in a result another thread's result may share a line with. */
    uint64_t total, good, bad, pruned, estimated;
    /* The unit's own best rates: with the plan's seed floor, all the bound pruning may use, so
     * what it skips depends on the unit alone, never on which units a thread ran before. */
    search_rates_t rates;
    llm_execution_t e; /* the execution being tried */
    llm_result_t res;  /* scratch for llm_estimate */
    /* the layer tables' costs the unit's executions share (llm_estimate_memo; NULL when it
     * could not be allocated: every estimate then costs them afresh, with the same result) */
    llm_memo_t *memo;
} walk_t;

static bool sampled(const walk_t *w, uint32_t pos)
{
    return !w->coarse && splitmix64((uint64_t)w->unit << 32 | pos) % w->plan->sample_stride == 0;
}

/* Moves the walk n positions on (progress every CANCEL_EVERY executions). Returns -1 when the
 * walk is cancelled. */
static int advance(walk_t *w, uint32_t n)
{
    uint32_t before = w->index;
    w->index += n;
    w->total += n;
    if (!w->pilot && before / CANCEL_EVERY != w->index / CANCEL_EVERY) {
        atomic_fetch_add(&w->plan->executions, w->index - w->reported);
        w->reported = w->index;
        if (w->cancel && __atomic_load_n(w->cancel, __ATOMIC_RELAXED))
            return -1;
    }
    return 0;
}

/* With options.recompute_blocks "fewest": a full-recompute execution that fits (w->res) reruns
 * only the fewest blocks of each pipeline chunk that still fit, found by bisection over
 * recompute_blocks in [1, blocks per chunk] — memory falls as more blocks are recomputed (a
 * checkpoint is smaller than the activations it replaces), the step time rises. Only fitting
 * probes are taken, so the answer fits whatever the slope. Leaves w->e.recompute_blocks set for
 * the record; try_execution clears it. */
static void fewest_recompute_blocks(walk_t *w)
{
    llm_execution_t *e = &w->e;
    if (!w->req->options.fewest_recompute_blocks || w->req->model.calculon_block ||
        e->activation_recompute != LLM_RECOMPUTE_FULL || e->activations_offload)
        return;
    /* hi: every block of the largest chunk, which reruns them all */
    int64_t lo = 1, hi = llm_largest_chunk(w->res.blocks_per_proc, e->pipeline_interleaving);
    const int64_t every = hi;
    llm_result_t probe, best = w->res;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        e->recompute_blocks = mid;
        if (llm_estimate_memo(&w->req->model, &w->req->system, e, w->memo, &probe, NULL) == 0 &&
            probe.fits_memory) {
            hi = mid;
            best = probe;
        } else {
            lo = mid + 1;
        }
    }
    e->recompute_blocks = hi < every ? hi : 0;
    if (hi < every)
        w->res = best;
}

/* Whether w->e fits: the memory alone first (llm_estimate_memory, equal to the estimate's at a
 * fraction of its cost), then, only when it fits, the whole estimate into w->res. */
static bool fits_after_change(walk_t *w)
{
    return llm_estimate_memory(&w->req->model, &w->req->system, &w->e, &w->res, NULL) == 0 &&
           w->res.fits_memory &&
           llm_estimate_memo(&w->req->model, &w->req->system, &w->e, w->memo, &w->res, NULL) ==
               0 &&
           w->res.fits_memory;
}

/* With options.recompute_modules "fewest": an execution that does not fit (w->res) takes the
 * first module set of the ladder that fits, leaving w->e.recompute_modules and w->res set;
 * false when none does (or the option is off). Each set is tried in turn: memory need not fall
 * along the ladder (trying the last set first and giving up when it did not fit found fewer
 * fitting DeepSeek-V3 layouts), so no set vouches for another. Memory does not depend on the
 * networks, so every network assignment of a group reaches the same set. A PyTorch stack's
 * layout without recompute also tries per-op selective checkpointing (selective_ac "op",
 * llm_selective_op_applies): torchtitan's only choice, as it has no module sets; under fsdp,
 * which has both, the faster of it and the set (a tie keeps the set). Either only reruns more,
 * so the group's step-time bound still holds. */
static bool fewest_recompute_modules(walk_t *w)
{
    if (!w->req->options.fewest_recompute_modules)
        return false;
    unsigned sets[LLM_RECOMPUTE_MODULE_SETS];
    const int n = llm_recompute_module_ladder(&w->req->model, &w->e, sets);
    unsigned set = 0;
    for (int i = 0; i < n && !set; i++) {
        w->e.recompute_modules = sets[i];
        if (fits_after_change(w))
            set = sets[i];
    }
    w->e.recompute_modules = 0;
    if (w->e.activation_recompute != LLM_RECOMPUTE_NONE || !llm_selective_op_applies(&w->e)) {
        w->e.recompute_modules = set;
        return set != 0;
    }
    const llm_result_t set_res = w->res; /* the set's answer (if one fits) while op is tried */
    w->e.selective_ac = LLM_SAC_OP;
    if (fits_after_change(w) && (!set || w->res.stats.total_time < set_res.stats.total_time))
        return true;
    w->e.selective_ac = LLM_SAC_NONE;
    if (!set)
        return false;
    w->e.recompute_modules = set;
    w->res = set_res;
    return true;
}

/* Tries one execution (w->e). out_of_reach: its step-time bound already rules it out of the
 * best list, so unless it is a sample point it is counted (good/bad when its group's verdict is
 * known, else pruned) without an estimate. Returns -1 when the walk is cancelled. */
static int try_execution(walk_t *w, uint8_t *verdict, bool out_of_reach, bool nets_ok)
{
    uint32_t pos = w->index;
    if (advance(w, 1))
        return -1;
    if (!w->estimate)
        return 0;
    if (w->prune && (*verdict == V_BAD || !nets_ok)) {
        w->bad++;
        return 0;
    }
    if (out_of_reach && !sampled(w, pos)) {
        if (*verdict == V_FITS)
            w->good++;
        else
            w->pruned++;
        return 0;
    }
    w->estimated++;
    fathom_error_t why; /* read only to carry a refusal over to larger microbatches */
    const bool carry = w->plan->bound && w->larger_mbs > 0;
    const int refused =
        llm_estimate_memo(&w->req->model, &w->req->system, &w->e, w->memo, &w->res,
                          carry ? &why : NULL);
    if (refused || (!w->res.fits_memory && !fewest_recompute_modules(w))) {
        w->bad++;
        *verdict = V_BAD;
        /* Memory needs do not shrink as the microbatch grows (activations scale with it, and
         * in flight min(microbatches, pp) of them: min(batch/dp, pp·mbs) samples), so the
         * larger microbatches of this group do not fit either; nor are they accepted after a
         * refusal whose rule does not read the microbatch. */
        if (carry && (!refused || search_refusal_spans_microbatches(why.field)))
            memset(verdict + 1, V_BAD, (size_t)w->larger_mbs);
        return 0;
    }
    *verdict = V_FITS;
    w->good++;
    fewest_recompute_blocks(w);
    search_result_t *acc = w->acc;
    if (sampled(w, pos)) {
        const search_point_t point = {w->res.stats.sample_rate, w->res.mem_tier1_bytes,
                                      w->res.mem_tier2_bytes, w->unit, pos};
        search_result_add_point(acc, &point);
    }
    if (w->plan->bound)
        search_rates_add(&w->rates, w->res.stats.sample_rate);
    int at = search__insertion_point(acc, w->res.stats.sample_rate, w->unit, pos);
    if (at >= 0)
        search__insert_at(acc, at, &w->e, &w->res, w->unit, pos);
    w->e.recompute_blocks = 0;
    w->e.recompute_modules = 0;
    w->e.selective_ac = LLM_SAC_NONE;
    return 0;
}

/* The step-time bound of the current (DP overlap, TP overlap, fused, microbatch), estimated once per
 * seq_par_ag_redo value on the ideal-network system with nothing offloaded; 0 when that
 * estimate is refused (then nothing is ruled out). */
static double step_bound(walk_t *w, double *slot)
{
    if (!isnan(*slot))
        return *slot;
    llm_execution_t ideal;
    search_ideal_execution(&w->e, w->req->options.fewest_recompute_blocks, &ideal);
    w->estimated++;
    *slot = llm_estimate_memo(&w->req->model, &w->plan->ideal, &ideal, w->memo, &w->res, NULL) == 0
                ? w->res.stats.total_time
                : 0;
    return *slot;
}

/* The rate an execution of this unit must beat to rank: the unit's own N-th best or the plan's
 * seed floor, whichever is higher. */
static double walk_floor(const walk_t *w)
{
    double floor = search_rates_floor(&w->rates);
    return w->plan->seed_floor > floor ? w->plan->seed_floor : floor;
}

/* Every network assignment of one microbatch size (the innermost loops). */
static int try_networks(walk_t *w, const loops_t *l, uint8_t *verdict, double *bound)
{
    if (w->prune && *verdict == V_BAD) { /* all bad, whatever the networks: count them at once */
        uint32_t n = (uint32_t)(l->n_tn * l->n_pn * l->n_dn * l->n_cn);
        w->bad += n;
        return advance(w, n);
    }
    bool out_of_reach = false;
    if (w->plan->bound && w->estimate) {
        double floor = walk_floor(w);
        out_of_reach = floor > 0 && search_out_of_reach((double)w->e.batch_size,
                                                         step_bound(w, bound), floor);
    }
    int net = 0;
    for (int tn = 0; tn < l->n_tn; tn++) {
        for (int pn = 0; pn < l->n_pn; pn++) {
            for (int dn = 0; dn < l->n_dn; dn++) {
                for (int cn = 0; cn < l->n_cn; cn++) {
                    set_networks(&w->e, l, tn, pn, dn, cn);
                    if (try_execution(w, verdict, out_of_reach, w->nets_ok[net++]))
                        return -1;
                    /* the floor only rises: one more good execution may put the rest out */
                    if (!out_of_reach && w->plan->bound && *verdict == V_FITS)
                        out_of_reach = search_out_of_reach((double)w->e.batch_size, *bound,
                                                           walk_floor(w));
                }
            }
        }
    }
    return 0;
}

/* Value tpo of the TP-overlap loop (unit_loops): Megatron's tensor_par_overlap, or under a
 * PyTorch stack async TP, off first as the overlap's none is. */
static void set_tp_overlap(const search_request_t *r, llm_execution_t *e, int tpo)
{
    const bool megatron = r->options.stack == LLM_STACK_MEGATRON;
    e->tensor_par_overlap = megatron ? (llm_tp_overlap_t)tpo : LLM_TP_OVERLAP_NONE;
    e->async_tp = !megatron && tpo == 1;
}

/* The loops of a unit below Fathom's dimensions (Calculon's walk). Returns -1 when cancelled. */
static int walk_inner(walk_t *w, const loops_t *l, const int64_t *mbs, int n_mbs, uint8_t *verdict,
                      double *bounds)
{
    const search_request_t *r = w->req;
    llm_execution_t *e = &w->e;
    const bool fused_values[2] = {r->options.fused_activation == SEARCH_FUSED_TRUE, true};
    for (int redo = 0; redo < l->n_redo; redo++) {
        e->seq_par_ag_redo = l->n_redo == 2 && redo == 0;
        memset(verdict, V_UNKNOWN, (size_t)GROUPS * (size_t)n_mbs);
        for (int i = 0; i < BOUND_SLOTS * n_mbs; i++)
            bounds[i] = NAN;
        for (int dpo = 0; dpo < l->n_dpo; dpo++) {
            e->data_par_overlap = l->n_dpo == 2 ? dpo == 0 : l->dpo_fixed;
            for (int tpo = 0; tpo < l->n_tpo; tpo++) {
                set_tp_overlap(r, e, tpo);
                for (int wo = 0; wo < l->n_wo; wo++) {
                    e->weight_offload = l->n_wo == 2 && wo == 0;
                    for (int ao = 0; ao < l->n_ao; ao++) {
                        e->activations_offload = l->n_ao == 2 && ao == 0;
                        for (int oo = 0; oo < l->n_oo; oo++) {
                            e->optimizer_offload = l->n_oo == 2 && oo == 0;
                            for (int fa = 0; fa < l->n_fa; fa++) {
                                e->fused_activation = fused_values[fa];
                                int group = (((tpo * 2 + wo) * 2 + ao) * 2 + oo) * 2 + fa;
                                double *bound = &bounds[((dpo * 3 + tpo) * 2 + fa) * n_mbs];
                                for (int mi = 0; mi < n_mbs; mi++) {
                                    e->microbatch_size = mbs[mi];
                                    w->larger_mbs = n_mbs - 1 - mi;
                                    uint64_t good_before = w->good;
                                    if (try_networks(w, l, &verdict[group * n_mbs + mi],
                                                     &bound[mi]))
                                        return -1;
                                    if (r->options.mbs_break && w->good == good_before)
                                        break;
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    return 0;
}

/* The execution of a unit's outer tuple, its inner fields left zero. */
static void unit_execution(const search_request_t *r, const unit_t *u, llm_execution_t *e)
{
    memset(e, 0, sizeof *e);
    e->num_procs = r->num_procs;
    e->tensor_par = u->tp;
    e->pipeline_par = u->pp;
    e->data_par = u->dp;
    e->batch_size = u->batch;
    e->datatype = r->datatype;
    e->attention_type = LLM_ATTN_MULTIHEAD;
    e->activation_recompute = u->recompute;
    e->pipeline_interleaving = u->ppint;
    e->optimizer_sharding = u->sharding;
    e->zero_stage = u->zero;
    e->context_par = u->cp;
    e->tensor_par_comm_type = u->comm;
    e->training = true;
    e->moe_load_imbalance = 1;
    e->moe_dispatcher = r->options.moe_dispatcher;
    e->low_precision_gradients = r->options.low_precision_gradients;
    e->stack = r->options.stack;
    e->compile = r->options.compile; /* fp8_recipe follows fp8 (set_fp8) */
    e->loss_kernel = r->options.loss_kernel;
    e->pipeline_schedule = r->options.pipeline_schedule;
    e->moe_a2a_overlap = r->options.moe_a2a_overlap;
    e->optimizer_state_datatype = r->options.optimizer_state_datatype;
    e->finetune = r->finetune;
}

/* Walks one unit into acc. A pilot walk (the seed floor's) leaves the plan's progress alone. */
static int walk_unit(search_plan_t *p, size_t unit, search_result_t *acc, volatile int *cancel,
                     walk_kind_t kind)
{
    const search_request_t *r = &p->req;
    const unit_t *u = &p->units[unit];
    const bool pilot = kind == WALK_PILOT;
    const loops_t l = unit_loops(r, u, kind == WALK_COARSE);
    int64_t mbs[SEARCH_MAX_DIVISORS];
    const int n_mbs = microbatches(r, u, mbs);
    /* 24 KiB each: every group (bound slot) of every microbatch size a unit can have. Without
     * pruning the verdicts are written but never read. */
    uint8_t verdict[GROUPS * SEARCH_MAX_DIVISORS];
    double bounds[BOUND_SLOTS * SEARCH_MAX_DIVISORS];

    walk_t w;
    memset(&w, 0, sizeof w);
    w.plan = p;
    w.req = r;
    w.acc = acc;
    w.cancel = cancel;
    w.unit = (uint32_t)unit;
    w.pilot = pilot;
    w.coarse = kind == WALK_COARSE;
    w.prune = r->mode == SEARCH_EVALUATE;
    w.estimate = r->mode != SEARCH_COUNT_ONLY;
    search_rates_init(&w.rates, r->options.top_n);
    w.memo = w.estimate ? llm_memo_new() : NULL;
    llm_execution_t *e = &w.e;
    unit_execution(r, u, e);
    int net = 0;
    for (int tn = 0; tn < l.n_tn; tn++)
        for (int pn = 0; pn < l.n_pn; pn++)
            for (int dn = 0; dn < l.n_dn; dn++)
                for (int cn = 0; cn < l.n_cn; cn++) {
                    set_networks(e, &l, tn, pn, dn, cn);
                    w.nets_ok[net++] = nets_valid(&r->system, e);
                }

    int status = SEARCH_UNIT_DONE;
    /* Loop variables run 0..n-1; value i of a boolean loop of two is (i == 0): true first.
     * Fathom's two dimensions run off first, so a fixed value is one pass. The expert layouts
     * (MoE models) are outermost: each gets its own pruning verdicts. */
    int64_t eps[SEARCH_MAX_EXPERT_LAYOUTS], etps[SEARCH_MAX_EXPERT_LAYOUTS];
    const int n_exp = expert_layouts(r, u, eps, etps);
    for (int x = 0; x < n_exp; x++) {
        e->expert_par = eps[x];
        e->expert_tensor_par = etps[x];
        e->expert_par_net = llm_first_tier_connecting(&r->system, eps[x] * etps[x]);
        for (int ak = 0; ak < l.n_kernel; ak++) {
            e->attention_kernel = attention_kernel_of(r, &l, ak);
            for (int f8 = 0; f8 < l.n_fp8; f8++) {
                set_fp8(r, e, l.n_fp8 == 2 ? f8 == 1 : r->options.fp8 == SEARCH_PICK_ON);
                if (walk_inner(&w, &l, mbs, n_mbs, verdict, bounds)) {
                    status = SEARCH_UNIT_CANCELLED;
                    goto out;
                }
            }
        }
    }
out:
    llm_memo_free(w.memo);
    acc->total += w.total;
    acc->good += w.good;
    acc->bad += w.bad;
    acc->pruned += w.pruned;
    acc->estimated += w.estimated;
    if (!pilot) {
        atomic_fetch_add(&p->executions, w.index - w.reported);
        if (status == SEARCH_UNIT_DONE && kind == WALK_FULL)
            atomic_fetch_add(&p->units_done, 1);
    }
    return status;
}

search_unit_status_t search_run_unit(search_plan_t *p, size_t unit, search_result_t *acc,
                                     volatile int *cancel)
{
    return (search_unit_status_t)walk_unit(p, unit, acc, cancel, WALK_FULL);
}

static int run_units(search_plan_t *p, search_result_t *out, volatile int *cancel);

/* The two-stage search (TWO STAGES, search.h): every unit's coarse walk, ranked by its best
 * rate, then the refine_units first walked in full. 0, or 1 if cancelled. */
static int run_staged(search_plan_t *p, search_result_t *out, volatile int *cancel)
{
    const search_request_t *r = &p->req;
    seeded_unit_t *rank = malloc((p->n_units ? p->n_units : 1) * sizeof *rank);
    search_result_t coarse;
    if (!rank || search_result_init(&coarse, r->options.top_n, NULL)) {
        free(rank);
        return run_units(p, out, cancel); /* out of memory: the exhaustive walk */
    }
    search_rates_t rates;
    search_rates_init(&rates, r->options.top_n);
    int status = 0;
    for (size_t i = 0; i < p->n_units && status == 0; i++) {
        coarse.n_best = 0;
        coarse.total = coarse.good = coarse.bad = coarse.pruned = coarse.estimated = 0;
        status = walk_unit(p, i, &coarse, cancel, WALK_COARSE) != SEARCH_UNIT_DONE;
        rank[i].unit = i;
        rank[i].rate = coarse.n_best > 0 ? coarse.best[0].result.stats.sample_rate : 0;
        for (int k = 0; k < coarse.n_best; k++)
            search_rates_add(&rates, coarse.best[k].result.stats.sample_rate);
        out->total += coarse.total;
        out->good += coarse.good;
        out->bad += coarse.bad;
        out->pruned += coarse.pruned;
        out->estimated += coarse.estimated;
    }
    search_result_close(&coarse);
    if (status == 0) {
        p->seed_floor = search_rates_floor(&rates);
        qsort(rank, p->n_units, sizeof *rank, seeded_cmp);
        for (size_t k = 0; k < p->n_units && k < (size_t)r->options.refine_units; k++)
            if (walk_unit(p, rank[k].unit, out, cancel, WALK_FULL) != SEARCH_UNIT_DONE) {
                status = 1;
                break;
            }
    }
    free(rank);
    return status;
}

int search_run_all(search_plan_t *p, search_result_t *out, volatile int *cancel)
{
    return p->req.options.refine_units > 0 ? run_staged(p, out, cancel)
                                           : run_units(p, out, cancel);
}

/* Every unit in full, in order. */
static int run_units(search_plan_t *p, search_result_t *out, volatile int *cancel)
{
    for (size_t i = 0; i < p->n_units; i++) {
        if (cancel && __atomic_load_n(cancel, __ATOMIC_RELAXED))
            return 1;
        if (search_run_unit(p, i, out, cancel) != SEARCH_UNIT_DONE)
            return 1;
    }
    return 0;
}

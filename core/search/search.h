/* search.h — Calculon's optimal-execution search (`llm-optimal-execution`, calculon-ai/calculon
 * commit caa4b11, calculon/llm/optimal_execution.py), re-implemented over core/llm.
 *
 * For one model, system, processor count, maximum batch and datatype, the search walks exactly
 * Calculon's space of executions, in Calculon's order, estimates each one with llm_estimate, and
 * keeps the N best by sample rate together with the counts of executions tried, good and bad.
 *
 * The space, loop by loop (outermost first; a boolean is tried true before false, as Calculon's
 * `pick(cond, [True, False], [False])` does):
 *   tensor_par        every divisor of num_procs that also divides hidden and attn_heads
 *   pipeline_par      every divisor of min(num_procs/tp, num_blocks) dividing num_procs/tp and
 *                     num_blocks; data_par = num_procs / (tp * pp)
 *   interleaving      1 when pp = 1, else every divisor of num_blocks / pp
 *   batch_size        the largest multiple of dp not above max_batch_size (skipped if dp > max)
 *   recompute         full, attn_only, none
 *   optimizer_sharding  [true, false] when dp > 1, else [false]
 *   tp comm type      ar, p2p_rs_ag, rs_ag
 *   ---- one work unit is one tuple of the loops above ----
 *   seq_par_ag_redo   [true, false] when comm = rs_ag and recompute != full, else [false]
 *   data_par_overlap  [true, false] when dp > 1 and DP overlap allowed, else [false]
 *   tensor_par_overlap  none, ring, pipe when tp > 1 and TP overlap allowed, else none;
 *                     under stack torchtitan with compile, async_tp false, true instead
 *   weight_offload    [true, false] when the system has tier-2 memory, else [false]
 *   activations_offload [true, false] when tier-2 memory exists and recompute != full
 *   optimizer_offload [true, false] when the system has tier-2 memory
 *   fused_activation  [true] / [false] / [false, true] for the modes true / false / all
 *                     (Calculon's "all" really is false first)
 *   microbatch_size   every divisor of batch/dp whose product with seq_size tp divides
 *   tensor_par_net, pipeline_par_net, data_par_net: every network when the degree > 1, else 0
 * Fathom's dimensions, outermost in a unit (so each value gets its own pruning verdicts): for a
 * model with experts, every expert layout (expert_par dividing num_experts, then
 * expert_tensor_par dividing expert_feedforward, their product dividing tp·dp), the all-to-all on
 * the lowest tier the expert group fits in, balanced routing; then, one value unless the request
 * frees them, attention_kernel (unfused, then fused) and fp8 (false, then true). Their defaults
 * (unfused, false) and a dense model leave Calculon's space exactly as it was.
 * When freed, context_par (a unit loop beside tensor_par over every degree whose two chunks per
 * rank split the sequence, with its network loop innermost) and zero_stage (the sharding loop's
 * values: Calculon's true, false — stages 1 then 0 — then 2 and 3). For the modern block
 * (model.calculon_block false) pipeline_par runs over every divisor up to num_blocks, not only
 * those dividing it (the first stages take the extra blocks), and interleaving over the
 * divisors of the first stage's blocks.
 * The constraints in search_options_t (no_offload, exact_batch, max_tensor_par,
 * max_pipeline_par, and the pins tensor_par, pipeline_par, microbatch_size, recompute) drop the
 * loop values they exclude; the rest of the walk is as above.
 * With mbs_break, once a microbatch size gives no good execution over all network assignments,
 * the larger microbatch sizes of that loop are not tried (and not counted).
 *
 * Counts (Calculon's meaning): total = every execution the search tried; good = estimated and
 * fits in memory; bad = refused by the model (llm_estimate returned -1) or does not fit. For the
 * modern block, pruned = executions a lower bound on their step time proved unable to rank,
 * counted without being estimated (see BOUND PRUNING in search.c); good + bad + pruned = total.
 *
 * Ranking and ties: the best list is ordered by sample rate, highest first; equal sample rates
 * keep enumeration order (the earlier execution of the walk above ranks first). That is exactly
 * what Calculon's repeated stable sort gives, and because it is a total order on (sample rate,
 * enumeration position), the best list does not depend on how units were shared among threads or
 * in which order partial results were merged. A NaN sample rate never ranks.
 *
 * Threads: core has none. The caller builds a plan (search_plan_create), then runs its units
 * (search_run_unit) on any threads, each thread into its own search_result_t, and merges the
 * results (search_merge). A plan is read-only during the run except for its progress counters,
 * which are atomic: search_run_unit may run concurrently on one plan with distinct results.
 *
 * Caps: num_procs and max_batch_size <= 2^20 (so any number in the space has at most 240
 * divisors), top_n <= SEARCH_TOP_N_MAX, at most SEARCH_MAX_UNITS work units; a request past a
 * cap is refused with FATHOM_E_LIMIT_EXCEEDED or FATHOM_E_INVALID_FIELD naming the field. */
#ifndef FATHOM_SEARCH_H
#define FATHOM_SEARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fathom_error.h"
#include "llm.h"
#include "model.h"

#define SEARCH_TOP_N_MAX 100
#define SEARCH_MAX_PROCS 1048576     /* 2^20 */
#define SEARCH_MAX_BATCH 1048576     /* 2^20 */
#define SEARCH_MAX_UNITS 262144      /* work units of one plan (16 MiB of plan at most) */
#define SEARCH_MAX_DIVISORS 512      /* > 240, the most divisors a number <= 2^20 has */

/* Calculon's --fused_activation: true, false or all (= both, false first). */
typedef enum {
    SEARCH_FUSED_TRUE = 0,
    SEARCH_FUSED_FALSE = 1,
    SEARCH_FUSED_ALL = 2
} search_fused_t;

extern const char *const search_fused_names[]; /* "true", "false", "all", NULL */

/* An integer dimension left free (every value), and Calculon's own ZeRO loop. */
#define SEARCH_FREE (-1)
#define SEARCH_ZERO_CALCULON (-2)

/* A dimension of Fathom's that a request fixes to one value or frees (both, off first). */
typedef enum { SEARCH_PICK_OFF = 0, SEARCH_PICK_ON = 1, SEARCH_PICK_ALL = 2 } search_pick_t;

typedef struct {
    bool mbs_break;     /* -m: stop growing the microbatch once a size gives nothing good */
    int top_n;          /* 1..SEARCH_TOP_N_MAX */
    bool no_tp_overlap; /* only tensor_par_overlap = none (and async_tp off) */
    bool no_dp_overlap; /* only data_par_overlap = false */
    search_fused_t fused_activation;
    search_pick_t attention_kernel; /* OFF: unfused, ON: fused, ALL: both */
    search_pick_t fp8;              /* OFF: BF16/FP16 GEMMs, ON: FP8 GEMMs, ALL: both */
    int64_t context_par;            /* fixed degree (default 1), or SEARCH_FREE: every degree */
    int zero_stage;                 /* SEARCH_ZERO_CALCULON (default: 1 then 0 when data_par > 1,
                                     * Calculon's sharding loop; a PyTorch stack's FSDP: 3 then
                                     * 2), 0..3 fixed, or SEARCH_FREE */
    /* A planner's constraints, narrowing the space (all off by default, so Calculon's space and
     * counts are unchanged): */
    bool no_offload;          /* only weight/activations/optimizer_offload = false */
    bool exact_batch;         /* batch = max_batch_size exactly; a dp that does not divide it
                               * is skipped (instead of the largest multiple of dp below it) */
    bool fed_batch;           /* batch = the multiple of dp nearest max_batch_size (halves
                               * up), and at least dp·pp so that every replica's pipeline has a
                               * microbatch for each stage (a plan's "auto" batch; under
                               * DualPipe a multiple of 2·dp, at least 2·dp·pp, its even
                               * microbatch count); not with exact_batch */
    int64_t max_tensor_par;   /* 0: no cap; else tensor_par <= this */
    int64_t max_pipeline_par; /* 0: no cap; else pipeline_par <= this */
    /* A layout a run's report states, pinned (doc/plan.md, "What the published runs say"):
     * 0 / SEARCH_FREE (default): searched; else only that degree or that recompute. */
    int64_t tensor_par;   /* 0: free; else tensor_par == this */
    int64_t pipeline_par; /* 0: free; else pipeline_par == this */
    int64_t microbatch_size; /* 0: free; else microbatch_size == this (a divisor of the
                              * local batch, or the layout has none) */
    int recompute; /* SEARCH_FREE: free; else the activation_recompute (llm_recompute_t) of
                    * every execution */
    llm_moe_dispatcher_t moe_dispatcher; /* of every execution (default alltoall) */
    /* Full recompute reruns only the fewest blocks of each pipeline chunk that fit
     * (execution.recompute_blocks; modern block, no activation offload); default every block. */
    bool fewest_recompute_blocks;
    /* An execution without full recompute that does not fit tries selective recompute of
     * modules (execution.recompute_modules), the fewest first: moe_act, then mla_up_proj with
     * it, then the whole moe MLP (modern block with experts or MLA); default never. */
    bool fewest_recompute_modules;
    /* Every execution holds its gradients in the datatype, not fp32
     * (execution.low_precision_gradients): less memory, so more layouts fit; default off. */
    bool low_precision_gradients;
    /* The software stack every execution runs (execution.stack, doc/stacks.md), with
     * torch.compile for the PyTorch stacks and the stack's own FP8 recipe; Megatron's by
     * default, which leaves every execution as it was. */
    llm_stack_t stack;
    bool compile;
    /* The PyTorch stacks' loss kernel (execution.loss_kernel): torch's by default. */
    llm_loss_kernel_t loss_kernel;
    /* 0 (default): one exhaustive walk. > 0: the two-stage search (TWO STAGES below), whose
     * second stage walks this many work units in full. */
    int refine_units;
    /* Fixed for every execution the walk tries (no loop of their own, so the counts keep their
     * closed form); the defaults leave every execution as it was: */
    /* execution.pipeline_schedule. 1F1B (default) is interleaved where the interleaving loop
     * gives > 1 chunks; "interleaved" keeps only those, "zero_bubble" and "dualpipe" only one
     * chunk on pipeline_par >= 2 (dualpipe: even). Layouts the schedule cannot run are not
     * walked (like max_pipeline_par's); DualPipe's microbatch rule (an even number, at least
     * 2·pp) reads the microbatch size, so an execution breaking it is counted bad. */
    llm_pp_schedule_t pipeline_schedule;
    bool moe_a2a_overlap;      /* execution.moe_a2a_overlap of every execution */
    bool fp8_activation_cache; /* execution.fp8_activation_cache of every FP8 execution */
    bool fp8_params;           /* execution.fp8_params of every FP8 execution */
    llm_state_dtype_t optimizer_state_datatype; /* of every execution (default float32) */
} search_options_t;

/* How a unit is run. Not part of the request: a knob for tests and benchmarks. */
typedef enum {
    /* Estimate what is needed: skips executions whose verdict is already known to be bad
     * (see the pruning note in search.c); same result as SEARCH_EVALUATE_ALL. */
    SEARCH_EVALUATE = 0,
    /* Estimate every execution with llm_estimate, as Calculon does. */
    SEARCH_EVALUATE_ALL = 1,
    /* Walk the loops and count (total only, good = bad = 0); refused with mbs_break, whose
     * walk depends on the estimates. */
    SEARCH_COUNT_ONLY = 2
} search_mode_t;

typedef struct {
    fathom_model_t model;
    llm_system_t system; /* must have passed llm_system_check */
    int64_t num_procs;      /* 1..SEARCH_MAX_PROCS */
    int64_t max_batch_size; /* 1..SEARCH_MAX_BATCH */
    llm_datatype_t datatype;
    search_options_t options;
    search_mode_t mode;
    llm_finetune_t finetune; /* execution.finetune of every execution (method NONE: none) */
} search_request_t;

/* Defaults of the options: no mbs_break, top 1, both overlaps allowed, fused true. */
void search_options_default(search_options_t *o);

/* One ranked execution. (unit, index) is its enumeration position: the tie-breaker. */
typedef struct {
    llm_execution_t execution;
    llm_result_t result;
    uint32_t unit;  /* work unit it came from */
    uint32_t index; /* its rank within the unit's walk */
} search_entry_t;

/* A sample of the good executions, for plotting the whole space (sample rate against memory)
 * without keeping millions of points. A good execution at enumeration position (unit, index)
 * is sampled when splitmix64(unit << 32 | index) is a multiple of the plan's stride,
 * max(1, ceil(max executions / SEARCH_SAMPLE_MAX)); the sample keeps the SEARCH_SAMPLE_MAX
 * earliest by position. Like the best list it depends only on the space, not on threads. */
#define SEARCH_SAMPLE_MAX 4096

typedef struct {
    double sample_rate;     /* samples/s */
    double mem_tier1_bytes; /* per processor */
    double mem_tier2_bytes;
    uint32_t unit, index;   /* enumeration position */
} search_point_t;

/* Sorts points by enumeration position (merges leave them in no particular order). */
void search_points_sort(search_point_t *points, int n);

/* The best executions and counts of some units. init/close: the caller owns the struct; init
 * allocates room for top_n entries (<= SEARCH_TOP_N_MAX) and SEARCH_SAMPLE_MAX points. */
typedef struct {
    int top_n;
    int n_best;            /* 0..top_n */
    search_entry_t *best;  /* n_best entries, best first */
    int n_points;
    search_point_t *points; /* the sample of good executions, in no particular order */
    uint64_t total, good, bad;
    /* Executions the bound pruning proved unable to rank, neither estimated nor checked for
     * memory (0 for Calculon's block; good + bad + pruned = total). */
    uint64_t pruned;
    uint64_t estimated; /* llm_estimate calls made, bounds included */
} search_result_t;

int search_result_init(search_result_t *r, int top_n, fathom_error_t *err);
void search_result_close(search_result_t *r);

/* The work units, and the request they come from. Opaque; create/free. */
typedef struct search_plan search_plan_t;

/* Checks the request (fields named "num_procs", "max_batch_size", "options.top_n", "model",
 * "system"...) and lists the work units. NULL with err filled when refused. */
search_plan_t *search_plan_create(const search_request_t *req, fathom_error_t *err);
void search_plan_free(search_plan_t *p);

/* Checks the options that fix an execution field (pipeline_schedule, moe_a2a_overlap,
 * fp8_activation_cache, fp8_params, optimizer_state_datatype) against the model and
 * options.fp8; errors name "options.<field>". Part of search_plan_create's checks, and the
 * codec's, so that a plan refuses them by name. */
int search_check_fixed_execution(const search_request_t *r, fathom_error_t *err);

size_t search_plan_units(const search_plan_t *p);
const search_request_t *search_plan_request(const search_plan_t *p);
/* Executions the search will try: exact without mbs_break, an upper bound with it (and for a
 * two-stage plan: its coarse executions plus its K largest units). Computed from the loop sizes
 * without walking them, so a caller can refuse a search that is too large. */
uint64_t search_plan_max_executions(const search_plan_t *p);

typedef enum { SEARCH_UNIT_DONE = 0, SEARCH_UNIT_CANCELLED = 1 } search_unit_status_t;

/* Walks unit `unit` and adds its executions to *acc (counts and best list). Thread-safe for
 * distinct accumulators. `cancel` (may be NULL) is read every 4096 executions: once it is
 * non-zero the walk stops and SEARCH_UNIT_CANCELLED is returned, leaving *acc holding a part of
 * the unit (the caller discards it). */
search_unit_status_t search_run_unit(search_plan_t *p, size_t unit, search_result_t *acc,
                                     volatile int *cancel);

/* Adds one point to r's sample (keeping the SEARCH_SAMPLE_MAX earliest by position). */
void search_result_add_point(search_result_t *r, const search_point_t *p);

/* Adds src's counts, best entries and points to dst (any order of merges gives the same dst). */
void search_merge(search_result_t *dst, const search_result_t *src);

/* Progress of a plan, readable from any thread while units run: units finished, and
 * executions walked (updated every 4096 executions and at the end of each unit). */
typedef struct {
    uint64_t units_done;
    uint64_t units_total;
    uint64_t executions;
} search_progress_t;

void search_progress(const search_plan_t *p, search_progress_t *out);

/* Runs every unit of a plan on the calling thread (tests, small searches); a two-stage plan
 * runs its two stages. 0, or 1 if cancelled. */
int search_run_all(search_plan_t *p, search_result_t *out, volatile int *cancel);

/* TWO STAGES (options.refine_units = K > 0), for spaces too large to walk: a 671B MoE on
 * thousands of GPUs has tens of millions of executions per search.
 *   Stage 1, the coarse layout: every unit's outer tuple and its layout loops (expert layout,
 *   attention kernel, FP8, fused activation, microbatch size) are walked with the choices that
 *   only move communication fixed to one representative each — no seq_par_ag_redo, DP overlap
 *   on when the space has it, no TP overlap, nothing offloaded, and the network assignment that
 *   puts tensor, context, data and then pipeline parallelism on the lowest tier that holds them
 *   (Megatron's rank order, fastest link innermost), or the walk's first accepted one when the
 *   system refuses that.
 *   Stage 2, the refinement: the K units whose coarse executions ran fastest (ties: the earlier
 *   unit; units where nothing fit come last, in order) are walked in full, with the best coarse
 *   rate as the bound pruning's floor (those executions are in the space, so the floor is one
 *   the answer reaches).
 * The answer is the best of stage 2, at its position in the full walk, so it is the exhaustive
 * search's answer whenever the exhaustive best lies in a refined unit; the tests check that on
 * every case they can walk both ways. Counts add both stages: total is every execution tried
 * (coarse ones included), and it never exceeds search_plan_max_executions. Neither the seed
 * floor's pilot walks nor the sample of points is made (the sample holds stage 2's points). */
#define SEARCH_REFINE_UNITS 64

/* Executions an exhaustive walk of p would try, whether or not p is two-stage (the same as
 * search_plan_max_executions for a one-stage plan). */
uint64_t search_plan_exhaustive_executions(const search_plan_t *p);

#endif

/* llm_memo.c — llm_estimate_memo's memo: the costs of a layer table (llm__block_stats,
 * llm__block_memory) kept for the next estimates that build the same table, and the costs of its
 * layers for the tables that share some of them.
 *
 * DESIGN: the search estimates thousands of executions of one model on one system, and most of
 * them share the tables of the embedding, the output layer and an MoE model's dense blocks, and
 * many the block's own (what changes is the layout around it: data and expert parallelism, the
 * schedule, the overlaps). A table's costs are a function of the table, the costing context
 * (llm__ctx_t: rates, curve pointers, element sizes, optimizer shards), the system the context
 * and the communication layers point into, and three things of the execution and the sizes
 * (training, full recompute of the blocks, the block's activation size; llm_internal.h). An
 * entry keeps all of them byte for byte, and a hit needs every byte equal, so it returns what
 * costing the table would (bytes of padding that differ cost a miss, never a wrong hit). One
 * input is compared only where it can change the result: the expert optimizer shards, where the
 * entry's table has an expert layer (only l->expert layers read them).
 *
 * A table the memo lacks usually differs from one it holds in a few layers (the expert layers
 * when expert parallelism changes, the recompute flags, or only the optimizer shards when data
 * parallelism changes). Its layers are costed one by one (llm__layer_costs_t: every pass, the TP
 * collectives, an overlapped layer's exposure), a function of the layer, the context and
 * `training`; so a layer byte for byte the one at its place in an entry's table costed under the
 * same system, `training` and context takes that entry's costs, all of them where the optimizer
 * shards it reads are equal too, all but its optimizer step (costed afresh) otherwise. The block
 * then adds them up in Calculon's order as costing it afresh does (llm__block_stats_costed): the
 * sums are bit for bit the same. An entry whose costing met an uncovered curve lends nothing.
 *
 * The systems are compared once per estimate (llm__memo_system) and entries carry the generation
 * of theirs; the memo keeps each system's copy as the estimate costs it (the collectives its
 * stack resolves) and the estimate reads that copy, which spares it copying the 10 KB system to
 * set one field and keeps the addresses the entries hold fixed. The caller owns the memo and
 * uses it from one thread at a time; nothing here is shared, and an estimate allocates nothing.
 * Least recently used entries make room. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "llm_internal.h"

#define MEMO_ENTRIES 8 /* a block, the dense block, the embedding, the output layer, and spares */
#define MEMO_SYSTEMS 2 /* the search's system and its ideal-network bound */

typedef struct {
    uint64_t system; /* generation of the system (0: empty) */
    uint64_t used;   /* clock of the last use */
    unsigned flags;  /* what the call was asked and read of the execution (key_flags) */
    int64_t activation_size;
    llm__ctx_t c;    /* the context as the call found it */
    bool experts;    /* whether the table has an expert layer (same_context) */
    int num_layers;
    llm__layer_t layers[LLM__MAX_LAYERS]; /* the table as the call found it */
    llm__block_stats_t out;
    const char *uncovered;                /* c->uncovered after the call */
    double net_exposed[LLM__MAX_LAYERS];  /* each layer's net_exposed_time after the call */
    /* each layer's costs, for a table costed (not one whose memory alone was asked) */
    llm__layer_costs_t costs[LLM__MAX_LAYERS];
} entry_t;

/* A system as a caller gave it (`seen`) and as the estimates cost it (`costed`: seen with the
 * collectives the execution's stack resolves, llm_model.c). The estimate reads `costed`, so the
 * pointers its context and tables keep into the system stay valid, and byte-equal, as long as
 * the generation lives: an entry needs no caller's system kept at one address. */
typedef struct {
    uint64_t generation, used;
    llm_system_t seen, costed;
} system_t;

struct llm_memo {
    uint64_t generations, clock;
    system_t systems[MEMO_SYSTEMS];
    entry_t entries[MEMO_ENTRIES];
};

llm_memo_t *llm_memo_new(void)
{
    return calloc(1, sizeof(llm_memo_t));
}

void llm_memo_free(llm_memo_t *memo)
{
    free(memo);
}

const llm_system_t *llm__memo_system(llm_memo_t *memo, const llm_system_t *s,
                                    llm_collectives_t collectives, uint64_t *generation)
{
    system_t *lru = &memo->systems[0];
    for (int i = 0; i < MEMO_SYSTEMS; i++) {
        system_t *y = &memo->systems[i];
        if (y->generation != 0 && y->costed.collectives == collectives &&
            memcmp(&y->seen, s, sizeof *s) == 0) {
            y->used = ++memo->clock;
            *generation = y->generation;
            return &y->costed;
        }
        if (y->used < lru->used)
            lru = y;
    }
    /* a new generation: the entries of the system it replaces are never matched again */
    memcpy(&lru->seen, s, sizeof *s);
    memcpy(&lru->costed, s, sizeof *s);
    lru->costed.collectives = collectives;
    lru->generation = ++memo->generations;
    lru->used = ++memo->clock;
    *generation = lru->generation;
    return &lru->costed;
}

enum { F_MEMORY = 1, F_BLOCKS = 2, F_TRAINING = 4, F_FULL = 8 };

static unsigned key_flags(const llm_execution_t *e, bool blocks, bool memory)
{
    return (memory ? F_MEMORY : 0) | (blocks ? F_BLOCKS : 0) | (e->training ? F_TRAINING : 0) |
           (blocks && e->activation_recompute == LLM_RECOMPUTE_FULL ? F_FULL : 0);
}

/* Whether the context an entry keeps is c, its expert optimizer shards compared only where the
 * entry's table has an expert layer: only l->expert layers read them, and a table equal to the
 * entry's has one exactly when the entry's does. */
static bool same_context(const entry_t *x, const llm__ctx_t *c)
{
    if (x->experts)
        return memcmp(&x->c, c, sizeof *c) == 0;
    const char *a = (const char *)&x->c, *b = (const char *)c;
    const size_t o = offsetof(llm__ctx_t, expert_optim_shards), d = sizeof c->expert_optim_shards;
    return memcmp(a, b, o) == 0 && memcmp(a + o + d, b + o + d, sizeof *c - o - d) == 0;
}

static bool same(const entry_t *x, unsigned flags, int64_t act, const llm__ctx_t *c,
                 const llm__block_t *blk)
{
    return x->system == c->memo_system && x->flags == flags && x->activation_size == act &&
           x->num_layers == blk->num_layers && same_context(x, c) &&
           memcmp(x->layers, blk->layers, (size_t)blk->num_layers * sizeof blk->layers[0]) == 0;
}

static bool has_experts(const llm__block_t *blk)
{
    for (int i = 0; i < blk->num_layers; i++)
        if (blk->layers[i].expert)
            return true;
    return false;
}

/* Whether x and key are the same context but for the optimizer shards. */
static bool same_but_shards(const llm__ctx_t *x, const llm__ctx_t *key)
{
    const char *a = (const char *)x, *b = (const char *)key;
    const size_t o = offsetof(llm__ctx_t, optim_shards), eo = offsetof(llm__ctx_t, expert_optim_shards);
    const size_t d = sizeof key->optim_shards;
    _Static_assert(offsetof(llm__ctx_t, optim_shards) < offsetof(llm__ctx_t, expert_optim_shards),
                   "the ranges below");
    return memcmp(a, b, o) == 0 && memcmp(a + o + d, b + o + d, eo - o - d) == 0 &&
           memcmp(a + eo + d, b + eo + d, sizeof *key - eo - d) == 0;
}

/* The entries that may lend their layers' costs to a table the memo lacks, most recently used
 * first; returns how many. An entry may when its table (a block's or not, as this one) was
 * costed under the same system, `training` and context but for the optimizer shards (only the
 * optimizer step reads them: lent checks them), and its costing left c->uncovered as it found
 * it (then none of its layers met an uncovered curve, or one was already recorded: a lent layer
 * records nothing costing it would have). */
static int lenders(llm_memo_t *memo, unsigned flags, const llm__ctx_t *key,
                   const entry_t *from[MEMO_ENTRIES])
{
    const unsigned kept = F_MEMORY | F_BLOCKS | F_TRAINING;
    if (flags & F_MEMORY)
        return 0;
    int n = 0;
    for (int i = 0; i < MEMO_ENTRIES; i++) {
        const entry_t *x = &memo->entries[i];
        if (x->system != key->memo_system || (x->flags & kept) != (flags & kept) ||
            x->uncovered != x->c.uncovered || !same_but_shards(&x->c, key))
            continue;
        int at = n++;
        for (; at > 0 && from[at - 1]->used < x->used; at--)
            from[at] = from[at - 1];
        from[at] = x;
    }
    return n;
}

/* The costs of l, layer j of a table, from the first lender whose layer j is byte for byte l
 * (NULL: none), and in *known how far they hold: all when the lender's table was costed under
 * the optimizer shards l reads (llm__layer_flops: the expert shards for an expert layer, the
 * others otherwise), all but the optimizer step otherwise. */
static const llm__layer_costs_t *lent(const entry_t *const *from, int n, const llm__ctx_t *key,
                                      const llm__layer_t *l, int j, llm__known_t *known)
{
    for (int i = 0; i < n; i++)
        if (j < from[i]->num_layers && memcmp(&from[i]->layers[j], l, sizeof *l) == 0) {
            const double *x = l->expert ? &from[i]->c.expert_optim_shards
                                        : &from[i]->c.optim_shards;
            const double *y = l->expert ? &key->expert_optim_shards : &key->optim_shards;
            *known = memcmp(x, y, sizeof *x) == 0 ? LLM__LENT_ALL : LLM__LENT_BUT_OPTIM;
            return &from[i]->costs[j];
        }
    *known = LLM__COST_AFRESH;
    return NULL;
}

static void memoized(llm__block_t *blk, llm__ctx_t *c, const llm_execution_t *e,
                     const llm__sizes_t *z, bool blocks, bool memory, llm__block_stats_t *b)
{
    llm_memo_t *memo = c->memo;
    const unsigned flags = key_flags(e, blocks, memory);
    const int64_t act = z->activation_size;
    for (int i = 0; i < MEMO_ENTRIES; i++) {
        entry_t *x = &memo->entries[i];
        if (x->system != 0 && same(x, flags, act, c, blk)) {
            *b = x->out;
            c->uncovered = x->uncovered;
            for (int j = 0; j < blk->num_layers; j++)
                blk->layers[j].net_exposed_time = x->net_exposed[j];
            x->used = ++memo->clock;
            return;
        }
    }
    /* a table the memo lacks: costed into the least recently used entry, each layer an entry
     * lends taken from it (before the entry is overwritten: it may be a lender, whose layer j
     * goes to its own place) */
    entry_t *lru = &memo->entries[0];
    for (int i = 1; i < MEMO_ENTRIES; i++)
        if (memo->entries[i].used < lru->used)
            lru = &memo->entries[i];
    llm__known_t known[LLM__MAX_LAYERS];
    if (!memory) {
        const entry_t *from[MEMO_ENTRIES];
        const int n = lenders(memo, flags, c, from);
        for (int j = 0; j < blk->num_layers; j++) {
            const llm__layer_costs_t *k = lent(from, n, c, &blk->layers[j], j, &known[j]);
            if (k && k != &lru->costs[j])
                lru->costs[j] = *k;
        }
    }
    lru->system = c->memo_system;
    lru->flags = flags;
    lru->activation_size = act;
    memcpy(&lru->c, c, sizeof *c);
    lru->experts = has_experts(blk);
    lru->num_layers = blk->num_layers;
    memcpy(lru->layers, blk->layers, (size_t)blk->num_layers * sizeof blk->layers[0]);
    if (memory)
        llm__block_memory_fresh(blk, c, e, z, blocks, b);
    else
        llm__block_stats_costed(blk, c, e, z, blocks, known, lru->costs, NULL, b);
    for (int j = 0; j < blk->num_layers; j++)
        lru->net_exposed[j] = blk->layers[j].net_exposed_time;
    lru->out = *b;
    lru->uncovered = c->uncovered;
    lru->used = ++memo->clock;
}

void llm__block_stats(llm__block_t *blk, llm__ctx_t *c, const llm_execution_t *e,
                      const llm__sizes_t *z, bool blocks, llm__block_stats_t *b)
{
    if (c->memo)
        memoized(blk, c, e, z, blocks, false, b);
    else
        llm__block_stats_fresh(blk, c, e, z, blocks, b);
}

void llm__block_memory(llm__block_t *blk, llm__ctx_t *c, const llm_execution_t *e,
                       const llm__sizes_t *z, bool blocks, llm__block_stats_t *b)
{
    if (c->memo)
        memoized(blk, c, e, z, blocks, true, b);
    else
        llm__block_memory_fresh(blk, c, e, z, blocks, b);
}

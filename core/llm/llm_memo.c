/* llm_memo.c — llm_estimate_memo's memo: the costs of a layer table (llm__block_stats,
 * llm__block_memory) kept for the next estimates that build the same table.
 *
 * DESIGN: the search estimates thousands of executions of one model on one system, and most of
 * them share the tables of the embedding, the output layer and an MoE model's dense blocks, and
 * many the block's own (what changes is the layout around it: data and expert parallelism, the
 * schedule, the overlaps). A table's costs are a function of the table, the costing context
 * (llm__ctx_t: rates, curve pointers, element sizes, optimizer shards), the system the context
 * and the communication layers point into, and three things of the execution and the sizes
 * (training, full recompute of the blocks, the block's activation size; llm_internal.h). An
 * entry keeps all of them byte for byte, and a hit needs every byte equal, so it returns what
 * costing the table would (bytes of padding that differ cost a miss, never a wrong hit). Two
 * inputs are normalised before the comparison because they cannot change the result: the expert
 * optimizer shards of a table without expert layers (only l->expert layers read them). The
 * systems are compared once per estimate (llm__memo_system) and entries carry the generation of
 * theirs; the memo keeps each system's copy as the estimate costs it (the collectives its stack
 * resolves) and the estimate reads that copy, which spares it copying the 10 KB system to set
 * one field and keeps the addresses the entries hold fixed. The caller owns the memo and uses it from one thread at a time; nothing here is
 * shared, and an estimate allocates nothing. Least recently used entries make room. */
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
    llm__ctx_t c;    /* the context as the call found it, normalised (entry_key) */
    int num_layers;
    llm__layer_t layers[LLM__MAX_LAYERS]; /* the table as the call found it */
    llm__block_stats_t out;
    const char *uncovered;                /* c->uncovered after the call */
    double net_exposed[LLM__MAX_LAYERS];  /* each layer's net_exposed_time after the call */
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

/* The context as an entry keeps it: copied byte for byte, the expert optimizer shards cleared
 * when no layer of the table is an expert's. */
static void entry_key(const llm__ctx_t *c, const llm__block_t *blk, llm__ctx_t *key)
{
    memcpy(key, c, sizeof *key);
    for (int i = 0; i < blk->num_layers; i++)
        if (blk->layers[i].expert)
            return;
    key->expert_optim_shards = 0;
}

static bool same(const entry_t *x, unsigned flags, int64_t act, const llm__ctx_t *key,
                 const llm__block_t *blk)
{
    return x->system == key->memo_system && x->flags == flags && x->activation_size == act &&
           x->num_layers == blk->num_layers && memcmp(&x->c, key, sizeof *key) == 0 &&
           memcmp(x->layers, blk->layers, (size_t)blk->num_layers * sizeof blk->layers[0]) == 0;
}

static void memoized(llm__block_t *blk, llm__ctx_t *c, const llm_execution_t *e,
                     const llm__sizes_t *z, bool blocks, bool memory, llm__block_stats_t *b)
{
    llm_memo_t *memo = c->memo;
    const unsigned flags = key_flags(e, blocks, memory);
    const int64_t act = z->activation_size;
    llm__ctx_t key;
    entry_key(c, blk, &key);
    entry_t *lru = &memo->entries[0];
    for (int i = 0; i < MEMO_ENTRIES; i++) {
        entry_t *x = &memo->entries[i];
        if (x->system != 0 && same(x, flags, act, &key, blk)) {
            *b = x->out;
            c->uncovered = x->uncovered;
            for (int j = 0; j < blk->num_layers; j++)
                blk->layers[j].net_exposed_time = x->net_exposed[j];
            x->used = ++memo->clock;
            return;
        }
        if (x->used < lru->used)
            lru = x;
    }
    lru->system = key.memo_system;
    lru->flags = flags;
    lru->activation_size = act;
    memcpy(&lru->c, &key, sizeof key);
    lru->num_layers = blk->num_layers;
    memcpy(lru->layers, blk->layers, (size_t)blk->num_layers * sizeof blk->layers[0]);
    if (memory)
        llm__block_memory_fresh(blk, c, e, z, blocks, b);
    else
        llm__block_stats_fresh(blk, c, e, z, blocks, b);
    lru->out = *b;
    lru->uncovered = c->uncovered;
    for (int j = 0; j < blk->num_layers; j++)
        lru->net_exposed[j] = blk->layers[j].net_exposed_time;
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

/* test_llm_memo.c — llm_estimate_memo (core/llm/llm_memo.c) gives llm_estimate's result bit for
 * bit: on layouts that share layer tables (the memo's hits), after the system changes in place
 * (it must miss), and when an efficiency curve leaves an operation uncovered (the refusal is
 * replayed), and when a table takes the costs of layers another entry holds (with other
 * optimizer shards, expert layers or recompute flags; never from a table that met an uncovered
 * curve). The dense block of an MoE model built on its MoE block's attention
 * (llm__build_block_like) against the table built afresh. And the scan for the heaviest
 * pipeline rank (llm_memory.c), which leaves out the ranks that cannot be heavier, against every
 * rank's memory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "llm_codec.h"
#include "llm_internal.h"
#include "llm_test_util.h"
#include "model_codec.h"

static fathom_model_t model_preset(const char *name)
{
    fathom_model_t m;
    fathom_error_t err;
    json_t *v = json_string(name);
    assert_int_equal(codec_model_decode(v, "model", presets, &m, &err), 0);
    json_decref(v);
    return m;
}

static llm_system_t system_preset(const char *name)
{
    llm_system_t s;
    fathom_error_t err;
    json_t *v = json_string(name);
    assert_int_equal(codec_llm_system_decode(v, "system", presets, &s, &err), 0);
    json_decref(v);
    return s;
}

/* The two results agree bit for bit in everything a caller reads. */
static void assert_same(const llm_result_t *a, const llm_result_t *b)
{
    assert_memory_equal(&a->stats, &b->stats, sizeof a->stats);
    assert_true(a->fits_memory == b->fits_memory);
    assert_memory_equal(&a->mem_tier1_bytes, &b->mem_tier1_bytes, sizeof(double));
    assert_memory_equal(&a->mem_tier2_bytes, &b->mem_tier2_bytes, sizeof(double));
    assert_int_equal(a->blocks_per_proc, b->blocks_per_proc);
    assert_int_equal(a->num_microbatches, b->num_microbatches);
    const llm_step_extra_t *x = &a->extra, *y = &b->extra;
    assert_memory_equal(&x->hardware_flops, &y->hardware_flops, sizeof(double));
    assert_memory_equal(&x->outer_layers_time, &y->outer_layers_time, sizeof(double));
    assert_memory_equal(&x->expert_parallel_comm, &y->expert_parallel_comm, sizeof(double));
    assert_memory_equal(&x->host_exposed, &y->host_exposed, sizeof(double));
    assert_memory_equal(&x->memory.stored, &y->memory.stored, sizeof x->memory.stored);
    assert_memory_equal(&x->memory.working, &y->memory.working, sizeof x->memory.working);
    assert_memory_equal(&x->memory.weights, &y->memory.weights, sizeof x->memory.weights);
    for (int i = 0; i < 3; i++) {
        const llm_stage_memory_t *p = i < 2 ? &x->stages[i] : &x->heaviest;
        const llm_stage_memory_t *q = i < 2 ? &y->stages[i] : &y->heaviest;
        assert_memory_equal(&p->total, &q->total, sizeof(double));
        assert_int_equal(p->index, q->index);
    }
}

/* DeepSeek-V3 (MLA, 256 experts, dense first blocks, MTP) and Llama 3 70B on H100, on Megatron
 * and on torchtitan, eager and compiled, with full recompute of every block or of some: every
 * layout twice through one memo (the second pass finds every table), each against
 * llm_estimate. */
static void memo_equals_fresh(void **state)
{
    (void)state;
    static const char *const models[] = {"deepseek-v3", "llama3-70B"};
    const llm_system_t s = system_preset("h100_sxm");
    llm_memo_t *memo = llm_memo_new();
    assert_non_null(memo);
    int compared = 0;
    for (int mi = 0; mi < 2; mi++) {
        const fathom_model_t m = model_preset(models[mi]);
        for (int pass = 0; pass < 2; pass++)
            for (int64_t tp = 1; tp <= 2; tp++)
                for (int64_t pp = 8; pp <= 16; pp *= 2)
                    for (int rec = 0; rec < 3; rec++)
                        for (int ov = 0; ov < 4; ov++) {
                            llm_execution_t e = test_layout(tp, pp, 1024 / (tp * pp));
                            /* the stacks alternate through one memo: a table of one must never
                             * answer for the other's (their passes and kernels differ) */
                            e.stack = ov >= 2 ? LLM_STACK_TORCHTITAN : LLM_STACK_MEGATRON;
                            e.compile = ov == 3; /* else as ov 2: only the context differs */
                            e.fp8_recipe = ov >= 2 ? LLM_FP8_TENSORWISE : LLM_FP8_CURRENT;
                            e.batch_size = 2048;
                            e.fp8 = true;
                            e.attention_kernel = LLM_ATTN_KERNEL_FUSED;
                            e.activation_recompute = (llm_recompute_t)rec;
                            /* full recompute of 2 blocks a chunk: llm_estimate's dense block
                             * continues the MoE block's attention sums taken before the share
                             * is applied (llm_model.c, block_memory_of), the memo's sums its
                             * whole table */
                            e.recompute_blocks = rec == LLM_RECOMPUTE_FULL && ov == 0 ? 2 : 0;
                            e.optimizer_sharding = e.data_par_overlap = true;
                            e.tensor_par_comm_type = tp > 1 ? LLM_TP_COMM_RS_AG : LLM_TP_COMM_AR;
                            e.data_par_net = e.pipeline_par_net = 1;
                            if (m.moe.num_experts > 0) {
                                e.expert_par = ov == 1 ? 64 : 8;
                                e.expert_tensor_par = 1;
                                e.expert_par_net = e.expert_par > 8 ? 1 : 0;
                                e.moe_load_imbalance = 1;
                                e.moe_a2a_overlap = ov == 1;
                            } else {
                                e.tensor_par_overlap = ov == 1 ? LLM_TP_OVERLAP_PIPE
                                                          : LLM_TP_OVERLAP_NONE;
                            }
                            llm_result_t a, b;
                            fathom_error_t ea, eb;
                            const int ra = llm_estimate(&m, &s, &e, &a, &ea);
                            const int rb = llm_estimate_memo(&m, &s, &e, memo, &b, &eb);
                            assert_int_equal(ra, rb);
                            if (ra == 0) {
                                assert_same(&a, &b);
                                compared++;
                            } else {
                                assert_string_equal(ea.field, eb.field);
                            }
                        }
    }
    assert_true(compared > 40);
    llm_memo_free(memo);
}

/* The system changes at the same address between two estimates, in what only the system holds
 * (the device memory's efficiency curve, read through the context's system pointer, twice as
 * high): the memo must not hand back the first system's tables. */
static void memo_sees_changed_system(void **state)
{
    (void)state;
    const fathom_model_t m = model_preset("llama3-70B");
    llm_system_t s = system_preset("h100_sxm");
    llm_execution_t e = test_layout(8, 4, 4);
    e.batch_size = 64;
    e.data_par_net = e.pipeline_par_net = 1;
    llm_memo_t *memo = llm_memo_new();
    assert_non_null(memo);
    llm_result_t first, second, fresh;
    assert_int_equal(llm_estimate_memo(&m, &s, &e, memo, &first, NULL), 0);
    for (int i = 0; i < s.mem1.mb_efficiency.num_points; i++)
        s.mem1.mb_efficiency.points[i].efficiency /= 2;
    assert_int_equal(llm_estimate_memo(&m, &s, &e, memo, &second, NULL), 0);
    assert_int_equal(llm_estimate(&m, &s, &e, &fresh, NULL), 0);
    assert_same(&second, &fresh);
    assert_true(second.stats.total_time > first.stats.total_time); /* the change shows */
    llm_memo_free(memo);
}

/* H100 with a matrix curve that starts at 1 TFLOP (no point at 0): the small GEMMs are not
 * covered. */
static llm_system_t uncovered_system(void)
{
    llm_system_t s = system_preset("h100_sxm");
    llm_curve_t *c = &s.matrix.rate[LLM_DT_BFLOAT16].gflops_efficiency;
    c->num_points = 1;
    c->points[0].threshold = 1000;
    c->points[0].efficiency = 0.8;
    return s;
}

/* The refusal of uncovered_system names the curve whether the tables are costed or found in the
 * memo. */
static void memo_replays_refusal(void **state)
{
    (void)state;
    const fathom_model_t m = model_preset("llama3-70B");
    const llm_system_t s = uncovered_system();
    llm_execution_t e = test_layout(8, 4, 4);
    e.batch_size = 64;
    e.data_par_net = e.pipeline_par_net = 1;
    llm_memo_t *memo = llm_memo_new();
    assert_non_null(memo);
    for (int pass = 0; pass < 2; pass++) {
        fathom_error_t err;
        llm_result_t r;
        assert_int_equal(llm_estimate_memo(&m, &s, &e, memo, &r, &err), -1);
        assert_string_equal(err.field, "system.matrix.bfloat16.gflops_efficiency");
    }
    llm_memo_free(memo);
}

/* A table the memo lacks takes the costs of the layers an entry holds byte for byte
 * (llm__block_stats_costed): DeepSeek-V3's layouts differing only in data parallelism (every
 * layer lent but its optimizer step, whose shards differ), in expert parallelism (the expert
 * layers differ), in the recompute mode (its flags differ), and back, each against
 * llm_estimate. */
static void memo_lends_layers(void **state)
{
    (void)state;
    const fathom_model_t m = model_preset("deepseek-v3");
    const llm_system_t s = system_preset("h100_sxm");
    llm_memo_t *memo = llm_memo_new();
    assert_non_null(memo);
    static const int64_t procs[] = {1024, 2048, 1024, 512};
    int compared = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int rec = 0; rec < 3; rec++)
            for (int64_t ep = 8; ep <= 16; ep *= 2)
                for (int i = 0; i < 4; i++) {
                    llm_execution_t e = test_layout(1, 16, procs[i] / 16);
                    e.batch_size = 4096;
                    e.fp8 = true;
                    e.attention_kernel = LLM_ATTN_KERNEL_FUSED;
                    e.activation_recompute = (llm_recompute_t)rec;
                    e.optimizer_sharding = e.data_par_overlap = true;
                    e.data_par_net = e.pipeline_par_net = 1;
                    e.expert_par = ep;
                    e.expert_tensor_par = 1;
                    e.expert_par_net = 1;
                    e.moe_load_imbalance = 1;
                    llm_result_t a, b;
                    const int ra = llm_estimate(&m, &s, &e, &a, NULL);
                    assert_int_equal(llm_estimate_memo(&m, &s, &e, memo, &b, NULL), ra);
                    if (ra == 0) {
                        assert_same(&a, &b);
                        compared++;
                    }
                }
    assert_true(compared >= 24);
    llm_memo_free(memo);
}

/* The refusal of uncovered_system through one memo under sharded optimizers of 4 and then 8
 * ranks: every table of the second misses (its context's shards differ) and holds the first's
 * layers byte for byte, but the first's tables met the uncovered curve and lend nothing, so that
 * the second records it again (lent, the GEMMs would not be looked up and it would pass). */
static void memo_lends_no_refusal(void **state)
{
    (void)state;
    const fathom_model_t m = model_preset("llama3-70B");
    const llm_system_t s = uncovered_system();
    llm_memo_t *memo = llm_memo_new();
    assert_non_null(memo);
    for (int64_t dp = 4; dp <= 8; dp *= 2) {
        llm_execution_t e = test_layout(8, 4, dp);
        e.batch_size = 64;
        e.data_par_net = e.pipeline_par_net = 1;
        e.optimizer_sharding = true;
        fathom_error_t err;
        llm_result_t r;
        assert_int_equal(llm_estimate_memo(&m, &s, &e, memo, &r, &err), -1);
        assert_string_equal(err.field, "system.matrix.bfloat16.gflops_efficiency");
    }
    llm_memo_free(memo);
}

/* DeepSeek-V3's dense block with the attention of its MoE block is the table llm__build_block
 * makes, byte for byte: with TP and its tiled overlap, FP8, each recompute and selective module
 * set, and after the MoE block was costed (an overlapped layer keeps its exposure). */
static void dense_block_like(void **state)
{
    (void)state;
    const fathom_model_t m = model_preset("deepseek-v3");
    fathom_model_t d = m;
    d.moe.num_experts = 0;
    const llm_system_t s = system_preset("h100_sxm");
    static const unsigned modules[] = {0, LLM_RECOMPUTE_MLA_UP_PROJ | LLM_RECOMPUTE_LAYERNORM,
                                       LLM_RECOMPUTE_CORE_ATTN | LLM_RECOMPUTE_MLP};
    int built = 0;
    for (int64_t tp = 1; tp <= 4; tp *= 2)
        for (int rec = 0; rec < 3; rec++)
            for (int mod = 0; mod < 3; mod++) {
                llm_execution_t e = test_layout(tp, 8, 8);
                e.fp8 = rec != 1;
                e.attention_kernel = LLM_ATTN_KERNEL_FUSED;
                e.activation_recompute = (llm_recompute_t)rec;
                e.recompute_modules = rec == LLM_RECOMPUTE_NONE ? modules[mod] : 0;
                e.tensor_par_comm_type = tp > 1 ? LLM_TP_COMM_RS_AG : LLM_TP_COMM_AR;
                e.tensor_par_overlap = tp > 1 ? LLM_TP_OVERLAP_PIPE : LLM_TP_OVERLAP_NONE;
                e.expert_par = 8;
                e.expert_tensor_par = 1;
                e.data_par_net = e.pipeline_par_net = 1;
                const llm__sizes_t z = {.batch_seq = m.seq_size,
                                        .activation_size = m.seq_size * m.hidden,
                                        .seq_par_activation_size = m.seq_size / tp * m.hidden};
                llm_result_t r;
                assert_int_equal(llm_estimate(&m, &s, &e, &r, NULL), 0); /* a valid layout */
                static llm__block_t moe, fresh, like;
                llm__build_block(&m, &s, &e, &z, &moe);
                for (int i = 0; i < moe.num_layers; i++) /* what costing leaves behind */
                    moe.layers[i].net_exposed_time = moe.layers[i].kind ==
                                                             LLM__LINEAR_OVERLAPPED
                                                         ? 1e-3
                                                         : 0;
                llm__build_block(&d, &s, &e, &z, &fresh);
                llm__build_block_like(&d, &s, &e, &z, &moe, &like);
                assert_true(moe.mlp_first > 0);
                assert_int_equal(like.num_layers, fresh.num_layers);
                assert_int_equal(like.mlp_first, fresh.mlp_first);
                assert_memory_equal(like.layers, fresh.layers,
                                    (size_t)fresh.num_layers * sizeof fresh.layers[0]);
                built++;
            }
    assert_int_equal(built, 27);
}

/* The heaviest rank the estimate reports is the first of the heaviest over every rank
 * (llm_stage_memory), for even and uneven splits, the interleaved schedule and given end
 * stages; and the first and last stages are those ranks'. */
static void heaviest_rank(void **state)
{
    (void)state;
    const fathom_model_t m = model_preset("deepseek-v3");
    const llm_system_t s = system_preset("h100_sxm");
    for (int variant = 0; variant < 4; variant++)
        for (int64_t pp = 4; pp <= 16; pp *= 2) {
            llm_execution_t e = test_layout(1, pp, 256 / pp);
            e.batch_size = 4096;
            e.fp8 = true;
            e.attention_kernel = LLM_ATTN_KERNEL_FUSED;
            e.optimizer_sharding = true;
            e.data_par_net = e.pipeline_par_net = 1;
            e.expert_par = 8;
            e.expert_tensor_par = 1;
            e.moe_load_imbalance = 1;
            if (variant == 1) {
                e.pipeline_interleaving = 2;
                e.first_stage_blocks = 3;
                e.last_stage_blocks = 2;
                if ((61 - 5) % (pp - 2) != 0 || ((61 - 5) / (pp - 2)) % 2 != 0)
                    continue;
            }
            if (variant == 2)
                e.activation_recompute = LLM_RECOMPUTE_FULL;
            if (variant == 3) {
                e.first_stage_blocks = 1;
                if ((61 - 1) % (pp - 1) != 0)
                    continue;
            }
            llm_result_t r;
            if (llm_estimate(&m, &s, &e, &r, NULL) != 0)
                continue;
            llm_stage_memory_t best, cur;
            int64_t at = 0;
            for (int64_t rank = 0; rank < pp; rank++) {
                llm_stage_memory(&m, &e, &r, rank, &cur);
                if (rank == 0 || cur.total > best.total) {
                    best = cur;
                    at = rank;
                }
                if (rank == 0)
                    assert_memory_equal(&cur.total, &r.extra.stages[0].total, sizeof(double));
                if (rank == pp - 1)
                    assert_memory_equal(&cur.total, &r.extra.stages[1].total, sizeof(double));
            }
            assert_memory_equal(&best.total, &r.extra.heaviest.total, sizeof(double));
            assert_int_equal(at, r.extra.heaviest.index);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(memo_equals_fresh),
        cmocka_unit_test(memo_sees_changed_system),
        cmocka_unit_test(memo_replays_refusal),
        cmocka_unit_test(memo_lends_layers),
        cmocka_unit_test(memo_lends_no_refusal),
        cmocka_unit_test(dense_block_like),
        cmocka_unit_test(heaviest_rank),
    };
    return cmocka_run_group_tests(tests, load_presets, free_presets);
}

/* test_llm_memory.c — the memory of every pipeline rank (core/llm/llm_memory.c), each term
 * worked by hand on the tiny modern model (llm_test_util.h: hidden 64, gated MLP of 128, 8
 * heads of 8, 2 key/value heads, sequence 16, vocabulary 1000, bfloat16, fused attention).
 *
 * What one block keeps per microbatch of one sequence on one rank, in elements of bfloat16:
 *   attention: the residual fork 16·64 = 1,024 and the normed fork 1,024 (the norm and Q, K, V
 *     keep nothing of their own); fused attention Q 16·8·8 = 1,024, K and V 16·2·8 = 256 each,
 *     its fp32 log-sum-exp 8·16·4 = 512 bytes = 256 elements; the out projection's input 1,024
 *   MLP: the residual fork 1,024, the up projection's input 1,024, SwiGLU's input 2·16·128 =
 *     4,096, the down projection's input 16·128 = 2,048
 *   no dropout mask (the modern block trains without dropout)
 *   = 13,056 elements = 26,112 bytes (S below). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <jansson.h>

#include "llm_internal.h"
#include "llm_test_util.h"
#include "megatron_config.h"
#include "model_codec.h"
#include "test_util.h"

#define S_BLOCK 26112.0
#define MIB 1048576.0

static fathom_model_t model_of(int64_t blocks)
{
    fathom_model_t m = tiny_model();
    m.num_blocks = blocks;
    return m;
}

static llm_execution_t exe(int64_t pp, int64_t dp, int64_t nmb)
{
    llm_execution_t e = test_layout(1, pp, dp);
    e.batch_size = nmb * dp;
    e.attention_kernel = LLM_ATTN_KERNEL_FUSED;
    return e;
}

static void run(const fathom_model_t *m, const llm_execution_t *e, llm_result_t *r)
{
    llm_system_t s = unit_system(100);
    fathom_error_t err;
    if (llm_estimate(m, &s, e, r, &err))
        fail_msg("%s: %s", err.field, err.message);
}

/* The block above keeps S = 26,112 bytes. */
static void block_storage(void **state)
{
    (void)state;
    fathom_model_t m = model_of(8);
    llm_execution_t e = exe(4, 1, 8);
    llm_result_t r;
    run(&m, &e, &r);
    assert_close(r.extra.memory.stored[0], S_BLOCK, 0);
}

/* 8 blocks on 4 ranks (2 each), 8 microbatches. Block-microbatches kept over the rank's blocks:
 *   1F1B             min(8, 4 − r):                              4, 3, 2, 1
 *   interleaved v 2  min(8·2, 2·(4 − r − 1) + (2 − 1)·4 + 1)/2:  5.5, 4.5, 3.5, 2.5
 *   DualPipe         stage r with 4 − r and stage 3 − r with r + 1 microbatches, 2 blocks each:
 *                    (2·(4 − r) + 2·(r + 1))/4 = 2.5 on every rank, over its 4 blocks
 * and the blocks' stored activations are those block-microbatches times S (DualPipe: 10·S). */
static void schedules_in_flight(void **state)
{
    (void)state;
    fathom_model_t m = model_of(8);
    static const double one[4] = {4, 3, 2, 1}, inter[4] = {5.5, 4.5, 3.5, 2.5};
    for (int k = 0; k < 3; k++) {
        llm_execution_t e = exe(4, 1, 8);
        if (k == 1)
            e.pipeline_interleaving = 2;
        if (k == 2) { /* the even split, given: DualPipe's default would lighten the ends */
            e.pipeline_schedule = LLM_PP_DUALPIPE;
            e.first_stage_blocks = e.last_stage_blocks = 2;
        }
        llm_result_t r;
        run(&m, &e, &r);
        for (int64_t rank = 0; rank < 4; rank++) {
            llm_stage_memory_t st;
            llm_stage_memory(&m, &e, &r, rank, &st);
            const double want = k == 0 ? one[rank] : k == 1 ? inter[rank] : 2.5;
            const double blocks = k == 2 ? 4 : 2;
            assert_int_equal(st.blocks, (int64_t)blocks);
            assert_close(st.microbatches, want, 1e-15);
            assert_close(st.stored_activations, want * blocks * S_BLOCK, 1e-15);
            assert_int_equal(st.index, rank);
        }
        /* the first rank is the heaviest under 1F1B and interleaving */
        if (k < 2)
            assert_int_equal(r.extra.heaviest.index, 0);
    }
}

/* DualPipe holds stages r and pp − 1 − r: on 2 ranks every rank holds the whole model, the sum of
 * 1F1B's two stages, weights and gradients alike. */
static void dualpipe_two_copies(void **state)
{
    (void)state;
    fathom_model_t m = model_of(4);
    llm_execution_t e = exe(2, 1, 4);
    llm_result_t one, dual;
    run(&m, &e, &one);
    e.pipeline_schedule = LLM_PP_DUALPIPE;
    run(&m, &e, &dual);
    for (int i = 0; i < 2; i++) {
        assert_close(dual.extra.stages[i].weights,
                     one.extra.stages[0].weights + one.extra.stages[1].weights, 1e-15);
        assert_close(dual.extra.stages[i].gradients,
                     one.extra.stages[0].gradients + one.extra.stages[1].gradients, 1e-15);
        assert_int_equal(dual.extra.stages[i].blocks, 4);
    }
    /* refusals: an odd pipeline, too few microbatches (at least 2·pp, even), interleaving */
    fathom_error_t err;
    llm_system_t s = unit_system(100);
    llm_result_t r;
    e.batch_size = 2;
    assert_int_equal(llm_estimate(&m, &s, &e, &r, &err), -1);
    assert_string_equal(err.field, "execution.pipeline_schedule");
    e = exe(2, 1, 4);
    e.pipeline_schedule = LLM_PP_ZERO_BUBBLE;
    e.pipeline_interleaving = 2;
    assert_int_equal(llm_estimate(&m, &s, &e, &r, &err), -1);
    assert_string_equal(err.field, "execution.pipeline_schedule");
}

/* DualPipe's default end stages (llm_end_stage_blocks): the embedding, the output layer and
 * each MTP depth weigh one block. DeepSeek-V3's shape, 61 blocks and 1 MTP depth on 16 stages:
 * U = 61 + 2 + 1 = 64 units, ceil(64/16) = 4 and floor((61 − 2)/14) = 4, so the 14 middle
 * stages take 4 blocks each (56); the ends share R = 61 − 56 = 5: first ceil((5 + 1)/2) = 3
 * (3 + 1 = 4 units), last 2 (2 + 1 + 1 = 4 units). 10 blocks on 4 stages without MTP: U = 12,
 * ceil(12/4) = 3 but floor(8/2) = 4 is not smaller, so the middle take 3 each and the ends
 * R = 4: 2 and 2. Without a vocabulary (no end layers) U = 10, ceil(10/4) = 3, R = 4: 2 and 2
 * again, and 12 blocks: U = 12, ceil 3, floor(10/2) = 5, R = 6: 3 and 3, the even split. Given
 * end stages stand; 1F1B keeps the even split (0, 0). */
static void dualpipe_end_stages(void **state)
{
    (void)state;
    fathom_model_t m = model_of(61);
    m.mtp_blocks = 1;
    llm_execution_t e = exe(16, 1, 32);
    e.pipeline_schedule = LLM_PP_DUALPIPE;
    int64_t f, l;
    llm_end_stage_blocks(&m, &e, &f, &l);
    assert_int_equal(f, 3);
    assert_int_equal(l, 2);
    assert_int_equal(llm_stage_blocks(&m, &e, 7, NULL), 4);
    m = model_of(10);
    e = exe(4, 1, 8);
    e.pipeline_schedule = LLM_PP_DUALPIPE;
    llm_end_stage_blocks(&m, &e, &f, &l);
    assert_int_equal(f, 2);
    assert_int_equal(l, 2);
    llm_result_t r;
    run(&m, &e, &r);
    /* rank 0 holds stage 0 (2 blocks) and stage 3 (2), rank 1 stages 1 and 2 (3 + 3) */
    assert_int_equal(r.extra.stages[0].blocks, 4);
    assert_int_equal(r.blocks_per_proc, 3);
    e.first_stage_blocks = 1;
    e.last_stage_blocks = 3;
    llm_end_stage_blocks(&m, &e, &f, &l);
    assert_int_equal(f, 1);
    assert_int_equal(l, 3);
    e.first_stage_blocks = e.last_stage_blocks = 0;
    m.vocab_size = 0;
    llm_end_stage_blocks(&m, &e, &f, &l);
    assert_int_equal(f, 2);
    assert_int_equal(l, 2);
    m.num_blocks = 12;
    llm_end_stage_blocks(&m, &e, &f, &l);
    assert_int_equal(f, 3);
    assert_int_equal(l, 3);
    e = exe(4, 1, 8);
    llm_end_stage_blocks(&m, &e, &f, &l);
    assert_int_equal(f + l, 0);
}

/* torchtitan's default split (generate_split_points at 9dec370): 10 blocks on 4 stages, base 2
 * and 10 mod 4 = 2 = 4 − 2 more for stages 1 and 2: 2, 3, 3, 2. Interleaved, 2 stages on each
 * of 2 ranks: the same 4 stages, rank 0 holding stages 0 and 2 (2 + 3 = 5), rank 1 stages 1 and
 * 3 (3 + 2 = 5). 11 blocks: 11 mod 4 = 3 gives stage 3 as many as the middle: the even split.
 *
 * The key/value copies around SDPA (add_torch_kv_copies): repeat_kv takes the 2 key/value heads
 * to the 8 query heads, 2·16·(8 − 2)·8 = 1,536 more elements = 3,072 bytes in the working set
 * and in what the block keeps. With context parallelism 2 (8 tokens a rank) the repeat is
 * 2·8·6·8 = 768 elements and the ring's concatenated and gathered K and V (2 + 1)·2·8·8·8 =
 * 3,072 elements, working only: the working set grows by 3,840 elements = 7,680 bytes over
 * Megatron's at cp 2, what the block keeps by 1,536 bytes.
 *
 * torch.distributed.pipelining's buffers (torch_pipeline_buffers), 1F1B on 2 ranks, 4
 * microbatches of 16 tokens: io = 16·64·2 = 2,048 bytes, logits 16·1,000·2 = 32,000. Rank 0
 * (stage 0, not last): gradient buffers and retained outputs 2·4·2,048 = 16,384. Rank 1 (the
 * last, 1 in flight): receive buffers (4 − 1)·2,048 = 6,144 and 3 retained logits 96,000 beside
 * the loss's own: 102,144. Megatron has none of them. */
static void torch_stack_memory(void **state)
{
    (void)state;
    fathom_model_t m = model_of(10);
    llm_execution_t e = exe(4, 1, 8);
    e.stack = LLM_STACK_TORCHTITAN;
    int64_t f, l;
    llm_end_stage_blocks(&m, &e, &f, &l);
    assert_int_equal(f, 2);
    assert_int_equal(l, 2);
    assert_int_equal(llm_stage_blocks(&m, &e, 1, NULL), 3);
    e = exe(2, 1, 8);
    e.stack = LLM_STACK_TORCHTITAN;
    e.pipeline_interleaving = 2;
    llm_end_stage_blocks(&m, &e, &f, &l);
    assert_int_equal(f, 5);
    assert_int_equal(l, 5);
    m.num_blocks = 11;
    e = exe(4, 1, 8);
    e.stack = LLM_STACK_TORCHTITAN;
    llm_end_stage_blocks(&m, &e, &f, &l);
    assert_int_equal(f + l, 0);

    m = model_of(2);
    llm_result_t meg, tt;
    for (int cp = 1; cp <= 2; cp++) {
        e = exe(1, 1, 1);
        e.context_par = cp;
        e.num_procs = cp;
        run(&m, &e, &meg);
        e.stack = LLM_STACK_TORCHTITAN;
        run(&m, &e, &tt);
        assert_close(tt.extra.memory.working[0] - meg.extra.memory.working[0],
                     cp == 1 ? 3072 : 7680, 1e-12);
        assert_close(tt.extra.memory.stored[0] - meg.extra.memory.stored[0],
                     cp == 1 ? 3072 : 1536, 1e-12);
    }

    const llm_execution_t em = exe(2, 1, 4);
    run(&m, &em, &meg);
    e = em;
    e.stack = LLM_STACK_TORCHTITAN;
    run(&m, &e, &tt);
    llm_stage_memory_t a, b;
    for (int64_t rank = 0; rank < 2; rank++) {
        llm_stage_memory(&m, &e, &tt, rank, &a);
        llm_stage_memory(&m, &em, &meg, rank, &b);
        /* beside the loss's own gradients, which the stacks count apart (llm_stages.c) */
        const double loss = rank == 1 ? tt.extra.memory.last_grads - meg.extra.memory.last_grads
                                      : 0;
        assert_close(a.buffers - b.buffers - loss, rank == 0 ? 16384 : 102144, 1e-12);
    }
}

/* The PyTorch stacks' loss beside the output layer's table (llm_stages.c), one microbatch of the
 * tiny model: T = 16 tokens, V = 1,000. torch's cross_entropy(pred.float()) holds three fp32
 * logits where the table counts one: 8·T·V = 8·16·1,000 = 128,000 bytes more in the last
 * stage's working set than Megatron's. loss_kernel "fused" (flash-attn's CrossEntropyLoss: the
 * 16-bit logits and their 16-bit gradient, 2·T·V + 2·T·V = 64,000 bytes, the table's 4·T·V)
 * holds nothing beyond the table: Megatron's figure. Megatron refuses the field. */
static void loss_kernel_memory(void **state)
{
    (void)state;
    fathom_model_t m = model_of(2);
    llm_execution_t e = exe(1, 1, 1);
    llm_result_t meg, torch, fused;
    run(&m, &e, &meg);
    e.stack = LLM_STACK_FSDP;
    run(&m, &e, &torch);
    e.loss_kernel = LLM_LOSS_FUSED;
    run(&m, &e, &fused);
    assert_close(torch.extra.memory.last_working - meg.extra.memory.last_working, 128000, 1e-12);
    assert_close(fused.extra.memory.last_working, meg.extra.memory.last_working, 1e-12);
    assert_true(torch.mem_tier1_bytes - fused.mem_tier1_bytes > 0);

    e.stack = LLM_STACK_MEGATRON;
    llm_system_t s = unit_system(100);
    fathom_error_t err;
    assert_int_not_equal(llm_estimate(&m, &s, &e, &meg, &err), 0);
    assert_string_equal(err.field, "execution.loss_kernel");
}

/* Parameters on one rank, pp 1 (the layer table's own count): per block 34,944, 2 blocks,
 * embedding and output 64,000 each, final norm 64: P = 197,952. Optimizer, unsharded: fp32
 * master 4 + two fp32 moments 8 = 12 bytes, 2,375,424; with bfloat16 moments 4 + 2·2 = 8,
 * 1,583,616. */
static void optimizer_state_datatype(void **state)
{
    (void)state;
    fathom_model_t m = model_of(2);
    llm_execution_t e = exe(1, 1, 1);
    llm_result_t r;
    run(&m, &e, &r);
    assert_close(r.extra.stages[0].optimizer, 2375424.0, 0);
    assert_close(r.extra.optimizer_bytes_per_param, 12, 0);
    e.optimizer_state_datatype = LLM_STATE_BFLOAT16;
    run(&m, &e, &r);
    assert_close(r.extra.stages[0].optimizer, 1583616.0, 0);
    assert_close(r.extra.optimizer_bytes_per_param, 8, 0);
}

/* FP8 with the activation cache: SwiGLU's input, 4,096 elements, is kept in one byte instead of
 * two, 4,096 bytes less a block; the linears keep FP8 copies either way. The cache needs FP8. */
static void fp8_activation_cache(void **state)
{
    (void)state;
    fathom_model_t m = model_of(2);
    llm_execution_t e = exe(1, 1, 1);
    e.fp8 = true;
    llm_result_t plain, cached;
    run(&m, &e, &plain);
    e.fp8_activation_cache = true;
    run(&m, &e, &cached);
    assert_close(plain.extra.memory.stored[0] - cached.extra.memory.stored[0], 4096, 0);
    e.fp8 = false;
    llm_system_t s = unit_system(100);
    fathom_error_t err;
    assert_int_equal(llm_estimate(&m, &s, &e, &cached, &err), -1);
    assert_string_equal(err.field, "execution.fp8_activation_cache");
}

/* The fixed reserve: CUDA context 400 MiB, cuBLAS workspaces 5·32 = 160 MiB, NCCL per
 * communicator 544 MiB for 2 ranks and 688 for more. pp 2 × dp 2: the pipeline and the gradient
 * group, 2·544 = 1,088 MiB; pp 2 × dp 4: 544 + 688 = 1,232 MiB. The allocator's fragmentation
 * only without expandable segments: 6.56 % (57,466,159,104 / 53,930,270,720 − 1) of what it
 * hands out (all but the context and NCCL). */
static void fixed_reserve(void **state)
{
    (void)state;
    fathom_model_t m = model_of(4);
    llm_execution_t e = exe(2, 2, 4);
    llm_result_t r;
    run(&m, &e, &r);
    const llm_stage_memory_t *f = &r.extra.stages[0];
    assert_close(f->cuda_context, 400 * MIB, 0);
    assert_close(f->workspaces, 160 * MIB, 0);
    assert_close(f->nccl, 1088 * MIB, 0);
    assert_close(f->fragmentation, 0, 0);
    assert_close(f->total, f->weights + f->gradients + f->optimizer + f->activations +
                               f->buffers + f->moe_buffers + f->cuda_context + f->workspaces +
                               f->nccl + f->fragmentation, 1e-15);
    e = exe(2, 4, 4);
    e.fixed_segments = true;
    run(&m, &e, &r);
    f = &r.extra.stages[0];
    assert_close(f->nccl, (544 + 688) * MIB, 0);
    const double handed = f->weights + f->gradients + f->optimizer + f->activations +
                          f->buffers + f->workspaces;
    assert_close(f->fragmentation, handed * (57466159104.0 / 53930270720.0 - 1), 1e-15);
}

/* DeepEP's buffers for DeepSeek-V3's dispatch (64 ranks, rows of 7,168 bfloat16 = 14,336
 * bytes): 10 channels; NVLink: 8 peers × 288 tokens × (14,336 + 128·16) = 377,487,360 bytes;
 * RDMA: 64/8 = 8 peers × 128 tokens × 2 × (14,336 + 2,048 + 16) = 335,872,000 bytes. Within one
 * node (8 ranks): 10·8·256·16,384 = 335,544,320 and no RDMA buffer. */
static void deepep_buffers(void **state)
{
    (void)state;
    assert_close(llm__deepep_buffer_bytes(64, 14336), 377487360.0 + 335872000.0, 0);
    assert_close(llm__deepep_buffer_bytes(8, 14336), 335544320.0, 0);
}

/* The alltoall dispatcher's token buffers beyond the rows the experts keep: the dispatch's send
 * buffer and the combine's receive buffer, T·k rows of h: 2·16·2·64·2 bytes = 8,192 (8
 * experts, top 2, expert parallelism 2, one sequence of 16); none without expert parallelism. */
static void alltoall_buffers(void **state)
{
    (void)state;
    fathom_model_t m = model_of(2);
    m.moe = (model_moe_t){.num_experts = 8, .top_k = 2, .expert_feedforward = 128, .every = 1};
    llm_execution_t e = exe(1, 2, 1);
    e.expert_par = 2;
    e.expert_tensor_par = 1;
    e.moe_load_imbalance = 1;
    llm_result_t r;
    run(&m, &e, &r);
    assert_close(r.extra.stages[0].moe_buffers, 8192, 0);
    e.expert_par = 1;
    run(&m, &e, &r);
    assert_close(r.extra.stages[0].moe_buffers, 0, 0);
}

/* first_stage_blocks 1 and last_stage_blocks 3 on 4 stages of a 10-block model: the two
 * middle stages share the other 6, 3 each; the pace is 3 blocks. 2 and 3 would leave 5 for 2
 * stages: refused naming the field. */
static void end_stage_blocks(void **state)
{
    (void)state;
    fathom_model_t m = model_of(10);
    llm_execution_t e = exe(4, 1, 8);
    e.first_stage_blocks = 1;
    e.last_stage_blocks = 3;
    static const int64_t blocks[4] = {1, 3, 3, 3}, firsts[4] = {0, 1, 4, 7};
    for (int64_t j = 0; j < 4; j++) {
        int64_t first;
        assert_int_equal(llm_stage_blocks(&m, &e, j, &first), blocks[j]);
        assert_int_equal(first, firsts[j]);
    }
    llm_result_t r;
    run(&m, &e, &r);
    assert_int_equal(r.blocks_per_proc, 3);
    assert_int_equal(r.extra.stages[0].blocks, 1);
    e.first_stage_blocks = 2;
    llm_system_t s = unit_system(100);
    fathom_error_t err;
    assert_int_equal(llm_estimate(&m, &s, &e, &r, &err), -1);
    assert_string_equal(err.field, "execution.first_stage_blocks");
}

/* core_attn with the fused kernel: the rerun remakes the log-sum-exp, 512 bytes a block; its
 * forward (4·8·16·16·8·c FLOPs at the attention rate) is the recompute. */
static void core_attn_fused(void **state)
{
    (void)state;
    fathom_model_t m = model_of(2);
    llm_execution_t e = exe(1, 1, 1);
    llm_result_t base, r;
    run(&m, &e, &base);
    e.recompute_modules = LLM_RECOMPUTE_CORE_ATTN;
    run(&m, &e, &r);
    assert_close(base.extra.memory.stored[0] - r.extra.memory.stored[0], 512, 0);
    assert_true(r.stats.block_re_time > 0);
    assert_close(base.stats.block_re_time, 0, 0);
}

/* Activation gradients: the most one layer's backward holds, its output's gradient and its
 * input's. In a block the SwiGLU: 4,096 + 4,096 elements = 16,384 bytes (the up projection
 * 16·256 + 16·64 = 5,120 elements is less). Outside: the embedding's rows 1,024 + 1,024 =
 * 4,096 bytes; the loss's logits 16·1,000 twice, 64,000 bytes. pp 1 holds all three. */
static void activation_gradient_peak(void **state)
{
    (void)state;
    fathom_model_t m = model_of(2);
    llm_execution_t e = exe(1, 1, 1);
    llm_result_t r;
    run(&m, &e, &r);
    assert_close(r.extra.memory.act_grads, 16384, 0);
    assert_close(r.extra.stages[0].buffers, 16384 + 4096 + 64000, 0);
}

/* torchtitan's per-op selective checkpointing on one rank, one sequence of 16 (T = 16): the
 * block's input 16·64 = 1,024, wq's output 16·64 = 1,024, wv's 16·16 = 256, w1's 16·128 =
 * 2,048, w2's 16·64 = 1,024, the flash kernel's O 1,024 (bf16) and log-sum-exp 16·8·4 = 512
 * bytes: 6,400 elements + 512 = 13,312 bytes. With TP 2 and sequence parallelism: the input
 * 512, wq 512, wv 16·8 = 128, w1 1,024, w2 1,024 (a partial sum, whole), O 512, the two
 * reduce-scatters 2·512, LSE 256 bytes: 4,736 elements + 256 = 9,728 bytes. */
static void op_selective_checkpointing(void **state)
{
    (void)state;
    fathom_model_t m = model_of(2);
    llm_execution_t e = exe(1, 1, 1);
    e.stack = LLM_STACK_TORCHTITAN;
    e.selective_ac = LLM_SAC_OP;
    assert_close(llm__op_sac_bytes(&m, &e), 13312, 0);
    e.tensor_par = 2;
    e.tensor_par_comm_type = LLM_TP_COMM_RS_AG;
    assert_close(llm__op_sac_bytes(&m, &e), 9728, 0);
}

/* torchtitan on pp ranks of dp replicas, nmb microbatches, at the given ZeRO stage */
static llm_execution_t torchtitan_exe(int64_t pp, int64_t dp, int64_t nmb, int zero)
{
    llm_execution_t e = exe(pp, dp, nmb);
    e.stack = LLM_STACK_TORCHTITAN;
    e.zero_stage = zero;
    e.optimizer_sharding = true;
    return e;
}

/* FSDP2 (torchtitan, zero 3 over 2 ranks, pp 1): P = 197,952; the fp32 shard 4P/2 = 395,904
 * plus the unsharded bf16 root (embedding 64,000, output 64,000 and final norm 64) and two
 * blocks (2·34,944): 2·(128,064 + 69,888) = 395,904 gathered; gradients 4P/2 + one block's
 * bf16 and fp32 (6·34,944 = 209,664) = 605,568; Adam 8P/2 = 791,808. */
static void fsdp2_state(void **state)
{
    (void)state;
    fathom_model_t m = model_of(2);
    llm_execution_t e = torchtitan_exe(1, 2, 1, 3);
    llm_result_t r;
    run(&m, &e, &r);
    const llm_stage_memory_t *f = &r.extra.stages[0];
    assert_close(f->gathered_weights, 395904, 0);
    assert_close(f->weights, 395904 + 395904, 0);
    assert_close(f->gradients, 605568, 0);
    assert_close(f->optimizer, 791808, 0);
}

/* FSDP2 under torch's interleaved 1F1B (torch_pp_held_gradients): 8 blocks of 34,944
 * parameters on 2 ranks, 2 stages a rank (torchtitan's 4 stages of 2 blocks: rank 0 stages 0
 * and 2, rank 1 stages 1 and 3), shard group 2. Rank 0 trains T = 4·34,944 + 64,000 (the
 * embedding) = 203,776; rank 1 T = 4·34,944 + 64,000 + 64 (output, final norm) = 203,840.
 * With 2 microbatches (one round: 2 < 2·pp = 4) one stage's unsharded fp32 gradients are alive
 * at a time, the larger: rank 0 max(2·34,944, 2·34,944 + 64,000) = 133,888, 4·133,888 = 535,552;
 * beside them the block in backward's bf16 gradients, 2·34,944 = 69,888: gradients
 * 4·203,776/2 + 535,552 + 69,888 = 1,012,992; rank 1 4·(69,888 + 64,064) = 535,808, gradients
 * 407,680 + 535,808 + 69,888 = 1,013,376. With 4 microbatches (two rounds) both stages'
 * accumulate: 407,552 + 4·203,776 + 69,888 = 1,292,544 and 407,680 + 815,360 + 69,888 =
 * 1,292,928. */
static void fsdp2_interleaved_gradients(void **state)
{
    (void)state;
    fathom_model_t m = model_of(8);
    const double want[2][2] = {{1012992, 1013376}, {1292544, 1292928}};
    for (int k = 0; k < 2; k++) {
        llm_execution_t e = torchtitan_exe(2, 2, k == 0 ? 2 : 4, 3);
        e.pipeline_interleaving = 2;
        llm_result_t r;
        run(&m, &e, &r);
        for (int64_t rank = 0; rank < 2; rank++) {
            llm_stage_memory_t a;
            llm_stage_memory(&m, &e, &r, rank, &a);
            assert_int_equal(a.blocks, 4);
            assert_close(a.gradients, want[k][rank], 0);
        }
    }
}

/* ZeRO-2 under torchtitan with pipeline parallelism is FSDP2 with reshard_after_forward False,
 * which is what its ZeRO-3 runs under PP: one run. 8 blocks of 34,944 parameters on 2 ranks
 * (4 each), 1F1B, shard group 2, 4 microbatches. Rank 0 trains T = 4·34,944 + 64,000 (the
 * embedding) = 203,776: weights the fp32 shard 4T/2 = 407,552 and the whole stage gathered in
 * bf16, 2T = 407,552; gradients 4T/2 = 407,552, the stage's unsharded fp32 sum 4T = 815,104 and
 * the block in backward's bf16 2·34,944 = 69,888: 1,292,544; Adam 8T/2 = 815,104. Megatron's
 * ZeRO-2 accounting, which this run was given before, kept 2T = 407,552 of weights, 4T/2 +
 * 4·34,944 = 547,328 of gradients and 12T/2 = 1,222,656 of optimizer: 732,416 bytes fewer. The
 * step (the gathers and reductions once per step) is ZeRO-3's. */
static void fsdp2_zero2_under_pp(void **state)
{
    (void)state;
    fathom_model_t m = model_of(8);
    llm_result_t r[2];
    for (int k = 0; k < 2; k++) {
        llm_execution_t e = torchtitan_exe(2, 2, 4, k == 0 ? 2 : 3);
        run(&m, &e, &r[k]);
        const llm_stage_memory_t *f = &r[k].extra.stages[0];
        assert_close(f->weights, 407552 + 407552, 0);
        assert_close(f->gathered_weights, 407552, 0);
        assert_close(f->gradients, 1292544, 0);
        assert_close(f->optimizer, 815104, 0);
    }
    assert_close(r[0].stats.total_time, r[1].stats.total_time, 0);
    assert_close(r[0].stats.dp_comm_exposed_time, r[1].stats.dp_comm_exposed_time, 0);
    /* without PP ZeRO-2 keeps Megatron's accounting (FSDP's SHARD_GRAD_OP holds the same
     * 2 + 16/S bytes a parameter but one block's bf16 gradients) */
    llm_execution_t e = torchtitan_exe(1, 2, 4, 2);
    llm_result_t one;
    run(&m, &e, &one);
    assert_close(one.extra.stages[0].gathered_weights, 0, 0);
}

/* FSDP2 reducing in bf16 (low_precision_gradients: reduce_dtype the parameter dtype). Under PP
 * the stage's unsharded gradients then accumulate in bf16 in .grad itself, no fp32 copy
 * (FSDPParam.to_accumulated_grad_if_needed returns when the gradient's dtype is the reduce
 * dtype): fsdp2_zero2_under_pp's rank 0, T = 203,776, holds the fp32 shard 4T/2 = 407,552, the
 * bf16 sum 2T = 407,552 and the block in backward's 69,888: 884,992 (fp32 reduce: 1,292,544).
 * Without PP (fsdp2_state's 2 blocks over 2 ranks) one block's bf16 gradients and its bf16
 * reduce-scatter input, 4·34,944 = 139,776, beside the fp32 shard 395,904: 535,680 (fp32
 * reduce: 605,568). */
static void fsdp2_low_precision_gradients(void **state)
{
    (void)state;
    fathom_model_t m = model_of(8);
    llm_execution_t e = torchtitan_exe(2, 2, 4, 3);
    e.low_precision_gradients = true;
    llm_result_t r;
    run(&m, &e, &r);
    assert_close(r.extra.stages[0].gradients, 884992, 0);
    m = model_of(2);
    e = torchtitan_exe(1, 2, 1, 3);
    e.low_precision_gradients = true;
    run(&m, &e, &r);
    assert_close(r.extra.stages[0].gradients, 535680, 0);
}

/* The schedules' bubbles: zero-bubble (ZB-H1) scales 1F1B's by (F + B − W)/(F + B + W), DualPipe
 * by (pp/2 − 1)(F + 2B − W)/((pp − 1)(F + B + W)), F, B, W one block's forward, input-gradient
 * and weight-gradient times (no TP, no recompute here). On 4 ranks of 8 blocks, 8 microbatches. */
static void schedule_bubbles(void **state)
{
    (void)state;
    fathom_model_t m = model_of(8);
    m.vocab_size = 0; /* the outer layers add to the bubble on their own */
    llm_execution_t e = exe(4, 1, 8);
    llm_result_t one, zb, dual;
    run(&m, &e, &one);
    e.pipeline_schedule = LLM_PP_ZERO_BUBBLE;
    run(&m, &e, &zb);
    e.pipeline_schedule = LLM_PP_DUALPIPE;
    run(&m, &e, &dual);
    const double F = one.stats.block_fw_time, B = one.stats.block_agrad_time,
                 W = one.stats.block_wgrad_time;
    assert_close(zb.stats.bubble_time, one.stats.bubble_time * (F + B - W) / (F + B + W), 1e-12);
    assert_close(dual.stats.bubble_time,
                 one.stats.bubble_time * (4.0 / 2 - 1) * (F + 2 * B - W) / (3 * (F + B + W)),
                 1e-12);
    assert_close(dual.stats.pp_comm_exposed_time, 0, 0);
}

/* llm_estimate_memory gives llm_estimate's memory to the byte, without costing the layers:
 * every schedule, partial and full recompute, selective modules, FP8 caches, ZeRO and FSDP2,
 * an MoE model with dense blocks and MTP (DeepSeek-V3), and the time left zero. */
static void memory_alone(void **state)
{
    (void)state;
    fathom_model_t tiny = model_of(8), ds = preset(presets, "deepseek-v3");
    llm_execution_t base = exe(4, 2, 8);
    llm_execution_t cases[8];
    for (int i = 0; i < 8; i++)
        cases[i] = base;
    cases[1].pipeline_interleaving = 2;
    cases[2].pipeline_schedule = LLM_PP_DUALPIPE;
    cases[3].activation_recompute = LLM_RECOMPUTE_FULL;
    cases[3].recompute_blocks = 1;
    cases[4].recompute_modules = LLM_RECOMPUTE_LAYERNORM | LLM_RECOMPUTE_MLP;
    cases[5].fp8 = cases[5].fp8_activation_cache = true;
    cases[6].zero_stage = 3;
    cases[6].optimizer_sharding = true;
    cases[7] = cases[6];
    cases[7].stack = LLM_STACK_TORCHTITAN;
    cases[7].selective_ac = LLM_SAC_OP;
    llm_system_t s = unit_system(100);
    for (int i = 0; i < 8; i++) {
        llm_result_t full, mem;
        fathom_error_t err;
        if (llm_estimate(&tiny, &s, &cases[i], &full, &err) ||
            llm_estimate_memory(&tiny, &s, &cases[i], &mem, &err))
            fail_msg("case %d: %s: %s", i, err.field, err.message);
        assert_close(mem.mem_tier1_bytes, full.mem_tier1_bytes, 0);
        assert_int_equal(mem.extra.heaviest.index, full.extra.heaviest.index);
        assert_close(mem.stats.total_time, 0, 0);
    }
    llm_execution_t e = test_layout(1, 16, 128);
    e.num_procs = 2048;
    e.batch_size = 15360;
    e.expert_par = 64;
    e.expert_tensor_par = 1;
    e.moe_load_imbalance = 1;
    e.moe_dispatcher = LLM_MOE_DISPATCH_FLEX;
    e.attention_kernel = LLM_ATTN_KERNEL_FUSED;
    e.fp8 = e.fp8_params = e.fp8_activation_cache = true;
    e.optimizer_sharding = true;
    e.optimizer_state_datatype = LLM_STATE_BFLOAT16;
    e.recompute_modules = LLM_RECOMPUTE_LAYERNORM | LLM_RECOMPUTE_MLA_UP_PROJ |
                          LLM_RECOMPUTE_MOE_ACT;
    e.pipeline_schedule = LLM_PP_DUALPIPE;
    e.first_stage_blocks = 2;
    e.last_stage_blocks = 3;
    e.pipeline_par_net = e.data_par_net = e.expert_par_net = 1;
    s = unit_system(100);
    s.num_networks = 2;
    s.networks[1] = s.networks[0];
    s.networks[1].size = 65536;
    s.networks[0].size = 8;
    llm_result_t full, mem;
    fathom_error_t err;
    if (llm_estimate(&ds, &s, &e, &full, &err) || llm_estimate_memory(&ds, &s, &e, &mem, &err))
        fail_msg("%s: %s", err.field, err.message);
    assert_close(mem.mem_tier1_bytes, full.mem_tier1_bytes, 0);
    assert_close(mem.extra.stages[0].total, full.extra.stages[0].total, 0);
}

/* Offloading the activations (16 blocks on 4 ranks, 4 each, 8 microbatches, no recompute):
 * rank r keeps F = 4 − r microbatches of its 4 blocks, 4F block-microbatches, so its blocks'
 * activations are W + (4F − 1)·S (W the block being computed, S above). Tier 1 keeps W and one
 * block's S, and every outer working set (the last rank's fp32 logits, which the loss works on):
 * rank r's tier 1 is its total less (4F − 2)·S, 14·S on rank 0 and 2·S on rank 3, and the
 * answer is the largest over the ranks — rank 3's, with the output layer and the logits, not
 * the heaviest rank before offloading (rank 0). Tier 2 holds the blocks' W + (4F − 1)·S of the
 * rank with most, W + 15·S. */
static void activation_offload_every_rank(void **state)
{
    (void)state;
    fathom_model_t m = model_of(16);
    llm_execution_t e = exe(4, 1, 8);
    e.activation_recompute = LLM_RECOMPUTE_NONE;
    e.activations_offload = true;
    llm_result_t r;
    run(&m, &e, &r);
    const double W = r.extra.memory.working[0];
    double tier1 = 0;
    for (int64_t rank = 0; rank < 4; rank++) {
        llm_stage_memory_t st;
        llm_stage_memory(&m, &e, &r, rank, &st);
        const double F = (double)(4 - rank);
        tier1 = fmax(tier1, st.total - (4 * F - 2) * S_BLOCK);
        if (rank == 3) /* the logits stay in tier 1 */
            assert_true(r.mem_tier1_bytes >= st.total - 2 * S_BLOCK);
    }
    assert_int_equal(r.extra.heaviest.index, 0);
    assert_close(r.mem_tier1_bytes, tier1, 1e-12);
    assert_close(r.mem_tier2_bytes, W + 15 * S_BLOCK, 1e-12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(block_storage),
        cmocka_unit_test(schedules_in_flight),
        cmocka_unit_test(dualpipe_two_copies),
        cmocka_unit_test(dualpipe_end_stages),
        cmocka_unit_test(torch_stack_memory),
        cmocka_unit_test(loss_kernel_memory),
        cmocka_unit_test(optimizer_state_datatype),
        cmocka_unit_test(fp8_activation_cache),
        cmocka_unit_test(fixed_reserve),
        cmocka_unit_test(deepep_buffers),
        cmocka_unit_test(alltoall_buffers),
        cmocka_unit_test(end_stage_blocks),
        cmocka_unit_test(core_attn_fused),
        cmocka_unit_test(activation_gradient_peak),
        cmocka_unit_test(op_selective_checkpointing),
        cmocka_unit_test(fsdp2_state),
        cmocka_unit_test(fsdp2_interleaved_gradients),
        cmocka_unit_test(fsdp2_zero2_under_pp),
        cmocka_unit_test(fsdp2_low_precision_gradients),
        cmocka_unit_test(schedule_bubbles),
        cmocka_unit_test(memory_alone),
        cmocka_unit_test(activation_offload_every_rank),
    };
    return cmocka_run_group_tests(tests, load_presets, free_presets);
}

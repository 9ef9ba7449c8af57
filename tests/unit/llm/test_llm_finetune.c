/* test_llm_finetune.c — execution.finetune (core/llm/llm_finetune.c) on the tiny model, every
 * figure worked by hand in the comments: the adapters' parameters and FLOPs, frozen layers with
 * no weight-gradient GEMM, the memory of a stage (weights in the base datatype, gradients and
 * optimizer state of the adapters only), QLoRA's NF4 bytes and its dequantization traffic, the
 * data-parallel reduction of the adapters alone, full fine-tuning being pre-training; LoRA on
 * routed and shared experts, on multi-latent attention and MTP depths; the inputs frozen
 * projections no longer keep; FSDP2's state with a frozen base.
 *
 * The tiny model (llm_test_util.h): hidden 64, ffn 128 gated, 8 query heads and 2 key/value
 * heads of 8, 2 blocks, sequence 16; per block Q 4,096 + K 1,024 + V 1,024 + O 4,096 +
 * MLP 24,576 (gate and up 64·256, down 128·64) + norms 128 = 34,944 parameters, of which
 * 34,816 in the seven projections. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "llm_codec.h"
#include "llm_internal.h"
#include "llm_test_util.h"
#include "test_util.h"

static void estimate(const fathom_model_t *m, const llm_system_t *s, const llm_execution_t *e,
                     llm_result_t *r)
{
    fathom_error_t err;
    if (llm_estimate(m, s, e, r, &err))
        fail_msg("estimate: %s: %s", err.field, err.message);
}

static llm_execution_t lora(int method, int64_t rank)
{
    llm_execution_t e = test_layout(1, 1, 1); /* batch 2, microbatch 1: 2 microbatches */
    e.finetune.method = (llm_finetune_method_t)method;
    e.finetune.rank = rank;
    e.finetune.targets = LLM_LORA_ALL_TARGETS;
    e.finetune.base_datatype = method == LLM_FINETUNE_QLORA ? LLM_BASE_NF4 : LLM_DT_BFLOAT16;
    return e;
}

/* Rank 4 on every projection of a block, A n_in×4 and B 4×n_out:
 *   q 4·(64+64) = 512, k 4·(64+16) = 320, v 320, o 4·(64+64) = 512,
 *   gate 4·(64+128) = 768, up 768, down 4·(128+64) = 768  →  3,968 a block, 7,936 in all.
 * Model FLOPs of a step of 2 sequences of 16: 2/3 of the pre-training count plus
 * 6 · 32 tokens · 7,936 = 1,523,712. */
static void adapters_parameters_and_flops(void **state)
{
    (void)state;
    fathom_model_t m = tiny_model();
    llm_execution_t e = lora(LLM_FINETUNE_LORA, 4);
    assert_close(llm_finetune_trainable_params(&m, &e), 7936, 0);
    const double pre = llm_model_flops(&m, e.batch_size, true);
    assert_close(llm_step_model_flops(&m, &e), pre * 2 / 3 + 1523712, 1e-15);
    e.finetune.targets = LLM_LORA_Q | LLM_LORA_V; /* the LoRA paper's choice: 512 + 320 a block */
    assert_close(llm_finetune_trainable_params(&m, &e), 2 * 832, 0);
    e.finetune.method = LLM_FINETUNE_FULL; /* every parameter trains: 197,952 */
    assert_close(llm_finetune_trainable_params(&m, &e), 197952, 0);
    assert_close(llm_step_model_flops(&m, &e), pre, 0);
}

/* Frozen layers run no weight-gradient GEMM: a block's weight-gradient FLOPs are the adapters'
 * alone, 2 · 16 tokens · 3,968 = 126,976, and its forward gains as many. */
static void frozen_layers_have_no_weight_gradient(void **state)
{
    (void)state;
    fathom_model_t m = tiny_model();
    llm_system_t s = unit_system(100);
    llm_execution_t pre = test_layout(1, 1, 1), e = lora(LLM_FINETUNE_LORA, 4);
    llm_result_t a, b;
    estimate(&m, &s, &pre, &a);
    estimate(&m, &s, &e, &b);
    assert_close(b.stats.block_wgrad_flops, 126976, 0);
    assert_close(b.stats.block_fw_flops - a.stats.block_fw_flops, 126976, 0);
    assert_true(b.stats.total_time < a.stats.total_time);
}

/* One stage holds everything (pp 1, dp 1, no sharding). With vocab 0 the blocks alone:
 *   frozen 2 · 34,944 = 69,888 parameters in bf16: 139,776 bytes; adapters 7,936 · 2 = 15,872
 *   weights 155,648; gradients 7,936 · 4 (fp32) = 31,744; optimizer 7,936 · 12 = 95,232.
 * QLoRA: the frozen 69,888 in NF4 at 4.126953125 bits (4 + 8/64 + 32/16384):
 *   69,888 / 8 · 4.126953125 = 8,736 · 4.126953125 = 36,053.0625, + 15,872 = 51,925.0625.
 * With the vocabulary (1,000 rows, untied) the embedding, final norm and output layer are
 * frozen too: 197,952 · 2 + 15,872 = 411,776 bytes of weights, gradients still 31,744. */
static void memory_of_a_stage(void **state)
{
    (void)state;
    fathom_model_t m = tiny_model();
    m.vocab_size = 0;
    llm_system_t s = unit_system(100);
    llm_execution_t e = lora(LLM_FINETUNE_LORA, 4);
    llm_result_t r;
    estimate(&m, &s, &e, &r);
    const llm_stage_memory_t *st = &r.extra.stages[0];
    assert_close(st->weights, 155648, 0);
    assert_close(st->gradients, 31744, 0);
    assert_close(st->optimizer, 95232, 0);
    e = lora(LLM_FINETUNE_QLORA, 4);
    estimate(&m, &s, &e, &r);
    assert_close(r.extra.stages[0].weights, 51925.0625, 0);
    assert_close(r.extra.stages[0].gradients, 31744, 0);
    m = tiny_model();
    e = lora(LLM_FINETUNE_LORA, 4);
    estimate(&m, &s, &e, &r);
    assert_close(r.extra.stages[0].weights, 411776, 0);
    assert_close(r.extra.stages[0].gradients, 31744, 0);
    assert_close(r.extra.stages[0].optimizer, 95232, 0);
}

/* QLoRA dequantizes each frozen projection before its forward GEMM: NF4 read, bf16 written,
 * 34,816 · (0.515869140625 + 2) = 87,592.5 bytes more per block than LoRA over a bf16 base. */
static void qlora_dequantizes_before_each_gemm(void **state)
{
    (void)state;
    fathom_model_t m = tiny_model();
    llm_system_t s = unit_system(100);
    llm_execution_t e1 = lora(LLM_FINETUNE_LORA, 4), e2 = lora(LLM_FINETUNE_QLORA, 4);
    llm_result_t a, b;
    estimate(&m, &s, &e1, &a);
    estimate(&m, &s, &e2, &b);
    assert_close(b.stats.block_fw_mem_accessed - a.stats.block_fw_mem_accessed, 87592.5, 1e-12);
    assert_close(b.stats.block_agrad_mem_accessed - a.stats.block_agrad_mem_accessed, 87592.5,
                 1e-12);
    assert_close(b.stats.block_fw_flops, a.stats.block_fw_flops, 0);
}

/* Data parallelism reduces the adapters' gradients only: dp 2, ZeRO-0, one all-reduce of a
 * block's 3,968 adapter parameters in bf16 (7,936 bytes) instead of 34,944 · 2 = 69,888. */
static void data_parallelism_reduces_the_adapters(void **state)
{
    (void)state;
    fathom_model_t m = tiny_model();
    m.vocab_size = 0;
    llm_system_t s = unit_system(100);
    llm_execution_t pre = test_layout(1, 1, 2), e = pre;
    e.finetune = lora(LLM_FINETUNE_LORA, 4).finetune;
    llm_result_t a, b;
    estimate(&m, &s, &pre, &a);
    estimate(&m, &s, &e, &b);
    assert_close(a.stats.block_dp_size, 69888, 0);
    assert_close(b.stats.block_dp_size, 7936, 0);
}

/* Full fine-tuning is pre-training's step: every statistic identical. */
static void full_is_pretraining(void **state)
{
    (void)state;
    fathom_model_t m = tiny_model();
    llm_system_t s = unit_system(100);
    llm_execution_t pre = test_layout(1, 1, 2), e = pre;
    e.finetune.method = LLM_FINETUNE_FULL;
    llm_result_t a, b;
    estimate(&m, &s, &pre, &a);
    estimate(&m, &s, &e, &b);
    assert_memory_equal(&a.stats, &b.stats, sizeof a.stats);
}

/* The tiny model with experts: 4 routed experts of width 32 (top 2) and one shared expert of
 * width 32 in every block. Per block: attention 10,240 + norms 128 + router 64·4 = 256 +
 * routed 4 · (64·32·2 + 32·64) = 4 · 6,144 = 24,576 + shared 6,144 = 41,344 parameters. */
static fathom_model_t tiny_moe(void)
{
    fathom_model_t m = tiny_model();
    m.moe.num_experts = 4, m.moe.top_k = 2, m.moe.expert_feedforward = 32, m.moe.every = 1;
    m.moe.shared_experts = 1, m.moe.shared_expert_feedforward = 32;
    return m;
}

/* The tiny model with multi-latent attention: 8 heads, queries through a rank-16 bottleneck,
 * keys and values through one rank-8 latent, nope 8 + rope 4 per query-key head, v 8. */
static fathom_model_t tiny_mla(void)
{
    fathom_model_t m = tiny_model();
    m.mla.present = true;
    m.mla.q_lora_rank = 16, m.mla.kv_lora_rank = 8;
    m.mla.qk_nope_head_dim = 8, m.mla.qk_rope_head_dim = 4, m.mla.v_head_dim = 8;
    return m;
}

/* LoRA on a mixture of experts, rank 4, every projection (PEFT's all-linear):
 *   attention q 512 + k 320 + v 320 + o 512 = 1,664 a block (as the dense model's)
 *   a routed expert: gate 4·(64+32) = 384, up 384, down 4·(32+64) = 384 = 1,152, ×4 experts
 *   = 4,608; the shared expert (width 32) 1,152
 *   → 7,424 a block, 14,848 in all; a token runs through attention, top 2 experts and the
 *   shared one: 1,664 + 2·1,152 + 1,152 = 5,120 a block, 10,240 in all, so the adapters add
 *   6 · 32 tokens · 10,240 = 1,966,080 model FLOPs to 2/3 of pre-training's.
 * Without the routed experts (routed_experts false): 1,664 + 1,152 = 2,816 a block, 5,632. */
static void moe_adapters(void **state)
{
    (void)state;
    fathom_model_t m = tiny_moe();
    llm_execution_t e = lora(LLM_FINETUNE_LORA, 4);
    assert_close(llm_finetune_trainable_params(&m, &e), 14848, 0);
    assert_close(llm_finetune_active_params(&m, &e), 10240, 0);
    const double pre = llm_model_flops(&m, e.batch_size, true);
    assert_close(llm_step_model_flops(&m, &e), pre * 2 / 3 + 1966080, 1e-15);
    e.finetune.skip_routed_experts = true;
    assert_close(llm_finetune_trainable_params(&m, &e), 5632, 0);
    e.finetune.skip_routed_experts = false;
    e.finetune.targets = LLM_LORA_Q | LLM_LORA_K | LLM_LORA_V | LLM_LORA_O;
    assert_close(llm_finetune_trainable_params(&m, &e), 3328, 0);
}

/* The step of that LoRA: every block's weight-gradient FLOPs are the adapters' (2·rows·params):
 *   attention, 16 tokens:        2 · 16 · 1,664 = 53,248
 *   routed, R = 16 tokens · top 2 = 32 rows over the 4 experts' adapters (1,152 each, one
 *   expert's shapes per row):     2 · 32 · 1,152 = 73,728
 *   shared, 16 tokens:           2 · 16 · 1,152 = 36,864           → 163,840.
 * State of the one stage (vocab 0: the blocks alone, 2 · 41,344 = 82,688 frozen in bf16):
 *   weights 82,688·2 + 14,848·2 = 195,072; gradients 14,848·4 = 59,392; optimizer 14,848·12
 *   = 178,176; of which the routed experts': weights 2·24,576·2 frozen + 9,216·2 adapters =
 *   116,736, gradients 9,216·4 = 36,864, optimizer 9,216·12 = 110,592. */
static void moe_step_and_state(void **state)
{
    (void)state;
    fathom_model_t m = tiny_moe();
    m.vocab_size = 0;
    llm_system_t s = unit_system(100);
    llm_execution_t pre = test_layout(1, 1, 1), e = lora(LLM_FINETUNE_LORA, 4);
    llm_result_t a, b;
    estimate(&m, &s, &pre, &a);
    estimate(&m, &s, &e, &b);
    assert_close(b.stats.block_wgrad_flops, 163840, 0);
    assert_true(b.stats.block_wgrad_flops < a.stats.block_wgrad_flops);
    /* (no faster here: on a model this small each grouped adapter GEMM's fixed 30 µs, 18 calls
     * a block, outweighs the FLOPs saved; test_planner.py times a real model) */
    const llm_stage_memory_t *st = &b.extra.stages[0];
    assert_close(st->weights, 195072, 0);
    assert_close(st->gradients, 59392, 0);
    assert_close(st->optimizer, 178176, 0);
    assert_close(st->expert_weights, 116736, 0);
    assert_close(st->expert_gradients, 36864, 0);
    assert_close(st->expert_optimizer, 110592, 0);
}

/* LoRA on multi-latent attention, rank 2, every projection: q_a 2·(64+16) = 160, q_b
 * 2·(16 + 8·12) = 224, kv_a 2·(64 + 8+4) = 152, kv_b 2·(8 + 8·(8+8)) = 272, o 2·(8·8 + 64)
 * = 256, the gated MLP 2·(64+128)·3 = 1,152: 2,216 a block, 4,432 for 2 blocks; one MTP depth
 * is a third block: 6,648. */
static void mla_and_mtp_adapters(void **state)
{
    (void)state;
    fathom_model_t m = tiny_mla();
    llm_system_t s = unit_system(100);
    llm_execution_t e = lora(LLM_FINETUNE_LORA, 2);
    assert_close(llm_finetune_trainable_params(&m, &e), 4432, 0);
    m.mtp_blocks = 1;
    assert_close(llm_finetune_trainable_params(&m, &e), 6648, 0);
    llm_result_t r;
    estimate(&m, &s, &e, &r);
    /* the estimate trains what the count says: a block's adapters' weight gradients,
     * 2 · 16 tokens · 2,216 = 70,912 FLOPs */
    assert_close(r.stats.block_wgrad_flops, 70912, 0);
}

/* A frozen projection without an adapter keeps no input (llm_finetune.c, 4.). The tiny dense
 * block (unfused attention, TP 1) keeps per microbatch, among the rest: the fork's copy of the
 * normed input for Q, K and V (16·64 = 1,024 elements), o's input (1,024), up's (1,024) and
 * down's (16·128 = 2,048). LoRA on q and v only: q keeps the fork's copy (its A reads it), o, up
 * and down drop theirs: 4,096 elements, 8,192 bytes a block fewer, and each adapter's B keeps
 * A's output, 16·4 = 64 elements, 2·64·2 = 256 bytes. On every projection nothing is dropped
 * and the seven B keep 7·64·2 = 896 bytes. With the fused kernel, o's input O stays kept by the
 * kernel (its backward reads O): 1,024 fewer elements dropped, 6,144 bytes. */
static void frozen_inputs_are_dropped(void **state)
{
    (void)state;
    fathom_model_t m = tiny_model();
    llm_system_t s = unit_system(100);
    llm_execution_t pre = test_layout(1, 1, 1), e = lora(LLM_FINETUNE_LORA, 4);
    llm_result_t a, b;
    estimate(&m, &s, &pre, &a);
    e.finetune.targets = LLM_LORA_Q | LLM_LORA_V;
    estimate(&m, &s, &e, &b);
    assert_close(b.extra.memory.stored[0] - a.extra.memory.stored[0], -8192 + 256, 0);
    e.finetune.targets = LLM_LORA_ALL_TARGETS;
    estimate(&m, &s, &e, &b);
    assert_close(b.extra.memory.stored[0] - a.extra.memory.stored[0], 896, 0);
    pre.attention_kernel = LLM_ATTN_KERNEL_FUSED;
    e.attention_kernel = LLM_ATTN_KERNEL_FUSED;
    e.finetune.targets = LLM_LORA_Q | LLM_LORA_V;
    estimate(&m, &s, &pre, &a);
    estimate(&m, &s, &e, &b);
    assert_close(b.extra.memory.stored[0] - a.extra.memory.stored[0], -6144 + 256, 0);
    /* TP 2 with sequence parallelism (unfused attention again): the MLP's all-gather keeps the
     * sequence sliver of up's input, 16·64/2 elements = 1,024 bytes, for up's weight gradient,
     * and up keeps the gathered input, 2,048 bytes: both dropped; o keeps 16·(64/2) = 512
     * elements (1,024 bytes), down 16·(128/2) = 1,024 (2,048 bytes): 6,144 bytes in all, and
     * the two B keep 16·4 elements each, 256 bytes. */
    pre = test_layout(2, 1, 1);
    pre.tensor_par_comm_type = LLM_TP_COMM_RS_AG;
    e = pre;
    e.finetune = lora(LLM_FINETUNE_LORA, 4).finetune;
    e.finetune.targets = LLM_LORA_Q | LLM_LORA_V;
    estimate(&m, &s, &pre, &a);
    estimate(&m, &s, &e, &b);
    assert_close(b.extra.memory.stored[0] - a.extra.memory.stored[0], -6144 + 256, 0);
}

/* FSDP2 (the torchtitan stack, ZeRO-3 over dp 2) with a frozen base, the tiny model, vocab 0,
 * rank 4 everywhere: P = 2·(34,944 + 3,968) = 77,824 parameters on a rank, Z = 69,888 frozen,
 * T = 7,936 trained, a block 38,912 of which 34,944 frozen, S = 2:
 *   weights   T·4/S + Z·2/S (bf16 shards, no fp32 master for what does not train)
 *             + two gathered blocks 77,824·2 = 15,872 + 69,888 + 155,648 = 241,408
 *   gradients T·4/S + one block's trained 3,968·(2 + 4) = 15,872 + 23,808 = 39,680
 *   optimizer T·8/S = 31,744.
 * QLoRA: the shards and the gathered blocks of the frozen weights in NF4 (0.515869140625 bytes):
 *   15,872 + 69,888·0.515869140625/2 + (7,936·2 + 69,888·0.515869140625) = 85,823.59375. */
static void fsdp2_with_a_frozen_base(void **state)
{
    (void)state;
    fathom_model_t m = tiny_model();
    m.vocab_size = 0;
    llm_system_t s = unit_system(100);
    llm_execution_t e = lora(LLM_FINETUNE_LORA, 4);
    e.data_par = 2, e.num_procs = 2, e.batch_size = 4;
    e.stack = LLM_STACK_TORCHTITAN;
    e.zero_stage = 3;
    e.attention_kernel = LLM_ATTN_KERNEL_FUSED;
    llm_result_t r;
    estimate(&m, &s, &e, &r);
    assert_close(r.extra.stages[0].weights, 241408, 0);
    assert_close(r.extra.stages[0].gradients, 39680, 0);
    assert_close(r.extra.stages[0].optimizer, 31744, 0);
    e.finetune = lora(LLM_FINETUNE_QLORA, 4).finetune;
    estimate(&m, &s, &e, &r);
    assert_close(r.extra.stages[0].weights, 85823.59375, 1e-15);
}

/* What is not meaningful is refused by field; experts, MLA and MTP are not. */
static void refusals(void **state)
{
    (void)state;
    fathom_model_t m = tiny_model();
    llm_system_t s = unit_system(100);
    llm_execution_t e = lora(LLM_FINETUNE_LORA, 4);
    llm_result_t r;
    fathom_error_t err;
    fathom_model_t moe = tiny_moe();
    assert_int_equal(llm_estimate(&moe, &s, &e, &r, &err), 0);
    e.finetune.rank = 33; /* wider than a routed expert's 32 */
    assert_int_equal(llm_estimate(&moe, &s, &e, &r, &err), -1);
    assert_string_equal(err.field, "execution.finetune.rank");
    e.finetune.targets = LLM_LORA_Q | LLM_LORA_O; /* 64 wide: rank 33 fits */
    assert_int_equal(llm_estimate(&moe, &s, &e, &r, &err), 0);
    e = lora(LLM_FINETUNE_LORA, 17); /* wider than k and v's 16 columns */
    assert_int_equal(llm_estimate(&m, &s, &e, &r, &err), -1);
    assert_string_equal(err.field, "execution.finetune.rank");
    e = lora(LLM_FINETUNE_LORA, 4);
    e.finetune.skip_routed_experts = true; /* a dense model has no routed experts */
    assert_int_equal(llm_estimate(&m, &s, &e, &r, &err), -1);
    assert_string_equal(err.field, "execution.finetune.routed_experts");
    fathom_model_t mla = tiny_mla();
    e = lora(LLM_FINETUNE_LORA, 2);
    e.finetune.targets = LLM_LORA_K; /* MLA has no k_proj */
    assert_int_equal(llm_estimate(&mla, &s, &e, &r, &err), -1);
    assert_string_equal(err.field, "execution.finetune.targets");
    e.finetune.targets = LLM_LORA_Q_A; /* nor has the dense model q_a_proj */
    assert_int_equal(llm_estimate(&m, &s, &e, &r, &err), -1);
    assert_string_equal(err.field, "execution.finetune.targets");
    e = lora(LLM_FINETUNE_LORA, 4);
    e.training = false;
    assert_int_equal(llm_estimate(&m, &s, &e, &r, &err), -1);
    assert_string_equal(err.field, "execution.finetune");
}

/* The codec: defaults, the normalized form and refusals naming the field. */
static void codec_round_trip(void **state)
{
    (void)state;
    llm_finetune_t f;
    fathom_error_t err;
    json_t *v = json_pack("{s:s,s:i}", "method", "qlora", "rank", 64);
    assert_int_equal(codec_llm_finetune_decode(v, "execution.finetune", LLM_DT_BFLOAT16, &f, &err),
                     0);
    assert_int_equal(f.base_datatype, LLM_BASE_NF4);
    assert_int_equal(f.targets, LLM_LORA_ALL_TARGETS);
    json_t *back = codec_llm_finetune_encode(&f);
    assert_string_equal(json_string_value(json_object_get(back, "targets")), "all-linear");
    assert_string_equal(json_string_value(json_object_get(back, "base_datatype")), "nf4");
    assert_true(json_is_true(json_object_get(back, "routed_experts")));
    json_decref(back);
    json_decref(v);
    /* a list is kept as a list; routed_experts false is kept */
    v = json_pack("{s:s,s:i,s:[s,s],s:b}", "method", "lora", "rank", 8, "targets", "q_proj",
                  "kv_b_proj", "routed_experts", 0);
    assert_int_equal(codec_llm_finetune_decode(v, "execution.finetune", LLM_DT_BFLOAT16, &f, &err),
                     0);
    assert_int_equal(f.targets, LLM_LORA_Q | LLM_LORA_KV_B);
    assert_true(f.skip_routed_experts);
    back = codec_llm_finetune_encode(&f);
    assert_int_equal(json_array_size(json_object_get(back, "targets")), 2);
    assert_true(json_is_false(json_object_get(back, "routed_experts")));
    json_decref(back);
    json_decref(v);
    v = json_pack("{s:s,s:i,s:s}", "method", "lora", "rank", 8, "targets", "all");
    assert_int_equal(codec_llm_finetune_decode(v, "execution.finetune", LLM_DT_BFLOAT16, &f, &err),
                     -1);
    assert_string_equal(err.field, "execution.finetune.targets");
    json_decref(v);
    v = json_pack("{s:s,s:i}", "method", "full", "rank", 8);
    assert_int_equal(codec_llm_finetune_decode(v, "execution.finetune", LLM_DT_BFLOAT16, &f, &err),
                     -1);
    assert_string_equal(err.field, "execution.finetune.rank");
    json_decref(v);
    v = json_pack("{s:s,s:i,s:[s]}", "method", "lora", "rank", 8, "targets", "qkv_proj");
    assert_int_equal(codec_llm_finetune_decode(v, "execution.finetune", LLM_DT_BFLOAT16, &f, &err),
                     -1);
    assert_string_equal(err.field, "execution.finetune.targets[0]");
    json_decref(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(adapters_parameters_and_flops),
        cmocka_unit_test(frozen_layers_have_no_weight_gradient),
        cmocka_unit_test(memory_of_a_stage),
        cmocka_unit_test(qlora_dequantizes_before_each_gemm),
        cmocka_unit_test(data_parallelism_reduces_the_adapters),
        cmocka_unit_test(full_is_pretraining),
        cmocka_unit_test(moe_adapters),
        cmocka_unit_test(moe_step_and_state),
        cmocka_unit_test(mla_and_mtp_adapters),
        cmocka_unit_test(frozen_inputs_are_dropped),
        cmocka_unit_test(fsdp2_with_a_frozen_base),
        cmocka_unit_test(refusals),
        cmocka_unit_test(codec_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

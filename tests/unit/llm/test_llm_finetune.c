/* test_llm_finetune.c — execution.finetune (core/llm/llm_finetune.c) on the tiny model, every
 * figure worked by hand in the comments: the adapters' parameters and FLOPs, frozen layers with
 * no weight-gradient GEMM, the memory of a stage (weights in the base datatype, gradients and
 * optimizer state of the adapters only), QLoRA's NF4 bytes and its dequantization traffic, the
 * data-parallel reduction of the adapters alone, and full fine-tuning being pre-training.
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

/* What the adapters do not cover is refused by field. */
static void refusals(void **state)
{
    (void)state;
    fathom_model_t m = tiny_model();
    llm_system_t s = unit_system(100);
    llm_execution_t e = lora(LLM_FINETUNE_LORA, 4);
    llm_result_t r;
    fathom_error_t err;
    fathom_model_t moe = m;
    moe.moe.num_experts = 4, moe.moe.top_k = 2, moe.moe.expert_feedforward = 64, moe.moe.every = 1;
    assert_int_equal(llm_estimate(&moe, &s, &e, &r, &err), -1);
    assert_string_equal(err.field, "execution.finetune.method");
    e.finetune.rank = 17; /* wider than k and v's 16 columns */
    assert_int_equal(llm_estimate(&m, &s, &e, &r, &err), -1);
    assert_string_equal(err.field, "execution.finetune.rank");
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
    assert_int_equal(json_array_size(json_object_get(back, "targets")), 7);
    assert_string_equal(json_string_value(json_object_get(back, "base_datatype")), "nf4");
    json_decref(back);
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
        cmocka_unit_test(refusals),
        cmocka_unit_test(codec_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

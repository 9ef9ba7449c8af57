/* test_transformer.c — the analytic transformer model against the figures the seeds print:
 * the GPT-2 124M sizing notebook (seed 003) and the LLaMA-70B / GPT-3 cost notebook (seed 004). */
#include <string.h>

#include "test_util.h"
#include "transformer.h"

static fathom_model_t gpt2(void)
{
    fathom_model_t m = {.hidden = 768, .feedforward = 3072, .seq_size = 1024, .attn_heads = 12,
                        .attn_size = 64, .num_blocks = 12, .vocab_size = 50257, .bias = false,
                        .tied_embeddings = true, .position_embedding = MODEL_POS_LEARNED};
    return m;
}

/* Seed 004's models: only what its formulas read (h, l, s; V for the LoRA compute). */
static fathom_model_t llama70b(void)
{
    fathom_model_t m = {.hidden = 8192, .feedforward = 4 * 8192, .seq_size = 4096,
                        .attn_heads = 64, .attn_size = 128, .num_blocks = 80, .vocab_size = 32000,
                        .tied_embeddings = true};
    return m;
}

static fathom_model_t gpt3(long long seq)
{
    fathom_model_t m = {.hidden = 12288, .feedforward = 4 * 12288, .seq_size = seq,
                        .attn_heads = 96, .attn_size = 128, .num_blocks = 96,
                        .vocab_size = 50257, .tied_embeddings = true};
    return m;
}

static void gpt2_params(void **state)
{
    (void)state;
    fathom_model_t m = gpt2();
    tf_params_t p;
    tf_params(&m, &p);
    assert_close(p.embedding_position, 786432, 0);
    assert_close(p.embedding_token, 38597376, 0);
    assert_close(p.attention_kqv, 1769472, 0);
    assert_close(p.attention_proj, 589824, 0);
    assert_close(p.mlp_ffw, 2359296, 0);
    assert_close(p.block, 7079424, 0);
    assert_close(p.transformer, 84953088, 0);
    assert_close(p.total, 124337664, 0);
}

static void gpt2_flops_palm_checkpoint(void **state)
{
    (void)state;
    fathom_model_t m = gpt2();
    tf_inputs_t in;
    tf_inputs_init(&in);
    tf_result_t r;
    tf_estimate(&m, &in, &r);
    assert_close(r.flops.attention_kqv, 3623878656.0, 0);
    assert_close(r.flops.attention_scores, 1610612736.0, 0);
    assert_close(r.flops.block, 17716740096.0, 0);
    assert_close(r.flops.dense, 79047426048.0, 0);
    assert_close(r.flops.forward_total, 291648307200.0, 0);
    assert_close(r.flops.total, 874944921600.0, 0);
    assert_close(r.palm_flops_per_sequence, 875062886400.0, 0);
    /* "est checkpoint size: 1.49 GB" */
    assert_close(r.checkpoint_bytes / 1e9, 1.49, 0.005 / 1.49);
}

static void gpt2_mfu_and_6nd(void **state)
{
    (void)state;
    fathom_model_t m = gpt2();
    tf_inputs_t in;
    tf_inputs_init(&in);
    in.has_batch_size = true, in.batch_size = 100;
    in.has_measured_step_time = true, in.measured_step_time_s = 0.755;
    in.has_gpu_peak_flops = true, in.gpu_peak_flops = 312e12;
    in.has_tokens = true, in.tokens = 300e9;
    in.has_num_gpus = true, in.num_gpus = 8;
    in.has_mfu = true, in.mfu = 0.3;
    tf_result_t r;
    tf_estimate(&m, &in, &r);
    assert_true(r.has_train_time);
    assert_close(round(r.train_days * 100) / 100, 3.46, 0); /* "3.46 days" */
    /* the notebook's step of 100 sequences in 0.755 s ran on one A100 */
    in.has_num_gpus = false;
    tf_estimate(&m, &in, &r);
    assert_true(r.has_mfu);
    assert_close(round(r.mfu * 10000) / 100, 37.14, 0); /* "fraction of A100 used: 37.14%" */
    /* MFU is over every GPU of the step: 8 GPUs each running the notebook's 100 sequences in
     * 0.755 s (a global batch of 800) use the same fraction of their peak as the one A100 did,
     * 874,944,921,600 FLOP × 800 / 0.755 s / (8 × 312e12) = 0.37143, not 8 times it. */
    in.has_num_gpus = true, in.num_gpus = 8;
    in.batch_size = 800;
    tf_estimate(&m, &in, &r);
    assert_close(r.achieved_flops_per_s, 874944921600.0 * 800 / 0.755, 1e-12);
    assert_close(r.mfu, 874944921600.0 * 800 / 0.755 / (8 * 312e12), 1e-12);
    assert_close(round(r.mfu * 10000) / 100, 37.14, 0);
}

/* Seed 004's constants: A100 312 TFLOP/s at 45%, backward 1.5× forward, 5% recompute. */
static tf_inputs_t seed004_inputs(double params, double tokens)
{
    tf_inputs_t in;
    tf_inputs_init(&in);
    in.has_gpu_peak_flops = true, in.gpu_peak_flops = 312e12;
    in.has_mfu = true, in.mfu = 0.45;
    in.backward_forward_ratio = 1.5;
    in.recompute_overhead = 0.05;
    in.has_param_count = true, in.param_count = params;
    in.has_tokens = true, in.tokens = tokens;
    in.micro_batch_size = 8;
    return in;
}

static void seed004_time_and_gpus(void **state)
{
    (void)state;
    fathom_model_t llama = llama70b(), g3 = gpt3(2048);
    tf_result_t r;

    tf_inputs_t in = seed004_inputs(70e9, 500000.0 * 4096 * 10);
    in.has_num_gpus = true, in.num_gpus = 85;
    tf_estimate(&llama, &in, &r);
    assert_close(ceil(r.train_days), 8, 0); /* "85 GPUs ... 20B tokens ... 8 days" */

    in = seed004_inputs(175e9, 300e9);
    in.has_time_budget = true, in.time_budget_days = 34;
    tf_estimate(&g3, &in, &r);
    assert_close(r.gpus_for_budget, 669, 0);

    in = seed004_inputs(70e9, 500000.0 * 4096 * 10);
    in.has_time_budget = true, in.time_budget_days = 60;
    tf_estimate(&llama, &in, &r);
    assert_close(r.gpus_for_budget, 11, 0);

    in = seed004_inputs(70e9, 1e9);
    in.has_gpu_memory = true, in.gpu_memory_gib = 80;
    tf_estimate(&llama, &in, &r);
    assert_close(r.gpus_by_memory, 25, 0);

    in = seed004_inputs(175e9, 1e9);
    tf_estimate(&g3, &in, &r);
    assert_close(ceil(r.memory_bytes / 1e9), 4158, 0); /* "gpt3:4158" */
}

static void seed004_lora(void **state)
{
    (void)state;
    tf_result_t r;
    tf_inputs_t in;

    /* The seed evaluates GPT-3's LoRA memory at twice its sequence length (gpt3_s*2). */
    fathom_model_t g3mem = gpt3(4096), g3 = gpt3(2048), llama = llama70b();
    in = seed004_inputs(175e9, 20e9);
    in.has_lora = true, in.lora_rank = 4;
    in.has_gpu_memory = true, in.gpu_memory_gib = 80;
    tf_estimate(&g3mem, &in, &r);
    assert_close(r.lora_params, 18874368, 0);
    assert_close(ceil(r.lora_memory_bytes / 1073741824.0), 1623, 0);
    assert_close(r.lora_gpus_by_memory, 21, 0);

    in.has_time_budget = true, in.time_budget_days = 60;
    tf_estimate(&g3, &in, &r);
    assert_close(r.lora_gpus_by_compute, 26, 0);

    in = seed004_inputs(70e9, 20e9);
    in.has_lora = true, in.lora_rank = 4;
    in.has_gpu_memory = true, in.gpu_memory_gib = 80;
    in.has_time_budget = true, in.time_budget_days = 60;
    tf_estimate(&llama, &in, &r);
    assert_close(r.lora_params, 10485760, 0);
    assert_close(ceil(r.lora_memory_bytes / 1073741824.0), 851, 0);
    assert_close(r.lora_gpus_by_compute, 11, 0);
    assert_close(r.lora_gpus_by_memory, 11, 0);

    /* In whole tensor-parallel groups, never 3 GPUs for a TP 8 request. At TP 8 the activations
     * shrink 8-fold: 140 GB of frozen weights and what is left fit 2 to 8 GPUs of 80 GiB, one
     * group of 8; on GPUs of 8,000 GiB one GPU holds it all, and the answer is still a group. */
    in.tensor_par = 8;
    tf_estimate(&llama, &in, &r);
    assert_true(r.lora_memory_bytes > 80.0 * 1073741824.0);
    assert_true(r.lora_memory_bytes < 8 * 80.0 * 1073741824.0);
    assert_close(r.lora_gpus_by_memory, 8, 0);
    in.gpu_memory_gib = 8000;
    tf_estimate(&llama, &in, &r);
    assert_close(r.lora_gpus_by_memory, 8, 0);
    in.tensor_par = 1;
    tf_estimate(&llama, &in, &r);
    assert_close(r.lora_gpus_by_memory, 1, 0);
}

static void bias_and_untied(void **state)
{
    (void)state;
    fathom_model_t m = gpt2();
    m.bias = true;
    m.tied_embeddings = false;
    tf_params_t p;
    tf_params(&m, &p);
    /* nanoGPT with bias: LayerNorm gains a shift, every linear a bias vector. */
    assert_close(p.attention_ln, 2 * 768, 0);
    assert_close(p.attention_kqv, 768 * 2304 + 2304, 0);
    assert_close(p.mlp_proj, 3072 * 768 + 768, 0);
    assert_close(p.dense, 768 * 50257, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gpt2_params),           cmocka_unit_test(gpt2_flops_palm_checkpoint),
        cmocka_unit_test(gpt2_mfu_and_6nd),      cmocka_unit_test(seed004_time_and_gpus),
        cmocka_unit_test(seed004_lora),          cmocka_unit_test(bias_and_untied),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

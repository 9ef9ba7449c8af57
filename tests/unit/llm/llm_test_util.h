/* llm_test_util.h — fixtures shared by the modern-block tests: the preset registry, the tiny
 * modern model every hand-worked case uses, and a system whose numbers make times easy to work
 * by hand (1 TFLOP/s at efficiency 1, FP8 at 2, memory too fast to matter, one network). */
#ifndef FATHOM_LLM_TEST_UTIL_H
#define FATHOM_LLM_TEST_UTIL_H

#include <string.h>

#include "llm.h"
#include "presets.h"

static codec_presets_t *presets;

static inline int load_presets(void **state)
{
    (void)state;
    fathom_error_t err;
    presets = codec_presets_load("presets", &err);
    return presets ? 0 : -1;
}

static inline int free_presets(void **state)
{
    (void)state;
    codec_presets_free(presets);
    presets = NULL;
    return 0;
}

/* hidden 64, ffn 128 gated, 8 heads of 8, 2 key/value heads, 2 blocks, sequence 16, vocab
 * 1000, RMSNorm, RoPE, untied: per block Q 4,096 + K 1,024 + V 1,024 + O 4,096 + MLP 24,576 +
 * norms 128 = 34,944 parameters; in all 2·34,944 + 64,000 + 64,000 + 64 = 197,952. */
static inline fathom_model_t tiny_model(void)
{
    fathom_model_t m = {.hidden = 64, .feedforward = 128, .seq_size = 16, .attn_heads = 8,
                        .attn_size = 8, .num_blocks = 2, .vocab_size = 1000, .bias = false,
                        .tied_embeddings = false, .position_embedding = MODEL_POS_ROPE,
                        .kv_heads = 2, .gated_mlp = true, .norm = MODEL_NORM_RMSNORM,
                        .qkv_bias = false, .causal = true, .calculon_block = false};
    return m;
}

static inline void flat_curve(llm_curve_t *c)
{
    c->num_points = 1;
    c->points[0].threshold = 0;
    c->points[0].efficiency = 1;
}

/* A training execution of tp·pp·dp processors, microbatch 1 and batch 2·dp·pp in BF16, every
 * other field off (no recompute, no interleaving, Calculon's unfused attention): each test
 * sets what it is about on top of this. */
static inline llm_execution_t test_layout(int64_t tp, int64_t pp, int64_t dp)
{
    llm_execution_t e;
    memset(&e, 0, sizeof e);
    e.tensor_par = tp;
    e.pipeline_par = pp;
    e.data_par = dp;
    e.num_procs = tp * pp * dp;
    e.batch_size = 2 * dp * pp;
    e.microbatch_size = 1;
    e.datatype = LLM_DT_BFLOAT16;
    e.activation_recompute = LLM_RECOMPUTE_NONE;
    e.pipeline_interleaving = 1;
    e.training = true;
    return e;
}

/* Network of `gbps` GB/s, efficiency 1, no latency, every op scalar 1. */
static inline llm_system_t unit_system(double gbps)
{
    llm_system_t s;
    memset(&s, 0, sizeof s);
    for (int dt = 0; dt < LLM_DT__COUNT; dt++) {
        s.matrix.rate[dt].present = s.vector.rate[dt].present = true;
        s.matrix.rate[dt].tflops = s.vector.rate[dt].tflops = 1;
        flat_curve(&s.matrix.rate[dt].gflops_efficiency);
        flat_curve(&s.vector.rate[dt].gflops_efficiency);
    }
    s.matrix.rate[LLM_DT_FLOAT8].tflops = 2; /* FP8 twice as fast */
    s.mem1.gib = s.mem2.gib = 1e6;
    s.mem1.gbps = s.mem2.gbps = 1e15; /* memory time ~1e-20 s: negligible */
    flat_curve(&s.mem1.mb_efficiency);
    flat_curve(&s.mem2.mb_efficiency);
    s.processing_mode = LLM_PROC_ROOFLINE;
    s.num_networks = 1;
    s.networks[0].bandwidth_gbps = gbps;
    s.networks[0].efficiency = 1;
    s.networks[0].size = 1024;
    for (int op = 0; op < LLM_OP__COUNT; op++)
        s.networks[0].ops[op].scalar = 1;
    s.attention_efficiency = 0.5;
    return s;
}

#endif

/* test_llm_megatron.c — Fathom's step model against Megatron-LM's own counting formulas
 * (megatron_ref.c, an independent oracle of num_floating_point_operations and
 * theoretical_memory_usage.py; see megatron_ref.md), and the documented differences:
 *
 *  FLOPs (summary.model_flops_per_step): equal to 1e-9 for the six presets at sequence 4096 and
 *    8192 (Megatron's causal halving, logits, gated 3 GEMMs, no norms, no embedding lookup).
 *  Weights, gradients, optimizer (first stage, bytes): equal with and without the distributed
 *    optimizer, except that (a) Megatron puts a pp-th of the final norm on the first stage while
 *    Fathom keeps the whole final norm on the last stage (where it runs), and (b) Megatron does
 *    not count biases (Qwen's Q/K/V biases), and (c) when pipeline_par does not divide the
 *    blocks, the first stage holds ceil(L/pp) blocks in Fathom, L/pp in Megatron's formula.
 *  Activations (sequence parallel + selective recompute, the case Megatron's formula covers):
 *    per block Fathom stores Megatron's s·b·h·(18 + 4f/h)/tp bytes exactly, less its two
 *    dropout masks (2·s·b·h/tp: the modern block trains without dropout), plus the fused
 *    attention's fp32 log-sum-exp (4·b·heads·s/tp), which Megatron leaves out. The stage then
 *    differs by (i) that term for each block in flight, (ii) the one block being computed whose
 *    working set exceeds what it stores (Fathom's, Calculon's formula), and (iii) Megatron's
 *    input ids and embedding dropout mask (8·s·b + s·b·h)·pp/tp, which Fathom does not keep. */
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
#include "megatron_config.h"
#include "model_codec.h"
#include "test_util.h"



static const char *const presets6[] = {"llama3-8B",       "llama3-70B", "llama3.1-405B",
                                       "mistral-7B-v0.3", "qwen2.5-7B", "qwen2.5-72B"};

/* Megatron's num_floating_point_operations, batch 1, as its own Python gives them (the oracle
 * was checked against it); Fathom's count must equal them. */
static void model_flops(void **state)
{
    (void)state;
    static const double want[6][2] = {
        {197628625158144.0, 421645529382912.0},      {1774044831547392.0, 3680031058427904.0},
        {10130316022775808.0, 20676247440850944.0},  {188016488349696.0, 402421255766016.0},
        {183861107490816.0, 387925741142016.0},      {1822131285393408.0, 3776203966119936.0}};
    for (int i = 0; i < 6; i++)
        for (int k = 0; k < 2; k++) {
            fathom_model_t m = preset(presets, presets6[i]);
            m.seq_size = k ? 8192 : 4096;
            megref_config_t c = megatron_config(&m);
            assert_close(megref_num_flops(&c, 1), want[i][k], 1e-12);
            assert_close(llm_model_flops(&m, 1, true), want[i][k], 1e-9);
            assert_close(llm_model_flops(&m, 64, true), megref_num_flops(&c, 64), 1e-9);
        }
}

static llm_system_t system_named(const char *name)
{
    llm_system_t s;
    fathom_error_t err;
    json_t *v = json_string(name);
    int rc = codec_llm_system_decode(v, "system", presets, &s, &err);
    json_decref(v);
    if (rc)
        fail_msg("%s: %s", name, err.message);
    return s;
}

static llm_execution_t layout(int64_t tp, int64_t pp, int64_t dp, bool dist_opt)
{
    llm_execution_t e = test_layout(tp, pp, dp);
    e.activation_recompute = LLM_RECOMPUTE_ATTN_ONLY;
    e.tensor_par_comm_type = tp > 1 ? LLM_TP_COMM_RS_AG : LLM_TP_COMM_AR;
    e.seq_par_ag_redo = tp > 1;
    e.optimizer_sharding = dist_opt;
    e.attention_kernel = LLM_ATTN_KERNEL_FUSED;
    e.tensor_par_net = 0;
    e.pipeline_par_net = e.data_par_net = 1;
    return e;
}

/* Weights, gradients and optimizer state of the first stage. */
static void weight_and_optimizer_bytes(void **state)
{
    (void)state;
    static const struct {
        int64_t tp, pp, dp;
    } layouts[] = {{1, 1, 8}, {8, 1, 4}, {4, 8, 2}, {8, 16, 4}, {2, 4, 1}};
    llm_system_t s = system_named("h100_sxm");
    s.mem1.gib = 1e6; /* memory capacity does not matter here */
    for (int i = 0; i < 6; i++)
        for (size_t l = 0; l < sizeof layouts / sizeof layouts[0]; l++)
            for (int dist = 0; dist < 2; dist++) {
                fathom_model_t m = preset(presets, presets6[i]);
                m.seq_size = 4096;
                if ((layouts[l].dp == 1 && dist) || m.attn_heads % layouts[l].tp != 0)
                    continue; /* Qwen2.5 7B's 28 heads do not split 8 ways */
                llm_execution_t e = layout(layouts[l].tp, layouts[l].pp, layouts[l].dp, dist);
                llm_result_t r;
                fathom_error_t err;
                if (llm_estimate(&m, &s, &e, &r, &err))
                    fail_msg("%s: %s: %s", presets6[i], err.field, err.message);
                const llm_stage_memory_t *f = &r.extra.stages[0];
                double fathom = f->weights + f->gradients + f->optimizer;
                megref_config_t c = megatron_config(&m);
                double megatron = megref_weight_and_optimizer_bytes(&c, e.tensor_par,
                                                                    e.pipeline_par, e.data_par,
                                                                    1, dist);
                double per_param = 6 + (dist ? 12.0 / (double)e.data_par : 12.0);
                /* (a) a pp-th of the final norm, which Fathom keeps on the last stage */
                double final_norm = e.pipeline_par > 1
                                        ? (double)m.hidden / (double)e.pipeline_par * per_param
                                        : 0;
                /* (b) Q/K/V biases of the first stage's blocks, per TP rank */
                double biases = m.qkv_bias ? (double)r.blocks_per_proc *
                                                 (double)((m.attn_heads + 2 * model_kv_heads(&m)) *
                                                          m.attn_size / e.tensor_par) *
                                                 per_param
                                           : 0;
                /* (c) pp not dividing the blocks: Fathom's first stage holds ceil(L/pp) (the
                 * first stages take the extra blocks), Megatron's formula L/pp */
                const double h = (double)m.hidden, q = (double)(m.attn_heads * m.attn_size);
                const double layer = (2 * h * q * (1 + (double)model_kv_heads(&m) /
                                                           (double)m.attn_heads) +
                                      2 * h * (double)m.feedforward * (m.gated_mlp ? 1.5 : 1)) /
                                         (double)e.tensor_par +
                                     2 * h;
                double extra_blocks = (double)r.blocks_per_proc -
                                      (double)m.num_blocks / (double)e.pipeline_par;
                megatron += extra_blocks * layer * per_param;
                assert_close(fathom, megatron - final_norm + biases, 1e-12);
            }
}

/* Activations in Megatron's case: sequence parallelism with selective recompute. A plain
 * (non-gated, multi-head, LayerNorm) model, because Megatron's formula assumes that block. */
static void activation_bytes(void **state)
{
    (void)state;
    fathom_model_t m = {.hidden = 4096, .feedforward = 16384, .seq_size = 4096,
                        .attn_heads = 32, .attn_size = 128, .num_blocks = 32,
                        .vocab_size = 0, .kv_heads = 32, .norm = MODEL_NORM_LAYERNORM,
                        .causal = true, .position_embedding = MODEL_POS_ROPE};
    llm_system_t s = system_named("h100_sxm");
    s.mem1.gib = 1e6;
    const int64_t tp = 4, pp = 4, dp = 2;
    llm_execution_t e = layout(tp, pp, dp, true);
    e.fused_activation = false; /* the MLP keeps its GeLU input, as Megatron does */
    const double sbh = (double)m.seq_size * (double)m.hidden;
    const double lse = 4.0 * (double)(m.attn_heads / tp) * (double)m.seq_size;

    /* one block: what it stores for backward */
    llm__compiled_t k;
    memset(&k, 0, sizeof k);
    k.z.batch_seq = m.seq_size;
    k.z.activation_size = m.seq_size * m.hidden;
    k.z.seq_par_activation_size = m.seq_size / tp * m.hidden;
    k.c.sys = &s;
    k.c.bpe = 2;
    k.c.optim_shards = (double)dp;
    k.c.matrix_flops = k.c.vector_flops = 1e15;
    k.c.matrix_curve = &s.matrix.rate[LLM_DT_BFLOAT16].gflops_efficiency;
    k.c.vector_curve = &s.vector.rate[LLM_DT_BFLOAT16].gflops_efficiency;
    k.c.mem1_bw = k.c.mem2_bw = 1e12;
    k.c.attention_flops = 5e14;
    llm__block_t blk;
    llm__build_block(&m, &s, &e, &k.z, &blk);
    llm__block_stats_t b;
    llm__block_stats(&blk, &k.c, &e, &k.z, true, &b);
    /* Megatron's 18 + 4f/h counts two 1-byte dropout masks of s·b·h/tp (sbh each); the modern
     * block trains without dropout and keeps none */
    const double masks = 2 * sbh / (double)tp;
    const double per_block = sbh * (18.0 + 4.0 * (double)m.feedforward / (double)m.hidden) /
                             (double)tp;
    assert_close(b.act_storage_space, per_block - masks + lse, 1e-12);

    /* the first stage */
    llm_result_t r;
    fathom_error_t err;
    if (llm_estimate(&m, &s, &e, &r, &err))
        fail_msg("%s: %s", err.field, err.message);
    megref_config_t c = megatron_config(&m);
    const double nmb = (double)(e.batch_size / dp);
    double megatron = megref_activation_bytes(&c, tp, pp, 1, 1, (int64_t)nmb, true);
    const double in_flight = (double)m.num_blocks; /* L/pp blocks × pp microbatches */
    double expected = megatron + in_flight * (lse - masks) +
                      (b.act_working_space - b.act_storage_space) -
                      (8.0 * (double)m.seq_size + sbh) * (double)pp / (double)tp;
    assert_close(r.extra.stages[0].activations, expected, 1e-12);
}

/* Two layouts worked by hand, Llama 3 8B at sequence 4096 (h 4096, f 14336 SwiGLU, 32 heads
 * and 8 key/value heads of 128, 32 layers, vocabulary 128,256, RMSNorm, untied).
 * Per layer: attention 2·h²·(1 + 8/32) = 41,943,040, MLP 2·h·f·3/2 = 176,160,768 (both split by
 * TP), norms 2·h = 8,192 (replicated); embedding h·V = 525,336,576 (split by TP).
 *
 * 1. TP 2, PP 4, DP 2, the distributed optimizer (6 + 12/2 = 12 bytes a parameter). The first
 *    stage holds 8 layers and the embedding.
 *    Megatron: split (218,103,808·8 + 525,336,576)/2 = 1,135,083,520, replicated 8·8,192 and
 *    its pp-th of the final norm 4,096/4 = 1,024: 1,135,150,080 parameters, 13,621,800,960 B.
 *    Fathom: per layer on a rank Q 4,096·4,096/2 = 8,388,608, K and V 4,096·(4·128) = 2,097,152
 *    each, O 8,388,608, up 4,096·28,672/2 = 58,720,256, down 7,168·4,096 = 29,360,128, norms
 *    8,192: 109,060,096; 8 layers 872,480,768 + embedding 64,128·4,096 = 262,668,288:
 *    1,135,149,056 parameters, 12 bytes each = 13,621,788,672 B — Megatron's less the final
 *    norm's share (1,024·12 = 12,288 B), which Fathom keeps on the last stage where it runs.
 * 2. TP 1, PP 1, DP 8, no distributed optimizer (18 bytes a parameter). Megatron: split
 *    218,103,808·32 + 2·525,336,576 (the output layer too with one stage) = 8,029,995,008,
 *    replicated 32·8,192 + 4,096 = 266,240: 8,030,261,248 parameters, 144,544,702,464 B;
 *    Fathom the same, to the byte.
 * Activations where both count the same things (the plain model of activation_bytes: MHA,
 * GeLU, sequence parallelism with selective recompute, TP 4, s·b·h = 4,096·4,096): Megatron
 * 16,777,216·(18 + 4·4)/4 = 142,606,336 B a layer; Fathom 142,606,336 − its two dropout masks
 * 2·16,777,216/4 = 8,388,608 + the fused kernel's log-sum-exp 4·(32/4)·4,096 = 131,072:
 * 134,348,800 B. */
static void two_layouts_by_hand(void **state)
{
    (void)state;
    fathom_model_t m = preset(presets, "llama3-8B");
    m.seq_size = 4096;
    megref_config_t c = megatron_config(&m);
    llm_system_t s = system_named("h100_sxm");
    s.mem1.gib = 1e6;
    static const struct {
        int64_t tp, pp, dp;
        bool dist;
        double megatron, fathom;
    } cases[] = {{2, 4, 2, true, 13621800960.0, 13621788672.0},
                 {1, 1, 8, false, 144544702464.0, 144544702464.0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        llm_execution_t e = layout(cases[i].tp, cases[i].pp, cases[i].dp, cases[i].dist);
        llm_result_t r;
        fathom_error_t err;
        if (llm_estimate(&m, &s, &e, &r, &err))
            fail_msg("%s: %s", err.field, err.message);
        const llm_stage_memory_t *f = &r.extra.stages[0];
        assert_close(megref_weight_and_optimizer_bytes(&c, e.tensor_par, e.pipeline_par,
                                                       e.data_par, 1, cases[i].dist),
                     cases[i].megatron, 1e-15);
        assert_close(f->weights + f->gradients + f->optimizer, cases[i].fathom, 1e-15);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(model_flops),
        cmocka_unit_test(weight_and_optimizer_bytes),
        cmocka_unit_test(activation_bytes),
        cmocka_unit_test(two_layouts_by_hand),
    };
    return cmocka_run_group_tests(tests, load_presets, free_presets);
}

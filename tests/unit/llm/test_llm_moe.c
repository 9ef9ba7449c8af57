/* test_llm_moe.c — mixture of experts, multi-latent attention and MTP (core/llm/llm_moe.c), each
 * term on a case worked by hand in the comments, and against references that are not Fathom's
 * code: the published parameter counts of Mixtral and DeepSeek-V3, and the megatron_ref oracle
 * of Megatron-LM's num_floating_point_operations and theoretical_memory_usage. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "llm_codec.h"
#include "llm_internal.h"
#include "llm_test_util.h"
#include "megatron_config.h"
#include "model_codec.h"
#include "test_util.h"

/* hidden 64, dense ffn 128, 8 heads of 8, 2 key/value heads, 2 blocks, sequence 16, vocab 1000;
 * 8 experts of width 128, 2 per token. */
static fathom_model_t tiny_moe(void)
{
    fathom_model_t m = {.hidden = 64, .feedforward = 128, .seq_size = 16, .attn_heads = 8,
                        .attn_size = 8, .num_blocks = 2, .vocab_size = 1000,
                        .tied_embeddings = false, .position_embedding = MODEL_POS_ROPE,
                        .kv_heads = 2, .gated_mlp = true, .norm = MODEL_NORM_RMSNORM,
                        .causal = true};
    m.moe = (model_moe_t){.num_experts = 8, .top_k = 2, .expert_feedforward = 128, .every = 1};
    return m;
}

/* hidden 64, dense ffn 128, 4 heads, 1 block, sequence 16, vocab 100; MLA with query rank 32,
 * key/value rank 16, heads of 8 (nope) + 4 (rope) for Q·Kᵀ and 8 for V. */
static fathom_model_t tiny_mla(void)
{
    fathom_model_t m = {.hidden = 64, .feedforward = 128, .seq_size = 16, .attn_heads = 4,
                        .attn_size = 16, .num_blocks = 1, .vocab_size = 100,
                        .position_embedding = MODEL_POS_ROPE, .gated_mlp = true,
                        .norm = MODEL_NORM_RMSNORM, .causal = true};
    m.mla = (model_mla_t){.present = true, .q_lora_rank = 32, .kv_lora_rank = 16,
                          .qk_nope_head_dim = 8, .qk_rope_head_dim = 4, .v_head_dim = 8};
    return m;
}

static void curve(llm_curve_t *c, double thr, double eff_above, double eff_below)
{
    c->num_points = 2;
    c->points[0].threshold = thr;
    c->points[0].efficiency = eff_above;
    c->points[1].threshold = 0;
    c->points[1].efficiency = eff_below;
}

/* llm_test_util.h's system with FP8 at the same 1 TFLOP/s as everything else. */
static llm_system_t moe_system(void)
{
    llm_system_t s = unit_system(1e15);
    s.matrix.rate[LLM_DT_FLOAT8].tflops = 1;
    return s;
}

static llm_execution_t layout(int64_t tp, int64_t pp, int64_t dp, int64_t ep)
{
    llm_execution_t e = test_layout(tp, pp, dp);
    e.batch_size = dp * 2;
    e.fused_activation = true;
    e.optimizer_sharding = true;
    e.expert_par = ep;
    e.expert_tensor_par = 1;
    e.moe_load_imbalance = 1;
    return e;
}

/* ---- parameter counts: the published totals ---- */

/* Mixtral 8x7B 46,702,792,704 / 12,879,925,248 active; 8x22B 140,630,071,296 / 39,161,468,928;
 * DeepSeek-V3 without MTP, its e_score_correction_bias counted as the checkpoint holds it:
 * 671,026,419,200 / 37,552,297,472 (active: embeddings, output, norms, attention, router, the 8
 * routed and the shared expert). With its one MTP depth: + the block (MLA 187,107,328, norms
 * 14,336, router 1,835,264, 257 experts × 44,040,192) + eh 2·7168² + 3 norms of 7168 =
 * 11,507,286,272 + 102,760,448 + 21,504 = 11,610,068,224 more (DeepSeek's model card: 14B of MTP
 * with the embedding and head it shares, 0.9B + 2·0.927B). */
static void parameter_counts(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        double total, active;
    } want[] = {{"mixtral-8x7B", 46702792704.0, 12879925248.0},
                {"mixtral-8x22B", 140630071296.0, 39161468928.0},
                {"deepseek-v3", 671026419200.0, 37552297472.0}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        fathom_model_t m = preset(presets, want[i].name);
        m.mtp_blocks = 0;
        llm_params_t p;
        llm_parameters(&m, &p);
        assert_close(p.total, want[i].total, 0);
        assert_close(p.active, want[i].active, 0);
    }
    fathom_model_t m = preset(presets, "deepseek-v3");
    assert_int_equal(m.mtp_blocks, 1);
    llm_params_t p;
    llm_parameters(&m, &p);
    assert_close(p.total, 671026419200.0 + 11610068224.0, 0);
}

/* ---- model FLOPs: Megatron-LM's num_floating_point_operations (the oracle) ---- */


/* DeepSeek-V3 (with its MTP depth, and without), Qwen3-235B-A22B, Qwen3-30B-A3B, Mixtral 8x7B
 * and 8x22B at sequences 4096 and 8192: equal to 1e-9, no documented difference. */
static void model_flops_megatron(void **state)
{
    (void)state;
    static const char *const names[] = {"deepseek-v3",   "qwen3-235B-A22B", "qwen3-30B-A3B",
                                        "mixtral-8x7B",  "mixtral-8x22B"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        for (int mtp = 0; mtp < 2; mtp++)
            for (int k = 0; k < 2; k++) {
                fathom_model_t m = preset(presets, names[i]);
                if (!mtp)
                    m.mtp_blocks = 0;
                m.seq_size = k ? 8192 : 4096;
                megref_config_t c = megatron_config(&m);
                assert_close(llm_model_flops(&m, 64, true), megref_num_flops(&c, 64), 1e-9);
                assert_close(llm_model_flops(&m, 1, false), megref_num_flops(&c, 1) / 3, 1e-9);
            }
}

/* MLA's FLOPs on a tiny model, by hand: h 64, 4 heads, q_lora 32, kv_lora 16, nope 8, rope 4,
 * v 8, sequence 16, causal, one dense gated block of 128, vocab 100. Per token, forward:
 *   q    2·32·(64 + 4·12 + 1)         = 7232
 *   kv   2·(16·(64 + 4·16 + 1) + 64·4) = 4640
 *   out  2·4·8·64                       = 4096
 *   core 2·16·4·(12 + 8)·½              = 1280
 *   MLP  2·64·128·3                     = 49152
 *   logits 2·64·100                     = 12800     → 79200
 * Training, batch 2: 3·79200·2·16 = 7,603,200; the oracle agrees. */
static void mla_flops(void **state)
{
    (void)state;
    fathom_model_t m = tiny_mla();
    assert_close(llm_model_flops(&m, 2, true), 7603200.0, 0);
    megref_config_t c = megatron_config(&m);
    assert_close(megref_num_flops(&c, 2), 7603200.0, 1e-12);
    /* parameters: q_a 64·32 + 32, q_b 32·4·12, kv_a 64·20 + 16, kv_b 16·4·16, out 4·8·64
     * = 2080 + 1536 + 1296 + 1024 + 2048 = 7984; + 2 norms 128 + MLP 3·64·128 = 24576
     * + embedding and output 2·100·64 = 12800 + final norm 64 → 45552 */
    llm_params_t p;
    llm_parameters(&m, &p);
    assert_close(p.total, 45552.0, 0);
    /* and the step model runs: its layer table holds the same block weights on one rank */
    llm_system_t s = moe_system();
    llm_execution_t e = layout(1, 1, 1, 1);
    e.optimizer_sharding = false;
    llm_result_t r;
    fathom_error_t err;
    if (llm_estimate(&m, &s, &e, &r, &err))
        fail_msg("%s: %s", err.field, err.message);
    assert_close(r.extra.stages[0].weights / 2, 45552.0, 0);
}

/* ---- memory per processor: hand-worked ---- */

/* DeepSeek-V3 (MTP on the last stage) on 1024 GPUs: TP 1, PP 16, EP 64, DP 64, distributed
 * optimizer. Stage 0 holds ⌈61/16⌉ = 4 blocks (13·4 + 3·3 = 61): blocks 0–2 dense, block 3 MoE.
 *   MLA per block: q_a 7168·1536 + 1536, kv_a 7168·576 + 512 = 15,140,864 replicated;
 *     q_b 1536·128·192 + kv_b 512·128·256 + out 128·128·7168 = 171,966,464
 *   dense block: 187,107,328 + norms 14,336 + MLP 3·7168·18432 = 583,483,392
 *   MoE block, non-expert: 187,121,664 + router 7168·256 + 256 + shared 3·7168·2048
 *     = 232,997,120; experts: 256/64 = 4 × 44,040,192 = 176,160,768
 *   embedding 129280·7168 = 926,679,040
 *   non-expert P = 3·583,483,392 + 232,997,120 + 926,679,040 = 2,910,126,336
 * Bytes: non-expert weights 2P = 5,820,252,672, gradients 4P = 11,640,505,344, optimizer
 * 12P/64 = 545,648,688; experts 352,321,536, 704,643,072 and 12·176,160,768/1 = 2,113,929,216
 * (expert data parallel = TP·DP/EP = 1: nothing to shard over). */
static void memory_deepseek_v3(void **state)
{
    (void)state;
    fathom_model_t m = preset(presets, "deepseek-v3");
    llm_execution_t e = layout(1, 16, 64, 64);
    llm_state_memory_t sm;
    llm_moe_state_memory(&m, &e, 0, &sm);
    assert_close(sm.params, 2910126336.0, 0);
    assert_close(sm.expert_params, 176160768.0, 0);
    assert_close(sm.weights, 5820252672.0, 0);
    assert_close(sm.gradients, 11640505344.0, 0);
    assert_close(sm.optimizer, 545648688.0, 0);
    assert_close(sm.expert_weights, 352321536.0, 0);
    assert_close(sm.expert_gradients, 704643072.0, 0);
    assert_close(sm.expert_optimizer, 2113929216.0, 0);
    /* bfloat16 gradients (low_precision_gradients): 2P = 5,820,252,672 and 352,321,536 for
     * the experts; weights and optimizer unchanged */
    e.low_precision_gradients = true;
    llm_moe_state_memory(&m, &e, 0, &sm);
    assert_close(sm.gradients, 5820252672.0, 0);
    assert_close(sm.expert_gradients, 352321536.0, 0);
    assert_close(sm.weights + sm.optimizer, 5820252672.0 + 545648688.0, 0);
    e.low_precision_gradients = false;

    /* The estimate reports the same split for its first stage (H100 preset system). */
    llm_system_t s;
    fathom_error_t err;
    json_t *v = json_string("h100_sxm");
    assert_int_equal(codec_llm_system_decode(v, "system", presets, &s, &err), 0);
    json_decref(v);
    e.batch_size = 64 * 16;
    e.activation_recompute = LLM_RECOMPUTE_FULL;
    e.expert_par_net = e.pipeline_par_net = e.data_par_net = 1;
    llm_result_t r;
    if (llm_estimate(&m, &s, &e, &r, &err))
        fail_msg("%s: %s", err.field, err.message);
    assert_close(r.extra.stages[0].expert_optimizer, 2113929216.0, 0);
    assert_close(r.extra.stages[0].optimizer, 545648688.0 + 2113929216.0, 0);
    assert_close(r.extra.stages[0].weights, 5820252672.0 + 352321536.0, 0);
    assert_int_equal(r.extra.expert_parallel_tier, 1);
}

/* Mixtral 8x7B on 64 GPUs: TP 2, PP 4, EP 8, DP 8 (expert DP = 2·8/8 = 2). Stage 0: 8 MoE blocks.
 *   per block non-expert: attention (2·4096·4096 + 2·4096·1024)/2 = 20,971,520 + norms 8192
 *     + router 4096·8 = 32,768 → 21,012,480
 *   experts: 8/8 = 1 × 3·4096·14336 = 176,160,768 per block, ×8 = 1,409,286,144
 *   embedding 16000·4096 = 65,536,000 → non-expert P = 8·21,012,480 + 65,536,000 = 233,635,840
 * Bytes: non-expert 467,271,680 / 934,543,360 / 12P/8 = 350,453,760; experts 2,818,572,288 /
 * 5,637,144,576 / 12·1,409,286,144/2 = 8,455,716,864. Megatron's theoretical_memory_usage
 * differs by its 1/pp share of the final norm on stage 0: 1024 parameters × (2+4+12/8). */
static void memory_mixtral(void **state)
{
    (void)state;
    fathom_model_t m = preset(presets, "mixtral-8x7B");
    llm_execution_t e = layout(2, 4, 8, 8);
    llm_state_memory_t sm;
    llm_moe_state_memory(&m, &e, 0, &sm);
    assert_close(sm.params, 233635840.0, 0);
    assert_close(sm.expert_params, 1409286144.0, 0);
    assert_close(sm.weights, 467271680.0, 0);
    assert_close(sm.gradients, 934543360.0, 0);
    assert_close(sm.optimizer, 350453760.0, 0);
    assert_close(sm.expert_weights, 2818572288.0, 0);
    assert_close(sm.expert_gradients, 5637144576.0, 0);
    assert_close(sm.expert_optimizer, 8455716864.0, 0);
    megref_config_t c = megatron_config(&m);
    double meg = megref_weight_and_optimizer_bytes_ex(&c, 2, 4, 8, 1, 8, 1, true);
    double ours = sm.weights + sm.gradients + sm.optimizer + sm.expert_weights +
                  sm.expert_gradients + sm.expert_optimizer;
    assert_close(meg - ours, 1024.0 * 7.5, 1e-9);
}

/* Context parallelism splits the sequence before the MoE block and folds into the experts'
 * processors (Megatron-Core: ETP × EP × EDP = TP × CP × DP). Mixtral 8x7B (sequence 4,096) on
 * TP 2, CP 2, DP 8, EP 8: the router sees 1·4,096/(2·2) = 1,024 tokens (2,048 without CP), the
 * busiest expert rank 1,024·2 = 2,048 rows, and the experts' optimizer is sharded over
 * EDP = 2·2·8/8 = 4 (2 without CP): 8,455,716,864·2/4 = 4,227,858,432 bytes (memory_mixtral's
 * EDP 2 at TP 2, DP 8). */
static void context_parallel_fold(void **state)
{
    (void)state;
    fathom_model_t m = preset(presets, "mixtral-8x7B");
    llm_execution_t e = layout(2, 4, 8, 8);
    e.context_par = 2;
    e.num_procs *= 2;
    assert_close(llm__moe_local_tokens(&m, &e), 1024, 0);
    assert_close(llm__moe_expert_rows(&m, &e), 2048, 0);
    assert_close(llm__expert_data_par(&e), 4, 0);
    llm_state_memory_t sm;
    llm_moe_state_memory(&m, &e, 0, &sm);
    assert_close(sm.expert_optimizer, 4227858432.0, 0);
}

/* ---- all-to-all ---- */

/* Two tiers: domains of 8 at 400 GB/s (1 µs) joined at 50 GB/s (10 µs), efficiency 1. */
static llm_system_t nvlink_and_ib(void)
{
    llm_system_t s = moe_system();
    s.num_networks = 2;
    s.networks[0].bandwidth_gbps = 400;
    s.networks[0].latency_s = 1e-6;
    s.networks[0].size = 8;
    s.networks[1] = s.networks[0];
    s.networks[1].bandwidth_gbps = 50;
    s.networks[1].latency_s = 1e-5;
    s.networks[1].size = 1024;
    return s;
}

/* One tier: 1 GB per rank among 8 peers on 100 GB/s, 10 µs latency: each rank sends 7/8 of it,
 * 1e-5 + 0.875e9/1e11 = 8.76e-3 s. Across tiers: 64 peers spanning 64 processors, tier 0 of 8
 * at 400 GB/s (1 µs), tier 1 at 50 GB/s (10 µs): 8 peers share a tier-0 domain, so 7/64 of the
 * bytes go over tier 0 (1e-6 + 0.109375e9/4e11 = 2.74375e-4) while 56/64 go over tier 1
 * (1e-5 + 0.875e9/5e10 = 1.751e-2): the slower sets 1.751e-2 s. */
static void a2a_cost(void **state)
{
    (void)state;
    llm_system_t s = moe_system();
    s.num_networks = 2;
    s.networks[0].bandwidth_gbps = 100;
    s.networks[0].latency_s = 1e-5;
    s.networks[0].size = 8;
    assert_close(llm_a2a_time(&s, 0, 1e9, 8, 8), 8.76e-3, 1e-12);
    s = nvlink_and_ib();
    assert_close(llm_a2a_time(&s, 1, 1e9, 64, 64), 1.751e-2, 1e-12);
    /* a group inside tier 0 on tier 1 pays tier 1 whole: 1e-5 + 0.875e9/5e10 */
    assert_close(llm_a2a_time(&s, 1, 1e9, 8, 8), 1.751e-2, 1e-12);
    assert_close(llm_a2a_time(&s, 1, 1e9, 1, 1), 0, 0);
}

/* The flex dispatcher (DeepEP, HybridEP), worked by hand. Tier 0: 8 processors at 400 GB/s, 1 µs;
 * tier 1: 50 GB/s, 10 µs; efficiency 1. 32 peers over 32 processors: 4 NVLink domains of 8,
 * 64 experts (16 per domain), 2 per token, token_bytes 1e9.
 *   p0 = C(48,2)/C(64,2) = 48·47/(64·63) = 0.55952380952…  (a remote domain holds neither)
 *   t1 = 1e-5 + 1e9·3·(1 − p0)/5e10 = 1e-5 + 0.026428571428… = 0.026438571428…
 *   t0 = 1e-6 + 1e9·2·(7/8)/4e11 = 4.376e-3
 * so 0.0264386 s, where the plain all-to-all of the 2e9 bytes takes 1e-5 + 2e9·(24/32)/5e10 =
 * 0.03001 s. With one expert per token nothing repeats: t1 = 1e-5 + 1e9·3·(1 − 48/64)/5e10 =
 * 0.01501 s, the plain all-to-all's. Inside one domain (8 peers) flex is the plain one. */
static const model_moe_t *routing(int64_t top_k, int64_t groups, int64_t group_top_k)
{
    static model_moe_t x;
    x = (model_moe_t){.num_experts = 64, .top_k = top_k, .router_groups = groups,
                      .router_group_top_k = group_top_k};
    return &x;
}

static void a2a_flex_cost(void **state)
{
    (void)state;
    llm_system_t s = nvlink_and_ib();
    const double p0 = 48.0 * 47.0 / (64.0 * 63.0);
    assert_close(llm_a2a_flex_time(&s, 1, 1e9, routing(2, 0, 0), 32, 32), 1e-5 + 1e9 * 3 * (1 - p0) / 5e10,
                 1e-12);
    assert_close(llm_a2a_flex_time(&s, 1, 1e9, routing(2, 0, 0), 32, 32), 0.026438571428571, 1e-12);
    assert_close(llm_a2a_time(&s, 1, 2e9, 32, 32), 0.03001, 1e-12);
    assert_close(llm_a2a_flex_time(&s, 1, 1e9, routing(1, 0, 0), 32, 32), 0.01501, 1e-12);
    assert_close(llm_a2a_flex_time(&s, 1, 1e9, routing(1, 0, 0), 32, 32), llm_a2a_time(&s, 1, 1e9, 32, 32),
                 1e-12);
    assert_close(llm_a2a_flex_time(&s, 0, 1e9, routing(2, 0, 0), 8, 8), llm_a2a_time(&s, 0, 2e9, 8, 8), 0);
    assert_close(llm_a2a_flex_time(&s, 1, 1e9, routing(2, 0, 0), 1, 1), 0, 0);
    /* fast tier 1 (400 GB/s): the NVLink forward sets the time, 1e-6 + 1e9·2·(7/8)/4e11 */
    s.networks[1].bandwidth_gbps = 400;
    assert_close(llm_a2a_flex_time(&s, 1, 1e9, routing(2, 0, 0), 32, 32), 4.376e-3, 1e-12);
}

/* Group-limited routing under the flex dispatcher, by hand, on a2a_flex_cost's system and group
 * (4 domains of 16 experts, 2 experts per token, token_bytes 1e9):
 *   8 groups of 8, 2 picked: a domain overlaps n_d = 2 groups, c = 8 experts of each, among the
 *   pool of 16 experts of the picked groups. H(0) = C(6,2)/C(8,2) = 15/28, H(1) = 2·6/28 = 12/28,
 *   H(2) = 1/28; missing the domain given j: 1, C(8,2)/C(16,2) = 7/30, 0. p0 = 15/28 + 12/28 ·
 *   7/30 = 89/140, t1 = 1e-5 + 1e9·3·(51/140)/5e10 = 0.021867142857…
 *   2 groups of 32, 1 picked: the domain lies in one group, picked half the time, and then holds
 *   16 of its 32: p0 = 1/2 + 1/2 · C(16,2)/C(32,2) = 1/2 + 1/2 · 15/62 = 77/124,
 *   t1 = 1e-5 + 0.06·47/124 = 0.022751935483…
 * One group of all 64 experts, or every group picked, is routing without groups
 * (0.026438571428…, a2a_flex_cost). */
static void a2a_flex_router_groups(void **state)
{
    (void)state;
    llm_system_t s = nvlink_and_ib();
    assert_close(llm_a2a_flex_time(&s, 1, 1e9, routing(2, 8, 2), 32, 32),
                 1e-5 + 1e9 * 3 * (51.0 / 140.0) / 5e10, 1e-12);
    assert_close(llm_a2a_flex_time(&s, 1, 1e9, routing(2, 8, 2), 32, 32), 0.021867142857143,
                 1e-12);
    assert_close(llm_a2a_flex_time(&s, 1, 1e9, routing(2, 2, 1), 32, 32), 0.022751935483871,
                 1e-12);
    assert_close(llm_a2a_flex_time(&s, 1, 1e9, routing(2, 1, 1), 32, 32), 0.026438571428571,
                 1e-12);
    assert_close(llm_a2a_flex_time(&s, 1, 1e9, routing(2, 8, 8), 32, 32), 0.026438571428571,
                 1e-12);
}

/* DeepSeek-V3's routing (256 experts, top 8, 4 of 8 groups of 32) on a2a_flex_cost's system
 * with 4 and 8 domains of 8 ranks (EP 32 and 64): the copies of the rank's tokens that cross
 * InfiniBand, (D − 1)·(1 − p0), recomputed here from plain products (not GSL):
 *   C(n − m, 8)/C(n, 8) = Π_{i<8} (n − m − i)/(n − i)
 *   4 domains, 64 experts each (2 groups):   p0 = 15/70 + 40/70·C(96,8)/C(128,8)
 *                                                  + 15/70·C(64,8)/C(128,8); ungrouped C(192,8)/C(256,8)
 *   8 domains, 32 experts each (1 group):    p0 = 35/70 + 35/70·C(96,8)/C(128,8); ungrouped
 *                                                  C(224,8)/C(256,8)
 * which give 2.196 copies instead of 2.711 on 4 nodes and 3.175 instead of 4.633 on 8 (the
 * figures doc/step_model.md and the README quote as 2.20 and 3.18, 2.71 and 4.63; a remote node
 * missed by 26.8 % of tokens instead of 9.6 %, and by 54.6 % instead of 33.8 %). */
static double miss_ratio(double n, double m)
{
    double r = 1;
    for (int i = 0; i < 8; i++)
        r *= (n - m - i) / (n - i);
    return r;
}

static void a2a_flex_deepseek_v3_groups(void **state)
{
    (void)state;
    llm_system_t s = nvlink_and_ib();
    model_moe_t ds = {.num_experts = 256, .top_k = 8, .router_groups = 8, .router_group_top_k = 4};
    model_moe_t flat = {.num_experts = 256, .top_k = 8};
    /* copies over tier 1 per token from the time: (t1 − latency)·bandwidth/token_bytes */
#define COPIES(moe, peers) ((llm_a2a_flex_time(&s, 1, 1e9, &(moe), peers, peers) - 1e-5) * 5e10 / 1e9)
    const double p4 = 15.0 / 70 + 40.0 / 70 * miss_ratio(128, 32) + 15.0 / 70 * miss_ratio(128, 64);
    const double p8 = 35.0 / 70 + 35.0 / 70 * miss_ratio(128, 32);
    assert_close(p4, 0.2679475531, 1e-9);
    assert_close(miss_ratio(256, 64), 0.0964464236, 1e-9);
    assert_close(p8, 0.5463736344, 1e-9);
    assert_close(miss_ratio(256, 32), 0.3381685000, 1e-9);
    assert_close(COPIES(ds, 32), 3 * (1 - p4), 1e-9);
    assert_close(COPIES(flat, 32), 3 * (1 - miss_ratio(256, 64)), 1e-9);
    assert_close(COPIES(ds, 64), 7 * (1 - p8), 1e-9);
    assert_close(COPIES(flat, 64), 7 * (1 - miss_ratio(256, 32)), 1e-9);
    assert_close(COPIES(ds, 32), 2.196157, 1e-6);
    assert_close(COPIES(flat, 32), 2.710661, 1e-6);
    assert_close(COPIES(ds, 64), 3.175385, 1e-6);
    assert_close(COPIES(flat, 64), 4.632821, 1e-6);
#undef COPIES
}

/* In the step, by hand: the tiny MoE (8 experts, 2 per token) with EP 8 = DP 8 over tier 1, tier 0
 * domains of 2 (so 4 domains, 2 experts each), tier 0 100 GB/s, tier 1 10 GB/s, no latency.
 * Each rank holds 16 tokens of 64 bf16: token_bytes 2048. Flex: p0 = C(6,2)/C(8,2) = 15/28,
 * t1 = 2048·3·(13/28)/1e10 = 2.852571…e-7 s, t0 = 2048·2·(1/2)/1e11 = 2.048e-8 s; the plain
 * all-to-all moves 4096·(6/8) over tier 1: 3.072e-7 s. Four per MoE block and microbatch, 2
 * blocks, 2 microbatches: 16 of them, 4.5641142857e-6 s against 4.9152e-6 s. */
static void a2a_flex_in_step(void **state)
{
    (void)state;
    fathom_model_t m = tiny_moe();
    llm_system_t s = moe_system();
    s.num_networks = 2;
    s.networks[0].bandwidth_gbps = 100;
    s.networks[0].latency_s = 0;
    s.networks[0].size = 2;
    s.networks[0].must_be_filled = false;
    s.networks[1] = s.networks[0];
    s.networks[1].bandwidth_gbps = 10;
    s.networks[1].size = 64;
    llm_execution_t e = layout(1, 1, 8, 8);
    e.data_par_net = e.expert_par_net = 1;
    llm_result_t r;
    fathom_error_t err;
    assert_int_equal(llm_estimate(&m, &s, &e, &r, &err), 0);
    assert_close(r.extra.expert_parallel_comm, 16 * 3.072e-7, 1e-15);
    /* Under the NCCL model the alltoall dispatcher is the collective model's all-to-all: 2 of
     * the 8 ranks share a tier-0 domain, 4096·1/8 B at 100 GB/s (5.12e-8 s) beside 4096·6/8 B at
     * 10 GB/s (3.072e-7 s), plus 7 hops of NCCL's LL latency on the network, 2.7 µs each:
     * 1.89e-5 + 3.072e-7 = 1.92072e-5 s an all-to-all, 16 of them. */
    s.collectives = LLM_COLLECTIVES_NCCL;
    assert_int_equal(llm_estimate(&m, &s, &e, &r, &err), 0);
    assert_close(r.extra.expert_parallel_comm, 16 * 1.92072e-5, 1e-15);
    s.collectives = LLM_COLLECTIVES_CALCULON;
    e.moe_dispatcher = LLM_MOE_DISPATCH_FLEX;
    assert_int_equal(llm_estimate(&m, &s, &e, &r, &err), 0);
    assert_close(r.extra.expert_parallel_comm, 16 * 2048.0 * 3 * 13 / 28 / 1e10, 1e-12);
    assert_close(r.extra.expert_parallel_comm, 4.5641142857e-6, 1e-10);
}

/* The step adds dispatch and combine, forward and backward: tiny MoE, EP 2, DP 2, batch 4
 * (2 microbatches), 2 MoE blocks, network 100 GB/s without latency. Each rank routes 16 tokens
 * to 2 experts: 16·2·64·2 bytes = 4096, of which half leaves: 2.048e-8 s per all-to-all;
 * 4 per block and microbatch: 2·2·4·2.048e-8 = 3.2768e-7 s exposed. Overlapped, Megatron's
 * combined 1F1B pairs the second microbatch's forward with the first one's backward, where the
 * all-to-alls hide behind the block's compute, far longer here; the first forward and the last
 * backward run alone (a2a_unpaired_chunks): half the passes, 1.6384e-7 s. Balanced routing × 1.5 moves
 * 1.5× the bytes. Full recompute redoes the 2 forward ones of every block: 6 per block and
 * microbatch, 1.5×; recomputing one block of the two (recompute_blocks 1): 5, 1.25×; and
 * selective recompute of the moe module (every block's MLP): 6 again, 1.5×. */
static void a2a_in_step(void **state)
{
    (void)state;
    fathom_model_t m = tiny_moe();
    llm_system_t s = moe_system();
    s.networks[0].bandwidth_gbps = 100;
    llm_execution_t e = layout(1, 1, 2, 2);
    e.batch_size = 4;
    llm_result_t r;
    fathom_error_t err;
    assert_int_equal(llm_estimate(&m, &s, &e, &r, &err), 0);
    assert_close(r.extra.expert_parallel_comm, 3.2768e-7, 1e-12);
    assert_int_equal(r.extra.expert_parallel_tier, 0);
    assert_close(r.stats.sample_rate, 4 / r.stats.total_time, 1e-15); /* the rate follows */
    double base = r.stats.total_time;
    e.moe_a2a_overlap = true;
    assert_int_equal(llm_estimate(&m, &s, &e, &r, &err), 0);
    assert_close(r.extra.expert_parallel_comm, 1.6384e-7, 1e-15);
    assert_close(base - r.stats.total_time, 1.6384e-7, 1e-9);
    e.moe_a2a_overlap = false;
    e.moe_load_imbalance = 1.5;
    assert_int_equal(llm_estimate(&m, &s, &e, &r, &err), 0);
    assert_close(r.extra.expert_parallel_comm, 1.5 * 3.2768e-7, 1e-12);
    e.moe_load_imbalance = 1;
    e.activation_recompute = LLM_RECOMPUTE_FULL;
    assert_int_equal(llm_estimate(&m, &s, &e, &r, &err), 0);
    assert_close(r.extra.expert_parallel_comm, 1.5 * 3.2768e-7, 1e-12);
    e.recompute_blocks = 1;
    assert_int_equal(llm_estimate(&m, &s, &e, &r, &err), 0);
    assert_close(r.extra.expert_parallel_comm, 1.25 * 3.2768e-7, 1e-12);
    /* selective recompute of the moe module reruns both forward ones in every block: 1.5× */
    e.recompute_blocks = 0;
    e.activation_recompute = LLM_RECOMPUTE_NONE;
    e.recompute_modules = LLM_RECOMPUTE_MOE;
    assert_int_equal(llm_estimate(&m, &s, &e, &r, &err), 0);
    assert_close(r.extra.expert_parallel_comm, 1.5 * 3.2768e-7, 1e-12);
}

/* Tiny MoE with its first block dense (2 blocks, one stage): the forward and backward lines are
 * the mean of the all-MoE model's and the dense model's — one block of each — since the
 * outer layers are the same in all three and the network is too fast to count. */
static void dense_blocks_in_step(void **state)
{
    (void)state;
    fathom_model_t all = tiny_moe(), mixed = tiny_moe(), dense = tiny_moe();
    mixed.moe.first_dense_blocks = 1;
    dense.moe.num_experts = 0;
    llm_system_t s = moe_system();
    llm_execution_t e = layout(1, 1, 1, 1);
    e.optimizer_sharding = false;
    llm_result_t a, b, c;
    fathom_error_t err;
    assert_int_equal(llm_estimate(&all, &s, &e, &a, &err), 0);
    assert_int_equal(llm_estimate(&mixed, &s, &e, &b, &err), 0);
    assert_int_equal(llm_estimate(&dense, &s, &e, &c, &err), 0);
    assert_true(a.stats.fw_time != c.stats.fw_time);
    assert_close(b.stats.fw_time, (a.stats.fw_time + c.stats.fw_time) / 2, 1e-12);
    assert_close(b.stats.bw_time, (a.stats.bw_time + c.stats.bw_time) / 2, 1e-12);
    assert_close(b.stats.sample_rate, (double)e.batch_size / b.stats.total_time, 1e-15);
    /* selective recompute reruns parts of MoE MLPs only: the mixed model's one MoE block
     * reruns half of what the all-MoE model's two do */
    for (unsigned mods = LLM_RECOMPUTE_MOE_ACT; mods <= LLM_RECOMPUTE_MOE; mods <<= 2) {
        e.recompute_modules = mods;
        assert_int_equal(llm_estimate(&all, &s, &e, &a, &err), 0);
        assert_int_equal(llm_estimate(&mixed, &s, &e, &b, &err), 0);
        assert_true(a.stats.recompute_time > 0);
        assert_close(b.stats.recompute_time, a.stats.recompute_time / 2, 1e-15);
    }
    /* mlp reruns the dense block's MLP forward (mlp_recompute: 7.9872e-7 s), 2 microbatches */
    e.recompute_modules = LLM_RECOMPUTE_MLP;
    assert_int_equal(llm_estimate(&mixed, &s, &e, &b, &err), 0);
    assert_close(b.stats.recompute_time, 2 * 7.9872e-7, 1e-12);
}

/* The step's hardware FLOPs (tiny MoE, one rank, batch 2 of 16 tokens: 2 microbatches, 2
 * blocks, no recompute). Each block's experts run R = T·k = 16·2 = 32 rows: up 2·32·64·256 =
 * 1,048,576, down 2·32·128·64 = 524,288, forward 1,572,864 and backward twice that, 4,718,592
 * a block and microbatch. At imbalance 1.5 the busiest rank runs 48 rows, but summed over the
 * ranks the experts run the mean, so the step's FLOPs do not move (they rose by
 * 2·2·0.5·4,718,592 = 9,437,184); with full recompute likewise. The model with its first block
 * dense counts a dense MLP in it, the mean of the all-MoE and the dense models' (it counted two
 * MoE blocks); its MTP depth (a block of the last block's kind, forward and backward) adds the
 * block's matrix FLOPs, which were missing. A context-parallel pair runs half the sequence
 * each: CP 2 on 2 ranks counts what one rank does alone (it counted half). */
static void hardware_flops_in_step(void **state)
{
    (void)state;
    fathom_model_t m = tiny_moe();
    llm_system_t s = moe_system();
    llm_execution_t e = layout(1, 1, 1, 1);
    e.optimizer_sharding = false;
    e.activation_recompute = LLM_RECOMPUTE_NONE;
    llm_result_t r1, r15;
    fathom_error_t err;
    for (int full = 0; full < 2; full++) {
        e.activation_recompute = full ? LLM_RECOMPUTE_FULL : LLM_RECOMPUTE_NONE;
        e.moe_load_imbalance = 1;
        assert_int_equal(llm_estimate(&m, &s, &e, &r1, &err), 0);
        e.moe_load_imbalance = 1.5;
        assert_int_equal(llm_estimate(&m, &s, &e, &r15, &err), 0);
        assert_true(r15.stats.fw_time > r1.stats.fw_time); /* the busiest rank still paces */
        assert_close(r15.extra.hardware_flops, r1.extra.hardware_flops, 1e-12);
    }
    e.moe_load_imbalance = 1;
    e.activation_recompute = LLM_RECOMPUTE_NONE;
    fathom_model_t mixed = tiny_moe(), dense = tiny_moe();
    mixed.moe.first_dense_blocks = 1;
    dense.moe.num_experts = 0;
    llm_result_t a, b, c;
    assert_int_equal(llm_estimate(&m, &s, &e, &a, &err), 0);
    assert_int_equal(llm_estimate(&mixed, &s, &e, &b, &err), 0);
    assert_int_equal(llm_estimate(&dense, &s, &e, &c, &err), 0);
    assert_true(a.extra.hardware_flops != c.extra.hardware_flops);
    assert_close(b.extra.hardware_flops, (a.extra.hardware_flops + c.extra.hardware_flops) / 2,
                 1e-12);
    /* MTP: one more MoE block forward and backward, as a third block adds, plus its head: the
     * 2h→h projection 2·16·128·64 = 262,144 and the output layer 2·16·64·1000 = 2,048,000 a
     * microbatch forward, three times that with backward: 2·3·2,310,144 = 13,860,864 */
    fathom_model_t mtp = tiny_moe(), three = tiny_moe();
    mtp.mtp_blocks = 1;
    three.num_blocks = 3;
    llm_result_t d, t3;
    assert_int_equal(llm_estimate(&mtp, &s, &e, &d, &err), 0);
    assert_int_equal(llm_estimate(&three, &s, &e, &t3, &err), 0);
    assert_close(d.extra.hardware_flops - t3.extra.hardware_flops, 13860864, 1e-12);
    /* context parallelism */
    e = layout(1, 1, 1, 1);
    e.optimizer_sharding = false;
    e.attention_kernel = LLM_ATTN_KERNEL_FUSED;
    if (llm_estimate(&m, &s, &e, &a, &err))
        fail_msg("%s: %s", err.field, err.message);
    e.context_par = 2;
    e.num_procs = 2;
    if (llm_estimate(&m, &s, &e, &b, &err))
        fail_msg("%s: %s", err.field, err.message);
    assert_close(b.extra.hardware_flops, a.extra.hardware_flops, 1e-9);
}

/* An MTP depth sits on the last stage: a dense tiny model (one stage) holds exactly the MTP
 * parameters more — its block, the 2h→h projection 2·64·64 = 8192 and three norms of 64, the
 * output matrix shared — and its step takes longer (the projection and one more output layer
 * and loss per microbatch; the depth's block is not timed). */
static void mtp_in_step(void **state)
{
    (void)state;
    fathom_model_t m0 = tiny_moe(), m1;
    m0.moe.num_experts = 0;
    m1 = m0;
    m1.mtp_blocks = 1;
    llm_params_t p0, p1;
    llm_parameters(&m0, &p0);
    llm_parameters(&m1, &p1);
    /* block: attention 64·(64 + 2·16) + 64·64 = 10240, norms 128, MLP 3·64·128 = 24576 */
    assert_close(p1.total - p0.total, 10240.0 + 128 + 24576 + 8192 + 3 * 64, 0);
    llm_system_t s = moe_system();
    llm_execution_t e = layout(1, 1, 1, 1);
    e.optimizer_sharding = false;
    llm_result_t r0, r1;
    fathom_error_t err;
    assert_int_equal(llm_estimate(&m0, &s, &e, &r0, &err), 0);
    assert_int_equal(llm_estimate(&m1, &s, &e, &r1, &err), 0);
    assert_close((r1.extra.stages[1].weights - r0.extra.stages[1].weights) / 2,
                 p1.total - p0.total, 0);
    assert_true(r1.stats.fw_time > r0.stats.fw_time);
    assert_true(r1.extra.hardware_flops > r0.extra.hardware_flops);
    /* each depth runs one more block on the last (here the only) stage, per microbatch: a
     * depth adds the block's forward and its head's (norms, projection, output layer), and two
     * depths twice that */
    fathom_model_t m2 = m1;
    m2.mtp_blocks = 2;
    llm_result_t r2;
    assert_int_equal(llm_estimate(&m2, &s, &e, &r2, &err), 0);
    const double depth = r1.stats.fw_time - r0.stats.fw_time;
    assert_close(r2.stats.fw_time - r1.stats.fw_time, depth, 1e-9);
    assert_true(depth > 2 * r0.stats.block_fw_time); /* 2 microbatches, a block each */
}

/* A two-node dispatch with deduplication, by hand: 16 peers over 2 nodes of 8 (tier 0 400 GB/s,
 * 1 µs; tier 1 50 GB/s, 10 µs), 64 experts (32 a node), 4 per token, one copy of the rank's
 * tokens 1 GB.
 *   flex: the other node holds none of a token's 4 experts with p0 = C(32,4)/C(64,4) =
 *   35,960/635,376, so a token crosses once with probability 599,416/635,376:
 *     t1 = 1e-5 + 1e9·1·(599,416/635,376)/5e10 = 0.01887807182…
 *     t0 = 1e-6 + 1e9·4·(7/8)/4e11 = 8.751e-3 (each rank still receives its 4 copies)
 *   so 0.018878 s: InfiniBand carries 0.943 GB where the plain all-to-all sends 4 copies, half
 *   of them off the node: 1e-5 + 4e9·(8/16)/5e10 = 0.04001 s (its NVLink half 4.376e-3). */
static void two_node_dispatch(void **state)
{
    (void)state;
    llm_system_t s = nvlink_and_ib();
    const model_moe_t x = {.num_experts = 64, .top_k = 4};
    const double t1 = 1e-5 + 1e9 * (599416.0 / 635376.0) / 5e10;
    assert_close(llm_a2a_flex_time(&s, 1, 1e9, &x, 16, 16), t1, 1e-12);
    assert_close(llm_a2a_flex_time(&s, 1, 1e9, &x, 16, 16), 0.01887807182, 1e-9);
    assert_close(llm_a2a_time(&s, 1, 4e9, 16, 16), 0.04001, 1e-12);
}

/* The dispatcher's share of the SMs (nvlink_and_ib, tier 0 processor_usage 0.15, tier 1 0.02):
 *   alltoall, EP 16 on tier 1 over two domains of 8: 8 ranks a domain move 7/16 of the bytes
 *     over tier 0 in the same kernel, max(0.02, 0.15) = 0.15 (it was 0.02);
 *   alltoall, EP 2 × ETP 8 on tier 1: one EP rank a domain (floor(2·8/16) = 1), tier 1 alone:
 *     0.02;
 *   alltoall, EP 8 in one domain on tier 0: 0.15; flex across domains: 0.15.
 * In the step, DualPipe (s = 1/(1 − u)) with the plain all-to-all of EP 16 on links so fast that
 * the SM share sets what is exposed: the group inside one 16-GPU domain exposed more than the
 * same group over two nodes of 8 (u 0.15 against 0.02 stretched the compute 17.6 % against
 * 2 %); now the two-node group exposes no less. */
static void a2a_processor_share(void **state)
{
    (void)state;
    llm_system_t s = nvlink_and_ib();
    s.networks[0].processor_usage = 0.15;
    s.networks[1].processor_usage = 0.02;
    llm_execution_t e = layout(1, 1, 16, 16);
    e.expert_par_net = 1;
    e.moe_dispatcher = LLM_MOE_DISPATCH_ALLTOALL;
    assert_close(llm__a2a_processor_usage(&s, &e), 0.15, 0);
    e.expert_par = 2;
    e.expert_tensor_par = 8;
    assert_close(llm__a2a_processor_usage(&s, &e), 0.02, 0);
    e.moe_dispatcher = LLM_MOE_DISPATCH_FLEX;
    assert_close(llm__a2a_processor_usage(&s, &e), 0.15, 0);
    e = layout(1, 1, 8, 8);
    e.expert_par_net = 0;
    assert_close(llm__a2a_processor_usage(&s, &e), 0.15, 0);

    fathom_model_t m = tiny_moe();
    m.moe.num_experts = 16;
    for (int i = 0; i < 2; i++) { /* links fast enough that the SM share sets the exposed time */
        s.networks[i].bandwidth_gbps = 1e6;
        s.networks[i].latency_s = 1e-9;
    }
    e = layout(1, 2, 16, 16);
    e.batch_size = 64;
    e.expert_par_net = e.data_par_net = e.pipeline_par_net = 1;
    e.moe_dispatcher = LLM_MOE_DISPATCH_ALLTOALL;
    e.pipeline_schedule = LLM_PP_DUALPIPE;
    llm_result_t across, inside;
    fathom_error_t err;
    if (llm_estimate(&m, &s, &e, &across, &err))
        fail_msg("%s: %s", err.field, err.message);
    llm_system_t big = s;
    big.networks[0].size = 16;
    e.expert_par_net = 0;
    if (llm_estimate(&m, &big, &e, &inside, &err))
        fail_msg("%s: %s", err.field, err.message);
    assert_true(inside.extra.expert_parallel_comm <= across.extra.expert_parallel_comm);
}

/* FP8 dispatch on a2a_flex_in_step's system (8 ranks, 4 domains of 2, tier 1 10 GB/s, each rank
 * 16 tokens of 64): the forward dispatch and the combine's backward carry 1 + 4/128 = 1.03125
 * bytes an element, 16·64·1.03125 = 1,056 bytes, t1 = 1,056·3·(13/28)/1e10 = 1.4708571e-7 s; the
 * other two stay bf16, 2.8525714e-7 s. 2 blocks · 2 microbatches · (2·1.4708571e-7 +
 * 2·2.8525714e-7) = 3.45874286e-6 s, against 4.5641143e-6 s all in bf16. In float8 all four
 * send 1,024 bytes: 4·2·2,048·39/28/1e10 = 2.2820571e-6 s. */
static void fp8_dispatch_in_step(void **state)
{
    (void)state;
    fathom_model_t m = tiny_moe();
    llm_system_t s = moe_system();
    s.num_networks = 2;
    s.networks[0].bandwidth_gbps = 100;
    s.networks[0].size = 2;
    s.networks[1] = s.networks[0];
    s.networks[1].bandwidth_gbps = 10;
    s.networks[1].size = 64;
    llm_execution_t e = layout(1, 1, 8, 8);
    e.data_par_net = e.expert_par_net = 1;
    e.moe_dispatcher = LLM_MOE_DISPATCH_FLEX;
    e.moe_fp8_dispatch = true;
    llm_result_t r;
    fathom_error_t err;
    assert_int_equal(llm_estimate(&m, &s, &e, &r, &err), 0);
    assert_close(r.extra.expert_parallel_comm, 4 * 2 * (1056.0 + 2048.0) * 39 / 28 / 1e10, 1e-12);
    assert_close(r.extra.expert_parallel_comm, 3.45874286e-6, 1e-8);
    /* a float8 datatype sends 1,024 bytes a copy, less than FP8 with its scales: the FP8
     * dispatch sends them as they are (it sent 1,056, more than without it) */
    e.datatype = LLM_DT_FLOAT8;
    if (llm_estimate(&m, &s, &e, &r, &err))
        fail_msg("%s: %s", err.field, err.message);
    assert_close(r.extra.expert_parallel_comm, 4 * 2 * (1024.0 + 1024.0) * 39 / 28 / 1e10, 1e-12);
}

/* Expert tensor parallelism: tiny MoE, TP 1, DP 4, EP 2, ETP 2, one 100 GB/s tier, batch 8 (2
 * microbatches), 2 blocks. Each rank routes 16 tokens to 2 experts: 16·2·64·2 = 4,096 bytes, half
 * leaving: 2.048e-8 s an all-to-all. Its ETP pair then gathers the rows it received, R = 64 rows
 * of 64 bf16 = 8,192 bytes (8.192e-8 s), and reduce-scatters the outputs (8.192e-8): each way
 * 2·2.048e-8 + 1.6384e-7 = 2.048e-7 s, 2·2·2·2.048e-7 = 1.6384e-6 s a step. */
static void etp_in_step(void **state)
{
    (void)state;
    fathom_model_t m = tiny_moe();
    llm_system_t s = moe_system();
    s.networks[0].bandwidth_gbps = 100;
    llm_execution_t e = layout(1, 1, 4, 2);
    e.expert_tensor_par = 2;
    llm_result_t r;
    fathom_error_t err;
    assert_int_equal(llm_estimate(&m, &s, &e, &r, &err), 0);
    assert_close(r.extra.expert_parallel_comm, 1.6384e-6, 1e-12);
}

/* The permutation before the experts, tiny MoE on one rank: T = 16 tokens of h = 64 routed to
 * k = 2 experts become R = 32 rows; forward reads 16·64 and writes 32·64 elements, (1,024 +
 * 2,048)·2 = 6,144 bytes; backward reads the 32·64 gradient rows and writes the 16·64 token
 * gradients, 6,144 bytes too; no FLOPs; nothing kept. */
static void permutation_pass(void **state)
{
    (void)state;
    fathom_model_t m = tiny_moe();
    llm_execution_t e = layout(1, 1, 1, 1);
    llm__sizes_t z = {.batch_seq = 16, .activation_size = 16 * 64, .seq_par_activation_size = 16 * 64};
    llm__block_t b;
    b.num_layers = b.num_groups = 0;
    llm__add_moe_mlp(&b, &m, &e, &z, false, 0);
    const llm__layer_t *p = &b.layers[2]; /* router, top-k, permute */
    llm__ctx_t c;
    memset(&c, 0, sizeof c);
    c.bpe = 2;
    assert_close(llm__layer_flops(p, &c, LLM__FW), 0, 0);
    assert_close(llm__layer_mem_accessed(p, &c, LLM__FW), 6144, 0);
    assert_close(llm__layer_mem_accessed(p, &c, LLM__AGRAD), 6144, 0);
    assert_false(p->activation_stored);
}

/* Megatron's combined 1F1B overlap of one block, by hand: dispatch and combine 1 s each way;
 * attention 0.5 s forward and 1 s backward, MoE MLP 2 s forward and 3 s backward (6.5 s of
 * compute). Without the dispatcher's share of the SMs (u 0):
 *   P1 = max(0.5, 1) = 1 (combine backward beside attention forward)
 *   P2 = max(3 + 2, 1 + 1, 1 + 2, 3 + 1) = 5
 *   P3 = max(1, 1) = 1                  exposed 7 − 6.5 = 0.5 s
 * with u 0.1: P1 = max(0.5 + 0.05, 1) = 1, P2 = 5 + 0.1·2 = 5.2, P3 = max(1 + 0.1, 1) = 1.1:
 * exposed 0.8 s. Comms longer than everything: 4 s each: P1 4, P2 max(5, 8, 6, 7) = 8, P3 4:
 * 16 − 6.5 = 9.5 s of the 16 exposed. */
static void a2a_overlap_phases(void **state)
{
    (void)state;
    const double one[4] = {1, 1, 1, 1}, four[4] = {4, 4, 4, 4};
    assert_close(llm__a2a_overlap_exposed(one, 0.5, 2, 1, 3, 0), 0.5, 1e-12);
    assert_close(llm__a2a_overlap_exposed(one, 0.5, 2, 1, 3, 0.1), 0.8, 1e-12);
    assert_close(llm__a2a_overlap_exposed(four, 0.5, 2, 1, 3, 0), 9.5, 1e-12);
}

/* The chunk passes Megatron's combined 1F1B cannot pair (the warm-up's forwards, one more with
 * the overlap, and as many backwards in the cool-down), on the first stage:
 *   pp 1, 8 microbatches: W = min(8, 1) = 1 (the first forward, the last backward): 1/8.
 *   1F1B pp 4, 8 microbatches: W = min(8, 4) = 4: 4/8 = 0.5.
 *   interleaved pp 4, v 2, 8 microbatches: 16 chunk passes, W = min(16, 2·3 + 1·4 + 1) = 11:
 *   11/16; rank 3: 2·0 + 4 + 1 = 5.
 *   the same with 2 microbatches: W = min(4, 11) = 4: every pass alone, 1.
 * In the step (the a2a_in_step model, 3.2768e-7 s of all-to-all over 2 blocks and 2
 * microbatches, hidden entirely when paired), 8 microbatches (batch 16): 8·2·4·2.048e-8 =
 * 1.31072e-6 s without overlap, 1/8 of it, 1.6384e-7 s, with it; DualPipe pairs within its own
 * two stages and keeps none. */
static void a2a_unpaired_chunks(void **state)
{
    (void)state;
    llm_execution_t e = layout(1, 1, 2, 2);
    assert_close(llm__warmup_chunks(&e, 8, 0), 1, 0);
    e.pipeline_par = 4;
    assert_close(llm__warmup_chunks(&e, 8, 0), 4, 0);
    e.pipeline_interleaving = 2;
    assert_close(llm__warmup_chunks(&e, 8, 0), 11, 0);
    assert_close(llm__warmup_chunks(&e, 8, 3), 5, 0);
    assert_close(llm__warmup_chunks(&e, 2, 0), 4, 0);

    fathom_model_t m = tiny_moe();
    llm_system_t s = moe_system();
    s.networks[0].bandwidth_gbps = 100;
    e = layout(1, 1, 2, 2);
    e.batch_size = 16;
    llm_result_t r;
    fathom_error_t err;
    assert_int_equal(llm_estimate(&m, &s, &e, &r, &err), 0);
    assert_close(r.extra.expert_parallel_comm, 1.31072e-6, 1e-15);
    e.moe_a2a_overlap = true;
    assert_int_equal(llm_estimate(&m, &s, &e, &r, &err), 0);
    assert_close(r.extra.expert_parallel_comm, 1.6384e-7, 1e-15);
}

/* DualPipe's fixed SM share (u = 0.2, s = 1/(1 − u) = 1.25), comm {Df, Cf, Db, Cb} in ms,
 * Af 4, Mf 6, Ab 8, Mb 12 (compute 30):
 *   small comm {1, 2, 3, 4}: stretched compute 5, 7.5, 10, 15; P1 = max(5, 4) = 5,
 *     P2 = max(15 + 7.5, 1 + 3, 1 + 7.5, 15 + 3) = 22.5, P3 = max(10, 2) = 10: the phases hide
 *     it all (37.5 − 37.5 = 0), the stretch (1.25 − 1)·30 = 7.5 is exposed. Megatron's overlap
 *     of the same: P1 = max(4 + 0.2·4, 4) = 4.8, P2 = max(18 + 0.2·4, 4, 7, 15) = 18.8,
 *     P3 = max(8 + 0.2·2, 2) = 8.4: 32 − 30 = 2.
 *   large comm {10, 20, 30, 40}: P1 = max(5, 40) = 40, P2 = max(22.5, 40, 17.5, 45) = 45,
 *     P3 = max(10, 20) = 20: 105 − 37.5 = 67.5, plus 7.5 = 75. */
static void dualpipe_partition(void **state)
{
    (void)state;
    const double small[4] = {1, 2, 3, 4}, large[4] = {10, 20, 30, 40};
    assert_close(llm__a2a_partitioned_exposed(small, 4, 6, 8, 12, 0.2), 7.5, 1e-12);
    assert_close(llm__a2a_overlap_exposed(small, 4, 6, 8, 12, 0.2), 2.0, 1e-12);
    assert_close(llm__a2a_partitioned_exposed(large, 4, 6, 8, 12, 0.2), 75.0, 1e-12);
    /* no share: the plain phases */
    assert_close(llm__a2a_partitioned_exposed(large, 4, 6, 8, 12, 0),
                 llm__a2a_overlap_exposed(large, 4, 6, 8, 12, 0), 0);
}

/* DualPipe's outer layers: embedding 10 ms and output layer 90 ms per microbatch on one rank,
 * its two stages lacking 20 and 30 ms of blocks: (100 − 50)/2 = 25 ms, a share 0.25 of the
 * 100; lacking more than they add, nothing; no outer layers, nothing. */
static void dualpipe_outer(void **state)
{
    (void)state;
    assert_close(llm__dualpipe_outer_share(0.010, 0.090, 0.020, 0.030), 0.25, 1e-12);
    assert_close(llm__dualpipe_outer_share(0.010, 0.090, 0.060, 0.050), 0, 0);
    assert_close(llm__dualpipe_outer_share(0, 0, 0, 0), 0, 0);
}

/* The stage that sets the pace: 8 blocks, the first 3 dense.
 *   pp 2: stages 0–3 (1 MoE) and 4–7 (4 MoE): 4.
 *   pp 3 even split: 3, 3, 2 blocks: 0–2 (0 MoE), 3–5 (3), 6–7 (short): 3.
 *   pp 3, first_stage_blocks 2: 0–1, 2–4 (2 MoE), 5–7 (3): 3.
 *   pp 4 (2 each): 0–1 (0), 2–3 (1), 4–5 (2), 6–7 (2): 2. */
static void pace_stage(void **state)
{
    (void)state;
    fathom_model_t m = tiny_moe();
    m.num_blocks = 8;
    m.moe.first_dense_blocks = 3;
    llm_execution_t e = layout(1, 2, 1, 1);
    assert_int_equal(llm__pace_moe_blocks(&m, &e, 4), 4);
    e.pipeline_par = 3;
    assert_int_equal(llm__pace_moe_blocks(&m, &e, 3), 3);
    e.first_stage_blocks = 2;
    assert_int_equal(llm__pace_moe_blocks(&m, &e, 3), 3);
    e.first_stage_blocks = 0;
    e.pipeline_par = 4;
    assert_int_equal(llm__pace_moe_blocks(&m, &e, 2), 2);
}

/* DeepSeek-V3's report (DeepSeek-AI 2024, sec. 1 and 3): 180,000 H800 GPU-hours per trillion
 * tokens on 2,048 H800s = 1e12 / (180,000 · 3,600) = 1,543.2 tokens/s per GPU, with its layout:
 * PP 16 (DualPipe), EP 64 over 8 nodes, ZeRO-1 data parallelism of 128, no TP, batch 15,360 of
 * 4,096 tokens, FP8 GEMMs and FP8 dispatch, BF16 AdamW moments, FP8 cached activations,
 * RMSNorm and MLA up-projections recomputed. DualPipe's default end stages (3 and 2 blocks,
 * llm_end_stage_blocks: the even split does not fit in 80 GB) pace the step at 8 blocks a rank
 * and put it at +29 %, the bound tests/api/test_memory.py holds too (doc/moe.md, "DeepSeek-V3's
 * own run"; the even split's 4-block end stages were +9 %). */
static void deepseek_v3_report(void **state)
{
    (void)state;
    fathom_model_t m = preset(presets, "deepseek-v3");
    llm_system_t s;
    fathom_error_t err;
    json_t *v = json_string("h800");
    assert_int_equal(codec_llm_system_decode(v, "system", presets, &s, &err), 0);
    json_decref(v);
    json_t *je = json_loads(
        "{\"num_procs\": 2048, \"tensor_par\": 1, \"pipeline_par\": 16, \"data_par\": 128,"
        " \"expert_par\": 64, \"tensor_par_net\": 0, \"pipeline_par_net\": 1,"
        " \"data_par_net\": 1, \"expert_par_net\": 1, \"batch_size\": 15360,"
        " \"microbatch_size\": 1, \"datatype\": \"bfloat16\", \"fp8\": true,"
        " \"attention_kernel\": \"fused\", \"activation_recompute\": \"none\","
        " \"recompute_modules\": [\"layernorm\", \"mla_up_proj\"], \"zero_stage\": 1,"
        " \"data_par_overlap\": true, \"moe_dispatcher\": \"flex\","
        " \"moe_fp8_dispatch\": true, \"pipeline_schedule\": \"dualpipe\","
        " \"optimizer_state_datatype\": \"bfloat16\", \"fp8_activation_cache\": true}",
        0, NULL);
    assert_non_null(je);
    llm_execution_t e;
    if (codec_llm_execution_decode(je, "execution", &e, &err))
        fail_msg("%s: %s", err.field, err.message);
    json_decref(je);
    llm_result_t r;
    if (llm_estimate(&m, &s, &e, &r, &err))
        fail_msg("%s: %s", err.field, err.message);
    const double tokens = r.stats.sample_rate * 4096.0 / 2048.0, published = 1e12 / (180000.0 * 3600);
    print_message("DeepSeek-V3 on 2,048 H800: %.0f tokens/s/GPU, published %.0f (%+.1f %%)\n",
                  tokens, published, 100 * (tokens / published - 1));
    assert_true(fabs(tokens / published - 1) <= 0.32);
}

/* A fused attention kernel with heads of 64 runs at 0.8 of its head-128 rate (cuDNN on H100,
 * bench/gpu): 1e12 FLOPs at 1e12·0.8 FLOP/s take 1.25 s; heads of 96 at 0.9: 1.1111 s; heads
 * of 128 and up at the system's rate: 1 s. */
static void attention_head_size(void **state)
{
    (void)state;
    /* only the fields this case needs; every other is zero, as a memset left it */
    llm__layer_t l = {.kind = LLM__FUSED_ATTENTION, .fw_flops = 1e12};
    const llm_system_t s = moe_system();
    llm__ctx_t c = {.attention_flops = 1e12, .bpe = 2, .mem1_bw = 1e30, .sys = &s};
    const double sizes[3] = {64, 96, 192}, times[3] = {1.25, 1.0 / 0.9, 1};
    for (int i = 0; i < 3; i++) {
        llm__cost_t k;
        l.inner = sizes[i];
        llm__layer_cost(&l, &c, LLM__FW, &k);
        assert_close(k.flops_time, times[i], 1e-12);
    }
}

/* ---- grouped GEMMs and imbalance ---- */

static const llm__layer_t *expert_layer(const llm__block_t *b, int nth)
{
    for (int i = 0; i < b->num_layers; i++)
        if (b->layers[i].expert && nth-- == 0)
            return &b->layers[i];
    fail_msg("expert layer #%d not in the block", nth);
    return NULL;
}

/* Tiny MoE, EP 2: each rank routes T = 16 tokens to k = 2 experts, so its 8/2 = 4 local experts
 * see R = 16·2 = 32 rows (8 per expert = T·k/E·EP... on average 16·2/8 = 4 tokens per expert per
 * source rank, from 2 ranks). Up GEMM 32×64 by 64×256 (gate and up): 2·32·64·256 = 1,048,576
 * FLOPs, 4 experts' weights 4·64·256 = 65,536. A grouped GEMM runs at e_top·M/(M+160)·K/(K+160)·
 * N/(N+32) plus 30 µs, e_top the curve's best (100% above 5e-4 GFLOP, 50% below: 1).
 *   forward M = 8 rows an expert, K = 64, N = 256:
 *     1,048,576·(168/8)·(224/64)·(288/256)/1e12 = 8·168·224·288/1e12 = 8.6704128e-5 s,
 *     + 3e-5 = 1.16704128e-4 s;
 *   input gradient M = 8, K = 256, N = 64: 8·168·416·96/1e12 = 5.3673984e-5, + 3e-5 =
 *     8.3673984e-5 s;
 * as one dense GEMM (no groups) the curve's 100%: 1.048576e-6 s. In FP8 at 2 TFLOP/s the
 * constants double (320, 320, 64): 2·32·64·256·(328/8)·(384/64)·(320/256)/2e12 =
 *   8·328·384·320/2e12 = 1.6121856e-4, + 3e-5 = 1.9121856e-4 s (the BF16 rule's 8.67e-5 would
 *   have halved to 4.34e-5). Imbalance 1.5 → 48 rows; a
 * capacity factor 1.25 drops the excess → 40. ETP 2 gathers the pair's tokens: 64 rows of width
 * 128/2. */
static void grouped_gemm(void **state)
{
    (void)state;
    fathom_model_t m = tiny_moe();
    llm_system_t s = moe_system();
    curve(&s.matrix.rate[LLM_DT_BFLOAT16].gflops_efficiency, 5e-4, 1, 0.5);
    llm_execution_t e = layout(1, 1, 2, 2);
    llm__sizes_t z = {.batch_seq = 16, .activation_size = 16 * 64, .seq_par_activation_size = 16 * 64};
    llm__block_t b;
    b.num_layers = b.num_groups = 0;
    llm__add_moe_mlp(&b, &m, &e, &z, false, 0);
    const llm__layer_t *up = expert_layer(&b, 0);
    assert_close(up->fw_flops, 1048576.0, 0);
    assert_close(up->weight_space, 65536.0, 0);
    assert_close(up->groups, 4, 0);
    llm__ctx_t c;
    memset(&c, 0, sizeof c);
    c.sys = &s;
    c.matrix_flops = c.vector_flops = 1e12;
    c.matrix_curve = &s.matrix.rate[LLM_DT_BFLOAT16].gflops_efficiency;
    c.vector_curve = &s.vector.rate[LLM_DT_BFLOAT16].gflops_efficiency;
    c.mem1_bw = 1e15;
    c.bpe = 2;
    c.optim_shards = c.expert_optim_shards = 1;
    llm__cost_t k;
    llm__layer_t l = *up;
    llm__layer_cost(&l, &c, LLM__FW, &k);
    assert_close(k.flops_time, 1.16704128e-4, 1e-12);
    llm__layer_cost(&l, &c, LLM__AGRAD, &k);
    assert_close(k.flops_time, 8.3673984e-5, 1e-12);
    l.groups = 0; /* as one dense GEMM it would run at 100% */
    llm__layer_cost(&l, &c, LLM__FW, &k);
    assert_close(k.flops_time, 1.048576e-6, 1e-12);
    l.groups = 4; /* in FP8 at twice the rate: the shape constants double */
    l.fp8 = true;
    c.fp8_matrix_flops = 2e12;
    c.fp8_matrix_curve = c.matrix_curve;
    llm__layer_cost(&l, &c, LLM__FW, &k);
    assert_close(k.flops_time, 1.9121856e-4, 1e-12);

    assert_close(llm__moe_expert_rows(&m, &e), 32, 0);
    e.moe_load_imbalance = 1.5;
    assert_close(llm__moe_expert_rows(&m, &e), 48, 0);
    e.moe_capacity_factor = 1.25;
    assert_close(llm__moe_expert_rows(&m, &e), 40, 0);
    e.moe_load_imbalance = 1;
    e.moe_capacity_factor = 0;
    e.expert_tensor_par = 2; /* fold: EP 2 × ETP 2 = TP 1 × DP 4 */
    e.data_par = 4;
    assert_close(llm__moe_expert_rows(&m, &e), 64, 0);
    b.num_layers = b.num_groups = 0;
    llm__add_moe_mlp(&b, &m, &e, &z, false, 0);
    assert_close(expert_layer(&b, 0)->fw_flops, 2.0 * 64 * 64 * 128, 0);
}

/* ---- selective recompute (execution.recompute_modules) ---- */

/* Estimates `m` on one rank of the tiny system without and then with `modules` recomputed
 * (into *r): a block reruns `block_re_s`, the step `step_re_s`, a block stores `freed` bytes
 * fewer, and forward and backward do not change. */
static void check_modules(const fathom_model_t *m, unsigned modules, double block_re_s,
                          double step_re_s, double freed, llm_result_t *r)
{
    llm_system_t s = moe_system();
    llm_execution_t e = layout(1, 1, 1, 1);
    e.optimizer_sharding = false;
    llm_result_t base;
    fathom_error_t err;
    assert_int_equal(llm_estimate(m, &s, &e, &base, &err), 0);
    assert_close(base.stats.block_re_time, 0, 0);
    e.recompute_modules = modules;
    if (llm_estimate(m, &s, &e, r, &err))
        fail_msg("%s: %s", err.field, err.message);
    assert_close(r->stats.block_re_time, block_re_s, 1e-12);
    assert_close(r->stats.recompute_time, step_re_s, 1e-12);
    assert_close(base.stats.block_act_storage_space - r->stats.block_act_storage_space, freed, 0);
    assert_close(r->stats.fw_time, base.stats.fw_time, 1e-15);
    assert_close(r->stats.bw_time, base.stats.bw_time, 1e-15);
    /* the difference of two steps that each hold the grouped GEMMs' 30 µs calls */
    assert_close(r->stats.total_time - base.stats.total_time, step_re_s, 1e-9);
}

/* Tiny MoE on one processor, batch 2 (2 microbatches), 2 MoE blocks, 1 TFLOP/s everywhere,
 * memory too fast to count. Each block routes T = 16 tokens to k = 2 experts: R = 32 rows.
 *   moe_act: the SwiGLU reruns, 6·R·fe = 6·32·128 = 24,576 FLOPs = 2.4576e-8 s a block; its
 *     output, the down GEMM's input R·fe = 4,096 elements (8,192 bytes), is not stored.
 *     Recompute line: 2 blocks · 2 microbatches · 2.4576e-8 = 9.8304e-8 s.
 *   moe: the whole MoE MLP reruns: router 2·T·h·E = 16,384, top-k 6·E·T = 768, permute 0,
 *     SwiGLU 24,576, unpermute 2k·T·h = 4,096: 45,824 FLOPs = 4.5824e-8 s; and the grouped
 *     GEMMs of 8 local experts, 4 rows each (grouped_gemm's rule: e_top 1, + 30 µs a call):
 *     up 2·R·h·2fe = 1,048,576 FLOPs, M 4, K 64, N 256: 16·164·224·288/1e12 = 1.69279488e-4,
 *     down 2·R·fe·h = 524,288, M 4, K 128, N 64: 16·164·288·96/1e12 = 7.2548352e-5; with the
 *     two calls 3.01827840e-4 + 4.5824e-8 = 3.01873664e-4 s a block. Only the router keeps its
 *     input: top-k T·E = 128, up R·h = 2,048, SwiGLU 2·R·fe = 8,192, down 4,096 (the unpermute
 *     keeps nothing: the routing weights are applied in the SwiGLU): 14,464 elements = 28,928
 *     bytes fewer a block. Forward and backward are unchanged. */
static void selective_recompute(void **state)
{
    (void)state;
    fathom_model_t m = tiny_moe();
    llm_system_t s = moe_system();
    llm_execution_t e = layout(1, 1, 1, 1);
    e.optimizer_sharding = false;
    llm_result_t base, r;
    fathom_error_t err;
    check_modules(&m, LLM_RECOMPUTE_MOE_ACT, 2.4576e-8, 9.8304e-8, 8192, &r);
    assert_int_equal(llm_estimate(&m, &s, &e, &base, &err), 0);
    e.recompute_modules = LLM_RECOMPUTE_MOE;
    assert_int_equal(llm_estimate(&m, &s, &e, &r, &err), 0);
    assert_close(r.stats.block_re_time, 3.01873664e-4, 1e-12);
    assert_close(base.stats.block_act_storage_space - r.stats.block_act_storage_space, 28928, 0);
    assert_close(r.stats.recompute_time, 4 * 3.01873664e-4, 1e-12);
}

/* layernorm on one rank (the selective_recompute model, 1 TFLOP/s, memory too fast to count):
 * both RMSNorms of a block rerun, 4 FLOPs on each of its b·s·h = 16·64 = 1,024 elements:
 * 2·4,096 FLOPs = 8.192e-9 s a block, 4 · 8.192e-9 = 3.2768e-8 s for 2 blocks · 2 microbatches.
 * Their outputs are no longer kept: attention's (the fork before Q, K and V) and the MLP's (the
 * router's input in an MoE block, the up projection's in a dense one), 2·1,024 elements =
 * 4,096 bytes a block. Forward and backward are unchanged. With TP 2 and sequence parallelism
 * the sliver before each all-gather is dropped as well and both all-gathers are redone. */
static void layernorm_recompute(void **state)
{
    (void)state;
    fathom_model_t moe = tiny_moe(), dense = tiny_moe();
    dense.moe.num_experts = 0;
    llm_system_t s = moe_system();
    llm_result_t base, r;
    fathom_error_t err;
    check_modules(&moe, LLM_RECOMPUTE_LAYERNORM, 8.192e-9, 3.2768e-8, 4096, &r);
    check_modules(&dense, LLM_RECOMPUTE_LAYERNORM, 8.192e-9, 3.2768e-8, 4096, &r);
    llm_execution_t e = layout(2, 1, 1, 1);
    e.optimizer_sharding = false;
    e.tensor_par_comm_type = LLM_TP_COMM_RS_AG;
    assert_int_equal(llm_estimate(&dense, &s, &e, &base, &err), 0);
    assert_close(base.stats.recomm_link_time, 0, 0);
    e.recompute_modules = LLM_RECOMPUTE_LAYERNORM;
    assert_int_equal(llm_estimate(&dense, &s, &e, &r, &err), 0);
    assert_true(r.stats.recomm_link_time > 0);
    /* TP 2: after each all-gather every rank held the whole normed state, b·s·h = 1,024
     * elements (attention's fork, the up projection's input), and before it its sliver of
     * 1,024/2 = 512: 2·(1,024 + 512) elements = 6,144 bytes a block */
    assert_close(base.stats.block_act_storage_space - r.stats.block_act_storage_space, 6144, 0);
}

/* mlp on the dense tiny model (one rank, 1 TFLOP/s, memory too fast to count): the MLP's
 * forward reruns, up 2·16·64·256 = 524,288, SwiGLU 6·16·128 = 12,288 and down 2·16·128·64 =
 * 262,144 FLOPs = 7.9872e-7 s a block, 4 · 7.9872e-7 = 3.19488e-6 s for 2 blocks · 2
 * microbatches; only the MLP's input stays (the up projection's, 1,024 elements): the SwiGLU's
 * 2·16·128 = 4,096 and the down projection's 16·128 = 2,048 elements, 12,288 bytes a block, go.
 * On an MoE model whose every block is an MoE block it is refused; DeepSeek-V3's three dense
 * blocks rerun their MLP's forward (`dense_blocks_in_step` has the split). */
static void mlp_recompute(void **state)
{
    (void)state;
    fathom_model_t dense = tiny_moe(), moe = tiny_moe();
    dense.moe.num_experts = 0;
    llm_system_t s = moe_system();
    llm_execution_t e = layout(1, 1, 1, 1);
    e.optimizer_sharding = false;
    llm_result_t r;
    fathom_error_t err;
    check_modules(&dense, LLM_RECOMPUTE_MLP, 7.9872e-7, 3.19488e-6, 12288, &r);
    /* with layernorm too the input goes as well: 1,024 elements more, and the attention's
     * normed copy (layernorm_recompute): 4,096 bytes more */
    e.recompute_modules = LLM_RECOMPUTE_MLP | LLM_RECOMPUTE_LAYERNORM;
    llm_result_t both;
    assert_int_equal(llm_estimate(&dense, &s, &e, &both, &err), 0);
    assert_close(r.stats.block_act_storage_space - both.stats.block_act_storage_space, 4096, 0);
    e.recompute_modules = LLM_RECOMPUTE_MLP;
    assert_int_equal(llm_estimate(&moe, &s, &e, &r, &err), -1);
    assert_string_equal(err.field, "execution.recompute_modules");
}

/* One rank, one sequence, fused attention (MLA's modules are modelled fused only). */
static llm_execution_t mla_layout(void)
{
    llm_execution_t e = layout(1, 1, 1, 1);
    e.attention_kernel = LLM_ATTN_KERNEL_FUSED;
    e.optimizer_sharding = false;
    return e;
}

/* What one MLA block keeps for backward (the mla_flops model, TP 1, one sequence of 16, bf16,
 * fused attention), in elements. The normed hidden state (16·64 = 1,024) is kept once, by the
 * fork that hands it to both down-projections (q_a and kv_a keep no copy of their own):
 *   attention: residual fork 1,024, normed fork 1,024, q norm input and q_b input 16·32 twice,
 *     kv norm input and kv_b input 16·16 twice, fused attention Q, K, V 3·16·4·10 = 1,920 and
 *     its fp32 log-sum-exp 16·4·4/2 = 128, the out projection's input 16·4·8 = 512
 *   MLP: residual fork 1,024, up projection's input 1,024, SwiGLU input 2·16·128 = 4,096, down
 *     projection's input 2,048
 * (the modern block has no dropout, so no masks) = 6,144 + 8,192 = 14,336 elements = 28,672
 * bytes. */
static void mla_block_storage(void **state)
{
    (void)state;
    fathom_model_t m = tiny_mla();
    llm_system_t s = moe_system();
    llm_execution_t e = mla_layout();
    llm_result_t r;
    fathom_error_t err;
    if (llm_estimate(&m, &s, &e, &r, &err))
        fail_msg("%s: %s", err.field, err.message);
    assert_close(r.stats.block_act_storage_space, 28672, 0);
}

/* MLA (the mla_flops model: h 64, 4 heads, q rank 32, kv rank 16, nope 8, rope 4, v 8,
 * sequence 16) with mla_up_proj: q_b 2·16·32·4·12 = 49,152, kv_b 2·16·16·4·16 = 32,768 and
 * RoPE 3·16·(4 + 1)·4 = 960 FLOPs rerun: 8.288e-8 s a block. Attention stops storing Q, K
 * and V, heads of width (12 + 8)/2 = 10: 16·4·10 = 640 each, 1,920 elements, and the up
 * projections their inputs (the latents' norms are inside Megatron's checkpoint, which keeps
 * the norms' inputs): 16·32 + 16·16 = 768 elements; 2,688 elements = 5,376 bytes. */
static void mla_up_proj_recompute(void **state)
{
    (void)state;
    fathom_model_t m = tiny_mla();
    llm_system_t s = moe_system();
    llm_execution_t e = mla_layout();
    llm_result_t base, r;
    fathom_error_t err;
    assert_int_equal(llm_estimate(&m, &s, &e, &base, &err), 0);
    e.recompute_modules = LLM_RECOMPUTE_MLA_UP_PROJ;
    assert_int_equal(llm_estimate(&m, &s, &e, &r, &err), 0);
    assert_close(r.stats.block_re_time - base.stats.block_re_time, 8.288e-8, 1e-12);
    assert_close(base.stats.block_act_storage_space - r.stats.block_act_storage_space, 5376, 0);
    assert_close(r.stats.block_act_working_space, base.stats.block_act_working_space, 0);

    /* refusals name the field: with full recompute, without MLA or experts, unfused */
    static const struct {
        unsigned mods;
        llm_recompute_t rec;
        llm_attn_kernel_t kernel;
    } bad[] = {{LLM_RECOMPUTE_MLA_UP_PROJ, LLM_RECOMPUTE_FULL, LLM_ATTN_KERNEL_FUSED},
               {LLM_RECOMPUTE_MLA_UP_PROJ, LLM_RECOMPUTE_NONE, LLM_ATTN_KERNEL_UNFUSED},
               {LLM_RECOMPUTE_MOE_ACT, LLM_RECOMPUTE_NONE, LLM_ATTN_KERNEL_FUSED},
               {LLM_RECOMPUTE_MOE, LLM_RECOMPUTE_ATTN_ONLY, LLM_ATTN_KERNEL_FUSED}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        llm_execution_t b = e;
        b.recompute_modules = bad[i].mods;
        b.activation_recompute = bad[i].rec;
        b.attention_kernel = bad[i].kernel;
        assert_int_equal(llm_estimate(&m, &s, &b, &r, &err), -1);
        assert_string_equal(err.field, "execution.recompute_modules");
    }
    fathom_model_t t = tiny_moe();
    e.recompute_modules = LLM_RECOMPUTE_MLA_UP_PROJ; /* no MLA in the tiny MoE */
    assert_int_equal(llm_estimate(&t, &s, &e, &r, &err), -1);
    assert_string_equal(err.field, "execution.recompute_modules");
}

/* The module ladder a search (and the measured-runs rule) climbs: layernorm, then only the
 * modules the model has (mlp on a dense model), each set a superset of the one before, none
 * with full recompute or Calculon's block. */
static void module_ladder(void **state)
{
    (void)state;
    const unsigned N = LLM_RECOMPUTE_LAYERNORM, A = LLM_RECOMPUTE_MOE_ACT,
                   U = LLM_RECOMPUTE_MLA_UP_PROJ, M = LLM_RECOMPUTE_MOE;
    unsigned sets[LLM_RECOMPUTE_MODULE_SETS];
    llm_execution_t e = layout(1, 1, 1, 1);
    e.attention_kernel = LLM_ATTN_KERNEL_FUSED;
    fathom_model_t moe = tiny_moe(), mla = tiny_mla(), both = tiny_moe(), plain = tiny_moe();
    both.mla = mla.mla;
    plain.moe.num_experts = 0;
    const unsigned P = LLM_RECOMPUTE_MLP; /* dense models only: tiny_mla has no experts */
    assert_int_equal(llm_recompute_module_ladder(&moe, &e, sets), 3);
    assert_int_equal(sets[0], N);
    assert_int_equal(sets[1], N | A);
    assert_int_equal(sets[2], N | A | M);
    assert_int_equal(llm_recompute_module_ladder(&mla, &e, sets), 3);
    assert_int_equal(sets[1], N | P);
    assert_int_equal(sets[2], N | P | U);
    assert_int_equal(llm_recompute_module_ladder(&both, &e, sets), 4);
    assert_int_equal(sets[2], N | A | U);
    assert_int_equal(sets[3], N | A | U | M);
    assert_int_equal(llm_recompute_module_ladder(&plain, &e, sets), 2);
    assert_int_equal(sets[0], N);
    assert_int_equal(sets[1], N | P);
    e.attention_kernel = LLM_ATTN_KERNEL_UNFUSED; /* mla_up_proj is modelled fused only */
    assert_int_equal(llm_recompute_module_ladder(&mla, &e, sets), 2);
    assert_int_equal(llm_recompute_module_ladder(&both, &e, sets), 3);
    e.activation_recompute = LLM_RECOMPUTE_FULL;
    assert_int_equal(llm_recompute_module_ladder(&moe, &e, sets), 0);
    e.activation_recompute = LLM_RECOMPUTE_NONE;
    moe.calculon_block = true;
    assert_int_equal(llm_recompute_module_ladder(&moe, &e, sets), 0);
}

/* ---- refusals ---- */

static void bad_fields(void **state)
{
    (void)state;
    fathom_model_t m = tiny_moe();
    llm_system_t s = moe_system();
    llm_result_t r;
    fathom_error_t err;
    llm_execution_t e = layout(1, 1, 2, 3); /* 3 does not divide 8 experts */
    assert_int_equal(llm_estimate(&m, &s, &e, &r, &err), -1);
    assert_string_equal(err.field, "execution.expert_par");
    e = layout(1, 1, 2, 4); /* EP 4 > TP·DP = 2 */
    assert_int_equal(llm_estimate(&m, &s, &e, &r, &err), -1);
    assert_string_equal(err.field, "execution.expert_par");
    e = layout(1, 1, 2, 2);
    e.expert_tensor_par = 3;
    assert_int_equal(llm_estimate(&m, &s, &e, &r, &err), -1);
    assert_string_equal(err.field, "execution.expert_tensor_par");
    e = layout(1, 1, 2, 2);
    s.num_networks = 2;
    s.networks[1] = s.networks[0];
    s.networks[1].size = 1; /* the EP group of 2 does not fit a tier of 1 */
    e.expert_par_net = 1;
    assert_int_equal(llm_estimate(&m, &s, &e, &r, &err), -1);
    assert_string_equal(err.field, "execution.expert_par_net");
    s = moe_system();
    fathom_model_t d = tiny_moe();
    d.moe.num_experts = 0;
    assert_int_equal(llm_estimate(&d, &s, &e, &r, &err), -1);
    assert_string_equal(err.field, "execution.expert_par");

    /* the codec: top_k above num_experts, and an unknown key, name their field */
    json_t *v = json_pack("{s:i,s:i,s:i,s:i,s:{s:i,s:i}}", "hidden", 64, "seq_size", 16,
                          "attn_heads", 8, "num_blocks", 2, "moe", "num_experts", 4, "top_k", 5);
    assert_int_equal(codec_model_decode(v, "model", presets, &m, &err), -1);
    assert_string_equal(err.field, "model.moe.top_k");
    json_object_set_new(json_object_get(v, "moe"), "top_k", json_integer(2));
    assert_int_equal(codec_model_decode(v, "model", presets, &m, &err), 0);
    assert_false(m.calculon_block);
    json_object_set_new(json_object_get(v, "moe"), "first_dense_blocks", json_integer(2));
    assert_int_equal(codec_model_decode(v, "model", presets, &m, &err), -1);
    assert_string_equal(err.field, "model.moe.first_dense_blocks");
    json_decref(v);
}

/* DeepSeek-V3 decodes, encodes and decodes back to the same model. */
static void round_trip(void **state)
{
    (void)state;
    fathom_model_t m = preset(presets, "deepseek-v3"), back;
    fathom_error_t err;
    json_t *enc = codec_model_encode(&m);
    assert_int_equal(codec_model_decode(enc, "model", presets, &back, &err), 0);
    json_decref(enc);
    assert_memory_equal(&m.moe, &back.moe, sizeof m.moe);
    assert_int_equal(back.moe.router_groups, 8); /* DeepSeek-V3's n_group and topk_group */
    assert_int_equal(back.moe.router_group_top_k, 4);
    assert_memory_equal(&m.mla, &back.mla, sizeof m.mla);
    assert_int_equal(back.mtp_blocks, 1);

    /* the execution's MoE fields too; left at their defaults they are not written */
    llm_execution_t e = layout(1, 16, 64, 64), eb;
    e.expert_tensor_par = 1;
    e.expert_par_net = 1;
    e.moe_load_imbalance = 1.25;
    e.moe_capacity_factor = 1.5;
    e.moe_a2a_overlap = true;
    json_t *je = codec_llm_execution_encode(&e);
    assert_int_equal(codec_llm_execution_decode(je, "execution", &eb, &err), 0);
    json_decref(je);
    assert_int_equal(eb.expert_par, 64);
    assert_int_equal(eb.expert_par_net, 1);
    assert_close(eb.moe_load_imbalance, 1.25, 0);
    assert_close(eb.moe_capacity_factor, 1.5, 0);
    assert_true(eb.moe_a2a_overlap);
    e = layout(1, 1, 1, 1);
    e.optimizer_sharding = false; /* one data-parallel rank: nothing to shard over (refused) */
    je = codec_llm_execution_encode(&e);
    assert_null(json_object_get(je, "expert_par"));
    assert_null(json_object_get(je, "recompute_modules"));
    json_decref(je);
    /* recompute_modules as names, in a fixed order; a repeat or an unknown name is refused */
    e.recompute_modules = LLM_RECOMPUTE_MOE | LLM_RECOMPUTE_MOE_ACT;
    je = codec_llm_execution_encode(&e);
    char *text = json_dumps(json_object_get(je, "recompute_modules"), JSON_COMPACT);
    assert_string_equal(text, "[\"moe_act\",\"moe\"]");
    free(text);
    assert_int_equal(codec_llm_execution_decode(je, "execution", &eb, &err), 0);
    assert_int_equal(eb.recompute_modules, LLM_RECOMPUTE_MOE | LLM_RECOMPUTE_MOE_ACT);
    json_object_set_new(je, "recompute_modules", json_pack("[s,s]", "moe", "moe"));
    assert_int_equal(codec_llm_execution_decode(je, "execution", &eb, &err), -1);
    assert_string_equal(err.field, "execution.recompute_modules[1]");
    json_object_set_new(je, "recompute_modules", json_pack("[s,s]", "mlp", "mamba"));
    assert_int_equal(codec_llm_execution_decode(je, "execution", &eb, &err), -1);
    assert_string_equal(err.field, "execution.recompute_modules[1]");
    json_decref(je);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parameter_counts), cmocka_unit_test(model_flops_megatron),
        cmocka_unit_test(mla_flops),        cmocka_unit_test(mla_block_storage),
        cmocka_unit_test(memory_deepseek_v3),
        cmocka_unit_test(memory_mixtral),   cmocka_unit_test(a2a_cost),
        cmocka_unit_test(a2a_flex_cost),
        cmocka_unit_test(a2a_unpaired_chunks), cmocka_unit_test(dualpipe_partition), cmocka_unit_test(dualpipe_outer),
        cmocka_unit_test(pace_stage), cmocka_unit_test(deepseek_v3_report),
        cmocka_unit_test(a2a_flex_router_groups), cmocka_unit_test(a2a_flex_deepseek_v3_groups), cmocka_unit_test(a2a_flex_in_step),
        cmocka_unit_test(a2a_in_step),      cmocka_unit_test(dense_blocks_in_step),
        cmocka_unit_test(hardware_flops_in_step),
        cmocka_unit_test(mtp_in_step),      cmocka_unit_test(grouped_gemm),
        cmocka_unit_test(bad_fields),       cmocka_unit_test(round_trip),
        cmocka_unit_test(selective_recompute), cmocka_unit_test(layernorm_recompute),
        cmocka_unit_test(mlp_recompute), cmocka_unit_test(mla_up_proj_recompute),
        cmocka_unit_test(module_ladder),    cmocka_unit_test(two_node_dispatch),
        cmocka_unit_test(a2a_processor_share),
        cmocka_unit_test(fp8_dispatch_in_step), cmocka_unit_test(etp_in_step),
        cmocka_unit_test(permutation_pass), cmocka_unit_test(a2a_overlap_phases),
        cmocka_unit_test(attention_head_size), cmocka_unit_test(context_parallel_fold),
    };
    return cmocka_run_group_tests(tests, load_presets, free_presets);
}

/* test_megatron_ref.c — checks the Megatron-LM formula oracle (megatron_ref.c) against numbers
 * worked out by hand below, GEMM by GEMM. Every expected value is written in the comments first;
 * none was printed by the code under test. Convention tags (F2, W8, A3, ...) are those of
 * megatron_ref.h. */
#include "llm/megatron_ref.h"
#include "test_util.h"

#include <stdbool.h>
#include <stdint.h>

/* Exact small integers: doubles must agree to the last bit, but allow rounding noise. */
#define EXACT 1e-12

/* Tiny dense model: 2 layers, h 8, ffn 32, 2 heads (MHA, head dim 4), vocab 16, seq 4, GELU MLP,
   tied embeddings, LayerNorm (Megatron's defaults). */
static megref_config_t tiny_dense(void)
{
    megref_config_t c = {0};
    c.num_layers = 2;
    c.hidden = 8;
    c.ffn_hidden = 32;
    c.num_heads = 2;
    c.num_query_groups = 2;
    c.kv_channels = 4;
    c.vocab = 16;
    c.seq_length = 4;
    return c;
}

static megref_config_t llama3_8b(void)
{
    megref_config_t c = {0};
    c.num_layers = 32;
    c.hidden = 4096;
    c.ffn_hidden = 14336;
    c.num_heads = 32;
    c.num_query_groups = 8;
    c.kv_channels = 128;
    c.vocab = 128256;
    c.seq_length = 4096;
    c.swiglu = true;
    c.group_query_attention = true;
    c.untie_embeddings = true;
    c.rmsnorm = true;
    c.disable_bias_linear = true;
    return c;
}

/* Tiny MoE + MTP: tiny_dense's attention, 4 layers, first layer dense (ffn 32), layers 1-3 MoE
   with 4 experts of width 16, top-2, one shared expert of width 8, SwiGLU, 1 MTP depth. Router
   bias on (Megatron's default add_bias_linear), no shared-expert gate. */
static megref_config_t tiny_moe(void)
{
    megref_config_t c = tiny_dense();
    c.num_layers = 4;
    c.swiglu = true;
    c.num_experts = 4;
    c.moe_router_topk = 2;
    c.moe_ffn_hidden = 16;
    c.moe_shared_expert_intermediate = 8;
    c.first_k_dense = 1;
    c.moe_every = 1;
    c.mtp_num_layers = 1;
    return c;
}

/* ---------------------------------------------------------------------------------------------- */
/* FLOPs                                                                                           */

static void test_flops_tiny_dense(void **state)
{
    (void)state;
    megref_config_t c = tiny_dense();
    /* batch 1, seq 4: the activation matrix X is 4 x 8. q = kv = 4*2 = 8.
       Per layer, forward, 2*m*n*k each:
         QKV  [4x8]x[8x24]   = 2*4*8*24 = 1536
         O    [4x8]x[8x8]    = 2*4*8*8  =  512
         QK^T 2 heads [4x4]x[4x4] = 2*(2*4*4*4) = 256, causal half = 128
         PV   2 heads [4x4]x[4x4] = 256, causal half = 128
         FC1  [4x8]x[8x32]   = 2048
         FC2  [4x32]x[32x8]  = 2048
       forward per layer = 1536+512+128+128+2048+2048 = 6400; x3 (fwd, dgrad, wgrad) = 19200;
       2 layers = 38400. Logits [4x8]x[8x16] = 1024, x3 = 3072. No embedding, norm, softmax.
       Total = 41472. */
    assert_close(megref_num_flops(&c, 1), 41472.0, EXACT);
    megref_flops_terms_t t = megref_flops_terms(&c, 4.0, 16.0);
    assert_close(t.attn_linear, 2.0 * 3.0 * (1536 + 512), EXACT); /* 12288 */
    assert_close(t.attn_core, 2.0 * 3.0 * (128 + 128), EXACT);    /* 1536 */
    assert_close(t.mlp, 2.0 * 3.0 * (2048 + 2048), EXACT);        /* 24576 */
    assert_close(t.logits, 3072.0, EXACT);
    assert_close(t.mtp_extra, 0.0, EXACT);
    /* Batch 3 is three times batch 1 (no cross-sample terms). */
    assert_close(megref_num_flops(&c, 3), 3.0 * 41472.0, EXACT);
    /* Tied or untied: same FLOPs (F5). */
    c.untie_embeddings = true;
    assert_close(megref_num_flops(&c, 1), 41472.0, EXACT);
}

static void test_flops_tiny_swiglu_gqa(void **state)
{
    (void)state;
    megref_config_t c = tiny_dense();
    c.swiglu = true;
    /* SwiGLU: gate+up [4x8]x[8x64] = 4096, down [4x32]x[32x8] = 2048: 6144 forward instead of
       4096, so +2048*3*2 layers = +12288: 41472 + 12288 = 53760. */
    assert_close(megref_num_flops(&c, 1), 53760.0, EXACT);
    /* GQA with 1 KV group: QKV becomes [4x8]x[8x(8+4+4)] = 2*4*8*16 = 1024 instead of 1536:
       -512*3*2 layers = -3072 -> 50688. The core term does not change (scales with q, F2). */
    c.group_query_attention = true;
    c.num_query_groups = 1;
    assert_close(megref_num_flops(&c, 1), 50688.0, EXACT);
    /* num_query_groups is ignored without --group-query-attention. */
    c.group_query_attention = false;
    assert_close(megref_num_flops(&c, 1), 53760.0, EXACT);
}

static void test_flops_packed(void **state)
{
    (void)state;
    megref_config_t c = tiny_dense();
    /* Two packed sequences of 3 and 1 tokens: tokens 4 (as BSHD), sum L^2 = 10 instead of 16.
       Only the core term changes: per layer 6*q*10 = 480 instead of 768, 2 layers: -576.
       41472 - 576 = 40896. */
    assert_close(megref_num_flops_packed(&c, 4.0, 10.0), 40896.0, EXACT);
}

static void test_flops_tiny_moe_mtp(void **state)
{
    (void)state;
    megref_config_t c = tiny_moe();
    /* Layers: 0 dense, 1-3 MoE; the MTP depth copies the last layer -> MoE.
       Attention layers 5, dense MLPs 1, MoE MLPs 4. Per token multiply-adds:
         attention projections 8*24 + 8*8 = 256 per layer, x5           = 1280
         dense SwiGLU MLP 3*8*32 = 768, x1                              =  768
         MoE: 2 routed experts x 3*8*16 = 768, shared 3*8*8 = 192,
              router (8x4) NOT counted: 960 per layer, x4               = 3840
         MTP norms + eh projection 3*8 + 2*8*8 = 152, x1                =  152
         logits 8*16 x (1 main + 1 MTP head)                            =  256
       sum 6296; x 6 FLOPs (2 per MAC, x3) x 4 tokens = 151104.
       Core: 6*q*s^2 = 6*8*16 = 768 per attention layer, x5 = 3840. Total 154944. */
    assert_close(megref_num_flops(&c, 1), 154944.0, EXACT);
    double dense = 0, moe = 0;
    megref_layer_counts(&c, &dense, &moe);
    assert_close(dense, 1.0, EXACT);
    assert_close(moe, 4.0, EXACT);
    megref_flops_terms_t t = megref_flops_terms(&c, 4.0, 16.0);
    assert_close(t.mtp_extra, 152.0 * 24.0, EXACT);
    assert_close(t.logits, 256.0 * 24.0, EXACT);

    /* --moe-layer-freq 2 (int form): layer i is MoE iff i % 2 == 0 -> layers 0 and 2 MoE,
       1 and 3 dense; last layer dense -> MTP depth dense. Dense MLPs 3 x 768 = 2304, MoE 2 x 960
       = 1920: per token 1280 + 2304 + 1920 + 152 + 256 = 5912, x24 = 141888; + 3840 = 145728. */
    c.first_k_dense = 0;
    c.moe_every = 2;
    assert_close(megref_num_flops(&c, 1), 145728.0, EXACT);
    /* The same as an explicit list. */
    static const bool pattern[4] = {true, false, true, false};
    c.moe_layer_pattern = pattern;
    c.moe_every = 99;
    assert_close(megref_num_flops(&c, 1), 145728.0, EXACT);
}

static void test_flops_tiny_mla(void **state)
{
    (void)state;
    megref_config_t c = tiny_dense();
    c.num_layers = 1;
    c.multi_latent_attention = true;
    c.q_lora_rank = 4;
    c.kv_lora_rank = 4;
    c.qk_head_dim = 4;
    c.qk_pos_emb_head_dim = 2;
    c.v_head_dim = 4;
    /* Per token multiply-adds, n = 2 heads:
         q down 8->4 = 32, q norm counted as 1 per rank = 4, q up 4 -> 2*(4+2) = 48       -> 84
         kv down 8->4 = 32, rope key 8->2 = 16, kv norm 4, kv up 4 -> 2*(4+4) = 64      -> 116
         o 2*4 -> 8 = 64
         MLP 2*8*32 = 512, logits 8*16 = 128
       sum 904, x 6 x 4 tokens = 21696.
       Core forward: QK^T 2 heads, dim 6: 2*16*6*2 = 384, PV dim 4: 2*16*4*2 = 256; causal half:
       320; x3 = 960. Total 22656. */
    assert_close(megref_num_flops(&c, 1), 22656.0, EXACT);
    /* Without q LoRA the q path is a single 8 -> 12 GEMM: 96 instead of 84: +12*24 = +288. */
    c.q_lora_rank = 0;
    assert_close(megref_num_flops(&c, 1), 22944.0, EXACT);
}

static void test_flops_llama3_8b(void **state)
{
    (void)state;
    megref_config_t c = llama3_8b();
    /* Per token per layer multiply-adds: QKV 4096*(4096+1024+1024) = 25165824,
       O 4096*4096 = 16777216, MLP 3*4096*14336 = 176160768: 218103808; x32 = 6979321856;
       logits 4096*128256 = 525336576; total 7504658432 MACs per token, x6 (2 FLOPs per MAC,
       x3 passes) = 45027950592 FLOPs per token, x4096 tokens = 184434485624832.
       Core: 6*q*s^2*L = 6*4096*4096^2*32 = 13194139533312. Sum 197628625158144. */
    assert_close(megref_num_flops(&c, 1), 197628625158144.0, 1e-15);
}

/* ---------------------------------------------------------------------------------------------- */
/* Parameters and weight/optimizer bytes                                                           */

static void test_params_llama3_8b(void **state)
{
    (void)state;
    megref_config_t c = llama3_8b();
    /* Per layer: attention 2*4096*4096*(1 + 8/32) = 41943040 (Q, O 4096x4096; K, V 4096x1024),
       MLP 3*4096*14336 = 176160768, two RMSNorms 2*4096 = 8192: 218112000; x32 = 6979584000;
       final norm 4096; untied embeddings 2*4096*128256 = 1050673152. Total 8030261248 — the
       published count, because Llama has no biases and Megatron counts none (W1, W2). */
    assert_close(megref_num_parameters(&c), 8030261248.0, EXACT);
    assert_close(megref_num_active_parameters(&c), 8030261248.0, EXACT);
    /* With Megatron's default LayerNorm each norm also has a bias (W3):
       + 32*2*4096 + 4096 = 266240 -> 8030527488. */
    c.rmsnorm = false;
    assert_close(megref_num_parameters(&c), 8030527488.0, EXACT);
}

static megref_config_t dense_preset(int64_t layers, int64_t hidden, int64_t ffn, int64_t heads,
                                    int64_t groups, int64_t vocab)
{
    megref_config_t c = llama3_8b();
    c.num_layers = layers;
    c.hidden = hidden;
    c.ffn_hidden = ffn;
    c.num_heads = heads;
    c.num_query_groups = groups;
    c.vocab = vocab;
    return c;
}

static void test_params_published_presets(void **state)
{
    (void)state;
    /* Published parameter counts of bias-free RMSNorm models match Megatron's count exactly.
       Llama 3 70B: per layer 2*8192*8192*(1 + 8/64) = 150994944 + 3*8192*28672 = 704643072
       + 2*8192 = 855654400; x80 = 68452352000; + 8192 + 2*8192*128256 = 2101346304:
       70553706496. */
    megref_config_t c = dense_preset(80, 8192, 28672, 64, 8, 128256);
    assert_close(megref_num_parameters(&c), 70553706496.0, EXACT);
    /* Llama 3.1 405B: per layer 2*16384^2*(1 + 8/128) = 570425344 + 3*16384*53248 = 2617245696
       + 32768 = 3187703808; x126 = 401650679808; + 16384 + 2*16384*128256 = 4202692608:
       405853388800. */
    c = dense_preset(126, 16384, 53248, 128, 8, 128256);
    assert_close(megref_num_parameters(&c), 405853388800.0, EXACT);
    /* Mistral 7B v0.3: Llama 3 8B's layers (218112000 x 32 = 6979584000) + 4096
       + 2*4096*32768 = 268435456: 7248023552. */
    c = dense_preset(32, 4096, 14336, 32, 8, 32768);
    assert_close(megref_num_parameters(&c), 7248023552.0, EXACT);
    /* Qwen2.5 7B is published as 7615616512, but it has QKV biases (3584 + 512 + 512 = 4608 per
       layer, x28 = 129024) that Megatron's count leaves out (W1): 7615487488. */
    c = dense_preset(28, 3584, 18944, 28, 4, 152064);
    assert_close(megref_num_parameters(&c), 7615616512.0 - 129024.0, EXACT);
}

static void test_params_and_bytes_tiny_dense(void **state)
{
    (void)state;
    megref_config_t c = tiny_dense();
    /* Per layer: attention 4 matrices 8x8 = 256, MLP 2*8*32 = 512, 2 LayerNorms 2*(8+8) = 32:
       800; x2 = 1600; final LayerNorm 16; tied embedding 8*16 = 128. Total 1744. */
    assert_close(megref_num_parameters(&c), 1744.0, EXACT);
    assert_close(megref_num_parameters_on_most_loaded_shard(&c, 1, 1, 1), 1744.0, EXACT);
    /* 18 bytes/param without the distributed optimizer: 1744*18 = 31392. */
    double b18 = megref_weight_and_optimizer_bytes(&c, 1, 1, 1, 1, false);
    assert_close(b18, 31392.0, EXACT);
    assert_close(b18 / 1744.0, 18.0, EXACT);
    /* DP does not change it without the distributed optimizer. */
    assert_close(megref_weight_and_optimizer_bytes(&c, 1, 1, 8, 1, false), 31392.0, EXACT);
    /* 6 + 12/DP with it: DP 4 -> 9 bytes/param = 15696; DP 1 -> 18. */
    double b9 = megref_weight_and_optimizer_bytes(&c, 1, 1, 4, 1, true);
    assert_close(b9, 15696.0, EXACT);
    assert_close(b9 / 1744.0, 6.0 + 12.0 / 4.0, EXACT);
    assert_close(megref_weight_and_optimizer_bytes(&c, 1, 1, 1, 1, true), 31392.0, EXACT);

    /* TP 2, PP 1, tied: TP-sharded (2*(256+512) + 128)/2 = 832, replicated norms 2*32 + 16 = 80:
       912. */
    assert_close(megref_num_parameters_on_most_loaded_shard(&c, 2, 1, 1), 912.0, EXACT);
    /* Untied with PP 1: the output layer is on the same stage, + 128/2 = 976 (W8). */
    c.untie_embeddings = true;
    assert_close(megref_num_parameters_on_most_loaded_shard(&c, 2, 1, 1), 976.0, EXACT);
    assert_close(megref_num_parameters(&c), 1872.0, EXACT);
    /* Untied with PP 2: stage 0 has 1 layer and only the input embedding:
       (1536/2 + 128)/2 = 448, replicated 80/2 = 40: 488. */
    assert_close(megref_num_parameters_on_most_loaded_shard(&c, 2, 2, 1), 488.0, EXACT);
    assert_close(megref_weight_and_optimizer_bytes(&c, 2, 2, 1, 1, false), 488.0 * 18.0, EXACT);
}

static void test_params_and_bytes_tiny_moe(void **state)
{
    (void)state;
    megref_config_t c = tiny_moe();
    /* Groups: attention 256; dense SwiGLU MLP 2*8*32*1.5 = 768; shared expert 2*8*8*1.5 = 192;
       routed 2*8*16*4*1.5 = 1536 (top-2 active: 768); 2 LayerNorms 32; router 8*4 + 4 bias = 36;
       final norm 16; tied embedding 128.
       Dense layer 256+768+32 = 1056; MoE layer 256+192+1536+32+36 = 2052 (active 1284).
       Main block 1056 + 3*2052 + 16 = 7228; MTP depth (MoE, no eh projection, W7) 2052;
       embedding 128. Total 9408. Active 1056 + 3*1284 + 16 + 2052 + 128 = 7104 (the MTP depth
       keeps all its experts in Megatron's "active" figure). */
    assert_close(megref_num_parameters(&c), 9408.0, EXACT);
    assert_close(megref_num_active_parameters(&c), 7104.0, EXACT);
    /* TP 2, PP 2, EP 2 (ETP = TP = 2):
         TP-sharded: block (256+768) + 3*(256+192) = 2368 -> /PP = 1184; MTP 256+192 = 448;
                     embedding 128: (1184 + 448 + 128)/2 = 880
         replicated: block 32 + 3*(32+36) + 16 = 252 -> /PP = 126; MTP 68: 194
         experts:    (3*1536/2 + 1536)/(2*2) = 960
       total 2034. */
    assert_close(megref_num_parameters_on_most_loaded_shard(&c, 2, 2, 2), 2034.0, EXACT);
    /* DP 4 -> world 16, expert DP 16/(2*2*2) = 2. Distributed optimizer:
       (880+194)*(6+12/4) + 960*(6+12/2) = 9666 + 11520 = 21186. Without: 2034*18 = 36612. */
    assert_close(megref_weight_and_optimizer_bytes(&c, 2, 2, 4, 2, true), 21186.0, EXACT);
    assert_close(megref_weight_and_optimizer_bytes(&c, 2, 2, 4, 2, false), 36612.0, EXACT);
    /* ETP 1 instead: experts /(1*2) = 1920; expert DP 16/(1*2*2) = 4:
       1074*9 + 1920*9 = 26946. */
    assert_close(megref_weight_and_optimizer_bytes_ex(&c, 2, 2, 4, 1, 2, 1, true), 26946.0, EXACT);
    /* --disable-bias-linear drops the router bias: 4 per MoE layer, 4 MoE layers: 9392. */
    c.disable_bias_linear = true;
    assert_close(megref_num_parameters(&c), 9392.0, EXACT);
}

static void test_params_tiny_mla(void **state)
{
    (void)state;
    megref_config_t c = tiny_dense();
    c.num_layers = 1;
    c.multi_latent_attention = true;
    c.q_lora_rank = 4;
    c.kv_lora_rank = 4;
    c.qk_head_dim = 4;
    c.qk_pos_emb_head_dim = 2;
    c.v_head_dim = 4;
    /* LayerNorm: the latent norms count 2 per rank (W6): q 4*(8 + 12 + 2) = 88,
       kv 4*(8 + 16 + 2) + 8*2 = 120, o 64: attention 272. MLP 512, norms 32, final 16,
       embedding 128. Total 960. */
    assert_close(megref_num_parameters(&c), 960.0, EXACT);
}

/* ---------------------------------------------------------------------------------------------- */
/* Activations                                                                                     */

static void test_activation_tiny(void **state)
{
    (void)state;
    megref_config_t c = tiny_dense();
    /* s*b*h = 4*1*8 = 32. SP formula, per layer 32*(18 + 4*32/8) = 32*34 = 1088, x2 = 2176;
       ids 8*4*1*PP; dropout 32*PP. */
    /* TP 1, PP 1: 2176 + 32 + 32 = 2240; output layer 32*4*(1 + 16/8) = 384: 2624. */
    assert_close(megref_activation_bytes(&c, 1, 1, 1, 1, 1, true), 2624.0, EXACT);
    /* TP 2, PP 2, 1 micro-batch: 2176 + 64 + 64 = 2304, x min(1, 1/2) = 1152, no output layer,
       /TP = 576. */
    assert_close(megref_activation_bytes(&c, 2, 2, 1, 1, 1, true), 576.0, EXACT);
    /* 8 micro-batches: no discount: 2304/2 = 1152; unknown count (0): the same. */
    assert_close(megref_activation_bytes(&c, 2, 2, 1, 1, 8, true), 1152.0, EXACT);
    assert_close(megref_activation_bytes(&c, 2, 2, 1, 1, 0, true), 1152.0, EXACT);
    /* Interleaved VP 2, TP 1, PP 2: 2304 x (1 + 1/(2*2)) = 2880, even with 1 micro-batch. */
    assert_close(megref_activation_bytes(&c, 1, 2, 2, 1, 1, true), 2880.0, EXACT);
    /* Micro-batch 2 doubles every term: 2*2624. */
    assert_close(megref_activation_bytes(&c, 1, 1, 1, 2, 1, true), 5248.0, EXACT);
    /* Without SP, TP 2, PP 1: per layer 32*(10 + 24/2) = 704, x2 = 1408; + 32 + 32 = 1472;
       output (4*16/2 + 32)*2 = 128: 1600; x1.05 = 1680. */
    assert_close(megref_activation_bytes(&c, 2, 1, 1, 1, 1, false), 1680.0, EXACT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flops_tiny_dense),
        cmocka_unit_test(test_flops_tiny_swiglu_gqa),
        cmocka_unit_test(test_flops_packed),
        cmocka_unit_test(test_flops_tiny_moe_mtp),
        cmocka_unit_test(test_flops_tiny_mla),
        cmocka_unit_test(test_flops_llama3_8b),
        cmocka_unit_test(test_params_llama3_8b),
        cmocka_unit_test(test_params_published_presets),
        cmocka_unit_test(test_params_and_bytes_tiny_dense),
        cmocka_unit_test(test_params_and_bytes_tiny_moe),
        cmocka_unit_test(test_params_tiny_mla),
        cmocka_unit_test(test_activation_tiny),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_serving.c — core/serving against cases worked by hand: the KV cache of five published
 * models, the bytes of the 4-bit formats, one decode step and one prefill step of a one-block
 * model on a round-number GPU, the KV pool and the requests it holds, TensorRT-LLM's
 * trtllm-bench settings, speculative decoding's tokens per step, and an offline batch of one. */
#include <math.h>
#include <string.h>

#include "serving.h"
#include "serving_internal.h"
#include "test_util.h"

/* config.json figures, as the presets carry them */
static fathom_model_t llama(int64_t hidden, int64_t ff, int64_t heads, int64_t blocks)
{
    fathom_model_t m;
    memset(&m, 0, sizeof m);
    m.hidden = hidden, m.feedforward = ff, m.seq_size = 8192, m.attn_heads = heads;
    m.kv_heads = 8, m.attn_size = 128, m.num_blocks = blocks, m.vocab_size = 128256;
    m.gated_mlp = true, m.norm = MODEL_NORM_RMSNORM, m.causal = true;
    m.position_embedding = MODEL_POS_ROPE;
    return m;
}

static fathom_model_t deepseek_v3(void)
{
    fathom_model_t m = llama(7168, 18432, 128, 61);
    m.kv_heads = 0;
    m.vocab_size = 129280;
    m.mla = (model_mla_t){true, 1536, 512, 128, 64, 128};
    m.moe = (model_moe_t){256, 8, 2048, 1, 2048, 3, 1, true, 8, 4};
    m.mtp_blocks = 1;
    return m;
}

static fathom_model_t gpt_oss_120b(void)
{
    fathom_model_t m = llama(2880, 2880, 64, 36);
    m.attn_size = 64, m.vocab_size = 201088, m.bias = true, m.qkv_bias = true;
    m.sliding_window = 128, m.full_attention_every = 2;
    m.moe = (model_moe_t){128, 4, 2880, 0, 0, 0, 1, true, 0, 0};
    return m;
}

/* KV cache per token, worked by hand (K and V: 2 values per head dimension per KV head):
 *   Llama 3.1 8B:   32 blocks · 2 · 8 heads · 128 · 2 B = 32 · 4,096 = 131,072 B (BF16)
 *   Llama 3.1 70B:  80 · 4,096 = 327,680 B;  FP8: 163,840 B
 *   Llama 3.1 405B: 126 · 4,096 = 516,096 B
 *   DeepSeek-V3 (MLA): 61 · (512 latent + 64 RoPE key) · 2 B = 61 · 1,152 = 70,272 B; FP8 35,136;
 *     with its MTP depth's cache (one block more): 62 · 1,152 = 71,424 B
 *   GPT-OSS 120B: 36 blocks, 18 of them windowed at 128 tokens, 2 · 8 · 64 · 2 B = 2,048 B a
 *     block and token: at 4,096 tokens 2,048 · (18 · 4,096 + 18 · 128) = 2,048 · 76,032 =
 *     155,713,536 B (38,016 B a token); at 100 tokens every block keeps all: 36 · 2,048 · 100 =
 *     7,372,800 B. */
static void kv_bytes(void **state)
{
    (void)state;
    const fathom_model_t l8 = llama(4096, 14336, 32, 32), l70 = llama(8192, 28672, 64, 80);
    const fathom_model_t l405 = llama(16384, 53248, 128, 126);
    assert_close(serving_kv_bytes(&l8, SERVING_DT_BF16, 1, false), 131072, 1e-15);
    assert_close(serving_kv_bytes(&l70, SERVING_DT_BF16, 1, false), 327680, 1e-15);
    assert_close(serving_kv_bytes(&l70, SERVING_DT_FP8, 1, false), 163840, 1e-15);
    assert_close(serving_kv_bytes(&l405, SERVING_DT_BF16, 1, false), 516096, 1e-15);
    assert_close(serving_kv_bytes(&l70, SERVING_DT_BF16, 2200, false) / 2200, 327680, 1e-15);
    const fathom_model_t ds = deepseek_v3();
    assert_close(serving_kv_bytes(&ds, SERVING_DT_BF16, 1, false), 70272, 1e-15);
    assert_close(serving_kv_bytes(&ds, SERVING_DT_FP8, 1, false), 35136, 1e-15);
    assert_close(serving_kv_bytes(&ds, SERVING_DT_BF16, 1, true), 71424, 1e-15);
    const fathom_model_t oss = gpt_oss_120b();
    assert_close(serving_kv_bytes(&oss, SERVING_DT_BF16, 4096, false), 155713536, 1e-15);
    assert_close(serving_kv_bytes(&oss, SERVING_DT_BF16, 4096, false) / 4096, 38016, 1e-15);
    assert_close(serving_kv_bytes(&oss, SERVING_DT_BF16, 100, false), 7372800, 1e-15);
}

/* NVFP4: 4-bit values and one 1-byte scale per 16: 0.5 + 0.0625 = 0.5625 B; AWQ int4 with a
 * 2-byte scale per 128: 0.5 + 0.015625 = 0.515625 B. */
static void formats(void **state)
{
    (void)state;
    assert_close(serving_dtype_bytes(SERVING_DT_BF16), 2, 0);
    assert_close(serving_dtype_bytes(SERVING_DT_FP8), 1, 0);
    assert_close(serving_dtype_bytes(SERVING_DT_FP4), 0.5625, 0);
    assert_close(serving_dtype_bytes(SERVING_DT_INT4), 0.515625, 0);
}

/* A round-number GPU: 100 TFLOP/s BF16 at efficiency 1, 1,000 GB/s, attention at 0.5. */
static serving_system_t round_gpu(double gib)
{
    serving_system_t s;
    memset(&s, 0, sizeof s);
    llm_rate_t r = {true, 100, {1, {{0, 1.0}}}};
    s.hw.matrix.rate[LLM_DT_BFLOAT16] = r;
    s.hw.matrix.rate[LLM_DT_FLOAT16] = r;
    r.tflops = 10;
    s.hw.vector.rate[LLM_DT_BFLOAT16] = r;
    s.hw.vector.rate[LLM_DT_FLOAT16] = r;
    s.hw.mem1 = (llm_memory_t){gib, 1000, {1, {{0, 1.0}}}};
    s.hw.mem2 = (llm_memory_t){64, 64, {1, {{0, 1.0}}}};
    s.hw.num_networks = 1;
    s.hw.networks[0] = (llm_network_t){.bandwidth_gbps = 100,
                                       .efficiency = 1,
                                       .size = 8,
                                       .latency_s = 0,
                                       .ops = {{1, 0}, {1, 0}, {1, 0}, {1, 0}},
                                       .must_be_filled = false,
                                       .processor_usage = 0};
    s.hw.attention_efficiency = 0.5;
    return s;
}

/* One block: h 1,024, MLP 4,096 (not gated), 8 heads of 128 (no GQA), no biases, no vocabulary. */
static fathom_model_t one_block(void)
{
    fathom_model_t m = llama(1024, 4096, 8, 1);
    m.kv_heads = 8, m.vocab_size = 0, m.gated_mlp = false;
    return m;
}

static serving_request_t request(serving_engine_t engine)
{
    serving_request_t r;
    memset(&r, 0, sizeof r);
    r.layout = (serving_layout_t){1, 1, 1, 1};
    r.weights = r.kv = SERVING_DT_BF16;
    r.input_tokens = 1000, r.output_tokens = 2048;
    r.engine = engine;
    r.chunked_prefill = -1;
    return r;
}

/* The case most tests below start from: the one-block model on the 16 GiB round GPU under one
 * engine, and a step context over the three. Each test changes what it is about, then steps or
 * estimates. */
typedef struct {
    fathom_model_t m;
    serving_system_t s;
    serving_request_t r;
    sv_ctx_t c;
} block_case_t;

static block_case_t block_case(serving_engine_t engine)
{
    block_case_t t;
    memset(&t, 0, sizeof t);
    t.m = one_block();
    t.s = round_gpu(16);
    t.r = request(engine);
    return t;
}

/* Sets up the case's context from what the test has changed so far and takes one step of
 * load ld. The context points at t->m, t->s and t->r, so a later change to them reaches a
 * serving__step on t->c without setting it up again. */
static serving_step_t step(block_case_t *t, sv_load_t ld)
{
    assert_int_equal(serving__ctx_init(&t->c, &t->m, &t->s, &t->r, &t->r.layout, NULL), 0);
    serving_step_t st;
    serving__step(&t->c, &ld, &st);
    return st;
}

/* The case's estimate into *o, which must succeed. */
static void estimate_ok(const block_case_t *t, serving_result_t *o)
{
    fathom_error_t err;
    assert_int_equal(serving_estimate(&t->m, &t->s, &t->r, o, &err), 0);
}

/* Decode step, 4 sequences at 1,000 tokens of context, BF16, one GPU (serving_step.c's factors:
 * GEMM compute × 0.83 × 0.86 = 0.7138, weights streamed at 0.645, KV at 0.92 + 21 µs, passes
 * at 0.85):
 *   projections  A = 1024·(1024 + 2·1024) + 1024·1024 = 4,194,304 params: 8,388,608 B of weight
 *                + 4·2·1024·2 = 16,384 B of activations → 8,404,992 / 6.45e11 = 13.0310 µs
 *                (compute: 2·4·A = 33.55 MFLOP / 71.38 TFLOP/s = 0.47 µs: memory-bound)
 *   attention    KV 4·(2·8·128·2)·1,000 = 16,384,000 B → 21 µs + 16.384e6 / 9.2e11 = 38.8087 µs
 *                (FLOPs 4·8·512·1,000 = 16.4 M / 43 TFLOP/s = 0.38 µs)
 *   MLP          2·1024·4096 = 8,388,608 params: 16,777,216 + 4·5,120·2 = 16,818,176 B
 *                → 26.0747 µs
 *   passes       4·(6·1024 + 3·4096)·2 = 147,456 B / 8.5e11 = 0.1735 µs
 *   GPU          78.0879 µs
 *   host (TensorRT-LLM, overlapped): 20 kernels replayed from a graph, 20 µs more GPU time;
 *                the loop 0.5 ms + 4 requests · 45.11 ms/1,536 (29.36849 µs) = 617.47396 µs >
 *                98.0879 µs: the step takes 617.47396 µs and is host-bound; vLLM (async
 *                scheduling) the same.
 *   Two such blocks over two pipeline stages (vLLM runs them without async scheduling): the
 *                stage's GPU 78.0879 µs plus the hand-off of 4·1024·2 = 8,192 B at 100 GB/s
 *                (81.92 ns), 20 µs of graph replay, then the host's 617.47396 µs in turn:
 *                78.16982 + 20 + 617.47396 = 715.64378 µs. */
static void decode_step(void **state)
{
    (void)state;
    block_case_t t = block_case(SERVING_ENGINE_TRTLLM);
    const sv_load_t ld = {4, 1, 1000, 0, 0, 0, 0};
    serving_step_t st = step(&t, ld);
    assert_close(st.gemm_s, 13.0310e-6 + 26.0747e-6, 1e-5);
    assert_close(st.kv_read_s, 38.8087e-6, 1e-5);
    assert_close(st.attention_s, 38.8087e-6, 1e-5);
    assert_close(st.elementwise_s, 0.1735e-6, 1e-3);
    assert_close(st.total_s, 617.47396e-6, 1e-7);
    assert_int_equal(st.bound, SERVING_BOUND_HOST);
    t.r.engine = SERVING_ENGINE_VLLM;
    st = step(&t, ld);
    assert_close(st.total_s, 617.47396e-6, 1e-7);
    t.m.num_blocks = 2; /* two such blocks */
    t.r.layout.pipeline_par = 2;
    st = step(&t, ld);
    assert_close(st.total_s, 715.64378e-6, 1e-6);
}

/* The host on a Grace CPU (the GB200 presets: 18.2 µs an eager launch; a replayed kernel costs
 * the GPU its 1.0 µs, whatever the host), the decode step above (GPU 78.0879 µs, 20 kernels):
 *   TensorRT-LLM: GPU 78.0879 + 20·1.0 = 98.0879 µs; the loop's 617.47396 µs is not scaled
 *     (only launches are): the step is 617.47396 µs;
 *   its C++ executor: t_seq = 0.044·29.36849 = 1.292214 µs: 500 + 4·1.292214 = 505.16886 µs;
 *   a prompt step (eager, 1 sequence) against 100 µs of GPU: 500 + 29.36849 + 20·18.2 =
 *     893.36849 µs, 793.36849 µs beyond the GPU; on the x86 host (6.62 µs a launch) 500 +
 *     29.36849 + 132.4 = 661.76849 µs, 561.76849 µs beyond. */
static void grace_host(void **state)
{
    (void)state;
    block_case_t t = block_case(SERVING_ENGINE_TRTLLM);
    t.s.hw.host_launch_s = 18.2e-6, t.s.hw.graph_launch_s = 1.0e-6;
    const sv_load_t ld = {4, 1, 1000, 0, 0, 0, 0};
    serving_step_t st = step(&t, ld);
    assert_close(st.total_s, 617.47396e-6, 1e-7);
    t.r.cpp_executor = true; /* read through the context, as the host model reads it */
    serving__step(&t.c, &ld, &st);
    assert_close(st.total_s, 505.16886e-6, 1e-7);
    t.r.cpp_executor = false;
    const sv_load_t pre = {0, 1, 0, 64, 32.5, 0, 1};
    assert_close(serving__host_s(&t.c, &pre, 100e-6), 793.36849e-6, 1e-7);
    t.s.hw.host_launch_s = 6.62e-6;
    assert_close(serving__host_s(&t.c, &pre, 100e-6), 561.76849e-6, 1e-7);
}

/* A system that measured its decode attention (decode_attention_efficiency 0.5): the decode
 * step's KV, 16,384,000 B, reads in 21 + 16.384e6/(1e12·0.5) = 21 + 32.768 = 53.768 µs. */
static void decode_attention_share(void **state)
{
    (void)state;
    block_case_t t = block_case(SERVING_ENGINE_TRTLLM);
    t.s.decode_attention_efficiency = 0.5;
    const serving_step_t st = step(&t, (sv_load_t){4, 1, 1000, 0, 0, 0, 0});
    assert_close(st.kv_read_s, 53.768e-6, 1e-9);
}

/* Prefill step of one 2,048-token prompt (no decode): the GEMMs are compute-bound.
 *   projections  F = 2·2048·4,194,304 = 17,179,869,184 FLOP / 71.38e12 = 240.682 µs
 *                (memory 8,388,608 + 2048·4096 = 16,777,216 B / 6.45e11 = 26.0 µs)
 *   MLP          F = 2·2048·8,388,608 = 34,359,738,368 / 71.38e12 = 481.364 µs
 *   attention    mean keys (2048 + 1)/2 = 1024.5: F = 2048·8·512·1024.5 = 8,594,128,896
 *                / (100e12·0.5·0.86) = 199.8635 µs (KV 2048·4096 = 8,388,608 B / 9.2e11 =
 *                9.1 µs)
 *   passes       2048·18,432·2 = 75,497,472 B / 8.5e11 = 88.8206 µs
 *   GPU          1,010.730 µs, and the 20 kernels' dispatch on the GPU, 20 · 1.0 µs (as
 *                replayed from a graph: serving__host_s): 1,030.730 µs; host: eager launch
 *                20·6.62 µs = 132.4 µs, the scheduler's 0.5 ms and one request's 29.37 µs:
 *                661.77 µs < GPU, hidden: 1,030.730 µs, compute-bound. */
static void prefill_step(void **state)
{
    (void)state;
    block_case_t t = block_case(SERVING_ENGINE_TRTLLM);
    const serving_step_t st = step(&t, (sv_load_t){0, 1, 0, 2048, 1024.5, 0, 1});
    assert_close(st.gemm_s, 240.682e-6 + 481.364e-6, 1e-5);
    assert_close(st.attention_s, 199.8635e-6, 1e-5);
    assert_close(st.elementwise_s, 88.8206e-6, 1e-5);
    assert_close(st.total_s, 1030.730e-6, 1e-5);
    assert_int_equal(st.bound, SERVING_BOUND_COMPUTE);
}

/* An eager step whose host keeps ahead of the GPU still pays each kernel's dispatch on the GPU,
 * as a replayed graph does (the block case: 20 kernels, 1.0 µs a replayed kernel, 6.62 µs an
 * eager launch), so adding a prompt to a decode batch never shortens its step. Against 1 ms of
 * GPU work, overlapped (TensorRT-LLM):
 *   decode, replayed: max(1,000 + 20·1.0, 500 + 4·29.36849) = 1,020 µs: 20 µs beyond the GPU;
 *   decode + a prompt, eager: host 500 + 5·29.36849 + 20·6.62 = 779.24245 µs; the GPU's
 *     1,000 + 20 = 1,020 µs: 20 µs beyond (it was 0: the eager step came out 20 µs shorter);
 *   in turn (vLLM with two stages), eager: 1,000 + 779.24245 µs, the dispatch inside the
 *     launches' 6.62 µs each: 779.24245 µs beyond; replayed: 20 + 500 + 117.47396 = 637.47396. */
static void eager_dispatch(void **state)
{
    (void)state;
    block_case_t t = block_case(SERVING_ENGINE_TRTLLM);
    (void)step(&t, (sv_load_t){4, 1, 1000, 0, 0, 0, 0});
    const sv_load_t dec = {4, 1, 1000, 0, 0, 0, 0}, mixed = {4, 1, 1000, 64, 32.5, 0, 1};
    assert_close(serving__host_s(&t.c, &dec, 1000e-6), 20e-6, 1e-9);
    assert_close(serving__host_s(&t.c, &mixed, 1000e-6), 20e-6, 1e-9);
    t.r.engine = SERVING_ENGINE_VLLM;
    t.m.num_blocks = 2;
    t.r.layout.pipeline_par = 2;
    (void)step(&t, dec);
    assert_close(serving__host_s(&t.c, &mixed, 1000e-6), 779.24245e-6, 1e-7);
    assert_close(serving__host_s(&t.c, &dec, 1000e-6), 637.47396e-6, 1e-7);
}

/* The routed experts of one MoE block (h 256, 4 experts of width 256, not gated, top 2), two
 * decode sequences on one GPU:
 *   an expert has 2·256·256 = 131,072 parameters; T_all = 2 tokens pick 2 of 4 each, so an
 *   expert is touched with probability 1 − (1 − 2/4)² = 0.75: weights read 4·0.75·131,072·2 B
 *   = 786,432 B, the rows in and out 4·2·256·2 = 4,096 B → 790,528 B / 7.3e11 = 1.0829 µs;
 *   the grouped GEMMs (llm_grouped_gemm_shape): rows 2·2 = 4 over the 4·0.75 = 3 experts
 *   touched, M = 4/3 a touched expert (a grouped GEMM computes no tile of an expert without
 *   rows); up (K 256, N 256) and down (K 256, N 256) each 2·4·256·256 = 524,288 FLOP at a
 *   shape factor (4/3)/(4/3 + 160) · 256/416 · 256/288 = 0.0045207318, at 100 TFLOP/s · top 1
 *   · 0.86: 524,288 / (86e12 · 0.0045207318) = 1.3485366 µs each; with 30 µs a call,
 *   2·1.3485366 + 60 = 62.697073 µs — the grouped GEMMs are compute-bound on their fixed cost;
 *   passes: 2·(6·256 + 3·(2·256))·2 = 12,288 B, plus the gather and scatter of R = 2·2 = 4 rows
 *   (4 + 2)·256·2·2 = 6,144 B: 18,432 B / 8.5e11 = 21.685 ns.
 * One sequence: its token touches 2 experts with one row each (p = 1 − (1 − 2/4) = 0.5, M =
 *   2/(4·0.5) = 1, where the rows over all 4 experts would be 0.5): each GEMM 2·2·256·256 =
 *   262,144 FLOP at 1/161 · 256/416 · 256/288 = 0.0033975684, 0.8971669 µs; 2·0.8971669 + 60
 *   = 61.794334 µs. */
static void moe_step(void **state)
{
    (void)state;
    block_case_t t = block_case(SERVING_ENGINE_TRTLLM);
    t.m.hidden = 256, t.m.feedforward = 256, t.m.attn_heads = 2, t.m.kv_heads = 2;
    t.m.moe = (model_moe_t){4, 2, 256, 0, 0, 0, 1, false, 0, 0};
    serving_step_t st = step(&t, (sv_load_t){2, 1, 10, 0, 0, 0, 0});
    assert_close(st.moe_experts_s, 62.697073e-6, 1e-6);
    assert_close(st.elementwise_s, 21.685e-9, 1e-4);
    st = step(&t, (sv_load_t){1, 1, 10, 0, 0, 0, 0});
    assert_close(st.moe_experts_s, 61.794334e-6, 1e-6);
}

/* gpt-oss's MXFP4 checkpoint on the moe_step block (h 256, 4 experts of 256, not gated, top 2):
 *   weights: attention 262,144, norms 512 and router 1,024 in BF16, the experts 4·131,072 =
 *   524,288 in MXFP4 (0.5 + 1/32 B): 263,680·2 + 524,288·0.53125 = 527,360 + 278,528
 *   = 805,888 B (BF16 throughout: 788,224 − 256 final norm = 787,968 values · 2 = 1,575,936 B);
 *   on a GPU without FP8 or FP4 rates (Hopper's W4A16) the experts run at the 16-bit rate:
 *   62.697073 µs as moe_step, passes 18,432 B as there (no input quantization);
 *   on one with FP8 at 200 and FP4 at 400 TFLOP/s (Blackwell's MXFP8 x MXFP4, the FP8 rate):
 *   each grouped GEMM 524,288 / (200e12 · 0.86 · 0.0045207318) = 0.6742683 µs, 2·0.6742683
 *   + 60 = 61.348537 µs; passes 18,432 B + the MXFP8 input R·(h + f)·(2 + 1.03125)
 *   = 4·512·3.03125 = 6,208 B: 24,640 B / 8.5e11 = 28.988 ns. */
static void mxfp4_experts(void **state)
{
    (void)state;
    block_case_t t = block_case(SERVING_ENGINE_TRTLLM);
    t.m.hidden = 256, t.m.feedforward = 256, t.m.attn_heads = 2, t.m.kv_heads = 2;
    t.m.moe = (model_moe_t){4, 2, 256, 0, 0, 0, 1, false, 0, 0};
    assert_close(serving_dtype_bytes(SERVING_DT_MXFP4), 0.53125, 0);
    t.r.concurrency = 1;
    serving_result_t o;
    estimate_ok(&t, &o);
    assert_close(o.weight_bytes, 1575936, 1e-15);
    t.r.weights = SERVING_DT_MXFP4;
    estimate_ok(&t, &o);
    assert_close(o.weight_bytes, 805888, 1e-15);
    assert_false(o.warnings & SERVING_WARN_NO_FP4_RATE);
    const sv_load_t ld = {2, 1, 10, 0, 0, 0, 0};
    serving_step_t st = step(&t, ld);
    assert_close(st.moe_experts_s, 62.697073e-6, 1e-6);
    assert_close(st.elementwise_s, 21.685e-9, 1e-4);
    llm_rate_t r8 = {true, 200, {1, {{0, 1.0}}}};
    t.s.hw.matrix.rate[LLM_DT_FLOAT8] = r8;
    t.s.fp4_tflops = 400;
    st = step(&t, ld);
    assert_close(st.moe_experts_s, 61.348537e-6, 1e-6);
    assert_close(st.elementwise_s, 28.988e-9, 1e-4);
}

/* FP4 weights and the system's float4_efficiency e4 (serving_memory.c's gemm_rate): the
 * prefill step of prefill_step (2,048 tokens) on a GPU with FP8 at 200 TFLOP/s on a flat curve
 * (efficiency 1) and FP4 at 400 TFLOP/s. Its GEMMs are compute-bound:
 *   F = 2·2048·(4,194,304 + 8,388,608) = 51,539,607,552 FLOP;
 *   e4 absent (1): 400e12 · 1 · 0.83 · 0.86 = 285.52 TFLOP/s → 180.51137 µs
 *     (the MLP's memory side: 8,388,608 · 0.5625 = 4,718,592 B of weights and
 *     2048·5,120·2 = 20,971,520 B of activations, 39.8 µs at 6.45e11 B/s, below its
 *     34,359,738,368 / 285.52e12 = 120.34 µs);
 *   e4 = 0.5: 142.76 TFLOP/s → 361.02274 µs. */
static void fp4_efficiency(void **state)
{
    (void)state;
    block_case_t t = block_case(SERVING_ENGINE_TRTLLM);
    llm_rate_t r8 = {true, 200, {1, {{0, 1.0}}}};
    t.s.hw.matrix.rate[LLM_DT_FLOAT8] = r8;
    t.s.fp4_tflops = 400;
    t.r.weights = SERVING_DT_FP4;
    const sv_load_t pre = {0, 1, 0, 2048, 1024.5, 0, 1};
    serving_step_t st = step(&t, pre);
    assert_close(st.gemm_s, 180.51137e-6, 1e-6);
    t.s.fp4_efficiency = 0.5;
    st = step(&t, pre);
    assert_close(st.gemm_s, 361.02274e-6, 1e-6);
}

/* A tensor-parallel all-reduce over 4 GPUs of the round GPU's tier (100 GB/s, efficiency 1, no
 * latency of its own), NCCL's ring with 2·3 = 6 steps:
 *   1 MB over NVLink (ops [1, 0]: 10 µs of bytes): LL 6.6 + 6·0.6 = 10.2 µs + 4·10 = 50.2 µs;
 *     LL128 14 + 6·1.9 = 25.4 µs + 10/0.92 = 36.269565 µs; Simple 8.4 + 6·3.4 = 28.8 + 10
 *     = 38.8 µs → LL128, 36.269565 µs;
 *   10 kB: LL 10.2 + 0.4 = 10.6 µs; LL128 25.5087; Simple 28.9 → LL, 10.6 µs;
 *   1 MB on a PCIe ring (link pcie, ops [2, −1]: 2·1 MB − 0.5 MB = 1.5 MB, 15 µs): LL 6.6 +
 *     6·1.0 = 12.6 + 60 = 72.6 µs; Simple 8.4 + 6·5.7 = 42.6 + 15 = 57.6 µs (no LL128) → 57.6 µs;
 *   the same ring with no link named: tier 0 is NVLink by position (the A100's ring through its
 *     NVSwitch): LL 6.6 + 3.6 + 60 = 70.2; LL128 25.4 + 15/0.92 = 41.704348; Simple 28.8 + 15
 *     = 43.8 → LL128, 41.704348 µs. */
static void tp_all_reduce(void **state)
{
    (void)state;
    const fathom_model_t m = one_block();
    serving_system_t s = round_gpu(16);
    serving_request_t r = request(SERVING_ENGINE_TRTLLM);
    r.layout.tensor_par = 4;
    sv_ctx_t c;
    assert_int_equal(serving__ctx_init(&c, &m, &s, &r, &r.layout, NULL), 0);
    assert_close(serving__tp_all_reduce_s(&c, 1e6), 36.269565e-6, 1e-6);
    assert_close(serving__tp_all_reduce_s(&c, 1e4), 10.6e-6, 1e-9);
    s.hw.networks[0].ops[LLM_OP_ALL_REDUCE] = (llm_net_op_cost_t){2, -1};
    s.hw.networks[0].link = LLM_LINK_PCIE;
    assert_int_equal(serving__ctx_init(&c, &m, &s, &r, &r.layout, NULL), 0);
    assert_close(serving__tp_all_reduce_s(&c, 1e6), 57.6e-6, 1e-9);
    s.hw.networks[0].link = LLM_LINK_AUTO;
    assert_int_equal(serving__ctx_init(&c, &m, &s, &r, &r.layout, NULL), 0);
    assert_close(serving__tp_all_reduce_s(&c, 1e6), 41.704348e-6, 1e-8);
}

/* The MoE block of moe_exchange and moe_workspace: h 256, 4 experts of 256, top 2, served by
 * TensorRT-LLM with attention DP 4 and EP 4 on the round GPU, its context built. */
typedef struct {
    fathom_model_t m;
    serving_system_t s;
    serving_request_t r;
    sv_ctx_t c;
} moe_dep4_t;

/* (Re)builds k->c from the model, system and request as they stand. */
static void moe_dep4_ctx(moe_dep4_t *k)
{
    assert_int_equal(serving__ctx_init(&k->c, &k->m, &k->s, &k->r, &k->r.layout, NULL), 0);
}

static void moe_dep4(moe_dep4_t *k)
{
    k->m = one_block();
    k->m.hidden = 256, k->m.feedforward = 256, k->m.attn_heads = 2, k->m.kv_heads = 2;
    k->m.moe = (model_moe_t){4, 2, 256, 0, 0, 0, 1, false, 0, 0};
    k->s = round_gpu(16);
    k->r = request(SERVING_ENGINE_TRTLLM);
    k->r.layout = (serving_layout_t){1, 1, 4, 4};
    moe_dep4_ctx(k);
}

/* The MoE exchange with attention DP (serving__moe_exchange_s) on the round GPU's tier
 * (100 GB/s, efficiency 1, no latency): h = 256, top_k 2, BF16 (a = 2 bytes a value), attention
 * DP 4 with EP 4 (G = 4), T = 10 tokens a rank:
 *   TensorRT-LLM: R = 4·10 = 40 rows; all-gather 40·(256·2 + 2·8) = 40·528 = 21,120 B, reduce-
 *     scatter 40·256·2 = 20,480 B; ops [1, 0]: 211.2 + 204.8 = 416.0 ns; on a ring (ops
 *     [1, −1], 3/4 of each): 158.4 + 153.6 = 312.0 ns;
 *   vLLM: an all-to-all of 10·2·256 = 5,120 values at 2 bytes each way, 3/4 of it leaving the
 *     GPU: 2 · 10,240 · 0.75 / 100 GB/s = 153.6 ns. */
static void moe_exchange(void **state)
{
    (void)state;
    moe_dep4_t k;
    moe_dep4(&k);
    assert_close(serving__moe_exchange_s(&k.c, 10), 416.0e-9, 1e-9);
    k.s.hw.networks[0].ops[LLM_OP_ALL_GATHER] = (llm_net_op_cost_t){1, -1};
    k.s.hw.networks[0].ops[LLM_OP_REDUCE_SCATTER] = (llm_net_op_cost_t){1, -1};
    moe_dep4_ctx(&k);
    assert_close(serving__moe_exchange_s(&k.c, 10), 312.0e-9, 1e-9);
    k.r.engine = SERVING_ENGINE_VLLM;
    moe_dep4_ctx(&k);
    assert_close(serving__moe_exchange_s(&k.c, 10), 153.6e-9, 1e-9);
}

/* Working memory of an MoE model under attention data parallelism (the moe_exchange block:
 * h 256, dense MLP 256, 4 experts of 256, top 2; tp 1, ep 4, dp 4, so etp = 1), a step of
 * T = 1,000 tokens a rank, no vocabulary:
 *   dense part   1,000·(4·256 + 3·256)·2 = 3,584,000 B;
 *   experts      f_e = 2·256 = 512; TensorRT-LLM runs every rank's tokens at once, 4,000 rows:
 *                4,000·(4·256 + 3·512)·2 = 20,480,000 B; with the 2 GiB reserve
 *                20,480,000 + 2,147,483,648 = 2,167,963,648 B;
 *   vLLM (an all-to-all: the rank's own 1,000 rows) 5,120,000 + 2,147,483,648
 *                = 2,152,603,648 B. */
static void moe_workspace(void **state)
{
    (void)state;
    moe_dep4_t k;
    moe_dep4(&k);
    assert_close(serving__workspace_bytes(&k.c, 1000, 64), 2167963648.0, 1e-15);
    k.r.engine = SERVING_ENGINE_VLLM;
    moe_dep4_ctx(&k);
    assert_close(serving__workspace_bytes(&k.c, 1000, 64), 2152603648.0, 1e-15);
}

/* Chunked local attention (model.chunked_attention, Llama 4) in the KV cache
 * (serving__kv_window, serving__kv_request_bytes): 4 blocks of h 1,024, 8 KV heads of 128, BF16
 * KV, windowed blocks of 100 tokens with every 4th block full, one GPU; a block keeps
 * 2·8·128·2 = 4,096 B a token. A request of 1,000 tokens of context:
 *   a sliding window, any engine: 3 blocks · 100 + 1 block · 1,000 = 1,300 block-tokens
 *     · 4,096 B = 5,324,800 B;
 *   chunked under vLLM: the same 5,324,800 B (past chunks freed);
 *   chunked under TensorRT-LLM: every block keeps the whole context, 4 · 1,000 = 4,000
 *     block-tokens · 4,096 B = 16,384,000 B; its kv window is infinite. */
static void chunked_attention_kv(void **state)
{
    (void)state;
    fathom_model_t m = llama(1024, 4096, 8, 4);
    m.vocab_size = 0, m.sliding_window = 100, m.full_attention_every = 4;
    serving_system_t s = round_gpu(16);
    serving_request_t r = request(SERVING_ENGINE_TRTLLM);
    sv_ctx_t c;
    assert_int_equal(serving__ctx_init(&c, &m, &s, &r, &r.layout, NULL), 0);
    assert_close(serving__kv_request_bytes(&c, &c.stages[0], 1000), 5324800.0, 1e-12);
    m.chunked_attention = true;
    assert_int_equal(serving__ctx_init(&c, &m, &s, &r, &r.layout, NULL), 0);
    assert_close(serving__kv_request_bytes(&c, &c.stages[0], 1000), 16384000.0, 1e-12);
    assert_true(isinf(serving__kv_window(&m, SERVING_ENGINE_TRTLLM)));
    r.engine = SERVING_ENGINE_VLLM;
    assert_int_equal(serving__ctx_init(&c, &m, &s, &r, &r.layout, NULL), 0);
    assert_close(serving__kv_request_bytes(&c, &c.stages[0], 1000), 5324800.0, 1e-12);
    assert_close(serving__kv_window(&m, SERVING_ENGINE_VLLM), 100.0, 1e-15);
}

/* The KV pool and the requests it holds (TensorRT-LLM, 16 GiB, max_batch_tokens 65,536):
 *   weights     (4,194,304 + 8,388,608 + 2 norms of 1,024)·2 B = 25,169,920 B
 *   workspace   65,536·(4·1024 + 3·4096)·2 + 2 GiB = 2,147,483,648 + 2,147,483,648
 *               = 4,294,967,296 B
 *   pool        0.9·(17,179,869,184 − 25,169,920 − 4,294,967,296) = 11,573,758,771.2 B
 *   a request   1,000 + 2,048 = 3,048 tokens, reserved in blocks of 32: 3,072 · 4,096 B
 *               = 12,582,912 B → 919 requests (919.8)
 * the token budget allows 65,536·2,048/(2,047 + 1,000) = 44,049; max_batch_size 4,096. */
static void concurrency(void **state)
{
    (void)state;
    const fathom_model_t m = one_block();
    const serving_system_t s = round_gpu(16);
    serving_request_t r = request(SERVING_ENGINE_TRTLLM);
    r.max_batch_tokens = 65536, r.max_batch_size = 4096, r.concurrency = 1;
    serving_result_t o;
    fathom_error_t err;
    assert_int_equal(serving_estimate(&m, &s, &r, &o, &err), 0);
    assert_close(o.weight_bytes, 25169920, 1e-15);
    assert_close(o.workspace_bytes, 4294967296.0, 1e-15);
    assert_close(o.kv_capacity_bytes, 11573758771.2, 1e-12);
    assert_close(o.kv_cache_bytes_per_token, 4096, 1e-15);
    assert_close(o.max_concurrency, 919, 0);
    assert_true(o.fits_memory);
    r.max_batch_size = 512; /* the batch cap binds */
    assert_int_equal(serving_estimate(&m, &s, &r, &o, &err), 0);
    assert_close(o.max_concurrency, 512, 0);
}

/* trtllm-bench for Llama 3.1 70B FP8 (FP8 KV) on two 140 GiB GPUs, 1,024/1,024 tokens:
 *   engine 70,553,706,496 params · 1 B / 2^30 = 65.7084 GiB; pool (280 − 65.7084)·0.95
 *   = 203.5770 GiB; a token 2·80·max(2, 8)·128·1 B = 163,840 B = 1.52588e-4 GiB, a request of
 *   2,048 tokens 0.3125 GiB → 651.45 requests; batch 128·ceil(651.45/128) = 768; tokens
 *   min(651.45·2, 32,768) = 1,302.9 → at least 2,048; and at least 1,024 + 768: 2,048. */
static void trtllm_bench(void **state)
{
    (void)state;
    const fathom_model_t m = llama(8192, 28672, 64, 80);
    model_params_t p;
    model_parameters(&m, &p);
    assert_close(p.total, 70553706496.0, 1e-15);
    serving_system_t s = round_gpu(140);
    serving_request_t r = request(SERVING_ENGINE_TRTLLM);
    r.layout.tensor_par = 2;
    r.weights = r.kv = SERVING_DT_FP8;
    r.input_tokens = r.output_tokens = 1024;
    int64_t bs = 0, tok = 0;
    serving_trtllm_bench_settings(&m, &s, &r, SERVING_CKPT_MODELOPT, &bs, &tok);
    assert_int_equal(bs, 768);
    assert_int_equal(tok, 2048);
    /* 8,192/1,024: 1 + 8 tokens per output: min(651.45·... ) — a request of 9,216 tokens holds
     * 1.40625 GiB: 144.77 requests → batch max(64, 32·ceil(4.52)) = 160; tokens 144.77·9 =
     * 1,302.9 → 2,048, and at least 8,192 + 160 = 8,352 */
    r.input_tokens = 8192;
    serving_trtllm_bench_settings(&m, &s, &r, SERVING_CKPT_MODELOPT, &bs, &tok);
    assert_int_equal(bs, 160);
    assert_int_equal(tok, 8352);
}

/* The engine size trtllm-bench reads from a checkpoint (serving__checkpoint_bytes), by hand:
 *   Llama 3.1 70B, ModelOpt NVFP4: block linears 80·(150,994,944 + 704,643,072) =
 *     68,451,041,280 of 70,553,706,496; elements 2,102,665,216 + 68,451,041,280·0.5625 =
 *     40,606,375,936, at 0.5 B: 20,303,187,968 B (18.9088 GiB). On two 140 GiB GPUs (FP8 KV,
 *     1,024/1,024): pool (280 − 18.9088)·0.95 = 248.0366 GiB / 0.3125 GiB = 793.72 requests →
 *     batch 128·7 = 896; tokens 1,587.4 → 2,048 (≥ 1,024 + 896).
 *   The MoE block of moe_step (h 256, 4 experts of 256, not gated): attention 256·768 + 256·256
 *     = 262,144, norms 512, router 1,024, experts 4·131,072 = 524,288, final norm 256: total
 *     788,224. ModelOpt NVFP4: q = 262,144 + 1,024 + 524,288 = 787,456; (768 + 787,456·0.5625)
 *     ·0.5 = 221,856 B. OpenAI's MXFP4 experts: (263,936 + 524,288·(1/2 + 1/32))·2 =
 *     (263,936 + 278,528)·2 = 1,084,928 B. */
static void checkpoint(void **state)
{
    (void)state;
    const fathom_model_t l70 = llama(8192, 28672, 64, 80);
    assert_close(serving__checkpoint_bytes(&l70, SERVING_DT_FP4, SERVING_CKPT_MODELOPT),
                 20303187968.0, 1e-15);
    serving_system_t s = round_gpu(140);
    serving_request_t r = request(SERVING_ENGINE_TRTLLM);
    r.layout.tensor_par = 2;
    r.weights = SERVING_DT_FP4, r.kv = SERVING_DT_FP8;
    r.input_tokens = r.output_tokens = 1024;
    int64_t bs = 0, tok = 0;
    serving_trtllm_bench_settings(&l70, &s, &r, SERVING_CKPT_MODELOPT, &bs, &tok);
    assert_int_equal(bs, 896);
    assert_int_equal(tok, 2048);
    fathom_model_t m = one_block();
    m.hidden = 256, m.feedforward = 256, m.attn_heads = 2, m.kv_heads = 2;
    m.moe = (model_moe_t){4, 2, 256, 0, 0, 0, 1, false, 0, 0};
    assert_close(serving__checkpoint_bytes(&m, SERVING_DT_FP4, SERVING_CKPT_MODELOPT), 221856,
                 1e-15);
    assert_close(serving__checkpoint_bytes(&m, SERVING_DT_FP4, SERVING_CKPT_MXFP4_EXPERTS),
                 1084928, 1e-15);
}

/* trtllm-bench for an MLA model reads num_key_value_heads = the attention heads and head_dim =
 * qk_rope_head_dim (transformers' DeepseekV3Config alias). One block, h 256, 2 heads, MLA with
 * kv_lora 64, nope 32, rope 16, v 32 and no q LoRA, a 256-wide MLP (not gated), BF16:
 *   parameters: MLA replicated 256·(64 + 16) + 64 = 20,544, split 256·2·48 + 64·2·64 + 2·32·256
 *   = 49,152; norms 512; MLP 131,072; final norm 256: 201,536 → engine 403,072 B;
 *   a token 2·1·max(1, 2)·16·2 B = 128 B; on 1 GiB: (1,073,741,824 − 403,072)·0.95 =
 *   1,019,671,814.4 B over 2,048 tokens · 128 B = 262,144 B → 3,889.77 requests → batch
 *   256·ceil(15.19) = 4,096; tokens min(7,779.5, 32,768) → 512·ceil(15.19) = 8,192. */
static void trtllm_bench_mla(void **state)
{
    (void)state;
    fathom_model_t m = one_block();
    m.hidden = 256, m.feedforward = 256, m.attn_heads = 2, m.kv_heads = 0;
    m.mla = (model_mla_t){true, 0, 64, 32, 16, 32};
    assert_close(serving__checkpoint_bytes(&m, SERVING_DT_BF16, SERVING_CKPT_MODELOPT), 403072,
                 1e-15);
    serving_system_t s = round_gpu(1);
    serving_request_t r = request(SERVING_ENGINE_TRTLLM);
    r.input_tokens = r.output_tokens = 1024;
    int64_t bs = 0, tok = 0;
    serving_trtllm_bench_settings(&m, &s, &r, SERVING_CKPT_MODELOPT, &bs, &tok);
    assert_int_equal(bs, 4096);
    assert_int_equal(tok, 8192);
}

/* Speculative decoding: k = 3 drafts each accepted with α = 0.8 gain
 * (1 − 0.8^4)/(1 − 0.8) = (1 − 0.4096)/0.2 = 2.952 tokens a step; α = 1: k + 1 = 4. */
static void speculative(void **state)
{
    (void)state;
    const fathom_model_t m = one_block(), draft = one_block();
    const serving_system_t s = round_gpu(16);
    serving_request_t r = request(SERVING_ENGINE_TRTLLM);
    r.concurrency = 4;
    r.speculative = (serving_spec_t){SERVING_SPEC_DRAFT, 3, 0.8, &draft};
    serving_result_t o;
    fathom_error_t err;
    assert_int_equal(serving_estimate(&m, &s, &r, &o, &err), 0);
    assert_close(o.tokens_per_step, 2.952, 1e-12);
    r.speculative.acceptance = 1;
    assert_int_equal(serving_estimate(&m, &s, &r, &o, &err), 0);
    assert_close(o.tokens_per_step, 4, 1e-12);
    /* MTP on a model without MTP blocks is refused, naming the field */
    r.speculative.method = SERVING_SPEC_MTP;
    assert_int_equal(serving_estimate(&m, &s, &r, &o, &err), -1);
    assert_string_equal(err.field, "serving.speculative.method");
}

/* One request of 64 output tokens on the one-block model and round GPU, run as a batch of one
 * (its result in *one); the case is returned for the test to run otherwise. */
static block_case_t lone_request(serving_result_t *one)
{
    block_case_t t = block_case(SERVING_ENGINE_VLLM);
    t.r.output_tokens = 64;
    t.r.num_requests = 1;
    estimate_ok(&t, one);
    return t;
}

/* An offline batch of one request takes its prefill step and then O − 1 decode steps alone:
 * its makespan is the single request's lifetime, so its rate is O / lifetime. The steady state
 * at concurrency 1 gives the same lifetime to within the mean-context approximation (1 %). */
static void offline_one(void **state)
{
    (void)state;
    serving_result_t one, steady;
    block_case_t t = lone_request(&one);
    t.r.num_requests = 0, t.r.concurrency = 1;
    estimate_ok(&t, &steady);
    assert_close(one.output_tokens_per_s, steady.output_tokens_per_s, 0.01);
}

/* A finite run at a rate: 3 requests at λ = 0.1/s arrive at 0, 10 and 20 s (i/λ). Each lives
 * L = 64 / (one request's rate) seconds, far below the 10 s between them, so they never share a
 * step: the run ends at 20 s + L and makes 3 · 64 tokens, a rate of 192 / (20 + L) tokens/s
 * (not λ · O = 6.4 tokens/s, nor the steady state), each request's TTFT the lone request's. */
static void finite_at_rate(void **state)
{
    (void)state;
    serving_result_t one, run;
    block_case_t t = lone_request(&one);
    const double L = 64 / one.output_tokens_per_s;
    assert_true(L < 1);
    t.r.num_requests = 3, t.r.requests_per_s = 0.1;
    estimate_ok(&t, &run);
    assert_close(run.output_tokens_per_s, 192 / (20 + L), 1e-9);
    assert_close(run.requests_per_s, 3 / (20 + L), 1e-9);
    assert_close(run.ttft_s, one.ttft_s, 1e-12);
    /* a finite run does not take a concurrency */
    t.r.requests_per_s = 0, t.r.concurrency = 2;
    fathom_error_t err;
    assert_int_equal(serving_estimate(&t.m, &t.s, &t.r, &run, &err), -1);
    assert_string_equal(err.field, "serving.num_requests");
}

/* SGLang, one GPU for prefill and one for decode, the KV cache over the round GPU's one tier, one
 * request a second (the disaggregated tests start here). */
static serving_request_t disaggregated_request(void)
{
    serving_request_t r = request(SERVING_ENGINE_SGLANG);
    r.disaggregated = true;
    r.prefill_layout = r.layout;
    r.kv_transfer_net = 0;
    r.requests_per_s = 1;
    return r;
}

/* A finite run queued at once with room for one request at a time (max_batch_size 1): request
 * i (1-based) starts when the i − 1 before it are done, each taking the lone request's lifetime
 * L, so TTFT_i = (i − 1)·L + TTFT_1. Of N = 10 requests: the mean (0 + … + 9)/10·L + TTFT_1 =
 * 4.5·L + TTFT_1; the p50, request ceil(0.5·10) = 5, 4·L + TTFT_1; the p99, request
 * ceil(0.99·10) = 10, 9·L + TTFT_1; the makespan 10·L, so the rate is the lone request's. */
static void finite_ttft_percentiles(void **state)
{
    (void)state;
    serving_result_t one, run;
    block_case_t t = block_case(SERVING_ENGINE_VLLM);
    t.r.output_tokens = 64, t.r.max_batch_size = 1, t.r.num_requests = 1;
    estimate_ok(&t, &one);
    const double L = 64 / one.output_tokens_per_s, t1 = one.ttft_s;
    t.r.num_requests = 10;
    estimate_ok(&t, &run);
    assert_close(run.output_tokens_per_s, one.output_tokens_per_s, 1e-9);
    assert_close(run.ttft_s, t1 + 4.5 * L, 1e-9);
    assert_close(run.ttft_p50_s, t1 + 4 * L, 1e-9);
    assert_close(run.ttft_p99_s, t1 + 9 * L, 1e-9);
    /* the largest run (SERVING_MAX_REQUESTS, two events a request) is followed as the one below
     * it: mean (N − 1)/2·L + TTFT_1, p99 request ceil(0.99·N) = 990,000 in both */
    const double big[2] = {SERVING_MAX_REQUESTS - 1, SERVING_MAX_REQUESTS};
    for (int i = 0; i < 2; i++) {
        t.r.num_requests = big[i];
        estimate_ok(&t, &run);
        assert_close(run.ttft_s, t1 + (big[i] - 1) / 2 * L, 1e-6);
        assert_close(run.ttft_p99_s, t1 + (990000 - 1) * L, 1e-6);
    }
}

/* A normal spread of this mean and standard deviation. */
static serving_lengths_t normal(double mean, double spread)
{
    return (serving_lengths_t){mean, spread, 0, 0};
}

/* A finite run's lengths are the normal's at the plotting positions (r + ½)/N: of N = 4
 * with mean 100 and spread 10, Φ⁻¹(0.125, 0.375, 0.625, 0.875) = ∓1.15035, ∓0.31864, so
 * 88.4965, 96.8136, 103.1864, 111.5035 tokens, 100 on average; one request is the mean; a
 * position below one token is one token (the first). Uniform lengths between 50 and 150 (vLLM's
 * random dataset at 100 and range ratio 0.5) take 50 + 100·(r + ½)/4: 62.5, 87.5, 112.5, 137.5. */
static void finite_lengths_at_ranks(void **state)
{
    (void)state;
    const double want[4] = {88.49651, 96.81361, 103.18639, 111.50349};
    const double uniform[4] = {62.5, 87.5, 112.5, 137.5};
    const serving_lengths_t l = normal(100, 10);
    const serving_lengths_t u = {100, 100 / sqrt(12), 50, 150};
    double sum = 0;
    for (int r = 0; r < 4; r++) {
        const double len = serving__length_at_rank(&l, r, 4);
        assert_close(len, want[r], 1e-6);
        sum += len;
        assert_close(serving__length_at_rank(&u, r, 4), uniform[r], 1e-15);
    }
    assert_close(sum / 4, 100, 1e-12);
    assert_close(serving__length_at_rank(&l, 0, 1), 100, 1e-15);
    const serving_lengths_t none = normal(100, 0), wide = normal(10, 100);
    assert_close(serving__length_at_rank(&none, 3, 4), 100, 1e-15);
    assert_close(serving__length_at_rank(&wide, 0, 4), 1, 1e-15);
}

/* Two requests of 64 ± σ output tokens, σ = 32/Φ⁻¹(0.75), take 32 and 96 (positions ¼ and ¾).
 * With room for one request at a time the shorter goes first (ranks are dealt bit-reversed:
 * 0, then 1), so the run is a lone 32-token request and then a lone 96-token one: makespan
 * L₃₂ + L₉₆, 128 tokens in it, TTFTs t₁ and L₃₂ + t₁ (mean t₁ + L₃₂/2, p99 the second's), and
 * each request's TPOT its lone one's (the mean of the two). With every request of the mean the
 * run would make 128 tokens in 2·L₆₄. */
static void finite_output_spread(void **state)
{
    (void)state;
    serving_result_t r32, r96, run;
    block_case_t t = block_case(SERVING_ENGINE_VLLM);
    t.r.max_batch_size = 1, t.r.num_requests = 1;
    t.r.output_tokens = 32;
    estimate_ok(&t, &r32);
    t.r.output_tokens = 96;
    estimate_ok(&t, &r96);
    const double L32 = 32 / r32.output_tokens_per_s, L96 = 96 / r96.output_tokens_per_s;
    const double t1 = r32.ttft_s;
    t.r.output_tokens = 64, t.r.output_spread = 32 / 0.6744897501960817;
    t.r.num_requests = 2;
    estimate_ok(&t, &run);
    assert_close(run.output_tokens_per_s, 128 / (L32 + L96), 1e-9);
    assert_close(run.requests_per_s, 2 / (L32 + L96), 1e-9);
    assert_close(run.ttft_s, t1 + L32 / 2, 1e-9);
    assert_close(run.ttft_p99_s, t1 + L32, 1e-9);
    assert_close(run.tpot_s, (r32.tpot_s + r96.tpot_s) / 2, 1e-9);
    /* uniform lengths between 0 and 128 put the two at the same 32 and 96 */
    t.r.output_low = 0, t.r.output_high = 128, t.r.output_spread = 128 / sqrt(12);
    serving_result_t uni;
    estimate_ok(&t, &uni);
    assert_close(uni.output_tokens_per_s, run.output_tokens_per_s, 1e-12);
}

/* The steady state's p99 prompt: a normal spread's I + 2.326·σ, a uniform's low + 0.99·(high −
 * low). Prompts uniform between 1,000 and 3,000 and a normal of mean 2,000 and σ = 980/2.326
 * both bring 2,980 tokens at the 99th percentile, so the p99 TTFT is the same. */
static void p99_prompt_of_uniform_lengths(void **state)
{
    (void)state;
    block_case_t t = block_case(SERVING_ENGINE_VLLM);
    t.r.input_tokens = 2000, t.r.output_tokens = 100, t.r.requests_per_s = 0.5;
    t.r.input_spread = 980 / 2.326;
    serving_result_t normal_p99, uniform_p99, plain;
    estimate_ok(&t, &normal_p99);
    t.r.input_spread = 2000 / sqrt(12), t.r.input_low = 1000, t.r.input_high = 3000;
    estimate_ok(&t, &uniform_p99);
    assert_close(uniform_p99.ttft_p99_s, normal_p99.ttft_p99_s, 1e-12);
    t.r.input_spread = 0, t.r.input_low = t.r.input_high = 0;
    estimate_ok(&t, &plain);
    assert_true(uniform_p99.ttft_p99_s > plain.ttft_p99_s);
}

/* Prompts spread alike: two requests of 64 ± σ prompt tokens (σ = 32/Φ⁻¹(0.75)) and 16 output
 * tokens have prompts of 32 and 96, dealt in base 3 (ranks 0, then 1: the shorter first). One
 * at a time, the run is a lone request of a 32-token prompt, then one of a 96-token prompt:
 * makespan L₃₂ + L₉₆; the second waits L₃₂ before its own TTFT, so the mean TTFT is
 * (t₃₂ + L₃₂ + t₉₆)/2; the prompt tokens a second are 2 · 64 over the makespan. */
static void finite_prompt_spread(void **state)
{
    (void)state;
    serving_result_t p32, p96, run;
    block_case_t t = block_case(SERVING_ENGINE_VLLM);
    t.r.max_batch_size = 1, t.r.num_requests = 1, t.r.output_tokens = 16;
    t.r.input_tokens = 32;
    estimate_ok(&t, &p32);
    t.r.input_tokens = 96;
    estimate_ok(&t, &p96);
    const double L32 = 16 / p32.output_tokens_per_s, L96 = 16 / p96.output_tokens_per_s;
    t.r.input_tokens = 64, t.r.input_spread = 32 / 0.6744897501960817;
    t.r.num_requests = 2;
    estimate_ok(&t, &run);
    assert_close(run.requests_per_s, 2 / (L32 + L96), 1e-9);
    assert_close(run.ttft_s, (p32.ttft_s + L32 + p96.ttft_s) / 2, 1e-9);
    assert_close(run.ttft_p99_s, L32 + p96.ttft_s, 1e-9);
    assert_close(run.input_tokens_per_s_per_gpu, 128 / (L32 + L96), 1e-9);
}

/* Queued at once with room for all, 500 requests of 214 ± 150 output tokens end with the
 * longest, 214 + 150·Φ⁻¹(1 − 0.5/500) = 677.53 tokens, decoding alone after the others have
 * left: the run lasts at least that request's lifetime, and is slower per token than 500
 * requests of 214. Its shortest positions fall below one token (214 − 150·3.09 = −249) and
 * make one, so the run makes more than 500 · 214 tokens: the rate counts what it made. */
static void finite_run_ends_with_its_longest(void **state)
{
    (void)state;
    serving_result_t longest, plain, spread;
    block_case_t t = block_case(SERVING_ENGINE_VLLM);
    const serving_lengths_t l = normal(214, 150);
    const double top = serving__length_at_rank(&l, 499, 500);
    assert_close(top, 677.53485, 1e-7);
    t.r.input_tokens = 200, t.r.output_tokens = top, t.r.num_requests = 1;
    estimate_ok(&t, &longest);
    const double lifetime = top / longest.output_tokens_per_s;
    t.r.output_tokens = 214, t.r.num_requests = 500, t.r.max_batch_size = 512;
    estimate_ok(&t, &plain);
    t.r.output_spread = 150;
    estimate_ok(&t, &spread);
    double made = 0;
    for (int r = 0; r < 500; r++)
        made += serving__length_at_rank(&l, r, 500);
    assert_true(made > 500 * 214.0);
    assert_close(spread.output_tokens_per_s / spread.requests_per_s, made / 500, 1e-9);
    assert_true(500 / spread.requests_per_s >= lifetime);
    assert_true(spread.output_tokens_per_s / made < plain.output_tokens_per_s / (500 * 214.0));
}

/* Disaggregated with a given prefill pool, x = prefill_per_decode prefill replicas per decode
 * replica, each taking R_p prompts a second: at most x·R_p requests a second are served. R_p
 * comes from the automatic ratio, which sizes the pool to the rate: prefill_gpus = λ/R_p·1 GPU.
 * A starved pool, x = 0.25/R_p, at λ = 1/s serves x·R_p = 0.25 a second (not λ, and less per
 * GPU than the automatic pool). A closed loop of 64 requests behind it completes 0.25 a second,
 * so each request lives 64/0.25 = 256 s, TTFT + (O − 1)·TPOT (Little's law). */
static void disaggregated_pool(void **state)
{
    (void)state;
    const fathom_model_t m = one_block();
    const serving_system_t s = round_gpu(16);
    serving_request_t r = disaggregated_request();
    serving_result_t autop, o;
    fathom_error_t err;
    assert_int_equal(serving_estimate(&m, &s, &r, &autop, &err), 0);
    assert_close(autop.requests_per_s, 1, 1e-12);
    const double Rp = 1 / autop.prefill_gpus;
    r.prefill_per_decode = 0.25 / Rp;
    assert_int_equal(serving_estimate(&m, &s, &r, &o, &err), 0);
    assert_close(o.requests_per_s, 0.25, 1e-9);
    assert_true(o.warnings & SERVING_WARN_OVERLOADED);
    assert_true(o.output_tokens_per_s_per_gpu < autop.output_tokens_per_s_per_gpu);
    assert_close(o.prefill_gpus, 0.25 / Rp, 1e-15);
    /* saturation (no load given) is bound by the pool too */
    r.requests_per_s = 0;
    assert_int_equal(serving_estimate(&m, &s, &r, &o, &err), 0);
    assert_close(o.requests_per_s, 0.25, 1e-9);
    r.concurrency = 64;
    assert_int_equal(serving_estimate(&m, &s, &r, &o, &err), 0);
    assert_close(o.requests_per_s, 0.25, 1e-9);
    assert_close(o.concurrency, 64, 1e-15);
    assert_close(o.ttft_s + (r.output_tokens - 1) * o.tpot_s, 256, 1e-5);
    /* a pool that keeps up leaves the arrival rate as it is */
    r.concurrency = 0, r.requests_per_s = 1, r.prefill_per_decode = 2 / Rp;
    assert_int_equal(serving_estimate(&m, &s, &r, &o, &err), 0);
    assert_close(o.requests_per_s, 1, 1e-12);
    assert_false(o.warnings & SERVING_WARN_OVERLOADED);
}

/* A draft model lives on the target's GPUs: the one-block model (projections 4,194,304, MLP
 * 8,388,608 and two norms' 2,048 parameters at 2 B: 25,169,920 B) with itself as the draft holds
 * 50,339,840 B of weights, SGLang's pool (the memory share less the weights) 25,169,920 B less,
 * and twice the KV cache a request (2 · 4,096 B a token at I + O/2 = 2,024 tokens), so it holds
 * floor(pool/(2 · 4,096 · 2,024)) requests; a draft of 2,048 such blocks (51.5 GB) does not fit
 * on the 16 GiB GPU at all. */
static void draft_memory(void **state)
{
    (void)state;
    block_case_t t = block_case(SERVING_ENGINE_SGLANG);
    t.r.concurrency = 1;
    t.r.max_batch_tokens = 65536; /* the KV cache, not the token budget, bounds the requests */
    serving_result_t plain, spec;
    estimate_ok(&t, &plain);
    assert_close(plain.weight_bytes, 25169920, 1e-15);
    fathom_model_t draft = one_block();
    t.r.speculative = (serving_spec_t){SERVING_SPEC_DRAFT, 3, 0.8, &draft};
    estimate_ok(&t, &spec);
    assert_close(spec.weight_bytes, 2 * 25169920.0, 1e-15);
    /* SGLang's pool is the fraction of memory less the weights, the draft's included */
    assert_close(spec.kv_capacity_bytes, plain.kv_capacity_bytes - 25169920, 1e-12);
    const double per_req = 4096 * (t.r.input_tokens + t.r.output_tokens / 2);
    assert_close(plain.max_concurrency, floor(plain.kv_capacity_bytes / per_req), 1e-15);
    assert_close(spec.max_concurrency, floor(spec.kv_capacity_bytes / (2 * per_req)), 1e-15);
    draft.num_blocks = 2048;
    estimate_ok(&t, &spec);
    assert_false(spec.fits_memory);
}

/* Disaggregated: the prompt's KV cache, 1,000 tokens · 4,096 B = 4,096,000 B, crosses the
 * one 100 GB/s tier (efficiency 1, no latency) on min(1, 1) = 1 link: 40.96 µs. The fleet per
 * decode replica is its GPU and the prefill share; with prefill_per_decode 2, two prefill GPUs. */
static void disaggregated(void **state)
{
    (void)state;
    const fathom_model_t m = one_block();
    const serving_system_t s = round_gpu(16);
    serving_request_t r = disaggregated_request();
    serving_result_t o;
    fathom_error_t err;
    assert_int_equal(serving_estimate(&m, &s, &r, &o, &err), 0);
    assert_close(o.kv_transfer_s, 40.96e-6, 1e-12);
    assert_close(o.gpus, 1 + o.prefill_gpus, 1e-15);
    r.prefill_per_decode = 2;
    assert_int_equal(serving_estimate(&m, &s, &r, &o, &err), 0);
    assert_close(o.prefill_gpus, 2, 1e-15);
    assert_close(o.gpus, 3, 1e-15);
}

/* Disaggregated TTFT at the p99 prompt: a spread σ = I/2.326 makes the p99 prompt 2I = 2,000
 * tokens. Its request pays that prompt's own prefill (one step of 2,000 tokens on the prefill
 * GPU, SGLang's budget 2,048: what a plain 2,000-token request's prefill step is), its KV cache
 * over the tier (2,000 · 4,096 B at 100 GB/s: 81.92 µs, 40.96 µs more than the mean prompt's)
 * and a whole decode step to join the batch, the p50 half of one:
 *   p99 − p50 = t_pre(2,000) − t_pre(1,000) + 40.96 µs + t_dec/2   (no pool queue: x absent).
 * The p99 had scaled the mean prompt's prefill, transfer and half step by 2 (the prefill's fixed
 * weight read and the wait for a decode step do not grow with the prompt). */
static void disaggregated_p99_prompt(void **state)
{
    (void)state;
    block_case_t t = block_case(SERVING_ENGINE_SGLANG);
    t.r = disaggregated_request();
    serving_result_t plain2, o;
    t.r.input_tokens = 2000;
    estimate_ok(&t, &plain2);
    assert_close(plain2.kv_transfer_s, 81.92e-6, 1e-12);
    t.r.input_tokens = 1000, t.r.input_spread = 1000 / 2.326;
    estimate_ok(&t, &o);
    assert_close(o.kv_transfer_s, 40.96e-6, 1e-12);
    assert_close(o.ttft_p99_s - o.ttft_p50_s,
                 plain2.prefill.total_s - o.prefill.total_s + 40.96e-6 + o.decode.total_s / 2,
                 1e-9);
    /* without a spread the p99 request waits a whole decode step, the p50 half of one */
    t.r.input_spread = 0;
    estimate_ok(&t, &o);
    assert_close(o.ttft_p99_s - o.ttft_p50_s, o.decode.total_s / 2, 1e-9);
}

/* A prompt in chunks does the work of the whole prompt. 3,000 tokens, one output token (no
 * decode), one request in flight, vLLM with a budget of 1,024 tokens: the budget less the one
 * token the request would decode leaves chunks of at most 1,023, so k = ceil(3,000/1,023) = 3
 * steps of 1,000 tokens. Causal attention pairs each token with the tokens up to it, 3,000 ·
 * 3,001/2 pairs whether the prompt runs whole or chunked (a chunk's tokens attend to the chunks
 * before it too), and the GEMMs are linear in the tokens, so the three chunk steps carry the
 * whole prompt's FLOPs: 3 · chunked.prefill.flops = whole.prefill.flops. Each chunk had been
 * priced as if it attended only within itself (3 · 1,023 · 1,024/2 pairs), the 100,000-token
 * prompt of Llama 3.1 8B 3.5 times faster in 8,192-token chunks than whole. More steps for the
 * same work: the three chunk steps together are not the shorter. With one or two output tokens
 * a prompt beyond the budget fits (the token budget's bound counts its k steps); it had not. */
static void chunked_prompt_work(void **state)
{
    (void)state;
    block_case_t t = block_case(SERVING_ENGINE_VLLM);
    t.r.input_tokens = 3000, t.r.output_tokens = 1, t.r.concurrency = 1;
    t.r.max_batch_tokens = 1024, t.r.chunked_prefill = 1;
    serving_result_t chunked, whole;
    estimate_ok(&t, &chunked);
    t.r.chunked_prefill = 0;
    estimate_ok(&t, &whole);
    assert_close(3 * chunked.prefill.flops, whole.prefill.flops, 1e-12);
    assert_true(3 * chunked.prefill.total_s >= whole.prefill.total_s);
}

/* The token budget's bound on the requests a replica holds, C·(dec·tps + I′)/(k + dec) ≤ B.
 * A disaggregated decode replica takes no prompt, so its steps carry decode tokens alone:
 * SGLang's one GPU, 1,000 in and 2,048 out, budget 64: C ≤ 64 (it had been 64 · 2,048/(2,047 +
 * 1,000) = 43, prompts it never runs counted; the KV pool holds hundreds). Aggregated, a
 * 3,000-token prompt and one output token in chunks of a 1,024 budget: k = 3 steps, C ≤
 * 1,024 · 3/3,000 = 1.02, one request (it had been 1,024/3,000: none, "does not fit"). */
static void budget_bound(void **state)
{
    (void)state;
    block_case_t t = block_case(SERVING_ENGINE_SGLANG);
    t.r = disaggregated_request();
    t.r.max_batch_tokens = 64;
    serving_result_t o;
    estimate_ok(&t, &o);
    assert_true(o.kv_capacity_bytes / (4096 * (t.r.input_tokens + t.r.output_tokens / 2)) > 100);
    assert_close(o.max_concurrency, 64, 1e-15);
    t = block_case(SERVING_ENGINE_VLLM);
    t.r.input_tokens = 3000, t.r.output_tokens = 1;
    t.r.max_batch_tokens = 1024, t.r.chunked_prefill = 1;
    estimate_ok(&t, &o);
    assert_true(o.fits_memory);
    assert_close(o.max_concurrency, 1, 1e-15);
}

/* Outputs of spread σ_O: a decode slot holds a request for as many steps as it has output
 * tokens, so the slots' sequences are the long outputs in proportion to their length, and a
 * slot's mean sequence is I + E[O²]/(2·E[O]) = I + O/2 + σ_O²/(2·O): 1,000 in and 1,000 ± 1,000
 * out, 1,000 + 500 + 500 = 2,000 tokens against 1,500 with no spread, so the decode step reads
 * 2,000/1,500 of the KV cache at the same batch (the spread was read and ignored). */
static void output_spread(void **state)
{
    (void)state;
    block_case_t t = block_case(SERVING_ENGINE_VLLM);
    t.r.input_tokens = 1000, t.r.output_tokens = 1000, t.r.concurrency = 8;
    serving_result_t plain, spread;
    estimate_ok(&t, &plain);
    t.r.output_spread = 1000;
    estimate_ok(&t, &spread);
    assert_close(spread.decode.kv_bytes / plain.decode.kv_bytes, 2000.0 / 1500.0, 1e-12);
    assert_true(spread.decode.total_s >= plain.decode.total_s);
}

/* A finite run's prompt step reads the KV of the tokens before the piece it computes: one
 * request of 1,000 prompt tokens, 99.9 % of them in the prefix cache, computes 1 token that
 * attends to 999 cached ones and itself, and the step reads the cache's KV: its TTFT is the
 * step {1 prompt token, context 1,000, 999 earlier, 1 finishing}
 * (one stage, no draft). The step had read only the 10 computed tokens' KV, as though the
 * cache were free to attend to. */
static void finite_prefill_reads_the_cache(void **state)
{
    (void)state;
    block_case_t t = block_case(SERVING_ENGINE_VLLM);
    t.s.hw.mem1.gbps = 1; /* 1 GB/s: memory, not the host's launches, sets the step */
    t.r.input_tokens = 1000, t.r.output_tokens = 2, t.r.prefix_cache_hit = 0.999;
    t.r.num_requests = 1;
    serving_result_t o;
    estimate_ok(&t, &o);
    const double computed = 1000 - 1000 * 0.999, cached = 1000 * 0.999;
    const sv_load_t with = {0, 1, 0, computed, cached + (computed + 1) / 2, cached, 1};
    sv_load_t without = with;
    without.prefill_prefix = 0;
    const double t_with = step(&t, with).total_s;
    assert_true(t_with > step(&t, without).total_s); /* the cache's KV read shows */
    assert_close(o.ttft_s, t_with, 1e-12);
}

/* Bad layouts are refused naming the field. */
static void refusals(void **state)
{
    (void)state;
    const fathom_model_t m = one_block();
    const serving_system_t s = round_gpu(16);
    serving_request_t r = request(SERVING_ENGINE_VLLM);
    serving_result_t o;
    fathom_error_t err;
    r.layout.tensor_par = 3; /* 8 heads */
    assert_int_equal(serving_estimate(&m, &s, &r, &o, &err), -1);
    assert_string_equal(err.field, "serving.tensor_par");
    r.layout.tensor_par = 1, r.layout.expert_par = 2; /* dense */
    assert_int_equal(serving_estimate(&m, &s, &r, &o, &err), -1);
    assert_string_equal(err.field, "serving.expert_par");
    r.layout.expert_par = 1, r.concurrency = 2, r.requests_per_s = 1;
    assert_int_equal(serving_estimate(&m, &s, &r, &o, &err), -1);
    assert_string_equal(err.field, "serving.requests_per_s");
    r.concurrency = 0, r.num_requests = 2.5; /* a count */
    assert_int_equal(serving_estimate(&m, &s, &r, &o, &err), -1);
    assert_string_equal(err.field, "serving.num_requests");
    r.num_requests = 0, r.weights = SERVING_DT_MXFP4; /* experts only: none here */
    assert_int_equal(serving_estimate(&m, &s, &r, &o, &err), -1);
    assert_string_equal(err.field, "serving.weights_datatype");
    /* the draft's 4 heads: tensor_par 8 cannot split them */
    r.weights = SERVING_DT_BF16, r.layout.tensor_par = 8;
    fathom_model_t draft = one_block();
    draft.attn_heads = 4, draft.kv_heads = 4;
    r.speculative = (serving_spec_t){SERVING_SPEC_DRAFT, 3, 0.8, &draft};
    assert_int_equal(serving_estimate(&m, &s, &r, &o, &err), -1);
    assert_string_equal(err.field, "serving.speculative.model");
    /* A matrix peak of 100 TFLOP/s at efficiency 1e-300: the one block's decode GEMMs (4h² +
     * 2·h·4h = 12.6M weights, 2 FLOP each a token: 2.5e7 FLOP) take 2.5e7 / 1e-286 = 2.5e293 s,
     * beyond 1e12 s: the token rate underflows and dollars per token would be infinite. At
     * efficiency 1e-9 (1e5 FLOP/s) the step is 250 s, slow but answered. */
    serving_system_t slow = round_gpu(16);
    slow.hw.matrix.rate[LLM_DT_BFLOAT16].gflops_efficiency.points[0].efficiency = 1e-300;
    r = request(SERVING_ENGINE_VLLM);
    r.concurrency = 1;
    assert_int_equal(serving_estimate(&m, &slow, &r, &o, &err), -1);
    assert_string_equal(err.field, "system");
    slow.hw.matrix.rate[LLM_DT_BFLOAT16].gflops_efficiency.points[0].efficiency = 1e-9;
    assert_int_equal(serving_estimate(&m, &slow, &r, &o, &err), 0);
}

/* The plan's choice among candidates built to be known (dollars per hour, TPOT):
 *   0: system 0, (10, 0.040)   1: system 0, (12, 0.030)   2: system 0, (12, 0.045) — dominated
 *   by 0 (dearer and slower) 3: system 1, (8, 0.050)   4: system 1, (8, 0.020) — dominates 3
 *   5: system 1, (5, 0.010) but does not meet — ignored
 * front: 0 (10, 0.040)? dominated by 4 (8, 0.020); 1 (12, 0.030) dominated by 4; so the front is
 * {4} alone; cheapest of system 0: 0 ($10), of system 1: 4 ($8, the faster of the two at $8). */
static void plan_select(void **state)
{
    (void)state;
    serving_plan_candidate_t c[6];
    memset(c, 0, sizeof c);
    const double cost[6] = {10, 12, 12, 8, 8, 5}, tpot[6] = {0.04, 0.03, 0.045, 0.05, 0.02, 0.01};
    for (int i = 0; i < 6; i++) {
        c[i].system = i < 3 ? 0 : 1;
        c[i].meets = i != 5;
        c[i].dollars_per_hour = cost[i];
        c[i].tpot_s = tpot[i];
    }
    int best[2];
    serving_plan_select(c, 6, 2, best);
    assert_int_equal(best[0], 0);
    assert_int_equal(best[1], 4);
    for (int i = 0; i < 6; i++)
        assert_int_equal(c[i].pareto, i == 4);
    /* without candidate 4, system 1's best is 3 and the front is {0, 1, 3}: 3 is the cheapest,
     * 1 the fastest, 0 between them (cheaper than 1, faster than 3) */
    c[4].meets = false;
    serving_plan_select(c, 6, 2, best);
    assert_int_equal(best[1], 3);
    for (int i = 0; i < 6; i++)
        assert_int_equal(c[i].pareto, i == 0 || i == 1 || i == 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kv_bytes),     cmocka_unit_test(formats),
        cmocka_unit_test(decode_step),
        cmocka_unit_test(grace_host),
        cmocka_unit_test(eager_dispatch),
        cmocka_unit_test(decode_attention_share),  cmocka_unit_test(prefill_step),
        cmocka_unit_test(moe_step),
        cmocka_unit_test(mxfp4_experts),
        cmocka_unit_test(fp4_efficiency),
        cmocka_unit_test(tp_all_reduce),
        cmocka_unit_test(moe_exchange),
        cmocka_unit_test(moe_workspace),
        cmocka_unit_test(chunked_attention_kv),
        cmocka_unit_test(concurrency),  cmocka_unit_test(trtllm_bench),
        cmocka_unit_test(checkpoint),
        cmocka_unit_test(trtllm_bench_mla),
        cmocka_unit_test(speculative),  cmocka_unit_test(offline_one),
        cmocka_unit_test(finite_at_rate),
        cmocka_unit_test(finite_ttft_percentiles),
        cmocka_unit_test(finite_lengths_at_ranks),
        cmocka_unit_test(finite_output_spread),
        cmocka_unit_test(finite_prompt_spread),
        cmocka_unit_test(p99_prompt_of_uniform_lengths),
        cmocka_unit_test(finite_run_ends_with_its_longest),
        cmocka_unit_test(disaggregated_pool),
        cmocka_unit_test(draft_memory),
        cmocka_unit_test(refusals),     cmocka_unit_test(plan_select),
        cmocka_unit_test(disaggregated),
        cmocka_unit_test(disaggregated_p99_prompt),
        cmocka_unit_test(chunked_prompt_work),
        cmocka_unit_test(budget_bound),
        cmocka_unit_test(output_spread),
        cmocka_unit_test(finite_prefill_reads_the_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

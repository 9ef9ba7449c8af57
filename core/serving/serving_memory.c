/* serving_memory.c — what one serving layout holds in each GPU's memory: the weights of its
 * pipeline stage, the KV cache of its requests, and the engine's working space; and the context
 * (rates, tiers, stages) every other file of core/serving reads.
 *
 * Weights (per GPU of a stage with n_k blocks of kind k; model_block_params splits a block's
 * parameters into what tensor parallelism divides, what it replicates, and routed experts):
 *   W = Σ_k n_k · (split/tp + replicated + routed/(tp·dp)) · b_w
 *       + (first stage) V·h·2/tp + (last stage, untied) V·h·2/tp
 * with b_w the format's bytes per value (serving_dtype_bytes). The embedding and the output
 * layer stay in 16 bits (2 bytes): NVIDIA ModelOpt's FP8/NVFP4 checkpoints and the AWQ/GPTQ
 * formats quantize only the linears inside the blocks. Routed experts are spread over every GPU
 * of the stage (expert_par ways by expert, tp·dp/expert_par ways inside each), so each holds
 * 1/(tp·dp) of them.
 *
 * KV cache per GPU and per token of context, one block (kv_block_token):
 *   standard: 2 · ceil(kv_heads/tp) · attn_size · b_kv — each TP rank keeps its share of the KV
 *     heads, and at least one whole head when tp exceeds kv_heads (TensorRT-LLM's
 *     calc_engine_setting counts max(tp, kv_heads) heads over tp ranks the same way);
 *   MLA: (kv_lora_rank + qk_rope_head_dim) · b_kv — the latent is shared by all heads, so every
 *     TP rank holds all of it (why DeepSeek is served with attention data parallelism).
 * A windowed block keeps at most sliding_window tokens. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>

#include "serving_internal.h"

const char *const serving_dtype_names[] = {"bf16", "fp8", "fp4", "int4", "mxfp4", NULL};

double serving_dtype_bytes(serving_dtype_t dt)
{
    switch (dt) {
    case SERVING_DT_BF16:
        return 2;
    case SERVING_DT_FP8:
        return 1;
    case SERVING_DT_FP4:
        /* NVFP4: 4-bit E2M1 values and one FP8 (E4M3) scale per block of 16 values (NVIDIA,
         * "Introducing NVFP4", 2025): 0.5 + 1/16 bytes a value (the per-tensor FP32 scale is
         * negligible). */
        return 0.5 + 1.0 / 16.0;
    case SERVING_DT_INT4:
        /* AWQ/GPTQ: 4-bit values and one 16-bit scale per group of 128 (Lin et al. 2024, AWQ,
         * group size 128): 0.5 + 2/128 bytes a value (zero points, where kept, are 4-bit and
         * packed: 0.5/128 more, left out). */
        return 0.5 + 2.0 / 128.0;
    case SERVING_DT_MXFP4:
        /* MXFP4 (OCP Microscaling Formats v1.0, 2023): 4-bit E2M1 values and one 8-bit E8M0
         * scale per block of 32: 0.5 + 1/32 bytes a value (of the routed experts only) */
        return 0.5 + 1.0 / 32.0;
    default:
        return 2;
    }
}

/* Whether block i attends over a sliding window: windowed models have every
 * full_attention_every-th block (the 2nd, 4th, … for 2) attend to the whole sequence. */
static bool block_windowed(const fathom_model_t *m, int64_t i)
{
    if (m->sliding_window <= 0)
        return false;
    return !(m->full_attention_every > 0 && (i + 1) % m->full_attention_every == 0);
}

/* KV-cache values one token of one block keeps, whole model (no TP split). */
static double kv_values_per_block_token(const fathom_model_t *m)
{
    if (m->mla.present)
        return (double)(m->mla.kv_lora_rank + m->mla.qk_rope_head_dim);
    return 2.0 * (double)model_kv_heads(m) * (double)m->attn_size;
}

double serving_kv_bytes(const fathom_model_t *m, serving_dtype_t kv, double context, bool mtp)
{
    return serving__kv_bytes(m, kv, context, mtp, (double)m->sliding_window);
}

double serving__kv_bytes(const fathom_model_t *m, serving_dtype_t kv, double context, bool mtp,
                         double w)
{
    const double per = kv_values_per_block_token(m) * serving_dtype_bytes(kv);
    double tokens = 0;
    for (int64_t i = 0; i < m->num_blocks; i++)
        tokens += block_windowed(m, i) ? sv_min(context, w) : context;
    /* an MTP depth is a full-attention block of its own (DeepSeek-V3 §2.2) */
    if (mtp)
        tokens += (double)m->mtp_blocks * context;
    return per * tokens;
}

int serving__network_for(const llm_system_t *s, double span)
{
    for (int i = 0; i < s->num_networks; i++)
        if ((double)s->networks[i].size >= span)
            return i;
    return s->num_networks - 1;
}

/* Adds stage st to the distinct stages of c (those with the same blocks cost the same). */
static void add_stage(sv_ctx_t *c, const sv_stage_t *st)
{
    for (int i = 0; i < c->num_stages; i++) {
        const sv_stage_t *o = &c->stages[i];
        bool same = o->first == st->first && o->last == st->last;
        for (int k = 0; same && k < SV_KINDS; k++)
            same = o->blocks[k] == st->blocks[k];
        if (same)
            return;
    }
    if (c->num_stages < (int)(sizeof c->stages / sizeof c->stages[0])) {
        c->stages[c->num_stages++] = *st;
        return;
    }
    /* more distinct stages than kept: keep the one with the most blocks in the last slot */
    sv_stage_t *last = &c->stages[c->num_stages - 1];
    double a = 0, b = 0;
    for (int k = 0; k < SV_KINDS; k++)
        a += last->blocks[k], b += st->blocks[k];
    if (b > a)
        *last = *st;
}

/* Blocks are split as evenly as the pipeline allows: the first L mod pp stages take one more. */
static void build_stages(sv_ctx_t *c)
{
    const fathom_model_t *m = c->m;
    const int64_t pp = c->l.pipeline_par, L = m->num_blocks;
    int64_t next = 0;
    c->num_stages = 0;
    for (int64_t s = 0; s < pp; s++) {
        const int64_t n = L / pp + (s < L % pp ? 1 : 0);
        sv_stage_t st = {{0}, s == 0, s == pp - 1};
        for (int64_t i = next; i < next + n; i++)
            st.blocks[(model_block_is_moe(m, i) ? 2 : 0) + (block_windowed(m, i) ? 1 : 0)] += 1;
        next += n;
        add_stage(c, &st);
    }
}

/* The tensor rate of the GEMMs in the weight format; a format without one runs weight-only
 * (dequantized into 16-bit GEMMs, as vLLM's Marlin kernels and TensorRT-LLM's weight-only
 * paths do on GPUs without FP8 or FP4 tensor cores). */
static void gemm_rate(sv_ctx_t *c)
{
    const llm_processor_t *mx = &c->s->hw.matrix;
    const llm_rate_t *r16 = mx->rate[LLM_DT_BFLOAT16].present ? &mx->rate[LLM_DT_BFLOAT16]
                                                              : &mx->rate[LLM_DT_FLOAT16];
    const llm_rate_t *r8 = &mx->rate[LLM_DT_FLOAT8];
    c->gemm_flops = r16->tflops * 1e12;
    c->gemm_curve = &r16->gflops_efficiency;
    c->weight_only = false;
    c->expert_act_bytes = 0;
    switch (c->r->weights) {
    case SERVING_DT_FP8:
        if (r8->present) {
            c->gemm_flops = r8->tflops * 1e12;
            c->gemm_curve = &r8->gflops_efficiency;
        } else
            c->weight_only = true;
        break;
    case SERVING_DT_FP4:
        /* FP4 GEMMs run on the FP8 curve (no published FP4 MAMF sweep covers every preset)
         * times the share of FP8's efficiency they reach where it was measured, the
         * system's float4_efficiency e4 (absent: 1):
         *   rate = fp4_tflops · e4, on the FP8 curve.
         * On a B200 (Llama-3.1-8B's N = 6144, K = 4096 at 16,384 rows, each against torch's
         * BF16 GEMM in the same run to cancel the clock): vLLM's NVFP4 CUTLASS GEMM without
         * the activation quantization 3,904.3 of BF16's 1,360.1 TFLOP/s, 2.871 of a peak
         * ratio of 4, 0.7176 (vllm-project/vllm PR #20646, the table before its tuned configs);
         * its FP8 per-tensor CUTLASS GEMM 2,544.7 of 1,512.8, 1.682 of 2, 0.8410 (PR #19566):
         * e4 = 0.7176 / 0.8410 = 0.853, what the B200-class presets give. At decode-sized
         * batches the same tables give less (512 rows 0.426 / 0.712 = 0.60, 1,024 rows
         * 0.546 / 0.849 = 0.64); the large-batch ratio is taken, the FP8 curve's shape kept. */
        if (c->s->fp4_tflops > 0) {
            const double e4 = c->s->fp4_efficiency > 0 ? c->s->fp4_efficiency : 1.0;
            c->gemm_flops = c->s->fp4_tflops * 1e12 * e4;
            if (r8->present)
                c->gemm_curve = &r8->gflops_efficiency;
        } else
            c->weight_only = true;
        break;
    default:
        break;
    }
    c->expert_flops = c->gemm_flops;
    c->expert_curve = c->gemm_curve;
    if (c->r->weights == SERVING_DT_FP8 || (c->r->weights == SERVING_DT_FP4 && !c->weight_only))
        c->expert_act_bytes = c->bpw; /* the experts' input quantized to the format first */
    if (c->r->weights == SERVING_DT_MXFP4 && c->s->fp4_tflops > 0 && r8->present) {
        /* gpt-oss's MXFP4 experts (TensorRT-LLM examples/models/core/gpt_oss/README.md: "the
         * weights are pre-quantized to mxfp4. The activation can be in either bf16 (Hopper) or
         * mxfp8 (Blackwell)"): on Blackwell an MXFP8 x MXFP4 grouped GEMM, the mixed f8f6f4
         * tensor-core kind, which runs at the FP8 rate (PTX ISA, tcgen05.mma kind::f8f6f4; only
         * both operands in FP4, kind::mxf4, run at the FP4 rate), its input quantized to MXFP8
         * (1 + 1/32 bytes); elsewhere (Hopper: the TRITON or CUTLASS W4A16 kernels) dequantized
         * into 16-bit GEMMs. The other linears are BF16 either way (the 16-bit rate above). */
        c->expert_flops = r8->tflops * 1e12;
        c->expert_curve = &r8->gflops_efficiency;
        c->expert_act_bytes = 1.0 + 1.0 / 32.0;
    }
    c->attn_flops = r16->tflops * 1e12 * c->s->hw.attention_efficiency;
    c->gemm16_flops = r16->tflops * 1e12;
    const llm_processor_t *vx = &c->s->hw.vector;
    const llm_rate_t *v16 = vx->rate[LLM_DT_BFLOAT16].present ? &vx->rate[LLM_DT_BFLOAT16]
                                                              : &vx->rate[LLM_DT_FLOAT16];
    c->vector_flops = v16->tflops * 1e12;
}

static int check_layout(const fathom_model_t *m, const serving_layout_t *l, const char *path,
                        fathom_error_t *err)
{
    char f[FATHOM_ERROR_FIELD_MAX];
#define SV_FIELD(name) (snprintf(f, sizeof f, "%s%s" name, path, *path ? "." : ""), f)
    if (l->tensor_par < 1 || l->pipeline_par < 1 || l->expert_par < 1 ||
        l->attention_data_par < 1)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, SV_FIELD("tensor_par"),
                                "parallel degrees must be at least 1");
    if (m->attn_heads % l->tensor_par != 0)
        return fathom_error_set(err, FATHOM_E_INFEASIBLE_EXECUTION, SV_FIELD("tensor_par"),
                                "must divide the model's %lld attention heads",
                                (long long)m->attn_heads);
    if (l->pipeline_par > m->num_blocks)
        return fathom_error_set(err, FATHOM_E_INFEASIBLE_EXECUTION, SV_FIELD("pipeline_par"),
                                "is more than the model's %lld blocks",
                                (long long)m->num_blocks);
    const int64_t stage = l->tensor_par * l->attention_data_par;
    if (m->moe.num_experts == 0 && l->expert_par != 1)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, SV_FIELD("expert_par"),
                                "must be 1 for a dense model");
    if (m->moe.num_experts > 0 &&
        (stage % l->expert_par != 0 || m->moe.num_experts % l->expert_par != 0))
        return fathom_error_set(err, FATHOM_E_INFEASIBLE_EXECUTION, SV_FIELD("expert_par"),
                                "must divide tensor_par x attention_data_par (%lld) and the "
                                "model's %lld experts",
                                (long long)stage, (long long)m->moe.num_experts);
#undef SV_FIELD
    return 0;
}

int serving__ctx_init(sv_ctx_t *c, const fathom_model_t *m, const serving_system_t *s,
                      const serving_request_t *r, const serving_layout_t *l, fathom_error_t *err)
{
    const char *path = l == &r->prefill_layout ? "serving.disaggregated.prefill"
                       : r->disaggregated      ? "serving.disaggregated.decode"
                                               : "serving";
    if (check_layout(m, l, path, err))
        return -1;
    c->m = m;
    c->s = s;
    c->r = r;
    c->l = *l;
    c->engine = r->engine;
    c->tp = (double)l->tensor_par;
    c->dp = (double)l->attention_data_par;
    c->pp = (double)l->pipeline_par;
    c->ep = (double)l->expert_par;
    c->etp = c->tp * c->dp / c->ep;
    /* mxfp4: the experts in MXFP4, the rest in BF16 */
    c->bpw_experts = serving_dtype_bytes(r->weights);
    c->bpw = r->weights == SERVING_DT_MXFP4 ? 2.0 : c->bpw_experts;
    c->kv_bpe = serving_dtype_bytes(r->kv);
    c->kv_window = serving__kv_window(m, r->engine);
    gemm_rate(c);
    c->mem_bw = s->hw.mem1.gbps * 1e9;
    c->tp_net = serving__network_for(&s->hw, c->tp);
    c->ep_net = serving__network_for(&s->hw, c->tp * c->dp);
    c->pp_net = serving__network_for(&s->hw, c->tp * c->dp * c->pp);
    build_stages(c);
    if (m->mla.present) {
        c->kv_block_token = kv_values_per_block_token(m) * c->kv_bpe;
        c->kv_replicated = l->tensor_par > 1;
    } else {
        const double heads = ceil((double)model_kv_heads(m) / c->tp);
        c->kv_block_token = 2.0 * heads * (double)m->attn_size * c->kv_bpe;
        c->kv_replicated = l->tensor_par > model_kv_heads(m);
    }
    c->cuda_graphs_decode = true;
    return 0;
}

double serving__weight_bytes(const sv_ctx_t *c, const sv_stage_t *st)
{
    const fathom_model_t *m = c->m;
    double w = 0;
    for (int k = 0; k < SV_KINDS; k++) {
        if (st->blocks[k] <= 0)
            continue;
        const model_block_params_t p = model_block_params(m, k >= SV_MOE_FULL);
        w += st->blocks[k] * ((p.split / c->tp + p.replicated) * c->bpw +
                              p.routed / (c->tp * c->dp) * c->bpw_experts);
    }
    const double vh = (double)m->vocab_size * (double)m->hidden;
    if (st->first)
        w += vh * 2.0 / c->tp;
    if (st->last && !(m->tied_embeddings && st->first))
        w += vh * 2.0 / c->tp;
    return w;
}

/* The tokens of context a windowed block keeps in the KV cache:
 *   a sliding window: sliding_window (the engines evict what slid out);
 *   chunked local attention (model.chunked_attention, Llama 4) under TensorRT-LLM: the whole
 *     context. Its chunked attention is a mask in the attention kernels (the context FMHA, and
 *     the generation kernels since PR #4693, 1.0 and later) and its KV manager is told of no
 *     window unless KvCacheConfig.max_attention_window is set
 *     (docs/source/features/long-sequence.md, "Sliding Window Attention"), which the benchmark
 *     pages do not set; KvCacheCreator sizes the pool at every attention layer's K and V for
 *     every token (_get_cache_size_per_token in tensorrt_llm/_torch/pyexecutor/_util.py);
 *   chunked under vLLM and SGLang: at most a chunk (vLLM's ChunkedLocalAttentionSpec frees the
 *     blocks of past chunks; SGLang pools Llama 4's chunked layers as sliding-window layers).
 * What a token attends to, in prefill and decode, stays within the window or chunk in every
 * engine (serving_step.c). */
double serving__kv_window(const fathom_model_t *m, serving_engine_t engine)
{
    if (m->sliding_window <= 0 || (m->chunked_attention && engine == SERVING_ENGINE_TRTLLM))
        return INFINITY;
    return (double)m->sliding_window;
}

double serving__kv_request_bytes(const sv_ctx_t *c, const sv_stage_t *st, double context)
{
    const double w = c->kv_window;
    const double full = st->blocks[SV_DENSE_FULL] + st->blocks[SV_MOE_FULL];
    const double win = st->blocks[SV_DENSE_WINDOW] + st->blocks[SV_MOE_WINDOW];
    return c->kv_block_token * (full * context + win * sv_min(context, w));
}

/* Working memory besides weights and KV cache (per GPU):
 *   activations of the largest step, T = max_batch_tokens tokens on the rank: the residual
 *   stream and the widest intermediate alive at once, T·(4h + 3·f/tp)·2 bytes (f the widest
 *   MLP: the dense one, or top_k routed experts' rows spread over the stage); under
 *   TensorRT-LLM's attention data parallelism the routed experts run on every rank's tokens at
 *   once (its MoE all-gathers them: serving__moe_exchange_s), up to T·dp rows ("the maximum
 *   number of tokens in MoE are multiplied by DP size when attention DP is enabled",
 *   moe_max_num_tokens = max_num_tokens · dp_size in tensorrt_llm/_torch/modules/fused_moe/,
 *   no chunking below it), so the experts' part is T·dp·(4h + 3·f_e)·2 bytes, f_e = k·f/etp;
 *   the logits of the sampled rows, max_batch_size·V/tp·4 bytes (float32);
 *   a fixed reserve R for the CUDA context, cuBLAS/NCCL workspaces and CUDA graphs: 2 GiB
 *   (vLLM and TensorRT-LLM logs on H100 show 0.5–1 GiB of CUDA context and 0.3–1.5 GiB of graph
 *   and communicator buffers; an assumption, stated). */
double serving__workspace_bytes(const sv_ctx_t *c, int64_t max_batch_tokens,
                                int64_t max_batch_size)
{
    const fathom_model_t *m = c->m;
    const double T = (double)max_batch_tokens, h = (double)m->hidden;
    double f = (double)m->feedforward / c->tp, rows_e = T; /* the experts' rows at once */
    if (m->moe.num_experts > 0 && c->engine == SERVING_ENGINE_TRTLLM)
        rows_e = T * c->dp;
    double act = T * (4.0 * h + 3.0 * f) * 2.0;
    if (m->moe.num_experts > 0) {
        const double fe = (double)m->moe.expert_feedforward * (double)m->moe.top_k / c->etp;
        act = sv_max(act, rows_e * (4.0 * h + 3.0 * fe) * 2.0);
    }
    const double logits = (double)max_batch_size * (double)m->vocab_size / c->tp * 4.0;
    return act + logits + 2.0 * 1073741824.0;
}

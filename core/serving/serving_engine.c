/* serving_engine.c — what each engine does by default, from its own source: how many tokens and
 * sequences a step takes, whether prompts are chunked, how much memory goes to the KV cache,
 * which attention kernels run, and how much of the host's work shows between steps.
 *
 * TensorRT-LLM (PyTorch backend, LLM API; tensorrt_llm/llmapi/llm_args.py): max_batch_size
 *   2048, max_num_tokens 8192, enable_chunked_prefill false, KvCacheConfig
 *   free_gpu_memory_fraction 0.9 of the memory left after weights and activations; the overlap
 *   scheduler prepares step n+1 while step n runs (disable_overlap_scheduler false) and
 *   generation-only steps replay CUDA graphs. trtllm-bench computes its own max_batch_size and
 *   max_num_tokens (serving_trtllm_bench_settings).
 * vLLM (V1; vllm/engine/arg_utils.py EngineArgs.get_batch_defaults): chunked prefill always on;
 *   on GPUs of at least 70 GiB other than the A100, max_num_batched_tokens 8192 and max_num_seqs
 *   1024 for the OpenAI server, else 2048 and 256; gpu_memory_utilization 0.9 of the whole
 *   memory holds weights, activations and KV cache; CUDA graphs for decode; async scheduling
 *   runs the scheduler one step ahead (on by default since v0.14, PR #27614; not with pipeline
 *   parallelism).
 * SGLang (python/sglang/srt/server_args.py): chunked_prefill_size 2048 below 35 GB, 8192 below
 *   160 GB, 16384 above, divided by the data-parallel attention ranks; mem_fraction_static =
 *   (memory − reserved)/memory for weights and KV cache, reserved 2.8 + n/10 GiB below 35 GB,
 *   9.5 + n/2 below 90 GB, 12 + n/2 below 160 GB, 32 GiB above (n = tp·pp), + 4 GiB with DP
 *   attention; the overlap scheduler hides the host (off with pipeline parallelism); CUDA graphs
 *   up to cuda_graph_max_bs (256 below TP 4, 512 from TP 4). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>

#include "serving_internal.h"

const char *const serving_engine_names[] = {"trtllm", "vllm", "sglang", NULL};
const char *const serving_spec_names[] = {"none", "mtp", "draft", NULL};
const char *const serving_bound_names[] = {"memory", "compute", "network", "host", NULL};

static const double GIB = 1073741824.0;

/* GPU generations as the engines' defaults tell them apart: by memory, and the A100 by its
 * 16-bit rate (vLLM names it; 312 TFLOP/s against 989 for the H100). */
static bool is_a100_class(const serving_system_t *s)
{
    const llm_rate_t *r = &s->hw.matrix.rate[LLM_DT_BFLOAT16];
    return !s->hw.matrix.rate[LLM_DT_FLOAT8].present && r->present && r->tflops < 400;
}

void serving_engine_defaults(serving_engine_t engine, const fathom_model_t *m,
                             const serving_system_t *s, const serving_layout_t *l,
                             serving_engine_defaults_t *out)
{
    (void)m;
    const double mem_gib = s->hw.mem1.gib;
    switch (engine) {
    case SERVING_ENGINE_VLLM: {
        const bool big = mem_gib >= 70 && !is_a100_class(s);
        out->max_batch_tokens = big ? 8192 : 2048;
        out->max_batch_size = big ? 1024 : 256;
        out->chunked_prefill = true;
        out->kv_memory_fraction = 0.9;
        break;
    }
    case SERVING_ENGINE_SGLANG: {
        const double gb = mem_gib * GIB / 1e9, n = (double)(l->tensor_par * l->pipeline_par);
        double reserved = gb < 35 ? 2.8 + n / 10 : gb < 90 ? 9.5 + n / 2 : gb < 160 ? 12 + n / 2 : 32;
        if (l->attention_data_par > 1)
            reserved += 4;
        out->max_batch_tokens = (gb < 35 ? 2048 : gb < 160 ? 8192 : 16384) / l->attention_data_par;
        if (out->max_batch_tokens < 1)
            out->max_batch_tokens = 1;
        out->max_batch_size = 4096; /* max_running_requests follows the KV pool */
        out->chunked_prefill = true;
        out->kv_memory_fraction = sv_max(0.05, (mem_gib - reserved) / mem_gib);
        break;
    }
    default:
        out->max_batch_tokens = 8192;
        out->max_batch_size = 2048;
        out->chunked_prefill = false;
        out->kv_memory_fraction = 0.9;
        break;
    }
}

/* The parameter count trtllm-bench reads from a checkpoint's safetensors header (the sum of every
 * tensor's elements, ModelConfig.get_param_count) and the bytes it takes per element
 * (tuning.py BYTES_PER_ELEM by the checkpoint's quantization: NVFP4 0.5, FP8 1, else 2):
 *   ModelOpt, q the block linears' parameters (attention projections, MLPs, experts, routers):
 *     count = (total − q) + q·e,  e = 1/2 + 1/16 for NVFP4 (a uint8 holds two values, an FP8
 *     scale per 16), 1 for FP8 and 16-bit; bytes 0.5, 1, 2 by the format;
 *   MXFP4 experts (gpt-oss), r the routed experts: count = (total − r) + r·(1/2 + 1/32), 2 bytes.
 * Returns count · bytes: the tool's engine size in bytes. */
double serving__checkpoint_bytes(const fathom_model_t *m, serving_dtype_t w,
                                serving_checkpoint_t ckpt)
{
    model_params_t p;
    model_parameters(m, &p);
    double q = 0, routed = 0;
    for (int64_t i = 0; i < m->num_blocks; i++) {
        const model_block_params_t b = model_block_params(m, model_block_is_moe(m, i));
        q += b.split + b.replicated - 2.0 * model_norm_params(m) + b.routed;
        routed += b.routed;
    }
    if (ckpt == SERVING_CKPT_MXFP4_EXPERTS || w == SERVING_DT_MXFP4)
        return ((p.total - routed) + routed * (0.5 + 1.0 / 32.0)) * 2.0;
    const double e = w == SERVING_DT_FP4 ? 0.5 + 1.0 / 16.0 : 1.0;
    const double bytes = w == SERVING_DT_FP4 ? 0.5 : w == SERVING_DT_FP8 ? 1.0 : 2.0;
    return ((p.total - q) + q * e) * bytes;
}

/* trtllm-bench's settings for a dataset of fixed input and output lengths
 * (tensorrt_llm/bench/build/tuning.py): KV bytes per token 2·L·max(tp, kv_heads)·d·b_kv (over
 * all tp GPUs), the KV pool 0.95 of the GPUs' memory less the engine size (serving__checkpoint_bytes),
 * requests that fit at input+output tokens, r = min(that, 4096)/pp; max_batch_size r rounded up
 * to 32 (at least 64) below 256, to 128 below 1024, to 256 above; max_num_tokens
 * min(r·(1 + in/out), 32768) rounded up to 256 (at least 2048) below 4096, to 512 below 8192,
 * to 1024 above; without chunked prefill at least input + max_batch_size
 * (tensorrt_llm/bench/benchmark/utils/general.py get_settings). Memory is the device's in GiB,
 * as torch reports it. */
void serving_trtllm_bench_settings(const fathom_model_t *m, const serving_system_t *s,
                                   const serving_request_t *r, serving_checkpoint_t ckpt,
                                   int64_t *max_batch_size, int64_t *max_num_tokens)
{
    const serving_layout_t *l = &r->layout;
    /* the tool is run with --tp over every GPU of a stage (attention data parallelism is an
     * option on top), and reads the checkpoint's config through transformers: MLA models list
     * num_key_value_heads equal to the attention heads, and DeepseekV3Config aliases head_dim
     * to qk_rope_head_dim (64 for DeepSeek-V3), which the tool takes as the head size */
    const double tp = (double)(l->tensor_par * l->attention_data_par), pp = (double)l->pipeline_par;
    const double heads = sv_max(tp, (double)model_kv_heads(m));
    const double head = m->mla.present ? (double)m->mla.qk_rope_head_dim : (double)m->attn_size;
    const double kvb = serving_dtype_bytes(r->kv) >= 2 ? 2 : r->kv == SERVING_DT_FP8 ? 1 : 0.5;
    const double per_token = 2.0 * (double)m->num_blocks * heads * head * kvb / GIB;
    const double engine = serving__checkpoint_bytes(m, r->weights, ckpt) / GIB;
    const double total = s->hw.mem1.gib * tp * pp;
    const double cache = (total - engine) * 0.95;
    const double seq = r->input_tokens + r->output_tokens;
    const double requests = sv_max(cache / (per_token * seq), 1);
    const double raw_bs = sv_min(requests, 4096) / pp;
    const double raw_tok = sv_min(raw_bs * (1 + r->input_tokens / r->output_tokens), 32768);
    double bs;
    if (raw_bs < 256)
        bs = sv_max(64, 32 * ceil(raw_bs / 32));
    else if (raw_bs < 1024)
        bs = 128 * ceil(raw_bs / 128);
    else
        bs = 256 * ceil(raw_bs / 256);
    double tok;
    if (raw_tok < 4096)
        tok = sv_max(2048, 256 * ceil(raw_tok / 256));
    else if (raw_tok < 8192)
        tok = 512 * ceil(raw_tok / 512);
    else
        tok = 1024 * ceil(raw_tok / 1024);
    tok = sv_max(tok, ceil(r->input_tokens) + bs);
    *max_batch_size = (int64_t)bs;
    *max_num_tokens = (int64_t)tok;
}

/* Kernels a step launches per block (norms, projections, RoPE and cache append, attention,
 * activation, the all-reduces): 12 for a dense block, 16 with experts (router, top-k, permute,
 * grouped GEMMs, un-permute), plus 2 per collective. */
static double kernels_per_step(const sv_ctx_t *c)
{
    double n = 0;
    for (int i = 0; i < c->num_stages; i++) {
        const sv_stage_t *st = &c->stages[i];
        const double dense = st->blocks[SV_DENSE_FULL] + st->blocks[SV_DENSE_WINDOW];
        const double moe = st->blocks[SV_MOE_FULL] + st->blocks[SV_MOE_WINDOW];
        const double coll = c->tp > 1 ? 2 : 0;
        n = sv_max(n, dense * (12 + coll) + moe * (16 + coll + (c->dp > 1 ? 2 : 0)));
    }
    return n + 8; /* embedding, final norm, output layer, sampling */
}

/* The host side of a step (seconds the step lasts beyond its GPU work gpu_s).
 *
 * One host thread runs each engine's loop: it schedules the step, prepares its inputs, launches
 * its kernels (or replays a CUDA graph), and updates every sequence with its new token (stop
 * checks, the token appended, the response handed on). That work is
 *
 *   host = t_fixed + t_seq · S + (eager step ? n_k · t_launch : 0)
 *
 * for S sequences in the step and n_k kernels (kernels_per_step); the GPU's side of a replayed
 * graph is n_k · t_graph more GPU time, and so is an eager step's when its host runs ahead
 * (overlapped). The step then lasts
 *
 *   overlapped (TensorRT-LLM; vLLM and SGLang without pipeline parallelism):
 *                                              max(GPU + n_k · t_graph, host)
 *   in turn (vLLM and SGLang with pipeline parallelism): GPU + (graph ? n_k · t_graph : 0) + host
 *
 * Overlap: TensorRT-LLM's overlap scheduler launches step n+1 before it processes step n's
 * outputs on the CPU, so the CPU work (stop criteria, responses, scheduling the next batch) runs
 * while the GPU computes (docs/source/features/overlap-scheduler.md; on by default); SGLang's
 * zero-overhead scheduler runs one batch ahead the same way (lmsys.org/blog/2024-12-04-sglang-v0-4,
 * off with pipeline parallelism); vLLM V1's async scheduling does too, on by default since
 * v0.14 (vllm-project/vllm PR #27614; not with pipeline parallelism there).
 *
 * Eager steps: a step that carries prompt tokens is not replayed from a CUDA graph (the engines
 * capture decode-only batches; TensorRT-LLM PR #9703: "few context + many generations" batches
 * "are not eligible for CUDA graph"), so each of its kernels costs the host t_launch. Its GPU
 * side is no cheaper than a replay's: t_graph (1.0 µs, back-to-back kernels of one element
 * replayed from a graph, bench/gpu) is the GPU's own cost of running a kernel after the one
 * before it, which a graph shortens against stream launches and never lengthens (CUDA
 * Programming Guide, "CUDA Graphs": a graph cuts the CPU's launch cost). Without that term an
 * overlapped step that adds a prompt to a decode batch came out shorter than the batch alone.
 *
 * The constants:
 *   t_launch, t_graph  the system's host_launch_s and graph_launch_s: 6.62 µs and 1.0 µs measured
 *                      on an x86 H100 host (bench/gpu/2026-11-26-h100-sxm5-80gb); the Grace
 *                      presets' (GB200, GB300, GH200) t_launch 18.2 µs carries Transformer
 *                      Engine issue #2053's 2.75× slower PyTorch op dispatch on GB200 — a
 *                      measurement of launches, so only the launches are scaled (no source
 *                      gives Grace's speed at an engine's per-request Python work), and t_graph,
 *                      the GPU's own cost of a replayed kernel, stays 1.0 µs;
 *   t_seq = 29.4 µs    a request's share of a host-bound TensorRT-LLM iteration: PR #10273
 *                      measures 45.11 ms a step at 1,536 requests a rank (GB200, GPT-OSS-120B,
 *                      1k/1k, attention DP 2, "scenarios where the host overhead is the
 *                      bottleneck"): 45.11 ms / 1,536. Of it the C++ capacity scheduler takes
 *                      4.4 % (1.3 µs a request), the rest is Python: input preparation, the
 *                      sampler's per-request update loop (PR #16564 finds it dominating an
 *                      8.8 ms bubble at 256 requests), responses. Taken for every Python executor
 *                      (TensorRT-LLM's PyTorch backend, vLLM, SGLang) and host CPU: the only
 *                      published per-request figure;
 *   t_seq = 1.3 µs     for TensorRT-LLM's C++ executor (TensorRT engines): the C++ scheduler's
 *                      share above, the only per-request work a step does outside the engine;
 *   t_fixed = 0.5 ms   the loop's own cost a step (fetching requests, the batch's metadata): an
 *                      assumption, stated. */
#define SV_HOST_REF_LAUNCH 6.62e-6
#define SV_HOST_FIXED 0.5e-3
#define SV_HOST_PER_SEQ (45.11e-3 / 1536.0)
#define SV_HOST_PER_SEQ_CPP (0.044 * 45.11e-3 / 1536.0)

double serving__host_s(const sv_ctx_t *c, const sv_load_t *ld, double gpu_s)
{
    const double n = kernels_per_step(c);
    const double seqs = ld->decode_seqs + (ld->prefill_tokens > 0 ? 1 : 0);
    const bool graph = ld->prefill_tokens <= 0 && c->cuda_graphs_decode;
    /* the system's launch costs (llm_system_t), the measured H100 host's when it gives none */
    const double eager = c->s->hw.host_launch_s > 0 ? c->s->hw.host_launch_s : SV_HOST_REF_LAUNCH;
    const double replay = c->s->hw.graph_launch_s > 0 ? c->s->hw.graph_launch_s : 1.0e-6;
    const double per_seq = c->r->cpp_executor ? SV_HOST_PER_SEQ_CPP : SV_HOST_PER_SEQ;
    const bool overlap = c->engine == SERVING_ENGINE_TRTLLM || c->l.pipeline_par == 1;
    /* t_graph is what a kernel costs the GPU back to back in a replayed graph: no less for a
     * kernel an eager host queued ahead (a graph saves the host's launch work, not the GPU's
     * dispatch), so an overlapped eager step pays it too. In turn, the eager launches already
     * space the kernels t_launch apart (the GPU idles between them, bench/gpu). */
    const double gpu = gpu_s + (graph || overlap ? n * replay : 0);
    const double host = SV_HOST_FIXED + per_seq * seqs + (graph ? 0 : n * eager);
    return (overlap ? sv_max(gpu, host) : gpu + host) - gpu_s;
}

const char *serving__attention_kernel(const sv_ctx_t *c, bool decode)
{
    const bool blackwell = c->s->fp4_tflops > 0;
    const bool hopper = !blackwell && c->s->hw.matrix.rate[LLM_DT_FLOAT8].present;
    const bool mla = c->m->mla.present;
    switch (c->engine) {
    case SERVING_ENGINE_VLLM:
        if (mla)
            return decode ? (blackwell ? "cutlass_mla" : "flashmla") : "flash_attn";
        return blackwell ? "flashinfer" : hopper ? "flash_attn_3" : "flash_attn_2";
    case SERVING_ENGINE_SGLANG:
        if (mla)
            return decode ? (blackwell ? "trtllm_mla" : "flashmla") : "fa3";
        return blackwell ? "trtllm_mha" : hopper ? "fa3" : "flashinfer";
    default:
        if (mla)
            return decode ? "trtllm_gen_mla" : "trtllm_context_mla";
        return decode ? "xqa" : "fmha";
    }
}

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
 *   memory holds weights, activations and KV cache; CUDA graphs for decode; the scheduler runs
 *   between steps (async scheduling is off by default).
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

/* trtllm-bench's settings for a dataset of fixed input and output lengths
 * (tensorrt_llm/bench/build/tuning.py): KV bytes per token 2·L·max(tp, kv_heads)·d·b_kv (over
 * all tp GPUs), the KV pool 0.95 of the GPUs' memory less the weights (params · b_w), requests
 * that fit at input+output tokens, r = min(that, 4096)/pp; max_batch_size r rounded up to 32
 * (at least 64) below 256, to 128 below 1024, to 256 above; max_num_tokens
 * min(r·(1 + in/out), 32768) rounded up to 256 (at least 2048) below 4096, to 512 below 8192,
 * to 1024 above; without chunked prefill at least input + max_batch_size
 * (tensorrt_llm/bench/benchmark/utils/general.py get_settings). Memory is the device's in GiB,
 * as torch reports it. */
void serving_trtllm_bench_settings(const fathom_model_t *m, const serving_system_t *s,
                                   const serving_request_t *r, int64_t *max_batch_size,
                                   int64_t *max_num_tokens)
{
    const serving_layout_t *l = &r->layout;
    /* the tool is run with --tp over every GPU of a stage (attention data parallelism is an
     * option on top), and reads the checkpoint's config: MLA models list num_key_value_heads
     * equal to the attention heads and no head_dim (hidden/heads is taken) */
    const double tp = (double)(l->tensor_par * l->attention_data_par), pp = (double)l->pipeline_par;
    const double heads = sv_max(tp, (double)model_kv_heads(m));
    const double head = m->mla.present ? (double)m->hidden / (double)m->attn_heads
                                       : (double)m->attn_size;
    const double kvb = serving_dtype_bytes(r->kv) >= 2 ? 2 : r->kv == SERVING_DT_FP8 ? 1 : 0.5;
    const double per_token = 2.0 * (double)m->num_blocks * heads * head * kvb / GIB;
    model_params_t p;
    model_parameters(m, &p);
    const double wb = r->weights == SERVING_DT_BF16 ? 2 : r->weights == SERVING_DT_FP8 ? 1 : 0.5;
    const double engine = p.total * wb / GIB;
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

/* Host time a step shows (seconds), GPU time gpu_s (launch costs: the system's host_launch_s
 * and graph_launch_s, which the presets take from the H100 host measured in
 * bench/gpu/2026-11-26-h100-sxm5-80gb "Host cost per kernel launch": 6.62 µs of host time per
 * eager launch, 1.0 µs per kernel replayed from a CUDA graph):
 *   launches: a step replayed as a CUDA graph costs the GPU graph_launch_s per kernel; a step
 *     launched eagerly (prompt chunks) costs the host host_launch_s per kernel, hidden while
 *     the GPU is still busy with work already queued: max(0, n·host_launch_s − gpu_s);
 *   scheduling: the engine's per-step bookkeeping in Python, 0.5 ms + 10 µs per sequence
 *     (request state, stop checks, token append and response hand-off for each sequence every
 *     step; an assumption, stated — the TensorRT-LLM 1.x tables show its signature: on small
 *     models at thousands of sequences the x86 B200 outruns the Grace GB200 by 5–15 % with the
 *     same GPU), hidden by an overlap scheduler (TensorRT-LLM, SGLang without pipeline
 *     parallelism) except where it outlasts the step, shown in full by vLLM. */
double serving__host_s(const sv_ctx_t *c, const sv_load_t *ld, double gpu_s)
{
    const double n = kernels_per_step(c);
    const double seqs = ld->decode_seqs + (ld->prefill_tokens > 0 ? 1 : 0);
    const bool graph = ld->prefill_tokens <= 0 && c->cuda_graphs_decode;
    /* the system's launch costs (llm_system_t), the measured H100 host's when it gives none */
    const double eager = c->s->hw.host_launch_s > 0 ? c->s->hw.host_launch_s : 6.62e-6;
    const double replay = c->s->hw.graph_launch_s > 0 ? c->s->hw.graph_launch_s : 1.0e-6;
    double launch = graph ? n * replay : sv_max(0, n * eager - gpu_s);
    const double sched = 0.5e-3 + 10e-6 * seqs;
    const bool overlap = c->engine == SERVING_ENGINE_TRTLLM ||
                         (c->engine == SERVING_ENGINE_SGLANG && c->l.pipeline_par == 1);
    const double shown = overlap ? sv_max(0, sched - gpu_s - launch) : sched;
    return launch + shown;
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

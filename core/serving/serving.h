/* serving.h — serving a model: prefill and decode step times, the KV cache, continuous batching,
 * latency (TTFT, TPOT), throughput per GPU and per user, cost and energy per token, and a plan of
 * the cheapest fleet that meets latency targets at a traffic level (the whole API of
 * core/serving). Pure C: no I/O, no JSON, no globals; every function is thread-safe.
 *
 * doc/serving.md gives every formula with its source; the code carries them too.
 *
 * Layout convention (the same as presets/validation/inference_runs.json): one serving instance
 * (a "replica") has tensor_par × attention_data_par × pipeline_par GPUs. Attention and the dense
 * layers are split tensor_par ways inside each of attention_data_par attention ranks (each rank
 * holds its own requests and their KV cache); the routed experts of an MoE block are spread over
 * all tensor_par × attention_data_par GPUs of a stage, expert_par ways by expert and
 * tensor_par·attention_data_par/expert_par ways inside each expert (expert_par 1: every expert
 * split over the stage, as TensorRT-LLM, vLLM and SGLang do when no expert parallelism is asked
 * for). */
#ifndef FATHOM_SERVING_H
#define FATHOM_SERVING_H

#include <stdbool.h>
#include <stdint.h>

#include "fathom_error.h"
#include "llm.h"
#include "model.h"

/* Number formats of weights and of the KV cache: model.h's formats of stored weights. fp4 is
 * NVFP4 (E2M1 values, one FP8 scale per 16: 4.5 bits a value); int4 is a weight-only 4-bit
 * format (AWQ/GPTQ, one 16-bit scale per group of 128: 4.125 bits) whose GEMMs run at the 16-bit
 * rate. mxfp4 is OpenAI's gpt-oss checkpoint: the routed experts in MXFP4 (E2M1 values, one E8M0
 * scale per 32: 4.25 bits), every other linear in BF16 (a weights format only;
 * serving_memory.c, gemm_rate). */
typedef enum {
    SERVING_DT_BF16 = MODEL_WEIGHTS_BF16,
    SERVING_DT_FP8 = MODEL_WEIGHTS_FP8,
    SERVING_DT_FP4 = MODEL_WEIGHTS_FP4,
    SERVING_DT_INT4 = MODEL_WEIGHTS_INT4,
    SERVING_DT_MXFP4 = MODEL_WEIGHTS_MXFP4,
    SERVING_DT__COUNT
} serving_dtype_t;

/* Engines, each with its documented scheduler and kernels (serving_engine.c). */
typedef enum {
    SERVING_ENGINE_TRTLLM = 0,
    SERVING_ENGINE_VLLM = 1,
    SERVING_ENGINE_SGLANG = 2,
    SERVING_ENGINE__COUNT
} serving_engine_t;

typedef enum { SERVING_SPEC_NONE = 0, SERVING_SPEC_MTP = 1, SERVING_SPEC_DRAFT = 2 } serving_spec_method_t;

/* Caps the codec enforces (and the core relies on). */
#define SERVING_MAX_PAR 4096          /* any one parallel degree */
#define SERVING_MAX_TOKENS 16777216.0 /* input or output tokens of one request: 2^24 */
#define SERVING_MAX_CONCURRENCY 1048576.0
#define SERVING_MAX_RATE 1e7          /* requests per second */
#define SERVING_MAX_REQUESTS 1e6      /* requests of an offline batch */
#define SERVING_MAX_SPEC_TOKENS 16
#define SERVING_CURVE_POINTS 24       /* the most points of a throughput-interactivity curve */

/* A system as serving sees it: Calculon's system (rates, memories, networks, attention
 * efficiency) plus what only serving reads. */
typedef struct {
    llm_system_t hw;
    double fp4_tflops;         /* dense FP4 tensor rate, TFLOP/s; 0: the GPU has none */
    double decode_attention_efficiency; /* share of mem1's bandwidth decode attention reads
                                         * the KV cache at; 0: the H100's measured 0.92 */
    double fp4_efficiency;     /* the share of the FP8 curve's efficiency an FP4 GEMM reaches
                                * (a measured ratio); 0: 1, the FP8 curve as it is */
    double price_per_gpu_hour; /* $; 0: unknown (no dollar figures) */
    double power_per_gpu_kw;   /* board power; 0: unknown (no energy figures) */
} serving_system_t;

typedef struct {
    int64_t tensor_par, pipeline_par, expert_par, attention_data_par; /* each >= 1 */
} serving_layout_t;

static inline int64_t serving_layout_gpus(const serving_layout_t *l)
{
    return l->tensor_par * l->attention_data_par * l->pipeline_par;
}

typedef struct {
    serving_spec_method_t method;
    int64_t tokens;    /* k drafted tokens per step, 1..SERVING_MAX_SPEC_TOKENS */
    double acceptance; /* α: chance that each drafted token is accepted, [0, 1] */
    const fathom_model_t *draft; /* the draft model (method draft); NULL for mtp */
} serving_spec_t;

typedef struct {
    serving_layout_t layout; /* the aggregated layout; the decode layout when disaggregated */
    serving_dtype_t weights, kv;
    double input_tokens, output_tokens;   /* means, >= 1 */
    double input_spread, output_spread;   /* standard deviations, >= 0 */
    /* uniform lengths (a benchmark's random dataset) between these bounds, the mean and spread
     * theirs; high 0: the spread is a normal's */
    double input_low, input_high, output_low, output_high;
    /* Load, one of: concurrency (requests in flight per replica), requests_per_s (arrivals per
     * replica, Poisson), or neither (0, 0): as many requests as the replica holds (saturation,
     * how offline benchmarks run). */
    double concurrency;
    double requests_per_s;
    /* A finite run (not with concurrency): num_requests requests queued at once or, with
     * requests_per_s, arriving at that rate, served until the last finishes (serving_offline.c);
     * 0: the steady state. */
    double num_requests;
    int64_t max_batch_tokens; /* tokens one step may take; 0: the engine's default */
    int64_t max_batch_size;   /* sequences one step may take; 0: the engine's default */
    int chunked_prefill;      /* 1 on, 0 off, -1: the engine's default */
    bool no_curve;            /* skip the throughput-interactivity curve (the plan's estimates) */
    double prefix_cache_hit;  /* fraction of input tokens found in the prefix cache, [0, 1) */
    double kv_memory_fraction; /* the engine's KV-cache share of memory; 0: its default */
    serving_spec_t speculative;
    serving_engine_t engine;
    /* TensorRT-LLM through its C++ executor (TensorRT engines: trtllm-bench before 1.0,
     * gptManagerBenchmark, Triton's backend) rather than the PyTorch backend's Python executor
     * that "trtllm" means: the step's bookkeeping is C++ (serving_engine.c). Not part of the
     * request's JSON; the validation sets it for rows measured on TensorRT engines. */
    bool cpp_executor;
    /* Disaggregated prefill and decode: prefill replicas of prefill_layout hand each request's
     * KV cache to decode replicas of `layout` over network tier kv_transfer_net. */
    bool disaggregated;
    serving_layout_t prefill_layout;
    int kv_transfer_net;
    /* prefill replicas per decode replica; 0: exactly what the decode replica's rate needs,
     * with no queueing in the prefill pool (give it to have the queue in TTFT; its prompt rate
     * then bounds the requests served) */
    double prefill_per_decode;
} serving_request_t;

/* Which resource sets a step's time. */
typedef enum {
    SERVING_BOUND_MEMORY = 0,  /* reading weights and KV cache from HBM */
    SERVING_BOUND_COMPUTE = 1, /* tensor-core FLOPs */
    SERVING_BOUND_NETWORK = 2, /* collectives and MoE dispatch */
    SERVING_BOUND_HOST = 3     /* kernel launches and the scheduler */
} serving_bound_t;

/* One step (one forward pass of the whole replica) and where its time goes, seconds. Each kernel
 * runs at the slower of its FLOPs and its bytes (a roofline); the lines below add up to total_s,
 * and the _memory_s/_compute_s pairs say how much each side would take alone. */
typedef struct {
    double tokens;            /* tokens the step processes on one attention rank */
    double gemm_s;            /* dense GEMMs: attention projections, dense MLP, shared experts,
                               * output layer */
    double weights_read_s;    /* of all GEMMs (dense and experts): weight bytes at HBM speed */
    double gemm_compute_s;    /* of all GEMMs: FLOPs at the matrix rate */
    double attention_s;       /* attention kernels */
    double kv_read_s;         /* of attention: KV-cache bytes at HBM speed */
    double attention_compute_s;
    double elementwise_s;     /* norms, activations, residual adds: bytes at HBM speed */
    double moe_experts_s;     /* routed experts' grouped GEMMs */
    double tp_collectives_s;  /* tensor-parallel all-reduces */
    double moe_dispatch_s;    /* MoE dispatch and combine */
    double pp_transfer_s;     /* pipeline hand-offs */
    double host_s;            /* kernel launches and scheduling not hidden */
    double total_s;
    double weight_bytes, kv_bytes, flops; /* per GPU */
    serving_bound_t bound;
} serving_step_t;

typedef struct {
    double concurrency;
    double output_tokens_per_s_per_gpu;
    double output_tokens_per_s_per_user;
    double ttft_s, tpot_s;
} serving_curve_point_t;

typedef struct {
    /* engine settings as run */
    int64_t max_batch_tokens, max_batch_size;
    bool chunked_prefill;
    double kv_memory_fraction;
    const char *prefill_kernel, *decode_kernel; /* attention kernels by name */
    /* memory, per GPU of the (decode) replica */
    double weight_bytes, workspace_bytes, kv_capacity_bytes, capacity_bytes;
    double kv_cache_bytes_per_token; /* whole model, one request's average over its context */
    double kv_bytes_per_request;     /* one request at its full length, whole model */
    double max_concurrency;          /* requests one replica holds (KV cache and batch limits) */
    bool fits_memory;
    /* the operating point */
    double concurrency;       /* requests in flight per replica */
    double requests_per_s;    /* completed per replica */
    serving_step_t prefill;   /* a step carrying one request's prefill (its first chunk) */
    serving_step_t decode;    /* the mean step at this concurrency */
    double ttft_s, ttft_p50_s, ttft_p99_s;
    double tpot_s;
    double tokens_per_step;   /* output tokens per sequence per step (speculative: > 1) */
    double output_tokens_per_s, output_tokens_per_s_per_gpu, output_tokens_per_s_per_user;
    double input_tokens_per_s_per_gpu;
    double gpus;              /* per replica (disaggregated: decode + its share of prefill) */
    double prefill_gpus, decode_gpus;
    double kv_transfer_s;     /* disaggregated: one request's KV cache over the network */
    double dollars_per_million_input, dollars_per_million_output;
    double joules_per_output_token, joules_per_input_token;
    bool saturated;           /* the load asked is beyond what the replica serves */
    int num_curve;
    serving_curve_point_t curve[SERVING_CURVE_POINTS];
    unsigned warnings;        /* serving_warning_t bits */
} serving_result_t;

typedef enum {
    SERVING_WARN_WEIGHT_ONLY = 1,      /* a weight format without a tensor rate: dequantized */
    SERVING_WARN_OVERLOADED = 2,       /* requests_per_s beyond the replica's throughput */
    SERVING_WARN_CONCURRENCY_CAPPED = 4, /* concurrency asked beyond max_concurrency */
    SERVING_WARN_KV_REPLICATED = 8,    /* tensor_par beyond the KV heads (or MLA): KV copied */
    SERVING_WARN_LOW_KV = 16,          /* fewer than 8 requests fit */
    SERVING_WARN_NO_FP4_RATE = 32,     /* fp4 weights on a GPU without an FP4 rate */
    SERVING_WARN_LONG_PREFILL = 64,    /* chunked prefill off and prompts beyond max_batch_tokens */
    SERVING_WARN_WEIGHTS_OVER_MEMORY = 128, /* a rank's weights and workspace exceed its memory */
    SERVING_WARN_NO_REQUEST_FITS = 256 /* the weights fit, one request's KV cache does not */
} serving_warning_t;
#define SERVING_WARN__COUNT 9
/* Codes and messages of the warning bits, by bit index ("weight_only_dequant", …). */
extern const char *const serving_warning_codes[];
extern const char *const serving_warning_messages[];

extern const char *const serving_dtype_names[];  /* "bf16", "fp8", "fp4", "int4", "mxfp4" */
extern const char *const serving_engine_names[]; /* "trtllm", "vllm", "sglang" */
extern const char *const serving_spec_names[];   /* "none", "mtp", "draft" */
extern const char *const serving_bound_names[];  /* "memory", "compute", "network", "host" */

/* Bytes one value takes in a format (2, 1, 0.5625, 0.515625). */
double serving_dtype_bytes(serving_dtype_t dt);

/* KV-cache bytes that one sequence of `context` tokens holds, whole model (every block, one
 * copy), in format kv:
 *   standard attention: 2 (K and V) · kv_heads · attn_size · bytes per block, times the tokens
 *     the block keeps: context, or min(context, sliding_window) in a windowed block;
 *   MLA: (kv_lora_rank + qk_rope_head_dim) · bytes per block (the compressed latent and the one
 *     RoPE key all heads share; DeepSeek-V2 §2.1.2);
 * plus the MTP depths' blocks when `mtp` (speculative decoding with them keeps their cache). */
double serving_kv_bytes(const fathom_model_t *m, serving_dtype_t kv, double context, bool mtp);

/* Estimates one configuration. 0 with *out filled (also when it does not fit: fits_memory false
 * and the figures as far as they go); -1 with err for a request the model cannot run
 * (FATHOM_E_INVALID_FIELD or FATHOM_E_INFEASIBLE_EXECUTION naming "serving.<field>"). */
int serving_estimate(const fathom_model_t *m, const serving_system_t *s,
                     const serving_request_t *r, serving_result_t *out, fathom_error_t *err);

/* The defaults a request with `engine` gets on system s for model m and layout l (what
 * serving_estimate fills in for 0 / -1 fields), and TensorRT-LLM's trtllm-bench heuristic for
 * max_batch_size and max_num_tokens (tensorrt_llm/bench/build/tuning.py, calc_engine_setting and
 * finetune_setting) for a benchmark of input/output tokens. */
typedef struct {
    int64_t max_batch_tokens, max_batch_size;
    bool chunked_prefill;
    double kv_memory_fraction;
} serving_engine_defaults_t;
void serving_engine_defaults(serving_engine_t engine, const fathom_model_t *m,
                             const serving_system_t *s, const serving_layout_t *l,
                             serving_engine_defaults_t *out);
/* How the checkpoint trtllm-bench loads stores its weights (the tool counts parameters from its
 * safetensors header, so a packed 4-bit pair counts once): ModelOpt's (the block linears in the
 * request's weight format; NVFP4 two values a byte with one FP8 scale per 16), or OpenAI's MXFP4
 * experts (gpt-oss: the routed experts two values a byte with one scale per 32, the rest BF16;
 * a quantization the tool's bytes table lacks, so 2 bytes an element). */
typedef enum { SERVING_CKPT_MODELOPT = 0, SERVING_CKPT_MXFP4_EXPERTS = 1 } serving_checkpoint_t;
void serving_trtllm_bench_settings(const fathom_model_t *m, const serving_system_t *s,
                                   const serving_request_t *r, serving_checkpoint_t ckpt,
                                   int64_t *max_batch_size, int64_t *max_num_tokens);

/* ---- the serving plan (serving_plan.c) ----
 * For a traffic level and latency targets, each system's cheapest fleet: for every layout the
 * plan tries (serving_plan_layouts), the fewest replicas whose estimate at the per-replica rate
 * meets every target (serving_plan_candidate), then the cheapest per system and the Pareto front
 * of cost against TPOT (serving_plan_select). A candidate's request is exactly what POST
 * /v1/inference re-estimates: the same figures come back. */

#define SERVING_PLAN_MAX_SYSTEMS 16
#define SERVING_PLAN_MAX_LAYOUTS 512 /* layouts of one system */

typedef struct {
    double requests_per_s;              /* the whole fleet's arrivals, > 0 */
    double input_tokens, output_tokens; /* means */
    double input_spread, output_spread; /* standard deviations */
    double input_low, input_high, output_low, output_high; /* uniform bounds; high 0: normal */
    double ttft_p50_s, ttft_p99_s, tpot_s; /* targets; 0: none */
    serving_engine_t engine;
    unsigned datatypes;     /* bits 1 << serving_dtype_t of weight formats to try; 0: the
                             * model's checkpoint_weights, with fp8 beside a BF16 checkpoint on
                             * GPUs with an FP8 rate */
    bool aggregated, disaggregated; /* modes to try (neither: both) */
    int64_t max_gpus;       /* GPUs of one replica at most; 0: max(8, the first tier's size) */
} serving_plan_spec_t;

/* One candidate: a layout on one system, with the fewest replicas that meet the targets. */
typedef struct {
    int system;                 /* index into the plan's systems */
    serving_request_t request;  /* one (decode) replica's request, at requests_per_s / replicas */
    bool fits;                  /* the layout holds the model and one request */
    bool meets;                 /* some replica count meets every target */
    const char *reason;         /* why not, when it does not ("" when it does) */
    int64_t replicas;           /* (decode) replicas */
    int64_t prefill_replicas;   /* disaggregated: prefill replicas of the fleet (rounded up) */
    double gpus;                /* the fleet's GPUs */
    double dollars_per_hour;
    double dollars_per_million_output; /* the fleet's cost over its output tokens */
    double ttft_p50_s, ttft_p99_s, tpot_s; /* at the fleet's rate; fits without meeting: at one
                                            * request in flight, the least the layout does */
    double output_tokens_per_s_per_gpu;
    int evaluations;            /* estimates it took */
    bool pareto;                /* on the dollars–TPOT front among the candidates that meet */
} serving_plan_candidate_t;

/* The layouts the plan tries on system s (weight formats × tensor, attention-data, expert and
 * pipeline degrees within max_gpus × aggregated/disaggregated), as requests without a load;
 * at most cap written, returns how many. */
int serving_plan_layouts(const fathom_model_t *m, const serving_system_t *s,
                         const serving_plan_spec_t *p, serving_request_t *out, int cap);
/* The most GPUs of one replica the plan tries on s: p->max_gpus, or max(8, the first tier). */
int64_t serving_plan_max_gpus(const serving_system_t *s, const serving_plan_spec_t *p);
/* Evaluates one layout: the fewest replicas meeting the targets (the latencies fall as replicas
 * rise: a doubling search, then bisection). Always fills *out (fits/meets/reason say what came
 * of it). */
void serving_plan_candidate(const fathom_model_t *m, const serving_system_t *s, int system,
                            const serving_plan_spec_t *p, const serving_request_t *layout,
                            serving_plan_candidate_t *out);
/* Marks the Pareto front (dollars per hour against TPOT, both lower is better) among the
 * candidates that meet, and writes for each of num_systems systems the index of its cheapest
 * (best[i] = -1: none meets). */
void serving_plan_select(serving_plan_candidate_t *c, int n, int num_systems, int *best);

#endif

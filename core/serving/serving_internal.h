/* serving_internal.h — private to core/serving: the context one estimate shares between its
 * files (memory, engine, step, latency), and the functions they call across. Not an API. */
#ifndef FATHOM_SERVING_INTERNAL_H
#define FATHOM_SERVING_INTERNAL_H

#include "serving.h"

/* The kinds of block a stage holds: dense or MoE, full or sliding-window attention. */
enum { SV_DENSE_FULL = 0, SV_DENSE_WINDOW = 1, SV_MOE_FULL = 2, SV_MOE_WINDOW = 3, SV_KINDS = 4 };

/* One pipeline stage: how many blocks of each kind, and whether it holds the output layer. */
typedef struct {
    double blocks[SV_KINDS];
    bool first, last;
} sv_stage_t;

/* What one estimate of one layout derives once (serving_memory.c fills it). */
typedef struct {
    const fathom_model_t *m;
    const serving_system_t *s;
    const serving_request_t *r;
    serving_layout_t l;
    serving_engine_t engine;
    double tp, dp, pp, ep, etp; /* degrees as reals; etp = tp·dp/ep */
    double bpw;                 /* bytes per weight value of the block linears */
    double bpw_experts;         /* of the routed experts (bpw but for mxfp4) */
    double kv_bpe;              /* bytes per KV-cache value */
    double gemm_flops;          /* FLOP/s peak of the GEMMs in the weight format */
    const llm_curve_t *gemm_curve;
    double expert_flops;        /* the routed experts' grouped GEMMs (gemm_flops but for mxfp4) */
    const llm_curve_t *expert_curve;
    double expert_act_bytes;    /* bytes a value of the experts' quantized input; 0: 16-bit in */
    double attn_flops;          /* FLOP/s of the attention kernels (16-bit peak × efficiency) */
    double gemm16_flops;        /* FLOP/s 16-bit matrix peak */
    double vector_flops;
    double mem_bw;              /* bytes/s of HBM, peak */
    bool weight_only;           /* the weight format has no tensor rate: dequantized */
    int tp_net, ep_net, pp_net; /* network tiers of the groups */
    int num_stages;             /* distinct stages (stages with the same blocks cost the same) */
    sv_stage_t stages[8];
    /* KV cache per GPU, per token of context, of one block of each attention kind */
    double kv_block_token;
    double kv_window;           /* tokens a windowed block keeps in the KV cache (INFINITY: all) */
    bool kv_replicated;         /* tensor_par beyond the KV heads, or MLA under TP */
    bool cuda_graphs_decode;    /* decode steps replayed as CUDA graphs */
} sv_ctx_t;

/* One step's load on one attention rank and one micro-batch. */
typedef struct {
    double decode_seqs;        /* sequences in decode */
    double tokens_per_seq;     /* tokens each decode sequence runs (1, or k+1 verifying drafts) */
    double decode_context;     /* mean tokens a decode token attends to */
    double prefill_tokens;     /* prompt tokens computed this step */
    double prefill_context;    /* mean tokens a prompt token attends to */
    double prefill_prefix;     /* cached tokens of the prompts whose KV the step reads */
    double prefill_seqs;       /* prompts that finish this step (their last token is sampled) */
} sv_load_t;

/* Settings an estimate runs with (the request's, or the engine's defaults; serving_model.c). */
typedef struct {
    int64_t max_batch_tokens, max_batch_size;
    bool chunked;
    double kv_fraction;
    double reserve_tokens;  /* tokens of KV one request reserves */
    double decode_context;  /* mean tokens a decode slot's sequence holds: I + O/2 + σ_O²/(2·O) */
    double tau, tps;        /* output tokens per step per sequence; tokens it runs per step */
    double in_eff, prefix;  /* prompt tokens computed, and found in the cache */
} sv_settings_t;

/* serving_model.c */
void serving__settings(const sv_ctx_t *c, const serving_request_t *r, sv_settings_t *st);
double serving__draft_time(const sv_ctx_t *c, const sv_settings_t *st, double n, double context);
/* The draft (method draft: its model; mtp: the MTP depths as a model) as it runs: on the target's
 * GPUs, split as the target's stage (tensor_par, attention_data_par; expert_par for an MoE
 * draft), not pipelined. d->c points into d. */
typedef struct {
    fathom_model_t m;
    serving_request_t r;
    sv_ctx_t c;
} sv_draft_t;
int serving__draft_ctx(const sv_ctx_t *c, sv_draft_t *d, fathom_error_t *err);

/* serving_offline.c: a finite run of n requests, queued at once (rate 0) or arriving at rate
 * requests/s, step by step. -1 with err (naming serving.num_requests) for a run too long to
 * follow. */
typedef struct {
    double makespan_s, mean_concurrency, ttft_s, tpot_s, steps;
    double ttft_p50_s, ttft_p99_s; /* the requests at ranks ceil(0.5·N) and ceil(0.99·N) */
    double output_per_request;     /* the output tokens a request made, on average */
    double input_per_request;      /* its prompt tokens, on average */
} sv_offline_t;
int serving__offline(const sv_ctx_t *c, const sv_settings_t *st, double max_concurrency,
                     double num_requests, double rate, sv_offline_t *out, fathom_error_t *err);
/* A request's prompt or output lengths: the mean, the spread (a standard deviation; 0: every
 * request the mean) and, for uniform lengths, their bounds (high 0: a normal spread). */
typedef struct {
    double mean, spread, low, high;
} serving_lengths_t;
/* The length of the request at rank r (0 … n − 1, shortest first) of a finite run of n. */
double serving__length_at_rank(const serving_lengths_t *l, double rank, double n);

/* serving_memory.c */
int serving__ctx_init(sv_ctx_t *c, const fathom_model_t *m, const serving_system_t *s,
                      const serving_request_t *r, const serving_layout_t *l, fathom_error_t *err);
double serving__weight_bytes(const sv_ctx_t *c, const sv_stage_t *st);
double serving__kv_request_bytes(const sv_ctx_t *c, const sv_stage_t *st, double context);
double serving__kv_window(const fathom_model_t *m, serving_engine_t engine);
/* serving_kv_bytes with the windowed blocks keeping w tokens of context (serving__kv_window:
 * what the engine holds) in place of the model's window. */
double serving__kv_bytes(const fathom_model_t *m, serving_dtype_t kv, double context, bool mtp,
                         double w);
double serving__workspace_bytes(const sv_ctx_t *c, int64_t max_batch_tokens,
                                int64_t max_batch_size);
int serving__network_for(const llm_system_t *s, double span);

/* serving_engine.c */
double serving__host_s(const sv_ctx_t *c, const sv_load_t *ld, double gpu_s);
double serving__checkpoint_bytes(const fathom_model_t *m, serving_dtype_t w,
                                 serving_checkpoint_t ckpt);
const char *serving__attention_kernel(const sv_ctx_t *c, bool decode);

/* serving_step.c: one step of one stage on one GPU, the slowest stage's. */
void serving__step(const sv_ctx_t *c, const sv_load_t *ld, serving_step_t *out);
/* One tensor-parallel all-reduce of `bytes` (NCCL's ring latency, the tier's bytes). */
double serving__tp_all_reduce_s(const sv_ctx_t *c, double bytes);
/* The MoE dispatch and combine of T tokens an attention rank with attention data parallelism. */
double serving__moe_exchange_s(const sv_ctx_t *c, double T);

/* Small helpers */
static inline double sv_max(double a, double b) { return a > b ? a : b; }
static inline double sv_min(double a, double b) { return a < b ? a : b; }

#endif

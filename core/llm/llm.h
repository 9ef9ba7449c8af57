/* API-STABLE */
/* llm.h — Calculon's LLM step-time and memory model (calculon-ai/calculon, commit caa4b11),
 * re-implemented in C: for one model, one system and one parallel execution, how long one training
 * (or inference) step takes, where the time goes, and how much memory each processor needs in
 * tier 1 (device memory) and tier 2 (offload memory).
 *
 * For Calculon's block (model.calculon_block, model.h) the model is Calculon's exactly: the
 * transformer blocks only, and the 96 statistics agree with Calculon's to ~1e-12. For the modern
 * block it adds what runs of 2024–2026 have (doc/step_model.md gives every formula):
 * grouped-query attention, gated MLPs, RMSNorm, Q/K/V biases, the token embedding on the first
 * pipeline stage and the final norm, output layer and vocab-parallel cross-entropy on the last
 * (so those stages are heavier: the pipeline runs at the pace of the heaviest), and, for any
 * block, fused (flash) attention and FP8 GEMMs as Transformer Engine runs them.
 *
 * Units in the structs below are the ones of Calculon's JSON files (TFLOP/s, GFLOP thresholds,
 * GiB, GB/s, MB thresholds), so a system decodes and encodes back without rounding; the
 * conversion to FLOP/s and bytes happens inside llm_estimate exactly as Calculon does it.
 *
 * llm_estimate is pure, allocation-free and thread-safe (it only reads its inputs): the search
 * calls it millions of times. All arrays are fixed-size; the caps are below. */
#ifndef FATHOM_LLM_H
#define FATHOM_LLM_H

#include <stdbool.h>
#include <stdint.h>

#include "fathom_error.h"
#include "model.h"
#include "llm_stats.h"

/* Calculon's validation against the sequence-parallelism paper is in llm_validation.h. */

/* Caps on the system description (a decoder refuses more). */
#define LLM_MAX_CURVE_POINTS 32 /* points of one efficiency curve */
#define LLM_MAX_NETWORKS 8      /* network tiers of a system */

/* Datatypes Calculon knows, with their element sizes 1, 2, 2, 4 bytes. */
typedef enum {
    LLM_DT_FLOAT8 = 0,
    LLM_DT_FLOAT16 = 1,
    LLM_DT_BFLOAT16 = 2,
    LLM_DT_FLOAT32 = 3,
    LLM_DT__COUNT
} llm_datatype_t;

/* One point of an efficiency curve: an operation at least `threshold` large (GFLOP for
 * processors, MB for memories) runs at `efficiency` of peak. Curves are searched in the order
 * given, first match wins (Calculon's rule); an operation no point covers is an error. */
typedef struct {
    double threshold;
    double efficiency; /* (0, 1] */
} llm_curve_point_t;

typedef struct {
    int num_points; /* 1..LLM_MAX_CURVE_POINTS */
    llm_curve_point_t points[LLM_MAX_CURVE_POINTS];
} llm_curve_t;

/* A processing engine's rate for one datatype. Processor curves have strictly decreasing
 * thresholds (Calculon asserts it; the codec checks it). */
typedef struct {
    bool present; /* false: the engine does not support this datatype */
    double tflops;
    llm_curve_t gflops_efficiency;
} llm_rate_t;

typedef struct {
    llm_rate_t rate[LLM_DT__COUNT];
} llm_processor_t;

typedef struct {
    double gib;  /* capacity, GiB (2^30 bytes) */
    double gbps; /* bandwidth, GB/s (1e9 bytes/s) */
    llm_curve_t mb_efficiency;
} llm_memory_t;

typedef enum {
    LLM_OP_P2P = 0,
    LLM_OP_REDUCE_SCATTER = 1,
    LLM_OP_ALL_GATHER = 2,
    LLM_OP_ALL_REDUCE = 3,
    LLM_OP__COUNT
} llm_net_op_t;

/* A collective costs latency + size·scalar·(1 + offset/peers) / (bandwidth·efficiency).
 * p2p has no offset (0). */
typedef struct {
    double scalar; /* > 0 */
    double offset;
} llm_net_op_cost_t;

/* What kind of link a network tier is: its per-step hop latencies differ (NCCL's hwLat, NVLink,
 * PCIe, network). AUTO (the field absent): by position, llm_network_link. */
typedef enum {
    LLM_LINK_AUTO = 0,
    LLM_LINK_NVLINK = 1,
    LLM_LINK_PCIE = 2,
    LLM_LINK_NETWORK = 3
} llm_link_t;

typedef struct {
    double bandwidth_gbps; /* GB/s per processor, > 0 */
    double efficiency;     /* (0, 1] */
    int64_t size;          /* processors this tier connects, >= 0 */
    double latency_s;
    llm_net_op_cost_t ops[LLM_OP__COUNT];
    bool must_be_filled;    /* the parallelism mapped on it must divide size exactly */
    double processor_usage; /* fraction of compute taken by communication, [0, 1) */
    /* Under system.collectives "nccl" only (llm_collective.h): NVLink SHARP all-reduce bus
     * bandwidth as a fraction of `bandwidth` (0: none), in-network reduction across this tier
     * (InfiniBand SHARP), and the share of bus bandwidth lost per doubling of the domains a
     * collective crosses on this tier. */
    double nvls_efficiency;
    bool sharp;
    double scale_falloff;
    llm_link_t link;
} llm_network_t;

/* Attention as the kernels compute it: Calculon's unfused batched matmuls, softmax and dropout
 * moving the s×s scores through memory, or one fused (flash) kernel that keeps them on chip. */
/* The named kernels (doc/stacks.md, "Attention kernels") are fused kernels too, each at its own
 * measured speed (system.attention_kernels) where the system gives one, else at the system's
 * attention_efficiency as "fused" is: FlashAttention-2 and -3 (Dao-AILab), cuDNN's fused
 * attention, PyTorch's scaled_dot_product_attention as it dispatches by default (its flash
 * backend, FlashAttention-2, on Hopper and Ampere), and Triton's fused attention. */
typedef enum {
    LLM_ATTN_KERNEL_UNFUSED = 0,
    LLM_ATTN_KERNEL_FUSED = 1,
    LLM_ATTN_KERNEL_FLASH2 = 2,
    LLM_ATTN_KERNEL_FLASH3 = 3,
    LLM_ATTN_KERNEL_CUDNN = 4,
    LLM_ATTN_KERNEL_SDPA = 5,
    LLM_ATTN_KERNEL_TRITON = 6,
    LLM_ATTN_KERNEL__COUNT
} llm_attn_kernel_t;

/* One attention kernel's measured speed (system.attention_kernels): the fraction of the matrix
 * engine's peak it reaches at head size 128 as a function of the sequence length, forward and
 * backward, without and with a causal mask (causal FLOPs counted as half the square, as the
 * published benchmarks count them), interpolated in log(seq) between points and held beyond the
 * ends; head size 64 runs at head_dim_64 of it (linear between 64 and 128, 128's above). */
#define LLM_MAX_ATTN_POINTS 8
typedef struct {
    int n;
    double seq[LLM_MAX_ATTN_POINTS];
    double eff[LLM_MAX_ATTN_POINTS];
} llm_attn_curve_t;

typedef struct {
    bool present;
    llm_attn_curve_t fwd, bwd, fwd_causal, bwd_causal;
    double head_dim_64;
} llm_attn_kernel_table_t;

typedef enum { LLM_PROC_ROOFLINE = 0, LLM_PROC_NO_OVERLAP = 1 } llm_processing_mode_t;
/* How collectives are costed (llm_collective.h): Calculon's formula per tier, or NCCL's
 * algorithms over the tiers a group spans. A system that leaves `collectives` out (the presets,
 * Calculon's files) is costed by the execution's stack: Calculon's formula under megatron, whose
 * rows the presets were validated on with it, NCCL's under torchtitan and fsdp, whose shard groups
 * hold every GPU of a node and cross nodes on all its NICs (doc/collectives.md, "Which model").
 * llm_estimate* resolve it; elsewhere it reads as Calculon's formula. */
typedef enum {
    LLM_COLLECTIVES_CALCULON = 0,
    LLM_COLLECTIVES_NCCL = 1,
    LLM_COLLECTIVES_BY_STACK = 2
} llm_collectives_t;

typedef struct {
    llm_processor_t matrix; /* matrix (tensor-core) engine */
    llm_processor_t vector; /* vector engine */
    llm_memory_t mem1;      /* tier 1: device memory */
    llm_memory_t mem2;      /* tier 2: offload memory */
    llm_processing_mode_t processing_mode;
    int num_networks; /* 1..LLM_MAX_NETWORKS */
    llm_network_t networks[LLM_MAX_NETWORKS];
    /* Fraction of the matrix engine's peak a fused (flash) attention kernel reaches, forward
     * and backward alike: attention kernels do not reach GEMM efficiency (softmax, masking and
     * tiling overheads). Only fused attention uses it. (0, 1]. */
    double attention_efficiency;
    /* Host seconds to launch one kernel from the framework, and one kernel replayed from a CUDA
     * graph (llm_host.h). 0: no host side (Calculon's systems and any that leave them out). */
    double host_launch_s;
    double graph_launch_s;
    llm_collectives_t collectives;
    /* Measured speed of the named attention kernels, by llm_attn_kernel_t (the unfused and
     * fused entries unused); a kernel without one runs at attention_efficiency. */
    llm_attn_kernel_table_t attention_kernels[LLM_ATTN_KERNEL__COUNT];
} llm_system_t;


/* A system object that leaves attention_efficiency out gets this: FlashAttention-2 forward and
 * backward on A100 and H100 reach about half of the dense BF16 peak at head size 128 (Dao 2023,
 * "FlashAttention-2", fig. 5–7); presets give their own measured value. */
#define LLM_DEFAULT_ATTENTION_EFFICIENCY 0.5

typedef enum { LLM_ATTN_MULTIHEAD = 0, LLM_ATTN_MULTIQUERY = 1 } llm_attention_t;
typedef enum { LLM_RECOMPUTE_FULL = 0, LLM_RECOMPUTE_ATTN_ONLY = 1, LLM_RECOMPUTE_NONE = 2 } llm_recompute_t;
/* Modules recomputed by selective recompute (Megatron's recompute_granularity "selective" with
 * recompute_modules), bits of llm_execution_t.recompute_modules: the module's forward reruns in
 * backward and the output it hands on is not kept. */
typedef enum {
    LLM_RECOMPUTE_MOE_ACT = 1,     /* the routed experts' activation; the down GEMM's input */
    LLM_RECOMPUTE_MLA_UP_PROJ = 2, /* MLA's up-projections and RoPE; attention's Q, K and V */
    LLM_RECOMPUTE_MOE = 4,         /* an MoE block's whole MLP from its input, the a2a again */
    LLM_RECOMPUTE_LAYERNORM = 8,   /* each block's two norms; what reads their output keeps none */
    LLM_RECOMPUTE_MLP = 16,        /* a dense block's whole MLP from its input, collectives too */
    LLM_RECOMPUTE_CORE_ATTN = 32,  /* the attention core (Megatron's default module): unfused, the
                                    * scores, softmax and dropout (attn_only); fused, the kernel's
                                    * forward again, its log-sum-exp (and FP8's bf16 O) not kept */
    LLM_RECOMPUTE_SHARED_EXPERTS = 64, /* an MoE block's shared experts from their input */
} llm_recompute_module_t;
/* The most module sets llm_recompute_module_ladder hands out. */
#define LLM_RECOMPUTE_MODULE_SETS 4
typedef enum { LLM_TP_COMM_AR = 0, LLM_TP_COMM_P2P_RS_AG = 1, LLM_TP_COMM_RS_AG = 2 } llm_tp_comm_t;
typedef enum { LLM_TP_OVERLAP_NONE = 0, LLM_TP_OVERLAP_RING = 1, LLM_TP_OVERLAP_PIPE = 2 } llm_tp_overlap_t;
/* The software stack that runs the step (doc/stacks.md). Megatron-Core with Transformer Engine
 * is Calculon's and Fathom's behaviour to date: fused elementwise kernels, Megatron's collectives.
 * The PyTorch-native stacks run the same model through PyTorch's own kernels: torchtitan (FSDP2,
 * DTensor tensor/context/pipeline parallelism, optional torch.compile, torchao Float8) and FSDP
 * (FSDP1 as Hugging Face Accelerate and Composer run it: data-parallel sharding only). */
typedef enum {
    LLM_STACK_MEGATRON = 0,
    LLM_STACK_TORCHTITAN = 1,
    LLM_STACK_FSDP = 2
} llm_stack_t;
/* How FP8 GEMMs scale their operands (execution.fp8_recipe). current: Transformer Engine's
 * per-tensor current scaling (Megatron's FP8-CS, the default there); tensorwise: torchao's
 * dynamic per-tensor scaling (torchtitan's default); rowwise: torchao's per-row scales (axiswise);
 * delayed: Transformer Engine's delayed scaling from an amax history; mxfp8: Blackwell's 1×32
 * microscaling blocks; blockwise: 128×128 weight / 1×128 activation blocks (DeepSeek-V3's). */
typedef enum {
    LLM_FP8_CURRENT = 0,
    LLM_FP8_TENSORWISE = 1,
    LLM_FP8_ROWWISE = 2,
    LLM_FP8_DELAYED = 3,
    LLM_FP8_MXFP8 = 4,
    LLM_FP8_BLOCKWISE = 5
} llm_fp8_recipe_t;
/* Selective activation checkpointing by op (execution.selective_ac). */
typedef enum { LLM_SAC_NONE = 0, LLM_SAC_OP = 1 } llm_selective_ac_t;
/* The PyTorch stacks' cross-entropy (execution.loss_kernel): torch's cross_entropy on the logits
 * cast to fp32, or a fused kernel on the 16-bit logits (flash-attn's CrossEntropyLoss). */
typedef enum { LLM_LOSS_TORCH = 0, LLM_LOSS_FUSED = 1 } llm_loss_kernel_t;
/* How the MoE dispatch and combine move tokens: alltoall sends every copy of a token straight to
 * each rank holding one of its experts (Megatron's alltoall dispatcher); flex (DeepEP, HybridEP:
 * Megatron's flex dispatcher) sends a token over the higher tier once per remote tier-0 domain
 * that holds any of its experts and forwards it inside that domain over tier 0. FREE is not a
 * user's choice: the search's bound estimates flex executions with dispatch costing nothing. */
typedef enum {
    LLM_MOE_DISPATCH_ALLTOALL = 0,
    LLM_MOE_DISPATCH_FLEX = 1,
    LLM_MOE_DISPATCH__FREE = 2
} llm_moe_dispatcher_t;

/* What CUDA graphs capture (Megatron's cuda_graph_impl and cuda_graph_scope, llm_host.h):
 * nothing (every kernel launched eagerly), the attention part of each block ("attn"), that and
 * the MoE router and the dispatcher's preprocessing ("attn", "moe_router", "moe_preprocess":
 * what NVIDIA's MoE recipes capture; dropless routing leaves the rest uncapturable), the whole
 * iteration (cuda_graph_impl "full_iteration", experts padded to a fixed capacity), or the
 * router and preprocessing alone ("moe_router", "moe_preprocess", as some recipes set). */
typedef enum {
    LLM_GRAPHS_NONE = 0,
    LLM_GRAPHS_ATTENTION = 1,
    LLM_GRAPHS_PARTIAL = 2,
    LLM_GRAPHS_FULL = 3,
    LLM_GRAPHS_ROUTER = 4 /* "moe_router" and "moe_preprocess" without "attn" */
} llm_cuda_graphs_t;
/* The pipeline schedule (execution.pipeline_schedule; llm_memory.c, doc/memory.md). 1F1B with
 * pipeline_interleaving > 1 is Megatron's interleaved schedule (llm_pp_schedule). */
typedef enum {
    LLM_PP_1F1B = 0,        /* warm-up of pp − rank microbatches, then one forward, one backward */
    LLM_PP_INTERLEAVED = 1, /* Megatron's virtual stages: pipeline_interleaving chunks per rank */
    LLM_PP_ZERO_BUBBLE = 2, /* ZB-H1 (Qi et al. 2024): weight gradients fill the bubble */
    LLM_PP_DUALPIPE = 3,    /* DeepSeek-V3's bidirectional schedule: two stages per rank */
    LLM_PP__COUNT
} llm_pp_schedule_t;
/* Datatype of Adam's two moments (execution.optimizer_state_datatype): float32, or 16-bit as
 * DeepSeek-V3 keeps them (Megatron's --exp-avg-dtype/--exp-avg-sq-dtype). */
typedef enum {
    LLM_STATE_FLOAT32 = 0,
    LLM_STATE_BFLOAT16 = 1,
    LLM_STATE_FLOAT16 = 2,
    LLM_STATE__COUNT
} llm_state_dtype_t;
/* Fine-tuning (llm_finetune.c, doc/finetune.md). FULL trains every weight as pre-training does.
 * LORA freezes every weight of the model (no weight gradients, no gradient buffer, no optimizer
 * state, no data-parallel reduction of them) and trains two low-rank matrices A (n_in × rank)
 * and B (rank × n_out) beside each targeted projection of every block (Hu et al. 2021, "LoRA",
 * sec. 4). QLORA is LoRA over a base held in 4-bit NormalFloat with double-quantized constants,
 * dequantized to the compute datatype for each GEMM (Dettmers et al. 2023, "QLoRA", sec. 3). */
typedef enum {
    LLM_FINETUNE_NONE = 0, /* pre-training (Calculon's and every golden case) */
    LLM_FINETUNE_FULL = 1,
    LLM_FINETUNE_LORA = 2,
    LLM_FINETUNE_QLORA = 3
} llm_finetune_method_t;
/* The projections LoRA may adapt (PEFT's target_modules names in the Llama, Qwen and DeepSeek
 * checkpoints), bits of targets. gate, up and down name a dense MLP's, the shared experts' and
 * every routed expert's (PEFT matches a module by its name's last part; Mixtral's w1, w3 and w2
 * are gate, up and down); the Q_A..KV_B four are multi-latent attention's. */
typedef enum {
    LLM_LORA_Q = 1, LLM_LORA_K = 2, LLM_LORA_V = 4, LLM_LORA_O = 8,
    LLM_LORA_GATE = 16, LLM_LORA_UP = 32, LLM_LORA_DOWN = 64,
    LLM_LORA_Q_A = 128, LLM_LORA_Q_B = 256, LLM_LORA_KV_A = 512, LLM_LORA_KV_B = 1024
} llm_lora_target_t;
/* Every projection the model has (PEFT's "all-linear" but the output layer): targets left out. */
#define LLM_LORA_ALL_TARGETS 2047u
#define LLM_LORA_NUM_TARGETS 11
/* The datatype of a frozen base: a Calculon datatype, or NF4 (QLoRA's 4-bit NormalFloat). */
#define LLM_BASE_NF4 LLM_DT__COUNT
typedef struct {
    llm_finetune_method_t method;
    int64_t rank;     /* LoRA's r; LORA and QLORA */
    unsigned targets; /* llm_lora_target_t bits; LORA and QLORA */
    int base_datatype; /* llm_datatype_t or LLM_BASE_NF4: the frozen weights' datatype */
    /* gate, up and down adapt the shared experts and dense MLPs but not the routed experts
     * (execution.finetune.routed_experts false); false: every expert too, as PEFT's names do */
    bool skip_routed_experts;
} llm_finetune_t;

/* Calculon's execution object, all 23 fields, in Calculon's order, then Fathom's. */
typedef struct {
    int64_t num_procs;
    int64_t tensor_par;
    int64_t pipeline_par;
    int64_t data_par;
    int tensor_par_net; /* index into system.networks */
    int pipeline_par_net;
    int data_par_net;
    int64_t batch_size; /* global batch, samples */
    int64_t microbatch_size;
    llm_datatype_t datatype;
    bool fused_activation;
    llm_attention_t attention_type;
    llm_recompute_t activation_recompute;
    int64_t pipeline_interleaving;
    bool optimizer_sharding;
    llm_tp_comm_t tensor_par_comm_type;
    llm_tp_overlap_t tensor_par_overlap;
    bool seq_par_ag_redo;
    bool data_par_overlap;
    bool weight_offload;
    bool activations_offload;
    bool optimizer_offload;
    bool training;
    /* Fathom's (absent: Calculon's behaviour) */
    llm_attn_kernel_t attention_kernel;
    /* FP8 training as Transformer Engine runs it: the linear layers' GEMMs at the matrix
     * engine's float8 rate on FP8 copies of their inputs and weights; attention, norms and
     * elementwise work stay in `datatype` (which must be float16 or bfloat16). */
    bool fp8;
    /* FP8 primary weights (Megatron's --fp8-param-gather, Transformer Engine's fp8_model_init;
     * NeMo's and Megatron-Bridge's FP8 recipes set it): the block linears' weights live only as
     * FP8 (the weight and its transpose, 2 bytes per parameter), with no `datatype` copy; the
     * fp32 master copy stays in the optimizer. Needs fp8. Memory only. */
    bool fp8_params;
    /* Gradients held, accumulated over microbatches and reduced in `datatype` (2 bytes per
     * parameter in bfloat16) instead of float32 (4): Megatron's grad_reduce_in_fp32 = False,
     * Megatron-LM's default and what Megatron-Bridge's performance recipes set. Memory only:
     * the data-parallel reduction already moves `datatype` bytes. */
    bool low_precision_gradients;
    /* Context parallelism (ring attention): the sequence split over context_par processors,
     * each holding two chunks (causal load balancing). < 1 reads as 1. Modern block only. */
    int64_t context_par;
    int context_par_net;
    /* Sharded data parallelism: 1 optimizer state (Calculon's optimizer_sharding, Megatron's
     * distributed optimizer), 2 also gradients, 3 also parameters (FSDP). Modern block for 2-3. */
    int zero_stage;
    /* Processors that share one set of shards (HSDP: shard within, replicate across); divides
     * data_par × context_par; < 1 reads as all of them. */
    int64_t shard_group;
    /* Mixture of experts (model.moe; llm_moe.c). Expert layers are folded onto the processors of
     * attention: expert_par × expert_tensor_par × expert data parallel = tensor_par × data_par
     * (× context_par once it exists), as Megatron-Core's parallel folding lays them out. */
    int64_t expert_par;        /* experts split over this many ranks; divides num_experts */
    int64_t expert_tensor_par; /* each expert's GEMMs split this many ways */
    int expert_par_net;        /* tier of the dispatch/combine all-to-all (index into networks) */
    double moe_load_imbalance; /* >= 1: the busiest rank's tokens over the mean (1 balanced) */
    double moe_capacity_factor; /* > 0: tokens beyond capacity × mean are dropped; 0 none */
    bool moe_a2a_overlap;      /* dispatch/combine hidden behind another microbatch's compute */
    bool moe_fp8_dispatch;     /* the forward dispatch and the combine's backward sent in FP8 */
    llm_moe_dispatcher_t moe_dispatcher; /* alltoall or flex (deduplicated per tier-0 domain) */
    /* With full recompute, only the first recompute_blocks blocks of every pipeline chunk are
     * recomputed and the others keep their activations (Megatron's recompute_method "block"
     * with recompute_num_layers); 0 recomputes every block. Modern block only. */
    int64_t recompute_blocks;
    /* Selective recompute (llm_recompute_module_t bits) beside activation_recompute "none" or
     * "attn_only"; 0 none. Modern block only. */
    unsigned recompute_modules;
    /* The kernels CUDA graphs replay instead of the host launching them (llm_host.h). */
    llm_cuda_graphs_t cuda_graphs;
    /* The pipeline schedule (llm_pp_schedule_t; 0 = 1F1B, interleaved when
     * pipeline_interleaving > 1). Modern block only beyond those two. */
    llm_pp_schedule_t pipeline_schedule;
    /* The activation function's input kept for backward in FP8 (Megatron's
     * --activation-func-fp8-input-store; DeepSeek-V3 caches SwiGLU's inputs so). Needs fp8. */
    bool fp8_activation_cache;
    /* Adam's two moments in this datatype (the fp32 master copy stays fp32). */
    llm_state_dtype_t optimizer_state_datatype;
    /* Blocks on the first and the last pipeline stage (Megatron's
     * --decoder-first/last-pipeline-num-layers; 0: the even split), the other stages sharing
     * the rest evenly: the stages holding the embedding and the output layer lighter. */
    int64_t first_stage_blocks, last_stage_blocks;
    /* PyTorch's caching allocator without expandable segments (execution.expandable_segments
     * false): it reserves more than it hands out (llm_memory.c's fragmentation term). The
     * published runs set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, so false is the
     * default here. */
    bool fixed_segments;
    /* The software stack (llm_stack_t; doc/stacks.md). Megatron (0) is the behaviour above. */
    llm_stack_t stack;
    /* torch.compile over each block (PyTorch stacks): the elementwise ops fused into a few
     * Triton kernels instead of one memory pass each. */
    bool compile;
    /* How FP8 GEMMs scale (with fp8). The zero value is Megatron's current scaling. */
    llm_fp8_recipe_t fp8_recipe;
    /* Per-op selective activation checkpointing (PyTorch stacks; torchtitan's
     * activation_checkpoint.mode "selective" with selective_ac_option "op"): of each block's
     * forward only the outputs of every other matmul, of attention and of the tensor-parallel
     * reduce-scatters are saved; every other op (norms, RoPE, activations, adds, casts, the
     * other matmuls) reruns in backward. activation_recompute must be "none". */
    llm_selective_ac_t selective_ac;
    /* Asynchronous tensor parallelism (PyTorch stacks with tensor_par > 1): torch's
     * micro-pipelined all-gather/reduce-scatter matmuls over symmetric memory, the TP
     * collectives decomposed into peer copies overlapped with the GEMM chunks. */
    bool async_tp;
    /* The loss kernel of a PyTorch stack (llm_stages.c: the memory the loss holds beside the
     * output layer's table). Megatron's is its vocab-parallel cross-entropy: TORCH (zero). */
    llm_loss_kernel_t loss_kernel;
    /* Fine-tuning; method NONE (zero) is pre-training. LORA/QLORA: modern dense block only. */
    llm_finetune_t finetune;
} llm_execution_t;

/* The schedule in force: 1F1B with interleaving is the interleaved schedule. */
static inline llm_pp_schedule_t llm_pp_schedule(const llm_execution_t *e)
{
    return e->pipeline_schedule == LLM_PP_1F1B && e->pipeline_interleaving > 1
               ? LLM_PP_INTERLEAVED
               : e->pipeline_schedule;
}

/* The selective-recompute module sets to try on a layout that does not fit, fewest first, each
 * a superset of the one before: layernorm; the whole mlp with it (a dense model); moe_act with
 * it (experts); mla_up_proj with them (MLA, fused attention); the whole moe MLP (experts).
 * Returns how many were written to sets (at most LLM_RECOMPUTE_MODULE_SETS); 0 for Calculon's
 * block, with full recompute, which reruns every module already, and under torchtitan, which
 * has no module sets (llm_selective_op_applies is its counterpart, the fsdp stack's other). */
int llm_recompute_module_ladder(const fathom_model_t *m, const llm_execution_t *e,
                                unsigned sets[LLM_RECOMPUTE_MODULE_SETS]);

/* Whether a layout that does not fit can take torchtitan's per-op selective checkpointing
 * (selective_ac "op", activation_recompute "none"), what torchtitan offers between no recompute
 * and whole blocks (activation_checkpoint.mode "selective", selective_ac_option "op"): a
 * PyTorch-stack training step with neither full recompute nor op checkpointing yet. The fsdp
 * stack runs it too (llm_stack.c accepts it; its measured rows' "selective" is it), beside its
 * module sets, so there it is one more choice, not the only one. */
static inline bool llm_selective_op_applies(const llm_execution_t *e)
{
    return e->stack != LLM_STACK_MEGATRON && e->training && e->selective_ac == LLM_SAC_NONE &&
           e->activation_recompute != LLM_RECOMPUTE_FULL && e->recompute_modules == 0;
}

/* How the TP collectives overlap the GEMMs: Megatron's tensor_par_overlap, or under a PyTorch
 * stack async_tp, torch's micro-pipelined matmuls (a chunk of the GEMM per step of a ring of peer
 * copies, as the ring overlap is costed). */
static inline llm_tp_overlap_t llm_tp_overlap(const llm_execution_t *e)
{
    return e->async_tp ? LLM_TP_OVERLAP_RING : e->tensor_par_overlap;
}

/* How the all-gather before a linear overlaps its GEMM: as llm_tp_overlap, except that torch's
 * micro-pipelining pass does not fuse the all-gather with a matmul whose operands carry rowwise
 * FP8 scales (pytorch/pytorch issue 149990, open: only matmul → reduce-scatter is fused for
 * them, pull request 149247), so under async_tp a rowwise FP8 linear's input is gathered as
 * vanilla TP gathers it. */
static inline llm_tp_overlap_t llm_tp_gather_overlap(const llm_execution_t *e)
{
    if (e->async_tp && e->fp8 && e->fp8_recipe == LLM_FP8_ROWWISE)
        return LLM_TP_OVERLAP_NONE;
    return llm_tp_overlap(e);
}

/* Whether attention runs as one fused kernel (any kernel but Calculon's unfused one). */
static inline bool llm_attention_fused(const llm_execution_t *e)
{
    return e->attention_kernel != LLM_ATTN_KERNEL_UNFUSED;
}

/* context_par, and the processors gradients are reduced over (data_par × context_par). */
static inline int64_t llm_context_par(const llm_execution_t *e)
{
    return e->context_par > 1 ? e->context_par : 1;
}
/* ZeRO stage in force: optimizer_sharding alone is stage 1 (Calculon's executions). */
static inline int llm_zero_stage(const llm_execution_t *e)
{
    return e->zero_stage > 0 ? e->zero_stage : e->optimizer_sharding ? 1 : 0;
}
/* The refusal's reason, one text for the codec and the step model's check. */
#define LLM_ZERO_WITHOUT_DATA_PAR_MSG                                                              \
    "needs data_par x context_par > 1: the optimizer shards over those ranks"
/* Whether a ZeRO stage shards over a single data-parallel rank (data_par × context_par of 1),
 * which has nothing to shard over: refused. */
static inline bool llm_zero_without_data_par(const llm_execution_t *e)
{
    return llm_zero_stage(e) >= 1 && e->data_par * llm_context_par(e) < 2;
}
/* Weights sharded and gathered per block, FSDP's way (ZeRO-3): under a PyTorch stack with
 * pipeline parallelism also ZeRO-2, since there ZeRO-3 is already reshard_after_forward False
 * (torchtitan's default under PP), which is what ZeRO-2 is (SHARD_GRAD_OP): the two are one run,
 * whose stage stays gathered and whose fp32 gradients accumulate unsharded until the last
 * microbatch (llm_memory.c fsdp2_state, llm_stages.c fsdp). */
static inline bool llm_fsdp_sharded_weights(const llm_execution_t *e)
{
    const int zero = llm_zero_stage(e);
    return zero >= 3 || (zero == 2 && e->stack != LLM_STACK_MEGATRON && e->pipeline_par > 1);
}
static inline int64_t llm_shard_group(const llm_execution_t *e)
{
    const int64_t all = e->data_par * llm_context_par(e);
    return e->shard_group >= 1 && e->shard_group < all ? e->shard_group : all;
}

/* Memory of one pipeline stage per processor, bytes, by kind (tier 1 and tier 2 together).
 * total = weights + gradients + optimizer + activations + buffers + moe_buffers + reserve, the
 * reserve being cuda_context + nccl + workspaces + fragmentation (llm_memory.c gives each term's
 * formula and source; Calculon's block has none of the terms after buffers). */
typedef struct {
    double weights;     /* parameters in the compute datatype (+ FP8 copies; ZeRO-3: the shard
                         * and the gathered blocks) */
    double gradients;   /* weight gradients (fp32 accumulation buffer and the sharded copy) */
    double optimizer;   /* fp32 master weights and Adam moments */
    double activations; /* stored for backward: working set, in-flight microbatches, logits */
    double buffers;     /* activation gradients in flight */
    double total;
    int64_t blocks;     /* transformer blocks on the stage (DualPipe: on both of its stages) */
    /* Of weights, gradients and optimizer: the routed experts' share (model.moe). Exact per
     * block kind; the rest is the non-expert state. */
    double expert_weights, expert_gradients, expert_optimizer;
    /* Fathom's modern block (0 for Calculon's): */
    int64_t index;             /* pipeline rank */
    double microbatches;       /* in flight: block-microbatches kept over the stage's blocks */
    double stored_activations; /* of activations: what the blocks in flight keep for backward */
    double gathered_weights;   /* of weights: ZeRO-3's gathered blocks (computing, prefetched) */
    double moe_buffers;        /* the flex dispatcher's communication buffers (DeepEP) */
    double cuda_context, nccl, workspaces, fragmentation; /* the fixed reserve */
} llm_stage_memory_t;

/* What the step model found per block and microbatch that the memory of any pipeline rank is
 * made of (llm_memory.c); kept in the result so that llm_stage_memory can give every rank's. */
typedef struct {
    double stored[2];     /* bytes a block keeps per microbatch in flight: [0] dense, [1] MoE */
    double working[2];    /* bytes the block being computed holds, all its layers */
    double checkpoint;    /* a fully recomputed block's kept input (times the share recomputed) */
    double act_grads;     /* activation gradients of the block in backward */
    double weights[2], fp8_weights[2], expert_weights; /* parameters on a rank per block kind */
    double first_params, last_params; /* the layers outside the blocks: embedding; output, MTP */
    double first_working, last_working, first_grads, last_grads;
    double mtp_stored;    /* the MTP depths' blocks per microbatch on the last stage */
    double moe_buffers;   /* the flex dispatcher's buffers (0 without experts or with alltoall) */
    int64_t bpp;          /* blocks on the first stages (the last pp − L%pp hold one fewer) */
    int64_t nmb;          /* microbatches per step */
    /* Of the parameters above, those frozen (execution.finetune lora/qlora): held in the base
     * datatype, with no gradients or optimizer state; 0 for pre-training. */
    double frozen[2], first_frozen, last_frozen;
    double expert_frozen; /* of expert_weights, frozen (LoRA without adapters on the experts) */
} llm_memory_inputs_t;

/* What a step costs beyond Calculon's statistics (all blocks, all stages, all processors). */
typedef struct {
    double hardware_flops;         /* per step, all processors: matrix-engine FLOPs as run,
                                    * recompute included (llm_model_flops has the model's) */
    double outer_layers_time;      /* s of the embedding, output layer and loss on the critical path */
    double peak_flops;             /* FLOP/s of one processor's matrix engine in the datatype */
    double weight_bytes_per_param; /* bytes per parameter held for weights, gradients, optimizer */
    double grad_bytes_per_param;
    double optimizer_bytes_per_param;
    /* Exposed seconds per step, also inside stats (total_time and the breakdown's lines) */
    double cp_comm_exposed;        /* ring attention's K/V passing not hidden by attention */
    double dp_grad_reduce;         /* gradient reduction (all-reduce or reduce-scatter), as run */
    double dp_param_gather;        /* parameter all-gathers (ZeRO-1/2 after the step, ZeRO-3 per block) */
    double dp_exposed_last_bucket; /* the last block's gradient reduction, never hidden */
    double dp_exposed_first_gather;/* the first block's parameter gather, never hidden */
    int heaviest_stage;           /* 0: first, 1: last, 2: another rank (heaviest.index) */
    double expert_parallel_comm;  /* s of dispatch/combine all-to-all exposed per step */
    double routed_expert_compute; /* s of the routed experts' grouped GEMMs per step */
    int expert_parallel_tier;     /* network tier the all-to-all crosses (-1: no MoE) */
    double host_exposed;          /* s per step the processor waits on the host's launches */
    /* per block and microbatch on the first stage: host seconds to launch forward and backward
     * (llm_host.h), and the all-to-all each direction leaves exposed (the GPU's share) */
    double host_block_fw, host_block_bw;
    double a2a_block_fw, a2a_block_bw;
    llm_stage_memory_t stages[2]; /* first and last pipeline stage (equal when pipeline_par 1) */
    llm_stage_memory_t heaviest;  /* the rank that needs the most memory (modern block) */
    llm_memory_inputs_t memory;   /* what llm_stage_memory evaluates any rank from */
} llm_step_extra_t;

typedef struct {
    llm_stats_t stats; /* Calculon's 96 statistics (llm_stats.h) */
    bool fits_memory;  /* fits_tier1 && fits_tier2 */
    bool fits_tier1;
    bool fits_tier2;
    double mem_tier1_bytes; /* = stats.proc_mem_tier1_cap_req */
    double mem_tier1_capacity_bytes;
    double mem_tier2_bytes; /* = stats.proc_mem_tier2_cap_req */
    double mem_tier2_capacity_bytes;
    int64_t blocks_per_proc;  /* transformer blocks on the first pipeline stage */
    int64_t num_microbatches; /* per data-parallel replica and step */
    llm_step_extra_t extra;
} llm_result_t;

/* Estimates one step. Returns 0 with *out filled — also when the configuration does not fit in
 * memory (out->fits_memory false; the stats are still computed, as Calculon computes them before
 * it raises). Returns -1 with err filled for what Calculon refuses before estimating:
 *   FATHOM_E_INVALID_FIELD: a value out of its domain (field "execution.<name>",
 *     "system.networks[i]...", "model.<name>"), e.g. tensor_par*pipeline_par*data_par !=
 *     num_procs, a batch not divisible, a datatype the system lacks, a network index out of range;
 *   FATHOM_E_INFEASIBLE_EXECUTION: a valid execution the model cannot run on this system
 *     (network tier too small or not fully used, interleaving not dividing the blocks per
 *     processor, offloading with fewer than 3 blocks per processor, an efficiency curve not
 *     covering an operation size);
 *   FATHOM_E_LIMIT_EXCEEDED: a microbatch so large that a layer would hold more than 2^53
 *     elements (field "execution.microbatch_size").
 * err may be NULL (the search does not need messages). No allocation; thread-safe. */
int llm_estimate(const fathom_model_t *m, const llm_system_t *s, const llm_execution_t *e,
                 llm_result_t *out, fathom_error_t *err);

/* What estimates share, kept between calls by their caller (llm_memo.c): the costs of the layer
 * tables (a block, an MoE model's dense block, the embedding, the output layer). Executions of
 * one model on one system that differ in their layout around a table (data or expert
 * parallelism, the schedule, the overlaps) reuse it, and a table that differs in a few layers
 * the costs of the others. llm_estimate_memo's result is llm_estimate's bit for bit, whatever
 * the memo holds: a table's (a layer's) costs are reused only when the table (the layer), its
 * costing context and the system are byte for byte those they were costed with. A
 * memo serves one thread at a time (the search keeps one per worker); memo NULL is
 * llm_estimate. llm_memo_new returns NULL when out of memory (about 410 KB). */
typedef struct llm_memo llm_memo_t;
llm_memo_t *llm_memo_new(void);
void llm_memo_free(llm_memo_t *memo);
/* The longest step an estimate answers (seconds); a longer one is an error naming the system. */
#define LLM_MAX_STEP_S 1e12
int llm_estimate_memo(const fathom_model_t *m, const llm_system_t *s, const llm_execution_t *e,
                      llm_memo_t *memo, llm_result_t *out, fathom_error_t *err);

/* Transformer blocks of pipeline stage `stage` and the index of its first (*first, may be
 * NULL): first_stage_blocks and last_stage_blocks when given, the rest split evenly; without
 * them the first L % pp stages take ceil(L/pp) blocks and the others one fewer. */
int64_t llm_stage_blocks(const fathom_model_t *m, const llm_execution_t *e, int64_t stage,
                         int64_t *first);

/* The end stages' blocks in force (0: the even split's): first_stage_blocks and
 * last_stage_blocks when either is given; without them, under torchtitan its split points' end
 * ranks when they differ from the rest (doc/memory.md), under DualPipe the split that weighs the
 * embedding, the output layer and each MTP depth as one block (doc/memory.md, "Schedules"). */
void llm_end_stage_blocks(const fathom_model_t *m, const llm_execution_t *e, int64_t *first,
                          int64_t *last);

/* Memory alone: the same refusals as llm_estimate, then out's memory members (mem_tier*,
 * fits_*, extra.stages, extra.heaviest, extra.memory, blocks_per_proc, num_microbatches), the
 * time and every statistic but the tier needs left zero. Equal to llm_estimate's memory, at a
 * fraction of its cost (the layers are not costed): the search's selective-recompute ladder
 * tries its rungs so. Calculon's block runs llm_estimate. */
int llm_estimate_memory(const fathom_model_t *m, const llm_system_t *s,
                        const llm_execution_t *e, llm_result_t *out, fathom_error_t *err);

/* Blocks of the largest of a stage's pipeline chunks: its blocks_per_proc blocks over
 * `interleaving` chunks, the first ones taking one block more when they do not divide evenly
 * (the modern block; Calculon's needs them even). recompute_blocks is at most this. */
int64_t llm_largest_chunk(int64_t blocks_per_proc, int64_t interleaving);

/* Model FLOPs of one step of batch_size sequences (llm_flops.c: Megatron-LM's convention for
 * the modern block; training counts forward and backward, inference forward only). */
double llm_model_flops(const fathom_model_t *m, int64_t batch_size, bool training);

/* Parameters of a model as its checkpoint counts them: total, and active per token
 * (embeddings, output layer, norms, attention, routers, top_k routed and every shared expert).
 * MTP depths are counted (mtp_blocks); routed gives the routed experts' share of total, mtp and
 * mtp_active the MTP depths' share of total and active. */
typedef struct {
    double total, active, routed, mtp, mtp_active;
} llm_params_t;
void llm_parameters(const fathom_model_t *m, llm_params_t *p);

/* Weights, gradients and optimizer state per processor of pipeline stage `stage` (0 first,
 * pipeline_par-1 last), split into routed-expert and other state, bytes (llm_moe.c). Non-expert
 * parameters are split over tensor_par and their optimizer over data_par (when sharded); routed
 * experts over expert_par × expert_tensor_par and their optimizer over the expert data-parallel
 * group tensor_par·data_par / (expert_par·expert_tensor_par). Mixed precision as Megatron
 * holds it: weights bpe, gradients 4 (fp32), optimizer 12 (fp32 master, two Adam moments). */
typedef struct {
    double params, expert_params;       /* on one processor */
    double weights, gradients, optimizer; /* non-expert bytes */
    double expert_weights, expert_gradients, expert_optimizer;
} llm_state_memory_t;
void llm_moe_state_memory(const fathom_model_t *m, const llm_execution_t *e, int64_t stage,
                          llm_state_memory_t *out);

/* The memory of pipeline rank `rank` (0 .. pipeline_par − 1) of an estimate r of m with e
 * (llm_memory.c): the stage's state by block kind, the activations its schedule keeps in flight,
 * and the fixed reserve. For Calculon's block, the first or the last stage as estimated. */
void llm_stage_memory(const fathom_model_t *m, const llm_execution_t *e, const llm_result_t *r,
                      int64_t rank, llm_stage_memory_t *out);

/* The cheapest change that makes an execution fit (llm_fit.c): found false when e fits already,
 * does not train, or nothing tried fits; otherwise the changed execution, its step time and
 * tier-1 bytes, beside the given execution's step time. Tries selective-recompute module sets,
 * FP8 storage, 16-bit Adam moments, the next ZeRO stage or the whole shard group, half the
 * microbatch, full recompute of the fewest blocks, and all savers at once as a last resort.
 * Returns 0 (candidates that do not estimate are skipped). Pure, like llm_estimate. */
typedef struct {
    bool found;
    llm_execution_t execution;
    double step_time, mem_tier1_bytes;
    double base_step_time; /* of the execution as given */
} llm_fit_change_t;
int llm_cheapest_fitting_change(const fathom_model_t *m, const llm_system_t *s,
                                const llm_execution_t *e, llm_fit_change_t *out);

/* Seconds of one all-to-all in which each of `peers` ranks sends `bytes` spread evenly over the
 * group, the group spanning `span` consecutive processors with tier `net` (llm_moe.c). */
double llm_a2a_time(const llm_system_t *s, int net, double bytes, double peers, double span);
/* The same all-to-all under the flex dispatcher: each rank's tokens of `token_bytes` (one copy of
 * all of them) routed as `moe` routes them: top_k of num_experts experts spread evenly over the
 * peers, within router_group_top_k of its router_groups when it has groups (llm_moe.c). */
double llm_a2a_flex_time(const llm_system_t *s, int net, double token_bytes,
                         const model_moe_t *moe, double peers, double span);

/* A grouped expert GEMM of G experts, each M rows by an inner K and an output N, reaches
 *   e = e_top · M/(M + 160) · K/(K + 160) · N/(N + 32)
 * of the matrix peak (e_top the best efficiency of the datatype's curve, llm_curve_top) and costs
 * LLM_GROUPED_GEMM_FIXED_S a call besides (llm_moe.c: fitted to the 96 BF16 grouped GEMMs of
 * bench/gpu/2026-11-26-h100-sxm5-80gb). Shared by training (llm_moe.c) and serving
 * (core/serving/serving_step.c). */
#define LLM_GROUPED_GEMM_FIXED_S 30e-6
double llm_grouped_gemm_shape(double M, double K, double N);
/* The same for a GEMM whose main loop runs `rate` times BF16's (FP8: 2): the constants scale by
 * rate, a tile's fixed time being worth rate times as many elements of its loop. */
double llm_grouped_gemm_shape_at(double M, double K, double N, double rate);
/* The best efficiency on curve c: what the system's large GEMMs reach. */
double llm_curve_top(const llm_curve_t *c);

/* Seconds of one collective `op` of `bytes` among `peers` ranks on tier `net` of s: Calculon's
 * latency + bytes·scalar·(1 + offset/peers) / (bandwidth·efficiency) (llm_system.c). */
double llm_net_op_time(const llm_system_t *s, int net, llm_net_op_t op, double bytes, double peers);
/* The first tier of s that connects `span` processors (size >= span), or the last when none
 * does: where a group of that span goes when the request does not place it. */
int llm_first_tier_connecting(const llm_system_t *s, int64_t span);
/* Efficiency of an operation of `size` (GFLOP for a processor curve, MB for a memory curve) on
 * curve c: the first point whose threshold size reaches (Calculon's rule); 0 when none does. */
double llm_curve_efficiency(const llm_curve_t *c, double size);

/* A GPU held below its board power (a variant's power_limit_w, doc/stacks.md): the fraction
 * of the board-power sustained clock it keeps, which scales its matrix and vector rates. Power
 * above the idle floor P₀ is dynamic, C·V²·f. A dense GEMM already holds an H100 SXM5 at its full
 * 700 W with the SM clock down from 1,980 to 1,365 MHz (bench/gpu/2026-11-26-h100-sxm5-80gb,
 * "Sustained power and clocks"): below the base clock the DVFS curve sits at its voltage floor,
 * so V no longer falls with f and the dynamic power falls in proportion to the clock:
 *     f_cap / f_board = (P_cap − P₀) / (P_board − P₀),   P₀ = LLM_IDLE_POWER_SHARE·P_board
 * (1 at or above the board power). Memory bandwidth is the HBM's own clock and is not scaled.
 * Worked by hand in test_llm_stack (500 W on the 700 W H100: 0.6808). The same measurement gives
 * the idle floor: 73.7 W of 700 W (0.105). */
#define LLM_IDLE_POWER_SHARE 0.105
double llm_power_capped_clock(double board_w, double limit_w);

/* Fine-tuning (llm_finetune.c). Bytes per parameter of a frozen base in base_datatype: the
 * datatype's, or NF4's 4.127 bits (4-bit values, blocks of 64 with 8-bit constants, blocks of
 * 256 of those with a 32-bit constant: 4 + 8/64 + 32/(64·256); QLoRA sec. 3). */
double llm_finetune_base_bytes(int base_datatype);
extern const char *const llm_finetune_method_names[]; /* "none", "full", "lora", "qlora" */
extern const char *const llm_lora_target_names[];     /* by bit index: "q_proj", ... "down_proj" */
extern const char *const llm_base_datatype_names[];   /* llm_datatype_names, then "nf4" */
/* Parameters a step trains: every parameter (NONE, FULL), or the adapters (LORA, QLORA): per
 * block Σ over the targeted projections rank·(n_in + n_out), a routed expert's projections once
 * per expert, the MTP depths' blocks included. */
double llm_finetune_trainable_params(const fathom_model_t *m, const llm_execution_t *e);
/* Of those, the adapter parameters a token runs through (a routed expert's for top_k of the
 * experts): what the adapters add to model FLOPs, 6 per parameter per token. */
double llm_finetune_active_params(const fathom_model_t *m, const llm_execution_t *e);
/* Model FLOPs of one step as the work it needs: llm_model_flops for pre-training and FULL; for
 * LORA and QLORA the forward and the input gradients of the frozen model (2/3 of
 * llm_model_flops' training count) and the adapters' forward, input and weight gradients
 * (6 FLOPs per active adapter parameter per token). */
double llm_step_model_flops(const fathom_model_t *m, const llm_execution_t *e);
/* 0, or -1 with err naming execution.finetune.<field> for what the model cannot fine-tune so. */
int llm_finetune_check(const fathom_model_t *m, const llm_execution_t *e, fathom_error_t *err);

/* Checks a system on its own (ranges, curve order, caps); 0 or -1 with err (field paths start
 * with "system"). llm_estimate assumes a system that passed this check. */
int llm_system_check(const llm_system_t *s, fathom_error_t *err);
/* The link class of tier `tier` of s: its `link`, or when absent (AUTO) by position, the rule
 * Calculon's presets were written to: tier 0 NVLink, the last tier the network, any between
 * PCIe (a one-tier system's tier 0 is NVLink). */
llm_link_t llm_network_link(const llm_system_t *s, int tier);

/* Bytes per element of a datatype (1, 2, 2, 4) and its Calculon name ("float16"). */
int llm_datatype_bytes(llm_datatype_t dt);
const char *llm_datatype_name(llm_datatype_t dt);
/* Optimizer state per parameter as e trains, unsharded: fp32 master weights below 4-byte
 * datatypes and Adam's two moments in e's optimizer_state_datatype (4 + 4 + 4 = 12 bytes;
 * DeepSeek-V3's BF16 moments 4 + 2 + 2 = 8; in float32 the moments alone). A checkpoint holds
 * this plus the weights (llm_datatype_bytes) per parameter. */
double llm_optimizer_bytes_per_param(const llm_execution_t *e);
/* Gradient bytes per parameter held while training: 4 (float32 accumulation), or the
 * datatype's bytes under low_precision_gradients. */
double llm_gradient_bytes_per_param(const llm_execution_t *e);

/* Calculon's names of the enum values, NULL-terminated, indexed by the enum (for codecs). */
extern const char *const llm_datatype_names[];
extern const char *const llm_attention_names[];
extern const char *const llm_recompute_names[];
extern const char *const llm_tp_comm_names[];
extern const char *const llm_tp_overlap_names[];
extern const char *const llm_processing_mode_names[];
extern const char *const llm_net_op_names[];
extern const char *const llm_link_names[]; /* "nvlink", "pcie", "network": LLM_LINK_NVLINK.. */
extern const char *const llm_attn_kernel_names[];
extern const char *const llm_moe_dispatcher_names[]; /* "alltoall", "flex" (not FREE) */
extern const char *const llm_cuda_graphs_names[]; /* "none", "attention", "partial", "full",
                                                     * "router" */
extern const char *const llm_recompute_module_names[]; /* by bit index: bit 1 << i is name i */
extern const char *const llm_pp_schedule_names[];      /* "1f1b", "interleaved", ... */
extern const char *const llm_state_dtype_names[];      /* "float32", "bfloat16", "float16" */
extern const char *const llm_stack_names[];      /* "megatron", "torchtitan", "fsdp" */
extern const char *const llm_collectives_names[]; /* "calculon", "nccl" */
extern const char *const llm_fp8_recipe_names[]; /* by llm_fp8_recipe_t */
extern const char *const llm_selective_ac_names[]; /* "none", "op" */
extern const char *const llm_loss_kernel_names[];    /* "torch", "fused" */
/* The FP8 recipe a stack uses when the execution names none: Transformer Engine's current
 * scaling under Megatron, torchao's tensorwise scaling under the PyTorch stacks. */
llm_fp8_recipe_t llm_default_fp8_recipe(llm_stack_t stack);

#endif

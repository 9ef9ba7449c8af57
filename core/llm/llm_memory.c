/* llm_memory.c — the memory of every pipeline rank of the modern block, as the runs keep it, and
 * the rank that sets the peak (doc/memory.md gives each term with its source).
 *
 * DESIGN: the step model (llm_model.c, llm_stages.c) fills llm_memory_inputs_t with what one
 * block of each kind and the layers outside the blocks hold per microbatch; everything here is
 * arithmetic on those numbers and the execution, so any rank can be evaluated after the estimate
 * (llm_stage_memory, which the codec calls to list every stage) and llm__memory can scan all
 * ranks for the heaviest in O(num_blocks) without allocating. Calculon's block keeps Calculon's
 * accounting (llm_model.c compute_memory): its two stages are described from its statistics.
 *
 * Per rank r of pp, with its stage's blocks by kind (dense n_d, MoE n_m) and the schedule's
 * microbatches in flight F (per stage):
 *   state       weights, gradients and optimizer of the stage's parameters (state_of below);
 *               DualPipe holds two stages per rank, r and pp − 1 − r, so twice the parameters
 *   activations W + Σ_stages F·(n_d·S_d + n_m·S_m + n·C) − S_w + the outer layers' working sets
 *               S_k what a block of kind k keeps per microbatch, C a fully recomputed block's
 *               input (times the share recomputed), W the block being computed (all its
 *               layers, of the heavier kind on the rank; its own S_w is inside W)
 *   buffers     the activation gradients of one block (and of the outer layers)
 *   moe_buffers the flex dispatcher's communication buffers (DeepEP's size hints), or the
 *               alltoall dispatcher's send and receive buffers (2·T·k·h·bpe)
 *   reserve     CUDA context + NCCL buffers of each communicator + cuBLAS workspaces
 *               + the caching allocator's fragmentation
 * In flight F, per schedule (the sources' own counts):
 *   1f1b, zero_bubble  min(nmb, pp − r)             (Megatron's warm-up; ZB-H1 keeps 1F1B's)
 *   interleaved        min(nmb·v, 2·(pp − r − 1) + (v − 1)·pp + 1) / v   chunks of bpp/v blocks
 *                      (Megatron's get_pp_num_warmup: its warm-up plus the one in steady state)
 *   dualpipe           pp − r for stage r and r + 1 for stage pp − 1 − r (DeepSeek's DualPipe
 *                      schedule: steps 1–2 run 2·(pp/2 − h) − 1 and h + 1 forwards, h the half
 *                      rank, and step 4 one more before its first backward: pp + 1 in all) */
#include <math.h>
#include <string.h>

#include "llm_internal.h"

static double max2(double a, double b) { return a > b ? a : b; }
static double min2(double a, double b) { return a < b ? a : b; }

/* ---- the fixed reserve (per GPU, bytes) ---- */

#define MIB 1048576.0
/* CUDA context with lazy module loading (CUDA >= 11.7, PyTorch's default): about 400 MB
 * (pytorch/pytorch#109888, NVIDIA's ptrblck, 2023: "around 400MB if CUDA >= 11.7 is used and
 * lazy module loading enabled"). */
#define CUDA_CONTEXT_BYTES (400 * MIB)
/* cuBLAS workspaces on Hopper and later: Transformer Engine keeps 32 MiB for each of its 4
 * cuBLAS streams (transformer_engine/pytorch/cpp_extensions/gemm.py,
 * get_cublas_workspace_size_bytes 33,554,432 and get_num_cublas_streams 4) and PyTorch one more
 * of 32 MiB for its own handle (ATen CublasHandlePool, ":4096:8" on sm90). */
#define WORKSPACE_BYTES (5 * 32 * MIB)
/* NCCL's buffers per communicator, measured with PyTorch process groups each running a 4 MB
 * all-reduce on 4 NVLink A100s (NVIDIA/nccl#964): 544 MB for a 2-rank group, 688 MB for more
 * ranks (channels × peers × NCCL_BUFFSIZE, NVIDIA/nccl#986). */
#define NCCL_PAIR_BYTES (544 * MIB)
#define NCCL_GROUP_BYTES (688 * MIB)
/* PyTorch's caching allocator with fixed segments reserves more than it hands out: a
 * Megatron-Core run (NeMo's Qwen3-30B-A3B H100 script, NVIDIA-NeMo/NeMo issue #14850) logs
 * max_memory_reserved 57,466,159,104 against max_memory_allocated 53,930,270,720 bytes, 6.56 %
 * more. With expandable segments (Megatron-Bridge's performance recipes and torchtitan's run
 * script set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True) a stream's segment grows in
 * place (pytorch/pytorch#96995) and this gap is not counted. */
#define FRAGMENTATION (57466159104.0 / 53930270720.0 - 1)

/* A communicator the step uses: TP, CP, PP, the gradient group DP·CP, EP (unless DeepEP moves
 * the tokens) and expert DP. */
static double communicator(double ranks)
{
    return ranks < 2 ? 0 : ranks == 2 ? NCCL_PAIR_BYTES : NCCL_GROUP_BYTES;
}

static double nccl_bytes(const fathom_model_t *m, const llm_execution_t *e)
{
    const double cp = (double)llm_context_par(e);
    double b = communicator((double)e->tensor_par) + communicator(cp) +
               communicator((double)e->pipeline_par) + communicator((double)e->data_par * cp);
    if (m->moe.num_experts > 0) {
        const double edp = llm__expert_data_par(e);
        /* the flex dispatcher moves tokens through DeepEP's own buffers (moe_buffers) */
        if (e->moe_dispatcher != LLM_MOE_DISPATCH_FLEX)
            b += communicator((double)(llm__expert_par(e) * llm__expert_tensor_par(e)));
        if (edp != (double)e->data_par * cp)
            b += communicator(edp);
    }
    return b;
}

/* ---- the flex dispatcher's buffers ---- */

/* DeepEP (deepseek-ai/DeepEP, legacy Buffer as Megatron's fused_a2a.get_buffer sizes it): 20
 * SMs make 10 channels; each holds, per NVLink peer (up to 8), num_max_nvl_chunked_recv_tokens
 * rows of hidden bytes plus 128 top-k indices (8 bytes), weights and scales (4 each); with more
 * than 8 ranks also, per RDMA peer (ranks/8), twice num_max_rdma_chunked_recv_tokens (128) such
 * rows (send and receive). The recv tokens are the dispatch config's (deep_ep Buffer
 * get_dispatch_config): 256 up to 8 ranks, 288 up to 64, 480 at 96, 560 at 128, 720 beyond. */
double llm__deepep_buffer_bytes(double ranks, double hidden_bytes)
{
    const double channels = 10, meta = 128 * (8 + 4 + 4);
    const double nvl = min2(ranks, 8), rdma = ranks > 8 ? ranks / 8 : 0;
    const double recv = ranks <= 8 ? 256 : ranks <= 64 ? 288 : ranks <= 96 ? 480 : ranks <= 128 ? 560 : 720;
    return channels * nvl * recv * (hidden_bytes + meta) +
           channels * rdma * 128 * 2 * (hidden_bytes + meta + 16);
}

/* ---- a stage's blocks and state ---- */

/* A scan over the stages: the end stages' blocks (llm_end_stage_blocks) and the communicators'
 * memory (every rank's), asked once, and the last stage block_kinds counted (a rank's memory
 * asks its stage's kinds several times). */
typedef struct {
    int64_t ends[2];
    double nccl; /* nccl_bytes */
    int64_t stage, blocks; /* stage -1: none counted yet */
    double n[2];
} scan_t;

static void scan_start(const fathom_model_t *m, const llm_execution_t *e, scan_t *sc)
{
    llm_end_stage_blocks(m, e, &sc->ends[0], &sc->ends[1]);
    sc->nccl = nccl_bytes(m, e);
    sc->stage = -1;
}

/* The blocks of stage j by kind, the MTP depths on the last stage with the last block's (their
 * block's state and activations are the stage's); returns the transformer blocks alone. */
static int64_t block_kinds(const fathom_model_t *m, const llm_execution_t *e, scan_t *sc,
                           int64_t j, double n[2])
{
    if (sc->stage != j) {
        int64_t first;
        const int64_t b = llm__stage_blocks_given(m, e, sc->ends[0], sc->ends[1], j, &first);
        const double moe =
            m->moe.num_experts > 0 ? (double)model_moe_blocks_in(m, first, first + b) : 0;
        sc->n[1] = moe;
        sc->n[0] = (double)b - moe;
        if (j == e->pipeline_par - 1 && m->mtp_blocks > 0)
            sc->n[model_block_is_moe(m, m->num_blocks - 1) && m->moe.num_experts > 0 ? 1 : 0] +=
                (double)m->mtp_blocks;
        sc->stage = j;
        sc->blocks = b;
    }
    n[0] = sc->n[0];
    n[1] = sc->n[1];
    return sc->blocks;
}

/* Optimizer bytes per parameter (llm.h): the fp32 master copy (when training below fp32) and
 * Adam's two moments in optimizer_state_datatype (Megatron's distributed optimizer:
 * 4 + 4 + 4 = 12; DeepSeek-V3's BF16 moments: 4 + 2 + 2 = 8). */
double llm_optimizer_bytes_per_param(const llm_execution_t *e)
{
    const double moment = e->optimizer_state_datatype == LLM_STATE_FLOAT32 ? 4 : 2;
    return (llm_datatype_bytes(e->datatype) < 4 ? 4 : 0) + 2 * moment;
}

/* FSDP as the PyTorch stacks run it (torchtitan's fully_shard per block with
 * MixedPrecisionPolicy(param_dtype bf16, reduce_dtype fp32); FSDP1 alike): the sharded
 * parameter is the fp32 master, so per parameter 4/S of it, 4/S of fp32 gradients and 8/S of
 * Adam's moments, 16/S in all (torchtitan parallelize_llama.py apply_fsdp; FSDP2 fully_shard):
 *   gathered  the unsharded bf16 parameters alive at the peak: the root module's (embedding,
 *             final norm, output: FSDP2 does not reshard the root after forward) and two blocks
 *             (the one computing, the one prefetched); with pipeline parallelism every block of
 *             the stage (torchtitan sets reshard_after_forward False under PP)
 *   gradients one block's unsharded bf16 gradients and their reduce-scatter input in the
 *             reduce dtype (fp32; bf16 with low_precision_gradients) beside the shards; under PP
 *             the whole stage's unsharded gradients in the reduce dtype (torch's pipeline
 *             schedules reduce only after the last microbatch).
 * With a frozen base (LoRA, QLoRA: Z of the P parameters frozen, T = P − Z trained) the frozen
 * parameters are sharded as loaded, in base_datatype, Z·zb/S — torchtune's LoRA recipes load
 * the base in bf16 and shard it with fully_shard, no fp32 master for weights that do not train
 * — and have no gradient or optimizer shard; FSDP2 gathers them in param_dtype, or as they are
 * when narrower (QLoRA's NF4 tensors are all-gathered packed and dequantized at each linear:
 * torchao's NF4Tensor fsdp_pre_all_gather). The gradients and optimizer are T's alone. */
/* The unsharded gradients a rank holds at once under torch.distributed.pipelining with FSDP
 * (torch 1963fc8, the build of torchtitan's benchmarks), g bytes each: FSDP2 accumulates them in
 * the reduce dtype, fp32 (g = 4) unless low_precision_gradients, which reduces in the parameter
 * dtype, so no upcast copy is made and autograd sums into .grad itself (g = bpe;
 * FSDPParam.to_accumulated_grad_if_needed returns when the gradient's dtype is the reduce
 * dtype). A stage accumulates them from its first backward; its last backward runs FSDP's
 * post_backward, which reduce-scatters and frees them (PipelineStage.backward_maybe_with_nosync,
 * last_backward). One stage a rank (1F1B, GPipe): all of its T trained parameters, g·T bytes.
 * With v stages a rank, ScheduleInterleaved1F1B gives the backwards to the rank's stages in
 * rounds of nmb / max(1, ⌊nmb/pp⌋) microbatches, the last local stage first
 * (backward_stage_index); in a single round (nmb < 2·pp; torchtitan's default nmb = pp) each
 * stage's backwards all finish before the next stage's begin, so one stage's gradients are alive
 * at a time: the largest stage's, ⌈b/v⌉ blocks, or ⌊b/v⌋ blocks and the outer layers (embedding,
 * output) on an end rank, whichever is more. With more rounds every stage's accumulate together.
 * bt a block's trained parameters, rt the rank's outer layers' (doc/memory.md, "The PyTorch
 * stacks"). */
static double torch_pp_held_gradients(const llm_execution_t *e, const llm_memory_inputs_t *in,
                                      double blocks, double T, double bt, double rt)
{
    const int64_t v = e->pipeline_interleaving > 1 ? e->pipeline_interleaving : 1;
    const double g = llm_gradient_bytes_per_param(e);
    if (v == 1 || in->nmb >= 2 * e->pipeline_par)
        return g * T;
    const double b = blocks, vd = (double)v;
    const double largest = max2(ceil(b / vd) * bt, floor(b / vd) * bt + rt);
    return g * min2(T, largest);
}

static void fsdp2_state(const llm_execution_t *e, const llm_memory_inputs_t *in, int64_t j,
                        double blocks, double P, double Z, llm_stage_memory_t *o)
{
    const double S = (double)llm_shard_group(e), bpe = llm_datatype_bytes(e->datatype);
    const double zb = Z > 0 ? llm_finetune_base_bytes(e->finetune.base_datatype) : 0;
    const double gz = min2(zb, bpe); /* bytes a frozen parameter is gathered in */
    const int64_t pp = e->pipeline_par;
    const double block = max2(in->weights[0], in->weights[1]);
    const double block_frozen = block == in->weights[1] ? in->frozen[1] : in->frozen[0];
    const double root = (j == 0 ? in->first_params : 0) + (j == pp - 1 ? in->last_params : 0);
    const double root_frozen = (j == 0 ? in->first_frozen : 0) + (j == pp - 1 ? in->last_frozen : 0);
    const double params = root + (pp > 1 ? P - root : min2(2, blocks) * block);
    const double frozen = root_frozen + (pp > 1 ? Z - root_frozen : min2(2, blocks) * block_frozen);
    const double gathered = (params - frozen) * bpe + frozen * gz, T = P - Z;
    o->weights += T * 4 / S + Z * zb / S + gathered;
    o->gathered_weights += gathered;
    if (!e->training)
        return;
    /* under pipeline parallelism torch's schedules turn gradient sync off for every
     * microbatch but the last (set_requires_gradient_sync(False)): the unsharded gradients of
     * a stage accumulate in the reduce dtype from its first backward to its last; beside them
     * the block in backward's gradients in param_dtype, which autograd writes and FSDP2's
     * post_backward adds into the sum and drops (FSDPParam.accumulate_unsharded_grad_if_
     * needed, to_accumulated_grad_if_needed). Without PP one block's in param_dtype and its
     * reduce-scatter input in the reduce dtype (foreach_reduce copies the gradients into one
     * buffer of that dtype whatever they were). */
    const double bt = block - block_frozen, g = llm_gradient_bytes_per_param(e);
    const double held = pp > 1 ? torch_pp_held_gradients(e, in, blocks, T, bt, root - root_frozen) +
                                     bt * bpe
                               : bt * (bpe + g);
    o->gradients += T * 4 / S + held;
    o->optimizer += T * 8 / S;
}

/* Weights, gradients and optimizer of stage j added to *o (doc/memory.md, "State"):
 *   weights    (P − P8)·bpe + 2·P8 with FP8 primary weights, else P·bpe + 2·P8 (the FP8 weight
 *              and its transpose beside the bpe copy); ZeRO-3 /S plus two gathered blocks
 *   gradients  P·g, g = 4 or bpe (low_precision_gradients); ZeRO-2/3 P·g/S + one block's
 *   optimizer  (P − X)·o/S + X·o/edp, o = llm_optimizer_bytes_per_param, X the routed experts'
 * P the stage's parameters on a rank (blocks by kind, the outer layers, the MTP depths), P8 those
 * in FP8 linear layers, S the shard group, edp the expert data-parallel group. */
static void state_of(const fathom_model_t *m, const llm_execution_t *e, scan_t *sc,
                     const llm_memory_inputs_t *in, int64_t j, llm_stage_memory_t *o)
{
    double n[2];
    const int64_t blocks = block_kinds(m, e, sc, j, n);
    const int64_t pp = e->pipeline_par;
    const double bpe = llm_datatype_bytes(e->datatype), g = llm_gradient_bytes_per_param(e);
    const int zero = llm_zero_stage(e);
    const double S = (double)llm_shard_group(e), edp = zero >= 1 ? llm__expert_data_par(e) : 1;
    double P = n[0] * in->weights[0] + n[1] * in->weights[1];
    const double P8 = n[0] * in->fp8_weights[0] + n[1] * in->fp8_weights[1];
    /* the routed experts' X, of which Xf frozen (LoRA without adapters on them) and Xt trained */
    const double X = n[1] * in->expert_weights, Xf = n[1] * in->expert_frozen, Xt = X - Xf;
    /* frozen parameters (finetune, llm_finetune.c): Z of P in the base datatype, no gradients
     * or optimizer state; T = P − Z train (all of P for pre-training) */
    double Z = n[0] * in->frozen[0] + n[1] * in->frozen[1];
    if (j == 0) {
        P += in->first_params;
        Z += in->first_frozen;
    }
    if (j == pp - 1) {
        P += in->last_params;
        Z += in->last_frozen;
    }
    const double T = P - Z, zb = Z > 0 ? llm_finetune_base_bytes(e->finetune.base_datatype) : 0;
    const double block = max2(in->weights[0], in->weights[1]);
    const double block_trained = max2(in->weights[0] - in->frozen[0], in->weights[1] - in->frozen[1]);
    if (e->stack != LLM_STACK_MEGATRON && llm_fsdp_sharded_weights(e)) {
        fsdp2_state(e, in, j, n[0] + n[1], P, Z, o);
        o->blocks += blocks;
        return;
    }
    const double held = (e->fp8_params ? T - P8 : T) * bpe + Z * zb + 2 * P8;
    const double x8 = e->fp8 ? X : 0; /* routed experts are FP8 linears under fp8 */
    const double expert_held = (e->fp8_params ? Xt - x8 : Xt) * bpe + Xf * zb + 2 * x8;
    o->blocks += blocks;
    if (zero >= 3) {
        o->weights += held / S + 2 * block * bpe;
        o->gathered_weights += 2 * block * bpe;
        o->expert_weights += expert_held / S;
    } else {
        o->weights += held;
        o->expert_weights += expert_held;
    }
    if (!e->training)
        return;
    const double grads = zero >= 2 ? T * g / S + block_trained * g : T * g;
    o->gradients += grads;
    o->expert_gradients += zero >= 2 ? Xt * g / S : Xt * g;
    const double ob = llm_optimizer_bytes_per_param(e), shards = zero >= 1 ? S : 1;
    o->optimizer += (T - Xt) * ob / shards + Xt * ob / edp;
    o->expert_optimizer += Xt * ob / edp;
}

/* ---- activations in flight ---- */

/* What a block keeps per microbatch under torchtitan's per-op selective checkpointing
 * (selective_ac "op"; torchtitan parallelize_llama.py _save_list and _custom_policy at
 * 9dec370, the commit of its published benchmarks): the checkpoint's input, and the outputs of
 * the ops it must save, every other op rerunning in backward:
 *   the block's input          T·h/t (sequence-parallel with TP), bf16
 *   aten.mm outputs but every second one of the block, in order wq, wk, wv, wo, w1, w3, w2:
 *                              wq T·n·d/t, wv T·g·d/t, w1 T·f/t, w2 T·h (the row-parallel
 *                              partial sum, whole); a plain MLP's w2 is the sixth, not saved
 *   the flash kernel's outputs O T·n·d/t (bf16) and its log-sum-exp T·n/t (fp32)
 *   the TP reduce-scatters'    2·T·h/t (after wo and w2)
 * Under torchao's tensorwise Float8 a linear is still aten.mm, on Float8Tensor operands
 * (torchao float8_linear.py, manual_float8_matmul_with_args_in_float8 at eab345c): the policy
 * sees and saves its bf16 result as it does without FP8. T = b·s/cp tokens, g the key/value
 * heads a rank holds, f the MLP width. */
double llm__op_sac_bytes(const fathom_model_t *m, const llm_execution_t *e)
{
    const double T = (double)llm__tokens_per_rank(m, e), h = (double)m->hidden;
    const double tp = (double)e->tensor_par, d = (double)m->attn_size;
    const double q = (double)m->attn_heads / tp * d;
    const double kv = (double)llm__kv_heads_per_rank(m, e) * d;
    const double f = (double)m->feedforward / tp, bpe = llm_datatype_bytes(e->datatype);
    const bool sp = tp > 1 && e->tensor_par_comm_type == LLM_TP_COMM_RS_AG;
    double bytes = T * h / (sp ? tp : 1) * bpe + T * q * bpe + T * (double)m->attn_heads / tp * 4;
    if (tp > 1)
        bytes += 2 * T * h / tp * bpe;
    bytes += (T * q + T * kv + T * f + (m->gated_mlp ? T * h : 0)) * bpe;
    return bytes;
}

/* Model chunks (forward passes of one microbatch through the rank's blocks of one virtual
 * stage) that rank r runs before its first backward, the one that starts the steady state
 * included (header; the schedules above, v = 1 without interleaving). */
double llm__warmup_chunks(const llm_execution_t *e, int64_t nmb, int64_t rank)
{
    const double pp = (double)e->pipeline_par, r = (double)rank, n = (double)nmb;
    if (llm_pp_schedule(e) == LLM_PP_INTERLEAVED) {
        const double v = (double)e->pipeline_interleaving;
        return min2(n * v, 2 * (pp - r - 1) + (v - 1) * pp + 1);
    }
    return min2(n, pp - r);
}

/* Microbatches whose activations stage j's blocks keep on its rank (header). */
static double in_flight(const llm_execution_t *e, int64_t nmb, int64_t rank)
{
    const double v =
        llm_pp_schedule(e) == LLM_PP_INTERLEAVED ? (double)e->pipeline_interleaving : 1;
    return llm__warmup_chunks(e, nmb, rank) / v;
}

/* torch.distributed.pipelining's buffers on rank r (the PyTorch stacks with pipeline_par > 1;
 * torch at 1963fc8, the build of torchtitan's published benchmarks, 2024-12-23). Each of the
 * rank's v stages (torchtitan's looped placement: global stage j = c·pp + r, c < v) holds, for
 * all nmb microbatches of the step, not only those in flight:
 *   receive buffers   stage j > 0: one input per microbatch, allocated once
 *                     (PipelineStage._prepare_forward_infra, _make_tensor_from_meta per
 *                     chunk_id); the F in flight are the first block's kept input already
 *                     counted, so (nmb − F)·io more
 *   gradient buffers  stage j < last: one output gradient per microbatch
 *                     (_create_grad_recv_info per chunk): nmb·io
 *   retained outputs  every stage keeps each microbatch's output for the step's merged result
 *                     (forward_one_chunk: output_chunks.append(output)): nmb·io, on the last
 *                     stage nmb − 1 logits beside the one the loss works on. Later torch keeps
 *                     them on the last stage only (pytorch/pytorch#153383, 2025-05) and none
 *                     with step(return_outputs=False) (pytorch#165822, torchtitan#1922,
 *                     2025-10)
 * io = b·(s/cp)·h/t·bpe the stage boundary (torchtitan's sequence-parallel local tensor),
 * logits = b·(s/cp)·V/t·bpe (loss_parallel keeps them sharded over the vocabulary). */
static double torch_pipeline_buffers(const fathom_model_t *m, const llm_execution_t *e,
                                     int64_t nmb, int64_t r, double in_flight)
{
    const double bpe = llm_datatype_bytes(e->datatype), T = (double)llm__tokens_per_rank(m, e);
    const double tp = (double)e->tensor_par, n = (double)nmb;
    const double io = T * (double)m->hidden / tp * bpe;
    const double logits = T * (double)llm__vocab_per_rank(m, e) * bpe;
    const int64_t pp = e->pipeline_par, v = e->pipeline_interleaving > 1
                                                ? e->pipeline_interleaving : 1;
    const int64_t last = v * pp - 1;
    double b = 0;
    for (int64_t c = 0; c < v; c++) {
        const int64_t j = c * pp + r;
        if (j > 0)
            b += max2(0, n - in_flight) * io;
        b += j < last ? 2 * n * io : (n - 1) * logits;
    }
    return b;
}

/* The working sets and activation gradients of the layers outside the blocks on rank r: the
 * embedding's on the rank holding stage 0, the output layer's and the loss's on the rank
 * holding stage pp − 1 (DualPipe's rank r holds stages r and pp − 1 − r). */
static void outer_of(const llm_execution_t *e, const llm_memory_inputs_t *in, int64_t r,
                     double *working, double *grads)
{
    const int64_t pp = e->pipeline_par;
    const bool dual = llm_pp_schedule(e) == LLM_PP_DUALPIPE;
    *working = *grads = 0;
    if (r == 0 || (dual && r == pp - 1)) {
        *working += in->first_working;
        *grads += in->first_grads;
    }
    if (r == pp - 1 || (dual && r == 0)) {
        *working += in->last_working;
        *grads += in->last_grads;
    }
}

/* Activations, buffers and MoE buffers of rank r: its stage, and DualPipe's mirror stage. */
static void activations_of(const fathom_model_t *m, const llm_execution_t *e, scan_t *sc,
                           const llm_memory_inputs_t *in, int64_t r, llm_stage_memory_t *o)
{
    const int64_t pp = e->pipeline_par;
    const bool dual = llm_pp_schedule(e) == LLM_PP_DUALPIPE;
    int64_t stages[2] = {r, pp - 1 - r};
    double flight[2] = {in_flight(e, in->nmb, r), (double)(r + 1)};
    const int count = dual ? 2 : 1;
    double N[2] = {0, 0}, outer = 0, outer_grads = 0, blocks = 0;
    bool holds[2] = {false, false};
    for (int i = 0; i < count; i++) {
        double n[2];
        block_kinds(m, e, sc, stages[i], n);
        for (int k = 0; k < 2; k++) {
            N[k] += n[k] * flight[i];
            holds[k] = holds[k] || n[k] > 0;
        }
        blocks += n[0] + n[1];
    }
    outer_of(e, in, r, &outer, &outer_grads);
    const int w = holds[1] && (!holds[0] || in->working[1] >= in->working[0]) ? 1 : 0;
    double acts = outer, stored = 0;
    if (!e->training) {
        acts += holds[0] || holds[1] ? in->working[w] : 0;
    } else if (N[0] + N[1] > 0) {
        stored = N[0] * in->stored[0] + N[1] * in->stored[1] + (N[0] + N[1]) * in->checkpoint;
        /* the block being computed is inside its working set W */
        acts += in->working[w] + max2(0, stored - in->stored[w]);
        o->buffers += in->act_grads;
        if (e->stack != LLM_STACK_MEGATRON && pp > 1)
            o->buffers += torch_pipeline_buffers(m, e, in->nmb, r, flight[0]);
    }
    if (e->training)
        o->buffers += outer_grads;
    o->activations += acts;
    o->stored_activations += stored;
    o->microbatches = blocks > 0 ? (N[0] + N[1]) / blocks : 0;
    o->moe_buffers += holds[1] ? in->moe_buffers : 0;
}

/* The modern block's memory of rank r, every term (header). */
static void modern_stage(const fathom_model_t *m, const llm_execution_t *e, scan_t *sc,
                         const llm_memory_inputs_t *in, int64_t r, llm_stage_memory_t *o)
{
    memset(o, 0, sizeof *o);
    o->index = r;
    state_of(m, e, sc, in, r, o);
    if (llm_pp_schedule(e) == LLM_PP_DUALPIPE)
        state_of(m, e, sc, in, e->pipeline_par - 1 - r, o);
    activations_of(m, e, sc, in, r, o);
    const double allocated = o->weights + o->gradients + o->optimizer + o->activations +
                             o->buffers + WORKSPACE_BYTES;
    o->cuda_context = CUDA_CONTEXT_BYTES;
    o->workspaces = WORKSPACE_BYTES;
    o->nccl = sc->nccl;
    o->fragmentation = e->fixed_segments ? FRAGMENTATION * allocated : 0;
    o->total = allocated + o->moe_buffers + o->cuda_context + o->nccl + o->fragmentation;
}

void llm_stage_memory(const fathom_model_t *m, const llm_execution_t *e, const llm_result_t *r,
                      int64_t rank, llm_stage_memory_t *out)
{
    if (m->calculon_block) {
        *out = r->extra.stages[rank > 0 && rank == e->pipeline_par - 1 ? 1 : 0];
        return;
    }
    scan_t sc;
    scan_start(m, e, &sc);
    modern_stage(m, e, &sc, &r->extra.memory, rank, out);
}

/* ---- tiers ---- */

/* Tier-1 and tier-2 needs of rank r's memory o when state is offloaded (Calculon's rule): what
 * is offloaded lives in tier 2 and tier 1 double-buffers two blocks of it; what a rank holds
 * beside the offloaded state stays. Tier 1 keeps, of the activations, the block being computed
 * with one block's keep (two checkpoints under full recompute) and the outer layers' working
 * sets: the loss works on the fp32 logits, which are not a stored activation to move. Offloading
 * never holds more in tier 1 than keeping the state there (a rank with fewer than two blocks'
 * worth keeps what it has). Every rank is asked, not only the heaviest before offloading: the
 * first rank's activations in flight leave, the last rank's output layer and logits stay, so
 * after offloading another rank can set the peak. */
static void rank_tiers(const llm_execution_t *e, const llm_memory_inputs_t *in,
                       const llm_stage_memory_t *o, double *t1, double *t2)
{
    const double bpe = llm_datatype_bytes(e->datatype);
    const double block = max2(in->weights[0], in->weights[1]);
    *t1 = o->total;
    *t2 = 0;
    if (e->weight_offload) {
        *t1 -= max2(0, o->weights - 2 * block * bpe);
        *t2 += o->weights;
    }
    if (e->activations_offload) {
        const int k = in->working[1] > in->working[0] ? 1 : 0;
        double outer, outer_grads;
        outer_of(e, in, o->index, &outer, &outer_grads);
        const double blocks = o->activations - outer;
        const double keep = e->activation_recompute == LLM_RECOMPUTE_FULL
                                ? in->working[k] + 2 * in->checkpoint
                                : in->working[k] + in->stored[k];
        *t1 -= max2(0, blocks - keep);
        *t2 += blocks;
    }
    if (e->optimizer_offload && e->training) {
        const double S = llm_zero_stage(e) >= 1 ? (double)llm_shard_group(e) : 1;
        const double keep = 2 * block * (4 + llm_optimizer_bytes_per_param(e) / S);
        *t1 -= max2(0, o->gradients + o->optimizer - keep);
        *t2 += o->gradients + o->optimizer;
    }
}

/* The scan for the heaviest rank leaves out a rank r (not the first or last) whose stage holds
 * the blocks of the last rank evaluated, kind by kind, and no more microbatches in flight, when
 * the kept bytes per block are not negative and each rank holds one stage (not DualPipe): its
 * state is that rank's and its activations no more (every term of modern_stage is a sum or a
 * product by a non-negative factor of those, and rounding is monotonic), so its total is at
 * most that rank's and it cannot be strictly heavier than the heaviest so far; nor can its tier
 * needs (rank_tiers keeps of each term the term or a fixed part of it, both monotonic). */
void llm__memory(const fathom_model_t *m, const llm_execution_t *e, llm_stats_t *st,
                 llm_step_extra_t *x)
{
    const int64_t pp = e->pipeline_par;
    const llm_memory_inputs_t *in = &x->memory;
    const bool may_skip = llm_pp_schedule(e) != LLM_PP_DUALPIPE && in->stored[0] >= 0 &&
                          in->stored[1] >= 0 && in->checkpoint >= 0;
    int64_t heavy = 0;
    double ref_n[2] = {-1, -1}, ref_flight = 0, tier1 = 0, tier2 = 0;
    scan_t sc;
    scan_start(m, e, &sc);
    llm_stage_memory_t cur;
    for (int64_t r = 0; r < pp; r++) {
        double n[2];
        const double flight = in_flight(e, in->nmb, r);
        if (may_skip && r > 0 && r < pp - 1) {
            block_kinds(m, e, &sc, r, n);
            if (n[0] == ref_n[0] && n[1] == ref_n[1] && flight <= ref_flight)
                continue;
            ref_n[0] = n[0];
            ref_n[1] = n[1];
        } else if (may_skip && r == 0) {
            block_kinds(m, e, &sc, r, ref_n);
        }
        ref_flight = flight;
        modern_stage(m, e, &sc, in, r, &cur);
        if (r == 0)
            x->stages[0] = x->heaviest = cur;
        if (r == pp - 1)
            x->stages[1] = cur;
        if (cur.total > x->heaviest.total) {
            x->heaviest = cur;
            heavy = r;
        }
        double t1, t2;
        rank_tiers(e, in, &cur, &t1, &t2);
        tier1 = max2(tier1, t1);
        tier2 = max2(tier2, t2);
    }
    x->heaviest_stage = heavy == 0 ? 0 : heavy == pp - 1 ? 1 : 2;
    st->proc_mem_tier1_cap_req = tier1;
    st->proc_mem_tier2_cap_req = tier2;
}

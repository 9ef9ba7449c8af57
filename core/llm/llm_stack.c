/* llm_stack.c — what the software stack running a step changes (execution.stack, compile,
 * fp8_recipe, async_tp; doc/stacks.md): the names of the stacks and FP8 recipes, each stack's
 * defaults, and what a stack refuses because it does not do it.
 *
 * Megatron-Core with Transformer Engine (the default) is the behaviour of the rest of core/llm.
 * The PyTorch-native stacks run the same layers through PyTorch's kernels:
 *   torchtitan  FSDP2 (fully_shard per block), DTensor tensor, context and pipeline
 *               parallelism, optional torch.compile per block, torchao Float8 linears
 *               (tensorwise or rowwise dynamic scaling), async TP (torchtitan's docs,
 *               docs/float8.md, docs/composability.md);
 *   fsdp        FSDP1 as Hugging Face Accelerate and MosaicML Composer run it: the model
 *               wrapped per block and sharded over data parallelism only (no tensor, pipeline
 *               or context parallelism), eager or compiled, FP8 by torchao or Transformer Engine. */
#include <stdio.h>

#include "llm_internal.h"

const char *const llm_stack_names[] = {"megatron", "torchtitan", "fsdp", NULL};
const char *const llm_selective_ac_names[] = {"none", "op", NULL};
const char *const llm_loss_kernel_names[] = {"torch", "fused", NULL};
const char *const llm_fp8_recipe_names[] = {"current", "tensorwise", "rowwise", "delayed",
                                            "mxfp8",   "blockwise",  NULL};

llm_fp8_recipe_t llm_default_fp8_recipe(llm_stack_t stack)
{
    return stack == LLM_STACK_MEGATRON ? LLM_FP8_CURRENT : LLM_FP8_TENSORWISE;
}

/* Whether a stack has the recipe: Transformer Engine (Megatron) scales per tensor from the
 * current amax, from an amax history (delayed), in MXFP8 blocks or in 128-wide blocks — it has no
 * per-row recipe, and torchao's tensorwise is its current scaling by another name; torchao (the
 * PyTorch stacks) has tensorwise, rowwise, delayed (until torchao 0.10), mxfp8 and blockwise, and
 * calls per-tensor current scaling tensorwise. FSDP1 stacks take either library (Accelerate's FP8
 * backends are Transformer Engine, MS-AMP and torchao). */
static bool stack_has_recipe(llm_stack_t stack, llm_fp8_recipe_t r)
{
    switch (stack) {
    case LLM_STACK_MEGATRON:
        return r != LLM_FP8_TENSORWISE && r != LLM_FP8_ROWWISE;
    case LLM_STACK_TORCHTITAN:
        return r != LLM_FP8_CURRENT;
    default:
        return true;
    }
}

static int refuse(fathom_error_t *err, const char *field, const char *msg)
{
    return fathom_error_set(err, FATHOM_E_INVALID_FIELD, field, "%s", msg);
}

/* The names: a stack, recipe, loss kernel and checkpointing choice of their lists, a recipe only
 * with FP8 and of the stack's library, per-op checkpointing only on a PyTorch stack and alone. */
static int check_choices(const llm_execution_t *e, fathom_error_t *err)
{
    if ((unsigned)e->stack > LLM_STACK_FSDP)
        return refuse(err, "execution.stack", "must be \"megatron\", \"torchtitan\" or \"fsdp\"");
    if ((unsigned)e->fp8_recipe > LLM_FP8_BLOCKWISE)
        return refuse(err, "execution.fp8_recipe", "unknown FP8 recipe");
    if (!e->fp8 && e->fp8_recipe != LLM_FP8_CURRENT)
        return refuse(err, "execution.fp8_recipe", "a recipe needs FP8 training: set execution.fp8");
    if (e->fp8 && !stack_has_recipe(e->stack, e->fp8_recipe))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.fp8_recipe",
                                "the %s stack has no \"%s\" recipe (%s)",
                                llm_stack_names[e->stack], llm_fp8_recipe_names[e->fp8_recipe],
                                e->stack == LLM_STACK_MEGATRON
                                    ? "Transformer Engine: current, delayed, mxfp8, blockwise"
                                    : "torchao: tensorwise, rowwise, delayed, mxfp8, blockwise");
    if ((unsigned)e->loss_kernel > LLM_LOSS_FUSED)
        return refuse(err, "execution.loss_kernel", "must be \"torch\" or \"fused\"");
    if ((unsigned)e->selective_ac > LLM_SAC_OP)
        return refuse(err, "execution.selective_ac", "must be \"none\" or \"op\"");
    if (e->selective_ac == LLM_SAC_OP && e->stack == LLM_STACK_MEGATRON)
        return refuse(err, "execution.selective_ac",
                      "per-op selective checkpointing is PyTorch's (torchtitan's "
                      "selective_ac_option \"op\"); Megatron selects modules with "
                      "activation_recompute and recompute_modules");
    if (e->selective_ac == LLM_SAC_OP &&
        (e->activation_recompute != LLM_RECOMPUTE_NONE || e->recompute_modules))
        return refuse(err, "execution.selective_ac",
                      "chooses what each block recomputes itself: set activation_recompute "
                      "\"none\" and no recompute_modules");
    return 0;
}

/* What Megatron-Core does another way than the PyTorch stacks' options. */
static int check_megatron_options(const llm_execution_t *e, fathom_error_t *err)
{
    if (e->compile)
        return refuse(err, "execution.compile",
                      "Megatron-Core runs Transformer Engine's fused kernels, not "
                      "torch.compile: compile is a PyTorch stack's option (stack "
                      "\"torchtitan\" or \"fsdp\")");
    if (e->async_tp)
        return refuse(err, "execution.async_tp",
                      "Megatron overlaps its tensor-parallel collectives with "
                      "execution.tensor_par_overlap; async_tp is torchtitan's");
    if (e->loss_kernel != LLM_LOSS_TORCH)
        return refuse(err, "execution.loss_kernel",
                      "Megatron's loss is its vocab-parallel cross-entropy; loss_kernel "
                      "chooses a PyTorch stack's (stack \"torchtitan\" or \"fsdp\")");
    return 0;
}

/* torchtitan's choices, from its config (config/job_config.py): activation_checkpoint.mode
 * "none", "full" (every block, or every N-th with selective_ac_option N: recompute_blocks)
 * or "selective" per op (selective_ac "op"), none of them Megatron's module sets or its
 * attention core alone; CPU offload (training.enable_cpu_offload: FSDP2's CPUOffloadPolicy)
 * moves the parameters, gradients and optimizer states, never activations. The fsdp stack
 * keeps them: Composer checkpoints the module classes it is told to
 * (activation_checkpointing_target: attention, FFN, norm) and offloads activations. */
static int check_torchtitan_choices(const llm_execution_t *e, fathom_error_t *err)
{
    const char *why = "torchtitan reruns no block (activation_recompute \"none\"), whole "
                      "blocks (\"full\", every N-th with recompute_blocks) or each op its "
                      "policy does not save (selective_ac \"op\")";
    if (e->recompute_modules)
        return refuse(err, "execution.recompute_modules", why);
    if (e->activation_recompute == LLM_RECOMPUTE_ATTN_ONLY)
        return refuse(err, "execution.activation_recompute", why);
    if (e->activations_offload)
        return refuse(err, "execution.activations_offload",
                      "torchtitan offloads parameters, gradients and optimizer states "
                      "(training.enable_cpu_offload), not activations");
    return 0;
}

/* FSDP1 as Accelerate and Composer wrap a model: data parallelism only. */
static int check_fsdp1_layout(const llm_execution_t *e, fathom_error_t *err)
{
    const char *why = "the fsdp stack (FSDP1: Accelerate, Composer) shards data parallelism "
                      "only: use stack \"torchtitan\" for tensor, pipeline or context "
                      "parallelism";
    if (e->tensor_par > 1)
        return refuse(err, "execution.tensor_par", why);
    if (e->pipeline_par > 1)
        return refuse(err, "execution.pipeline_par", why);
    if (llm_context_par(e) > 1)
        return refuse(err, "execution.context_par", why);
    if (e->async_tp)
        return refuse(err, "execution.async_tp", why);
    return 0;
}

int llm__check_stack(const fathom_model_t *m, const llm_execution_t *e, fathom_error_t *err)
{
    if (check_choices(e, err))
        return -1;
    if (e->stack == LLM_STACK_MEGATRON)
        return check_megatron_options(e, err);
    if (m->calculon_block)
        return refuse(err, "execution.stack",
                      "the PyTorch stacks run the modern block: give the model one of "
                      "kv_heads, gated_mlp, norm, qkv_bias or causal");
    if (e->tensor_par_overlap != LLM_TP_OVERLAP_NONE)
        return refuse(err, "execution.tensor_par_overlap",
                      "Transformer Engine's tiled overlap is Megatron's; a PyTorch stack overlaps "
                      "tensor parallelism with execution.async_tp");
    if (e->stack == LLM_STACK_TORCHTITAN && check_torchtitan_choices(e, err))
        return -1;
    /* torchtitan's data parallelism is DDP (replicate), FSDP2 (fully_shard, weights gathered
     * per block: ZeRO-3, or kept between forward and backward: ZeRO-2) or both (HSDP); FSDP1's
     * sharding strategies are NO_SHARD, SHARD_GRAD_OP and FULL_SHARD (and hybrids of them).
     * Neither shards the optimizer state alone: that is Megatron's distributed optimizer. */
    if (llm_zero_stage(e) == 1)
        return refuse(err, "execution.zero_stage",
                      "a PyTorch stack has no ZeRO-1 (Megatron's distributed optimizer): DDP is "
                      "zero_stage 0, FSDP's SHARD_GRAD_OP (reshard_after_forward false) 2, "
                      "FULL_SHARD 3");
    if (e->async_tp && e->tensor_par < 2)
        return refuse(err, "execution.async_tp", "overlaps tensor parallelism: needs tensor_par > 1");
    /* torchtitan builds the micro-pipelined matmuls in the compiler (parallelize_llama.py:
     * "Async TP requires --training.compile") */
    if (e->async_tp && e->stack == LLM_STACK_TORCHTITAN && !e->compile)
        return refuse(err, "execution.async_tp",
                      "torchtitan's async TP is a torch.compile pass: set execution.compile");
    /* FSDP2 steps the optimizer on the fp32 shard, and torch's AdamW makes its moments like the
     * parameter (torch.optim.adamw _init_group: torch.zeros_like(p)), so in fp32: 16-bit
     * moments are Megatron's (--exp-avg-dtype), and llm_memory.c fsdp2_state counts 8 bytes */
    if (llm_fsdp_sharded_weights(e) && e->optimizer_state_datatype != LLM_STATE_FLOAT32)
        return refuse(err, "execution.optimizer_state_datatype",
                      "FSDP2 (a PyTorch stack with its weights sharded) keeps Adam's moments in "
                      "the fp32 shard's datatype: set \"float32\" or stack \"megatron\"");
    if (e->stack == LLM_STACK_FSDP && check_fsdp1_layout(e, err))
        return -1;
    if (e->expert_par > 1 || m->moe.num_experts > 0)
        return refuse(err, "execution.stack",
                      "mixture-of-experts models are modelled as Megatron-Core runs them: use "
                      "stack \"megatron\"");
    return 0;
}

/* ---- what a PyTorch stack's kernels move (doc/stacks.md, "Eager and compiled") ----
 *
 * Megatron with Transformer Engine runs each elementwise op of a block as one fused kernel: the
 * layer table's bytes (its inputs and outputs once). A PyTorch stack runs the model's own code
 * (torchtitan's models/llama/model.py and norms.py at 9dec370, the commit of its benchmarks):
 * eagerly, every op is a kernel of its own and a memory pass at HBM speed, with float32
 * intermediates where the code upcasts; under torch.compile Inductor fuses the ops between two
 * matmuls into one kernel that reads its inputs and writes its outputs once. Bytes per element
 * of the layer's tensor, for a b-byte datatype (2 in bfloat16):
 *
 *   RMSNorm   eager: x.float() b+4, pow(2) 8, mean 4, x·rsqrt 8, type_as 4+b, ·weight 2b
 *                    = 28 + 4b forward (36); backward the reverse of each op: weight product 2b,
 *                    weight gradient 2b, type_as b+4, the rsqrt chain 8 + 12 + 8 + 8, the two
 *                    gradients summed 12, float() 4+b = 56 + 6b (68)
 *             compiled: one kernel, x in and y out, 2b forward; x, dy in and dx out, 3b
 *             backward (the weight's gradient a reduction of per-block partials, negligible)
 *   RoPE      per Q and K element, eager: float() b+4, complex multiply 4 in, 4 out (the
 *             frequencies, one per position and pair, negligible), type_as 4+b = 16 + 2b (20),
 *             backward the same; compiled 2b each way
 *   SwiGLU    per output element, eager: silu(gate) 2b, silu·up 3b = 5b (10); backward: the
 *             product's two gradients 3b + 3b, silu's 3b = 9b (18); compiled 3b forward (gate, up
 *             in, out), 5b backward (dout, gate, up in, dgate, dup out)
 *   residual  eager: a + b → 3b forward, the gradients summed where the paths fork 3b; compiled:
 *             Inductor fuses the add into the next norm, which writes the sum beside its output:
 *             b more each way
 *   attention eager: repeat_kv materialises K and V at the query heads' width (read g·d, write
 *             n·d, each), and the output's transpose(1, 2).contiguous() copies O (read and write
 *             n·d); backward the repeat's sum over the copies (read n·d, write g·d, each) and the
 *             copy again; compiled the repeat stays (SDPA is an external kernel: its inputs are
 *             materialised), the copy of O folds into the next matmul's operand layout
 *   dropout   none: torchtitan's Llama has no dropout
 * The bench/gpu H100 measurements agree with these counts at the bandwidth such kernels reach:
 * eager RMSNorm moves 18 bf16 tensors' worth and took 26.6 tensor-read times, a fused RMSNorm
 * 3.8; eager SwiGLU 5 and 10.2 (bench/gpu/2026-11-26-h100-sxm5-80gb/README.md, "Memory-bound
 * passes"). */
static double norm_bytes(bool compiled, bool bw, double b)
{
    if (compiled)
        return bw ? 3 * b : 2 * b;
    return bw ? 56 + 6 * b : 28 + 4 * b;
}

/* torchao's dynamic cast of one operand to FP8 (tensorwise or rowwise scales), bytes per element
 * of the b-byte operand: eager abs (2b), max (b), x.float()·scale (b+4), clamp (8), to(fp8) (5)
 * = 4b + 17; compiled an amax reduction and one fused scale-and-cast, b + b + 1. The bench/gpu
 * measurement of the eager cast (amax, scale, cast) took 12.7 tensor-read times for 12.5 of
 * traffic. Transformer Engine (Megatron) fuses the cast into the kernel before: Fathom's FP8 bytes
 * there (llm_layers.c fp8_linear_mem). */
static double fp8_cast_bytes(bool compiled, double b)
{
    return compiled ? 2 * b + 1 : 4 * b + 17;
}

/* A torchao Float8 linear's pass under a PyTorch stack (torchao float8_linear.py,
 * matmul_with_hp_or_float8_args, and float8_ops.py at 31db5a1, the torchao of torchtitan's
 * 2025-06 benchmarks; unchanged on torchao's main of 2026): each GEMM reads its operands as FP8
 * copies (1 byte an element) and writes its b-byte result; which casts (`cast` bytes from the
 * b-byte copy, fp8_cast_bytes, plus the 1-byte write) make those copies depends on the recipe:
 *
 *   per-tensor scales (tensorwise, delayed): one scale serves an operand in every GEMM it
 *     enters. Eager, the forward saves the bf16 input and weight and every GEMM casts both its
 *     operands (6 casts a linear). Compiled, AOTAutograd's common-subexpression pass merges the
 *     identical casts: the input once (and once for every linear reading that tensor: Q, K, V;
 *     gate and up, `input_shared`), the weight once, the output gradient once (3 a linear).
 *     With tensor parallelism torchtitan's PrepareFloat8ModuleInput casts the module's input
 *     shard (1/tp of it) once before the FP8 gather, and the linears and their weight gradients
 *     read that copy (fp8_input_prepared).
 *   per-axis scales (rowwise, mxfp8, blockwise): the scales run along a GEMM's contraction axis,
 *     which differs between the GEMMs an operand enters, so each operand is cast for each GEMM
 *     (6 a linear; compiled, the input's two casts once per input group).
 *   rowwise's backward GEMMs: PyTorch's rowwise kernel is slow without fast accumulation, which
 *     torchao's backward asks for, so torchao runs cuBLAS's tensorwise GEMM with unit scales and
 *     multiplies the result by the outer product of the scales afterwards (float8_ops.py,
 *     addmm_float8_unwrapped): one more pass over the output, b in and b out (a kernel of its
 *     own under compile: torchao issue 2184).
 *
 * Hand-worked in test_llm_stack (fp8_linear_casts). */
static double fp8_linear_bytes(const llm__layer_t *l, const llm__ctx_t *c, llm__stage_t st)
{
    const double b = c->bpe, cast = fp8_cast_bytes(c->compile, b) + 1;
    const bool per_tensor = c->fp8_recipe == LLM_FP8_TENSORWISE || c->fp8_recipe == LLM_FP8_DELAYED;
    const bool merged = c->compile && per_tensor; /* one cast per operand and step */
    const double rescale = c->fp8_recipe == LLM_FP8_ROWWISE ? 2 * b : 0;
    const bool prepared = c->fp8_prepared_shards > 0;
    /* the input's cast for this pass: none where another linear's serves it */
    double input_cast;
    if (prepared)
        input_cast = l->input_shared ? 0 : cast / c->fp8_prepared_shards;
    else
        input_cast = l->input_shared && c->compile ? 0 : cast;
    switch (st) {
    case LLM__FW:
        return l->inputs_size * (input_cast + 1) + l->weight_space * (cast + 1) +
               l->output_size * b;
    case LLM__AGRAD:
        return l->activation_grads * (cast + 1) + l->weight_space * (merged ? 1 : cast + 1) +
               l->activation_space * (b + rescale);
    case LLM__WGRAD: {
        const double in = per_tensor && (c->compile || prepared) ? 1 : input_cast + 1;
        return l->activation_space * in + l->activation_grads * (merged ? 1 : cast + 1) +
               l->weight_grads * (b + rescale);
    }
    default: return -1;
    }
}

bool llm__stack_bytes(const llm__layer_t *l, const llm__ctx_t *c, llm__stage_t st, double *bytes)
{
    if (c->stack == LLM_STACK_MEGATRON || st == LLM__OPTIM)
        return false;
    const double b = c->bpe;
    const bool cc = c->compile, bw = st != LLM__FW;
    if (l->fp8 && (l->kind == LLM__LINEAR || l->kind == LLM__LINEAR_OVERLAPPED)) {
        *bytes = fp8_linear_bytes(l, c, st);
        return *bytes >= 0;
    }
    switch (l->kind) {
    case LLM__LAYER_NORM:
        *bytes = st == LLM__WGRAD ? 0 : l->inputs_size * norm_bytes(cc, bw, b);
        return true;
    case LLM__ROPE:
        *bytes = st == LLM__WGRAD ? 0 : l->inputs_size * (cc ? 2 * b : 16 + 2 * b);
        return true;
    case LLM__GATED_ACT:
        *bytes = st == LLM__WGRAD ? 0 : l->output_size * (cc ? (bw ? 5 : 3) * b : (bw ? 9 : 5) * b);
        return true;
    case LLM__ELEMENTWISE:
        *bytes = st == LLM__WGRAD ? 0 : l->output_size * (cc ? 1 : 3) * b;
        return true;
    case LLM__DROPOUT:
        *bytes = 0;
        return true;
    default:
        return false;
    }
}

/* What the attention layer's eager code adds around the kernel (file head, "attention"):
 * repeat_kv's copies of K and V and the copy of O; compiled only the repeat. With context
 * parallelism, what PyTorch's ring attention adds (llm_ring.c). */
double llm__stack_attention_bytes(const llm__layer_t *l, const llm__ctx_t *c, llm__stage_t st,
                                  double q_elems, double kv_elems)
{
    if (c->stack == LLM_STACK_MEGATRON || st == LLM__WGRAD || st == LLM__OPTIM)
        return 0;
    (void)l;
    const double b = c->bpe;
    const double repeat = kv_elems < q_elems ? 2 * (q_elems + kv_elems) * b : 0;
    const double copy_o = c->compile ? 0 : 2 * q_elems * b;
    return repeat + copy_o + llm__torch_ring_bytes(c, st, q_elems);
}

double llm__stack_mem_accessed(const llm__layer_t *l, const llm__ctx_t *c, llm__stage_t st)
{
    double bytes;
    if (llm__stack_bytes(l, c, st, &bytes))
        return bytes;
    if (l->kind == LLM__FUSED_ATTENTION)
        return llm__base_mem_accessed(l, c, st) +
               llm__stack_attention_bytes(l, c, st, l->output_size,
                                          (l->inputs_size - l->output_size) / 2);
    return llm__base_mem_accessed(l, c, st);
}

/* Per-op selective checkpointing (llm_internal.h): torchtitan's policy (parallelize_llama.py
 * _save_list and _custom_policy at 9dec370) saves aten.mm's outputs but every second one of a
 * block, SDPA's outputs, the TP reduce-scatters' and max's (Float8's amax); every other op reruns
 * in backward. In a block's order (wq, wk, wv, wo, w1, w3, w2) the 2nd, 4th and 6th matmuls —
 * wk, wo, w3 — rerun, with every norm, RoPE, activation and add; the all-gathers before the
 * projections are not saved either, so they are redone (the norms' outputs they gather rerun),
 * under async TP too, where each is fused into its matmul (LINEAR_OVERLAPPED, not conjugate).
 * torchao's Float8 linears are still aten.mm (on Float8Tensor operands) and follow the same
 * rule. What the block then keeps is llm_memory.c's (llm__op_sac_bytes). */
void llm__apply_op_sac(llm__block_t *b)
{
    int mm = 0;
    for (int i = 0; i < b->num_layers; i++) {
        llm__layer_t *l = &b->layers[i];
        switch (l->kind) {
        case LLM__LINEAR:
            l->needs_recompute = ++mm % 2 == 0;
            break;
        case LLM__LINEAR_OVERLAPPED: /* async TP: the gather fused into the matmul */
            l->needs_recompute = ++mm % 2 == 0;
            l->needs_recomm = !l->conjugate;
            break;
        case LLM__FUSED_ATTENTION: l->needs_recompute = false; break;
        case LLM__TP_COMM: l->needs_recomm = !l->conjugate; break;
        default: l->needs_recompute = true; break;
        }
    }
}

/* torchtitan's tensor parallelism with Float8 (parallelize_llama.py apply_tp at 9dec370: torchao's
 * Float8ColwiseParallel, Float8RowwiseParallel and PrepareFloat8ModuleInput) casts a linear's
 * input to FP8 before the all-gather, so the gather moves 1 byte an element; the reduce-scatters
 * of the outputs stay in the datatype. Megatron gathers in the datatype. */
double llm__stack_gather_bpe(const llm_execution_t *e, double bpe)
{
    return e->stack != LLM_STACK_MEGATRON && e->fp8 && e->fp8_recipe == LLM_FP8_TENSORWISE ? 1.0
                                                                                           : bpe;
}

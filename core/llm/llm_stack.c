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

int llm__check_stack(const fathom_model_t *m, const llm_execution_t *e, fathom_error_t *err)
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
    if (e->stack == LLM_STACK_MEGATRON) {
        if (e->compile)
            return refuse(err, "execution.compile",
                          "Megatron-Core runs Transformer Engine's fused kernels, not "
                          "torch.compile: compile is a PyTorch stack's option (stack "
                          "\"torchtitan\" or \"fsdp\")");
        if (e->async_tp)
            return refuse(err, "execution.async_tp",
                          "Megatron overlaps its tensor-parallel collectives with "
                          "execution.tensor_par_overlap; async_tp is torchtitan's");
        return 0;
    }
    if (m->calculon_block)
        return refuse(err, "execution.stack",
                      "the PyTorch stacks run the modern block: give the model one of "
                      "kv_heads, gated_mlp, norm, qkv_bias or causal");
    if (e->tensor_par_overlap != LLM_TP_OVERLAP_NONE)
        return refuse(err, "execution.tensor_par_overlap",
                      "Transformer Engine's tiled overlap is Megatron's; a PyTorch stack overlaps "
                      "tensor parallelism with execution.async_tp");
    if (e->async_tp && e->tensor_par < 2)
        return refuse(err, "execution.async_tp", "overlaps tensor parallelism: needs tensor_par > 1");
    /* torchtitan builds the micro-pipelined matmuls in the compiler (parallelize_llama.py:
     * "Async TP requires --training.compile") */
    if (e->async_tp && e->stack == LLM_STACK_TORCHTITAN && !e->compile)
        return refuse(err, "execution.async_tp",
                      "torchtitan's async TP is a torch.compile pass: set execution.compile");
    if (e->stack == LLM_STACK_FSDP) {
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
    }
    if (e->expert_par > 1 || m->moe.num_experts > 0)
        return refuse(err, "execution.stack",
                      "mixture-of-experts models are modelled as Megatron-Core runs them: use "
                      "stack \"megatron\"");
    return 0;
}

/* transformer.c — the analytic transformer model (see transformer.h for the sources). */
#include "transformer.h"

#include <math.h>
#include <string.h>

#define SECONDS_PER_DAY 86400.0
#define GIB 1073741824.0

/* Bytes per parameter while training with mixed-precision Adam, as seed 004 counts them:
 * fp16 weights and gradients, fp32 master weights, two fp32 moments (2+2+4+4+4+4). */
#define TRAIN_BYTES_PER_PARAM 20.0
/* Activation bytes per token, per hidden unit, per layer with selective recompute and sequence
 * parallelism (Korthikanti et al.: 10 of the 34 are not divided by tp without sequence
 * parallelism; seed 004 divides both terms by t, and so do we). */
#define ACT_BYTES_TP_SHARDED 34.0

void tf_inputs_init(tf_inputs_t *in)
{
    memset(in, 0, sizeof *in);
    in->recompute_overhead = 0.0;
    in->backward_forward_ratio = 2.0;
    in->tensor_par = 1.0;
    in->micro_batch_size = 1.0;
}


void tf_params(const fathom_model_t *m, tf_params_t *p)
{
    const double h = (double)m->hidden, ff = (double)m->feedforward;
    const double q = (double)m->attn_heads * (double)m->attn_size;  /* width of q */
    const double kv = (double)model_kv_heads(m) * (double)m->attn_size; /* width of k and of v */
    const double b = m->bias ? 1.0 : 0.0;
    const double qkv_b = m->bias || m->qkv_bias ? 1.0 : 0.0;
    const double ln = model_norm_params(m);
    /* A gated MLP has a gate and an up projection of the same shape. */
    const double up = m->gated_mlp ? 2.0 : 1.0;

    memset(p, 0, sizeof *p);
    p->embedding_position =
        m->position_embedding == MODEL_POS_LEARNED ? h * (double)m->seq_size : 0.0;
    p->embedding_token = h * (double)m->vocab_size;
    p->embedding = p->embedding_position + p->embedding_token;

    p->attention_ln = ln;
    p->attention_kqv = h * (q + 2.0 * kv) + qkv_b * (q + 2.0 * kv);
    p->attention_proj = q * h + b * h;
    p->attention = p->attention_ln + p->attention_kqv + p->attention_proj;

    p->mlp_ln = ln;
    p->mlp_ffw = up * (h * ff + b * ff);
    p->mlp_proj = ff * h + b * h;
    p->mlp = p->mlp_ln + p->mlp_ffw + p->mlp_proj;

    p->block = p->attention + p->mlp;
    p->transformer = (double)m->num_blocks * p->block;
    p->ln_f = ln;
    /* A tied output layer reuses the token embedding; an untied one has its own matrix. */
    p->dense = m->tied_embeddings ? 0.0 : h * (double)m->vocab_size;
    p->total = p->embedding + p->transformer + p->ln_f + p->dense;
    if (m->moe.num_experts > 0 || m->mla.present || m->mtp_blocks > 0) {
        /* experts, MLA and MTP depths (model_params.c): the blocks' total and their mean; the
         * per-part fields above stay those of a dense block */
        model_params_t c;
        model_parameters(m, &c);
        p->transformer = c.total - p->embedding - p->ln_f - p->dense;
        p->block = p->transformer / (double)m->num_blocks;
        p->total = c.total;
    }
}

void tf_flops(const fathom_model_t *m, double backward_forward_ratio, tf_flops_t *f)
{
    const double h = (double)m->hidden, ff = (double)m->feedforward, t = (double)m->seq_size;
    const double heads = (double)m->attn_heads, hs = (double)m->attn_size, inner = heads * hs;
    const double kv = (double)model_kv_heads(m) * hs;
    const double up = m->gated_mlp ? 2.0 : 1.0;

    memset(f, 0, sizeof *f);
    /* A (B×C)·(C×D) product costs 2·B·C·D FLOPs. The scores and the weighted sum are counted
     * in full (t×t), as the sizing notebook does; the step model's summary counts causal
     * attention as half (llm.h). */
    f->attention_kqv = 2.0 * t * (h * (inner + 2.0 * kv));
    f->attention_scores = 2.0 * t * t * inner;
    f->attention_reduce = 2.0 * heads * (t * t * hs);
    f->attention_proj = 2.0 * t * (inner * h);
    f->attention = f->attention_kqv + f->attention_scores + f->attention_reduce + f->attention_proj;
    f->mlp_ffw1 = 2.0 * t * (h * up * ff);
    f->mlp_ffw2 = 2.0 * t * (ff * h);
    f->mlp = f->mlp_ffw1 + f->mlp_ffw2;
    f->block = f->attention + f->mlp;
    f->transformer = (double)m->num_blocks * f->block;
    f->dense = 2.0 * t * (h * (double)m->vocab_size);
    f->forward_total = f->transformer + f->dense;
    f->backward_total = backward_forward_ratio * f->forward_total;
    f->total = f->forward_total + f->backward_total;
}

/* Activation memory of `layers` layers of width h, micro batch b, sequence s, tp degree t. */
static double activation_bytes(double layers, double s, double b, double h, double t)
{
    return layers * s * b * h * (ACT_BYTES_TP_SHARDED / t);
}

/* GPUs of gib each that hold `bytes`, in whole tensor-parallel groups: the memory is split over
 * a group of tensor_par GPUs, so fewer than one group (3 GPUs for a TP 8 request) is not a
 * layout that exists. ceil(bytes / gib) rounded up to a multiple of tensor_par. */
static double gpus_holding(double bytes, double gib, double tensor_par)
{
    const double gpus = ceil(bytes / (gib * GIB)), tp = tensor_par >= 1 ? tensor_par : 1;
    return ceil(gpus / tp) * tp;
}

static void lora_estimate(const fathom_model_t *m, const tf_inputs_t *in, tf_result_t *r)
{
    const double h = (double)m->hidden, l = (double)m->num_blocks, s = (double)m->seq_size;
    const double v = (double)m->vocab_size, b = in->micro_batch_size, rank = in->lora_rank;
    const double tuned = in->lora_tuned_layers > 0 ? in->lora_tuned_layers : l;
    const double ratio = in->backward_forward_ratio, over = in->recompute_overhead;
    const double n = r->budget_params;

    r->has_lora = true;
    /* Two low-rank adapters (A: h×r, B: r×h) on each of two matrices (q and v) per tuned layer. */
    r->lora_params = tuned * (h * rank * 2.0) * 2.0;

    /* Seed 004's step compute: the frozen backbone forward over every layer, backward over the
     * tuned ones, plus the adapters at four times their forward cost. */
    const double layer_fw = 24.0 * b * s * h * h + 4.0 * b * s * s * h;
    const double logits = 2.0 * b * s * h * v;
    const double adapters = 4.0 * (8.0 * rank + 2.0) * tuned * b * s * h;
    r->lora_step_flops =
        (l * layer_fw + logits + ratio * tuned * layer_fw + logits) * (1.0 + over) + adapters;

    /* Adapters train in mixed precision (fp16+fp32 weights, fp16+fp32 grads, two fp32 moments);
     * the backbone is only fp16 weights plus the tuned layers' activations. */
    r->lora_adapter_memory_bytes =
        r->lora_params * ((2 + 4) + (2 + 4) + (4 + 4)) + tuned * (2.0 * b * s * rank + 2.0 * b * s * h);
    r->lora_backbone_memory_bytes = n * 2.0 + activation_bytes(tuned, s, b, h, in->tensor_par);
    r->lora_memory_bytes = r->lora_adapter_memory_bytes + r->lora_backbone_memory_bytes;

    if (in->has_gpu_peak_flops && in->has_mfu && in->has_tokens && in->has_time_budget) {
        /* Seed 004's GPU count for LoRA: 8 FLOPs per adapter parameter per token, and the backbone
         * at (1+overhead)(1+ratio)(2 + s/(3h)) FLOPs per parameter per token. (Its time function
         * writes s/3*h, a precedence slip whose result the seed never prints; we follow the GPU
         * count, whose printed figures we reproduce.) */
        const double per_token = 8.0 * r->lora_params +
                                 (1.0 + over) * (1.0 + ratio) * (2.0 + s / (3.0 * h)) * n;
        const double need = per_token * in->tokens;
        const double supply = in->gpu_peak_flops * in->mfu * in->time_budget_days * SECONDS_PER_DAY;
        r->has_lora_gpus_by_compute = true;
        r->lora_gpus_by_compute = ceil(need / supply);
    }
    if (in->has_gpu_memory) {
        r->has_lora_gpus_by_memory = true;
        r->lora_gpus_by_memory =
            gpus_holding(r->lora_memory_bytes, in->gpu_memory_gib, in->tensor_par);
    }
}

void tf_estimate(const fathom_model_t *m, const tf_inputs_t *in, tf_result_t *r)
{
    memset(r, 0, sizeof *r);
    tf_params(m, &r->params);
    tf_flops(m, in->backward_forward_ratio, &r->flops);

    const double n = in->has_param_count ? in->param_count : r->params.total;
    r->budget_params = n;

    /* PaLM's model FLOPs: the position table is not multiplied, the tied token embedding is (it is
     * the output layer), and attention adds 12·L·H·Q·T per token. */
    const double n_palm = r->params.total - r->params.embedding_position;
    r->palm_flops_per_token = 6.0 * n_palm + 12.0 * (double)m->num_blocks *
                                                 (double)m->attn_heads * (double)m->attn_size *
                                                 (double)m->seq_size;
    r->palm_flops_per_sequence = r->palm_flops_per_token * (double)m->seq_size;
    r->checkpoint_bytes = r->params.total * 4.0 * 3.0;
    r->train_flops_per_token =
        2.0 * (1.0 + in->backward_forward_ratio) * (1.0 + in->recompute_overhead) * n;

    if (in->has_batch_size && in->has_measured_step_time && in->has_gpu_peak_flops) {
        r->has_mfu = true;
        /* MFU is the job's FLOP/s over the peak of every GPU that ran the step: batch_size is
         * the optimizer step's global batch, so with num_gpus the peak is num_gpus·peak (the
         * notebook's single-GPU figure when num_gpus is left out). */
        const double gpus = in->has_num_gpus ? in->num_gpus : 1.0;
        r->achieved_flops_per_s = r->flops.total * in->batch_size / in->measured_step_time_s;
        r->mfu = r->achieved_flops_per_s / (in->gpu_peak_flops * gpus);
    }
    if (in->has_tokens) {
        r->train_flops = r->train_flops_per_token * in->tokens;
        if (in->has_gpu_peak_flops && in->has_mfu && in->has_num_gpus) {
            r->has_train_time = true;
            r->train_seconds = r->train_flops / (in->gpu_peak_flops * in->num_gpus * in->mfu);
            r->train_days = r->train_seconds / SECONDS_PER_DAY;
        }
        if (in->has_gpu_peak_flops && in->has_mfu && in->has_time_budget) {
            r->has_gpus_for_budget = true;
            r->gpus_for_budget = ceil(r->train_flops / (in->gpu_peak_flops * in->mfu *
                                                        in->time_budget_days * SECONDS_PER_DAY));
        }
    }

    r->memory_bytes = n * TRAIN_BYTES_PER_PARAM +
                      activation_bytes((double)m->num_blocks, (double)m->seq_size,
                                       in->micro_batch_size, (double)m->hidden, in->tensor_par);
    if (in->has_gpu_memory) {
        r->has_gpus_by_memory = true;
        r->gpus_by_memory = gpus_holding(r->memory_bytes, in->gpu_memory_gib, in->tensor_par);
    }
    if (in->has_lora)
        lora_estimate(m, in, r);
}

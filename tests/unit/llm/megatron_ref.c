/* megatron_ref.c — Megatron-LM's FLOPs and theoretical-memory formulas, re-derived in C as a test
 * oracle. See megatron_ref.h for the source (NVIDIA/Megatron-LM@d98e8a64ddf3…) and the full list
 * of conventions (F1–F10, W1–W9, A1–A6) that the comments below refer to. */
#include "megatron_ref.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

/* ------------------------------------------------------------------------------------------ */
/* Shared helpers                                                                              */

/* KV heads as Megatron sees them: without --group-query-attention it overwrites the group count
   with the head count (both formulas do this). */
static double kv_groups(const megref_config_t *c)
{
    return c->group_query_attention ? (double)c->num_query_groups : (double)c->num_heads;
}

static bool is_moe_model(const megref_config_t *c) { return c->num_experts > 0; }

/* Whether main layer i (0-based) has an MoE MLP, following --moe-layer-freq (see the header). */
static bool layer_is_moe(const megref_config_t *c, int64_t i)
{
    if (!is_moe_model(c))
        return false;
    if (c->moe_layer_pattern)
        return c->moe_layer_pattern[i];
    int64_t every = c->moe_every > 0 ? c->moe_every : 1;
    return i >= c->first_k_dense && i % every == 0;
}

/* Main-layer split plus the MTP depths, which take the kind of the last main layer (F8, W7). */
static void count_layers(const megref_config_t *c, double *dense_main, double *moe_main,
                         double *dense_mtp, double *moe_mtp)
{
    int64_t moe = 0;
    for (int64_t i = 0; i < c->num_layers; i++)
        moe += layer_is_moe(c, i) ? 1 : 0;
    *moe_main = (double)moe;
    *dense_main = (double)(c->num_layers - moe);
    bool last_moe = c->num_layers > 0 && layer_is_moe(c, c->num_layers - 1);
    double m = (double)c->mtp_num_layers;
    *moe_mtp = last_moe ? m : 0.0;
    *dense_mtp = last_moe ? 0.0 : m;
}

void megref_layer_counts(const megref_config_t *c, double *dense_layers, double *moe_layers)
{
    double dm, mm, dt, mt;
    count_layers(c, &dm, &mm, &dt, &mt);
    *dense_layers = dm + dt;
    *moe_layers = mm + mt;
}

/* The MoE expert width after arguments.py's fallback to --ffn-hidden-size. */
static double moe_ffn(const megref_config_t *c)
{
    return (double)(c->moe_ffn_hidden > 0 ? c->moe_ffn_hidden : c->ffn_hidden);
}

/* ------------------------------------------------------------------------------------------ */
/* FLOPs                                                                                       */

megref_flops_terms_t megref_flops_terms(const megref_config_t *c, double total_tokens,
                                        double seqlen_squared_sum)
{
    const double six = 3.0 * 2.0; /* F1: fwd + dgrad + wgrad, 2 FLOPs per multiply-add */
    const double h = (double)c->hidden, n = (double)c->num_heads;
    const double mult = c->swiglu ? 3.0 : 2.0; /* F4: GEMMs in one MLP of width f */

    double dm, mm, dt, mt;
    count_layers(c, &dm, &mm, &dt, &mt);
    const double dense_layers = dm + dt, moe_layers = mm + mt;
    const double attn_layers = (double)c->num_layers + (double)c->mtp_num_layers;

    /* Per-token MACs of one layer's attention projections and per-(B s^2) MACs of its core. */
    double proj_macs, core_per_s2;
    if (c->multi_latent_attention) { /* F9 */
        const double qk = (double)c->qk_head_dim, pe = (double)c->qk_pos_emb_head_dim;
        const double v = (double)c->v_head_dim, rkv = (double)c->kv_lora_rank;
        double q_path;
        if (c->q_lora_rank > 0) {
            const double rq = (double)c->q_lora_rank;
            q_path = rq * (h + n * (qk + pe) + 1.0);
        } else {
            q_path = h * n * (qk + pe);
        }
        double kv_path = rkv * (h + n * (qk + v) + 1.0) + h * pe;
        double o_path = n * v * h;
        proj_macs = q_path + kv_path + o_path;
        core_per_s2 = six * (n * (qk + pe) / 2.0 + n * v / 2.0);
    } else { /* F2, F3 */
        const double d = (double)c->kv_channels;
        const double q = d * n, kv = d * kv_groups(c);
        const double gate = c->attention_output_gate ? q : 0.0;
        proj_macs = h * (q + kv + kv + gate) + q * h;
        /* two GEMMs (QK^T, PV) x causal 1/2 */
        core_per_s2 = six * q / 2.0 * 2.0;
    }

    /* F4, F7: MLP widths summed over layers, per token and per unit of h. */
    double routed_width;
    if (c->moe_latent_size > 0) {
        const double r = (double)c->moe_latent_size;
        routed_width = moe_ffn(c) * (double)c->moe_router_topk * mult * r / h + 2.0 * r;
    } else {
        routed_width = is_moe_model(c) ? moe_ffn(c) * (double)c->moe_router_topk * mult : 0.0;
    }
    const double shared_width = (double)c->moe_shared_expert_intermediate * mult;
    const double mlp_width = (double)c->ffn_hidden * mult * dense_layers
                             + routed_width * moe_layers + shared_width * moe_layers;

    const double M = (double)c->mtp_num_layers;
    megref_flops_terms_t t;
    t.mlp = total_tokens * (six * h * mlp_width);
    t.attn_linear = total_tokens * (six * proj_macs * attn_layers);
    t.mtp_extra = total_tokens * (six * M * (3.0 * h + 2.0 * h * h)); /* F8 */
    t.logits = total_tokens * (six * h * (double)c->vocab * (M + 1.0)); /* F6 */
    t.attn_core = seqlen_squared_sum * (core_per_s2 * attn_layers);
    return t;
}

double megref_num_flops_packed(const megref_config_t *c, double total_tokens,
                               double seqlen_squared_sum)
{
    megref_flops_terms_t t = megref_flops_terms(c, total_tokens, seqlen_squared_sum);
    return t.mlp + t.attn_linear + t.mtp_extra + t.logits + t.attn_core;
}

double megref_num_flops(const megref_config_t *c, int64_t batch_size)
{
    const double b = (double)batch_size, s = (double)c->seq_length;
    return megref_num_flops_packed(c, b * s, b * s * s);
}

/* ------------------------------------------------------------------------------------------ */
/* Parameters (compute_weight_and_optimizer_memory)                                            */

/* Per-layer parameter groups, split by how stage 0 holds them (W8). */
typedef struct {
    double attention;      /* TP-sharded */
    double dense_mlp;      /* TP-sharded */
    double shared_expert;  /* TP-sharded */
    double routed;         /* all E experts, expert-sharded */
    double routed_active;  /* topk experts */
    double latent_proj;    /* replicated */
    double norms;          /* the two per-layer norms, replicated */
    double router;         /* replicated */
    double shared_gate;    /* replicated */
    double final_norm;     /* replicated, once per model */
    double embedding;      /* one h x V matrix */
} param_groups_t;

static param_groups_t param_groups(const megref_config_t *c)
{
    const double h = (double)c->hidden, n = (double)c->num_heads;
    const double ns = c->rmsnorm ? 1.0 : 2.0; /* W3: LayerNorm also has a bias */
    const double gl = c->swiglu ? 1.5 : 1.0;  /* W2: gated multiplier on a 2-matrix MLP */
    param_groups_t p;

    if (c->multi_latent_attention) { /* W6 */
        const double qk = (double)c->qk_head_dim, pe = (double)c->qk_pos_emb_head_dim;
        const double v = (double)c->v_head_dim, rkv = (double)c->kv_lora_rank;
        double q_path = c->q_lora_rank > 0
                            ? (double)c->q_lora_rank * (h + n * (qk + pe) + ns)
                            : h * n * (qk + pe);
        p.attention = q_path + rkv * (h + n * (qk + v) + ns) + h * pe + n * v * h;
    } else { /* W1: Q and O of width q, K and V of width q*g/n; no biases, no output gate */
        const double q = (double)c->kv_channels * n;
        p.attention = 2.0 * h * h * ((1.0 + kv_groups(c) / n) * (q / h));
    }

    const bool moe = is_moe_model(c);
    const double experts = moe ? (double)c->num_experts : 1.0;
    /* With experts Megatron reads --moe-ffn-hidden-size (already defaulted to ffn by
       arguments.py); without, the routed width is 0. */
    const double ew = moe ? moe_ffn(c) : 0.0;
    const double hr = c->moe_latent_size > 0 ? (double)c->moe_latent_size : h;
    const double shared = (double)c->moe_shared_expert_intermediate;

    p.dense_mlp = 2.0 * h * (double)c->ffn_hidden * gl;
    p.shared_expert = 2.0 * h * shared * gl;
    p.routed = 2.0 * hr * ew * experts * gl;
    p.routed_active = moe ? 2.0 * hr * ew * (double)c->moe_router_topk * gl : 0.0;
    p.latent_proj = (moe && c->moe_latent_size > 0) ? 2.0 * h * (double)c->moe_latent_size : 0.0;
    p.norms = 2.0 * h * ns;
    p.router = moe ? h * experts + (c->disable_bias_linear ? 0.0 : experts) : 0.0;
    p.shared_gate = (shared > 0.0 && c->moe_shared_expert_gate) ? h : 0.0;
    p.final_norm = ns * h;
    p.embedding = h * (double)c->vocab;
    return p;
}

static double dense_layer_params(const param_groups_t *p)
{
    return p->attention + p->dense_mlp + p->norms;
}

static double moe_layer_params(const param_groups_t *p, bool active)
{
    return p->attention + p->shared_expert + (active ? p->routed_active : p->routed)
           + p->latent_proj + p->norms + p->router + p->shared_gate;
}

static double total_params(const megref_config_t *c, bool active)
{
    param_groups_t p = param_groups(c);
    double dm, mm, dt, mt;
    count_layers(c, &dm, &mm, &dt, &mt);
    double block = dense_layer_params(&p) * dm + moe_layer_params(&p, active) * mm + p.final_norm;
    /* W7: MTP depths always counted with all experts, even in the "active" figure */
    double mtp = dense_layer_params(&p) * dt + moe_layer_params(&p, false) * mt;
    double emb = c->untie_embeddings ? 2.0 * p.embedding : p.embedding; /* W4 */
    return block + mtp + emb;
}

double megref_num_parameters(const megref_config_t *c) { return total_params(c, false); }

double megref_num_active_parameters(const megref_config_t *c) { return total_params(c, true); }

/* Stage-0 parameters in the three sharding classes (W8). */
typedef struct {
    double tp_sharded, replicated, expert_sharded;
} shard_params_t;

static shard_params_t most_loaded_shard(const megref_config_t *c, int64_t tp, int64_t pp,
                                        int64_t ep, int64_t etp)
{
    param_groups_t p = param_groups(c);
    double dm, mm, dt, mt;
    count_layers(c, &dm, &mm, &dt, &mt);
    const double P = (double)pp, TP = (double)tp;

    double tp_block = (p.attention + p.dense_mlp) * dm + (p.attention + p.shared_expert) * mm;
    double tp_mtp = (p.attention + p.dense_mlp) * dt + (p.attention + p.shared_expert) * mt;
    double moe_repl = p.norms + p.latent_proj + p.router + p.shared_gate;
    double repl_block = p.norms * dm + moe_repl * mm + p.final_norm;
    double repl_mtp = p.norms * dt + moe_repl * mt;

    shard_params_t s;
    /* 1/pp of the decoder, every MTP depth, the input embedding */
    s.tp_sharded = (tp_block / P + tp_mtp + p.embedding) / TP;
    s.replicated = repl_block / P + repl_mtp;
    s.expert_sharded = (p.routed * mm / P + p.routed * mt) / ((double)etp * (double)ep);
    /* the output layer lives on stage 0 only when there is a single stage */
    if (c->untie_embeddings && pp == 1)
        s.tp_sharded += p.embedding / TP;
    return s;
}

double megref_num_parameters_on_most_loaded_shard_ex(const megref_config_t *c, int64_t tp,
                                                     int64_t pp, int64_t ep, int64_t etp)
{
    shard_params_t s = most_loaded_shard(c, tp, pp, ep, etp);
    return s.tp_sharded + s.replicated + s.expert_sharded;
}

double megref_num_parameters_on_most_loaded_shard(const megref_config_t *c, int64_t tp, int64_t pp,
                                                  int64_t ep)
{
    return megref_num_parameters_on_most_loaded_shard_ex(c, tp, pp, ep, tp);
}

/* W9 */
static double bytes_per_param(bool distributed, double data_parallel)
{
    return distributed ? 6.0 + 12.0 / data_parallel : 18.0;
}

double megref_weight_and_optimizer_bytes_ex(const megref_config_t *c, int64_t tp, int64_t pp,
                                            int64_t dp, int64_t cp, int64_t ep, int64_t etp,
                                            bool use_distributed_optimizer)
{
    shard_params_t s = most_loaded_shard(c, tp, pp, ep, etp);
    int64_t world = tp * pp * cp * dp;
    int64_t expert_dp = world / (etp * ep * pp); /* Megatron floors this */
    return (s.tp_sharded + s.replicated) * bytes_per_param(use_distributed_optimizer, (double)dp)
           + s.expert_sharded * bytes_per_param(use_distributed_optimizer, (double)expert_dp);
}

double megref_weight_and_optimizer_bytes(const megref_config_t *c, int64_t tp, int64_t pp,
                                         int64_t dp, int64_t ep, bool use_distributed_optimizer)
{
    return megref_weight_and_optimizer_bytes_ex(c, tp, pp, dp, 1, ep, tp,
                                                use_distributed_optimizer);
}

/* ------------------------------------------------------------------------------------------ */
/* Activations (compute_activation_memory / compute_activation_memory_without_sp)              */

double megref_activation_bytes(const megref_config_t *c, int64_t tp, int64_t pp, int64_t vp,
                               int64_t micro_batch, int64_t num_microbatches,
                               bool sequence_parallel)
{
    const double s = (double)c->seq_length, b = (double)micro_batch, h = (double)c->hidden;
    const double P = (double)pp, TP = (double)tp, sbh = s * b * h;

    /* A1 / A6: one layer, then all L layers (pp stages' worth of micro-batches in flight) */
    double per_layer = sequence_parallel ? sbh * (18.0 + 4.0 * ((double)c->ffn_hidden / h))
                                         : sbh * (10.0 + 24.0 / TP);
    double a = per_layer * (double)c->num_layers;

    /* A2: token ids / positions (8 bytes a token) and the embedding dropout mask */
    a += 8.0 * s * b * P;
    a += sbh * P;

    /* A3 */
    if (vp > 1) {
        a *= 1.0 + (P - 1.0) / (P * (double)vp);
    } else if (pp > 1 && num_microbatches > 0) {
        a *= fmin(1.0, (double)num_microbatches / P);
    }

    if (sequence_parallel) {
        if (pp == 1) /* A4 */
            a += sbh * 4.0 * (1.0 + (double)c->vocab / h);
        return a / TP; /* A5 */
    }
    if (pp == 1) /* A6 */
        a += (s * b * (double)c->vocab / TP + sbh) * 2.0;
    return a * 1.05;
}

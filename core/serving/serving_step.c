/* serving_step.c — the time of one serving step (one forward pass over every sequence the step
 * carries: decode tokens and prompt chunks together, as continuous batching runs them) on one
 * GPU of the slowest pipeline stage, and where it goes.
 *
 * Every kernel runs at the slower of its two sides (a roofline; Williams et al. 2009):
 *   t = max(F / (P·e_c(F)),  B / (M·e_m(B)))
 * F its FLOPs, P the tensor peak of its format, e_c the system's GEMM efficiency curve at F
 * (Calculon's curves, by GFLOP); B the bytes it moves, M the HBM bandwidth, e_m the memory
 * efficiency curve at B (by MB). Decode GEMMs move whole weight matrices for a few rows of
 * tokens: they sit on the memory side until the batch is large enough (P·e_c/(M·e_m) FLOPs per
 * byte; about 250 tokens for FP8 on an H100), then on the compute side. That is the bound the
 * step reports: the side the larger share of its time sits on.
 *
 * Per block, on one GPU, T tokens on its attention rank (decode tokens + prompt tokens):
 *   attention projections   F = 2·T·A/tp + 2·T·A_r, B = (A/tp + A_r)·b_w + activations
 *     (A: the projections TP divides, A_r: MLA's down projections it replicates)
 *   attention, decode       B = S·kv·c_w  (S sequences, kv bytes per token per block on this
 *                           GPU, c_w the context the block keeps: c, or min(c, window));
 *                           F = S·t_s·(n/tp)·f_d·c_w  (t_s tokens per sequence, n heads,
 *                           f_d = 4·d_head FLOPs per query, key and head; MLA absorbed into the
 *                           latent: 2·(r_kv + d_rope) + 2·r_kv, DeepSeek-V2 appendix B)
 *   attention, prefill      F = T_p·(n/tp)·f_p·c_p  (c_p the mean keys a prompt token sees:
 *                           (L+1)/2 for a causal prompt of L; f_p = 4·d_head, MLA
 *                           2·(d_nope + d_rope) + 2·d_v); B = the prefix's cached KV
 *     attention kernels run at the 16-bit peak × the system's attention_efficiency
 *   MLP, dense or shared    F = 2·T·P_mlp/tp, B = P_mlp/tp·b_w + activations
 *   routed experts          T_all = T·dp tokens reach the stage's experts, each to top_k of E;
 *                           an expert is touched by at least one with probability
 *                           p = 1 − (1 − k/E)^T_all (uniform routing), so the step reads
 *                           B = (E/ep)·p·P_e/etp·b_w and computes F = 2·T_all·k·P_e/(tp·dp)·ι
 *                           in grouped GEMMs of M = T_all·k/(E·p)·ι rows a touched expert,
 *                           ι the busiest expert rank's load over the mean: for μ assignments a
 *                           rank on average, 1 + sqrt(2·ln(ep)/μ) (balls into bins, Raab and
 *                           Steger 1998), at most ep
 *   elementwise             B = T·(6h + 3·f_rank)·2 (norms, residual adds, the gated activation
 *                           as the engines fuse them); in an MoE block also the experts' gather
 *                           and scatter, (R + T)·h·2·2 for R = T·dp·k/ep rows, and with FP8/FP4
 *                           experts the quantization of their inputs, R·(h + f/etp)·(2 + b_w)
 *   TP all-reduce           2 per block of T·h·2 bytes among tp (Calculon's collective cost)
 *   MoE dispatch, combine   with attention data parallelism (serving__moe_exchange_s):
 *                           TensorRT-LLM all-gathers the group's tokens and reduce-scatters the
 *                           output; the others an all-to-all of T/tp·k·h bytes each way
 * and once per stage step: the output layer on the last stage (rows = sampled tokens, weights
 * V·h/tp in 16 bits), the pipeline hand-off (T·h·2 bytes, point to point), and the host
 * (serving_engine.c). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "serving_internal.h"

/* Measured on an H100 SXM5 (bench/gpu/2026-11-26-h100-sxm5-80gb/README.md), taken as shares
 * of the peak so that they carry to other GPUs:
 *   LAYER_SHAPE: GEMMs of transformer-layer shapes reach 0.83 of the large-square ceiling the
 *     presets' curves hold (the twelve llama3 8B/70B/405B layer shapes, BF16 mean 0.665 of peak
 *     against the 0.801 ceiling; FP8 tensorwise 0.611 against 0.734: 0.83 both);
 *   SUSTAINED: a GEMM held at the 700 W board limit runs at 0.86 of its burst rate (BF16 680 of
 *     791 TFLOP/s, FP8 1,229 of 1,435: the SM clock falls from 1,980 to 1,365/1,245 MHz); a
 *     serving step that is compute-bound holds the GPU at its limit;
 *   WEIGHT_STREAM: a decode GEMM (8 to 256 token rows against an 8192x8192 BF16 weight) streams
 *     its weight at 2.16 TB/s, 0.645 of the 3.35 TB/s peak;
 *   GROUPED_STREAM: a grouped expert GEMM at 128 tokens per expert (DeepSeek-V3's experts, 16
 *     local) streams its weights at 0.73 of peak;
 *   KV_STREAM, KV_FIXED: decode attention reads the KV cache at 3.08 TB/s (0.92 of peak) after a
 *     fixed 21 us a call (the decode-attention rows: 1K tokens at batch 16 and 64, 16K at 64);
 *     a system that measured its own decode attention gives decode_attention_efficiency (the
 *     B200-class presets: FlashInfer's trtllm-gen decode kernel, 0.729 of a B200's 8 TB/s);
 *   ELEMENTWISE_STREAM: memory-bound passes stream at the copy rate (2.86 TB/s at
 *     16384x8192: 0.85). */
#define SV_LAYER_SHAPE 0.83
#define SV_SUSTAINED 0.86
#define SV_WEIGHT_STREAM 0.645
#define SV_GROUPED_STREAM 0.73
#define SV_KV_STREAM 0.92
#define SV_KV_FIXED 21e-6
#define SV_ELEMENTWISE_STREAM 0.85
/* MLA decode attention (weights absorbed into the latent, compute-bound at large batches):
 * FlashMLA's dense decoding kernel reaches 660 TFLOP/s on an H800 SXM5 (989.4 TFLOP/s BF16
 * peak): 0.667 (deepseek-ai/FlashMLA README, "Performance", CUDA 12.8). */
#define SV_MLA_DECODE (660.0 / 989.4)

/* A GEMM of F FLOPs reading `weights` and `act` bytes: compute at the curve's efficiency x the
 * layer-shape and sustained-clock factors, memory at `stream` of peak. Its time, into the step's
 * lines. */
static double gemm(const sv_ctx_t *c, double F, double weights, double act, double stream,
                   double *mem_side, double *comp_side, serving_step_t *o)
{
    if (F <= 0 && weights <= 0)
        return 0;
    double ec = llm_curve_efficiency(c->gemm_curve, F / 1e9);
    if (ec <= 0)
        ec = c->gemm_curve->points[c->gemm_curve->num_points - 1].efficiency;
    const double B = weights + act;
    const double tc = F / (c->gemm_flops * ec * SV_LAYER_SHAPE * SV_SUSTAINED);
    const double tm = B / (c->mem_bw * stream);
    o->gemm_compute_s += tc;
    o->weights_read_s += weights / (c->mem_bw * stream);
    o->weight_bytes += weights;
    o->flops += F;
    if (tm >= tc)
        *mem_side += tm;
    else
        *comp_side += tc;
    return sv_max(tc, tm);
}

/* The routed experts' two grouped GEMMs on one GPU (the shape model core/llm shares,
 * llm_grouped_gemm_shape): M rows reach each local expert, `rows` = T_all·k/ep·ι token-expert
 * rows this GPU computes (each expert split etp ways, so at width f/etp); gate+up (K = h,
 * N = g·f/etp, g = 2 when gated) and down (K = f/etp, N = h), each at
 *   t = F / (P · e_top · 0.86 · M/(M + 160) · K/(K + 160) · N/(N + 32)) + 30 µs
 * (e_top the format's curve top, 0.86 the power-limited clock as for every serving GEMM), and
 * the touched experts' weights streamed at GROUPED_STREAM: the slower side. */
static double grouped_experts(const sv_ctx_t *c, double M, double rows, double weights,
                              double *mem_side, double *comp_side, serving_step_t *o)
{
    const fathom_model_t *m = c->m;
    if (rows <= 0 && weights <= 0)
        return 0;
    const double h = (double)m->hidden, f = (double)m->moe.expert_feedforward / c->etp;
    const double up = m->gated_mlp ? 2.0 : 1.0;
    const double rate = c->expert_flops * llm_curve_top(c->expert_curve) * SV_SUSTAINED;
    const double F_up = 2.0 * rows * h * up * f, F_down = 2.0 * rows * f * h;
    double tc = 0;
    if (rows > 0)
        tc = F_up / (rate * llm_grouped_gemm_shape(M, h, up * f)) +
             F_down / (rate * llm_grouped_gemm_shape(M, f, h)) + 2.0 * LLM_GROUPED_GEMM_FIXED_S;
    const double act = rows * 2.0 * h * 2.0; /* the rows in and out, 16 bits */
    const double tm = (weights + act) / (c->mem_bw * SV_GROUPED_STREAM);
    o->gemm_compute_s += tc;
    o->weights_read_s += weights / (c->mem_bw * SV_GROUPED_STREAM);
    o->weight_bytes += weights;
    o->flops += F_up + F_down;
    if (tm >= tc)
        *mem_side += tm;
    else
        *comp_side += tc;
    return sv_max(tc, tm);
}

/* An attention kernel reading kvb bytes of KV cache (after `fixed` seconds) and computing F
 * FLOPs: its time, into the step's lines. */
static double attention(const sv_ctx_t *c, double kvb, double fixed, double F, double rate,
                        double *mem_side, double *comp_side, serving_step_t *o)
{
    const double share = c->s->decode_attention_efficiency > 0 ? c->s->decode_attention_efficiency
                                                               : SV_KV_STREAM;
    const double tm = fixed + kvb / (c->mem_bw * share);
    const double tc = F / rate;
    o->kv_read_s += tm;
    o->attention_compute_s += tc;
    o->kv_bytes += kvb;
    o->flops += F;
    if (tm >= tc)
        *mem_side += tm;
    else
        *comp_side += tc;
    return sv_max(tm, tc);
}

/* FLOPs per query token, per key and per head of decode and prefill attention. */
static void attention_flops(const fathom_model_t *m, double *decode, double *prefill)
{
    if (m->mla.present) {
        const model_mla_t *a = &m->mla;
        *decode = 2.0 * (double)(a->kv_lora_rank + a->qk_rope_head_dim) +
                  2.0 * (double)a->kv_lora_rank;
        *prefill = 2.0 * (double)(a->qk_nope_head_dim + a->qk_rope_head_dim) +
                   2.0 * (double)a->v_head_dim;
        return;
    }
    *decode = *prefill = 4.0 * (double)m->attn_size;
}

/* Costs of one block of each kind and of the once-per-step parts, for one load. */
typedef struct {
    double block[SV_KINDS]; /* seconds of one block */
    serving_step_t line[SV_KINDS];
    double mem_side[SV_KINDS], comp_side[SV_KINDS], net[SV_KINDS];
} block_costs_t;

/* One tensor-parallel all-reduce of `bytes` over the tp GPUs: the bytes as the system's tier
 * prices them (llm_net_op_time less the tier's own latency) and the latency of NCCL's ring, whose
 * 2(p − 1) steps each cost a hop (NCCL src/graph/tuning.cc, baseLat and hwLat, Ring):
 *   LL      6.6 µs + 2(p − 1)·(0.6 NVLink | 1.0 PCIe) µs, at 1/4 of the bus bandwidth
 *   LL128  14.0 µs + 2(p − 1)·1.9 µs, at 0.92 of it (NVLink only)
 *   Simple  8.4 µs + 2(p − 1)·(3.4 NVLink | 5.7 PCIe) µs, at all of it
 * the cheapest (NCCL's tuner picks it; the engines' own one-shot kernels are not modelled). The
 * tier's link class (llm_network_link: its `link`, else by position) says PCIe; a group on the
 * network tier keeps NVLink's hops, most of its ring's steps staying inside a node. */
double serving__tp_all_reduce_s(const sv_ctx_t *c, double bytes)
{
    const llm_network_t *nw = &c->s->hw.networks[c->tp_net];
    const double data =
        llm_net_op_time(&c->s->hw, c->tp_net, LLM_OP_ALL_REDUCE, bytes, c->tp) - nw->latency_s;
    const bool pcie = llm_network_link(&c->s->hw, c->tp_net) == LLM_LINK_PCIE;
    const double steps = 2.0 * (c->tp - 1);
    const double ll = (6.6 + steps * (pcie ? 1.0 : 0.6)) * 1e-6 + data * 4.0;
    const double simple = (8.4 + steps * (pcie ? 5.7 : 3.4)) * 1e-6 + data;
    const double ll128 = pcie ? INFINITY : (14.0 + steps * 1.9) * 1e-6 + data / 0.92;
    return sv_min(ll, sv_min(simple, ll128));
}

/* The MoE layer's exchange with attention data parallelism, dispatch and combine, for T tokens
 * on an attention rank (T/tp rows a GPU) among the G = tp·dp GPUs of the group.
 *   TensorRT-LLM (its CUTLASS MoE, the default backend): every rank gathers every rank's tokens
 *     and routing, then reduce-scatters the experts' output back (CutlassFusedMoE.forward_chunk:
 *     "fp4_allgather + FusedMoe Op + reducescatter, with AttentionDP on", allgather of
 *     [x, x_sf, token_selected_experts, token_final_scales], then reducescatter; the
 *     all-to-all paths need MNNVL or DeepEP, not modelled). A buffer of R = G·T/tp rows:
 *       all-gather of R·(h·a + k·8) bytes (a bytes a value in the experts' input format: NVFP4
 *       0.5625 with its scales, FP8 1, else 2; k int32 expert ids and k float32 weights a row)
 *       reduce-scatter of R·h·2 bytes (the output in 16 bits)
 *     each priced by the tier's collective cost (a ring moves (G − 1)/G of the buffer a GPU):
 *     every GPU receives every token, whatever top_k, so a top-1 model (Llama 4) pays G times
 *     an all-to-all's bytes, a top-8 model on 8 GPUs the same;
 *   vLLM, SGLang: an all-to-all of T/tp·k·h bytes each way (1 byte a value dispatched in
 *     FP8/FP4, 2 combined). */
double serving__moe_exchange_s(const sv_ctx_t *c, double T)
{
    const double h = (double)c->m->hidden, k = (double)c->m->moe.top_k, G = c->tp * c->dp;
    if (c->engine == SERVING_ENGINE_TRTLLM) {
        const double a = c->expert_act_bytes > 0 ? c->expert_act_bytes : 2.0;
        const double R = G * T / c->tp;
        return llm_net_op_time(&c->s->hw, c->ep_net, LLM_OP_ALL_GATHER, R * (h * a + k * 8.0),
                               G) +
               llm_net_op_time(&c->s->hw, c->ep_net, LLM_OP_REDUCE_SCATTER, R * h * 2.0, G);
    }
    /* tokens travel in the experts' input format (FP8 a value), else in 16 bits */
    const double a = c->expert_act_bytes > 0 ? 1.0 : 2.0;
    const double tok = T / c->tp * k * h;
    return llm_a2a_time(&c->s->hw, c->ep_net, tok * a, G, G) +
           llm_a2a_time(&c->s->hw, c->ep_net, tok * 2.0, G, G);
}

/* A mixture-of-experts MLP's share of a block: the shared experts' and the router's GEMMs
 * (added to mc->gemm), the routed experts' grouped GEMMs, the dispatch across data-parallel
 * attention ranks, and what the elementwise passes take from it (mc->f_rank, mc->pass). */
typedef struct {
    double gemm, experts, net, f_rank, pass;
} moe_costs_t;

static void moe_mlp_cost(const sv_ctx_t *c, double T, double *ms, double *cs, serving_step_t *o,
                         moe_costs_t *mc)
{
    const fathom_model_t *m = c->m;
    const double h = (double)m->hidden;
    const double act2 = 2.0; /* bytes of a 16-bit activation */
    const model_moe_t *x = &m->moe;
    const double E = (double)x->num_experts, k = (double)x->top_k;
    const double Ps = (double)x->shared_experts *
                      model_mlp_params(m, (double)x->shared_expert_feedforward) / c->tp;
    const double Pr = h * E; /* router, replicated */
    mc->gemm = gemm(c, 2.0 * T * (Ps + Pr), Ps * c->bpw + Pr * 2.0, T * h * act2,
                    SV_WEIGHT_STREAM, ms, cs, o);
    const double Tall = T * c->dp;
    const double Pe = model_mlp_params(m, (double)x->expert_feedforward);
    const double touched = 1.0 - pow(1.0 - k / E, Tall);
    const double Wb = (E / c->ep) * touched * Pe / c->etp * c->bpw_experts;
    double imb = 1.0;
    if (c->ep > 1 && Tall > 0) {
        const double mu = Tall * k / c->ep;
        imb = sv_min(c->ep, 1.0 + sqrt(2.0 * log(c->ep) / mu));
    }
    /* a grouped GEMM computes the experts that got rows, so the law's M is the rows of a
     * touched expert, T_all·k / (E·p): 1 for one token, T_all·k/E once every expert is touched */
    const double M = touched > 0 ? Tall * k / (E * touched) * imb : 0;
    serving_step_t tmp = {0};
    mc->experts = grouped_experts(c, M, Tall * k / c->ep * imb, Wb, ms, cs, &tmp);
    o->gemm_compute_s += tmp.gemm_compute_s;
    o->weights_read_s += tmp.weights_read_s;
    o->weight_bytes += tmp.weight_bytes;
    o->flops += tmp.flops;
    o->moe_experts_s += mc->experts;
    /* the gated activation of the token-expert rows this GPU holds, T·k·f/tp per stage
     * GPU whichever way the experts are split, and of the shared experts */
    mc->f_rank = ((double)x->expert_feedforward * k +
                  (double)x->shared_experts * (double)x->shared_expert_feedforward) /
                 c->tp;
    /* the passes around the experts (memory-bound): the rows this GPU takes,
     * R = T·dp·k/ep token-expert pairs, are gathered from the tokens (read T·h, write R·h)
     * and scattered back with their weights (read R·h, write T·h), in 16 bits; an FP8/FP4
     * expert GEMM first quantizes its input (read 2 bytes, write b per value of R·(h + f/etp)) */
    const double R = T * c->dp * k / c->ep;
    mc->pass = (R + T) * h * act2 * 2.0;
    if (c->expert_act_bytes > 0)
        mc->pass += R * (h + (double)x->expert_feedforward / c->etp) *
                    (act2 + c->expert_act_bytes);
    mc->net = 0;
    if (c->dp > 1 && T > 0) {
        mc->net = serving__moe_exchange_s(c, T);
        o->moe_dispatch_s += mc->net;
    }
}

static void block_cost(const sv_ctx_t *c, const sv_load_t *ld, int kind, block_costs_t *bc)
{
    const fathom_model_t *m = c->m;
    serving_step_t *o = &bc->line[kind];
    double *ms = &bc->mem_side[kind], *cs = &bc->comp_side[kind];
    const bool moe = kind >= SV_MOE_FULL, window = kind == SV_DENSE_WINDOW || kind == SV_MOE_WINDOW;
    const double h = (double)m->hidden;
    const double T = ld->decode_seqs * ld->tokens_per_seq + ld->prefill_tokens;
    const double act2 = 2.0; /* bytes of a 16-bit activation */

    /* attention projections */
    const model_block_params_t dense = model_block_params(m, false);
    const double A = dense.split - model_mlp_params(m, (double)m->feedforward);
    const double A_r = dense.replicated - 2.0 * model_norm_params(m);
    const double Pa = A / c->tp + A_r;
    double t_gemm =
        gemm(c, 2.0 * T * Pa, Pa * c->bpw, T * 2.0 * h * act2, SV_WEIGHT_STREAM, ms, cs, o);

    /* attention kernels */
    double fd, fp;
    attention_flops(m, &fd, &fp);
    const double heads = (double)m->attn_heads / c->tp;
    const double wnd = window ? (double)m->sliding_window : INFINITY;
    const double cd = sv_min(ld->decode_context, wnd), cp = sv_min(ld->prefill_context, wnd);
    double t_attn = 0;
    /* flash kernels at the system's attention efficiency (sustained clock); MLA's absorbed
     * decode, where the engine runs FlashMLA (vLLM and SGLang on Hopper, serving_engine.c), as
     * FlashMLA measured it (SV_MLA_DECODE of the 16-bit peak) */
    const double flash = c->attn_flops * SV_SUSTAINED;
    const bool flashmla =
        m->mla.present && strcmp(serving__attention_kernel(c, true), "flashmla") == 0;
    const double decode_rate = flashmla ? c->gemm16_flops * SV_MLA_DECODE : flash;
    if (ld->decode_seqs > 0)
        t_attn += attention(c, ld->decode_seqs * c->kv_block_token * cd, SV_KV_FIXED,
                            ld->decode_seqs * ld->tokens_per_seq * heads * fd * cd, decode_rate,
                            ms, cs, o);
    if (ld->prefill_tokens > 0)
        t_attn += attention(c, (ld->prefill_prefix + ld->prefill_tokens) * c->kv_block_token, 0,
                            ld->prefill_tokens * heads * fp * cp, flash, ms, cs, o);
    o->attention_s += t_attn;

    /* MLP: dense, or shared experts + router + routed experts */
    double f_rank, moe_pass = 0;
    double t_moe = 0, t_net = 0;
    if (!moe) {
        const double P = model_mlp_params(m, (double)m->feedforward) / c->tp;
        t_gemm += gemm(c, 2.0 * T * P, P * c->bpw,
                       T * (h + (double)m->feedforward / c->tp) * act2, SV_WEIGHT_STREAM, ms, cs,
                       o);
        f_rank = (double)m->feedforward / c->tp;
    } else {
        moe_costs_t mc;
        moe_mlp_cost(c, T, ms, cs, o, &mc);
        t_gemm += mc.gemm;
        t_moe = mc.experts;
        t_net += mc.net;
        f_rank = mc.f_rank;
        moe_pass = mc.pass;
    }
    o->gemm_s += t_gemm;

    /* elementwise passes */
    const double eb = T * (6.0 * h + 3.0 * f_rank) * act2 + moe_pass;
    const double te = T > 0 ? eb / (c->mem_bw * SV_ELEMENTWISE_STREAM) : 0;
    o->elementwise_s += te;
    *ms += te;

    /* tensor-parallel all-reduces after attention and after the MLP */
    if (c->tp > 1 && T > 0) {
        const double ar = 2.0 * serving__tp_all_reduce_s(c, T * h * act2);
        o->tp_collectives_s += ar;
        t_net += ar;
    }
    bc->net[kind] = t_net;
    bc->block[kind] = t_gemm + t_attn + t_moe + te + t_net;
}

static void add_scaled(serving_step_t *dst, const serving_step_t *src, double n)
{
    dst->gemm_s += n * src->gemm_s;
    dst->weights_read_s += n * src->weights_read_s;
    dst->gemm_compute_s += n * src->gemm_compute_s;
    dst->attention_s += n * src->attention_s;
    dst->kv_read_s += n * src->kv_read_s;
    dst->attention_compute_s += n * src->attention_compute_s;
    dst->elementwise_s += n * src->elementwise_s;
    dst->moe_experts_s += n * src->moe_experts_s;
    dst->tp_collectives_s += n * src->tp_collectives_s;
    dst->moe_dispatch_s += n * src->moe_dispatch_s;
    dst->weight_bytes += n * src->weight_bytes;
    dst->kv_bytes += n * src->kv_bytes;
    dst->flops += n * src->flops;
}

void serving__step(const sv_ctx_t *c, const sv_load_t *ld, serving_step_t *out)
{
    const fathom_model_t *m = c->m;
    block_costs_t bc;
    memset(&bc, 0, sizeof bc);
    for (int k = 0; k < SV_KINDS; k++) {
        bool used = false;
        for (int i = 0; i < c->num_stages; i++)
            used |= c->stages[i].blocks[k] > 0;
        if (used) /* a dense model has no MoE kinds to cost (and no experts to divide by) */
            block_cost(c, ld, k, &bc);
    }
    const double T = ld->decode_seqs * ld->tokens_per_seq + ld->prefill_tokens;
    const double h = (double)m->hidden;
    serving_step_t best = {0};
    best.total_s = -1;
    for (int i = 0; i < c->num_stages; i++) {
        const sv_stage_t *st = &c->stages[i];
        serving_step_t s = {0};
        double ms = 0, cs = 0, net = 0;
        for (int k = 0; k < SV_KINDS; k++) {
            if (st->blocks[k] <= 0)
                continue;
            add_scaled(&s, &bc.line[k], st->blocks[k]);
            ms += st->blocks[k] * bc.mem_side[k];
            cs += st->blocks[k] * bc.comp_side[k];
            net += st->blocks[k] * bc.net[k];
        }
        double t = 0;
        for (int k = 0; k < SV_KINDS; k++)
            if (st->blocks[k] > 0)
                t += st->blocks[k] * bc.block[k];
        if (st->last && m->vocab_size > 0) {
            const double rows = ld->decode_seqs * ld->tokens_per_seq + ld->prefill_seqs;
            const double P = (double)m->vocab_size * h / c->tp;
            serving_step_t tmp = {0};
            /* the output layer runs in 16 bits whatever the blocks' format */
            sv_ctx_t c16 = *c;
            const llm_processor_t *mx = &c->s->hw.matrix;
            const llm_rate_t *r16 = mx->rate[LLM_DT_BFLOAT16].present ? &mx->rate[LLM_DT_BFLOAT16]
                                                                      : &mx->rate[LLM_DT_FLOAT16];
            c16.gemm_flops = r16->tflops * 1e12;
            c16.gemm_curve = &r16->gflops_efficiency;
            const double tl = gemm(&c16, 2.0 * rows * P, P * 2.0,
                                   rows * (double)m->vocab_size / c->tp * 4.0, SV_WEIGHT_STREAM,
                                   &ms, &cs, &tmp);
            s.gemm_s += tl;
            s.gemm_compute_s += tmp.gemm_compute_s;
            s.weights_read_s += tmp.weights_read_s;
            s.weight_bytes += tmp.weight_bytes;
            s.flops += tmp.flops;
            t += tl;
        }
        if (c->pp > 1 && T > 0) {
            const double x = llm_net_op_time(&c->s->hw, c->pp_net, LLM_OP_P2P, T * h * 2.0, 2);
            s.pp_transfer_s = x;
            net += x;
            t += x;
        }
        s.host_s = serving__host_s(c, ld, t);
        t += s.host_s;
        s.total_s = t;
        s.tokens = T;
        /* the bound: the side that holds the larger share of the step */
        double side[4] = {ms, cs, net, s.host_s};
        int b = 0;
        for (int j = 1; j < 4; j++)
            if (side[j] > side[b])
                b = j;
        s.bound = (serving_bound_t)b;
        if (s.total_s > best.total_s)
            best = s;
    }
    *out = best;
}

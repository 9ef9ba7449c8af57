/* llm_collective.c — collectives as NCCL runs them (llm_collective.h, doc/collectives.md).
 *
 * Layout. A group of P ranks, `stride` processors apart, spans tiers 0..t (t: the tier the
 * execution puts it on, its *_par_net). Inside one tier-j domain lie n_j = min(P, max(1, size_j/stride)) of
 * its ranks, and the group covers D_j = P/n_j tier-j domains. Per rank a tier gives
 * B_j = bandwidth_j·efficiency_j (GB/s per direction: on a node-spanning tier, the rank's share
 * of the NICs); the n_{j−1} ranks inside one tier-(j−1) domain cross tier j on n_{j−1}·B_j.
 *
 * Ring (all-gather, reduce-scatter, all-reduce): every link of the ring carries the same bytes,
 * so the bus bandwidth is the slowest crossing
 *     busbw = min(B_0, min_{j=1..t} n_{j−1}·B_j / (1 + γ_j·log₂ D_{j−1}))
 * (γ_j: tier j's scale_falloff, the share of bus bandwidth lost per doubling of the domains the
 * ring crosses — congestion and adaptive routing on a larger fabric) and
 *     time = latency + S·f/busbw,   f = (P−1)/P (all-gather, reduce-scatter), 2(P−1)/P (all-reduce)
 * with latency = base + (steps − inter)·hop_0 + inter·hop_t, steps = P−1 (2(P−1) for
 * all-reduce) of which inter = D_0 − 1 (2(D_0 − 1)) cross a node boundary.
 *
 * Tree (all-reduce over several nodes; NCCL's intra-node chain and inter-node double binary
 * tree): inside a node the n ranks reduce and broadcast along a chain, 2S(n−1)/n through each
 * rank's NVLink (at the NVLS rate where tier 0 has NVLink SHARP); across nodes each node sends
 * and receives S per direction with two nodes (one partner) and 2S(D−1)/D with more (interior
 * in one tree, leaf in the other), or S with in-network reduction (SHARP) — over its n NICs:
 *     time = latency_tree + max(2S(n−1)/n / B_intra, V/(n·B_t)),
 *     latency_tree = base + 2·((n−1)·hop_0 + ⌈log₂ D⌉·hop_t)   (one hop up and down with SHARP)
 * NVLS (all-reduce inside one tier-0 domain with NVLink SHARP, tier 0's nvls_efficiency ε > 0):
 * the switch reduces, so time = base + hop_nvls + S·2(P−1)/P/(bandwidth_0·ε).
 *
 * Protocols (NCCL's tuner picks the cheapest; src/graph/tuning.cc, master of 2026-06): Simple
 * at the full bus bandwidth, LL128 at 0.92 of it, LL at half; base latencies 8.4, 14.0 and 6.6 µs
 * (ring) and 8.4, 14.0, 6.8 (tree); per-step hop latencies: Simple the tier's `latency` (NCCL's
 * own are 3.4 µs for NVLink, 14 µs for the network; the presets keep Calculon's 10 and 20 µs),
 * LL128 1.9 / 2.5 / 4.0 µs and LL 0.6 / 1.0 / 2.7 µs for NVLink / PCIe / network tiers (tree
 * over the network: LL 5.0, LL128 8.5); NVLS: 25 µs (NVLink). A tier's class is its `link`, or
 * by position where absent (llm_network_link: tier 0 NVLink, the last the network, between PCIe).
 *
 * All-to-all: each rank sends S(P−1)/P, the (n_0 − 1)/P of it inside its node over B_0 and the
 * rest over its NIC share: time = hop·(P−1) + max(S(n_0 − 1)/P / B_0, S(P − n_0)/P / B_t).
 * Point-to-point: time = hop_t + S/B_t on the tier the two ranks span. */
#include "llm_collective.h"

#include <math.h>

#include "llm_internal.h"

/* NCCL's tuner constants (file head), µs. */
enum { PROTO_LL = 0, PROTO_LL128 = 1, PROTO_SIMPLE = 2, PROTOS = 3 };
static const double base_ring_us[PROTOS] = {6.6, 14.0, 8.4};
static const double base_tree_us[PROTOS] = {6.8, 14.0, 8.4};
static const double bw_share[PROTOS] = {0.5, 0.92, 1.0};
/* hop latency by link class (llm_link_t − 1: NVLink, PCIe, network) for LL and LL128; Simple:
 * the tier's */
static const double hop_ring_us[3][2] = {{0.6, 1.9}, {1.0, 2.5}, {2.7, 4.0}};
static const double hop_tree_net_us[2] = {5.0, 8.5};
#define NVLS_HOP_US 25.0

/* The group's shape over the tiers (file head). */
typedef struct {
    int top;                        /* highest tier it spans */
    double n[LLM_MAX_NETWORKS];     /* its ranks inside one tier-j domain */
    double busbw;                   /* ring bus bandwidth, bytes/s */
} shape_t;

static double tier_bw(const llm_network_t *n)
{
    return n->bandwidth_gbps * 1e9 * n->efficiency;
}

static void layout(const llm_system_t *s, const llm_group_t *g, shape_t *sh)
{
    const double P = g->ranks, stride = g->stride >= 1 ? g->stride : 1;
    /* the tier the execution put the group on: the layout rule (and Megatron's rank order)
     * already moved it up when its ranks leave a tier-0 domain, and a domain a job fills only
     * in part (64 of an NVL72's 72) is the tier's to say, not the stride's */
    sh->top = g->tier < 0 ? 0 : g->tier >= s->num_networks ? s->num_networks - 1 : g->tier;
    for (int j = 0; j < s->num_networks; j++) {
        double n = floor((double)s->networks[j].size / stride);
        sh->n[j] = n < 1 ? 1 : n > P ? P : n;
    }
    sh->busbw = tier_bw(&s->networks[0]);
    for (int j = 1; j <= sh->top; j++) {
        const llm_network_t *net = &s->networks[j];
        const double domains = P / sh->n[j - 1];
        const double crossing =
            sh->n[j - 1] * tier_bw(net) / (1 + net->scale_falloff * log2(domains));
        sh->busbw = crossing < sh->busbw ? crossing : sh->busbw;
    }
}

static double hop_s(const llm_system_t *s, int tier, int proto)
{
    return proto == PROTO_SIMPLE ? s->networks[tier].latency_s
                                 : hop_ring_us[llm_network_link(s, tier) - 1][proto] * 1e-6;
}

/* Ring all-gather, reduce-scatter or all-reduce: the cheapest protocol. */
static double ring_time(const llm_system_t *s, const shape_t *sh, bool all_reduce, double bytes,
                        double P)
{
    const double twice = all_reduce ? 2 : 1;
    const double steps = twice * (P - 1), inter = sh->top > 0 ? twice * (P / sh->n[0] - 1) : 0;
    const double f = twice * (P - 1) / P;
    double best = INFINITY;
    for (int p = 0; p < PROTOS; p++) {
        const double lat = base_ring_us[p] * 1e-6 + (steps - inter) * hop_s(s, 0, p) +
                           inter * hop_s(s, sh->top, p);
        const double t = lat + bytes * f / (sh->busbw * bw_share[p]);
        best = t < best ? t : best;
    }
    return best;
}

/* The tree all-reduce over nodes (file head); INFINITY inside one node. */
static double tree_time(const llm_system_t *s, const shape_t *sh, double bytes, double P)
{
    if (sh->top == 0)
        return INFINITY;
    const int t = sh->top;
    const llm_network_t *top = &s->networks[t], *t0 = &s->networks[0];
    const double n = sh->n[t - 1], D = P / n;
    /* inside the domain below the top tier: a chain over tiers 0..t−1 (NVLS on tier 0) */
    llm_group_t inner = {n, 1, t - 1};
    shape_t in;
    layout(s, &inner, &in);
    const double nvls = t - 1 == 0 && t0->nvls_efficiency > 0
                            ? t0->bandwidth_gbps * 1e9 * t0->nvls_efficiency
                            : 0;
    const double intra_bw = nvls > in.busbw ? nvls : in.busbw;
    const double volume = top->sharp || D <= 2 ? bytes : 2 * bytes * (D - 1) / D;
    const double inter_bw = n * tier_bw(top) / (1 + top->scale_falloff * log2(D));
    const double depth = top->sharp ? 1 : ceil(log2(D));
    double best = INFINITY;
    for (int p = 0; p < PROTOS; p++) {
        const double hop_t = p == PROTO_SIMPLE ? top->latency_s : hop_tree_net_us[p] * 1e-6;
        const double lat = base_tree_us[p] * 1e-6 + 2 * ((n - 1) * hop_s(s, 0, p) + depth * hop_t);
        const double data = fmax(2 * bytes * (n - 1) / n / intra_bw, volume / inter_bw);
        const double tt = lat + data / bw_share[p];
        best = tt < best ? tt : best;
    }
    return best;
}

double llm_collective_busbw(const llm_system_t *s, const llm_group_t *g)
{
    shape_t sh;
    layout(s, g, &sh);
    return sh.busbw;
}

/* Calculon's Network.time for a system without the NCCL model (bit for bit). */
static double calculon_time(const llm_system_t *s, llm_coll_t kind, double bytes,
                            const llm_group_t *g)
{
    const llm_network_t *n = &s->networks[g->tier];
    if (kind == LLM_COLL_ALL_TO_ALL) /* as calibration prices it: p2p of what leaves the rank */
        return llm__net_time(n, LLM_OP_P2P, bytes * (g->ranks - 1) / g->ranks, g->ranks);
    return llm__net_time(n, (llm_net_op_t)kind, bytes, g->ranks);
}

double llm_collective_time(const llm_system_t *s, llm_coll_t kind, double bytes,
                           const llm_group_t *g)
{
    if (s->collectives != LLM_COLLECTIVES_NCCL)
        return calculon_time(s, kind, bytes, g);
    const double P = g->ranks;
    if (P < 2 || !(bytes > 0)) /* no peer or no message: nothing is sent */
        return 0;
    shape_t sh;
    layout(s, g, &sh);
    const llm_network_t *top = &s->networks[sh.top], *t0 = &s->networks[0];
    switch (kind) {
    case LLM_COLL_P2P:
        return top->latency_s + bytes / tier_bw(top);
    case LLM_COLL_ALL_TO_ALL: {
        const double n0 = sh.n[0];
        const double intra = bytes * (n0 - 1) / P / tier_bw(t0);
        const double inter = sh.top > 0 ? bytes * (P - n0) / P / (tier_bw(top) /
                                                                  (1 + top->scale_falloff *
                                                                           log2(P / n0)))
                                        : 0;
        return (P - 1) * hop_s(s, sh.top, PROTO_LL) + fmax(intra, inter);
    }
    case LLM_COLL_ALL_REDUCE: {
        double t = fmin(ring_time(s, &sh, true, bytes, P), tree_time(s, &sh, bytes, P));
        if (sh.top == 0 && t0->nvls_efficiency > 0)
            t = fmin(t, (base_ring_us[PROTO_SIMPLE] + NVLS_HOP_US) * 1e-6 +
                            bytes * 2 * (P - 1) / P /
                                (t0->bandwidth_gbps * 1e9 * t0->nvls_efficiency));
        return t;
    }
    default:
        return ring_time(s, &sh, false, bytes, P);
    }
}

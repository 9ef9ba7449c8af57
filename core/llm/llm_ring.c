/* llm_ring.c — context parallelism as the PyTorch stacks run it: ring attention over SDPA
 * (torch.distributed.tensor.experimental context_parallel, _attention.py at torch 1963fc8 of
 * 2024-12-23, the torch of torchtitan's benchmarks at 9dec370; the same loop on torch's main of
 * 2025), per attention layer, with c = context_par ranks, T = b·s/c tokens on a rank, n query
 * heads per rank and E = T·n·d elements of one query-shaped tensor (Q, O, and K and V too:
 * torchtitan's repeat_kv widens K and V to the n query heads before SDPA, so the ring carries
 * n heads, not the g key/value heads Megatron's ring carries). Megatron's ring (Transformer
 * Engine's pass-KV with fused merges) stays llm_stages.c's.
 *
 * Load-balanced causal sharding: each rank holds sequence chunks j and 2c−1−j; step 0 runs SDPA
 * causal on the local Q, K, V; each of the c − 1 later steps a non-causal SDPA of the whole local
 * Q against half of the arriving K/V, or of half of Q against all of it — T²/2 score pairs every
 * step, so every rank does the same FLOPs and the step model's count (s/c queries against s
 * keys, half of the square) stands. Rank c − 1 takes the whole-Q branch every step (i ≤ rank),
 * whose merges touch all of O: it sets the pace, and the bytes below are its.
 *
 * Communication (rotate_method "allgather", the default of torch's _ContextParallelOptions and of
 * torchtitan): forward all-gathers every rank's concatenated K and V once (S = c·kv bytes, kv =
 * 2·E·bpe) and waits for it after the local step 0, so only step 0's attention hides it; backward
 * all-gathers K and V again the same way, and passes the fp32 gradients of K and V (2·E·4 bytes)
 * to the next rank after every step by an all-to-all used as a permutation (the dKV rotater is
 * always all-to-all), each under the next step's SDPA backward, the last one waited for after the
 * loop. Per block and microbatch (llm__torch_ring_exposed):
 *   fw = max(0, AG(c·kv) − attn_fw/c)
 *   bw = max(0, AG(c·kv) − attn_bw/c) + (c − 1)·max(0, p2p(dkv) − attn_bw/c) + p2p(dkv)
 * and fw again for every forward a full recompute reruns.
 *
 * Memory passes around the SDPA calls (llm__torch_ring_bytes), bytes per element of E for a
 * b-byte datatype (convert_to_f32: the running output, log-sum-exp and gradients are fp32):
 *   each later call reads its Q and writes its O again (the step model counts one call):
 *           forward 2b, backward (Q, O, dO in, dQ out) 4b, per later step
 *   forward, eager, per later step: the block output upcast b + 4, the merge
 *           out − σ(lse_b − lse)·(out − out_b) as three fp32 ops 12 + 8 + 12 = 32, the
 *           torch.cat of K and V the loop builds for the rotater 4b (c − 1 of them; only the
 *           first feeds the all-gather); once: step 0's upcast and the final downcast, 2(4 + b)
 *           → (c − 1)(36 + 5b) + 2(4 + b)
 *   forward, compiled (Inductor fuses each merge into one kernel and drops the unused cats):
 *           per later step fp32 out and b-byte block out in, fp32 out back, 8 + b; once the two
 *           casts 2(4 + b) and the one cat 4b → (c − 1)(8 + b) + 2(4 + b) + 4b
 *   backward, eager, per later step: grad_query += block's (fp32 += b) 8 + b; the arriving dK,
 *           dV: half of each accumulated in place 2·(8 + b)/2 and _partial_update's torch.cat of
 *           both halves 2·8; the torch.cat of dK and dV to send 16; the cat of K and V 4b
 *           → 48 + 6b; step 0: three fp32 zeros_like 12, three accumulations 3(8 + b), the send
 *           cat 16 → 52 + 3b; at the end dQ and dK, dV cast down 12 + 3b
 *   backward, compiled: per later step dQ's accumulation 8 + b and dK, dV's read from the
 *           arriving fp32 buffer with the block's half added, written into the next send buffer
 *           16 + b → 24 + 2b; step 0 (4 + b) + (8 + 2b); the casts 12 + 3b; the one cat 4b.
 * Hand-worked in test_llm_stack (torch_ring_attention). */
#include "llm_collective.h"
#include "llm_internal.h"

static double max2(double a, double b) { return a > b ? a : b; }

double llm__torch_ring_bytes(const llm__ctx_t *c, llm__stage_t st, double E)
{
    const double r = c->context_par, b = c->bpe;
    if (c->stack == LLM_STACK_MEGATRON || r < 2 || (st != LLM__FW && st != LLM__AGRAD))
        return 0;
    const double later = r - 1;
    if (st == LLM__FW) {
        const double calls = later * 2 * b;
        if (c->compile)
            return E * (calls + later * (8 + b) + 2 * (4 + b) + 4 * b);
        return E * (calls + later * (36 + 5 * b) + 2 * (4 + b));
    }
    const double calls = later * 4 * b, casts = 12 + 3 * b;
    if (c->compile)
        return E * (calls + later * (24 + 2 * b) + (4 + b) + (8 + 2 * b) + casts + 4 * b);
    return E * (calls + later * (48 + 6 * b) + (52 + 3 * b) + casts);
}

double llm__torch_ring_exposed(const llm_system_t *s, const llm_execution_t *e, double kv,
                               double attn_fw, double attn_bw, double reruns)
{
    const double c = (double)llm_context_par(e);
    if (c < 2)
        return 0;
    /* the context-parallel ranks of one tensor-parallel rank are tensor_par processors apart */
    const llm_group_t ring = {c, (double)e->tensor_par, e->context_par_net};
    const llm_group_t pair = {2, (double)e->tensor_par, e->context_par_net};
    const double ag = llm_collective_time(s, LLM_COLL_ALL_GATHER, c * kv, &ring);
    double fw = max2(0, ag - attn_fw / c);
    if (!e->training)
        return fw;
    const double dkv = llm_collective_time(s, LLM_COLL_P2P, kv * 4 / llm_datatype_bytes(e->datatype),
                                           &pair);
    const double bw = max2(0, ag - attn_bw / c) + (c - 1) * max2(0, dkv - attn_bw / c) + dkv;
    return fw * (1 + reruns) + bw;
}

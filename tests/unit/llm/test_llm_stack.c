/* test_llm_stack.c — the software stack's terms (core/llm/llm_stack.c, doc/stacks.md), each on a
 * small case worked by hand in the comments: the clock a power-capped GPU sustains, and what each
 * stack refuses. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "llm_codec.h"
#include "llm_collective.h"
#include "llm_internal.h"
#include "llm_test_util.h"

/* The H100 SXM's 700 W board capped at 500 W: idle P0 = 0.105·700 = 73.5 W (bench/gpu measured
 * 73.7 W), and the power above it falls in proportion to the clock, so the clock keeps
 * (500 − 73.5)/(700 − 73.5) = 426.5/626.5 = 0.68077. At or above the board power nothing
 * changes; at the idle power nothing runs. The A100's 400 W at 300 W: P0 = 42 W,
 * (300 − 42)/(400 − 42) = 258/358 = 0.72067. */
static void power_capped_clock(void **state)
{
    (void)state;
    assert_float_equal(llm_power_capped_clock(700, 500), 0.68077, 5e-6);
    assert_float_equal(llm_power_capped_clock(400, 300), 0.72067, 5e-6);
    assert_float_equal(llm_power_capped_clock(700, 700), 1.0, 0);
    assert_float_equal(llm_power_capped_clock(700, 900), 1.0, 0);
    assert_float_equal(llm_power_capped_clock(700, 73.5), 0.0, 0);
}

/* What each stack refuses, with the field a user would change. */
static void stack_refusals(void **state)
{
    (void)state;
    const fathom_model_t m = tiny_model();
    llm_system_t s = unit_system(100);
    fathom_error_t err;
    llm_result_t r;
    static const struct {
        llm_stack_t stack;
        bool compile, async_tp;
        int64_t tp;
        llm_selective_ac_t sac;
        const char *field;
    } cases[] = {
        {LLM_STACK_MEGATRON, true, false, 1, LLM_SAC_NONE, "execution.compile"},
        {LLM_STACK_MEGATRON, false, true, 2, LLM_SAC_NONE, "execution.async_tp"},
        {LLM_STACK_MEGATRON, false, false, 1, LLM_SAC_OP, "execution.selective_ac"},
        {LLM_STACK_TORCHTITAN, false, true, 2, LLM_SAC_NONE, "execution.async_tp"},
        {LLM_STACK_TORCHTITAN, true, true, 1, LLM_SAC_NONE, "execution.async_tp"},
        {LLM_STACK_FSDP, false, false, 2, LLM_SAC_NONE, "execution.tensor_par"},
        {(llm_stack_t)7, false, false, 1, LLM_SAC_NONE, "execution.stack"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        llm_execution_t e = test_layout(cases[i].tp, 1, 1);
        e.stack = cases[i].stack;
        e.compile = cases[i].compile;
        e.async_tp = cases[i].async_tp;
        e.selective_ac = cases[i].sac;
        assert_int_equal(llm_estimate(&m, &s, &e, &r, &err), -1);
        assert_string_equal(err.field, cases[i].field);
    }
    llm_execution_t e = test_layout(2, 1, 1);
    e.stack = LLM_STACK_TORCHTITAN;
    e.compile = e.async_tp = true;
    if (llm_estimate(&m, &s, &e, &r, &err))
        fail_msg("%s: %s", err.field, err.message);
    /* what torchtitan's activation checkpointing and CPU offload do not do (config/
     * job_config.py), each accepted under fsdp (Composer's module targets and activation
     * offload); a torchtitan layout's step between none and whole blocks is per-op */
    for (int k = 0; k < 3; k++) {
        for (int stack = LLM_STACK_TORCHTITAN; stack <= LLM_STACK_FSDP; stack++) {
            e = test_layout(1, 1, 1);
            e.stack = (llm_stack_t)stack;
            e.recompute_modules = k == 0 ? LLM_RECOMPUTE_LAYERNORM : 0;
            e.activation_recompute = k == 1 ? LLM_RECOMPUTE_ATTN_ONLY : LLM_RECOMPUTE_NONE;
            e.activations_offload = k == 2;
            const int rc = llm_estimate(&m, &s, &e, &r, &err);
            if (stack == LLM_STACK_FSDP) { /* the tiny model's 2 blocks are too few to offload */
                assert_true(rc == 0 || (k == 2 && strstr(err.message, "3 blocks")));
                continue;
            }
            assert_int_equal(rc, -1);
            assert_string_equal(err.field, k == 0   ? "execution.recompute_modules"
                                           : k == 1 ? "execution.activation_recompute"
                                                    : "execution.activations_offload");
        }
    }
    unsigned sets[LLM_RECOMPUTE_MODULE_SETS];
    e = test_layout(1, 1, 1);
    e.stack = LLM_STACK_TORCHTITAN;
    assert_int_equal(llm_recompute_module_ladder(&m, &e, sets), 0);
    assert_true(llm_selective_op_applies(&e));
    e.selective_ac = LLM_SAC_OP;
    assert_false(llm_selective_op_applies(&e));
    e.stack = LLM_STACK_FSDP;
    e.selective_ac = LLM_SAC_NONE;
    assert_true(llm_recompute_module_ladder(&m, &e, sets) > 0);
    assert_true(llm_selective_op_applies(&e)); /* fsdp has both: the faster is taken */
    e.stack = LLM_STACK_MEGATRON;
    assert_false(llm_selective_op_applies(&e));
}

/* Host launch: with 1 s a kernel the host dwarfs the tiny block's GPU work, so the exposed host
 * time is the kernels' count in seconds less microseconds of GPU work. The tiny model (2 blocks,
 * grouped-query attention: 8 heads, 2 key/value heads), batch 2 of microbatch 1 on one GPU:
 * 2 blocks × 2 microbatches. Per block (llm_host.c): Megatron 11 forward + 20 backward = 31,
 * so 4 × 31 = 124 s; torchtitan eager 35 + 60 = 95 → 380 s; compiled 14 + 28 = 42 → 168 s;
 * eager with full recompute reruns the forward in backward: 35 + 60 + 35 = 130 → 520 s. Without
 * host_launch_s there is no host side. */
static void host_launch(void **state)
{
    (void)state;
    const fathom_model_t m = tiny_model();
    llm_system_t s = unit_system(100);
    static const struct {
        llm_stack_t stack;
        bool compile;
        llm_recompute_t recompute;
        double seconds;
    } cases[] = {
        {LLM_STACK_MEGATRON, false, LLM_RECOMPUTE_NONE, 124},
        {LLM_STACK_TORCHTITAN, false, LLM_RECOMPUTE_NONE, 380},
        {LLM_STACK_TORCHTITAN, true, LLM_RECOMPUTE_NONE, 168},
        {LLM_STACK_TORCHTITAN, false, LLM_RECOMPUTE_FULL, 520},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        llm_execution_t e = test_layout(1, 1, 1);
        e.attention_kernel = LLM_ATTN_KERNEL_FUSED;
        e.stack = cases[i].stack;
        e.compile = cases[i].compile;
        e.activation_recompute = cases[i].recompute;
        llm_result_t r;
        fathom_error_t err;
        s.host_launch_s = 0;
        if (llm_estimate(&m, &s, &e, &r, &err))
            fail_msg("%s: %s", err.field, err.message);
        assert_float_equal(r.extra.host_exposed, 0, 0);
        const double without = r.stats.total_time;
        s.host_launch_s = 1;
        if (llm_estimate(&m, &s, &e, &r, &err))
            fail_msg("%s: %s", err.field, err.message);
        assert_float_equal(r.extra.host_exposed, cases[i].seconds, 1e-3);
        assert_float_equal(r.stats.total_time - without, r.extra.host_exposed, 1e-9);
    }
}

/* A two-tier system as the NCCL model reads it: NVLink 400 GB/s at 0.8 (320 GB/s ring bus
 * bandwidth per rank) in nodes of 8, 3 µs a hop; one NIC per GPU at 50 GB/s, 0.9 (45 GB/s), 10 µs
 * a hop, no falloff. */
static llm_system_t two_tier(void)
{
    llm_system_t s = unit_system(100);
    s.collectives = LLM_COLLECTIVES_NCCL;
    s.num_networks = 2;
    s.networks[0].bandwidth_gbps = 400;
    s.networks[0].efficiency = 0.8;
    s.networks[0].size = 8;
    s.networks[0].latency_s = 3e-6;
    s.networks[1] = s.networks[0];
    s.networks[1].bandwidth_gbps = 50;
    s.networks[1].efficiency = 0.9;
    s.networks[1].size = 65536;
    s.networks[1].latency_s = 10e-6;
    return s;
}

/* Ring all-gather of S = 1.6 GB over 16 ranks on two nodes of 8 (stride 1: n = 8 per node):
 * the ring crosses each node boundary on 8 NICs, busbw = min(320, 8·45 = 360) = 320 GB/s;
 * S·15/16 = 1.5 GB → 1.5e9 / 320e9 = 4.6875 ms. Latency (Simple): 8.4 µs base, 15 steps of which
 * 1 crosses nodes: 8.4 + 14·3 + 1·10 = 60.4 µs → 4.7479 ms. (LL128: 0.92 of the bandwidth,
 * 5.095 ms + 44.6 µs; LL half of it: slower.) The same ranks one per node (stride 8: a data-parallel
 * group beside tensor parallelism 8): busbw = min(320, 1·45) = 45 GB/s, 1.5e9/45e9 = 33.3333 ms,
 * 15 steps all between nodes: 8.4 + 15·10 = 158.4 µs → 33.4917 ms; with a falloff of 0.05 per
 * doubling of the 16 nodes, 45/(1 + 0.05·4) = 37.5 GB/s → 40 ms + 158.4 µs = 40.1584 ms.
 * Calculon's model for the same call is its Network.time: 10 µs + 1.6e9/(45e9) = 35.5656 ms. */
static void two_node_ring_all_gather(void **state)
{
    (void)state;
    llm_system_t s = two_tier();
    const llm_group_t packed = {16, 1, 1}, spread = {16, 8, 1};
    assert_float_equal(llm_collective_busbw(&s, &packed), 320e9, 1);
    assert_float_equal(llm_collective_time(&s, LLM_COLL_ALL_GATHER, 1.6e9, &packed), 4.7479e-3,
                       1e-7);
    assert_float_equal(llm_collective_time(&s, LLM_COLL_REDUCE_SCATTER, 1.6e9, &packed),
                       4.7479e-3, 1e-7);
    assert_float_equal(llm_collective_time(&s, LLM_COLL_ALL_GATHER, 1.6e9, &spread), 33.4917e-3,
                       1e-7);
    s.networks[1].scale_falloff = 0.05;
    assert_float_equal(llm_collective_time(&s, LLM_COLL_ALL_GATHER, 1.6e9, &spread), 40.1584e-3,
                       1e-7);
    s.collectives = LLM_COLLECTIVES_CALCULON;
    s.networks[1].ops[LLM_OP_ALL_GATHER].scalar = 1;
    assert_float_equal(llm_collective_time(&s, LLM_COLL_ALL_GATHER, 1.6e9, &spread),
                       10e-6 + 1.6e9 / 45e9, 1e-9);
}

/* Groups beside tensor parallelism, as NeMo's data-parallel groups sit: every node runs 8/n such
 * groups at once, each on the NICs of its own n members (one rail each), never the node's 8.
 * Data parallelism 4 beside TP 4 (stride 4) on two nodes of 8: 2 members a node, 2 NICs, busbw
 * min(320, 2·45) = 90 GB/s; all-gather of S = 1.6 GB: S·3/4 = 1.2e9 / 90e9 = 13.3333 ms, latency
 * 8.4 µs + 2 NVLink steps·3 + 1 crossing·10 = 24.4 µs → 13.3577 ms. Data parallelism 2 beside
 * TP 8 (stride 8): one member a node, one NIC, 45 GB/s; S/2 = 0.8e9 / 45e9 = 17.7778 ms + 8.4 +
 * 10 µs → 17.7962 ms. */
static void rail_groups(void **state)
{
    (void)state;
    llm_system_t s = two_tier();
    const llm_group_t two_a_node = {4, 4, 1}, one_a_node = {2, 8, 1};
    assert_float_equal(llm_collective_busbw(&s, &two_a_node), 90e9, 1);
    assert_float_equal(llm_collective_busbw(&s, &one_a_node), 45e9, 1);
    assert_float_equal(llm_collective_time(&s, LLM_COLL_ALL_GATHER, 1.6e9, &two_a_node),
                       13.3577e-3, 1e-7);
    assert_float_equal(llm_collective_time(&s, LLM_COLL_ALL_GATHER, 1.6e9, &one_a_node),
                       17.7962e-3, 1e-7);
}

/* A tier's link class: named, or by position when absent (tier 0 NVLink, the last tier the
 * network, any between PCIe; one tier alone is NVLink). Its hops in a ring: an all-gather of
 * S = 8 kB over the 8 ranks of one two_tier node (busbw 320 GB/s, S·7/8 = 7,000 bytes, 7 steps):
 *   NVLink: LL 6.6 + 7·0.6 = 10.8 µs + 7000/160e9 = 0.04375 µs → 10.84375 µs (LL128 14 + 7·1.9
 *     = 27.3 µs, Simple 8.4 + 7·3 = 29.4 µs: slower);
 *   PCIe: LL 6.6 + 7·1.0 = 13.6 µs + 0.04375 → 13.64375 µs (LL128 14 + 7·2.5 = 31.5 µs). */
static void link_classes(void **state)
{
    (void)state;
    llm_system_t s = two_tier();
    s.networks[2] = s.networks[1];
    s.num_networks = 3;
    assert_int_equal(llm_network_link(&s, 0), LLM_LINK_NVLINK);
    assert_int_equal(llm_network_link(&s, 1), LLM_LINK_PCIE);
    assert_int_equal(llm_network_link(&s, 2), LLM_LINK_NETWORK);
    s.num_networks = 1;
    assert_int_equal(llm_network_link(&s, 0), LLM_LINK_NVLINK);
    s.networks[0].link = LLM_LINK_NETWORK;
    assert_int_equal(llm_network_link(&s, 0), LLM_LINK_NETWORK);

    s = two_tier();
    const llm_group_t node = {8, 1, 0};
    assert_float_equal(llm_collective_time(&s, LLM_COLL_ALL_GATHER, 8e3, &node), 10.84375e-6,
                       1e-12);
    s.networks[0].link = LLM_LINK_PCIE;
    assert_int_equal(llm_network_link(&s, 0), LLM_LINK_PCIE);
    assert_float_equal(llm_collective_time(&s, LLM_COLL_ALL_GATHER, 8e3, &node), 13.64375e-6,
                       1e-12);
}

/* Two nodes of 8 H100s with eight 200 Gb/s NICs each (GCP A3 Mega), all-reduce of 8 GiB
 * (8,589,934,592 bytes): NVLink ring 450·0.8 = 360 GB/s, NVLS 450·1.07 = 481.5 GB/s, NICs
 * 25·0.92 = 23 GB/s. Ring: busbw min(360, 8·23 = 184) → 2S·15/16/184e9 = 87.5 ms. Tree over the
 * two nodes: inside a node 2S·7/8 through NVLS, 1.5032e10/481.5e9 = 31.22 ms; across, one
 * partner, S per direction over 8 NICs, 8.5899e9/184e9 = 46.684 ms; latency 8.4 + 2·(7·3.4 + 14)
 * = 84.0 µs → 46.768 ms: algbw 8.5899e9/0.046768 = 183.67 GB/s, busbw ·15/8 = 344.4 GB/s. The
 * measured table (lessizzmore/create-a3mega-ztan-fork, nccl-tests all_reduce_perf at 8 GiB) reads
 * 338.82 GB/s: within 2 %. */
static void two_node_tree_all_reduce(void **state)
{
    (void)state;
    llm_system_t s = two_tier();
    s.networks[0].bandwidth_gbps = 450;
    s.networks[0].efficiency = 0.8;
    s.networks[0].nvls_efficiency = 1.07;
    s.networks[0].latency_s = 3.4e-6;
    s.networks[1].bandwidth_gbps = 25;
    s.networks[1].efficiency = 0.92;
    s.networks[1].latency_s = 14e-6;
    const llm_group_t g = {16, 1, 1};
    const double bytes = 8589934592.0;
    const double t = llm_collective_time(&s, LLM_COLL_ALL_REDUCE, bytes, &g);
    assert_float_equal(t, 46.768e-3, 2e-6);
    const double busbw = bytes / t * 2 * 15 / 16;
    assert_float_equal(busbw, 344.4e9, 0.2e9);
    assert_true(fabs(busbw / 338.82e9 - 1) < 0.02);
}

/* The shipped presets whose first tier no switch reduces in (the A100's NVSwitch, the H100 PCIe
 * and NVL cards' 2-card NVLink bridge): NCCL's ring, whose reduce-scatter and all-gather each
 * move (p-1)/p of the buffer per GPU and whose all-reduce is the two in turn, 2(p-1)/p
 * (nccl-tests doc/PERFORMANCE.md's bus-bandwidth factors). a100_sxm tier 0, 300 GB/s at
 * efficiency 0.65 = 195 GB/s, 10 µs: 8e9 bytes among 8, reduce-scatter 10 µs + 7e9/195e9 =
 * 35.907 ms, all-reduce 10 µs + 14e9/195e9 = 71.805 ms. h100_pcie tier 0 (the same bridge
 * figures) among 2: 10 µs + 4e9/195e9 = 20.523 ms, all-reduce 10 µs + 8e9/195e9 = 41.036 ms. */
static void ring_tier_presets(void **state)
{
    (void)state;
    static const struct {
        const char *preset;
        double peers, reduce_scatter_s, all_reduce_s;
    } cases[] = {{"a100_sxm", 8, 35.9074e-3, 71.8049e-3},
                 {"a100_sxm_40g", 8, 35.9074e-3, 71.8049e-3},
                 {"h100_pcie", 2, 20.5228e-3, 41.0356e-3},
                 {"h100_nvl", 2, 20.5228e-3, 41.0356e-3}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fathom_error_t err;
        llm_system_t s;
        json_t *name = json_string(cases[i].preset);
        assert_int_equal(codec_llm_system_decode(name, "system", presets, &s, &err), 0);
        json_decref(name);
        const double rs = llm_net_op_time(&s, 0, LLM_OP_REDUCE_SCATTER, 8e9, cases[i].peers);
        assert_float_equal(rs, cases[i].reduce_scatter_s, 1e-7);
        assert_float_equal(llm_net_op_time(&s, 0, LLM_OP_ALL_GATHER, 8e9, cases[i].peers), rs,
                           1e-12);
        assert_float_equal(llm_net_op_time(&s, 0, LLM_OP_ALL_REDUCE, 8e9, cases[i].peers),
                           cases[i].all_reduce_s, 1e-7);
    }
}

/* The eager RMSNorm of torchtitan's norms.py, per element of a bfloat16 tensor (llm_stack.c):
 * x.float() reads 2 and writes 4 bytes, pow(2) 4 + 4, mean reads 4, x·rsqrt 4 + 4, type_as 4 +
 * 2, ·weight 2 + 2: 6 + 8 + 4 + 8 + 6 + 4 = 36 forward. Backward: the weight product 2 + 2, the
 * weight's gradient reads 2 + 2, type_as 2 + 4, the rsqrt chain g·r 4 + 4, g·x and its sum 4 + 4 +
 * 4, x·coefficient 4 + 4, pow's 4 + 4, the two gradients summed 4 + 4 + 4, float() 4 + 2 =
 * 4 + 4 + 6 + 8 + 12 + 8 + 8 + 12 + 6 = 68. Compiled, one kernel: 2 + 2 = 4 forward, dy and x in,
 * dx out, 6 backward. A 1,000-element norm: 36,000 / 68,000 eager, 4,000 / 6,000 compiled; the
 * weight-gradient stage moves nothing of its own (its reads are the backward's). Megatron keeps
 * the layer table's bytes. On a memory of 1,000 GB/s at efficiency 1, the eager forward of a
 * 1e9-element norm takes 36e9 / 1e12 = 36 ms. */
static void eager_rmsnorm_pass(void **state)
{
    (void)state;
    llm__layer_t norm;
    memset(&norm, 0, sizeof norm);
    norm.kind = LLM__LAYER_NORM;
    norm.inputs_size = norm.output_size = 1000;
    llm__ctx_t c;
    memset(&c, 0, sizeof c);
    c.bpe = 2;
    c.stack = LLM_STACK_TORCHTITAN;
    double bytes;
    assert_true(llm__stack_bytes(&norm, &c, LLM__FW, &bytes));
    assert_float_equal(bytes, 36000, 0);
    assert_true(llm__stack_bytes(&norm, &c, LLM__AGRAD, &bytes));
    assert_float_equal(bytes, 68000, 0);
    assert_true(llm__stack_bytes(&norm, &c, LLM__WGRAD, &bytes));
    assert_float_equal(bytes, 0, 0);
    c.compile = true;
    assert_true(llm__stack_bytes(&norm, &c, LLM__FW, &bytes));
    assert_float_equal(bytes, 4000, 0);
    assert_true(llm__stack_bytes(&norm, &c, LLM__AGRAD, &bytes));
    assert_float_equal(bytes, 6000, 0);
    c.stack = LLM_STACK_MEGATRON;
    assert_false(llm__stack_bytes(&norm, &c, LLM__FW, &bytes));
    /* the time: through the layer cost on a 1,000 GB/s memory */
    llm_system_t s = unit_system(100);
    s.mem1.gbps = 1000;
    c.sys = &s;
    c.mem1_bw = 1e12;
    c.stack = LLM_STACK_TORCHTITAN;
    c.compile = false;
    c.vector_flops = 1e30; /* its arithmetic negligible */
    c.vector_curve = &s.vector.rate[LLM_DT_BFLOAT16].gflops_efficiency;
    norm.inputs_size = norm.output_size = 1e9;
    llm__cost_t k;
    llm__layer_cost(&norm, &c, LLM__FW, &k);
    assert_float_equal(k.mem, 36e9, 0);
    assert_float_equal(k.mem_time, 0.036, 1e-12);
}

/* A named kernel's speed (llm_attention.c) from a table: causal forward 0.3 at 1,024 tokens and
 * 0.5 at 4,096. At 2,048, log-linear: t = (ln 2048 − ln 1024)/(ln 4096 − ln 1024) = 1/2 → 0.4;
 * the layer counts (T+1)/(2T) of the square for T = 2048/128 = 16 tiles where the benchmark
 * counted half, so its FLOPs run at 0.4·17/16 = 0.425 of the peak. Below the first point the
 * first value (0.3·(8+1)/8 = 0.3375 at 1,024 → at 512 tokens, T = 4: 0.3·5/4 = 0.375); above the
 * last the last. Head size 96 with head_dim_64 0.8: 0.8 + (96 − 64)/64·0.2 = 0.9 of it. A kernel
 * the system has no table for, and "fused", run at attention_efficiency. */
static void attention_kernel_speed(void **state)
{
    (void)state;
    llm_system_t s = unit_system(100);
    s.attention_efficiency = 0.6;
    llm_attn_kernel_table_t *t = &s.attention_kernels[LLM_ATTN_KERNEL_FLASH3];
    t->present = true;
    t->head_dim_64 = 0.8;
    llm_attn_curve_t curve = {2, {1024, 4096}, {0.3, 0.5}};
    t->fwd = t->bwd = t->fwd_causal = t->bwd_causal = curve;
    llm__ctx_t c;
    memset(&c, 0, sizeof c);
    c.sys = &s;
    c.matrix_flops = 1e15;
    c.attention_flops = 0.6e15;
    c.attn_kernel = LLM_ATTN_KERNEL_FLASH3;
    llm__layer_t l;
    memset(&l, 0, sizeof l);
    l.kind = LLM__FUSED_ATTENTION;
    l.attn_causal = true;
    l.attn_head_dim = 128;
    l.attn_seq = 2048;
    assert_float_equal(llm__attention_throughput(&l, &c, LLM__FW), 0.425e15, 1e3);
    l.attn_seq = 512;
    assert_float_equal(llm__attention_throughput(&l, &c, LLM__AGRAD), 0.375e15, 1e3);
    l.attn_seq = 65536;
    assert_float_equal(llm__attention_throughput(&l, &c, LLM__FW), 0.5 * 513.0 / 512 * 1e15, 1e3);
    l.attn_seq = 2048;
    l.attn_head_dim = 96;
    assert_float_equal(llm__attention_throughput(&l, &c, LLM__FW), 0.9 * 0.425e15, 1e3);
    l.attn_causal = false;
    l.attn_head_dim = 128;
    assert_float_equal(llm__attention_throughput(&l, &c, LLM__FW), 0.4e15, 1e3);
    c.attn_kernel = LLM_ATTN_KERNEL_CUDNN; /* no table */
    assert_float_equal(llm__attention_throughput(&l, &c, LLM__FW), 0.6e15, 0);
}

/* torchtitan's per-op checkpointing on the tiny model's block (GQA, gated MLP, no TP): in the
 * table's order the matmuls are wq, wk, wv, wo, w1, w3, w2 (PyTorch's two up GEMMs), and the 2nd,
 * 4th and 6th rerun; the attention kernel does not; every norm, RoPE, SwiGLU and add does. */
static void op_sac_reruns(void **state)
{
    (void)state;
    const fathom_model_t m = tiny_model();
    llm_system_t s = unit_system(100);
    llm_execution_t e = test_layout(1, 1, 1);
    e.stack = LLM_STACK_TORCHTITAN;
    e.attention_kernel = LLM_ATTN_KERNEL_SDPA;
    e.selective_ac = LLM_SAC_OP;
    llm__sizes_t z = {16, 16 * 64, 16 * 64};
    llm__block_t b;
    llm__build_block(&m, &s, &e, &z, &b);
    int mm = 0, rerun_mm = 0;
    for (int i = 0; i < b.num_layers; i++) {
        const llm__layer_t *l = &b.layers[i];
        if (l->kind == LLM__LINEAR) {
            mm++;
            assert_int_equal(l->needs_recompute, mm % 2 == 0);
            rerun_mm += l->needs_recompute;
        } else if (l->kind == LLM__FUSED_ATTENTION) {
            assert_false(l->needs_recompute);
        } else if (l->kind == LLM__LAYER_NORM || l->kind == LLM__ROPE ||
                   l->kind == LLM__GATED_ACT || l->kind == LLM__ELEMENTWISE) {
            assert_true(l->needs_recompute);
        }
    }
    assert_int_equal(mm, 7);
    assert_int_equal(rerun_mm, 3);
    /* under async TP at TP 2 the gathers are fused into Q/K/V's and gate/up's matmuls: the
     * policy saves neither gather's output, so both are redone with the rerun; the reductions
     * after o and down are saved (not redone) */
    e.tensor_par = 2;
    e.num_procs = 2;
    e.compile = true;
    e.async_tp = true;
    e.tensor_par_comm_type = LLM_TP_COMM_RS_AG;
    llm__sizes_t zt = {16, 16 * 64, 16 * 64 / 2};
    llm__build_block(&m, &s, &e, &zt, &b);
    int redone = 0, kept = 0;
    for (int i = 0; i < b.num_layers; i++) {
        const llm__layer_t *l = &b.layers[i];
        if (l->kind != LLM__LINEAR_OVERLAPPED)
            continue;
        assert_int_equal(l->needs_recomm, !l->conjugate);
        redone += l->needs_recomm;
        kept += !l->needs_recomm;
    }
    assert_int_equal(redone, 2);
    assert_int_equal(kept, 2);
}

/* torchao's casts of a Float8 linear (llm_stack.c, fp8_linear_bytes) worked by hand on a linear
 * of 1,000 input elements, 500 output elements and 100 weights in bf16 (b = 2). A cast writes
 * its FP8 copy: compiled 2b + 1 + 1 = 6 bytes an element, eager 4b + 17 + 1 = 26; a GEMM reads
 * each FP8 operand (1) and writes its output (b).
 *   tensorwise compiled:  forward 1,000·(6 + 1) + 100·(6 + 1) + 500·2 = 8,700;
 *                         input grad 500·7 + 100·1 (the forward's weight copy) + 1,000·2 = 5,600;
 *                         weight grad 1,000·1 + 500·1 + 100·2 = 1,700 (both copies reused);
 *                         the second linear of an input group (K after Q): 1,000·1 + 700 + 1,000
 *                         = 2,700 (its input's cast merged with Q's)
 *   tensorwise eager:     forward 1,000·27 + 100·27 + 1,000 = 30,700, shared or not;
 *                         input grad 500·27 + 100·27 + 2,000 = 18,200;
 *                         weight grad 1,000·27 + 500·27 + 200 = 40,700
 *   tensorwise, TP 4:     the module's input cast once on its quarter before the FP8 gather:
 *                         forward 1,000·(6/4 + 1) + 700 + 1,000 = 4,200, the group's second
 *                         2,700; weight grad 1,000 + 500 + 200 = 1,700
 *   rowwise compiled:     forward 8,700 (as tensorwise);
 *                         input grad 500·7 + 100·7 + 1,000·(2 + 4) = 10,200 (the weight cast
 *                         again along its other axis, the output rescaled: 2b more);
 *                         weight grad 1,000·7 + 500·7 + 100·(2 + 4) = 11,100; the group's
 *                         second 1,000·1 + 3,500 + 600 = 5,100
 * And rowwise's forward GEMM runs at LLM_FP8_ROWWISE_GEMM of the FP8 rate, its backward GEMMs at
 * the FP8 rate: the forward of equal FLOPs takes 1/0.95 of the input gradient's time. */
static void fp8_linear_casts(void **state)
{
    (void)state;
    llm__layer_t l;
    memset(&l, 0, sizeof l);
    l.kind = LLM__LINEAR;
    l.fp8 = true;
    l.inputs_size = l.activation_space = 1000;
    l.output_size = l.activation_grads = 500;
    l.weight_space = l.weight_grads = 100;
    llm__ctx_t c;
    memset(&c, 0, sizeof c);
    c.bpe = 2;
    c.stack = LLM_STACK_TORCHTITAN;
    c.fp8_recipe = LLM_FP8_TENSORWISE;
    c.compile = true;
    double bytes;
#define BYTES(stage, expected)                                                                   \
    do {                                                                                         \
        assert_true(llm__stack_bytes(&l, &c, stage, &bytes));                                    \
        assert_float_equal(bytes, expected, 1e-9);                                               \
    } while (0)
    BYTES(LLM__FW, 8700);
    BYTES(LLM__AGRAD, 5600);
    BYTES(LLM__WGRAD, 1700);
    l.input_shared = true;
    BYTES(LLM__FW, 2700);
    c.compile = false;
    BYTES(LLM__FW, 30700);
    l.input_shared = false;
    BYTES(LLM__FW, 30700);
    BYTES(LLM__AGRAD, 18200);
    BYTES(LLM__WGRAD, 40700);
    c.compile = true;
    c.fp8_prepared_shards = 4;
    BYTES(LLM__FW, 4200);
    BYTES(LLM__WGRAD, 1700);
    l.input_shared = true;
    BYTES(LLM__FW, 2700);
    c.fp8_prepared_shards = 0;
    l.input_shared = false;
    c.fp8_recipe = LLM_FP8_ROWWISE;
    BYTES(LLM__FW, 8700);
    BYTES(LLM__AGRAD, 10200);
    BYTES(LLM__WGRAD, 11100);
    l.input_shared = true;
    BYTES(LLM__WGRAD, 5100);
#undef BYTES
    /* the GEMMs' rates */
    llm_system_t s = unit_system(100);
    c.sys = &s;
    c.mem1_bw = 1e30;
    c.fp8_matrix_flops = 2e12;
    c.fp8_matrix_curve = &s.matrix.rate[LLM_DT_FLOAT8].gflops_efficiency;
    c.fp8_fw_gemm = LLM_FP8_ROWWISE_GEMM;
    l.fw_flops = l.agrad_flops = 1e12;
    llm__cost_t fw, ag;
    llm__layer_cost(&l, &c, LLM__FW, &fw);
    llm__layer_cost(&l, &c, LLM__AGRAD, &ag);
    assert_float_equal(ag.flops_time, 0.5, 1e-12);
    assert_float_equal(fw.flops_time, 0.5 / 0.95, 1e-12);
}

/* Async TP with rowwise FP8 (llm_tp_gather_overlap): torch's micro-pipelining fuses only the
 * matmul → reduce-scatter of a rowwise-scaled linear, so on the tiny model at TP 2 the block
 * keeps two plain all-gathers (before Q/K/V and before gate/up) and two overlapped reductions
 * (o and down); tensorwise overlaps all four (two gathers, two reductions) and has no plain
 * TP collective. */
static void rowwise_async_tp_gathers(void **state)
{
    (void)state;
    const fathom_model_t m = tiny_model();
    llm_system_t s = unit_system(100);
    llm_execution_t e = test_layout(2, 1, 1);
    e.stack = LLM_STACK_TORCHTITAN;
    e.compile = true;
    e.async_tp = true;
    e.fp8 = true;
    e.tensor_par_comm_type = LLM_TP_COMM_RS_AG;
    e.attention_kernel = LLM_ATTN_KERNEL_SDPA;
    llm__sizes_t z = {16, 16 * 64, 16 * 64 / 2};
    for (int rowwise = 0; rowwise < 2; rowwise++) {
        e.fp8_recipe = rowwise ? LLM_FP8_ROWWISE : LLM_FP8_TENSORWISE;
        llm__block_t b;
        llm__build_block(&m, &s, &e, &z, &b);
        int plain_gathers = 0, fused_gathers = 0, fused_reductions = 0;
        for (int i = 0; i < b.num_layers; i++) {
            const llm__layer_t *l = &b.layers[i];
            if (l->kind == LLM__TP_COMM && !l->conjugate)
                plain_gathers++;
            if (l->kind == LLM__LINEAR_OVERLAPPED)
                *(l->conjugate ? &fused_reductions : &fused_gathers) += 1;
        }
        assert_int_equal(plain_gathers, rowwise ? 2 : 0);
        assert_int_equal(fused_gathers, rowwise ? 0 : 2);
        assert_int_equal(fused_reductions, 2);
    }
}

/* Async TP's backward reduce-scatter after Q/K/V (and gate/up) under a PyTorch stack: torch fuses
 * a reduce-scatter only with the single matmul producing its input, and here it follows a sum of
 * input gradients, so it is not hidden. A gathering overlapped layer of 1e9 input elements in
 * bf16 at TP 2 on a 100 GB/s link (efficiency 1, no latency, op scalars 1), its input gradient
 * 1e12 FLOPs on a 1 TFLOP/s matrix engine (1 s; memory negligible): the reduce-scatter moves
 * 2e9 bytes, 2e9 / 100e9 = 20 ms, and adds 1e9·(2 − 1)/2 = 5e8 elements on the 1 TFLOP/s vector
 * engine, 0.5 ms: 20.5 ms. Fused, two tiles of 0.5 s each hide it (exposed 0); unfused, the
 * layer's time stays the 1 s of its GEMMs and all 20.5 ms is exposed. The block of the tiny model
 * at TP 2 under torchtitan's async TP marks both gathering layers; Megatron's ring overlap none. */
static void async_tp_backward_reduce_scatter(void **state)
{
    (void)state;
    llm_system_t s = unit_system(100);
    llm__ctx_t c;
    memset(&c, 0, sizeof c);
    c.sys = &s;
    c.matrix_flops = c.vector_flops = 1e12;
    c.matrix_curve = &s.matrix.rate[LLM_DT_BFLOAT16].gflops_efficiency;
    c.vector_curve = &s.vector.rate[LLM_DT_BFLOAT16].gflops_efficiency;
    c.mem1_bw = 1e15;
    c.bpe = c.gather_bpe = 2;
    c.stack = LLM_STACK_TORCHTITAN;
    llm__layer_t l;
    memset(&l, 0, sizeof l);
    l.kind = LLM__LINEAR_OVERLAPPED;
    l.num_peers = l.num_tiles = 2;
    l.comm_type = LLM_TP_COMM_RS_AG;
    l.overlap = LLM_TP_OVERLAP_RING;
    l.net = &s.networks[0];
    l.inputs_size = l.activation_space = 1e9;
    l.agrad_flops = 1e12;
    llm__cost_t k;
    llm__layer_cost(&l, &c, LLM__AGRAD, &k);
    assert_float_equal(k.time, 1.0, 1e-12);
    assert_float_equal(l.net_exposed_time, 0, 0);
    assert_float_equal(llm__layer_net_time(&l, &c, LLM__AGRAD, true, &k), 0.0205, 1e-12);
    l.bw_comm_unfused = true;
    llm__layer_cost(&l, &c, LLM__AGRAD, &k);
    assert_float_equal(k.time, 1.0, 1e-12);
    assert_float_equal(l.net_exposed_time, 0.0205, 1e-12);

    const fathom_model_t m = tiny_model();
    llm_execution_t e = test_layout(2, 1, 1);
    e.stack = LLM_STACK_TORCHTITAN;
    e.compile = e.async_tp = true;
    e.tensor_par_comm_type = LLM_TP_COMM_RS_AG;
    e.attention_kernel = LLM_ATTN_KERNEL_SDPA;
    llm__sizes_t z = {16, 16 * 64, 16 * 64 / 2};
    for (int megatron = 0; megatron < 2; megatron++) {
        if (megatron) {
            e.stack = LLM_STACK_MEGATRON;
            e.compile = e.async_tp = false;
            e.tensor_par_overlap = LLM_TP_OVERLAP_RING;
        }
        llm__block_t b;
        llm__build_block(&m, &s, &e, &z, &b);
        int unfused = 0, overlapped = 0, sums3 = 0, sums2 = 0;
        for (int i = 0; i < b.num_layers; i++) {
            const llm__layer_t *x = &b.layers[i];
            overlapped += x->kind == LLM__LINEAR_OVERLAPPED;
            unfused += x->bw_comm_unfused;
            if (x->bw_comm_unfused)
                assert_false(x->conjugate);
            if (x->kind == LLM__FORK) {
                sums3 += x->num_users == 3;
                sums2 += x->num_users == 2;
            }
        }
        assert_int_equal(overlapped, 4);
        assert_int_equal(unfused, megatron ? 0 : 2);
        /* PyTorch's three Q/K/V and two gate/up input gradients are summed before the reduction
         * (a fork each, beside the two residual forks every block has); Megatron's fused GEMMs
         * sum them in their own accumulation */
        assert_int_equal(sums3, megatron ? 0 : 1);
        assert_int_equal(sums2, megatron ? 2 : 3);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(power_capped_clock),
        cmocka_unit_test(stack_refusals),
        cmocka_unit_test(host_launch),
        cmocka_unit_test(two_node_ring_all_gather),
        cmocka_unit_test(rail_groups),
        cmocka_unit_test(link_classes),
        cmocka_unit_test(two_node_tree_all_reduce),
        cmocka_unit_test_setup_teardown(ring_tier_presets, load_presets, free_presets),
        cmocka_unit_test(eager_rmsnorm_pass),
        cmocka_unit_test(attention_kernel_speed),
        cmocka_unit_test(op_sac_reruns),
        cmocka_unit_test(fp8_linear_casts),
        cmocka_unit_test(rowwise_async_tp_gathers),
        cmocka_unit_test(async_tp_backward_reduce_scatter),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

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

#include "llm_collective.h"
#include "llm_internal.h"
#include "llm_test_util.h"

/* The H100 SXM's 700 W board capped at 500 W: idle P0 = 0.105·700 = 73.5 W (bench/gpu measured
 * 73.7 W), so the clock keeps ((500 − 73.5)/(700 − 73.5))^(1/3) = (426.5/626.5)^(1/3) =
 * 0.68077^(1/3); ln 0.68077 = −0.38453, /3 = −0.12818, e^−0.12818 = 1 − 0.12818 + 0.00822 −
 * 0.00035 + 0.00001 = 0.87970. At or above the board power nothing changes; at the idle power
 * nothing runs. The A100's 400 W at 300 W: (300 − 42)/(400 − 42) = 0.72067, ln = −0.32758,
 * /3 = −0.10919, e^−0.10919 = 1 − 0.10919 + 0.00596 − 0.00022 + 0.00001 = 0.89656. */
static void power_capped_clock(void **state)
{
    (void)state;
    assert_float_equal(llm_power_capped_clock(700, 500), 0.87970, 5e-5);
    assert_float_equal(llm_power_capped_clock(400, 300), 0.89656, 5e-5);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(power_capped_clock),
        cmocka_unit_test(stack_refusals),
        cmocka_unit_test(host_launch),
        cmocka_unit_test(two_node_ring_all_gather),
        cmocka_unit_test(two_node_tree_all_reduce),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

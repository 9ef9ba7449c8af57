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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(power_capped_clock),
        cmocka_unit_test(stack_refusals),
        cmocka_unit_test(host_launch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

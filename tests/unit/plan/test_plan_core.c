/* test_plan_core.c — core/plan against hand-worked examples: the interruption arithmetic of
 * plan.h worked on paper for the Llama 3 405B cluster, and a Pareto front built to be known. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "plan.h"
#include "test_util.h"

/* Worked by hand:
 *   λ = 419 / (54·24·16384) = 419 / 21,233,664 per GPU-hour; N = 16,384
 *   λN = 419 / 1296 = 0.32330 interruptions per hour
 *   M = 3600 · 1296 / 419 = 4,665,600 / 419 = 11,135.08 s (3.09 h)
 *   C = 1 TB, B = 10 GB/s: δ = 100 s
 *   τ = sqrt(2 · 100 · 11,135.08) = sqrt(2,227,016.7) = 1,492.32 s
 *   w = 100 / 1,492.32 + (746.16 + 600) / 11,135.08 = 0.067010 + 0.120893 = 0.187903
 *     (the same as sqrt(2δ/M) + R/M = 0.134020 + 0.053883)
 *   g = 0.812097; a 30-day ideal run (2,592,000 s) takes 2,592,000 / 0.812097 = 3,191,738 s
 *   (36.94 days) with 3,191,738 / 11,135.08 = 286.64 interruptions. */
static void llama3_cluster(void **state)
{
    (void)state;
    plan_failure_params_t p = {PLAN_DEFAULT_FAILURES_PER_GPU_HOUR, 1e12, 1e10, 600};
    plan_failures_t f;
    fathom_error_t err;
    assert_int_equal(plan_failures(&p, 16384, 30 * 86400.0, &f, &err), 0);
    assert_close(PLAN_DEFAULT_FAILURES_PER_GPU_HOUR, 1.9733e-5, 1e-4);
    assert_close(f.mtbf_s, 11135.08, 1e-6);
    assert_close(f.checkpoint_write_s, 100, 1e-12);
    assert_close(f.checkpoint_interval_s, 1492.32, 1e-5);
    assert_close(f.overhead, 0.187903, 1e-5);
    assert_close(f.goodput, 0.812097, 1e-6);
    assert_close(f.expected_wall_s, 3191738, 1e-6);
    assert_close(f.expected_interruptions, 286.64, 1e-5);
}

/* No failures: no overhead. A hopeless run (δ as long as M): goodput 0, never finishes. */
static void edges(void **state)
{
    (void)state;
    plan_failures_t f;
    fathom_error_t err;
    plan_failure_params_t none = {0, 1e12, 1e10, 600};
    assert_int_equal(plan_failures(&none, 1024, 1000, &f, &err), 0);
    assert_close(f.goodput, 1, 0);
    assert_close(f.expected_wall_s, 1000, 0);
    /* λ = 1 per GPU-hour on 1 GPU: M = 3600 s; δ = 3600 s: w = 3600/τ + τ/7200, τ = 3600·√2
     * = 0.7071 + 0.7071 = 1.41 >= 1 */
    plan_failure_params_t bad = {1, 3600, 1, 0};
    assert_int_equal(plan_failures(&bad, 1, 1000, &f, &err), 0);
    assert_close(f.goodput, 0, 0);
    assert_true(isinf(f.expected_wall_s));
    plan_failure_params_t neg = {-1, 1, 1, 0};
    assert_int_equal(plan_failures(&neg, 1, 1, &f, &err), -1);
    assert_string_equal(err.field, "failures.per_gpu_hour");
}

/* Two systems alike but for price, three counts each: A (cheap) at 8/16/32 GPUs takes
 * 40/20/10 days for 100/110/130 $; B (twice the price) the same days for 200/220/260 $. A
 * dominates B at every count; the front is A's three; a deadline of 15 days only 32 GPUs meet;
 * a budget of 105 $ only 8 GPUs meet. */
static void front_by_construction(void **state)
{
    (void)state;
    plan_choice_t c[] = {{true, 40, 100}, {true, 20, 110}, {true, 10, 130},
                         {true, 40, 200}, {true, 20, 220}, {true, 10, 260},
                         {false, 1, 1}};
    bool front[7];
    plan_pareto(c, 7, front);
    bool want[7] = {true, true, true, false, false, false, false};
    for (int i = 0; i < 7; i++)
        assert_int_equal(front[i], want[i]);
    assert_int_equal(plan_cheapest_within(c, 7, 15), 2);
    assert_int_equal(plan_fastest_within(c, 7, 105), 0);
    assert_int_equal(plan_cheapest_within(c, 7, 0), 0); /* no deadline: cheapest overall */
    assert_int_equal(plan_fastest_within(c, 7, 0), 2);  /* no budget: fastest overall */
    assert_int_equal(plan_cheapest_within(c, 7, 5), -1);
    assert_int_equal(plan_fastest_within(c, 7, 50), -1);
    /* equal candidates are both on the front */
    plan_choice_t tie[] = {{true, 1, 1}, {true, 1, 1}};
    bool tf[2];
    plan_pareto(tie, 2, tf);
    assert_true(tf[0] && tf[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(llama3_cluster),
        cmocka_unit_test(edges),
        cmocka_unit_test(front_by_construction),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_plan_core.c — core/plan against hand-worked examples: the interruption arithmetic of
 * plan.h worked on paper for the Llama 3 405B cluster, and a Pareto front built to be known. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

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

/* Every loss on the Llama 3 cluster above, worked by hand (δ = 100 s, R = 600 s, Q = 300 s):
 *   M = 11,135.08 s and τ = 1,492.32 s as above (Young's τ does not depend on R)
 *   checkpoint writes δ/τ = 100 / 1,492.32 = 0.067010
 *   lost work (τ/2)/M = 746.16 / 11,135.08 = 0.067010 (the same: both are sqrt(δ/2M))
 *   restarts (R + Q)/M = 900 / 11,135.08 = 0.080826
 *   planned: λp = 47 / (54·24·16384), Mp = 3600·1296/47 = 99,268.09 s; R/Mp = 0.0060442
 *   interrupted = 1 − 0.067010 − 0.067010 − 0.080826 − 0.006044 = 0.779111
 *   e = 10/3000 = 0.0033333, s = 0.015, d = 0.01:
 *   g = 0.779111 · 0.996667 · 0.985 · 0.99 = 0.757217
 *   a 30-day ideal run: 2,592,000 / 0.757217 = 3,423,060 s, 3,423,060 / 11,135.08 = 307.41
 *   unexpected and 3,423,060 / 99,268.09 = 34.48 planned interruptions. */
static void losses_worked(void **state)
{
    (void)state;
    plan_loss_params_t p = {{PLAN_DEFAULT_FAILURES_PER_GPU_HOUR, 1e12, 1e10, 600},
                            300,
                            PLAN_DEFAULT_PLANNED_PER_GPU_HOUR,
                            PLAN_DEFAULT_EVAL_FRACTION,
                            PLAN_DEFAULT_SLOW_FRACTION,
                            0.01};
    plan_losses_t l;
    fathom_error_t err;
    assert_int_equal(plan_losses(&p, 16384, 30 * 86400.0, &l, &err), 0);
    assert_close(l.failures.checkpoint_interval_s, 1492.32, 1e-5);
    assert_close(l.checkpoint_writes, 0.067010, 1e-4);
    assert_close(l.lost_work, 0.067010, 1e-4);
    assert_close(l.restarts, 0.080826, 1e-4);
    assert_close(l.planned_restarts, 0.0060442, 1e-4);
    assert_close(l.evaluation, 0.0033333, 1e-4);
    assert_close(l.goodput, 0.757217, 1e-5);
    assert_close(l.expected_wall_s, 3423060, 1e-5);
    assert_close(l.expected_interruptions, 307.41, 1e-4);
    assert_close(l.expected_planned, 34.48, 1e-3);
    /* counted over a longer wall time, 4e6 s: W/M = 4e6 / (3600 / (λ·16,384)) and
     * W/Mp = 4e6 / (3600 / (λp·16,384)), λ = 419 and λp = 47 per 54·24·16,384 GPU-hours:
     * 4e6 · 419 / (54·24·3600) = 359.23 and 4e6 · 47 / (54·24·3600) = 40.295 */
    plan_losses_count_over(&l, 4e6);
    assert_close(l.expected_interruptions, 359.23, 1e-4);
    assert_close(l.expected_planned, 40.295, 1e-4);
    plan_losses_count_over(&l, INFINITY);
    assert_true(isinf(l.expected_interruptions) && isinf(l.expected_planned));
    /* nothing lost: goodput 1 */
    plan_loss_params_t none = {{0, 1e12, 1e10, 600}, 0, 0, 0, 0, 0};
    assert_int_equal(plan_losses(&none, 16384, 1000, &l, &err), 0);
    assert_close(l.goodput, 1, 0);
    assert_close(l.expected_wall_s, 1000, 0);
    /* a fraction of 1 or more is refused, naming it */
    plan_loss_params_t bad = p;
    bad.slow_fraction = 1;
    assert_int_equal(plan_losses(&bad, 16384, 1000, &l, &err), -1);
    assert_string_equal(err.field, "losses.slow_nodes");
    bad = p;
    bad.queue_s = -1;
    assert_int_equal(plan_losses(&bad, 16384, 1000, &l, &err), -1);
    assert_string_equal(err.field, "failures.queue_minutes");
}

/* DeepSeek LLM's law at C = 1e24 FLOPs: 1e24^0.3271 = 10^(24·0.3271) = 10^7.8504 = 7.0860e7,
 * times 0.2920 = 2.0691e7 tokens. The FLOPs per token of a dense 12·d² block (their 72·L·d²):
 * L = 2, d = 10, seq 5: N = 2·12·100 = 2,400, M = 6·2,400 + 6·2·10·5 = 14,400 + 600 = 15,000. */
static void batch_law(void **state)
{
    (void)state;
    assert_close(plan_batch_law_tokens(1e24), 2.0691e7, 1e-4);
    assert_close(plan_batch_flops_per_token(2400, 2, 10, 5), 15000, 1e-12);
    /* the law grows with compute: 10x the compute, 10^0.3271 = 2.1238x the batch */
    assert_close(plan_batch_law_tokens(1e25) / plan_batch_law_tokens(1e24), 2.1238, 1e-4);
}

/* Whole-run efficiencies as published, worked by hand:
 *   LLaMA 65B: 6·65.2e9·1.4e12 = 5.4768e23 over 1,022,362 h · 3600 · 312e12 = 1.14832e24:
 *     0.47694
 *   Llama 3.1 405B: 6·405e9·15.6e12 = 3.7908e25 over 30.84e6 · 3600 · 989.4e12 = 1.098471e26:
 *     0.34510
 *   StarCoderBase: 9.3e22 / (320,256 · 3600 · 312e12 = 3.59712e23) = 0.25854
 *   Falcon-180B: 3.78e24 / (7e6 · 3600 · 312e12 = 7.8624e24) = 0.48077
 *   DeepSeek-V3: 3.2856e24 / (2.664e6 · 3600 · 989.4e12 = 9.48872e24) = 0.34626
 *   BLOOM 176B: 6·176.2e9·366e9 = 3.86935e23 / (1,082,990 · 3600 · 312e12 = 1.21641e24) = 0.31809
 *   MPT-7B: 4.02e22 / (100,320 · 3600 · 312e12 = 1.12679e23) = 0.35676
 * Each run's k = published / the plan's tuned GPU-hours, and ln k:
 *   LLaMA 1,022,362 / 718,350 = 1.423209 (0.352914), BLOOM 1,082,990 / 819,116 = 1.322145
 *   (0.279255), StarCoderBase 320,256 / 162,542 = 1.970297 (0.678184), MPT 100,320 / 58,888 =
 *   1.703573 (0.532728), Falcon 7.0e6 / 5.3399e6 = 1.310886 (0.270703) on A100; Llama 3.1
 *   30.84 / 25.319 = 1.218058 (0.197257), DeepSeek-V3 2.664 / 2.3567 = 1.130394 (0.122566).
 * A new A100 run (1,000 GPUs, a 30B model, no run left out): mean ln k of the five A100 runs
 *   2.113784 / 5 = 0.422757, k̄ = 1.52616; deviations −0.06984, −0.14350, 0.25543, 0.10997,
 *   −0.15205, squares summing to 0.125928; the H100 pair ±0.037346, 0.002789; σ =
 *   sqrt(0.128717 / (7 runs − 2 generations)) = 0.16045. η̄ over the same five: (0.47694 ·
 *   0.31809 · 0.25854 · 0.35676 · 0.48077)^(1/5) = 0.36777.
 * LLaMA 65B's own plan (2,048 A100, 65.3B active parameters: Fathom's count) leaves LLaMA out:
 *   mean ln k of the other four 1.760870 / 4 = 0.440218, k̄ = 1.55305; squares 0.119830, with
 *   the H100 pair 0.122619; σ = sqrt(0.122619 / (6 − 2)) = 0.17509.
 * Llama 3.1 405B's own (16,384 H100, 405.9B active): DeepSeek-V3 alone, k̄ = 1.130394; σ from
 *   the A100 runs, sqrt(0.125928 / 4) = 0.17743. The same GPUs with 1.2x its parameters (487B):
 *   not its run; k̄ over both H100 runs, sqrt(1.218058 · 1.130394) = 1.173408.
 * An 8B model on DeepSeek-V3's 2,048 H100-generation GPUs: not DeepSeek-V3's run, whatever its
 *   tokens (at 6.8e13 its 6·N·D is DeepSeek-V3's 3.29e24, which left DeepSeek-V3 out and put k̄
 *   at 1.218058 when the match was on compute): k̄ 1.173408 over both runs. A 37.6B-active model
 *   there (Fathom's DeepSeek-V3) is its run: Llama 3.1 alone, k̄ = 1.218058.
 * A GPU of 2,250 TFLOP/s (no published run within 1.5x): all seven, k̄ = exp(mean ln k) =
 *   exp((2.113784 + 0.319823) / 7) = 1.41575. */
static void published_runs(void **state)
{
    (void)state;
    const plan_published_run_t *llama = NULL, *l405 = NULL;
    for (size_t i = 0; i < plan_published_runs_count; i++) {
        const plan_published_run_t *r = &plan_published_runs[i];
        if (strcmp(r->model, "LLaMA 65B") == 0)
            llama = r;
        if (strcmp(r->model, "Llama 3.1 405B") == 0)
            l405 = r;
        assert_true(r->source && strlen(r->source) > 20); /* every row names its source */
    }
    assert_non_null(llama);
    assert_non_null(l405);
    assert_close(plan_published_efficiency(llama), 0.47694, 1e-4);
    assert_close(plan_published_efficiency(l405), 0.34510, 1e-4);
    plan_published_fit_t f;
    plan_published_fit(312e12, 1000, 30e9, &f);
    assert_close(f.ratio, 1.52616, 1e-4);
    assert_close(f.efficiency, 0.36777, 1e-4);
    assert_close(f.sigma, 0.16045, 1e-4);
    assert_int_equal(f.runs, 5);
    assert_null(f.left_out);
    plan_published_fit(312e12, 2048, 65.29e9, &f);
    assert_string_equal(f.left_out, "LLaMA 65B");
    assert_close(f.ratio, 1.55305, 1e-4);
    assert_close(f.sigma, 0.17509, 1e-4);
    assert_int_equal(f.runs, 4);
    plan_published_fit(989.4e12, 16384, 405.9e9, &f);
    assert_string_equal(f.left_out, "Llama 3.1 405B");
    assert_close(f.ratio, 1.130394, 1e-4);
    assert_close(f.efficiency, 0.34626, 1e-4);
    assert_close(f.sigma, 0.17743, 1e-4);
    assert_int_equal(f.runs, 1);
    plan_published_fit(989.4e12, 16384, 1.2 * 405.9e9, &f);
    assert_null(f.left_out);
    assert_int_equal(f.runs, 2);
    assert_close(f.ratio, 1.173408, 1e-5);
    plan_published_fit(989.4e12, 2048, 8.03e9, &f);
    assert_null(f.left_out);
    assert_close(f.ratio, 1.173408, 1e-5);
    plan_published_fit(989.4e12, 2048, 37.6e9, &f);
    assert_string_equal(f.left_out, "DeepSeek-V3");
    assert_close(f.ratio, 1.218058, 1e-5);
    assert_int_equal(f.runs, 1);
    plan_published_fit(2250e12, 1000, 30e9, &f);
    assert_close(f.ratio, 1.41575, 1e-4);
    assert_int_equal(f.runs, 7);
}

/* Ranges at k̄ 2, σ 0.1, P10–P90: z = Φ⁻¹(0.9) = 1.2815516 (normal tables), z·σ = 0.1281552,
 * e^0.1281552 = 1.1367294:
 *   ideal 100, tuned 150: the point 150 · 2 = 300, the range [300 / 1.1367294 = 263.915,
 *   300 · 1.1367294 = 341.019];
 *   ideal 290, tuned 150: the point 300, its low end stays at the ideal: [290, 341.019];
 *   ideal 100, tuned 150 at k̄ 0.5 (runs cheaper than the plan): 75 is below the ideal, so the
 *   point is the ideal 100, [100, 113.673]. */
static void ranges_and_verdicts(void **state)
{
    (void)state;
    assert_close(plan_range_z(), 1.2815516, 1e-6);
    assert_close(PLAN_RANGE_COVERAGE, 0.8, 1e-15);
    plan_published_fit_t fit = {2.0, 0.4, 0.1, 2, NULL};
    plan_range_t r;
    plan_gpu_hours_range(100, 150, &fit, &r);
    assert_close(r.low, 263.915, 1e-5);
    assert_close(r.point, 300, 1e-12);
    assert_close(r.high, 341.019, 1e-5);
    plan_gpu_hours_range(290, 150, &fit, &r);
    assert_close(r.low, 290, 1e-12);
    assert_close(r.point, 300, 1e-12);
    assert_close(r.high, 341.019, 1e-5);
    fit.ratio = 0.5;
    plan_gpu_hours_range(100, 150, &fit, &r);
    assert_close(r.low, 100, 1e-12);
    assert_close(r.point, 100, 1e-12);
    assert_close(r.high, 113.673, 1e-5);
    /* [263.915, 341.019]: a limit of 342 is met, 341 at risk, 264 at risk, 263 missed */
    fit.ratio = 2.0;
    plan_gpu_hours_range(100, 150, &fit, &r);
    assert_int_equal(plan_verdict(&r, 342), PLAN_WITHIN);
    assert_int_equal(plan_verdict(&r, 341), PLAN_AT_RISK);
    assert_int_equal(plan_verdict(&r, 264), PLAN_AT_RISK);
    assert_int_equal(plan_verdict(&r, 263), PLAN_MISSES);
    assert_int_equal(plan_verdict(&r, 0), PLAN_WITHIN); /* no limit */
    assert_string_equal(plan_verdict_names[PLAN_AT_RISK], "at risk");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(llama3_cluster),
        cmocka_unit_test(edges),
        cmocka_unit_test(front_by_construction),
        cmocka_unit_test(losses_worked),
        cmocka_unit_test(batch_law),
        cmocka_unit_test(published_runs),
        cmocka_unit_test(ranges_and_verdicts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

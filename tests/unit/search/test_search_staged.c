/* test_search_staged.c — the two-stage search (TWO STAGES in core/search/search.h) against the
 * exhaustive one: on every case here (dense and MoE models, the modern and Calculon's block,
 * one- and two-tier networks, NVL72) the two stages find the exhaustive search's best
 * execution and rate; they try fewer executions, never more than search_plan_max_executions
 * says; and a walk that only counts reaches exactly that closed form when every unit is
 * refined (so the coarse walk's size formula is the walk's). */
#include <stdlib.h>

#include "search_test_util.h"

typedef struct {
    const char *model, *system, *datatype;
    int num_procs, max_batch;
    const char *options;
} staged_case_t;

/* The plan's own options (search_plan_codec.h, FP8 off) on most, Calculon's defaults on the
 * rest; sized to take a few seconds each. */
#define PLAN_OPTS                                                                                  \
    "{\"attention_kernel\":\"fused\",\"no_offload\":true,\"exact_batch\":true,\"fp8\":false}"

static const staged_case_t cases[] = {
    {"llama3-8B", "h100_sxm", "bfloat16", 64, 256, PLAN_OPTS},
    {"llama3-70B", "b200", "bfloat16", 256, 512, PLAN_OPTS},
    {"llama3-70B", "gb200_nvl72", "bfloat16", 288, 576, PLAN_OPTS},
    {"qwen2.5-72B", "mi300x", "bfloat16", 128, 256, PLAN_OPTS},
    {"mixtral-8x7B", "h100_sxm", "bfloat16", 32, 64, PLAN_OPTS},
    {"mixtral-8x7B", "gb200_nvl72", "bfloat16", 72, 144, PLAN_OPTS},
    {"qwen3-30B-A3B", "h800", "bfloat16", 32, 64, PLAN_OPTS},
    {"gpt3-13B", "a100_80e", "float16", 64, 256, "{}"},
    {"megatron-126M", "a100_80g", "float16", 8, 64, "{}"},
};

static void request(const staged_case_t *c, search_request_t *req)
{
    char json[768];
    snprintf(json, sizeof json,
             "{\"model\":\"%s\",\"system\":\"%s\",\"num_procs\":%d,\"max_batch_size\":%d,"
             "\"datatype\":\"%s\",\"options\":%s}",
             c->model, c->system, c->num_procs, c->max_batch, c->datatype, c->options);
    test_request(json, req);
}

static search_plan_t *plan_of(const search_request_t *req)
{
    fathom_error_t err;
    search_plan_t *plan = search_plan_create(req, &err);
    if (!plan) {
        print_error("plan refused: %s: %s\n", err.field, err.message);
        fail();
    }
    return plan;
}

static void run(search_plan_t *plan, search_result_t *res)
{
    fathom_error_t err;
    assert_int_equal(search_result_init(res, search_plan_request(plan)->options.top_n, &err), 0);
    assert_int_equal(search_run_all(plan, res, NULL), 0);
}

static void two_stages_find_the_exhaustive_best(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i += TEST_SAMPLE_STRIDE) {
        const staged_case_t *c = &cases[i];
        search_request_t req;
        request(c, &req);
        search_plan_t *all = plan_of(&req);
        req.options.refine_units = SEARCH_REFINE_UNITS;
        search_plan_t *staged = plan_of(&req);
        search_result_t a, s;
        run(all, &a);
        run(staged, &s);
        if (a.n_best < 1 || s.n_best < 1)
            fail_msg("%s on %d %s: nothing fits (exhaustive %d, staged %d)", c->model,
                     c->num_procs, c->system, a.n_best, s.n_best);
        const llm_execution_t *x = &a.best[0].execution, *y = &s.best[0].execution;
        if (a.best[0].result.stats.sample_rate != s.best[0].result.stats.sample_rate ||
            memcmp(x, y, sizeof *x) != 0)
            fail_msg("%s on %d %s: exhaustive %.9g samples/s (tp %lld pp %lld dp %lld vp %lld "
                     "mbs %lld), two stages %.9g (tp %lld pp %lld dp %lld vp %lld mbs %lld)",
                     c->model, c->num_procs, c->system, a.best[0].result.stats.sample_rate,
                     (long long)x->tensor_par, (long long)x->pipeline_par,
                     (long long)x->data_par, (long long)x->pipeline_interleaving,
                     (long long)x->microbatch_size, s.best[0].result.stats.sample_rate,
                     (long long)y->tensor_par, (long long)y->pipeline_par,
                     (long long)y->data_par, (long long)y->pipeline_interleaving,
                     (long long)y->microbatch_size);
        /* the same position in the full walk: ties break the same way */
        assert_int_equal(a.best[0].unit, s.best[0].unit);
        assert_int_equal(a.best[0].index, s.best[0].index);
        /* what the two stages tried: no more than their closed form, fewer than one walk
         * whenever units were left out */
        assert_true(s.total <= search_plan_max_executions(staged));
        assert_int_equal(s.good + s.bad + s.pruned, s.total);
        assert_int_equal(search_plan_exhaustive_executions(staged), a.total);
        if (search_plan_units(staged) > SEARCH_REFINE_UNITS)
            assert_true(s.total < a.total);
        search_result_close(&a);
        search_result_close(&s);
        search_plan_free(all);
        search_plan_free(staged);
    }
}

static void counted_walk_matches_the_closed_form(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i += TEST_SAMPLE_STRIDE) {
        search_request_t req;
        request(&cases[i], &req);
        req.mode = SEARCH_COUNT_ONLY;
        search_plan_t *one = plan_of(&req);
        const size_t units = search_plan_units(one);
        const uint64_t exhaustive = search_plan_max_executions(one);
        search_plan_free(one);
        /* every unit refined: the coarse walks plus the exhaustive walk */
        req.options.refine_units = (int)units;
        search_plan_t *staged = plan_of(&req);
        search_result_t res;
        run(staged, &res);
        assert_int_equal(res.total, search_plan_max_executions(staged));
        assert_true(res.total > exhaustive); /* the coarse walks are counted too */
        assert_int_equal(search_plan_exhaustive_executions(staged), exhaustive);
        search_result_close(&res);
        search_plan_free(staged);
        /* refining no more units than one: the coarse walks and the largest unit, at most */
        req.options.refine_units = 1;
        staged = plan_of(&req);
        run(staged, &res);
        assert_true(res.total <= search_plan_max_executions(staged));
        assert_true(search_plan_max_executions(staged) < exhaustive);
        search_result_close(&res);
        search_plan_free(staged);
    }
}

/* options.fed_batch (a plan's "auto" batch): every layout runs the multiple of its data-parallel
 * degree nearest the target, at least dp·pp. Llama 3 8B on 64 H100, target 100 sequences, worked
 * by hand:
 *   TP 1, PP 1, DP 64 (the only layout under max_tensor_par = max_pipeline_par = 1):
 *     (100 + 32) / 64 = 2 → 128 (a TP 1, PP 32, DP 2 layout would take (100 + 1) / 2 = 50 → 100,
 *     at least 2·32 = 64 → 100);
 *   and over the 20 best of the free walk, each batch a multiple of its DP, at least DP·PP, and
 *   within DP/2 of 100 unless DP·PP is more. */
static int64_t fed_best_batch(const char *options, int64_t *dp, int64_t *pp)
{
    char json[512];
    snprintf(json, sizeof json,
             "{\"model\":\"llama3-8B\",\"system\":\"h100_sxm\",\"num_procs\":64,"
             "\"max_batch_size\":100,\"datatype\":\"bfloat16\",\"options\":%s}",
             options);
    search_request_t req;
    test_request(json, &req);
    req.options.fed_batch = true;
    search_plan_t *plan = plan_of(&req);
    search_result_t res;
    run(plan, &res);
    assert_true(res.n_best > 0);
    for (int i = 0; i < res.n_best; i++) {
        const llm_execution_t *e = &res.best[i].execution;
        const int64_t b = e->batch_size;
        assert_int_equal(b % e->data_par, 0);
        assert_true(b >= e->data_par * e->pipeline_par);
        assert_true(b == e->data_par * e->pipeline_par || llabs(b - 100) <= e->data_par / 2);
    }
    *dp = res.best[0].execution.data_par;
    *pp = res.best[0].execution.pipeline_par;
    int64_t b = res.best[0].execution.batch_size;
    search_result_close(&res);
    search_plan_free(plan);
    return b;
}

static void fed_batch_rounds_to_each_layout(void **state)
{
    (void)state;
    int64_t dp, pp;
    assert_int_equal(fed_best_batch("{\"no_offload\":true,\"max_tensor_par\":1,"
                                    "\"max_pipeline_par\":1}",
                                    &dp, &pp),
                     128);
    assert_int_equal(dp, 64);
    fed_best_batch("{\"no_offload\":true,\"fp8\":false,\"top_n\":20}", &dp, &pp);
    /* with an exact batch it is refused */
    search_request_t req;
    test_request("{\"model\":\"llama3-8B\",\"system\":\"h100_sxm\",\"num_procs\":64,"
                 "\"max_batch_size\":100,\"options\":{\"exact_batch\":true}}",
                 &req);
    req.options.fed_batch = true;
    fathom_error_t err;
    assert_null(search_plan_create(&req, &err));
    assert_string_equal(err.field, "options.exact_batch");
}

static void negative_refine_is_refused(void **state)
{
    (void)state;
    search_request_t req;
    request(&cases[0], &req);
    req.options.refine_units = -1;
    fathom_error_t err;
    assert_null(search_plan_create(&req, &err));
    assert_string_equal(err.field, "options.refine_units");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(two_stages_find_the_exhaustive_best),
        cmocka_unit_test(counted_walk_matches_the_closed_form),
        cmocka_unit_test(fed_batch_rounds_to_each_layout),
        cmocka_unit_test(negative_refine_is_refused),
    };
    return cmocka_run_group_tests(tests, test_load_presets, test_free_presets);
}

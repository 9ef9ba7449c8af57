/* test_search_space.c — the search walks exactly Calculon's space: the execution counts of the
 * seven exhaustive searches in the golden README (counted by Calculon's own loops), both by
 * walking the loops without estimating and by the plan's closed-form count; how the options
 * change the walk; and the request checks of search_plan_create. */
#include "search_test_util.h"

typedef struct {
    const char *model, *system;
    int num_procs, max_batch;
    unsigned long long total; /* from ../shared/golden/search/README.md */
} count_case_t;

static const count_case_t count_cases[] = {
    {"gpt3-175B", "a100_80g", 1024, 1024, 6985920ULL},
    {"megatron-1T", "a100_80g", 3072, 3072, 7002336ULL},
    {"megatron-22B", "h100_80g_nvl8", 64, 512, 3892112ULL},
    {"gpt3-13B", "a100_80e", 256, 512, 984960ULL},
    {"megatron-126M", "a100_80g", 8, 64, 298072ULL},
    {"palm-540B", "h100_80g_nvl8", 6144, 2048, 149568ULL},
    {"turing-530B", "a100_80g", 5128, 2520, 10944ULL},
};

static void make_request(const count_case_t *c, const char *options, search_request_t *req)
{
    char json[512];
    snprintf(json, sizeof json,
             "{\"model\":\"%s\",\"system\":\"%s\",\"num_procs\":%d,\"max_batch_size\":%d,"
             "\"datatype\":\"float16\",\"options\":%s}",
             c->model, c->system, c->num_procs, c->max_batch, options);
    test_request(json, req);
}

static unsigned long long count_walk(search_request_t *req)
{
    fathom_error_t err;
    req->mode = SEARCH_COUNT_ONLY;
    search_plan_t *plan = search_plan_create(req, &err);
    if (!plan) {
        print_error("plan refused: %s: %s\n", err.field, err.message);
        fail();
    }
    search_result_t res;
    assert_int_equal(search_result_init(&res, 1, &err), 0);
    assert_int_equal(search_run_all(plan, &res, NULL), 0);
    unsigned long long walked = res.total;
    unsigned long long closed = search_plan_max_executions(plan);
    if (walked != closed) {
        print_error("walk counted %llu executions, the plan's closed form %llu\n", walked, closed);
        fail();
    }
    /* Counting only: nothing estimated, nothing good or bad. */
    assert_int_equal(res.good + res.bad + res.estimated, 0);
    search_result_close(&res);
    search_plan_free(plan);
    return walked;
}

static void test_golden_counts(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof count_cases / sizeof count_cases[0]; i++) {
        const count_case_t *c = &count_cases[i];
        search_request_t req;
        make_request(c, "{}", &req);
        unsigned long long got = count_walk(&req);
        if (got != c->total) {
            print_error("%s %d %d %s: %llu executions, Calculon counts %llu\n", c->model,
                        c->num_procs, c->max_batch, c->system, got, c->total);
            fail();
        }
    }
}

/* Option effects that follow from Calculon's loops alone. */
static void test_option_effects(void **state)
{
    (void)state;
    const count_case_t *turing = &count_cases[6];
    search_request_t req;
    /* fused_activation all walks every execution twice (false, then true). */
    make_request(turing, "{\"fused_activation\":\"all\"}", &req);
    assert_int_equal(count_walk(&req), 2 * turing->total);
    make_request(turing, "{\"fused_activation\":false}", &req);
    assert_int_equal(count_walk(&req), turing->total);
    /* megatron-126M on 8 GPUs: every tp, pp, dp >= 1. Without TP overlap there is one TP overlap
     * value instead of three where tp > 1; without DP overlap one instead of two where dp > 1:
     * the counts drop strictly, and removing both drops more than either. */
    const count_case_t *small = &count_cases[4];
    make_request(small, "{\"no_tp_overlap\":true}", &req);
    unsigned long long no_tp = count_walk(&req);
    make_request(small, "{\"no_dp_overlap\":true}", &req);
    unsigned long long no_dp = count_walk(&req);
    make_request(small, "{\"no_tp_overlap\":true,\"no_dp_overlap\":true}", &req);
    unsigned long long none = count_walk(&req);
    assert_true(no_tp < small->total);
    assert_true(no_dp < small->total);
    assert_true(none < no_tp && none < no_dp);
}

static void expect_refused(search_request_t *req, fathom_code_t code, const char *field)
{
    fathom_error_t err;
    fathom_error_clear(&err);
    search_plan_t *plan = search_plan_create(req, &err);
    if (plan) {
        search_plan_free(plan);
        print_error("expected a refusal naming %s\n", field);
        fail();
    }
    assert_int_equal(err.code, code);
    assert_string_equal(err.field, field);
}

static void test_plan_checks(void **state)
{
    (void)state;
    search_request_t req;
    make_request(&count_cases[6], "{}", &req);
    search_request_t bad = req;
    bad.num_procs = SEARCH_MAX_PROCS + 1;
    expect_refused(&bad, FATHOM_E_INVALID_FIELD, "num_procs");
    bad = req;
    bad.max_batch_size = 0;
    expect_refused(&bad, FATHOM_E_INVALID_FIELD, "max_batch_size");
    bad = req;
    bad.options.top_n = SEARCH_TOP_N_MAX + 1;
    expect_refused(&bad, FATHOM_E_INVALID_FIELD, "options.top_n");
    bad = req;
    bad.mode = SEARCH_COUNT_ONLY;
    bad.options.mbs_break = true;
    expect_refused(&bad, FATHOM_E_INVALID_FIELD, "options.mbs_break");
    /* turing-530B on 1024 GPUs with a batch of 1: only dp = 1 would fit, which needs
     * tp * pp = 1024 with tp dividing 128 and pp dividing 105: there is no such execution. */
    bad = req;
    bad.max_batch_size = 1;
    bad.num_procs = 1024;
    assert_int_equal(count_walk(&bad), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_counts),
        cmocka_unit_test(test_option_effects),
        cmocka_unit_test(test_plan_checks),
    };
    return cmocka_run_group_tests(tests, test_load_presets, test_free_presets);
}

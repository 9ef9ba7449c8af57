/* test_search_plan.c — a plan's candidate (codec/search_plan_codec.c) against the unpruned
 * search: on a small case, the layout a candidate reports is the fastest of every execution the
 * walk tries with nothing skipped (SEARCH_EVALUATE_ALL); and its checkpoint is the model's
 * weights and optimizer state at the published parameter count. */
#include <math.h>

#include "../test_util.h"
#include "llm_codec.h"
#include "model_codec.h"
#include "search_plan_codec.h"
#include "search_test_util.h"

static const char small_plan[] =
    "{\"kind\": \"plan\", \"model\": \"llama3-8B\", \"tokens\": 1e9, \"batch_tokens\": 131072,"
    " \"systems\": [\"h100_sxm\", \"mi300x\"], \"gpu_counts\": [4, 8],"
    " \"options\": {\"no_offload\": false}}";

static void candidate_is_the_unpruned_best(void **state)
{
    (void)state;
    codec_ctx_t ctx = {test_presets};
    fathom_error_t err;
    fathom_error_clear(&err);
    json_t *body = json_loads(small_plan, 0, NULL);
    uint64_t size = 0;
    json_t *spec = codec_plan_normalize(body, &ctx, UINT64_MAX, &size, &err);
    if (!spec)
        fail_msg("%s: %s", err.field, err.message);
    assert_int_equal(size, 4);
    for (uint64_t i = 0; i < size; i++) {
        uint64_t evaluations = 0;
        json_t *c = codec_plan_candidate(spec, &ctx, i, NULL, &evaluations, &err);
        assert_non_null(c);
        /* the same search, every execution estimated */
        const json_t *sys = json_array_get(json_object_get(spec, "systems"), i / 2);
        json_t *req_json = json_pack(
            "{s:s,s:O,s:O,s:O,s:I,s:O,s:O}", "kind", "optimal_execution", "model",
            json_object_get(spec, "model"), "system", json_object_get(sys, "system"),
            "num_procs", json_object_get(c, "num_procs"), "max_batch_size", (json_int_t)16,
            /* the plan's datatypes, best first: these systems have the first */
            "datatype", json_array_get(json_object_get(spec, "datatype"), 0), "options",
            json_object_get(spec, "options"));
        search_request_t req;
        assert_int_equal(codec_search_decode(req_json, &ctx, &req, &err), 0);
        req.mode = SEARCH_EVALUATE_ALL;
        search_plan_t *plan = search_plan_create(&req, &err);
        search_result_t all;
        assert_non_null(plan);
        assert_int_equal(search_result_init(&all, 1, &err), 0);
        assert_int_equal(search_run_all(plan, &all, NULL), 0);
        assert_true(all.n_best == 1);
        assert_true(all.estimated == all.total); /* nothing skipped */
        assert_true(json_is_true(json_object_get(c, "fits")));
        assert_close(json_number_value(json_object_get(c, "step_time_s")),
                     all.best[0].result.stats.total_time, 0);
        assert_int_equal(json_integer_value(json_object_get(
                             json_object_get(c, "execution"), "tensor_par")),
                         all.best[0].execution.tensor_par);
        /* the pruned walk tried the same executions, estimating fewer: the ones a bound proved
         * unable to rank are counted apart (search.h: good + bad + pruned = total) */
        const json_t *counts = json_object_get(c, "search");
        json_int_t good = json_integer_value(json_object_get(counts, "good"));
        json_int_t pruned = json_integer_value(json_object_get(counts, "pruned"));
        assert_int_equal(json_integer_value(json_object_get(counts, "total")), all.total);
        assert_true(good <= (json_int_t)all.good && good + pruned >= (json_int_t)all.good);
        assert_true(json_integer_value(json_object_get(counts, "estimated")) <=
                    (json_int_t)all.estimated);
        /* Llama 3 8B has 8.03 billion parameters (Meta's model card); bfloat16 weights (2 B)
         * and fp32 master weights and Adam moments (12 B): 14 B each, 112.4 GB. */
        assert_close(json_number_value(json_object_get(json_object_get(c, "failures"),
                                                       "checkpoint_bytes")),
                     14 * 8.03e9, 0.005);
        search_result_close(&all);
        search_plan_free(plan);
        json_decref(req_json);
        json_decref(c);
    }
    json_decref(spec);
    json_decref(body);
}

/* options.stack reaches every candidate's search: the layout a torchtitan plan reports runs
 * torchtitan (compiled), re-estimated as /v1/estimate would, with no Transformer Engine TP
 * overlap; compile without a PyTorch stack is refused naming options.compile. */
static void stack_reaches_every_candidate(void **state)
{
    (void)state;
    codec_ctx_t ctx = {test_presets};
    fathom_error_t err;
    fathom_error_clear(&err);
    json_t *body = json_loads(
        "{\"kind\": \"plan\", \"model\": \"llama3-8B\", \"tokens\": 1e9, \"batch_tokens\": "
        "131072, \"systems\": [\"h100_sxm\"], \"gpu_counts\": [8, 16], \"options\": "
        "{\"stack\": \"torchtitan\", \"compile\": true}}",
        0, NULL);
    uint64_t size = 0;
    json_t *spec = codec_plan_normalize(body, &ctx, UINT64_MAX, &size, &err);
    if (!spec)
        fail_msg("%s: %s", err.field, err.message);
    for (uint64_t i = 0; i < size; i++) {
        uint64_t evaluations = 0;
        json_t *c = codec_plan_candidate(spec, &ctx, i, NULL, &evaluations, &err);
        assert_non_null(c);
        const json_t *e = json_object_get(c, "execution");
        assert_string_equal(json_string_value(json_object_get(e, "stack")), "torchtitan");
        assert_true(json_is_true(json_object_get(e, "compile")));
        assert_string_equal(json_string_value(json_object_get(e, "tensor_par_overlap")), "none");
        /* the same execution, estimated on its own, steps as the candidate says */
        llm_execution_t ex;
        fathom_model_t m;
        llm_system_t sys;
        llm_result_t res;
        assert_int_equal(codec_model_decode(json_object_get(spec, "model"), "model", NULL, &m,
                                            &err), 0);
        assert_int_equal(codec_llm_system_decode(json_object_get(json_array_get(
                                                     json_object_get(spec, "systems"), 0),
                                                                 "system"),
                                                 "system", NULL, &sys, &err), 0);
        assert_int_equal(codec_llm_execution_decode(e, "execution", &ex, &err), 0);
        assert_int_equal(llm_estimate(&m, &sys, &ex, &res, &err), 0);
        assert_close(json_number_value(json_object_get(c, "step_time_s")), res.stats.total_time,
                     1e-12);
        json_decref(c);
    }
    json_decref(spec);
    json_decref(body);
    body = json_loads("{\"kind\": \"plan\", \"model\": \"llama3-8B\", \"tokens\": 1e9, "
                      "\"systems\": [\"h100_sxm\"], \"gpu_counts\": [8], \"options\": "
                      "{\"compile\": true}}",
                      0, NULL);
    assert_null(codec_plan_normalize(body, &ctx, UINT64_MAX, &size, &err));
    assert_string_equal(err.field, "options.compile");
    json_decref(body);
}

/* The first candidate of the plan in text (the test fails if it is refused). */
static json_t *first_candidate(const char *text)
{
    codec_ctx_t ctx = {test_presets};
    fathom_error_t err;
    fathom_error_clear(&err);
    json_t *body = json_loads(text, 0, NULL);
    uint64_t size = 0, evaluations = 0;
    json_t *spec = codec_plan_normalize(body, &ctx, UINT64_MAX, &size, &err);
    if (!spec)
        fail_msg("%s: %s", err.field, err.message);
    json_t *c = codec_plan_candidate(spec, &ctx, 0, NULL, &evaluations, &err);
    assert_non_null(c);
    json_decref(spec);
    json_decref(body);
    return c;
}

/* A PyTorch stack shards as FSDP does by default (search.c zero_stages): ZeRO-3, then ZeRO-2.
 * Llama 3 8B (8,030,261,248 parameters) on 64 A100 40GB with the fsdp stack (data parallelism
 * only): Megatron's ZeRO-1 would keep bf16 weights and fp32 gradients whole on every GPU,
 * 8.03e9 x (2 + 4) = 48.2e9 bytes = 44.9 GiB > 40 GiB before one activation, so no layout fits;
 * FSDP's ZeRO-3 keeps 8.03e9 x 16 / 64 = 2.0e9 bytes of weights, gradients and Adam state.
 * ZeRO-1 asked of a PyTorch stack, which has none (llm_stack.c), is refused, naming it. */
static void fsdp_plan_shards_its_weights(void **state)
{
    (void)state;
    static const char *const zero[] = {"", ", \"zero_stage\": 1"};
    for (int z = 0; z < 2; z++) {
        char text[512];
        snprintf(text, sizeof text,
                 "{\"kind\": \"plan\", \"model\": \"llama3-8B\", \"tokens\": 1e9, "
                 "\"batch_tokens\": 524288, \"systems\": [\"a100_sxm_40g\"], \"gpu_counts\": "
                 "[64], \"options\": {\"stack\": \"fsdp\"%s}}",
                 zero[z]);
        if (z == 1) {
            codec_ctx_t ctx = {test_presets};
            fathom_error_t err;
            uint64_t size = 0;
            json_t *body = json_loads(text, 0, NULL);
            assert_null(codec_plan_normalize(body, &ctx, UINT64_MAX, &size, &err));
            assert_string_equal(err.field, "options.zero_stage");
            json_decref(body);
            continue;
        }
        json_t *c = first_candidate(text);
        const json_t *e = json_object_get(c, "execution");
        assert_true(json_is_true(json_object_get(c, "fits")));
        assert_string_equal(json_string_value(json_object_get(e, "stack")), "fsdp");
        assert_int_equal(json_integer_value(json_object_get(e, "tensor_par")), 1);
        assert_int_equal(json_integer_value(json_object_get(e, "data_par")), 64);
        assert_true(json_integer_value(json_object_get(e, "zero_stage")) >= 2);
        json_decref(c);
    }
}

/* A layout a report states, pinned (options.tensor_par, pipeline_par, microbatch_size,
 * activation_recompute; doc/plan.md): Llama 3 8B on 16 H100 at 16 sequences of 8,192 tokens,
 * pinned to TP 2 · PP 2 (so DP 16 / 2 / 2 = 4, 4 sequences per replica), microbatch 1, full
 * recompute. The candidate has exactly that layout, and it steps no faster than the free
 * search's fastest (which may choose it, and does not: it recomputes nothing). */
static void stated_layout_pins_the_candidate(void **state)
{
    (void)state;
    static const char *const opts[] = {
        "{}", "{\"tensor_par\": 2, \"pipeline_par\": 2, \"microbatch_size\": 1, "
              "\"activation_recompute\": \"full\"}"};
    double step[2];
    for (int k = 0; k < 2; k++) {
        char text[512];
        snprintf(text, sizeof text,
                 "{\"kind\": \"plan\", \"model\": \"llama3-8B\", \"tokens\": 1e9, "
                 "\"batch_tokens\": 131072, \"systems\": [\"h100_sxm\"], \"gpu_counts\": "
                 "[16], \"options\": %s}",
                 opts[k]);
        json_t *c = first_candidate(text);
        assert_true(json_is_true(json_object_get(c, "fits")));
        const json_t *e = json_object_get(c, "execution");
        const char *rc = json_string_value(json_object_get(e, "activation_recompute"));
        if (k == 1) {
            assert_int_equal(json_integer_value(json_object_get(e, "tensor_par")), 2);
            assert_int_equal(json_integer_value(json_object_get(e, "pipeline_par")), 2);
            assert_int_equal(json_integer_value(json_object_get(e, "data_par")), 4);
            assert_int_equal(json_integer_value(json_object_get(e, "microbatch_size")), 1);
            assert_string_equal(rc, "full");
        } else {
            assert_string_not_equal(rc, "full");
        }
        step[k] = json_number_value(json_object_get(c, "step_time_s"));
        json_decref(c);
    }
    assert_true(step[1] >= step[0]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(candidate_is_the_unpruned_best),
        cmocka_unit_test(stack_reaches_every_candidate),
        cmocka_unit_test(fsdp_plan_shards_its_weights),
        cmocka_unit_test(stated_layout_pins_the_candidate),
    };
    return cmocka_run_group_tests(tests, test_load_presets, test_free_presets);
}

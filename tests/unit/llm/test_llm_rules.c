/* test_llm_rules.c — the LLM model's refusals and the estimate endpoint: Calculon's README
 * example (megatron-1T on a100_80g: 131.9006 s, 23.29 samples/s, as Calculon prints them), one
 * test per rule that makes an execution invalid or infeasible (with the code and the field the
 * 422 names), the codec's strictness, defaults and normalization, and a configuration that does
 * not fit memory (a 200 with a violation). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "endpoint.h"
#include "llm.h"
#include "llm_codec.h"
#include "model_codec.h"

static codec_presets_t *presets;

static int setup(void **state)
{
    (void)state;
    fathom_error_t err;
    presets = codec_presets_load("presets", &err);
    if (!presets)
        fprintf(stderr, "presets: %s\n", err.message);
    return presets ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    codec_presets_free(presets);
    return 0;
}

static void load_model(const char *name, fathom_model_t *m)
{
    fathom_error_t err;
    json_t *v = json_string(name);
    int rc = codec_model_decode(v, "model", presets, m, &err);
    json_decref(v);
    if (rc)
        fail_msg("model %s: %s", name, err.message);
}

static void load_system(const char *name, llm_system_t *s)
{
    fathom_error_t err;
    json_t *v = json_string(name);
    int rc = codec_llm_system_decode(v, "system", presets, s, &err);
    json_decref(v);
    if (rc)
        fail_msg("system %s: %s", name, err.message);
}

/* Calculon's README example execution (tests/data/llm/, copied from Calculon's examples/). */
static void example_execution(llm_execution_t *e)
{
    json_error_t jerr;
    json_t *v = json_load_file("tests/data/llm/example_3072_t4_p64_d12_mbs4_full.json", 0, &jerr);
    if (!v)
        fail_msg("example execution: %s", jerr.text);
    fathom_error_t err;
    int rc = codec_llm_execution_decode(v, "execution", e, &err);
    json_decref(v);
    if (rc)
        fail_msg("example execution: %s: %s", err.field, err.message);
}

static void test_readme_example(void **state)
{
    (void)state;
    fathom_model_t m;
    llm_system_t s;
    llm_execution_t e;
    load_model("megatron-1T", &m);
    load_system("a100_80g", &s);
    example_execution(&e);
    llm_result_t r;
    fathom_error_t err;
    assert_int_equal(llm_estimate(&m, &s, &e, &r, &err), 0);
    /* Calculon prints "Batch total time: 131.9006;" and "Sample rate: 23.29;" */
    printf("total_time %.6f s, sample_rate %.4f\n", r.stats.total_time, r.stats.sample_rate);
    assert_true(fabs(r.stats.total_time - 131.9006) < 0.5e-4);
    assert_true(fabs(r.stats.sample_rate - 23.29) < 0.5e-2);
    assert_true(r.fits_memory);
}

/* The same through the endpoint: presets by name, the response's summary. */
static void test_endpoint_example(void **state)
{
    (void)state;
    json_error_t jerr;
    json_t *exe = json_load_file("tests/data/llm/example_3072_t4_p64_d12_mbs4_full.json", 0, &jerr);
    assert_non_null(exe);
    json_t *body = json_pack("{s:s,s:s,s:o}", "model", "megatron-1T", "system", "a100_80g",
                             "execution", exe);
    codec_ctx_t ctx = {presets};
    fathom_error_t err;
    json_t *norm = codec_estimate_endpoint.normalize(body, &ctx, &err);
    assert_non_null(norm);
    /* normalizing is idempotent: the normalized request normalizes to itself */
    json_t *norm2 = codec_estimate_endpoint.normalize(norm, &ctx, &err);
    assert_non_null(norm2);
    assert_true(json_equal(norm, norm2));
    json_t *resp = codec_estimate_endpoint.evaluate(norm, &ctx, &err);
    assert_non_null(resp);
    assert_true(json_is_true(json_object_get(resp, "feasible")));
    assert_true(json_is_true(json_object_get(resp, "fits_memory")));
    assert_int_equal(json_array_size(json_object_get(resp, "violations")), 0);
    assert_int_equal(json_object_size(json_object_get(resp, "stats")), LLM_STAT__COUNT);
    const json_t *summary = json_object_get(resp, "summary");
    double t = json_number_value(json_object_get(summary, "step_time_s"));
    double sr = json_number_value(json_object_get(summary, "sample_rate"));
    double tok = json_number_value(json_object_get(summary, "tokens_per_s"));
    assert_true(fabs(t - 131.9006) < 0.5e-4);
    assert_true(fabs(sr - 23.29) < 0.5e-2);
    assert_true(fabs(tok - sr * 2048) < 1e-6 * tok);
    assert_true(json_number_value(json_object_get(summary, "mem_tier1_capacity_bytes")) ==
                80.0 * 1073741824.0);
    json_decref(resp);
    json_decref(norm2);
    json_decref(norm);
    json_decref(body);
}

/* ---- refusals: each rule gives its code and names its field ---- */

typedef struct {
    fathom_model_t m;
    llm_system_t s;
    llm_execution_t e;
} fixture_t;

static void base(fixture_t *f)
{
    load_model("megatron-1T", &f->m);
    load_system("a100_80g", &f->s);
    example_execution(&f->e);
}

static void expect_refusal(fixture_t *f, fathom_code_t code, const char *field)
{
    llm_result_t r;
    fathom_error_t err;
    fathom_error_clear(&err);
    int rc = llm_estimate(&f->m, &f->s, &f->e, &r, &err);
    if (rc != -1 || err.code != code || strcmp(err.field, field) != 0)
        fail_msg("expected %s on %s, got rc %d %s on \"%s\": %s", fathom_code_name(code), field,
                 rc, fathom_code_name(err.code), err.field, err.message);
    printf("  %-34s %s: %s\n", field, fathom_code_name(code), err.message);
}

static void test_procs_product(void **state)
{
    (void)state;
    fixture_t f;
    base(&f);
    f.e.data_par = 11; /* 4 * 64 * 11 != 3072 */
    expect_refusal(&f, FATHOM_E_INVALID_FIELD, "execution.num_procs");
}

static void test_batch_not_divisible(void **state)
{
    (void)state;
    fixture_t f;
    base(&f);
    f.e.batch_size = 3070; /* not a multiple of data_par 12 */
    expect_refusal(&f, FATHOM_E_INVALID_FIELD, "execution.batch_size");
    base(&f);
    f.e.microbatch_size = 5; /* 256 per replica is not a multiple of 5 */
    expect_refusal(&f, FATHOM_E_INVALID_FIELD, "execution.microbatch_size");
}

static void test_interleaving(void **state)
{
    (void)state;
    fixture_t f;
    base(&f);
    f.e.pipeline_interleaving = 3; /* 128 blocks / 64 stages = 2 per processor */
    expect_refusal(&f, FATHOM_E_INFEASIBLE_EXECUTION, "execution.pipeline_interleaving");
    base(&f);
    f.e.tensor_par = 8;
    f.e.pipeline_par = 8;
    f.e.data_par = 48;
    f.e.batch_size = 3072;
    f.e.pipeline_interleaving = 3; /* 16 blocks per processor */
    expect_refusal(&f, FATHOM_E_INFEASIBLE_EXECUTION, "execution.pipeline_interleaving");
    base(&f);
    f.e.pipeline_par = 1;
    f.e.data_par = 768;
    f.e.pipeline_interleaving = 2;
    expect_refusal(&f, FATHOM_E_INVALID_FIELD, "execution.pipeline_interleaving");
}

static void test_network_too_small(void **state)
{
    (void)state;
    fixture_t f;
    base(&f);
    f.e.tensor_par = 16; /* tier 0 connects 8 processors */
    f.e.pipeline_par = 16;
    expect_refusal(&f, FATHOM_E_INFEASIBLE_EXECUTION, "execution.tensor_par");
    base(&f);
    f.e.data_par_net = 0; /* data_par 12 on tier 0 with tensor_par 4 */
    expect_refusal(&f, FATHOM_E_INFEASIBLE_EXECUTION, "execution.tensor_par");
}

static void test_network_not_filled(void **state)
{
    (void)state;
    fixture_t f;
    base(&f);
    /* tensor_par 2 and pipeline_par 3 share tier 0 (8, must be filled): 6 does not divide 8 */
    f.e.num_procs = 6 * 512;
    f.e.tensor_par = 2;
    f.e.pipeline_par = 3;
    f.e.data_par = 512;
    f.e.pipeline_par_net = 0;
    f.e.batch_size = 512;
    f.e.microbatch_size = 1;
    expect_refusal(&f, FATHOM_E_INFEASIBLE_EXECUTION, "execution.tensor_par");
}

static void test_network_index(void **state)
{
    (void)state;
    fixture_t f;
    base(&f);
    f.e.data_par_net = 2; /* a100_80g has tiers 0 and 1 */
    expect_refusal(&f, FATHOM_E_INVALID_FIELD, "execution.data_par_net");
}

static void test_offload_too_few_blocks(void **state)
{
    (void)state;
    fixture_t f;
    base(&f);
    f.e.weight_offload = true; /* 2 blocks per processor */
    expect_refusal(&f, FATHOM_E_INFEASIBLE_EXECUTION, "execution.weight_offload");
    base(&f);
    f.e.optimizer_offload = true;
    expect_refusal(&f, FATHOM_E_INFEASIBLE_EXECUTION, "execution.optimizer_offload");
}

static void test_datatype_missing(void **state)
{
    (void)state;
    fixture_t f;
    base(&f);
    f.e.datatype = LLM_DT_BFLOAT16; /* a100_80g describes float16 only */
    expect_refusal(&f, FATHOM_E_INVALID_FIELD, "execution.datatype");
}

static void test_inconsistent_options(void **state)
{
    (void)state;
    fixture_t f;
    base(&f);
    f.e.training = false; /* full recompute needs training */
    expect_refusal(&f, FATHOM_E_INVALID_FIELD, "execution.activation_recompute");
    base(&f);
    f.e.seq_par_ag_redo = true; /* with full recompute */
    expect_refusal(&f, FATHOM_E_INVALID_FIELD, "execution.seq_par_ag_redo");
    base(&f);
    f.e.tensor_par_comm_type = LLM_TP_COMM_AR;
    f.e.activation_recompute = LLM_RECOMPUTE_NONE;
    f.e.seq_par_ag_redo = true; /* needs rs_ag */
    expect_refusal(&f, FATHOM_E_INVALID_FIELD, "execution.seq_par_ag_redo");
    base(&f);
    f.e.tensor_par = 1;
    f.e.data_par = 48;
    f.e.tensor_par_overlap = LLM_TP_OVERLAP_RING; /* needs tensor_par > 1 */
    expect_refusal(&f, FATHOM_E_INVALID_FIELD, "execution.tensor_par_overlap");
    base(&f);
    f.e.tensor_par = 3; /* does not divide hidden 25600 */
    f.e.num_procs = 3 * 64 * 12;
    f.e.tensor_par_net = 1;
    expect_refusal(&f, FATHOM_E_INVALID_FIELD, "execution.tensor_par");
    base(&f);
    f.e.num_procs = 64;
    f.e.tensor_par = 1;
    f.e.pipeline_par = 64;
    f.e.data_par = 1;
    f.e.optimizer_sharding = true; /* needs data_par > 1 */
    expect_refusal(&f, FATHOM_E_INVALID_FIELD, "execution.optimizer_sharding");
}

/* An efficiency curve that stops above 0 does not cover small operations: Calculon asserts,
 * Fathom refuses and names the curve. */
static void test_curve_not_covering(void **state)
{
    (void)state;
    fixture_t f;
    base(&f);
    f.s.mem1.mb_efficiency.num_points = 3; /* drops the [0, 0.3] point */
    expect_refusal(&f, FATHOM_E_INFEASIBLE_EXECUTION, "system.mem1.MB_efficiency");
    base(&f);
    f.s.vector.rate[LLM_DT_FLOAT16].gflops_efficiency.num_points = 2;
    expect_refusal(&f, FATHOM_E_INFEASIBLE_EXECUTION, "system.vector.float16.gflops_efficiency");
}

/* A configuration that does not fit is estimated: fits_memory false, a tier-1 violation. */
static void test_does_not_fit(void **state)
{
    (void)state;
    fixture_t f;
    base(&f);
    f.e.optimizer_sharding = false;
    f.e.activation_recompute = LLM_RECOMPUTE_NONE;
    f.e.tensor_par_comm_type = LLM_TP_COMM_AR;
    llm_result_t r;
    fathom_error_t err;
    assert_int_equal(llm_estimate(&f.m, &f.s, &f.e, &r, &err), 0);
    assert_false(r.fits_memory);
    assert_false(r.fits_tier1);
    assert_true(r.mem_tier1_bytes > r.mem_tier1_capacity_bytes);
    assert_true(r.stats.total_time > 0);
    json_t *resp = codec_llm_result_encode(&f.m, &f.e, &r);
    const json_t *v = json_array_get(json_object_get(resp, "violations"), 0);
    assert_non_null(v);
    assert_int_equal(json_integer_value(json_object_get(v, "tier")), 1);
    assert_true(json_number_value(json_object_get(v, "needed_bytes")) == r.mem_tier1_bytes);
    assert_true(json_number_value(json_object_get(v, "capacity_bytes")) == 80.0 * 1073741824.0);
    printf("  violation: %s\n", json_string_value(json_object_get(v, "message")));
    json_decref(resp);
}

/* ---- codec ---- */

static void expect_decode_error(const char *body_text, fathom_code_t code, const char *field)
{
    json_error_t jerr;
    json_t *body = json_loads(body_text, 0, &jerr);
    if (!body)
        fail_msg("bad test JSON: %s", jerr.text);
    codec_ctx_t ctx = {presets};
    fathom_error_t err;
    fathom_error_clear(&err);
    json_t *n = codec_estimate_endpoint.normalize(body, &ctx, &err);
    json_t *r = n ? codec_estimate_endpoint.evaluate(n, &ctx, &err) : NULL;
    if (r || err.code != code || strcmp(err.field, field) != 0)
        fail_msg("%s: expected %s on %s, got %s on \"%s\": %s", body_text, fathom_code_name(code),
                 field, fathom_code_name(err.code), err.field, err.message);
    json_decref(r);
    json_decref(n);
    json_decref(body);
}

static void test_codec_errors(void **state)
{
    (void)state;
    expect_decode_error("{\"model\":\"megatron-1T\",\"system\":\"a100_80g\","
                        "\"execution\":{\"batch_size\":8,\"activation_recompute\":\"sometimes\"}}",
                        FATHOM_E_INVALID_FIELD, "execution.activation_recompute");
    expect_decode_error("{\"model\":\"megatron-1T\",\"system\":\"a100_80g\","
                        "\"execution\":{\"batch_size\":8,\"tensor_par_comm\":\"ar\"}}",
                        FATHOM_E_INVALID_FIELD, "execution.tensor_par_comm");
    expect_decode_error("{\"model\":\"megatron-1T\",\"system\":\"a100_80g\","
                        "\"execution\":{\"tensor_par\":8}}",
                        FATHOM_E_INVALID_FIELD, "execution.batch_size");
    expect_decode_error("{\"model\":\"megatron-1T\",\"system\":\"no_such_system\","
                        "\"execution\":{\"batch_size\":8}}",
                        FATHOM_E_INVALID_FIELD, "system");
    expect_decode_error("{\"model\":\"megatron-1T\",\"system\":\"a100_80g\","
                        "\"execution\":{\"batch_size\":8,\"num_procs\":12,\"tensor_par\":8}}",
                        FATHOM_E_INVALID_FIELD, "execution.num_procs");
    expect_decode_error("{\"model\":\"megatron-1T\",\"system\":\"a100_80g\","
                        "\"execution\":{\"batch_size\":64,\"tensor_par\":16,\"data_par\":4,"
                        "\"tensor_par_net\":0}}",
                        FATHOM_E_INFEASIBLE_EXECUTION, "execution.tensor_par");
    /* a system object: every member is checked with its path */
    json_t *sys = json_deep_copy(codec_presets_find(presets, PRESET_SYSTEM, "a100_80g"));
    json_t *ops = json_object_get(json_array_get(json_object_get(sys, "networks"), 0), "ops");
    json_object_set_new(ops, "all_reduce", json_string("fast"));
    json_t *body = json_pack("{s:s,s:o,s:{s:i}}", "model", "megatron-1T", "system", sys,
                             "execution", "batch_size", 8);
    char *text = json_dumps(body, 0);
    expect_decode_error(text, FATHOM_E_INVALID_FIELD, "system.networks[0].ops.all_reduce");
    free(text);
    json_decref(body);
    sys = json_deep_copy(codec_presets_find(presets, PRESET_SYSTEM, "a100_80g"));
    json_t *curve = json_object_get(json_object_get(json_object_get(sys, "matrix"), "float16"),
                                    "gflops_efficiency");
    json_array_append_new(curve, json_pack("[i,f]", 64, 0.5)); /* thresholds must decrease */
    body = json_pack("{s:s,s:o,s:{s:i}}", "model", "megatron-1T", "system", sys, "execution",
                     "batch_size", 8);
    text = json_dumps(body, 0);
    expect_decode_error(text, FATHOM_E_INVALID_FIELD, "system.matrix.float16.gflops_efficiency[4]");
    free(text);
    json_decref(body);
}

static void test_codec_defaults(void **state)
{
    (void)state;
    json_error_t jerr;
    json_t *body = json_loads("{\"model\":\"megatron-22B\",\"system\":\"a100_80g\","
                              "\"execution\":{\"batch_size\":8,\"tensor_par\":8}}",
                              0, &jerr);
    codec_ctx_t ctx = {presets};
    fathom_error_t err;
    json_t *n = codec_estimate_endpoint.normalize(body, &ctx, &err);
    assert_non_null(n);
    const json_t *e = json_object_get(n, "execution");
    /* Calculon's 23 fields and Fathom's six, at their Calculon-behaviour defaults */
    assert_int_equal(json_object_size(e), 29);
    assert_int_equal(json_integer_value(json_object_get(e, "context_par")), 1);
    assert_int_equal(json_integer_value(json_object_get(e, "zero_stage")), 0);
    assert_int_equal(json_integer_value(json_object_get(e, "shard_group")), 1);
    assert_string_equal(json_string_value(json_object_get(e, "attention_kernel")), "unfused");
    assert_true(json_is_false(json_object_get(e, "fp8")));
    assert_int_equal(json_integer_value(json_object_get(e, "num_procs")), 8);
    assert_int_equal(json_integer_value(json_object_get(e, "data_par")), 1);
    assert_int_equal(json_integer_value(json_object_get(e, "microbatch_size")), 1);
    assert_string_equal(json_string_value(json_object_get(e, "datatype")), "float16");
    assert_string_equal(json_string_value(json_object_get(e, "activation_recompute")), "full");
    assert_true(json_is_true(json_object_get(e, "training")));
    /* the system preset is resolved to Calculon's object */
    assert_true(json_is_object(json_object_get(n, "system")));
    json_t *r = codec_estimate_endpoint.evaluate(n, &ctx, &err);
    assert_non_null(r);
    json_decref(r);
    json_decref(n);
    json_decref(body);

    /* inference: recompute defaults to none and the checkpoint statistic is 0, not null */
    body = json_loads("{\"model\":\"megatron-22B\",\"system\":\"a100_80g\","
                      "\"execution\":{\"batch_size\":8,\"tensor_par\":8,\"training\":false}}",
                      0, &jerr);
    n = codec_estimate_endpoint.normalize(body, &ctx, &err);
    assert_non_null(n);
    r = codec_estimate_endpoint.evaluate(n, &ctx, &err);
    assert_non_null(r);
    const json_t *cp =
        json_object_get(json_object_get(r, "stats"), "act_checkpoint_size_with_offload");
    assert_true(json_is_number(cp) && json_number_value(cp) == 0);
    json_decref(r);
    json_decref(n);
    json_decref(body);
}

/* Every system preset decodes, passes the core's check and estimates a small run. */
static void test_system_presets(void **state)
{
    (void)state;
    static const char *const names[] = {"a100_80e",    "a100_80g", "a100_sxm",    "h100_80g_nvl8",
                                        "h100_sxm",    "h200",     "h800",        "b200",
                                        "b300",        "gb200_nvl72", "gb300_nvl72", "mi300x"};
    fathom_model_t m;
    load_model("gpt3-175B", &m);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        llm_system_t s;
        load_system(names[i], &s);
        llm_execution_t e = {.num_procs = 1024, .tensor_par = 8, .pipeline_par = 8,
                             .data_par = 16, .tensor_par_net = 0, .pipeline_par_net = 1,
                             .data_par_net = 1, .batch_size = 1024, .microbatch_size = 1,
                             .datatype = LLM_DT_FLOAT16, .fused_activation = true,
                             .activation_recompute = LLM_RECOMPUTE_FULL,
                             .pipeline_interleaving = 1, .optimizer_sharding = true,
                             .tensor_par_comm_type = LLM_TP_COMM_RS_AG, .training = true};
        llm_result_t r;
        fathom_error_t err;
        if (llm_estimate(&m, &s, &e, &r, &err))
            fail_msg("%s: %s: %s", names[i], err.field, err.message);
        printf("  %-14s gpt3-175B 1024 procs: %.3f s/step, %.1f%% total efficiency\n", names[i],
               r.stats.total_time, 100 * r.stats.total_efficiency);
        assert_true(r.stats.total_time > 0 && r.fits_memory);
    }
}

/* Random executions, including absurd ones: never a crash, and every refusal names a field
 * with a 422 code; every estimate has a positive, finite step time. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static int64_t pick(const int64_t *v, size_t n)
{
    return v[rng() % n];
}

/* Mostly sensible parallelism degrees, sometimes absurd ones. */
static int64_t pick_par(void)
{
    static const int64_t common[] = {1, 2, 4, 8};
    static const int64_t odd[] = {0, 3, 16, 64, 1 << 20};
    return rng() % 8 ? pick(common, 4) : pick(odd, 5);
}

static void test_random_executions(void **state)
{
    (void)state;
    static const char *const models[] = {"megatron-126M", "megatron-22B", "gpt3-175B", "palm-540B"};
    static const char *const systems[] = {"a100_80g", "h100_80g_nvl8", "b200"};
    static const int64_t pars[] = {0, 1, 2, 3, 4, 8, 16, 64, 1 << 20};
    static const int64_t sizes[] = {0, 1, 2, 3, 8, 64, 1024, 1 << 20};
    fathom_model_t m[4];
    llm_system_t s[3];
    for (int i = 0; i < 4; i++)
        load_model(models[i], &m[i]);
    for (int i = 0; i < 3; i++)
        load_system(systems[i], &s[i]);
    int ok = 0, refused = 0;
    for (int it = 0; it < 20000; it++) {
        llm_execution_t e;
        memset(&e, 0, sizeof e);
        e.tensor_par = pick_par();
        e.pipeline_par = pick_par();
        e.data_par = pick_par();
        e.num_procs = rng() % 4 ? e.tensor_par * e.pipeline_par * e.data_par : pick(sizes, 8);
        e.tensor_par_net = (int)(rng() % 8 ? 0 : rng() % 3);
        e.pipeline_par_net = (int)(rng() % 4 ? 1 : 0);
        e.data_par_net = 1;
        e.batch_size = (rng() % 4 ? 64 : pick(sizes, 8)) * (e.data_par > 0 ? e.data_par : 1);
        e.microbatch_size = rng() % 4 ? 1 : pick(sizes, 8);
        e.datatype = rng() % 4 ? LLM_DT_FLOAT16 : (llm_datatype_t)(rng() % LLM_DT__COUNT);
        e.fused_activation = rng() % 2;
        e.attention_type = (llm_attention_t)(rng() % 2);
        e.activation_recompute = (llm_recompute_t)(rng() % 3);
        e.pipeline_interleaving = rng() % 2 ? 1 : pick(pars, 9);
        e.optimizer_sharding = rng() % 2;
        e.tensor_par_comm_type = (llm_tp_comm_t)(rng() % 3);
        e.tensor_par_overlap = rng() % 2 ? LLM_TP_OVERLAP_NONE : (llm_tp_overlap_t)(rng() % 3);
        e.seq_par_ag_redo = rng() % 4 == 0;
        e.data_par_overlap = rng() % 2;
        e.weight_offload = rng() % 4 == 0;
        e.activations_offload = rng() % 4 == 0;
        e.optimizer_offload = rng() % 4 == 0;
        e.training = rng() % 5 != 0;
        if (!e.training && rng() % 4)
            e.activation_recompute = LLM_RECOMPUTE_NONE;
        if (e.optimizer_sharding && e.data_par < 2)
            e.optimizer_sharding = rng() % 8 == 0;
        if (e.data_par_overlap && e.data_par < 2)
            e.data_par_overlap = rng() % 8 == 0;
        llm_result_t r;
        fathom_error_t err;
        fathom_error_clear(&err);
        if (llm_estimate(&m[rng() % 4], &s[rng() % 3], &e, &r, &err) == 0) {
            ok++;
            assert_true(isfinite(r.stats.total_time) && r.stats.total_time > 0);
        } else {
            refused++;
            assert_int_equal(fathom_code_http_status(err.code), 422);
            assert_true(err.field[0] != '\0');
        }
    }
    printf("  random executions: %d estimated, %d refused\n", ok, refused);
    assert_true(ok > 100);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_readme_example),
        cmocka_unit_test(test_endpoint_example),
        cmocka_unit_test(test_procs_product),
        cmocka_unit_test(test_batch_not_divisible),
        cmocka_unit_test(test_interleaving),
        cmocka_unit_test(test_network_too_small),
        cmocka_unit_test(test_network_not_filled),
        cmocka_unit_test(test_network_index),
        cmocka_unit_test(test_offload_too_few_blocks),
        cmocka_unit_test(test_datatype_missing),
        cmocka_unit_test(test_inconsistent_options),
        cmocka_unit_test(test_curve_not_covering),
        cmocka_unit_test(test_does_not_fit),
        cmocka_unit_test(test_codec_errors),
        cmocka_unit_test(test_codec_defaults),
        cmocka_unit_test(test_system_presets),
        cmocka_unit_test(test_random_executions),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

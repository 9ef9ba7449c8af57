/* test_llm_measured.c — the measured-runs report's leave-one-source-out calibration
 * (codec/llm_measured.c) on a small constructed set of rows: a row's calibrated prediction must
 * never depend on its own source's measurements, must depend on the other sources' ones, and a
 * GPU no other source measured gets no calibrated prediction. Rows are real rows of
 * presets/validation/measured_runs.json with their source renamed. Also how a user's row is
 * read: which preset its gpu_type names, and the fields it may leave out. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "llm_codec.h"
#include "presets.h"
#include "test_util.h"

static codec_presets_t *presets(void)
{
    static codec_presets_t *p;
    fathom_error_t err;
    if (!p && !(p = codec_presets_load("presets", &err)))
        fail_msg("presets: %s", err.message);
    return p;
}

/* A copy of the measured row `id` with its source set to `source`. */
static json_t *row(const char *id, const char *source)
{
    const json_t *rows = codec_presets_measured(presets());
    for (size_t i = 0; i < json_array_size(rows); i++) {
        const json_t *r = json_array_get(rows, i);
        if (strcmp(json_string_value(json_object_get(r, "id")), id) == 0) {
            json_t *c = json_deep_copy(r);
            json_object_set_new(c, "source", json_string(source));
            return c;
        }
    }
    fail_msg("no measured row %s", id);
    return NULL;
}

/* H100 rows of sources A and B (tokens/s), one H100 row of B publishing TFLOP/s only, and one
 * GB200 row of source C, the only GB200 row. */
static json_t *rows(void)
{
    json_t *a = json_array();
    json_array_append_new(a, row("MB-019", "A"));       /* 0: A, Llama 3 70B TP4 PP8 */
    json_array_append_new(a, row("NEMO2407-034", "A")); /* 1: A, Llama 2 13B PP4 */
    json_array_append_new(a, row("MLM-104", "B"));      /* 2: B, Llama 3 70B */
    json_array_append_new(a, row("NEMO2407-035", "B")); /* 3: B, Llama 2 7B, TP 1 */
    json_array_append_new(a, row("NEMOCP-039", "B"));   /* 4: B, TFLOP/s only */
    json_array_append_new(a, row("MB-006", "C"));       /* 5: C, GB200 */
    return a;
}

static json_t *report(const json_t *r)
{
    fathom_error_t err;
    json_t *rep = codec_llm_measured_report_rows(r, "test rows", presets(), &err);
    if (!rep)
        fail_msg("report: %s", err.message);
    return rep;
}

static const json_t *item(const json_t *rep, size_t i)
{
    return json_array_get(json_object_get(rep, "rows"), i);
}

static double loso_est(const json_t *rep, size_t i)
{
    const json_t *v = json_object_get(json_object_get(item(rep, i), "loso"), "estimated");
    if (!json_is_number(v))
        fail_msg("row %zu has no calibrated estimate", i);
    return json_number_value(v);
}

/* Multiplies the measured value of row i (tokens/s or TFLOP/s) by f. */
static void scale_measured(json_t *r, size_t i, double f)
{
    json_t *row = json_array_get(r, i);
    const char *key = json_is_number(json_object_get(row, "tokens_per_s_per_gpu"))
                          ? "tokens_per_s_per_gpu"
                          : "tflops_per_gpu";
    json_object_set_new(row, key, json_real(json_number_value(json_object_get(row, key)) * f));
}

static void test_loso_never_sees_its_own_source(void **state)
{
    (void)state;
    json_t *r = rows();
    json_t *base = report(r);
    /* A's rows are calibrated on B's three H100 rows, B's on A's two. */
    assert_int_equal(json_integer_value(json_object_get(json_object_get(item(base, 0), "loso"),
                                                        "calibration_rows")),
                     3);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(item(base, 2), "loso"),
                                                        "calibration_rows")),
                     2);
    assert_string_equal(json_string_value(json_object_get(json_object_get(item(base, 2), "loso"),
                                                          "left_out_source")),
                        "B");
    /* the fit's parameters are reported with each calibrated prediction */
    assert_true(json_array_size(json_object_get(json_object_get(item(base, 0), "loso"),
                                                "parameters")) > 0);

    /* Doubling A's measurements changes nothing A's calibrated predictions see ... */
    scale_measured(r, 0, 2.0);
    scale_measured(r, 1, 2.0);
    json_t *a2 = report(r);
    for (size_t i = 0; i < 2; i++) {
        assert_true(loso_est(a2, i) == loso_est(base, i));
        /* ... while the row's own error does move (it is compared with the new value) */
        double e0 = json_number_value(json_object_get(json_object_get(item(base, i), "loso"),
                                                      "error_pct"));
        double e2 = json_number_value(json_object_get(json_object_get(item(a2, i), "loso"),
                                                      "error_pct"));
        assert_close(100.0 + e2, (100.0 + e0) / 2.0, 1e-9);
    }
    /* ... but B, calibrated on A, moves. */
    for (size_t i = 2; i < 5; i++)
        assert_true(fabs(loso_est(a2, i) / loso_est(base, i) - 1.0) > 1e-3);

    /* Halving B's measurements moves A's calibrated predictions, not B's own. */
    scale_measured(r, 0, 0.5);
    scale_measured(r, 1, 0.5);
    for (size_t i = 2; i < 5; i++)
        scale_measured(r, i, 0.5);
    json_t *b2 = report(r);
    for (size_t i = 0; i < 2; i++)
        assert_true(fabs(loso_est(b2, i) / loso_est(base, i) - 1.0) > 1e-3);
    for (size_t i = 2; i < 5; i++)
        assert_true(loso_est(b2, i) == loso_est(base, i));

    /* The built-in estimates never depend on any measurement. */
    for (size_t i = 0; i < 6; i++)
        assert_true(json_number_value(json_object_get(item(b2, i), "estimated")) ==
                    json_number_value(json_object_get(item(base, i), "estimated")));

    /* The only GB200 row: no other source, no calibrated prediction, and a reason. */
    const json_t *c = json_object_get(item(base, 5), "loso");
    assert_null(json_object_get(c, "estimated"));
    assert_int_equal(json_integer_value(json_object_get(c, "calibration_rows")), 0);
    assert_non_null(json_string_value(json_object_get(c, "reason")));

    /* The summary: mean and worst of |error| over the tokens/s rows that have one (0-3), the
     * TFLOP/s row apart (4). */
    const json_t *lo = json_object_get(base, "loso");
    double sum = 0, worst = 0;
    for (size_t i = 0; i < 4; i++) {
        double e = fabs(json_number_value(
            json_object_get(json_object_get(item(base, i), "loso"), "error_pct")));
        sum += e;
        worst = fmax(worst, e);
    }
    assert_int_equal(json_integer_value(json_object_get(lo, "rows_estimated")), 4);
    assert_close(json_number_value(json_object_get(lo, "mean_abs_error_pct")), sum / 4, 1e-12);
    assert_close(json_number_value(json_object_get(lo, "max_abs_error_pct")), worst, 1e-12);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(lo, "tflops_only"), "rows")), 1);
    json_decref(base);
    json_decref(a2);
    json_decref(b2);
    json_decref(r);
}

/* Rows from a user's file (fathom validate --runs): something other than an array is refused
 * naming "runs"; a row that is not an object or whose measured figure is zero, negative or
 * missing is listed unestimated with the reason, and the others are still estimated. */
static void test_user_rows_checked(void **state)
{
    (void)state;
    fathom_error_t err;
    json_t *obj = json_object();
    assert_null(codec_llm_measured_report_rows(obj, "mine.json", presets(), &err));
    assert_string_equal(err.field, "runs");
    json_decref(obj);

    json_t *r = json_array();
    json_array_append_new(r, row("MB-019", "mine"));
    json_t *zero = row("MB-019", "mine"), *negative = row("NEMOCP-039", "mine");
    json_object_set_new(zero, "tokens_per_s_per_gpu", json_integer(0));
    json_object_set_new(negative, "tflops_per_gpu", json_real(-5));
    json_array_append_new(r, zero);
    json_array_append_new(r, negative);
    json_array_append_new(r, json_string("MB-019"));
    json_t *rep = report(r);
    assert_string_equal(json_string_value(json_object_get(rep, "source")), "test rows");
    assert_true(json_is_true(json_object_get(item(rep, 0), "expressible")));
    const char *why[] = {"tokens_per_s_per_gpu must be a positive number",
                         "tflops_per_gpu must be a positive number",
                         "a row is a JSON object in measured_runs.json's format"};
    for (size_t i = 1; i < 4; i++) {
        assert_false(json_is_true(json_object_get(item(rep, i), "expressible")));
        assert_string_equal(json_string_value(json_object_get(item(rep, i), "reason")),
                            why[i - 1]);
    }
    assert_int_equal(json_integer_value(json_object_get(rep, "rows_estimated")), 1);
    assert_int_equal(json_integer_value(json_object_get(rep, "rows_total")), 4);
    json_decref(rep);
    json_decref(r);
}

/* The row of a one-row report. */
static json_t *report_one(json_t *r)
{
    json_t *a = json_array();
    json_array_append_new(a, r);
    json_t *rep = report(a);
    json_decref(a);
    return rep;
}

/* A member the rule reads given with another type refuses the file, naming the row's path and
 * id ("tp": "4" read as absent was TP 1); an integral real is the integer; null is absent; a
 * descriptive member the rule does not read is left alone. */
static void test_user_row_types(void **state)
{
    (void)state;
    const struct {
        const char *key;
        json_t *value;
    } bad[] = {{"tp", json_string("4")},          {"micro_batch", json_string("2")},
               {"hidden", json_real(8192.5)},     {"moe", json_string("false")},
               {"gpu_type", json_integer(100)},   {"tokens_per_s_per_gpu", json_string("1")}};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        json_t *r = json_array(), *b = row("MB-019", "mine");
        json_object_set_new(b, bad[k].key, bad[k].value);
        json_array_append_new(r, row("MB-019", "mine"));
        json_array_append_new(r, b);
        fathom_error_t err;
        assert_null(codec_llm_measured_report_rows(r, "mine.json", presets(), &err));
        char field[64];
        snprintf(field, sizeof field, "runs[1].%s", bad[k].key);
        assert_string_equal(err.field, field);
        assert_non_null(strstr(err.message, "(row MB-019)"));
        json_decref(r);
    }
    /* MB-006 states micro_batch 2: 2.0 is 2 (read as absent it was 1, another estimate); a
     * URL beside the figures changes nothing */
    json_t *plain = report_one(row("MB-006", "mine"));
    json_t *real = row("MB-006", "mine"), *one = row("MB-006", "mine");
    json_object_set_new(real, "micro_batch", json_real(2.0));
    json_object_set_new(real, "url", json_string("https://example.com"));
    json_object_set_new(one, "micro_batch", json_null());
    json_t *as_real = report_one(real), *as_one = report_one(one);
    const double want = json_number_value(json_object_get(item(plain, 0), "estimated"));
    assert_true(want > 0);
    assert_true(json_number_value(json_object_get(item(as_real, 0), "estimated")) == want);
    assert_true(json_number_value(json_object_get(item(as_one, 0), "estimated")) != want);
    json_decref(plain);
    json_decref(as_real);
    json_decref(as_one);
}


/* A row's GPU is named anywhere in gpu_type, as a word in any case; the H100 by its form factor
 * and the A100 by its memory. A figure the text states that is not the part's (other memory, a
 * power below the board's, another bandwidth placed by its clause) makes a GPU variant, named by
 * the preset and those figures; a part no preset describes (GH200, MI325X, the A100 PCIe), a
 * lower power without a figure, or a bandwidth no clause places is listed with the reason. */
static void test_gpu_names_pick_presets(void **state)
{
    (void)state;
    static const struct {
        const char *gpu, *preset, *reason;
    } cases[] = {
        {"H100-SXM5-80GB (DGX-H100)", "h100_sxm", NULL},
        {"nvidia h100 80gb hbm3", "h100_sxm", NULL},
        {"NVIDIA H200 SXM 141GB", "h200", NULL},
        {"H800-SXM5-80GB", "h800", NULL},
        {"B200 (DGX-B200)", "b200", NULL},
        {"GB200 (DGX-GB200, NVL72)", "gb200_nvl72", NULL},
        {"DGX-GB300", "gb300_nvl72", NULL},
        {"B300 (DGX-B300)", "b300", NULL},
        {"AMD Instinct MI300X", "mi300x", NULL},
        {"A100-SXM4-80GB", "a100_sxm", NULL},
        {"NVIDIA A100 SXM4 80GB, 400 W", "a100_sxm", NULL},
        {"GH200", NULL, "no preset for this GPU"},
        {"AMD MI325X", NULL, "no preset for this GPU"},
        {"A100 PCIe 40GB", NULL, "no preset for this GPU"},
        {"NVIDIA B200 180GB HBM3e, 1000 W", "b200", NULL},
        {"H100 SXM 80 GB at 700W", "h100_sxm", NULL},
        {"A100-SXM4-40GB", "a100_sxm_40g", NULL},
        {"A100 40 GB", "a100_sxm_40g", NULL},
        /* the HBM2e part: 2.4 TB/s and 500 W where the text states none (hbm2e_h100) */
        {"H100 (Grand Teton, 96GB HBM2e, 500 W)", "h100_sxm (96 GiB, 2400 GB/s, 500 W)", NULL},
        {"H100 SXM 96GB HBM2e (2.4 TB/s), 500W power limit (Grand Teton), 400 Gb/s/GPU RDMA",
         "h100_sxm (96 GiB, 2400 GB/s, 500 W)", NULL},
        {"H100 SXM, 500W power limit", "h100_sxm (500 W)", NULL},
        {"H100 SXM 95GB HBM2e (lower TDP)", "h100_sxm (95 GiB, 2400 GB/s, 500 W)", NULL},
        {"H100 SXM 80GB (lower TDP)", NULL, "without saying at what power"},
        {"H100 SXM, 3.35 TB/s", NULL, "a bandwidth (3.35 TB/s) the rule cannot place"},
        {"H800 (NVLink 160 GB/s, 400 Gb/s IB)", "h800 (160 GB/s NVLink)", NULL},
        {"H100 SXM, 200 Gb/s InfiniBand per GPU", "h100_sxm (25 GB/s NIC)", NULL},
        {"GB200 NVL72 at 1.2 kW", "gb200_nvl72", NULL},
        {"GB200 capped at 1.0 kW", "gb200_nvl72 (1000 W)", NULL},
        {"H100 PCIe", "h100_pcie", NULL},
        {"H100 NVL", "h100_nvl", NULL},
        {"NVIDIA H20 96GB", "h20", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *r = row("MB-019", "mine");
        json_object_set_new(r, "gpu_type", json_string(cases[i].gpu));
        json_object_set_new(r, "precision", json_string("BF16")); /* the A100 has no FP8 */
        json_t *rep = report_one(r);
        const json_t *it = item(rep, 0);
        if (cases[i].preset) {
            if (!json_is_true(json_object_get(it, "expressible")))
                fail_msg("%s: %s", cases[i].gpu, json_string_value(json_object_get(it, "reason")));
            assert_string_equal(json_string_value(json_object_get(it, "system")), cases[i].preset);
        } else {
            assert_false(json_is_true(json_object_get(it, "expressible")));
            const char *why = json_string_value(json_object_get(it, "reason"));
            assert_non_null(why);
            assert_non_null(strstr(why, cases[i].reason));
            assert_non_null(strstr(why, cases[i].gpu));
        }
        json_decref(rep);
    }
}

/* Fields a row may leave out: the step time stands for tokens/s (GBS·seq / (step·GPUs): MB-019's
 * 10.227 s is its published 1,602 tokens/s/GPU), DP is GPUs / (TP·PP·CP), and fsdp_enabled
 * without a group shards over all of DP·CP. Each gives the estimate of the full row. */
static void test_rows_may_leave_fields_out(void **state)
{
    (void)state;
    json_t *full = report_one(row("MB-019", "mine"));
    const double est = json_number_value(json_object_get(item(full, 0), "estimated"));

    json_t *r = row("MB-019", "mine");
    json_object_set_new(r, "tokens_per_s_per_gpu", json_null());
    json_t *rep = report_one(r);
    const json_t *it = item(rep, 0);
    assert_string_equal(json_string_value(json_object_get(it, "compared")), "tokens_per_s_per_gpu");
    assert_string_equal(json_string_value(json_object_get(it, "measured_from")), "step_time_s");
    assert_float_equal(json_number_value(json_object_get(it, "measured")), 1602.0, 0.5);
    assert_float_equal(json_number_value(json_object_get(it, "estimated")), est, 1e-9);
    assert_null(json_object_get(item(full, 0), "measured_from"));
    json_decref(rep);

    r = row("MB-019", "mine"); /* 64 GPUs, TP 4, PP 8: DP 2 */
    json_object_set_new(r, "dp", json_null());
    rep = report_one(r);
    assert_int_equal(json_integer_value(json_object_get(
                         json_object_get(item(rep, 0), "layout"), "dp")), 2);
    assert_float_equal(json_number_value(json_object_get(item(rep, 0), "estimated")), est, 1e-9);
    json_decref(rep);
    json_decref(full);

    /* MB-018: Megatron-FSDP over its 8 GPUs (fsdp 8) */
    full = report_one(row("MB-018", "mine"));
    r = row("MB-018", "mine");
    json_object_set_new(r, "fsdp", json_null());
    json_object_set_new(r, "fsdp_enabled", json_true());
    rep = report_one(r);
    assert_float_equal(json_number_value(json_object_get(item(rep, 0), "estimated")),
                       json_number_value(json_object_get(item(full, 0), "estimated")), 1e-9);
    const json_t *exec =
        json_object_get(json_object_get(item(rep, 0), "estimate_request"), "execution");
    assert_int_equal(json_integer_value(json_object_get(exec, "zero_stage")), 3);
    json_decref(rep);
    json_decref(full);
}

/* GPT-style rows: learned positions and linear biases when the row says so, else RoPE and none. */
static void test_row_positions_and_biases(void **state)
{
    (void)state;
    json_t *r = row("NEMO2407-035", "mine");
    json_object_set_new(r, "pos_emb", json_string("learned absolute"));
    json_object_set_new(r, "bias", json_true());
    json_t *rep = report_one(r);
    const json_t *m =
        json_object_get(json_object_get(item(rep, 0), "estimate_request"), "model");
    assert_string_equal(json_string_value(json_object_get(m, "position_embedding")), "learned");
    assert_true(json_is_true(json_object_get(m, "bias")));
    json_decref(rep);
    rep = report_one(row("NEMO2407-035", "mine"));
    m = json_object_get(json_object_get(item(rep, 0), "estimate_request"), "model");
    assert_string_equal(json_string_value(json_object_get(m, "position_embedding")), "rope");
    assert_false(json_is_true(json_object_get(m, "bias")));
    json_decref(rep);
}

/* The precision and MLP texts are read in any case: "mxfp8" is FP8, "bf16" is not; "swiglu" is
 * the gated MLP with RMSNorm, "GeLU" the plain one with LayerNorm. */
static void test_row_texts_any_case(void **state)
{
    (void)state;
    static const struct {
        const char *precision, *mlp;
        bool fp8, gated;
    } cases[] = {{"mxfp8", "swiglu", true, true},
                 {"FP8 (current scaling)", "SwiGLU", true, true},
                 {"bf16", "GeLU", false, false}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *r = row("NEMO2407-035", "mine");
        json_object_set_new(r, "precision", json_string(cases[i].precision));
        json_object_set_new(r, "mlp", json_string(cases[i].mlp));
        json_t *rep = report_one(r);
        const json_t *req = json_object_get(item(rep, 0), "estimate_request");
        const json_t *m = json_object_get(req, "model");
        const json_t *e = json_object_get(req, "execution");
        assert_int_equal(json_is_true(json_object_get(e, "fp8")), cases[i].fp8);
        /* a dense row's request leaves the recipe out (test_moe_fp8_recipe) */
        assert_null(json_object_get(e, "fp8_recipe"));
        assert_int_equal(json_is_true(json_object_get(m, "gated_mlp")), cases[i].gated);
        assert_string_equal(json_string_value(json_object_get(m, "norm")),
                            cases[i].gated ? "rmsnorm" : "layernorm");
        json_decref(rep);
    }
}

/* A Megatron MoE row's FP8 recipe is the one its precision names (mxfp8, blockwise, delayed),
 * else left to the default, current scaling; BF16 states none. */
static void test_moe_fp8_recipe(void **state)
{
    (void)state;
    static const struct {
        const char *precision, *recipe;
    } cases[] = {{"MXFP8", "mxfp8"},
                 {"FP8 (Blockwise)", "blockwise"},
                 {"FP8 delayed scaling", "delayed"},
                 {"FP8-CS (current scaling)", NULL},
                 {"BF16", NULL}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *r = row("MB-013", "mine");
        json_object_set_new(r, "precision", json_string(cases[i].precision));
        json_t *rep = report_one(r);
        const json_t *e =
            json_object_get(json_object_get(item(rep, 0), "estimate_request"), "execution");
        const char *recipe = json_string_value(json_object_get(e, "fp8_recipe"));
        if (cases[i].recipe)
            assert_string_equal(recipe, cases[i].recipe);
        else
            assert_null(recipe);
        json_decref(rep);
    }
}

/* One MoE block in N from the moe_layers text; a row that says nothing has every block MoE. */
static void test_moe_every_from_text(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        long long every;
    } cases[] = {{"all 48 layers MoE", 1},
                 {"every other layer MoE (alternating dense / MoE)", 2},
                 {"Every other layer", 2},
                 {"interleaved: dense, MoE, dense, MoE", 2},
                 {"every 4th layer MoE", 4}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *r = row("MB-013", "mine");
        json_object_set_new(r, "moe_layers", json_string(cases[i].text));
        json_t *rep = report_one(r);
        const json_t *moe = json_object_get(
            json_object_get(json_object_get(item(rep, 0), "estimate_request"), "model"), "moe");
        assert_int_equal(json_integer_value(json_object_get(moe, "every")), cases[i].every);
        json_decref(rep);
    }
}

/* A recompute the row states is estimated as stated (recompute_from "row"); text the rule does
 * not read, or none, leaves the least that fits (recompute_from "rule"). MB-019 (Llama 3 70B,
 * TP 4, PP 8, VP 5: 2 blocks per chunk) fits without recompute. */
static void test_stated_recompute(void **state)
{
    (void)state;
    static const struct {
        const char *text, *act, *from, *module;
        long long blocks;
    } cases[] = {
        {NULL, "none", "rule", NULL, 0},
        {"full (block, 1 layer)", "full", "row", NULL, 1},
        {"full", "full", "row", NULL, 0},
        {"Full (uniform)", "full", "row", NULL, 0},
        {"selective", "attn_only", "row", NULL, 0},
        {"selective: core_attn, layernorm", "attn_only", "row", "layernorm", 0},
        {"selective: layernorm", "none", "row", "layernorm", 0},
        {"none (per the recipe)", "none", "row", NULL, 0},
        {"selective: mamba", "none", "rule", NULL, 0},
        {"fully sharded", "none", "rule", NULL, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *r = row("MB-019", "mine");
        json_object_set_new(r, "recompute", cases[i].text ? json_string(cases[i].text) : json_null());
        json_t *rep = report_one(r);
        const json_t *it = item(rep, 0);
        assert_true(json_is_true(json_object_get(it, "expressible")));
        assert_string_equal(json_string_value(json_object_get(it, "recompute")), cases[i].act);
        assert_string_equal(json_string_value(json_object_get(it, "recompute_from")), cases[i].from);
        assert_int_equal(json_integer_value(json_object_get(it, "recompute_blocks")), cases[i].blocks);
        const json_t *mods = json_object_get(it, "recompute_modules");
        if (cases[i].module) {
            assert_int_equal(json_array_size(mods), 1);
            assert_string_equal(json_string_value(json_array_get(mods, 0)), cases[i].module);
        } else {
            assert_null(mods);
        }
        json_decref(rep);
    }
}

/* Rows with one estimate request are grouped, whatever their id, source or measurement; a row
 * that states another microbatch is not. Worked by hand: measurements m and 1.5·m give
 * f = (1.5 − 1)/(1.5 + 1) = 20 %; the estimate 2·1.5·m²/(2.5·m) = 1.2·m is +20 % off m and −20 %
 * off 1.5·m. */
static void test_indistinguishable_rows(void **state)
{
    (void)state;
    json_t *r = json_array();
    json_array_append_new(r, row("MB-019", "A"));       /* 0: Llama 3 70B on 64 H100s */
    json_array_append_new(r, row("NEMO2407-035", "A")); /* 1: another model */
    json_t *again = row("MB-019", "B");                 /* 2: MB-019 measured 1.5 times faster */
    json_object_set_new(again, "id", json_string("AGAIN"));
    json_array_append_new(r, again);
    json_t *other_mbs = row("MB-019", "C");             /* 3: the same with microbatch 2 */
    json_object_set_new(other_mbs, "id", json_string("MBS2"));
    json_object_set_new(other_mbs, "micro_batch", json_integer(2));
    json_object_del(other_mbs, "grad_accum");
    json_array_append_new(r, other_mbs);
    scale_measured(r, 2, 1.5);

    json_t *rep = report(r);
    const double m = json_number_value(json_object_get(item(rep, 0), "measured"));
    const json_t *ind = json_object_get(rep, "indistinguishable");
    const json_t *groups = json_object_get(ind, "groups");
    assert_int_equal(json_array_size(groups), 1);
    const json_t *g = json_array_get(groups, 0), *ids = json_object_get(g, "ids");
    assert_int_equal(json_array_size(ids), 2);
    assert_string_equal(json_string_value(json_array_get(ids, 0)), "MB-019");
    assert_string_equal(json_string_value(json_array_get(ids, 1)), "AGAIN");
    assert_true(fabs(json_number_value(json_object_get(g, "measured_min")) - m) < 1e-9);
    assert_true(fabs(json_number_value(json_object_get(g, "measured_max")) - 1.5 * m) < 1e-9);
    assert_true(fabs(json_number_value(json_object_get(g, "error_floor_pct")) - 20.0) < 1e-9);
    assert_true(fabs(json_number_value(json_object_get(ind, "error_floor_pct")) - 20.0) < 1e-9);
    /* the two rows get one estimate: the floor is a floor for Fathom too */
    const double e0 = json_number_value(json_object_get(item(rep, 0), "estimated"));
    assert_true(e0 == json_number_value(json_object_get(item(rep, 2), "estimated")));
    assert_true(e0 != json_number_value(json_object_get(item(rep, 3), "estimated")));
    char *text = codec_llm_measured_text(rep);
    assert_non_null(strstr(text, "1 group; the widest, MB-019, AGAIN"));
    assert_non_null(strstr(text, "within 20.0% of all of them"));
    free(text);
    json_decref(rep);

    /* one row alone: nothing to group */
    json_t *one = json_array();
    json_array_append(one, json_array_get(r, 0));
    rep = report(one);
    ind = json_object_get(rep, "indistinguishable");
    assert_int_equal(json_array_size(json_object_get(ind, "groups")), 0);
    assert_true(json_number_value(json_object_get(ind, "error_floor_pct")) == 0.0);
    json_decref(rep);
    json_decref(one);
    json_decref(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loso_never_sees_its_own_source),
        cmocka_unit_test(test_user_rows_checked),
        cmocka_unit_test(test_gpu_names_pick_presets),
        cmocka_unit_test(test_rows_may_leave_fields_out),
        cmocka_unit_test(test_row_positions_and_biases),
        cmocka_unit_test(test_stated_recompute),
        cmocka_unit_test(test_moe_every_from_text),
        cmocka_unit_test(test_row_texts_any_case),
        cmocka_unit_test(test_moe_fp8_recipe),
        cmocka_unit_test(test_indistinguishable_rows),
        cmocka_unit_test(test_user_row_types),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

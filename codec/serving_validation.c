/* serving_validation.c — the serving model against published, measured serving throughput
 * (presets/validation/inference_runs.json, INFERENCE.md beside it): each row is one TensorRT-LLM
 * benchmark cell (model, GPU, layout, precision, input/output lengths, output tokens/s per GPU),
 * estimated with built-in presets and the benchmark's documented settings, nothing fitted:
 *   - trtllm-bench throughput rows: the saturation point (every request queued at once), the
 *     tool's max_batch_size and max_num_tokens heuristic (serving_trtllm_bench_settings), the KV
 *     pool at 0.95 of free memory (the page: "--kv_cache_free_gpu_mem_fraction 0.95"), chunked
 *     prefill off (trtllm-bench's default);
 *   - the 0.14 Triton serving rows: arrivals at the row's request rate (QPS; "INF": saturation),
 *     the engine's defaults.
 * Checkpoint formats: FP4 is NVFP4, FP8 is FP8, FP16/BF16 16-bit; the KV cache is the row's
 * when it states one, else FP8 for NVIDIA's ModelOpt FP8/NVFP4 checkpoints (their
 * hf_quant_config.json carries kv_cache_quant_algo FP8, which the engine's "auto" follows) and
 * 16-bit for 16-bit weights and OpenAI's GPT-OSS checkpoint (no KV quantization).
 * Layouts: tp, pp, ep (absent: 1, TensorRT-LLM's default of splitting experts by TP), and
 * dp_attention (absent: 1; but a mixture-of-experts row of a TensorRT-LLM 1.x page that leaves it
 * unstated ran the page's MoE command, whose llm_options enable attention DP: "For MoE models:
 * ... enable_attention_dp: true", perf-overview.md "Running the Benchmark" — its TP degree is the
 * attention-DP degree and the experts stay split by TP, TensorRT-LLM's default mapping). The
 * rates themselves rule out plain TP where the link is PCIe: Qwen3-30B-A3B at TP8 on RTX PRO
 * 6000 (39,490 output tokens/s at 128/128) would need two BF16 all-reduces of h = 2,048 values
 * per token and block, 78,980 tokens/s · 48 blocks · 2 · 4,096 B = 31 GB/s of data, 54 GB/s a
 * GPU on a ring (x 2·7/8): the whole 64 GB/s PCIe Gen5 link, with no time left to compute.
 * Leave-one-source-out: for each revision of the page, each GPU's rows of the other revisions
 * give a correction (the geometric mean of measured/estimated), applied to the left-out
 * revision's rows of that GPU: how well a calibration on other software releases would carry. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_read.h"
#include "model_codec.h"
#include "serving_codec.h"
#include "text.h"

static const struct {
    const char *row, *preset;
} models[] = {
    {"DeepSeek-R1-0528", "deepseek-v3"},   {"DeepSeek-R1", "deepseek-v3"},
    {"GPT-OSS-120B", "gpt-oss-120B"},
    {"GPT-OSS-20B", "gpt-oss-20B"},        {"Llama-3.1-405B", "llama3.1-405B"},
    {"Llama-3.1-70B", "llama3-70B"},       {"Llama-3.3-70B", "llama3-70B"},
    {"Llama-3.1-8B", "llama3-8B"},         {"Llama-4-Maverick", "llama4-maverick"},
    {"Llama-4-Scout", "llama4-scout"},     {"Mistral-7B", "mistral-7B-v0.3"},
    {"Mixtral-8x22B", "mixtral-8x22B"},    {"Mixtral-8x7B", "mixtral-8x7B"},
    {"Qwen3-235B-A22B", "qwen3-235B-A22B"}, {"Qwen3-30B-A3B", "qwen3-30B-A3B"},
};
static const struct {
    const char *row, *preset;
} gpus[] = {
    {"A100", "a100_sxm"}, {"B200", "b200"},       {"B300", "b300"},   {"GB200", "gb200_nvl72"},
    {"GB300", "gb300_nvl72"}, {"GH200", "gh200"}, {"H100", "h100_sxm"}, {"H200", "h200"},
    {"L40S", "l40s"},     {"RTX6000PRO", "rtx6000_pro"},
};

/* The members prepare() reads, by type (null stands for absent); the others are descriptive
 * (notes, derived_fields, published_metric, ...) and left alone, the format being open to what
 * a source states. */
static const char *const row_ints[] = {"tp", "pp", "ep", "dp_attention", "isl", "osl",
                                       "num_requests", "max_batch_size", "max_num_tokens", NULL};
static const char *const row_strings[] = {"id", "model", "gpu", "model_preset", "system_preset",
                                          "precision_weights", "precision_kv", "serving_engine",
                                          "doc_revision", "executor", "request_rate_qps", NULL};
static const char *const row_numbers[] = {"output_tokens_per_s_per_gpu", "concurrency",
                                          "kv_cache_free_gpu_mem_fraction", NULL};
static const jr_row_types_t row_types = {row_ints, row_strings, NULL, row_numbers};

static double real(const json_t *row, const char *key, double dflt)
{
    const json_t *v = json_object_get(row, key);
    return json_is_number(v) ? json_number_value(v) : dflt;
}

static const char *lookup(const char *name, bool model)
{
    if (model) {
        for (size_t i = 0; i < sizeof models / sizeof *models; i++)
            if (strcmp(models[i].row, name) == 0)
                return models[i].preset;
    } else {
        for (size_t i = 0; i < sizeof gpus / sizeof *gpus; i++)
            if (strcmp(gpus[i].row, name) == 0)
                return gpus[i].preset;
    }
    return NULL;
}

/* trtllm-bench's dataset size for a fixed input/output length pair, as the performance-overview
 * pages list it ("Number of Requests"). The 1.1 page (commit 585c756) keeps a 1000/1000 row in
 * every table but drops that line from its request table; the 1.0 page
 * (NVIDIA/TensorRT-LLM@00f3768, docs/source/performance/perf-overview.md) lists it: 3,000,
 * as for 1024/1024. A row without a count takes its pair's count from these two tables;
 * 0 (a pair neither lists): the steady state. */
double serving_validation_bench_requests(double isl, double osl)
{
    static const struct {
        double isl, osl, n;
    } listed[] = {
        {128, 128, 30000},  {128, 2048, 3000},   {128, 4096, 1500},  {500, 2000, 3000},
        {1000, 1000, 3000}, {1000, 2000, 1500},  {1024, 1024, 3000}, {1024, 8192, 1500},
        {1024, 32768, 1000}, {2048, 128, 3000},  {2048, 2048, 1500}, {5000, 500, 1500},
        {8192, 1024, 1500}, {20000, 2000, 1000}, {32768, 1024, 1000},
    };
    for (size_t i = 0; i < sizeof listed / sizeof *listed; i++)
        if (listed[i].isl == isl && listed[i].osl == osl)
            return listed[i].n;
    return 0;
}

static int dtype_of(const char *label, serving_dtype_t *out)
{
    if (strcmp(label, "FP4") == 0)
        *out = SERVING_DT_FP4;
    else if (strcmp(label, "FP8") == 0)
        *out = SERVING_DT_FP8;
    else if (strcmp(label, "BF16") == 0 || strcmp(label, "FP16") == 0)
        *out = SERVING_DT_BF16;
    else
        return -1;
    return 0;
}

/* One row: the request, or why it cannot be made. */
typedef struct {
    fathom_model_t model;
    serving_system_t system;
    serving_request_t req;
    const char *reason;
    double measured;
    bool moe;
} vrow_t;

/* The row's model and system presets (the row may name them: "model_preset", "system_preset")
 * and what it is compared on; -1 with v->reason when it cannot be estimated. */
static int row_presets(const json_t *row, const codec_presets_t *presets, vrow_t *v)
{
    fathom_error_t err;
    const char *mp = *jr_text(row, "model_preset") ? jr_text(row, "model_preset")
                                               : lookup(jr_text(row, "model"), true);
    const char *sp = *jr_text(row, "system_preset") ? jr_text(row, "system_preset")
                                                : lookup(jr_text(row, "gpu"), false);
    v->measured = real(row, "output_tokens_per_s_per_gpu", 0);
    if (!(v->measured > 0)) {
        v->reason = "no positive output_tokens_per_s_per_gpu";
        return -1;
    }
    if (!mp || !sp) {
        v->reason = mp ? "no system preset for the row's GPU" : "no model preset for the row's model";
        return -1;
    }
    json_t *name = json_string(mp), *sname = json_string(sp);
    const int bad = !name || !sname || codec_model_decode(name, "model", presets, &v->model, &err) ||
                    codec_serving_system_decode(sname, "system", presets, &v->system, &err);
    json_decref(name);
    json_decref(sname);
    if (bad) {
        v->reason = "preset missing from the registry";
        return -1;
    }
    v->moe = v->model.moe.num_experts > 0;
    return 0;
}

static void row_layout(const json_t *row, vrow_t *v)
{
    serving_layout_t *l = &v->req.layout;
    l->tensor_par = (int64_t)real(row, "tp", 1);
    l->pipeline_par = (int64_t)real(row, "pp", 1);
    l->expert_par = (int64_t)real(row, "ep", 1);
    l->attention_data_par = (int64_t)real(row, "dp_attention", 1);
    const json_t *dpa = json_object_get(row, "dp_attention");
    if (v->moe && (!dpa || json_is_null(dpa)) &&
        strncmp(jr_text(row, "doc_revision"), "1.", 2) == 0) {
        /* the page's MoE options: attention DP over the TP ranks (the header above) */
        l->attention_data_par = l->tensor_par;
        l->tensor_par = 1;
    }
}

/* The weights' and the KV cache's formats; -1 with v->reason for one the model does not know. */
static int row_formats(const json_t *row, vrow_t *v)
{
    serving_request_t *r = &v->req;
    if (dtype_of(jr_text(row, "precision_weights"), &r->weights)) {
        v->reason = "unknown precision_weights";
        return -1;
    }
    const char *kv = jr_text(row, "precision_kv");
    const bool oss = v->model.checkpoint_weights == MODEL_WEIGHTS_MXFP4;
    if (*kv ? dtype_of(kv, &r->kv) != 0 : false) {
        v->reason = "unknown precision_kv";
        return -1;
    }
    if (!*kv)
        r->kv = r->weights == SERVING_DT_BF16 || oss ? SERVING_DT_BF16 : SERVING_DT_FP8;
    /* gpt-oss (the model's checkpoint_weights mxfp4) is served from OpenAI's checkpoint whatever
     * the column's label: MXFP4 experts, the rest BF16 (TensorRT-LLM
     * examples/models/core/gpt_oss/README.md) */
    if (oss)
        r->weights = SERVING_DT_MXFP4;
    return 0;
}

/* The engine (TensorRT-LLM unless the row names another) and its executor; -1 with v->reason
 * for an engine the model does not know. */
static int row_engine(const json_t *row, vrow_t *v)
{
    serving_request_t *r = &v->req;
    r->engine = SERVING_ENGINE_TRTLLM;
    const char *eng = jr_text(row, "serving_engine");
    if (*eng) {
        int k = 0;
        while (serving_engine_names[k] && strcmp(serving_engine_names[k], eng) != 0)
            k++;
        if (!serving_engine_names[k]) {
            v->reason = "unknown serving_engine";
            return -1;
        }
        r->engine = (serving_engine_t)k;
    }
    /* the 0.17 tables ran TensorRT engines and the 0.14 ones Triton's TensorRT-LLM backend:
     * the C++ executor; the 1.x tables the PyTorch backend; a row may say ("executor") */
    const char *rev = jr_text(row, "doc_revision"), *ex = jr_text(row, "executor");
    r->cpp_executor = *ex ? strcmp(ex, "cpp") == 0 : strncmp(rev, "0.", 2) == 0;
    return 0;
}

/* How the benchmark loaded the engine: Triton at a request rate, a fixed concurrency, or
 * trtllm-bench's offline batch with its own settings. */
static void row_load(const json_t *row, vrow_t *v)
{
    serving_request_t *r = &v->req;
    const bool oss = v->model.checkpoint_weights == MODEL_WEIGHTS_MXFP4;
    r->chunked_prefill = 0;
    if (strcmp(jr_text(row, "doc_revision"), "0.14-serving") == 0) {
        /* Triton at a request rate; "INF": unthrottled */
        const char *q = jr_text(row, "request_rate_qps");
        r->requests_per_s = *q && strcmp(q, "INF") != 0 ? strtod(q, NULL) : 0;
        /* the table's 500 requests (its heading), sent at that rate or, unthrottled, at once */
        r->num_requests = 500;
        r->chunked_prefill = -1;
    } else if (real(row, "concurrency", 0) > 0) {
        /* a serving benchmark at a fixed number of requests in flight: the engine's defaults */
        r->concurrency = real(row, "concurrency", 0);
        r->chunked_prefill = -1;
    } else {
        r->kv_memory_fraction = real(row, "kv_cache_free_gpu_mem_fraction", 0.95);
        r->num_requests = real(row, "num_requests", 0) > 0
                              ? real(row, "num_requests", 0)
                              : serving_validation_bench_requests(r->input_tokens, r->output_tokens);
        /* gpt-oss is served from OpenAI's checkpoint (MXFP4 experts), the rest from NVIDIA's
         * ModelOpt ones (the page's checkpoint lists); a row that gives the tool's
         * --max_batch_size and --max_num_tokens keeps them */
        serving_trtllm_bench_settings(&v->model, &v->system, r,
                                      oss ? SERVING_CKPT_MXFP4_EXPERTS : SERVING_CKPT_MODELOPT,
                                      &r->max_batch_size, &r->max_batch_tokens);
        if (real(row, "max_batch_size", 0) >= 1 && real(row, "max_num_tokens", 0) >= 1) {
            r->max_batch_size = (int64_t)real(row, "max_batch_size", 0);
            r->max_batch_tokens = (int64_t)real(row, "max_num_tokens", 0);
        }
    }
}

static void prepare(const json_t *row, const codec_presets_t *presets, vrow_t *v)
{
    memset(v, 0, sizeof *v);
    if (row_presets(row, presets, v))
        return;
    row_layout(row, v);
    if (row_formats(row, v))
        return;
    v->req.input_tokens = real(row, "isl", 0);
    v->req.output_tokens = real(row, "osl", 0);
    if (row_engine(row, v))
        return;
    row_load(row, v);
}

typedef struct {
    double sum, worst;
    int n;
} errs_t;

static void errs_add(errs_t *e, double pct)
{
    e->sum += fabs(pct);
    e->worst = fmax(e->worst, fabs(pct));
    e->n++;
}

static json_t *errs_encode(const errs_t *e)
{
    return json_pack("{s:i,s:f,s:f}", "rows", e->n, "mean_abs_error_pct",
                     e->n ? e->sum / e->n : 0.0, "max_abs_error_pct", e->worst);
}

static json_t *layout_of(const serving_request_t *r)
{
    return json_pack("{s:I,s:I,s:I,s:I}", "tp", (json_int_t)r->layout.tensor_par, "pp",
                     (json_int_t)r->layout.pipeline_par, "ep", (json_int_t)r->layout.expert_par,
                     "dp_attention", (json_int_t)r->layout.attention_data_par);
}

/* Leave one revision out: per GPU, the geometric mean of measured/estimated over the other
 * revisions' rows corrects the left-out rows. */
static json_t *loso(const json_t *rows, const vrow_t *v, const double *est, size_t n,
                    json_t *out_rows)
{
    errs_t all = {0};
    for (size_t i = 0; i < n; i++) {
        if (v[i].reason || !(est[i] > 0))
            continue;
        const json_t *ri = json_array_get(rows, i);
        const char *src = jr_text(ri, "doc_revision"), *gpu = jr_text(ri, "gpu");
        double logs = 0;
        int k = 0;
        for (size_t j = 0; j < n; j++) {
            if (v[j].reason || !(est[j] > 0))
                continue;
            const json_t *rj = json_array_get(rows, j);
            if (strcmp(jr_text(rj, "gpu"), gpu) != 0 ||
                strcmp(jr_text(rj, "doc_revision"), src) == 0)
                continue;
            logs += log(v[j].measured / est[j]);
            k++;
        }
        json_t *o = json_array_get(out_rows, i);
        if (!k) {
            json_object_set_new(o, "loso", json_pack("{s:s,s:s}", "left_out_source", src,
                                                     "reason", "no other revision has this GPU"));
            continue;
        }
        const double e = est[i] * exp(logs / k);
        const double pct = 100.0 * (e - v[i].measured) / v[i].measured;
        errs_add(&all, pct);
        json_object_set_new(o, "loso",
                            json_pack("{s:s,s:i,s:f,s:f}", "left_out_source", src,
                                      "calibration_rows", k, "estimated", e, "error_pct", pct));
    }
    return errs_encode(&all);
}

/* One more row of page revision `rev` off by pct: its running sum, worst and count. */
static void count_by_source(json_t *by_source, const char *rev, double pct)
{
    json_t *bs = json_object_get(by_source, rev);
    if (!bs) {
        bs = json_pack("{s:f,s:f,s:i}", "sum", 0.0, "worst", 0.0, "n", 0);
        json_object_set_new(by_source, rev, bs);
    }
    json_object_set_new(bs, "sum", json_real(real(bs, "sum", 0) + fabs(pct)));
    json_object_set_new(bs, "worst", json_real(fmax(real(bs, "worst", 0), fabs(pct))));
    json_object_set_new(bs, "n", json_integer(json_integer_value(json_object_get(bs, "n")) + 1));
}

/* [{source, rows, mean_abs_error_pct, max_abs_error_pct}] from count_by_source's sums. */
static json_t *sources_encode(const json_t *by_source)
{
    json_t *sources = json_array();
    const char *key;
    json_t *bs;
    json_object_foreach((json_t *)by_source, key, bs) {
        const double cnt = real(bs, "n", 0);
        json_array_append_new(sources, json_pack("{s:s,s:f,s:f,s:f}", "source", key, "rows", cnt,
                                                 "mean_abs_error_pct", real(bs, "sum", 0) / cnt,
                                                 "max_abs_error_pct", real(bs, "worst", 0)));
    }
    return sources;
}

/* An estimated row's figures: what was asked, measured against estimated, the operating point
 * and each step's breakdown (where the row's time goes). NULL when memory ran out. */
static json_t *row_figures(const vrow_t *v, const serving_result_t *res, double est, double pct)
{
    json_t *fig = json_pack(
        "{s:o,s:s,s:s,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:s}", "layout", layout_of(&v->req),
        "weights", serving_dtype_names[v->req.weights], "kv", serving_dtype_names[v->req.kv],
        "measured_tokens_per_s_per_gpu", v->measured, "estimated_tokens_per_s_per_gpu", est,
        "error_pct", pct, "concurrency", res->concurrency, "max_batch_size",
        (double)res->max_batch_size, "max_batch_tokens", (double)res->max_batch_tokens, "tpot_s",
        res->tpot_s, "ttft_s", res->ttft_s, "bound", serving_bound_names[res->decode.bound]);
    if (fig && (json_object_set_new(fig, "decode", codec_serving_step_encode(&res->decode)) ||
                json_object_set_new(fig, "prefill", codec_serving_step_encode(&res->prefill)))) {
        json_decref(fig);
        return NULL;
    }
    return fig;
}

json_t *codec_serving_validation_rows(const json_t *rows, const char *source,
                                      const codec_presets_t *presets, fathom_error_t *err)
{
    if (!json_is_array(rows)) {
        fathom_error_set(err, FATHOM_E_INVALID_FIELD, "", "the inference runs must be an array");
        return NULL;
    }
    const size_t n = json_array_size(rows);
    for (size_t i = 0; i < n; i++)
        if (jr_row_types(json_array_get(rows, i), "runs", i, &row_types, "id", err))
            return NULL;
    vrow_t *v = calloc(n ? n : 1, sizeof *v);
    double *est = calloc(n ? n : 1, sizeof *est);
    json_t *out = json_array();
    errs_t all = {0}, dense = {0}, moe = {0};
    json_t *by_source = json_object();
    if (!v || !est || !out || !by_source)
        goto oom;
    for (size_t i = 0; i < n; i++) {
        const json_t *row = json_array_get(rows, i);
        prepare(row, presets, &v[i]);
        json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:o,s:o}", "id", jr_text(row, "id"), "model",
                              jr_text(row, "model"), "gpu", jr_text(row, "gpu"), "source",
                              jr_text(row, "doc_revision"), "isl",
                              json_integer((json_int_t)real(row, "isl", 0)), "osl",
                              json_integer((json_int_t)real(row, "osl", 0)));
        if (!o || json_array_append_new(out, o))
            goto oom;
        if (!v[i].reason) {
            serving_result_t res;
            fathom_error_t e;
            if (serving_estimate(&v[i].model, &v[i].system, &v[i].req, &res, &e))
                v[i].reason = "the model refuses the layout";
            else if (!res.fits_memory)
                v[i].reason = "does not fit in memory";
            else {
                est[i] = res.output_tokens_per_s_per_gpu;
                const double pct = 100.0 * (est[i] - v[i].measured) / v[i].measured;
                errs_add(&all, pct);
                errs_add(v[i].moe ? &moe : &dense, pct);
                count_by_source(by_source, jr_text(row, "doc_revision"), pct);
                json_t *fig = row_figures(&v[i], &res, est[i], pct);
                const int bad = !fig || json_object_update(o, fig);
                json_decref(fig);
                if (bad)
                    goto oom;
                continue;
            }
        }
        json_object_set_new(o, "reason", json_string(v[i].reason));
    }
    json_t *sources = sources_encode(by_source);
    json_t *report = json_pack(
        "{s:s,s:o,s:i,s:i,s:f,s:f,s:o,s:o,s:o}", "source", source, "rows", out, "rows_estimated",
        all.n, "rows_total", (int)n, "mean_abs_error_pct", all.n ? all.sum / all.n : 0.0,
        "max_abs_error_pct", all.worst, "dense", errs_encode(&dense), "moe", errs_encode(&moe),
        "by_source", sources);
    out = NULL;
    if (report)
        json_object_set_new(report, "loso", loso(rows, v, est, n, json_object_get(report, "rows")));
    json_decref(by_source);
    free(v);
    free(est);
    if (!report)
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    return report;
oom:
    json_decref(out);
    json_decref(by_source);
    free(v);
    free(est);
    fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    return NULL;
}

json_t *codec_serving_validation_report(const codec_presets_t *presets, fathom_error_t *err)
{
    char path[4096];
    if (codec_presets_validation_path(presets, "inference_runs.json", path, sizeof path)) {
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "no presets directory to read from");
        return NULL;
    }
    json_error_t jerr;
    json_t *rows = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (!rows) {
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "%s: %s (line %d)", path, jerr.text,
                         jerr.line);
        return NULL;
    }
    json_t *r = codec_serving_validation_rows(rows, "presets/validation/inference_runs.json",
                                              presets, err);
    json_decref(rows);
    return r;
}

static void line(FILE *f, const char *what, const json_t *o)
{
    fprintf(f, "%s %lld rows: mean %.1f%%, worst %.1f%%\n", what,
            (long long)real(o, "rows", 0), real(o, "mean_abs_error_pct", 0),
            real(o, "max_abs_error_pct", 0));
}

static void print_serving_report(FILE *f, const json_t *report)
{
    fprintf(f, "%-52s %9s %9s %8s %8s %6s %s\n", "id", "measured", "estimate", "error", "loso",
            "conc", "bound");
    const json_t *rows = json_object_get(report, "rows");
    for (size_t i = 0; i < json_array_size(rows); i++) {
        const json_t *r = json_array_get(rows, i);
        if (json_object_get(r, "reason")) {
            fprintf(f, "%-52.52s %28s  %s\n", jr_text(r, "id"), "-", jr_text(r, "reason"));
            continue;
        }
        const json_t *lo = json_object_get(json_object_get(r, "loso"), "error_pct");
        char l[16] = "       -";
        if (json_is_number(lo))
            snprintf(l, sizeof l, "%+7.1f%%", json_number_value(lo));
        fprintf(f, "%-52.52s %9.0f %9.0f %+7.1f%% %s %6.0f %s\n", jr_text(r, "id"),
                real(r, "measured_tokens_per_s_per_gpu", 0),
                real(r, "estimated_tokens_per_s_per_gpu", 0), real(r, "error_pct", 0), l,
                real(r, "concurrency", 0), jr_text(r, "bound"));
    }
    fprintf(f, "output tokens/s/GPU over %lld of %lld rows: mean absolute error %.1f%%, worst "
               "%.1f%%\n",
            (long long)real(report, "rows_estimated", 0), (long long)real(report, "rows_total", 0),
            real(report, "mean_abs_error_pct", 0), real(report, "max_abs_error_pct", 0));
    line(f, "dense:", json_object_get(report, "dense"));
    line(f, "mixture of experts:", json_object_get(report, "moe"));
    const json_t *s;
    size_t i;
    json_array_foreach(json_object_get(report, "by_source"), i, s) {
        char what[64];
        snprintf(what, sizeof what, "revision %s:", jr_text(s, "source"));
        line(f, what, s);
    }
    line(f, "leave one revision out (per-GPU correction from the others):",
         json_object_get(report, "loso"));
}

char *codec_serving_validation_text(const json_t *report)
{
    return codec_print_to_string(print_serving_report, report);
}

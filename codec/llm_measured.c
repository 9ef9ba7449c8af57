/* llm_measured.c — the step model against published, measured training runs
 * (presets/validation/measured_runs.json, a copy of shared/validation/): for each run the
 * model, system and layout it states are estimated and the tokens per second per GPU compared.
 *
 * One rule for every row, no per-row knobs (README, "Measured runs"):
 *   model      the row's shape as the modern block: kv_heads, head size, vocabulary, RoPE,
 *              untied embeddings, causal; gated MLP and RMSNorm for SwiGLU rows, plain MLP and
 *              LayerNorm otherwise (Nemotron-4's squared ReLU)
 *   system     one preset per GPU type: h100_sxm, b200, gb200_nvl72
 *   execution  the row's TP, PP, VP (interleaving), DP, global and micro batch; bfloat16, with
 *              FP8 GEMMs for FP8 and MXFP8 rows; fused attention; sequence parallelism when
 *              TP > 1, keeping the sharded input and gathering it again in backward as
 *              Megatron does (seq_par_ag_redo; not with full recompute, which redoes it all),
 *              with the TP collectives overlapped with the GEMMs (tensor_par_overlap "ring":
 *              the NeMo recipes' tp_comm_overlap); the distributed optimizer and overlapped gradient reduction when DP > 1;
 *              TP, then DP, then PP placed on the NVLink tier while they fit in it (Megatron's
 *              rank order), the rest on the node-spanning tier
 *              context parallelism as the row gives it (cp; placed after TP on the NVLink tier
 *              while it fits); FSDP rows (fsdp > 0) as ZeRO-3 sharded over the row's FSDP
 *              group (shard_group), other rows with DP > 1 Megatron's distributed optimizer
 *   recompute  unknown in the sources: the least that fits in memory (none, then attn_only,
 *              then full)
 *   MoE rows   model.moe from the row's num_experts, top_k, expert_ffn, shared_experts and
 *              shared_expert_ffn, the first dense blocks from moe_layers ("first 3 dense");
 *              model.mla parsed from the attention text ("MLA (q_lora 1536, kv_lora 512, …)");
 *              model.mtp_blocks from mtp_layers; feedforward = expert_ffn when the row gives no
 *              dense ffn (no dense block then); no router bias (timing-neutral); expert_par = ep,
 *              expert_tensor_par = etp (1 when not given, Megatron-Bridge's recipes); the
 *              dispatch/combine all-to-all on the NVLink tier while ep·etp fits in it, else on
 *              the node-spanning tier; moe_load_imbalance 1 (the recipes force-balance routing);
 *              no all-to-all overlap (the tables do not say)

 * Rows that publish only the source's TFLOP/s per GPU (no tokens/s, microbatch not stated:
 * taken as 1) are estimated and compared on model TFLOP/s per GPU instead — Fathom's count
 * against the source's own formula, so their error is reported apart and kept out of the
 * tokens/s mean. A row that publishes nothing measured is listed with the reason. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "llm_codec.h"
#include "model_codec.h"

static int64_t row_int(const json_t *row, const char *key, int64_t dflt)
{
    const json_t *v = json_object_get(row, key);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : dflt;
}

static const char *row_str(const json_t *row, const char *key)
{
    const char *s = json_string_value(json_object_get(row, key));
    return s ? s : "";
}

/* Why a row cannot be estimated yet, or NULL. */
static const char *inexpressible(const json_t *row)
{
    if (!json_is_number(json_object_get(row, "tokens_per_s_per_gpu")) &&
        !json_is_number(json_object_get(row, "tflops_per_gpu")))
        return "nothing measured is published";
    return NULL;
}

static const char *system_for(const char *gpu)
{
    if (strncmp(gpu, "GB200", 5) == 0)
        return "gb200_nvl72";
    if (strncmp(gpu, "B200", 4) == 0)
        return "b200";
    if (strncmp(gpu, "H100", 4) == 0)
        return "h100_sxm";
    return NULL;
}

static json_t *row_model_dense(const json_t *row);

/* The integer after `key` in a free-text field ("q_lora 1536"), or dflt. */
static int64_t text_int(const char *text, const char *key, int64_t dflt)
{
    const char *p = strstr(text, key);
    long long v;
    return p && sscanf(p + strlen(key), " %lld", &v) == 1 ? (int64_t)v : dflt;
}

/* model.moe, model.mla and model.mtp_blocks of an MoE row (header comment). */
static int add_moe(const json_t *row, json_t *m)
{
    if (!json_is_true(json_object_get(row, "moe")))
        return 0;
    const int64_t fe = row_int(row, "expert_ffn", 0);
    const int64_t shared = row_int(row, "shared_experts", 0);
    json_t *moe = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I}", "num_experts",
                            (json_int_t)row_int(row, "num_experts", 0), "top_k",
                            (json_int_t)row_int(row, "top_k", 0), "expert_feedforward",
                            (json_int_t)fe, "shared_experts", (json_int_t)shared,
                            "shared_expert_feedforward",
                            (json_int_t)row_int(row, "shared_expert_ffn", fe),
                            "first_dense_blocks",
                            (json_int_t)text_int(row_str(row, "moe_layers"), "first", 0));
    if (!moe || json_object_set_new(m, "moe", moe))
        return -1;
    if (row_int(row, "ffn", 0) == 0 && json_object_set_new(m, "feedforward", json_integer(fe)))
        return -1;
    if (row_int(row, "mtp_layers", 0) > 0 &&
        json_object_set_new(m, "mtp_blocks", json_integer(row_int(row, "mtp_layers", 0))))
        return -1;
    const char *attn = row_str(row, "attention");
    if (strncmp(attn, "MLA", 3) != 0)
        return 0;
    json_t *mla = json_pack("{s:I,s:I,s:I,s:I,s:I}", "q_lora_rank",
                            (json_int_t)text_int(attn, "q_lora", 0), "kv_lora_rank",
                            (json_int_t)text_int(attn, "kv_lora", 0), "qk_nope_head_dim",
                            (json_int_t)text_int(attn, "qk_nope", 0), "qk_rope_head_dim",
                            (json_int_t)text_int(attn, "qk_rope", 0), "v_head_dim",
                            (json_int_t)text_int(attn, "v ", 0));
    return !mla || json_object_set_new(m, "mla", mla) ? -1 : 0;
}

static json_t *row_model(const json_t *row)
{
    json_t *m = row_model_dense(row);
    if (m && add_moe(row, m)) {
        json_decref(m);
        return NULL;
    }
    return m;
}

static json_t *row_model_dense(const json_t *row)
{
    const bool gated = strstr(row_str(row, "mlp"), "SwiGLU") != NULL;
    int64_t heads = row_int(row, "heads", 1);
    return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:b,s:s,s:b,s:s,s:b,s:b}", "hidden",
                     (json_int_t)row_int(row, "hidden", 0), "feedforward",
                     (json_int_t)row_int(row, "ffn", 0), "seq_size",
                     (json_int_t)row_int(row, "seq_len", 0), "attn_heads", (json_int_t)heads,
                     "kv_heads", (json_int_t)row_int(row, "kv_heads", heads), "attn_size",
                     (json_int_t)row_int(row, "head_dim", 0), "num_blocks",
                     (json_int_t)row_int(row, "layers", 0), "vocab_size",
                     (json_int_t)row_int(row, "vocab", 0), "gated_mlp", gated, "norm",
                     gated ? "rmsnorm" : "layernorm", "bias", 0, "position_embedding", "rope",
                     "tied_embeddings", 0, "causal", 1);
}

/* TP, then CP, DP and PP on tier 0 while the product fits (and divides a tier that must be
 * filled); the rest on tier 1. */
static void place_networks(const llm_system_t *s, int64_t tp, int64_t cp, int64_t dp, int64_t pp,
                           int nets[4])
{
    const llm_network_t *t0 = &s->networks[0];
    const int64_t par[4] = {tp, cp, dp, pp};
    int64_t used = 1;
    for (int i = 0; i < 4; i++) {
        int64_t next = used * par[i];
        bool fits = par[i] == 1 || (next <= t0->size && (!t0->must_be_filled || t0->size % next == 0));
        nets[i] = fits || s->num_networks < 2 ? 0 : 1;
        if (fits)
            used = next;
    }
}

static json_t *row_execution(const json_t *row, const llm_system_t *s, const char *recompute)
{
    const int64_t tp = row_int(row, "tp", 1), pp = row_int(row, "pp", 1);
    const int64_t dp = row_int(row, "dp", 1), vp = row_int(row, "vp", 1);
    const int64_t cp = row_int(row, "cp", 1), fsdp = row_int(row, "fsdp", 0);
    const char *prec = row_str(row, "precision");
    const bool fp8 = strstr(prec, "FP8") != NULL;
    const int zero = fsdp > 0 ? 3 : dp * cp > 1 ? 1 : 0;
    int nets[4];
    place_networks(s, tp, cp, dp, pp, nets);
    const bool redo = tp > 1 && strcmp(recompute, "full") != 0;
    json_t *e = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:s,s:b,s:s,s:s,s:I,s:b,s:s,s:i,s:i,s:i,s:b}",
                     "num_procs", (json_int_t)row_int(row, "gpu_count", 1), "tensor_par",
                     (json_int_t)tp, "pipeline_par", (json_int_t)pp, "data_par", (json_int_t)dp,
                     "batch_size", (json_int_t)row_int(row, "global_batch", 1),
                     "microbatch_size", (json_int_t)row_int(row, "micro_batch", 1), "datatype",
                     "bfloat16", "fp8", fp8, "attention_kernel", "fused", "tensor_par_comm_type",
                     tp > 1 ? "rs_ag" : "ar", "pipeline_interleaving",
                     (json_int_t)(pp > 1 && vp > 1 ? vp : 1), "data_par_overlap", dp * cp > 1,
                     "activation_recompute", recompute, "tensor_par_net", nets[0],
                     "data_par_net", nets[2], "pipeline_par_net", nets[3], "seq_par_ag_redo",
                     redo);
    /* (the tiled overlap is not modelled for MoE blocks: their TP collectives stay exposed) */
    if (e && tp > 1 && !json_is_true(json_object_get(row, "moe")) &&
        json_object_set_new(e, "tensor_par_overlap", json_string("ring"))) {
        json_decref(e);
        return NULL;
    }
    if (e && (json_object_set_new(e, "context_par", json_integer(cp)) ||
              json_object_set_new(e, "context_par_net", json_integer(nets[1])) ||
              json_object_set_new(e, "zero_stage", json_integer(zero)) ||
              (fsdp > 0 && fsdp < dp * cp &&
               json_object_set_new(e, "shard_group", json_integer(fsdp))))) {
        json_decref(e);
        return NULL;
    }
    if (e && json_is_true(json_object_get(row, "moe"))) {
        /* EP on the NVLink tier while the expert group fits in it, else the node tier */
        const int64_t ep = row_int(row, "ep", 1), etp = row_int(row, "etp", 1);
        const int net = ep * etp <= s->networks[0].size || s->num_networks < 2 ? 0 : 1;
        if (json_object_set_new(e, "expert_par", json_integer(ep)) ||
            json_object_set_new(e, "expert_tensor_par", json_integer(etp)) ||
            json_object_set_new(e, "expert_par_net", json_integer(net))) {
            json_decref(e);
            return NULL;
        }
    }
    return e;
}

/* Estimates one expressible row with the least recompute that fits; NULL with err set when the
 * row cannot be decoded or estimated at all. */
static json_t *estimate_row(const json_t *row, const codec_presets_t *presets, fathom_error_t *err)
{
    const char *sys_name = system_for(row_str(row, "gpu_type"));
    if (!sys_name) {
        fathom_error_set(err, FATHOM_E_INVALID_FIELD, "gpu_type", "no preset for %s",
                         row_str(row, "gpu_type"));
        return NULL;
    }
    fathom_model_t m;
    llm_system_t s;
    json_t *jm = row_model(row), *js = json_string(sys_name);
    int rc = !jm || !js || codec_model_decode(jm, "model", presets, &m, err) ||
             codec_llm_system_decode(js, "system", presets, &s, err);
    json_decref(jm);
    json_decref(js);
    if (rc)
        return NULL;
    static const char *const recomputes[] = {"none", "attn_only", "full"};
    llm_execution_t e;
    llm_result_t r;
    const char *chosen = NULL;
    for (int i = 0; i < 3; i++) {
        json_t *je = row_execution(row, &s, recomputes[i]);
        rc = !je || codec_llm_execution_decode(je, "execution", &e, err) ||
             llm_estimate(&m, &s, &e, &r, err);
        json_decref(je);
        if (rc)
            return NULL;
        chosen = recomputes[i];
        if (r.fits_memory)
            break;
    }
    const double tokens = r.stats.sample_rate * (double)m.seq_size / (double)e.num_procs;
    const double model_flops = llm_model_flops(&m, e.batch_size, true);
    const double per_proc_s = r.stats.total_time * (double)e.num_procs;
    const double tflops = model_flops / per_proc_s / 1e12;
    const bool by_tokens = json_is_number(json_object_get(row, "tokens_per_s_per_gpu"));
    const double measured = json_number_value(
        json_object_get(row, by_tokens ? "tokens_per_s_per_gpu" : "tflops_per_gpu"));
    const double est = by_tokens ? tokens : tflops;
    return json_pack("{s:s,s:s,s:s,s:f,s:f,s:f,s:f,s:f,s:s,s:b,s:f,s:f,s:f}", "system", sys_name,
                     "precision", e.fp8 ? "fp8" : "bf16", "compared",
                     by_tokens ? "tokens_per_s_per_gpu" : "tflops_per_gpu", "measured", measured,
                     "estimated", est, "error_pct", 100.0 * (est - measured) / measured,
                     "estimated_tokens_per_s_per_gpu", tokens, "estimated_tflops_per_gpu", tflops,
                     "recompute", chosen, "fits_memory", r.fits_memory, "step_time_s",
                     r.stats.total_time, "mfu", model_flops / (per_proc_s * r.extra.peak_flops),
                     "memory_gib", r.mem_tier1_bytes / 1073741824.0);
}

/* Mean and worst absolute error of one group of rows. */
typedef struct {
    double sum, worst;
    int n;
} errors_t;

static void errors_add(errors_t *a, double error_pct)
{
    double e = fabs(error_pct);
    a->sum += e;
    a->worst = e > a->worst ? e : a->worst;
    a->n++;
}

static json_t *errors_encode(const errors_t *a)
{
    return json_pack("{s:i,s:f,s:f}", "rows", a->n, "mean_abs_error_pct",
                     a->n ? a->sum / a->n : 0.0, "max_abs_error_pct", a->worst);
}

json_t *codec_llm_measured_report(const codec_presets_t *presets, fathom_error_t *err)
{
    const json_t *rows = codec_presets_measured(presets);
    if (!rows) {
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL,
                         "no measured runs: the presets directory has no "
                         "validation/measured_runs.json");
        return NULL;
    }
    json_t *out = json_array();
    errors_t by_tokens = {0, 0, 0}, by_tflops = {0, 0, 0}, by_moe = {0, 0, 0};
    for (size_t i = 0; out && i < json_array_size(rows); i++) {
        const json_t *row = json_array_get(rows, i);
        json_t *item = json_pack("{s:s,s:s,s:s,s:I,s:{s:I,s:I,s:I,s:I,s:I}}", "id",
                                 row_str(row, "id"), "model", row_str(row, "model"), "gpu",
                                 row_str(row, "gpu_type"), "gpu_count",
                                 (json_int_t)row_int(row, "gpu_count", 0), "layout", "tp",
                                 (json_int_t)row_int(row, "tp", 1), "pp",
                                 (json_int_t)row_int(row, "pp", 1), "vp",
                                 (json_int_t)row_int(row, "vp", 1), "cp",
                                 (json_int_t)row_int(row, "cp", 1), "dp",
                                 (json_int_t)row_int(row, "dp", 1));
        const char *why = inexpressible(row);
        json_t *est = NULL;
        fathom_error_t rerr;
        fathom_error_clear(&rerr);
        if (!why && !(est = estimate_row(row, presets, &rerr)))
            why = rerr.message;
        if (!item) {
            json_decref(est);
            continue;
        }
        json_object_set_new(item, "expressible", json_boolean(why == NULL));
        json_object_set_new(item, "moe", json_boolean(json_is_true(json_object_get(row, "moe"))));
        if (why) {
            json_object_set_new(item, "reason", json_string(why));
        } else {
            json_object_update(item, est);
            double e = json_real_value(json_object_get(est, "error_pct"));
            const char *what = json_string_value(json_object_get(est, "compared"));
            errors_add(strcmp(what, "tokens_per_s_per_gpu") == 0 ? &by_tokens : &by_tflops, e);
            if (json_is_true(json_object_get(row, "moe")) && strcmp(what, "tokens_per_s_per_gpu") == 0)
                errors_add(&by_moe, e);
        }
        json_decref(est);
        json_array_append_new(out, item);
    }
    if (!out) {
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
        return NULL;
    }
    return json_pack("{s:s,s:o,s:i,s:i,s:f,s:f,s:o,s:i,s:f,s:f}", "source",
                     "presets/validation/measured_runs.json", "rows", out, "rows_estimated",
                     by_tokens.n, "rows_total", (int)json_array_size(rows), "mean_abs_error_pct",
                     by_tokens.n ? by_tokens.sum / by_tokens.n : 0.0, "max_abs_error_pct",
                     by_tokens.worst, "tflops_only", errors_encode(&by_tflops),
                     "moe_rows_estimated", by_moe.n, "moe_mean_abs_error_pct",
                     by_moe.n ? by_moe.sum / by_moe.n : 0.0, "moe_max_abs_error_pct",
                     by_moe.worst);
}

char *codec_llm_measured_text(const json_t *report)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    fprintf(f, "%-12s %-22s %-6s %5s  %-16s %9s %9s %8s  %s\n", "id", "model", "system", "gpus",
            "tp/pp/vp/cp/dp", "measured", "estimate", "error", "recompute");
    const json_t *rows = json_object_get(report, "rows");
    for (size_t i = 0; i < json_array_size(rows); i++) {
        const json_t *r = json_array_get(rows, i), *l = json_object_get(r, "layout");
        char layout[64];
        snprintf(layout, sizeof layout, "%lld/%lld/%lld/%lld/%lld",
                 (long long)json_integer_value(json_object_get(l, "tp")),
                 (long long)json_integer_value(json_object_get(l, "pp")),
                 (long long)json_integer_value(json_object_get(l, "vp")),
                 (long long)json_integer_value(json_object_get(l, "cp")),
                 (long long)json_integer_value(json_object_get(l, "dp")));
        fprintf(f, "%-12s %-22.22s %-6.6s %5lld  %-16s ", row_str(r, "id"), row_str(r, "model"),
                row_str(r, "gpu"), (long long)json_integer_value(json_object_get(r, "gpu_count")),
                layout);
        if (json_is_true(json_object_get(r, "expressible")))
            fprintf(f, "%9.0f %9.0f %+7.1f%%  %s%s%s\n",
                    json_number_value(json_object_get(r, "measured")),
                    json_number_value(json_object_get(r, "estimated")),
                    json_number_value(json_object_get(r, "error_pct")), row_str(r, "recompute"),
                    json_is_true(json_object_get(r, "fits_memory")) ? "" : " (does not fit)",
                    strcmp(row_str(r, "compared"), "tflops_per_gpu") == 0 ? " [TFLOP/s/GPU]"
                                                                          : "");
        else
            fprintf(f, "%29s  %s\n", "-", row_str(r, "reason"));
    }
    fprintf(f, "tokens/s/GPU over %lld of %lld rows: mean absolute error %.1f%%, worst %.1f%%\n",
            (long long)json_integer_value(json_object_get(report, "rows_estimated")),
            (long long)json_integer_value(json_object_get(report, "rows_total")),
            json_number_value(json_object_get(report, "mean_abs_error_pct")),
            json_number_value(json_object_get(report, "max_abs_error_pct")));
    const json_t *tf = json_object_get(report, "tflops_only");
    fprintf(f, "model TFLOP/s/GPU (rows publishing no tokens/s, the source's own FLOP count) over "
               "%lld rows: mean absolute error %.1f%%, worst %.1f%%\n",
            (long long)json_integer_value(json_object_get(tf, "rows")),
            json_number_value(json_object_get(tf, "mean_abs_error_pct")),
            json_number_value(json_object_get(tf, "max_abs_error_pct")));
    fprintf(f, "of which mixture of experts, %lld rows: mean absolute error %.1f%%, worst %.1f%%\n",
            (long long)json_integer_value(json_object_get(report, "moe_rows_estimated")),
            json_number_value(json_object_get(report, "moe_mean_abs_error_pct")),
            json_number_value(json_object_get(report, "moe_max_abs_error_pct")));
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

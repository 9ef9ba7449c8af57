/* llm_measured_text.c — the measured-runs report (codec_llm_measured_report, llm_measured.c)
 * as `fathom validate` prints it: one line per row (measured, estimated, error, the calibrated
 * leave-one-source-out error, memory, recompute), the error groups, the MoE rows' software
 * levels and the groups of rows no single estimate can tell apart. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "json_read.h"
#include "llm_codec.h"
#include "text.h"

/* " what N rows: mean M%, worst W%" (or " what no rows") of one error group of the report: its
 * count under count_key, its figures under prefix + mean_abs_error_pct / max_abs_error_pct. */
static void print_group(FILE *f, const char *what, const json_t *o, const char *count_key,
                        const char *prefix)
{
    char mean[48], worst[48];
    snprintf(mean, sizeof mean, "%smean_abs_error_pct", prefix);
    snprintf(worst, sizeof worst, "%smax_abs_error_pct", prefix);
    const long long n = (long long)json_integer_value(json_object_get(o, count_key));
    if (n == 0)
        fprintf(f, "%s no rows", what);
    else
        fprintf(f, "%s %lld row%s: mean %.1f%%, worst %.1f%%", what, n, n == 1 ? "" : "s",
                json_number_value(json_object_get(o, mean)),
                json_number_value(json_object_get(o, worst)));
}

/* The indistinguishable groups in one line: how many, and the widest with its rows. */
static void print_indistinguishable(FILE *f, const json_t *o)
{
    const json_t *groups = json_object_get(o, "groups"), *widest = NULL;
    size_t i;
    const json_t *g;
    json_array_foreach(groups, i, g)
        if (!widest || json_number_value(json_object_get(g, "error_floor_pct")) >
                           json_number_value(json_object_get(widest, "error_floor_pct")))
            widest = g;
    if (!widest) {
        fputs("rows Fathom cannot tell apart (one estimate request, other measurements): none\n", f);
        return;
    }
    fprintf(f, "rows Fathom cannot tell apart (one estimate request, other measurements): %zu "
               "group%s; the widest,", json_array_size(groups), json_array_size(groups) == 1 ? "" : "s");
    const json_t *id;
    json_array_foreach(json_object_get(widest, "ids"), i, id)
        fprintf(f, "%s %s", i ? "," : "", json_string_value(id));
    fprintf(f, ", measured %.0f to %.0f: no estimate is within %.1f%% of all of them\n",
            json_number_value(json_object_get(widest, "measured_min")),
            json_number_value(json_object_get(widest, "measured_max")),
            json_number_value(json_object_get(widest, "error_floor_pct")));
}

/* The MoE rows apart, each with its software level: release, dispatcher, CUDA-graph scope and
 * all-to-all overlap, a * after what the row's notes do not state (the recipes' default). */
static void print_software(FILE *f, const json_t *rows)
{
    bool any = false;
    for (size_t i = 0; i < json_array_size(rows); i++) {
        const json_t *r = json_array_get(rows, i), *w = json_object_get(r, "software");
        if (!w || !json_is_true(json_object_get(r, "expressible")))
            continue;
        if (!any)
            fputs("mixture of experts by software level (release, dispatcher, CUDA graphs, "
                  "all-to-all overlap; * not stated in the row's notes, the recipes' default):\n",
                  f);
        any = true;
        bool stated[3] = {false, false, false};
        static const char *const what[3] = {"cuda_graphs", "dispatcher", "a2a_overlap"};
        size_t k;
        const json_t *v;
        json_array_foreach(json_object_get(w, "stated"), k, v)
            for (int j = 0; j < 3; j++)
                stated[j] = stated[j] || strcmp(json_string_value(v), what[j]) == 0;
        const json_t *rel = json_object_get(w, "release");
        char d[24], g[24], o[24];
        snprintf(d, sizeof d, "%s%s", jr_text(w, "dispatcher"), stated[1] ? "" : "*");
        snprintf(g, sizeof g, "%s%s", jr_text(w, "cuda_graphs"), stated[0] ? "" : "*");
        snprintf(o, sizeof o, "%s%s",
                 json_is_true(json_object_get(w, "a2a_overlap")) ? "overlap" : "no overlap",
                 stated[2] ? "" : "*");
        fprintf(f, "  %-12s %-9s %-10s %-10s %-12s %+7.1f%%\n", jr_text(r, "id"),
                json_is_string(rel) ? json_string_value(rel) : "-", d, g, o,
                json_number_value(json_object_get(r, "error_pct")));
    }
}

/* "est/measured" peak memory in GiB of a row ("82.1/82.4", "-" for what is not known). */
static void memory_cell(const json_t *r, char *out, size_t cap)
{
    const json_t *est = json_object_get(r, "memory_gib"), *meas = json_object_get(r, "measured_memory_gib");
    char m[16] = "-";
    if (json_is_number(meas))
        snprintf(m, sizeof m, "%.1f", json_number_value(meas));
    if (json_is_number(est))
        snprintf(out, cap, "%.1f/%s", json_number_value(est), m);
    else
        snprintf(out, cap, "-/%s", m);
}

static void print_report(FILE *f, const json_t *report)
{
    fprintf(f, "%-12s %-22s %-6s %5s  %-16s %9s %9s %8s %8s %11s  %s\n", "id", "model", "system",
            "gpus", "tp/pp/vp/cp/dp", "measured", "estimate", "error", "loso", "GiB est/ran",
            "recompute");
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
        fprintf(f, "%-12s %-22.22s %-6.6s %5lld  %-16s ", jr_text(r, "id"), jr_text(r, "model"),
                jr_text(r, "gpu"), (long long)json_integer_value(json_object_get(r, "gpu_count")),
                layout);
        if (json_is_true(json_object_get(r, "expressible")))
        {
            const json_t *lo = json_object_get(json_object_get(r, "loso"), "error_pct");
            char loso[16] = "       -";
            if (json_is_number(lo))
                snprintf(loso, sizeof loso, "%+7.1f%%", json_number_value(lo));
            char recompute[64];
            const json_int_t some = json_integer_value(json_object_get(r, "recompute_blocks"));
            int used = snprintf(recompute, sizeof recompute, some ? "%s %lld/%lld" : "%s",
                                jr_text(r, "recompute"), (long long)some,
                                (long long)json_integer_value(json_object_get(r, "blocks_per_chunk")));
            size_t mi;
            const json_t *mod;
            json_array_foreach(json_object_get(r, "recompute_modules"), mi, mod)
                if (used > 0 && (size_t)used < sizeof recompute)
                    used += snprintf(recompute + used, sizeof recompute - (size_t)used, "%s%s",
                                     mi ? "," : "+", json_string_value(mod));
            char mem[32];
            memory_cell(r, mem, sizeof mem);
            fprintf(f, "%9.0f %9.0f %+7.1f%% %s %11s  %s%s%s\n",
                    json_number_value(json_object_get(r, "measured")),
                    json_number_value(json_object_get(r, "estimated")),
                    json_number_value(json_object_get(r, "error_pct")), loso, mem, recompute,
                    json_is_true(json_object_get(r, "fits_memory")) ? "" : " (does not fit)",
                    strcmp(jr_text(r, "compared"), "tflops_per_gpu") == 0 ? " [TFLOP/s/GPU]"
                                                                          : "");
        } else
            fprintf(f, "%50s  %s\n", "-", jr_text(r, "reason"));
    }
    fprintf(f, "tokens/s/GPU over %lld of %lld rows: mean absolute error %.1f%%, worst %.1f%%\n",
            (long long)json_integer_value(json_object_get(report, "rows_estimated")),
            (long long)json_integer_value(json_object_get(report, "rows_total")),
            json_number_value(json_object_get(report, "mean_abs_error_pct")),
            json_number_value(json_object_get(report, "max_abs_error_pct")));
    fputs("of which", f);
    print_group(f, " mixture of experts,", report, "moe_rows_estimated", "moe_");
    print_group(f, "; dense,", report, "dense_rows_estimated", "dense_");
    fputs("\nmodel TFLOP/s/GPU (rows publishing no tokens/s, counted as their source counts):", f);
    print_group(f, "", json_object_get(report, "tflops_only"), "rows", "");
    fputc('\n', f);
    const json_t *lo = json_object_get(report, "loso");
    if (lo) {
        fputs("leave-one-source-out calibrated (loso: each GPU's preset fitted on the other "
              "sources' rows): tokens/s/GPU", f);
        print_group(f, "", lo, "rows_estimated", "");
        print_group(f, "; mixture of experts", lo, "moe_rows_estimated", "moe_");
        print_group(f, "; dense", lo, "dense_rows_estimated", "dense_");
        print_group(f, "; TFLOP/s-only", json_object_get(lo, "tflops_only"), "rows", "");
        fputc('\n', f);
    }
    print_software(f, rows);
    print_indistinguishable(f, json_object_get(report, "indistinguishable"));
    const json_t *mem = json_object_get(report, "memory");
    fprintf(f, "peak memory (GiB est/ran: summary.mem_tier1_bytes against the peak a row states):");
    print_group(f, "", mem, "rows", "");
    fprintf(f, "; rows estimated not to fit: %lld of %lld\n",
            (long long)json_integer_value(json_object_get(report, "rows_not_fitting")),
            (long long)(json_integer_value(json_object_get(report, "rows_estimated")) +
                        json_integer_value(json_object_get(json_object_get(report, "tflops_only"),
                                                           "rows"))));
}

/* The report, then the PyTorch-native runs' beside it. */
static void print_with_pytorch(FILE *f, const json_t *report)
{
    print_report(f, report);
    const json_t *pytorch = json_object_get(report, "pytorch");
    if (pytorch) {
        fprintf(f, "\nPyTorch-native runs (%s):\n", jr_text(pytorch, "source"));
        print_report(f, pytorch);
    }
}

char *codec_llm_measured_text(const json_t *report)
{
    return codec_print_to_string(print_with_pytorch, report);
}

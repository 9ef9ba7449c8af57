/* llm_validation.c (codec) — Calculon's validation against the sequence-parallelism paper as
 * JSON and as Calculon's printout (llm_codec.h). The numbers come from core/llm/llm_validation.c;
 * this file only fetches the presets it needs and renders the tables. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm_codec.h"
#include "llm_validation.h"
#include "model_codec.h"

static int load_inputs(const codec_presets_t *presets, llm_validation_inputs_t *in,
                       fathom_error_t *err)
{
    for (int m = 0; m < LLM_VALIDATION_MODELS; m++) {
        json_t *name = json_string(llm_validation_model_names[m]);
        int rc = name ? codec_model_decode(name, "model", presets, &in->models[m], err) : -1;
        json_decref(name);
        if (rc)
            return fathom_error_set(err, FATHOM_E_INTERNAL, NULL,
                                    "validation needs the model preset %s",
                                    llm_validation_model_names[m]);
    }
    static const char *const systems[2] = {"a100_80e", "a100_80g"};
    llm_system_t *dst[2] = {&in->a100_80e, &in->a100_80g};
    for (int i = 0; i < 2; i++) {
        json_t *name = json_string(systems[i]);
        int rc = name ? codec_llm_system_decode(name, "system", presets, dst[i], err) : -1;
        json_decref(name);
        if (rc)
            return fathom_error_set(err, FATHOM_E_INTERNAL, NULL,
                                    "validation needs the system preset %s", systems[i]);
    }
    return 0;
}

static json_t *encode_table(const llm_validation_table_t *t, bool with_memory)
{
    json_t *modes = json_array(), *cells = json_array();
    for (int i = 0; i < t->num_modes; i++)
        json_array_append_new(modes, json_string(t->modes[i]));
    for (int i = 0; i < t->num_cells; i++) {
        const llm_validation_cell_t *c = &t->cells[i];
        json_t *cell = json_pack("{s:s,s:s,s:f,s:f,s:f}", "model", c->model, "mode", c->mode,
                                 "profile", c->profile, "estimate", c->estimate, "delta_pct",
                                 c->delta_pct);
        if (cell && with_memory)
            json_object_set_new(cell, "memory_gib", json_real(c->memory_gib));
        json_array_append_new(cells, cell);
    }
    return json_pack("{s:s,s:s,s:s,s:s,s:o,s:o,s:f,s:f}", "name", t->name, "title", t->title,
                     "unit", t->unit, "system", t->system, "modes", modes, "cells", cells,
                     "mean_abs_error_pct", t->mean_abs_error_pct, "max_abs_error_pct",
                     t->max_abs_error_pct);
}

json_t *codec_llm_validation_report(const codec_presets_t *presets, fathom_error_t *err)
{
    llm_validation_inputs_t in;
    llm_validation_report_t rep;
    if (load_inputs(presets, &in, err) || llm_validation_run(&in, &rep, err))
        return NULL;
    json_t *tables = json_array();
    for (int t = 0; tables && t < LLM_VAL__TABLES; t++)
        json_array_append_new(tables, encode_table(&rep.tables[t], t == LLM_VAL_TAB5));
    json_t *out = json_pack(
        "{s:s,s:s,s:o}", "paper",
        "Korthikanti et al. 2022, Reducing Activation Recomputation in Large Transformer Models, "
        "arXiv 2205.05198",
        "calculon", "calculon-ai/calculon caa4b11, calculon/llm/validation.py", "tables", tables);
    if (!out) {
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
        return NULL;
    }
    /* The measured runs, when the registry has them (llm_measured.c). */
    if (codec_presets_measured(presets)) {
        json_t *measured = codec_llm_measured_report(presets, err);
        if (!measured || json_object_set_new(out, "measured", measured)) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

/* ---- Calculon's printout ---- */

typedef struct {
    char *buf;
    size_t len, cap;
    bool failed;
} text_t;

static void put(text_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text_t *t, const char *fmt, ...)
{
    if (t->failed)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            t->failed = true;
            return;
        }
        if ((size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        }
        size_t cap = t->cap * 2 + (size_t)n + 1;
        char *b = realloc(t->buf, cap);
        if (!b) {
            t->failed = true;
            return;
        }
        t->buf = b;
        t->cap = cap;
    }
}

/* Python's repr of a float: the shortest digits that read back the same, with ".0" when
 * integral (the paper's profile values print like that in Calculon). */
static void py_float(char *out, size_t cap, double x)
{
    int prec = 1;
    for (; prec <= 17; prec++) {
        snprintf(out, cap, "%.*g", prec, x);
        if (strtod(out, NULL) == x)
            break;
    }
    double ax = fabs(x);
    if (strpbrk(out, "eE") && ax >= 1e-4 && ax < 1e16) { /* Python writes these positionally */
        int decimals = prec - 1 - (int)floor(log10(ax));
        snprintf(out, cap, "%.*f", decimals > 0 ? decimals : 0, x);
    }
    if (!strpbrk(out, ".eEn"))
        strncat(out, ".0", cap - strlen(out) - 1);
}

static double num_of(const json_t *o, const char *k)
{
    return json_number_value(json_object_get(o, k));
}

char *codec_llm_validation_text(const json_t *report)
{
    const json_t *tables = json_object_get(report, "tables");
    if (!json_is_array(tables))
        return NULL;
    text_t t = {malloc(1024), 0, 1024, false};
    if (!t.buf)
        return NULL;
    t.buf[0] = '\0';
    size_t ti;
    const json_t *tab;
    json_array_foreach(tables, ti, tab) {
        const char *name = json_string_value(json_object_get(tab, "name"));
        const json_t *modes = json_object_get(tab, "modes"), *cells = json_object_get(tab, "cells");
        if (!name || !json_is_array(modes) || !json_is_array(cells) || json_array_size(modes) == 0)
            goto bad;
        bool pct = strcmp(name, "fig7") == 0, mem = strcmp(name, "tab5") == 0;
        const char *head = strcmp(name, "fig1_params_optimizer") == 0 ? "*Params & Opt"
                           : strcmp(name, "fig1_activations") == 0    ? "*Activations"
                           : pct                                      ? "Activations"
                                                                      : "End-to-end";
        size_t nm = json_array_size(modes);
        put(&t, "%s,", head);
        for (size_t i = 0; i < nm; i++)
            put(&t, "|,%s,,,%s", json_string_value(json_array_get(modes, i)), mem ? "," : "");
        put(&t, "\nModel,");
        for (size_t i = 0; i < nm; i++)
            put(&t, "|,Profile,Calc,Delta,%s", mem ? "GiB," : "");
        put(&t, "\n");
        size_t ci;
        const json_t *c;
        json_array_foreach(cells, ci, c) {
            if (ci % nm == 0)
                put(&t, "%s,", json_string_value(json_object_get(c, "model")));
            char p[64];
            py_float(p, sizeof p, num_of(c, "profile"));
            put(&t, "|,%s%s,%.2f%s,%.2f%%,", p, pct ? "%" : "", num_of(c, "estimate"),
                pct ? "%" : "", num_of(c, "delta_pct"));
            if (mem)
                put(&t, "%.2f,", num_of(c, "memory_gib"));
            if (ci % nm == nm - 1)
                put(&t, "\n");
        }
        put(&t, "Ave,,%.2f%%\nMax,,%.2f%%\n,\n", num_of(tab, "mean_abs_error_pct"),
            num_of(tab, "max_abs_error_pct"));
    }
    if (t.failed)
        goto bad;
    return t.buf;
bad:
    free(t.buf);
    return NULL;
}

/* llm_validation.c — Calculon's validation against the sequence-parallelism paper
 * (llm_validation.h): runs the 36 executions of llm_validation_data.c and fills the four tables
 * the way calculon/llm/validation.py computes them. */
#include <math.h>
#include <string.h>

#include "llm_validation_internal.h"

static const char *const fig1_modes[] = {"none", "seqsel"};
static const char *const fig7_modes[] = {"none", "seq", "sel", "seqsel", "full"};
static const char *const tab5_modes[] = {"full", "seqsel"};

static const llm__val_exec_t *find_exec(llm__val_figure_t fig, int model, const char *mode)
{
    for (int i = 0; i < LLM__VAL_EXECS; i++)
        if (llm__val_execs[i].figure == fig && llm__val_execs[i].model == model &&
            strcmp(llm__val_execs[i].mode, mode) == 0)
            return &llm__val_execs[i];
    return NULL;
}

static void to_execution(const llm__val_fields_t *f, llm_execution_t *e)
{
    memset(e, 0, sizeof *e);
    e->num_procs = f->num_procs;
    e->tensor_par = f->tensor_par;
    e->pipeline_par = f->pipeline_par;
    e->data_par = f->data_par;
    e->tensor_par_net = 0;
    e->pipeline_par_net = 1;
    e->data_par_net = 1;
    e->batch_size = f->batch_size;
    e->microbatch_size = f->microbatch_size;
    e->datatype = LLM_DT_FLOAT16;
    e->fused_activation = false;
    e->attention_type = LLM_ATTN_MULTIHEAD;
    e->activation_recompute = f->activation_recompute;
    e->pipeline_interleaving = f->pipeline_interleaving;
    e->optimizer_sharding = false;
    e->tensor_par_comm_type = f->tensor_par_comm_type;
    e->tensor_par_overlap = LLM_TP_OVERLAP_NONE;
    e->seq_par_ag_redo = f->seq_par_ag_redo;
    e->training = true;
}

static int run_one(const llm_validation_inputs_t *in, llm__val_figure_t fig, int model,
                   const char *mode, llm_result_t *r, fathom_error_t *err)
{
    const llm__val_exec_t *x = find_exec(fig, model, mode);
    if (!x)
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "no validation execution %s/%s",
                                llm_validation_model_names[model], mode);
    llm_execution_t e;
    to_execution(&x->f, &e);
    const llm_system_t *s = fig == LLM__VAL_TAB5 ? &in->a100_80g : &in->a100_80e;
    if (llm_estimate(&in->models[model], s, &e, r, err))
        return -1;
    return 0;
}

static void table_init(llm_validation_table_t *t, const char *name, const char *title,
                       const char *unit, const char *system, const char *const *modes,
                       int num_modes)
{
    memset(t, 0, sizeof *t);
    t->name = name;
    t->title = title;
    t->unit = unit;
    t->system = system;
    t->num_modes = num_modes;
    for (int i = 0; i < num_modes; i++)
        t->modes[i] = modes[i];
}

static void add_cell(llm_validation_table_t *t, int model, const char *mode, double profile,
                     double estimate, double memory_gib)
{
    llm_validation_cell_t *c = &t->cells[t->num_cells++];
    c->model = llm_validation_model_names[model];
    c->mode = mode;
    c->profile = profile;
    c->estimate = estimate;
    c->delta_pct = 100 * (1 - estimate / profile);
    c->memory_gib = memory_gib;
}

/* Calculon's summary: the mean and the largest |delta| of the table's cells. */
static void table_close(llm_validation_table_t *t)
{
    double sum = 0, worst = 0;
    for (int i = 0; i < t->num_cells; i++) {
        double d = fabs(t->cells[i].delta_pct);
        sum += d;
        if (d > worst)
            worst = d;
    }
    t->mean_abs_error_pct = t->num_cells ? sum / t->num_cells : 0;
    t->max_abs_error_pct = worst;
}

int llm_validation_run(const llm_validation_inputs_t *in, llm_validation_report_t *out,
                       fathom_error_t *err)
{
    const double gib = 1073741824.0;
    llm_validation_table_t *po = &out->tables[LLM_VAL_FIG1_PARAMS_OPT];
    llm_validation_table_t *act = &out->tables[LLM_VAL_FIG1_ACT];
    llm_validation_table_t *f7 = &out->tables[LLM_VAL_FIG7];
    llm_validation_table_t *t5 = &out->tables[LLM_VAL_TAB5];
    table_init(po, "fig1_params_optimizer", "Figure 1: parameters and optimizer state per GPU",
               "GiB", "a100_80e", fig1_modes, 2);
    table_init(act, "fig1_activations", "Figure 1: activations per GPU", "GiB", "a100_80e",
               fig1_modes, 2);
    table_init(f7, "fig7", "Figure 7: activation memory relative to no recompute", "%",
               "a100_80e", fig7_modes, 5);
    table_init(t5, "tab5", "Table 5: end-to-end step time", "s", "a100_80g", tab5_modes, 2);
    llm_result_t r;
    for (int m = 0; m < LLM_VALIDATION_MODELS; m++) {
        for (int k = 0; k < 2; k++) {
            if (run_one(in, LLM__VAL_FIG1, m, fig1_modes[k], &r, err))
                return -1;
            double par_opt =
                (r.stats.weight_space + r.stats.weight_grad_space + r.stats.optimizer_space) / gib;
            add_cell(po, m, fig1_modes[k], llm__val_fig1_params_opt[m][k], par_opt, 0);
            add_cell(act, m, fig1_modes[k], llm__val_fig1_act[m][k], r.stats.act_space / gib, 0);
        }
        double raw[5];
        for (int k = 0; k < 5; k++) {
            if (run_one(in, LLM__VAL_FIG7, m, fig7_modes[k], &r, err))
                return -1;
            raw[k] = r.stats.act_space + r.stats.act_checkpoint_size;
        }
        for (int k = 0; k < 5; k++)
            add_cell(f7, m, fig7_modes[k], llm__val_fig7[m][k], raw[k] / raw[0] * 100, 0);
        for (int k = 0; k < 2; k++) {
            if (run_one(in, LLM__VAL_TAB5, m, tab5_modes[k], &r, err))
                return -1;
            add_cell(t5, m, tab5_modes[k], llm__val_tab5[m][k], r.stats.total_time,
                     r.stats.proc_mem_tier1_cap_req / gib);
        }
    }
    for (int t = 0; t < LLM_VAL__TABLES; t++)
        table_close(&out->tables[t]);
    return 0;
}

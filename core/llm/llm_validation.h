/* llm_validation.h — Calculon's validation of the LLM model against the Megatron
 * sequence-parallelism paper (Korthikanti et al. 2022, arXiv 2205.05198), as Calculon's
 * calculon/llm/validation.py runs it: Figure 1 (memory of parameters + optimizer state, and of
 * activations, GiB), Figure 7 (activation memory relative to no recompute, %) and Table 5
 * (end-to-end step time, s), each cell with the paper's profile, the estimate and
 * delta = 100·(1 − estimate/profile), and per table the mean and worst |delta|.
 *
 * The paper's numbers and the 36 validation executions (Calculon's validation/seqsel/ files)
 * are data compiled into llm_validation_data.c; the caller supplies the four models and the two
 * systems (Calculon's a100_80e for the figures, a100_80g for the table), which are presets. */
#ifndef FATHOM_LLM_VALIDATION_H
#define FATHOM_LLM_VALIDATION_H

#include "llm.h"

#define LLM_VALIDATION_MODELS 4
#define LLM_VALIDATION_MAX_CELLS 20 /* 4 models × up to 5 modes */

/* "megatron-22B", "gpt3-175B", "turing-530B", "megatron-1T": the order of the inputs. */
extern const char *const llm_validation_model_names[LLM_VALIDATION_MODELS];

typedef enum {
    LLM_VAL_FIG1_PARAMS_OPT = 0, /* Figure 1, parameters + optimizer state (GiB) */
    LLM_VAL_FIG1_ACT = 1,        /* Figure 1, activations (GiB) */
    LLM_VAL_FIG7 = 2,            /* Figure 7, activations relative to no recompute (%) */
    LLM_VAL_TAB5 = 3,            /* Table 5, step time (s) */
    LLM_VAL__TABLES
} llm_validation_table_id_t;

typedef struct {
    const char *model; /* static strings */
    const char *mode;  /* "none", "seq", "sel", "seqsel", "full" */
    double profile;    /* the paper's value */
    double estimate;
    double delta_pct;  /* 100·(1 − estimate/profile) */
    double memory_gib; /* Table 5 only: tier-1 memory of the execution; else 0 */
} llm_validation_cell_t;

typedef struct {
    const char *name;   /* "fig1_params_optimizer", "fig1_activations", "fig7", "tab5" */
    const char *title;
    const char *unit;   /* "GiB", "%", "s" */
    const char *system; /* "a100_80e" or "a100_80g" */
    int num_modes;
    const char *modes[5];
    int num_cells; /* models × modes, model-major */
    llm_validation_cell_t cells[LLM_VALIDATION_MAX_CELLS];
    double mean_abs_error_pct;
    double max_abs_error_pct;
} llm_validation_table_t;

typedef struct {
    llm_validation_table_t tables[LLM_VAL__TABLES];
} llm_validation_report_t;

typedef struct {
    fathom_model_t models[LLM_VALIDATION_MODELS]; /* llm_validation_model_names order */
    llm_system_t a100_80e;                        /* Figures 1 and 7 */
    llm_system_t a100_80g;                        /* Table 5 */
} llm_validation_inputs_t;

/* Runs the 36 estimates and fills *out; -1 with err if one of them fails (which means the
 * inputs are not Calculon's presets). */
int llm_validation_run(const llm_validation_inputs_t *in, llm_validation_report_t *out,
                       fathom_error_t *err);

#endif

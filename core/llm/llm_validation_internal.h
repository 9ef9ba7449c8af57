/* llm_validation_internal.h — PRIVATE to core/llm: the data tables of llm_validation_data.c
 * shared with llm_validation.c. */
#ifndef FATHOM_LLM_VALIDATION_INTERNAL_H
#define FATHOM_LLM_VALIDATION_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "llm_validation.h"

typedef enum { LLM__VAL_FIG1, LLM__VAL_FIG7, LLM__VAL_TAB5 } llm__val_figure_t;

/* The fields in which the validation executions differ. */
typedef struct {
    int64_t num_procs, tensor_par, pipeline_par, data_par, batch_size, microbatch_size;
    llm_recompute_t activation_recompute;
    llm_tp_comm_t tensor_par_comm_type;
    bool seq_par_ag_redo;
    int64_t pipeline_interleaving;
} llm__val_fields_t;

typedef struct {
    llm__val_figure_t figure;
    int model; /* index into llm_validation_model_names */
    const char *mode;
    llm__val_fields_t f;
} llm__val_exec_t;

#define LLM__VAL_EXECS 36

extern const llm__val_exec_t llm__val_execs[LLM__VAL_EXECS];
extern const double llm__val_fig1_params_opt[LLM_VALIDATION_MODELS][2];
extern const double llm__val_fig1_act[LLM_VALIDATION_MODELS][2];
extern const double llm__val_fig7[LLM_VALIDATION_MODELS][5];
extern const double llm__val_tab5[LLM_VALIDATION_MODELS][2];

#endif

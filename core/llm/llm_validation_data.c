/* llm_validation_data.c — data of Calculon's validation (llm_validation.h): the 36 executions
 * of calculon-ai/calculon validation/seqsel/{fig1,fig7,tab5}/<model>_<mode>.json (commit caa4b11)
 * and the paper's profiled values as validation.py quotes them (Korthikanti et al. 2022,
 * Figure 1, Figure 7, Table 5). The executions share every field not listed here:
 * nets 0/1/1, float16, fused_activation false, multihead, no sharding, no TP or DP overlap,
 * no offload, training. */
#include "llm_validation_internal.h"

const char *const llm_validation_model_names[LLM_VALIDATION_MODELS] = {
    "megatron-22B", "gpt3-175B", "turing-530B", "megatron-1T"};

/*   figure  model  mode    {num_procs, tp, pp, dp, batch, microbatch, recompute, tp comm,
 *                           seq_par_ag_redo, interleaving} */
const llm__val_exec_t llm__val_execs[LLM__VAL_EXECS] = {
    {LLM__VAL_FIG1, 0, "none", {8, 8, 1, 1, 4, 4, LLM_RECOMPUTE_NONE, LLM_TP_COMM_AR, false, 1}},
    {LLM__VAL_FIG1, 0, "seqsel", {8, 8, 1, 1, 4, 4, LLM_RECOMPUTE_ATTN_ONLY, LLM_TP_COMM_RS_AG, true, 1}},
    {LLM__VAL_FIG1, 1, "none", {64, 8, 8, 1, 64, 1, LLM_RECOMPUTE_NONE, LLM_TP_COMM_AR, false, 3}},
    {LLM__VAL_FIG1, 1, "seqsel", {64, 8, 8, 1, 64, 1, LLM_RECOMPUTE_ATTN_ONLY, LLM_TP_COMM_RS_AG, true, 3}},
    {LLM__VAL_FIG1, 2, "none", {280, 8, 35, 1, 280, 1, LLM_RECOMPUTE_NONE, LLM_TP_COMM_AR, false, 3}},
    {LLM__VAL_FIG1, 2, "seqsel", {280, 8, 35, 1, 280, 1, LLM_RECOMPUTE_ATTN_ONLY, LLM_TP_COMM_RS_AG, true, 3}},
    {LLM__VAL_FIG1, 3, "none", {512, 8, 64, 1, 512, 1, LLM_RECOMPUTE_NONE, LLM_TP_COMM_AR, false, 1}},
    {LLM__VAL_FIG1, 3, "seqsel", {512, 8, 64, 1, 512, 1, LLM_RECOMPUTE_ATTN_ONLY, LLM_TP_COMM_RS_AG, true, 1}},
    {LLM__VAL_FIG7, 0, "none", {8, 8, 1, 1, 4, 4, LLM_RECOMPUTE_NONE, LLM_TP_COMM_AR, false, 1}},
    {LLM__VAL_FIG7, 0, "seq", {8, 8, 1, 1, 4, 4, LLM_RECOMPUTE_NONE, LLM_TP_COMM_RS_AG, true, 1}},
    {LLM__VAL_FIG7, 0, "sel", {8, 8, 1, 1, 4, 4, LLM_RECOMPUTE_ATTN_ONLY, LLM_TP_COMM_AR, false, 1}},
    {LLM__VAL_FIG7, 0, "seqsel", {8, 8, 1, 1, 4, 4, LLM_RECOMPUTE_ATTN_ONLY, LLM_TP_COMM_RS_AG, true, 1}},
    {LLM__VAL_FIG7, 0, "full", {8, 8, 1, 1, 4, 4, LLM_RECOMPUTE_FULL, LLM_TP_COMM_AR, false, 1}},
    {LLM__VAL_FIG7, 1, "none", {64, 8, 8, 1, 64, 1, LLM_RECOMPUTE_NONE, LLM_TP_COMM_AR, false, 3}},
    {LLM__VAL_FIG7, 1, "seq", {64, 8, 8, 1, 64, 1, LLM_RECOMPUTE_NONE, LLM_TP_COMM_RS_AG, true, 3}},
    {LLM__VAL_FIG7, 1, "sel", {64, 8, 8, 1, 64, 1, LLM_RECOMPUTE_ATTN_ONLY, LLM_TP_COMM_AR, false, 3}},
    {LLM__VAL_FIG7, 1, "seqsel", {64, 8, 8, 1, 64, 1, LLM_RECOMPUTE_ATTN_ONLY, LLM_TP_COMM_RS_AG, true, 3}},
    {LLM__VAL_FIG7, 1, "full", {64, 8, 8, 1, 64, 1, LLM_RECOMPUTE_FULL, LLM_TP_COMM_AR, false, 3}},
    {LLM__VAL_FIG7, 2, "none", {280, 8, 35, 1, 280, 1, LLM_RECOMPUTE_NONE, LLM_TP_COMM_AR, false, 3}},
    {LLM__VAL_FIG7, 2, "seq", {280, 8, 35, 1, 280, 1, LLM_RECOMPUTE_NONE, LLM_TP_COMM_RS_AG, true, 3}},
    {LLM__VAL_FIG7, 2, "sel", {280, 8, 35, 1, 280, 1, LLM_RECOMPUTE_ATTN_ONLY, LLM_TP_COMM_AR, false, 3}},
    {LLM__VAL_FIG7, 2, "seqsel", {280, 8, 35, 1, 280, 1, LLM_RECOMPUTE_ATTN_ONLY, LLM_TP_COMM_RS_AG, true, 3}},
    {LLM__VAL_FIG7, 2, "full", {280, 8, 35, 1, 280, 1, LLM_RECOMPUTE_FULL, LLM_TP_COMM_AR, false, 3}},
    {LLM__VAL_FIG7, 3, "none", {512, 8, 64, 1, 512, 1, LLM_RECOMPUTE_NONE, LLM_TP_COMM_AR, false, 1}},
    {LLM__VAL_FIG7, 3, "seq", {512, 8, 64, 1, 512, 1, LLM_RECOMPUTE_NONE, LLM_TP_COMM_RS_AG, true, 1}},
    {LLM__VAL_FIG7, 3, "sel", {512, 8, 64, 1, 512, 1, LLM_RECOMPUTE_ATTN_ONLY, LLM_TP_COMM_AR, false, 1}},
    {LLM__VAL_FIG7, 3, "seqsel", {512, 8, 64, 1, 512, 1, LLM_RECOMPUTE_ATTN_ONLY, LLM_TP_COMM_RS_AG, true, 1}},
    {LLM__VAL_FIG7, 3, "full", {512, 8, 64, 1, 512, 1, LLM_RECOMPUTE_FULL, LLM_TP_COMM_AR, false, 1}},
    {LLM__VAL_TAB5, 0, "full", {8, 8, 1, 1, 4, 4, LLM_RECOMPUTE_FULL, LLM_TP_COMM_AR, false, 1}},
    {LLM__VAL_TAB5, 0, "seqsel", {8, 8, 1, 1, 4, 4, LLM_RECOMPUTE_ATTN_ONLY, LLM_TP_COMM_RS_AG, true, 1}},
    {LLM__VAL_TAB5, 1, "full", {64, 8, 8, 1, 64, 1, LLM_RECOMPUTE_FULL, LLM_TP_COMM_AR, false, 3}},
    {LLM__VAL_TAB5, 1, "seqsel", {64, 8, 8, 1, 64, 1, LLM_RECOMPUTE_ATTN_ONLY, LLM_TP_COMM_RS_AG, true, 3}},
    {LLM__VAL_TAB5, 2, "full", {280, 8, 35, 1, 280, 1, LLM_RECOMPUTE_FULL, LLM_TP_COMM_AR, false, 3}},
    {LLM__VAL_TAB5, 2, "seqsel", {280, 8, 35, 1, 280, 1, LLM_RECOMPUTE_ATTN_ONLY, LLM_TP_COMM_RS_AG, true, 3}},
    {LLM__VAL_TAB5, 3, "full", {512, 8, 64, 1, 512, 1, LLM_RECOMPUTE_FULL, LLM_TP_COMM_AR, false, 1}},
    {LLM__VAL_TAB5, 3, "seqsel", {512, 8, 64, 1, 512, 1, LLM_RECOMPUTE_ATTN_ONLY, LLM_TP_COMM_RS_AG, true, 1}},
};

/* Figure 1 (GiB): parameters + optimizer, and activations, for modes none / seqsel. */
const double llm__val_fig1_params_opt[LLM_VALIDATION_MODELS][2] = {
    {45.5625, 45.5625}, {45.5625, 45.5625}, {31.640625, 31.640625},
    {32.958984375, 32.958984375}};
const double llm__val_fig1_act[LLM_VALIDATION_MODELS][2] = {
    {59.25, 9.5625}, {66.84375, 12.3515625}, {114.0234375, 23.076171875}, {131.25, 26.5625}};
/* Figure 7 (% of no recompute): none, seq, sel, seqsel, full. */
const double llm__val_fig7[LLM_VALIDATION_MODELS][5] = {
    {100.00, 66.84, 49.42, 16.18, 7.64},
    {100.00, 62.04, 56.53, 18.49, 8.71},
    {100.00, 58.31, 62.04, 20.27, 9.42},
    {100.00, 58.31, 62.04, 20.27, 9.42}};
/* Table 5 (s): full, seqsel. */
const double llm__val_tab5[LLM_VALIDATION_MODELS][2] = {
    {1.42, 1.10}, {18.13, 13.75}, {49.05, 37.83}, {94.42, 71.49}};

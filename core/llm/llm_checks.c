/* llm_checks.c — what Calculon refuses before it estimates: the assertions of its
 * Llm.Execution (values that make no sense on any system) and Llm._check_network_assignments
 * (a parallelism mapped on a network tier too small for it, or not filling a tier that must be
 * filled). Each refusal names the execution field a user would change. */
#include <stdint.h>

#include <stdio.h>
#include <string.h>

#include "llm_internal.h"

static int invalid(fathom_error_t *err, const char *field, const char *msg)
{
    return fathom_error_set(err, FATHOM_E_INVALID_FIELD, field, "%s", msg);
}

/* Calculon's Llm.Execution assertions: values that make no sense on any system. */
int llm__check_execution(const fathom_model_t *m, const llm_execution_t *e, fathom_error_t *err)
{
    if (e->num_procs < 1)
        return invalid(err, "execution.num_procs", "must be >= 1");
    if (e->tensor_par < 1)
        return invalid(err, "execution.tensor_par", "must be >= 1");
    if (e->pipeline_par < 1)
        return invalid(err, "execution.pipeline_par", "must be >= 1");
    if (e->data_par < 1)
        return invalid(err, "execution.data_par", "must be >= 1");
    const int64_t cp = llm_context_par(e);
    if (e->num_procs % e->tensor_par != 0 || (e->num_procs / e->tensor_par) % e->pipeline_par != 0 ||
        (e->num_procs / e->tensor_par / e->pipeline_par) % cp != 0 ||
        e->num_procs / e->tensor_par / e->pipeline_par / cp != e->data_par) {
        if (cp > 1)
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.num_procs",
                                    "tensor_par (%lld) * context_par (%lld) * pipeline_par (%lld) "
                                    "* data_par (%lld) must equal num_procs (%lld)",
                                    (long long)e->tensor_par, (long long)cp,
                                    (long long)e->pipeline_par, (long long)e->data_par,
                                    (long long)e->num_procs);
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.num_procs",
                                "tensor_par (%lld) * pipeline_par (%lld) * data_par (%lld) must "
                                "equal num_procs (%lld)",
                                (long long)e->tensor_par, (long long)e->pipeline_par,
                                (long long)e->data_par, (long long)e->num_procs);
    }
    if (e->batch_size < 1)
        return invalid(err, "execution.batch_size", "must be >= 1");
    if (e->microbatch_size < 1)
        return invalid(err, "execution.microbatch_size", "must be >= 1");
    if (e->batch_size % e->data_par != 0)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.batch_size",
                                "must be divisible by data_par (%lld), got %lld",
                                (long long)e->data_par, (long long)e->batch_size);
    if ((e->batch_size / e->data_par) % e->microbatch_size != 0)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, "execution.microbatch_size",
                                "must divide the per-replica batch batch_size/data_par (%lld), "
                                "got %lld",
                                (long long)(e->batch_size / e->data_par),
                                (long long)e->microbatch_size);
    if ((unsigned)e->datatype >= LLM_DT__COUNT)
        return invalid(err, "execution.datatype", "unknown datatype");
    if ((unsigned)e->attention_type > LLM_ATTN_MULTIQUERY)
        return invalid(err, "execution.attention_type", "must be multihead or multiquery");
    if ((unsigned)e->activation_recompute > LLM_RECOMPUTE_NONE)
        return invalid(err, "execution.activation_recompute", "must be full, attn_only or none");
    if (e->activation_recompute != LLM_RECOMPUTE_NONE && !e->training)
        return invalid(err, "execution.activation_recompute",
                       "must be \"none\" for inference (recompute happens only when training)");
    if (e->pipeline_interleaving < 1)
        return invalid(err, "execution.pipeline_interleaving", "must be >= 1");
    if (e->pipeline_par == 1 && e->pipeline_interleaving != 1)
        return invalid(err, "execution.pipeline_interleaving", "must be 1 when pipeline_par is 1");
    if (llm_zero_without_data_par(e)) /* the codec names zero_stage when the request gave it */
        return invalid(err, "execution.optimizer_sharding", LLM_ZERO_WITHOUT_DATA_PAR_MSG);
    if ((unsigned)e->tensor_par_comm_type > LLM_TP_COMM_RS_AG)
        return invalid(err, "execution.tensor_par_comm_type", "must be ar, p2p_rs_ag or rs_ag");
    if ((unsigned)e->tensor_par_overlap > LLM_TP_OVERLAP_PIPE)
        return invalid(err, "execution.tensor_par_overlap", "must be none, ring or pipe");
    if (e->tensor_par_overlap != LLM_TP_OVERLAP_NONE && e->tensor_par < 2)
        return invalid(err, "execution.tensor_par_overlap", "needs tensor_par > 1 unless \"none\"");
    if (e->seq_par_ag_redo && e->tensor_par_comm_type != LLM_TP_COMM_RS_AG)
        return invalid(err, "execution.seq_par_ag_redo", "needs tensor_par_comm_type \"rs_ag\"");
    if (e->seq_par_ag_redo && e->activation_recompute == LLM_RECOMPUTE_FULL)
        return invalid(err, "execution.seq_par_ag_redo",
                       "cannot be combined with activation_recompute \"full\"");
    if (e->data_par_overlap && !e->training)
        return invalid(err, "execution.data_par_overlap", "applies only to training");
    if (e->data_par_overlap && e->data_par * llm_context_par(e) < 2)
        return invalid(err, "execution.data_par_overlap", "needs data_par > 1");
    if (e->optimizer_offload && !e->training)
        return invalid(err, "execution.optimizer_offload", "applies only to training");
    if (m->hidden < 1 || m->feedforward < 1 || m->seq_size < 1 || m->attn_heads < 1 ||
        m->attn_size < 1 || m->num_blocks < 1)
        return invalid(err, "model", "every dimension must be >= 1");
    return 0;
}

/* Calculon's _check_network_assignments. */
int llm__check_networks(const llm_system_t *s, const llm_execution_t *e, fathom_error_t *err)
{
    /* Calculon's three groups, then context parallelism (blamed last, so Calculon's messages
     * stay as they were) */
    const int nets[4] = {e->tensor_par_net, e->pipeline_par_net, e->data_par_net,
                         e->context_par_net};
    const int64_t par[4] = {e->tensor_par, e->pipeline_par, e->data_par, llm_context_par(e)};
    static const char *const fields[4] = {"execution.tensor_par_net", "execution.pipeline_par_net",
                                          "execution.data_par_net", "execution.context_par_net"};
    static const char *const par_fields[4] = {"execution.tensor_par", "execution.pipeline_par",
                                              "execution.data_par", "execution.context_par"};
    bool used[LLM_MAX_NETWORKS] = {false};
    int64_t size[LLM_MAX_NETWORKS];
    for (int i = 0; i < LLM_MAX_NETWORKS; i++)
        size[i] = 1;
    for (int k = 0; k < 4; k++)
        if ((k < 3 || par[k] > 1) && (nets[k] < 0 || nets[k] >= s->num_networks))
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, fields[k],
                                    "must name a network tier 0..%d, got %d",
                                    s->num_networks - 1, nets[k]);
    for (int k = 0; k < 4; k++) {
        if (par[k] > 1) {
            used[nets[k]] = true;
            /* cap the product: beyond any network size it is already too big */
            size[nets[k]] = size[nets[k]] > INT64_MAX / par[k] ? INT64_MAX : size[nets[k]] * par[k];
        }
    }
    for (int t = 0; t < s->num_networks; t++) {
        const llm_network_t *n = &s->networks[t];
        if (!used[t] || (size[t] <= n->size && !(n->must_be_filled && n->size % size[t] != 0)))
            continue;
        /* blame the first parallelism mapped on this tier; the message names every *_net
         * field that maps a group here, since moving one of them is the fix (written only
         * for the refusal: the search asks this of every candidate) */
        const char *field = fields[0];
        char mapped[200] = "";
        for (int k = 3; k >= 0; k--)
            if (par[k] > 1 && nets[k] == t)
                field = par_fields[k];
        for (int k = 0; k < 4; k++)
            if (par[k] > 1 && nets[k] == t)
                snprintf(mapped + strlen(mapped), sizeof mapped - strlen(mapped), "%s%s=%d",
                         mapped[0] ? ", " : "", fields[k], t);
        if (size[t] > n->size)
            return fathom_error_set(err, FATHOM_E_INFEASIBLE_EXECUTION, field,
                                    "network tier%d isn't big enough: the parallelism mapped on "
                                    "it (%s) needs %lld processors, it connects %lld; set one of "
                                    "those fields to a larger tier (0..%d)",
                                    t, mapped, (long long)size[t], (long long)n->size,
                                    s->num_networks - 1);
        return fathom_error_set(err, FATHOM_E_INFEASIBLE_EXECUTION, field,
                                "network tier%d isn't fully used: it must be filled and the "
                                "parallelism mapped on it (%s) needs %lld processors, which "
                                "does not divide its size (%lld); move one of those fields "
                                "to another tier (0..%d)",
                                t, mapped, (long long)size[t], (long long)n->size,
                                s->num_networks - 1);
    }
    return 0;
}

/* llm_stats.h — the 96 statistics of Calculon's LLM model, in Calculon's order
 * (Llm.get_stats_fields), as ONE table that generates the struct, the names and the units, so
 * codecs and tests iterate them generically.
 *
 * "block" values are per transformer block and per microbatch; "baseblock"/"edgeblock" are the
 * blocks inside a pipeline chunk and the last block of a chunk (which also sends the
 * pipeline-parallel message); the others are per processor and per step. */
#ifndef FATHOM_LLM_STATS_H
#define FATHOM_LLM_STATS_H

/*  name                                    unit */
#define LLM_STATS_MAP(XX)                                              \
    XX(block_fw_flops,                      "FLOP")                    \
    XX(block_fw_flops_time,                 "s")                       \
    XX(block_fw_mem_accessed,               "bytes")                   \
    XX(block_fw_mem_time,                   "s")                       \
    XX(block_fw_time,                       "s")                       \
    XX(baseblock_fw_tp_time,                "s")                       \
    XX(edgeblock_fw_tp_time,                "s")                       \
    XX(baseblock_fw_tp_time_exposed,        "s")                       \
    XX(edgeblock_fw_tp_time_exposed,        "s")                       \
    XX(block_re_flops,                      "FLOP")                    \
    XX(block_re_flops_time,                 "s")                       \
    XX(block_re_mem_accessed,               "bytes")                   \
    XX(block_re_mem_time,                   "s")                       \
    XX(block_re_time,                       "s")                       \
    XX(baseblock_recomm_time,               "s")                       \
    XX(edgeblock_recomm_time,               "s")                       \
    XX(baseblock_recomm_time_exposed,       "s")                       \
    XX(edgeblock_recomm_time_exposed,       "s")                       \
    XX(block_agrad_flops,                   "FLOP")                    \
    XX(block_agrad_flops_time,              "s")                       \
    XX(block_agrad_mem_accessed,            "bytes")                   \
    XX(block_agrad_mem_time,                "s")                       \
    XX(block_agrad_time,                    "s")                       \
    XX(baseblock_agrad_tp_time,             "s")                       \
    XX(edgeblock_agrad_tp_time,             "s")                       \
    XX(baseblock_agrad_tp_time_exposed,     "s")                       \
    XX(edgeblock_agrad_tp_time_exposed,     "s")                       \
    XX(block_wgrad_flops,                   "FLOP")                    \
    XX(block_wgrad_flops_time,              "s")                       \
    XX(block_wgrad_mem_accessed,            "bytes")                   \
    XX(block_wgrad_mem_time,                "s")                       \
    XX(block_wgrad_time,                    "s")                       \
    XX(block_optim_flops,                   "FLOP")                    \
    XX(block_optim_flops_time,              "s")                       \
    XX(block_optim_mem_accessed,            "bytes")                   \
    XX(block_optim_mem_time,                "s")                       \
    XX(block_optim_time,                    "s")                       \
    XX(baseblock_fw_tp_size,                "bytes")                   \
    XX(edgeblock_fw_tp_size,                "bytes")                   \
    XX(baseblock_bw_tp_size,                "bytes")                   \
    XX(edgeblock_bw_tp_size,                "bytes")                   \
    XX(baseblock_recomm_size,               "bytes")                   \
    XX(edgeblock_recomm_size,               "bytes")                   \
    XX(block_fw_pp_size,                    "bytes")                   \
    XX(block_bw_pp_size,                    "bytes")                   \
    XX(block_dp_size,                       "bytes")                   \
    XX(tp_bw_overlap_req,                   "bytes/s")                 \
    XX(dp_bw_overlap_req_chunk,             "bytes/s")                 \
    XX(dp_bw_overlap_req_tail,              "bytes/s")                 \
    XX(block_weight_space,                  "bytes")                   \
    XX(block_act_working_space,             "bytes")                   \
    XX(block_act_storage_space,             "bytes")                   \
    XX(block_act_checkpoint_size,           "bytes")                   \
    XX(block_weight_grad_space,             "bytes")                   \
    XX(block_weight_grad_space_no_sharding, "bytes")                   \
    XX(block_act_grad_space,                "bytes")                   \
    XX(block_optimizer_space,               "bytes")                   \
    XX(weight_space_with_offload,           "bytes")                   \
    XX(act_space_with_offload,              "bytes")                   \
    XX(act_checkpoint_size_with_offload,    "bytes")                   \
    XX(act_grad_space_with_offload,         "bytes")                   \
    XX(weight_grad_space_with_offload,      "bytes")                   \
    XX(optimizer_space_with_offload,        "bytes")                   \
    XX(weight_space,                        "bytes")                   \
    XX(act_space,                           "bytes")                   \
    XX(act_checkpoint_size,                 "bytes")                   \
    XX(act_grad_space,                      "bytes")                   \
    XX(weight_grad_space,                   "bytes")                   \
    XX(optimizer_space,                     "bytes")                   \
    XX(fw_time,                             "s")                       \
    XX(bw_time,                             "s")                       \
    XX(optim_step_time,                     "s")                       \
    XX(recompute_time,                      "s")                       \
    XX(recomm_link_time,                    "s")                       \
    XX(recomm_exposed_time,                 "s")                       \
    XX(bubble_time,                         "s")                       \
    XX(tp_comm_link_time,                   "s")                       \
    XX(pp_comm_link_time,                   "s")                       \
    XX(dp_comm_link_time,                   "s")                       \
    XX(tp_comm_exposed_time,                "s")                       \
    XX(pp_comm_exposed_time,                "s")                       \
    XX(dp_comm_exposed_time,                "s")                       \
    XX(fw_offload_exposed_time,             "s")                       \
    XX(bw_offload_exposed_time,             "s")                       \
    XX(total_time,                          "s")                       \
    XX(act_offload_bw_req,                  "bytes/s")                 \
    XX(weight_offload_bw_req,               "bytes/s")                 \
    XX(optim_offload_bw_req,                "bytes/s")                 \
    XX(offload_mem_bw_req,                  "bytes/s")                 \
    XX(proc_mem_tier1_cap_req,              "bytes")                   \
    XX(proc_mem_tier2_cap_req,              "bytes")                   \
    XX(useful_flops,                        "FLOP")                    \
    XX(compute_efficiency,                  "fraction")                \
    XX(system_efficiency,                   "fraction")                \
    XX(total_efficiency,                    "fraction")                \
    XX(sample_rate,                         "samples/s")

typedef struct {
#define XX(name, unit) double name;
    LLM_STATS_MAP(XX)
#undef XX
} llm_stats_t;

typedef enum {
#define XX(name, unit) LLM_STAT_##name,
    LLM_STATS_MAP(XX)
#undef XX
    LLM_STAT__COUNT /* 96 */
} llm_stat_t;

/* Name ("block_fw_flops"), unit ("FLOP", "s", "bytes", "bytes/s", "fraction", "samples/s") and
 * value of statistic i (0 <= i < LLM_STAT__COUNT). */
const char *llm_stat_name(llm_stat_t i);
const char *llm_stat_unit(llm_stat_t i);
double llm_stat_value(const llm_stats_t *s, llm_stat_t i);

#endif

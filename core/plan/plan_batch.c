/* plan_batch.c — the batch a run would use: DeepSeek LLM's batch-size law for a compute budget
 * (the law, its source and the FLOPs per token it is stated in are in plan.h). */
#include <math.h>

#include "plan.h"

double plan_batch_flops_per_token(double nonembedding_active_params, int64_t num_blocks,
                                  int64_t hidden, int64_t seq_size)
{
    /* M = 6·N + 6·n_layer·d_model·l_seq (72·n_layer·d_model² is 6·N for 12·d_model² a block) */
    return 6.0 * nonembedding_active_params +
           6.0 * (double)num_blocks * (double)hidden * (double)seq_size;
}

double plan_batch_law_tokens(double compute_flops)
{
    return 0.2920 * pow(compute_flops, 0.3271); /* B_opt = 0.2920 · C^0.3271 */
}

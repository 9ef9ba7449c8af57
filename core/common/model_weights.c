/* model_weights.c — which number formats a model's weights can be stored in (model.h). */
#include "model.h"

#include <stddef.h>

const char *model_weights_refusal(const fathom_model_t *m, model_weights_t w)
{
    /* mxfp4 is gpt-oss's checkpoint, the routed experts in MXFP4: on a model without them it
     * would be bf16 under another name */
    if (w == MODEL_WEIGHTS_MXFP4 && m->moe.num_experts == 0)
        return "mxfp4 is gpt-oss's checkpoint (routed experts in MXFP4, the rest BF16); this "
               "model has no routed experts: give bf16, or fp4 (NVFP4) for 4-bit weights";
    return NULL;
}

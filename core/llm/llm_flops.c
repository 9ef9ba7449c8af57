/* llm_flops.c — the model FLOPs of a training step: the numerator of MFU, counted the way
 * Megatron-LM's num_floating_point_operations counts them (megatron/training/training.py), so
 * Fathom's MFU can be compared with the MFU runs publish.
 *
 * Per token, forward, with h hidden, q = heads·d and g = kv_heads·d projection widths, f the
 * feedforward width, s the sequence, V the vocabulary (2 FLOPs per multiply-add):
 *   Q, K, V projections     2·h·(q + 2g)
 *   scores and weighted sum 2·2·s·q · c      c = 1/2 for a causal mask, 1 otherwise
 *   output projection       2·q·h
 *   MLP                     2·h·f·(3 if gated else 2)
 *   logits                  2·h·V            (once per token, after the last block)
 * and backward twice forward: a step is 3·(forward)·batch·s. Not counted (as Megatron): the
 * embedding lookup, norms, activations, softmax, biases, the loss, and recomputation (that is
 * hardware FLOPs: llm_result_t.extra.hardware_flops).
 *
 * Calculon's block is counted as the step model runs it: the blocks only, no logits, and the
 * s×s scores in full (unfused attention computes them all). */
#include "llm.h"

double llm_model_flops(const fathom_model_t *m, int64_t batch_size, bool training)
{
    const double h = (double)m->hidden, f = (double)m->feedforward, s = (double)m->seq_size;
    const double q = (double)m->attn_heads * (double)m->attn_size;
    const double g = (double)model_kv_heads(m) * (double)m->attn_size;
    const bool calculon = m->calculon_block;
    const double c = !calculon && m->causal ? 0.5 : 1.0;
    const double mlp = calculon || !m->gated_mlp ? 2.0 : 3.0;
    double block = 2 * h * (q + 2 * g) + 2 * 2 * s * q * c + 2 * q * h + 2 * h * f * mlp;
    double token = (double)m->num_blocks * block + (calculon ? 0 : 2 * h * (double)m->vocab_size);
    return (training ? 3.0 : 1.0) * token * (double)batch_size * s;
}

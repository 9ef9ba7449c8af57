/* model.h — the shape of a transformer language model, as every estimator takes it.
 *
 * Field names follow Calculon's model files (hidden, feedforward, seq_size, attn_heads,
 * attn_size, num_blocks); vocab_size, bias, tied_embeddings and position_embedding are
 * Fathom's additions for the layers outside the transformer blocks. */
#ifndef FATHOM_MODEL_H
#define FATHOM_MODEL_H

#include <stdbool.h>
#include <stdint.h>

typedef enum {
    MODEL_POS_LEARNED = 0, /* a learned seq_size × hidden table (GPT-2, GPT-3) */
    MODEL_POS_NONE = 1     /* no position parameters (rotary, ALiBi) */
} model_position_t;

typedef struct {
    int64_t hidden;       /* model width */
    int64_t feedforward;  /* MLP inner width */
    int64_t seq_size;     /* tokens per sequence */
    int64_t attn_heads;   /* attention heads */
    int64_t attn_size;    /* width of one head */
    int64_t num_blocks;   /* transformer blocks */
    int64_t vocab_size;   /* 0 = not given: layers outside the blocks are not counted */
    bool bias;            /* linear layers and layer norms carry biases */
    bool tied_embeddings; /* the output layer reuses the token embedding */
    model_position_t position_embedding;
} fathom_model_t;

#endif

/* llm_measured_gpu.h — PRIVATE to codec/llm_measured*.c: a measured row's GPU, read from its
 * free-text gpu_type ("H100 SXM 96GB HBM2e (2.4 TB/s), 500W power limit (Grand Teton), 400 Gb/s/GPU
 * RDMA") as the preset of its part and the figures it states that differ from the preset's: a
 * GPU variant (llm_system_variant.c). */
#ifndef FATHOM_LLM_MEASURED_GPU_H
#define FATHOM_LLM_MEASURED_GPU_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "presets.h"

typedef struct {
    const char *preset; /* the part's system preset */
    /* what the text states that differs from the preset (0: the preset's) */
    double memory_gib, memory_gbps, power_limit_w, nvlink_gbps, nic_gbps;
    bool variant;    /* any of them given */
    char label[160]; /* the preset's name, with the variant's figures after it */
} measured_gpu_t;

/* Whether `word` stands in `text` as a word of its own, in any case ("H200" in "NVIDIA H200 SXM
 * 141GB", not in "GH200"). */
bool llm__has_word(const char *text, const char *word);

/* Reads gpu_type into *out: 0, or -1 with the reason in why (cap bytes) for a GPU no preset
 * describes, or figures the rule cannot place. */
int llm__measured_gpu(const char *gpu_type, const codec_presets_t *presets, measured_gpu_t *out,
                      char *why, size_t cap);

/* The system value of the row: the preset's name, or the variant object (new reference). */
json_t *llm__measured_gpu_system(const measured_gpu_t *g);

#endif

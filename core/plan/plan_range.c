/* plan_range.c — the range published whole runs put around a plan's figures: the table of
 * published pre-training runs (GPU-hours as their authors state them), each run's whole-run
 * efficiency, the efficiency runs of comparable scale achieved, a candidate's range and the
 * verdict of a deadline or budget on it (definitions in plan.h). */
#include <math.h>

#include "plan.h"

/* Dense BF16 tensor peaks (datasheets): A100 SXM 312 TFLOP/s (NVIDIA A100 datasheet, 2021);
 * H100 SXM and H800 SXM 989.4 TFLOP/s (NVIDIA H100 datasheet, 2023; the H800 has the H100's
 * compute). */
#define A100 312e12
#define H100 989.4e12

const plan_published_run_t plan_published_runs[] = {
    {"LLaMA 65B", "A100 80GB", A100, 2048, 1.4e12, 65.2e9, 1022362,
     "Touvron et al. 2023, LLaMA (arXiv:2302.13971): 2,048 A100 80GB (sec. 2.4), 1.4T tokens "
     "(Table 2), 1,022,362 GPU-hours (Table 15)"},
    {"BLOOM 176B", "A100 80GB", A100, 384, 366e9, 176.2e9, 1082990,
     "BigScience 2022, BLOOM (arXiv:2211.05100): 48 nodes of 8 A100 80GB, 366B tokens, "
     "1,082,990 compute hours"},
    {"StarCoderBase 15.5B", "A100 80GB", A100, 512, 1e12, 15.5e9, 320256,
     "Li et al. 2023, StarCoder (arXiv:2305.06161): 512 A100 80GB, 1T tokens, 320,256 GPU "
     "hours of pre-training (model card)"},
    {"MPT-7B", "A100 40GB", A100, 440, 1e12, 6.7e9, 440.0 * 9.5 * 24.0,
     "MosaicML 2023, Introducing MPT-7B: 1T tokens in 9.5 days on 440 A100 40GB "
     "(100,320 GPU-hours)"},
    {"Falcon-180B", "A100 40GB", A100, 4096, 3.5e12, 180e9, 7.0e6,
     "TII 2023, Falcon 180B (Hugging Face announcement; Almazrouei et al., arXiv:2311.16867): "
     "3.5T tokens on up to 4,096 A100 40GB, ~7,000,000 GPU-hours"},
    {"Llama 3.1 405B", "H100 80GB", H100, 16384, 15.6e12, 405e9, 30.84e6,
     "Llama Team 2024, The Llama 3 Herd of Models (arXiv:2407.21783): 16,384 H100 (sec. "
     "3.3.1), 15.6T tokens (sec. 3.1); 30.84M H100 GPU-hours (Llama 3.1 model card)"},
    {"DeepSeek-V3", "H800", H100, 2048, 14.8e12, 37e9, 2.664e6,
     "DeepSeek-AI 2024, DeepSeek-V3 Technical Report (arXiv:2412.19437): 2,048 H800, 14.8T "
     "tokens, 2,664K H800 GPU-hours of pre-training (Table 1)"},
};
const size_t plan_published_runs_count =
    sizeof plan_published_runs / sizeof plan_published_runs[0];

double plan_published_efficiency(const plan_published_run_t *r)
{
    /* η = 6·N·D / (GPU-hours · 3600 · P) */
    return 6.0 * r->active_params * r->tokens / (r->gpu_hours * 3600.0 * r->peak_flops);
}

static bool within(double a, double b, double factor)
{
    return a <= b * factor && b <= a * factor;
}

double plan_comparable_efficiency(int64_t num_gpus, double compute_flops, int *runs)
{
    const double n = (double)num_gpus;
    /* pass 0: GPUs within 4x and compute within 10x; pass 1: GPUs within 4x */
    for (int pass = 0; pass < 2; pass++) {
        double log_sum = 0;
        int k = 0;
        for (size_t i = 0; i < plan_published_runs_count; i++) {
            const plan_published_run_t *r = &plan_published_runs[i];
            if (!within((double)r->gpus, n, 4.0))
                continue;
            if (pass == 0 && !within(6.0 * r->active_params * r->tokens, compute_flops, 10.0))
                continue;
            log_sum += log(plan_published_efficiency(r));
            k++;
        }
        if (k > 0) {
            *runs = k;
            return exp(log_sum / k); /* geometric mean */
        }
    }
    size_t best = 0; /* the nearest in GPU count, on a log scale */
    for (size_t i = 1; i < plan_published_runs_count; i++)
        if (fabs(log((double)plan_published_runs[i].gpus / n)) <
            fabs(log((double)plan_published_runs[best].gpus / n)))
            best = i;
    *runs = 1;
    return plan_published_efficiency(&plan_published_runs[best]);
}

void plan_gpu_hours_range(double ideal, double expected, double compute_flops, double peak_flops,
                          double eta, plan_range_t *out)
{
    const double published = compute_flops / (eta * peak_flops * 3600.0);
    out->point = expected;
    out->low = fmin(fmin(ideal, published), expected);
    out->high = fmax(fmax(ideal, published), expected);
}

const char *const plan_verdict_names[] = {"within", "at risk", "misses"};

plan_verdict_t plan_verdict(const plan_range_t *r, double limit)
{
    if (!(limit > 0) || r->high <= limit)
        return PLAN_WITHIN;
    return r->low > limit ? PLAN_MISSES : PLAN_AT_RISK;
}

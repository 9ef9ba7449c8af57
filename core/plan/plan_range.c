/* plan_range.c — what published whole runs say about a plan's figures: the table of published
 * pre-training runs (GPU-hours as their authors state them, beside the plan's tuned figure for
 * each), the ratio and spread the other runs of a candidate's GPU generation give, leaving out
 * the run it reproduces, a candidate's point and range, and the verdict of a deadline or budget
 * on it (definitions in plan.h). The tuned figure is the plan of each run at the layout its
 * report states (tests/data/plans/published_runs.json), so a ratio counts only what the run
 * lost beyond its own step. */
#include <math.h>

#include <gsl/gsl_cdf.h>

#include "plan.h"

/* Dense BF16 tensor peaks (datasheets): A100 SXM 312 TFLOP/s (NVIDIA A100 datasheet, 2021);
 * H100 SXM and H800 SXM 989.4 TFLOP/s (NVIDIA H100 datasheet, 2023; the H800 has the H100's
 * compute). */
#define A100 312e12
#define H100 989.4e12

const plan_published_run_t plan_published_runs[] = {
    {"LLaMA 65B", "A100 80GB", A100, 2048, 1.4e12, 65.2e9, 1022362, 718350,
     "Touvron et al. 2023, LLaMA (arXiv:2302.13971): 2,048 A100 80GB (sec. 2.4), 1.4T tokens "
     "(Table 2), 1,022,362 GPU-hours (Table 15)"},
    {"BLOOM 176B", "A100 80GB", A100, 384, 366e9, 176.2e9, 1082990, 819116,
     "BigScience 2022, BLOOM (arXiv:2211.05100): 48 nodes of 8 A100 80GB, 366B tokens, "
     "1,082,990 compute hours"},
    {"StarCoderBase 15.5B", "A100 80GB", A100, 512, 1e12, 15.5e9, 320256, 162542,
     "Li et al. 2023, StarCoder (arXiv:2305.06161): 512 A100 80GB, 1T tokens, 320,256 GPU "
     "hours of pre-training (model card)"},
    {"MPT-7B", "A100 40GB", A100, 440, 1e12, 6.7e9, 440.0 * 9.5 * 24.0, 58888,
     "MosaicML 2023, Introducing MPT-7B: 1T tokens in 9.5 days on 440 A100 40GB "
     "(100,320 GPU-hours)"},
    {"Falcon-180B", "A100 40GB", A100, 4096, 3.5e12, 180e9, 7.0e6, 5.3399e6,
     "TII 2023, Falcon 180B (Hugging Face announcement; Almazrouei et al., arXiv:2311.16867): "
     "3.5T tokens on up to 4,096 A100 40GB, ~7,000,000 GPU-hours"},
    {"Llama 3.1 405B", "H100 80GB", H100, 16384, 15.6e12, 405e9, 30.84e6, 25.319e6,
     "Llama Team 2024, The Llama 3 Herd of Models (arXiv:2407.21783): 16,384 H100 (sec. "
     "3.3.1), 15.6T tokens (sec. 3.1); 30.84M H100 GPU-hours (Llama 3.1 model card)"},
    {"DeepSeek-V3", "H800", H100, 2048, 14.8e12, 37e9, 2.664e6, 2.3567e6,
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

/* ln of a run's ratio of its published GPU-hours to the plan's tuned stack over its goodput */
static double log_ratio(const plan_published_run_t *r)
{
    return log(r->gpu_hours / r->tuned_gpu_hours);
}

/* Runs on one GPU generation: dense BF16 peaks within 1.5x (A100 312 against H100/H800 989.4
 * TFLOP/s are two generations; an H200 shares the H100's peak). */
static bool same_generation(double peak_a, double peak_b)
{
    return peak_a <= 1.5 * peak_b && peak_b <= 1.5 * peak_a;
}

/* The published run a plan reproduces: its generation, its GPU count, its model's active
 * parameters within 10% (the plan counts them itself: DeepSeek-V3's 37B active are Fathom's
 * 37.x; no two published runs share a GPU count). Whatever its tokens: a match on compute made a
 * plan's k̄ jump when its tokens crossed another model's compute (plan.h). */
static bool is_planned_run(const plan_published_run_t *r, double peak, int64_t num_gpus,
                           double active_params)
{
    return same_generation(r->peak_flops, peak) && r->gpus == num_gpus &&
           fabs(log(r->active_params / active_params)) < log(1.1);
}

/* Pooled within-generation standard deviation of ln k over the runs not left out:
 * σ² = Σ (ln k_i − mean of i's generation)² / (runs − generations). */
static double pooled_sigma(size_t left_out)
{
    const size_t n = plan_published_runs_count;
    double ss = 0;
    int runs = 0, groups = 0;
    for (size_t i = 0; i < n; i++) {
        if (i == left_out)
            continue;
        double sum = 0;
        int k = 0;
        bool first = true; /* i is the first run of its generation */
        for (size_t j = 0; j < n; j++) {
            if (j == left_out ||
                !same_generation(plan_published_runs[i].peak_flops, plan_published_runs[j].peak_flops))
                continue;
            sum += log_ratio(&plan_published_runs[j]);
            k++;
            if (j < i)
                first = false;
        }
        double d = log_ratio(&plan_published_runs[i]) - sum / k;
        ss += d * d;
        runs++;
        groups += first;
    }
    return runs > groups ? sqrt(ss / (runs - groups)) : 0;
}

void plan_published_fit(double peak_flops, int64_t num_gpus, double active_params,
                        plan_published_fit_t *out)
{
    const size_t n = plan_published_runs_count;
    size_t left_out = n;
    for (size_t i = 0; i < n && left_out == n; i++)
        if (is_planned_run(&plan_published_runs[i], peak_flops, num_gpus, active_params))
            left_out = i;
    out->left_out = left_out < n ? plan_published_runs[left_out].model : NULL;
    /* pass 0: the candidate's generation; pass 1: every run (a generation with none) */
    for (int pass = 0; pass < 2; pass++) {
        double log_eta = 0, log_k = 0;
        int k = 0;
        for (size_t i = 0; i < n; i++) {
            if (i == left_out ||
                (pass == 0 && !same_generation(plan_published_runs[i].peak_flops, peak_flops)))
                continue;
            log_eta += log(plan_published_efficiency(&plan_published_runs[i]));
            log_k += log_ratio(&plan_published_runs[i]);
            k++;
        }
        if (k > 0) { /* geometric means */
            out->efficiency = exp(log_eta / k);
            out->ratio = exp(log_k / k);
            out->runs = k;
            break;
        }
    }
    out->sigma = pooled_sigma(left_out);
}

double plan_range_z(void)
{
    /* z = Φ⁻¹(P90) = 1.28155: the range runs from the 10th to the 90th percentile of a normal
     * ln k, the P10–P90 spread that cost estimates for finance are given in */
    return gsl_cdf_ugaussian_Pinv(PLAN_RANGE_HIGH_PERCENTILE);
}

void plan_gpu_hours_range(double ideal, double expected, const plan_published_fit_t *fit,
                          plan_range_t *out)
{
    /* the point: the tuned stack over its goodput times k̄, what whole runs of the generation
     * paid over the plan's figure for them; the range e^(±z·σ) about it, never below the tuned
     * stack with nothing lost */
    double spread = exp(plan_range_z() * fit->sigma);
    out->point = fmax(ideal, expected * fit->ratio);
    out->low = fmax(ideal, out->point / spread);
    out->high = out->point * spread;
}

const char *const plan_verdict_names[] = {"within", "at risk", "misses"};

plan_verdict_t plan_verdict(const plan_range_t *r, double limit)
{
    if (!(limit > 0) || r->high <= limit)
        return PLAN_WITHIN;
    return r->low > limit ? PLAN_MISSES : PLAN_AT_RISK;
}

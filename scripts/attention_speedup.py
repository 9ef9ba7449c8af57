"""attention_speedup.py — prints the attention figures the b300 and gb300_nvl72 presets take, from
cuDNN's SDPA training benchmark (a checkout of NVIDIA/cudnn-frontend, 3929da2 or later, given as
the argument): benchmark/sdpa_benchmark_training/results/llama3.1/{gb200,gb300}/*.csv.

For each sequence length, the causal BF16 forward and backward rates (non-deterministic backward)
are combined as the step model counts attention, backward 2.5 times the forward FLOPs:
    rate = 3.5 / (1/forward + 2.5/backward)
then the GB300 over the GB200, and the mean over 4,096 and 8,192 tokens (the sequence lengths of
the published training runs) times Blackwell's 0.5.

    python3 scripts/attention_speedup.py ~/src/cudnn-frontend"""
import csv
import glob
import os
import sys

SEQS = (2048, 4096, 8192, 16384, 32768)
TRAINING_SEQS = (4096, 8192)
BLACKWELL_EFFICIENCY = 0.5
PEAK_BF16 = 2500.0  # TFLOP/s, GB200 and GB300 alike


def rates(root, gpu):
    """{seq: combined forward+backward TFLOP/s} of one GPU's llama3.1 results."""
    pattern = os.path.join(root, "benchmark", "sdpa_benchmark_training", "results", "llama3.1",
                           gpu, "*.csv")
    files = sorted(glob.glob(pattern))
    if not files:
        sys.exit("no results under " + pattern)
    passes = {}
    with open(files[-1]) as f:
        for r in csv.DictReader(f):
            if (r["backend"], r["data_type"], r["attn_mask"], r["deterministic_bwd"]) == \
                    ("cudnn", "bfloat16", "top_left", "False"):
                passes[(int(r["q_seqlen"]), r["profile_pass"])] = float(r["tflops"])
    return {s: 3.5 / (1 / passes[(s, "fwd")] + 2.5 / passes[(s, "bwd")]) for s in SEQS}


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    gb200, gb300 = rates(sys.argv[1], "gb200"), rates(sys.argv[1], "gb300")
    print("tokens  GB200 TFLOP/s (of peak)  GB300 TFLOP/s (of peak)  GB300/GB200")
    for s in SEQS:
        print("%6d  %7.0f (%.3f)          %7.0f (%.3f)          x%.3f"
              % (s, gb200[s], gb200[s] / PEAK_BF16, gb300[s], gb300[s] / PEAK_BF16,
                 gb300[s] / gb200[s]))
    mean = sum(gb300[s] / gb200[s] for s in TRAINING_SEQS) / len(TRAINING_SEQS)
    print("mean over %s tokens: x%.3f; attention_efficiency %.1f x %.3f = %.3f"
          % (" and ".join(str(s) for s in TRAINING_SEQS), mean, BLACKWELL_EFFICIENCY, mean,
             BLACKWELL_EFFICIENCY * mean))


if __name__ == "__main__":
    main()

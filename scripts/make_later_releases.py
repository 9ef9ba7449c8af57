"""make_later_releases.py — writes presets/validation/later_releases.json: the pre-training rows of
Megatron-Bridge's performance pages (commit 067f987: docs/performance-summary.md for 26.08,
docs/performance-summary-archive.md for 26.06 and 26.06.01) on GPUs with a Fathom preset, each
taking its model shape from the validation row of the same model and its layout, batches,
precision and figures from the page. Run from the repository root."""
import os
import json
base = {r["id"]: r for r in json.load(open(os.path.join("presets", "validation", "measured_runs.json")))}
COMMIT = "NVIDIA-NeMo/Megatron-Bridge@067f987df03b8355b03192d88d70f1709fedf51a:docs/"
TEMPLATE = {"DeepSeekV3": "MB-009", "GPT OSS 120B": "MB-011", "Qwen3_30B_a3B": "MB-013",
            "Qwen3_235B_a22B": "MB-015", "LLAMA3.1_405B": "MB-008"}
GPU = {"GB200": "GB200 (DGX-GB200, NVL72)", "H100": "H100-SXM5-80GB (DGX-H100)"}
PREC = {"MXFP8": "MXFP8", "FP8": "FP8 (current-scaling)"}
# release, page, model, gpu, gpus, precision, gbs, mbs, seq, tp, pp, cp, vp, ep, tok/s, tflops, note
ROWS = [
 ("26.08", "performance-summary.md", "DeepSeekV3", "GB200", 256, "MXFP8", 4096, 1, 4096, 1, 4, 1, 4, 64, 4912, 1276, ""),
 ("26.08", "performance-summary.md", "GPT OSS 120B", "GB200", 64, "MXFP8", 1280, 4, 4096, 1, 1, 1, None, 64, 28672, 934, ""),
 ("26.08", "performance-summary.md", "Qwen3_30B_a3B", "GB200", 8, "MXFP8", 512, 4, 4096, 1, 1, 1, None, 8, 39936, 923, ""),
 ("26.08", "performance-summary.md", "Qwen3_235B_a22B", "GB200", 256, "MXFP8", 8192, 1, 4096, 1, 8, 1, 3, 32, 7280, 1077, ""),
 ("26.06.01", "performance-summary-archive.md", "DeepSeekV3", "GB200", 256, "MXFP8", 4096, 1, 4096, 1, 4, 1, 4, 64, 4928, 1280, ""),
 ("26.06.01", "performance-summary-archive.md", "GPT OSS 120B", "GB200", 64, "MXFP8", 1280, 4, 4096, 1, 1, 1, None, 64, 18304, 597,
  "Footnote: a known performance regression of GPT-OSS pre-training in this release (cudnn-frontend issue 256)."),
 ("26.06.01", "performance-summary-archive.md", "Qwen3_30B_a3B", "GB200", 8, "MXFP8", 512, 4, 4096, 1, 1, 1, None, 8, 40960, 937, ""),
 ("26.06.01", "performance-summary-archive.md", "Qwen3_235B_a22B", "GB200", 256, "MXFP8", 8192, 1, 4096, 1, 8, 1, 3, 32, 7360, 1089, ""),
 ("26.06", "performance-summary-archive.md", "LLAMA3.1_405B", "GB200", 256, "FP8", 1536, 1, 8192, 4, 16, 1, 4, None, 843, 2129, ""),
 ("26.06", "performance-summary-archive.md", "LLAMA3.1_405B", "GB200", 256, "MXFP8", 1536, 1, 8192, 4, 16, 1, 8, None, 783, 1976, ""),
 ("26.06", "performance-summary-archive.md", "LLAMA3.1_405B", "H100", 1024, "FP8", 1536, 1, 8192, 8, 8, 2, 8, None, 326, 822, ""),
 ("26.06", "performance-summary-archive.md", "DeepSeekV3", "GB200", 256, "MXFP8", 4096, 1, 4096, 1, 4, 1, 4, 64, 4969, 1292, ""),
 ("26.06", "performance-summary-archive.md", "GPT OSS 120B", "GB200", 64, "MXFP8", 1280, 4, 4096, 1, 1, 1, None, 64, 28947, 943, ""),
 ("26.06", "performance-summary-archive.md", "Qwen3_30B_a3B", "GB200", 8, "MXFP8", 512, 4, 4096, 1, 1, 1, None, 8, 40706, 936, ""),
 ("26.06", "performance-summary-archive.md", "Qwen3_30B_a3B", "H100", 16, "FP8", 1024, 1, 4096, 1, 1, 1, None, 16, 8826, 203, ""),
 ("26.06", "performance-summary-archive.md", "Qwen3_235B_a22B", "GB200", 256, "MXFP8", 8192, 1, 4096, 1, 8, 1, 3, 32, 7376, 1092, ""),
]
out = []
for i, (rel, page, model, gpu, n, prec, gbs, mbs, seq, tp, pp, cp, vp, ep, tok, tfl, note) in enumerate(ROWS, 1):
    r = dict(base[TEMPLATE[model]])
    dp = n // (tp * pp * cp)
    assert dp * tp * pp * cp == n and gbs % (dp * mbs) == 0
    r.update({"id": "MBL-%02d" % i, "source": COMMIT + page,
              "source_section": "%s NeMo Container / Pre-Training Performance" % rel,
              "seq_len": seq, "gpu_type": GPU[gpu], "gpu_count": n, "precision": PREC[prec],
              "tp": tp, "pp": pp, "vp": vp, "cp": cp, "ep": ep, "etp": None, "dp": dp, "fsdp": 0,
              "global_batch": gbs, "micro_batch": mbs, "grad_accum": gbs // (dp * mbs),
              "recompute": None, "tokens_per_s_per_gpu": tok, "tflops_per_gpu": tfl, "mfu": None,
              "step_time_s": round(gbs * seq / (tok * n), 3), "memory_gib": None,
              "derived_fields": ["dp", "grad_accum", "step_time_s"],
              "notes": ((note + " ") if note else "") + ("MB footnote: MoE benchmarks force-balance token distribution among experts; token-dropless." if r.get("moe") else ""),
              "measurement_kind": "benchmark (published table)", "fsdp_enabled": False})
    r["notes"] = r["notes"].strip()
    out.append(r)
json.dump(out, open(os.path.join("presets", "validation", "later_releases.json"), "w"), indent=1)
print(len(out))

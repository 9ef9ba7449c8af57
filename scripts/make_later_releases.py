"""make_later_releases.py — writes two files of Megatron-Bridge's performance pages (commit 067f987:
docs/performance-summary.md for 26.08, docs/performance-summary-archive.md for the releases
before it), each row taking its model shape from the validation row of the same model and its
layout, batches, precision and figures from the page. Run from the repository root.

presets/validation/later_releases.json: the pre-training rows of 26.06, 26.06.01 and 26.08 on GPUs
of the validation set (GB200 and H100); the validation set stops at 26.04.01.

presets/validation/blackwell_ultra.json: the pre-training rows on DGX-GB300 and DGX-B300 (Blackwell
Ultra, which the validation set leaves out) of the validation set's models, from 26.02 to 26.08 in
FP8, MXFP8 or BF16 (NVFP4 is not modelled), keeping as the validation set does the latest release
of each distinct layout."""
from validation_rows import BASE, layout_row, write

COMMIT = "NVIDIA-NeMo/Megatron-Bridge@067f987df03b8355b03192d88d70f1709fedf51a:docs/"
TEMPLATE = {"DeepSeekV3": "MB-009", "GPT OSS 120B": "MB-011", "Qwen3_30B_a3B": "MB-013",
            "Qwen3_235B_a22B": "MB-015", "LLAMA3.1_405B": "MB-008", "LLAMA3_70B": "MB-007"}
PREC = {"MXFP8": "MXFP8", "FP8": "FP8 (current-scaling)", "BF16": "BF16"}
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
# release, page, model, gpu, gpus, precision, gbs, mbs, seq, tp, pp, cp, vp, ep, fsdp, tok/s, tflops
ULTRA_ROWS = [
 ("26.08", "performance-summary.md", "DeepSeekV3", "GB300", 256, "MXFP8", 4096, 1, 4096, 1, 2, 1, 8, 32, 0, 6288, 1635),
 ("26.08", "performance-summary.md", "GPT OSS 120B", "GB300", 64, "MXFP8", 1280, 4, 4096, 1, 1, 1, None, 16, 0, 33024, 1077),
 ("26.08", "performance-summary.md", "Qwen3_30B_a3B", "GB300", 8, "MXFP8", 512, 8, 4096, 1, 1, 1, None, 8, 0, 44544, 1029),
 ("26.08", "performance-summary.md", "Qwen3_235B_a22B", "GB300", 256, "MXFP8", 8192, 2, 4096, 1, 4, 1, 12, 32, 0, 8816, 1306),
 ("26.06", "performance-summary-archive.md", "LLAMA3.1_405B", "GB300", 256, "FP8", 1536, 1, 8192, 4, 8, 1, 4, None, 0, 1048, 2646),
 ("26.06", "performance-summary-archive.md", "LLAMA3.1_405B", "GB300", 256, "MXFP8", 1536, 1, 8192, 2, 8, 2, 4, None, 0, 952, 2403),
 ("26.06", "performance-summary-archive.md", "DeepSeekV3", "GB300", 256, "MXFP8", 15360, 1, 4096, 1, 2, 1, 8, 32, 0, 6422, 1670),
 ("26.06", "performance-summary-archive.md", "DeepSeekV3", "B300", 256, "MXFP8", 4096, 2, 4096, 1, 8, 1, None, 8, 0, 3541, 920),
 ("26.06", "performance-summary-archive.md", "GPT OSS 120B", "B300", 64, "MXFP8", 1280, 4, 4096, 1, 1, 1, None, 8, 0, 18534, 604),
 ("26.06", "performance-summary-archive.md", "Qwen3_30B_a3B", "B300", 8, "MXFP8", 512, 8, 4096, 1, 1, 1, None, 8, 0, 40769, 938),
 ("26.04.01", "performance-summary-archive.md", "LLAMA3_70B", "GB300", 64, "FP8", 256, 2, 8192, 1, 1, 1, None, None, 64, 5248, 2348),
 ("26.04.01", "performance-summary-archive.md", "LLAMA3_70B", "GB300", 64, "MXFP8", 256, 1, 8192, 1, 4, 1, 5, None, 0, 4864, 2186),
 ("26.04.01", "performance-summary-archive.md", "DeepSeekV3", "GB300", 256, "MXFP8", 4096, 2, 4096, 1, 2, 1, 8, 32, 0, 4992, 1298),
 ("26.04.01", "performance-summary-archive.md", "GPT OSS 120B", "GB300", 64, "BF16", 1280, 4, 4096, 1, 1, 1, None, 64, 0, 19200, 523),
 ("26.04.01", "performance-summary-archive.md", "GPT OSS 120B", "B300", 64, "BF16", 1280, 4, 4096, 1, 1, 1, None, 8, 0, 15232, 414),
 ("26.04.01", "performance-summary-archive.md", "Qwen3_235B_a22B", "B300", 256, "MXFP8", 8192, 2, 4096, 1, 8, 1, None, 8, 0, 5936, 878),
 ("26.04", "performance-summary-archive.md", "DeepSeekV3", "B300", 256, "MXFP8", 4096, 1, 4096, 1, 16, 1, None, 8, 0, 3131, 814),
 ("26.02.01", "performance-summary-archive.md", "LLAMA3_70B", "GB300", 64, "MXFP8", 256, 2, 8192, 1, 4, 1, None, None, 0, 4798, 2157),
 ("26.02.01", "performance-summary-archive.md", "LLAMA3.1_405B", "GB300", 256, "FP8", 1536, 1, 8192, 2, 8, 2, 4, None, 0, 1024, 2585),
 ("26.02.01", "performance-summary-archive.md", "Qwen3_235B_a22B", "GB300", 256, "MXFP8", 8192, 2, 4096, 1, 4, 1, None, 32, 0, 6583, 974),
 ("26.02.01", "performance-summary-archive.md", "Qwen3_235B_a22B", "B300", 256, "MXFP8", 8192, 1, 4096, 1, 8, 1, 4, 8, 0, 2644, 391),
 ("26.02", "performance-summary-archive.md", "GPT OSS 120B", "B300", 64, "BF16", 1280, 4, 4096, 1, 1, 1, None, 64, 0, 8359, 228),
]


def row(i, prefix, rel, page, model, gpu, n, prec, gbs, mbs, seq, tp, pp, cp, vp, ep, fsdp, tok, tfl, note):
    notes = ((note + " ") if note else "") + ("MB footnote: MoE benchmarks force-balance token distribution among experts; token-dropless." if BASE[TEMPLATE[model]].get("moe") else "")
    return layout_row(TEMPLATE[model], gpu, n, PREC[prec], gbs, mbs, seq, tp, pp, vp, cp, ep, None, fsdp,
                      None, tok, tfl, round(gbs * seq / (tok * n), 3), ["step_time_s"], {
                          "id": "%s-%02d" % (prefix, i), "source": COMMIT + page,
                          "source_section": "%s NeMo Container / Pre-Training Performance" % rel,
                          "notes": notes.strip(), "measurement_kind": "benchmark (published table)"})


later = [row(i, "MBL", *t[:14], 0, *t[14:]) for i, t in enumerate(ROWS, 1)]
ultra = [row(i, "MBU", *t, "") for i, t in enumerate(ULTRA_ROWS, 1)]
for name, rows in (("later_releases.json", later), ("blackwell_ultra.json", ultra)):
    write(name, rows)
    print(name, len(rows))

"""make_verification_cards.py — writes presets/validation/verification_cards.json: the pre-training
performance items of Megatron-Bridge's model verification cards (main at commit 067f987,
examples/model_verification_cards/<model>/card.yaml) for models of the validation set on GPUs
with a Fathom preset. Each card item states step time, tokens/s/GPU and model TFLOP/s/GPU (mean
of steps 41-50 of a 50-step run on mock data with force-balanced routing); the layout is the
item's, or that of the benchmark recipe it names (src/megatron/bridge/perf_recipes/..., at the
commit the item names). These are NVIDIA's tuned recipes, not a release's summary table. The
model shape comes from the validation row of the same model. Run from the repository root."""
import os
import json
base = {r["id"]: r for r in json.load(open(os.path.join("presets", "validation", "measured_runs.json")))}
CARD = "NVIDIA-NeMo/Megatron-Bridge@067f987df03b8355b03192d88d70f1709fedf51a:examples/model_verification_cards/%s/card.yaml"
TEMPLATE = {"deepseek-v3": "MB-009", "gpt-oss-120b": "MB-011", "qwen3-30b-a3b": "MB-004",
            "qwen3-235b-a22b": "MB-005"}
GPU = {"GB200": "GB200 (DGX-GB200, NVL72)", "H100": "H100-SXM5-80GB (DGX-H100)"}
# card, gpu, recipe, recipe commit, gpus, precision, gbs, mbs, seq, tp, pp, vp, cp, ep, etp,
# recompute (the recipe's), step ms, tokens/s/GPU, TFLOP/s/GPU, note
ROWS = [
 ("deepseek-v3", "H100", "deepseek_v3_pretrain_1024gpu_h100_bf16_config", "79308d0d99fb8c09b3f1a22baa68a4ffa4f4ce1e", 1024, "BF16", 16384, 1, 4096, 2, 8, 4, 1, 64, 1, "selective: mla_up_proj, mlp", 61756.130, 1061.206, 276.030, "Container nemo:26.08.rc5. HybridEP dispatcher, no CUDA graphs; MTP and loss in the last pipeline chunk."),
 ("deepseek-v3", "GB200", "deepseek_v3_pretrain_256gpu_gb200_fp8mx_config", "79308d0d99fb8c09b3f1a22baa68a4ffa4f4ce1e", 256, "MXFP8", 4096, 1, 4096, 1, 4, 4, 1, 64, 1, "selective: mla_up_proj", 13841.180, 4734.856, 1231.040, "Container nemo:26.08.rc5. HybridEP, full-iteration CUDA graph, all-to-all overlapped with delayed weight gradients, paged stash."),
 ("gpt-oss-120b", "GB200", "gpt_oss_120b_pretrain_64gpu_gb200_bf16_config", "a8038f6d99d8ade33e1b715ba79bc9185b073e59", 64, "BF16", 1280, 4, 4096, 1, 1, None, 1, 64, 1, "selective: layernorm, moe_act", 4995.630, 16398.332, 535.230, "Container nemo:26.06. Plain all-to-all dispatcher overlapped with delayed weight gradients, no CUDA graphs."),
 ("qwen3-235b-a22b", "GB200", "qwen3_235b_a22b_pretrain_256gpu_gb200_fp8mx_config", "0480586879f2513958fd8634fc529693ae13e536", 256, "MXFP8", 8192, 1, 4096, 1, 8, 3, 1, 32, 1, "none", 17905.340, 7320.274, 1083.660, "Container nemo:26.08. HybridEP, full-iteration CUDA graph, all-to-all overlap, paged stash, FP8 attention."),
 ("qwen3-30b-a3b", "H100", "qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config", "3a9559f01283190bf16a7a592c1e2c35d908c496", 16, "BF16", 1024, 1, 4096, 1, 1, None, 1, 16, 1, "none", 20147.290, 13011.378, 299.352, "Container nemo:26.08.rc2 (Megatron-Bridge PR 5123, which also gives 62.166 GiB peak memory). HybridEP with permute fusion, CUDA graphs over router and preprocessing."),
 ("qwen3-30b-a3b", "GB200", "qwen3_30b_a3b_pretrain_8gpu_gb200_fp8mx_config", "6e1b47893e3c174e74a97fb1730c9f58387ab882", 8, "MXFP8", 512, 4, 4096, 1, 1, None, 1, 8, 1, "none", 6501.120, 40322.898, 927.680, "Container nemo:26.06. HybridEP, full-iteration CUDA graph, all-to-all overlap, paged stash, FP8 attention."),
]
# peak allocated memory where a source states it: Megatron-Bridge PR 5123 for the 16-H100 recipe
PEAK_GIB = {("qwen3-30b-a3b", "H100"): 62.166}
out = []
for i, (card, gpu, recipe, commit, n, prec, gbs, mbs, seq, tp, pp, vp, cp, ep, etp, rec, step_ms, tok, tfl, note) in enumerate(ROWS, 1):
    r = dict(base[TEMPLATE[card]])
    dp = n // (tp * pp * cp)
    assert dp * tp * pp * cp == n and gbs % (dp * mbs) == 0
    # the card's tokens/s is its step time's: GBS x seq / (GPUs x step)
    assert abs(gbs * seq / (n * step_ms / 1000) / tok - 1) < 1e-5, card
    r.update({"id": "VC-%02d" % i, "source": CARD % card,
              "source_section": "items.pretrain_performance.%s (recipe %s at Megatron-Bridge %s)" % (gpu, recipe, commit[:12]),
              "seq_len": seq, "gpu_type": GPU[gpu], "gpu_count": n, "precision": prec,
              "tp": tp, "pp": pp, "vp": vp, "cp": cp, "ep": ep, "etp": etp, "dp": dp, "fsdp": 0,
              "global_batch": gbs, "micro_batch": mbs, "grad_accum": gbs // (dp * mbs),
              "recompute": rec, "tokens_per_s_per_gpu": tok, "tflops_per_gpu": tfl, "mfu": None,
              "step_time_s": round(step_ms / 1000, 6), "memory_gib": PEAK_GIB.get((card, gpu)),
              "derived_fields": ["dp", "grad_accum"],
              "notes": note + " Force-balanced routing, mock data (the card's performance items).",
              "measurement_kind": "benchmark (model verification card)", "fsdp_enabled": False})
    r.pop("tflops_without_cp", None)
    out.append(r)
json.dump(out, open(os.path.join("presets", "validation", "verification_cards.json"), "w"), indent=1)

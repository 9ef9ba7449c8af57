"""make_recipe_rows.py — writes the two files of NVIDIA's tuned recipes beside the validation set,
for models of the validation set on GPUs with a Fathom preset. Run from the repository root.

presets/validation/verification_cards.json: the pre-training performance items of
Megatron-Bridge's model verification cards (main at commit 067f987,
examples/model_verification_cards/<model>/card.yaml). Each item states step time, tokens/s/GPU
and model TFLOP/s/GPU (mean of steps 41-50 of a 50-step run on mock data with force-balanced
routing); the layout is the item's, or that of the benchmark recipe it names
(src/megatron/bridge/perf_recipes/..., at the commit the item names).

presets/validation/moe_recipes.json: Megatron-LM's MoE recipe index (dev at commit d48bd6b,
examples/moe_recipes/README.md and the recipe YAML it links), which states the median model
TFLOP/s/GPU of each recipe and its layout. Its tokens/s/GPU and step time are derived: TFLOP/s
over the model FLOPs per token that the verification cards state for the same model and sequence
length (their TFLOP/s over their tokens/s; Megatron's count in both). Several recipes are A/B
pairs on one layout (partial against full-iteration CUDA graphs), which is why they are kept.

The model shape of every row comes from the validation row of the same model."""
from validation_rows import layout_row, write

TEMPLATE = {"deepseek-v3": "MB-009", "gpt-oss-120b": "MB-011", "qwen3-30b-a3b": "MB-004",
            "qwen3-235b-a22b": "MB-005"}


def row(model, gpu, n, prec, gbs, mbs, seq, tp, pp, vp, cp, ep, etp, rec, tokens, tflops,
        step_s, derived, fields):
    """A recipe's row: step time and tokens/s must be one measurement."""
    assert abs(gbs * seq / (n * step_s) / tokens - 1) < 1e-5, model
    return layout_row(TEMPLATE[model], gpu, n, prec, gbs, mbs, seq, tp, pp, vp, cp, ep, etp, 0,
                      rec, tokens, tflops, step_s, derived, fields)


CARD = "NVIDIA-NeMo/Megatron-Bridge@067f987df03b8355b03192d88d70f1709fedf51a:examples/model_verification_cards/%s/card.yaml"
# card, gpu, recipe, recipe commit, gpus, precision, gbs, mbs, seq, tp, pp, vp, cp, ep, etp,
# recompute (the recipe's), step ms, tokens/s/GPU, TFLOP/s/GPU, note
CARDS = [
 ("deepseek-v3", "H100", "deepseek_v3_pretrain_1024gpu_h100_bf16_config", "79308d0d99fb8c09b3f1a22baa68a4ffa4f4ce1e", 1024, "BF16", 16384, 1, 4096, 2, 8, 4, 1, 64, 1, "selective: mla_up_proj, mlp", 61756.130, 1061.206, 276.030, "Container nemo:26.08.rc5. HybridEP dispatcher, no CUDA graphs; MTP and loss in the last pipeline chunk."),
 ("deepseek-v3", "GB200", "deepseek_v3_pretrain_256gpu_gb200_fp8mx_config", "79308d0d99fb8c09b3f1a22baa68a4ffa4f4ce1e", 256, "MXFP8", 4096, 1, 4096, 1, 4, 4, 1, 64, 1, "selective: mla_up_proj", 13841.180, 4734.856, 1231.040, "Container nemo:26.08.rc5. HybridEP, full-iteration CUDA graph, all-to-all overlapped with delayed weight gradients, paged stash."),
 ("gpt-oss-120b", "GB200", "gpt_oss_120b_pretrain_64gpu_gb200_bf16_config", "a8038f6d99d8ade33e1b715ba79bc9185b073e59", 64, "BF16", 1280, 4, 4096, 1, 1, None, 1, 64, 1, "selective: layernorm, moe_act", 4995.630, 16398.332, 535.230, "Container nemo:26.06. Plain all-to-all dispatcher overlapped with delayed weight gradients, no CUDA graphs."),
 ("qwen3-235b-a22b", "GB200", "qwen3_235b_a22b_pretrain_256gpu_gb200_fp8mx_config", "0480586879f2513958fd8634fc529693ae13e536", 256, "MXFP8", 8192, 1, 4096, 1, 8, 3, 1, 32, 1, "none", 17905.340, 7320.274, 1083.660, "Container nemo:26.08. HybridEP, full-iteration CUDA graph, all-to-all overlap, paged stash, FP8 attention."),
 ("qwen3-30b-a3b", "H100", "qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config", "3a9559f01283190bf16a7a592c1e2c35d908c496", 16, "BF16", 1024, 1, 4096, 1, 1, None, 1, 16, 1, "none", 20147.290, 13011.378, 299.352, "Container nemo:26.08.rc2 (Megatron-Bridge PR 5123, which also gives 62.166 GiB peak memory). HybridEP with permute fusion, CUDA graphs over router and preprocessing."),
 ("qwen3-30b-a3b", "GB200", "qwen3_30b_a3b_pretrain_8gpu_gb200_fp8mx_config", "6e1b47893e3c174e74a97fb1730c9f58387ab882", 8, "MXFP8", 512, 4, 4096, 1, 1, None, 1, 8, 1, "none", 6501.120, 40322.898, 927.680, "Container nemo:26.06. HybridEP, full-iteration CUDA graph, all-to-all overlap, paged stash, FP8 attention."),
]
# peak allocated memory where a source states it: Megatron-Bridge PR 5123 for the 16-H100 recipe
PEAK_GIB = {("qwen3-30b-a3b", "H100"): 62.166}


def verification_cards():
    out = []
    for i, (card, gpu, recipe, commit, n, prec, gbs, mbs, seq, tp, pp, vp, cp, ep, etp, rec, step_ms, tok, tfl, note) in enumerate(CARDS, 1):
        r = row(card, gpu, n, prec, gbs, mbs, seq, tp, pp, vp, cp, ep, etp, rec, tok, tfl,
                round(step_ms / 1000, 6), [], {
                    "id": "VC-%02d" % i, "source": CARD % card,
                    "source_section": "items.pretrain_performance.%s (recipe %s at Megatron-Bridge %s)" % (gpu, recipe, commit[:12]),
                    "notes": note + " Force-balanced routing, mock data (the card's performance items).",
                    "measurement_kind": "benchmark (model verification card)"})
        r["memory_gib"] = PEAK_GIB.get((card, gpu))
        out.append(r)
    return out


def card_flops_per_token(model):
    """Model FLOPs per token (seq 4096) as the verification cards state it: the mean over the
    model's card items of TFLOP/s over tokens/s."""
    ratios = [c[18] / c[17] * 1e12 for c in CARDS if c[0] == model and c[8] == 4096]
    assert ratios and max(ratios) / min(ratios) - 1 < 1e-3, model
    return sum(ratios) / len(ratios)


RECIPES = "NVIDIA/Megatron-LM@d48bd6be0a85cc0d6d3cc71e8750cf357cc6bdb1:examples/moe_recipes/%s"
# recipe YAML, model, gpu, gpus, precision, gbs, mbs, tp, pp, vp, ep, recompute (the recipe's),
# median model TFLOP/s/GPU (the index's), note (the recipe's dispatcher, graphs, overlap)
RECIPE_ROWS = [
 ("deepseek_v3/b200/mxfp8_256GPU_TP1PP8EP32.yaml", "deepseek-v3", "B200", 256, "MXFP8", 2048, 1, 1, 8, 2, 32, "selective: mla_up_proj, mlp", 776.7, "DeepEP dispatcher, all-to-all overlapped with delayed weight gradients, no CUDA graphs; pipeline layout Et*4|(tttt|)*14tmL (16 chunks), MTP 1."),
 ("deepseek_v3/gb200/mxfp8_256GPU_TP1PP4EP64.yaml", "deepseek-v3", "GB200", 256, "MXFP8", 8192, 1, 1, 4, 4, 64, "selective: mla_up_proj", 1127.6, "HybridEP, CUDA graphs over attention, router and preprocessing, all-to-all overlapped with delayed weight gradients, expert fc1 activations and optimizer state offloaded; pipeline layout Et*4|(tttt|)*14tmL (16 chunks), MTP 1."),
 ("qwen3_235b/h100/bf16_256GPU_TP2PP8EP32.yaml", "qwen3-235b-a22b", "H100", 256, "BF16", 2048, 1, 2, 8, 4, 32, "selective: moe_act, layernorm", 214.3, "HybridEP, CUDA graphs over router and preprocessing, all-to-all overlapped with delayed weight gradients; embedding and loss counted in the pipeline split."),
 ("qwen3_235b/b200/mxfp8_128GPU_TP2PP4EP16.yaml", "qwen3-235b-a22b", "B200", 128, "MXFP8", 3072, 3, 2, 4, 12, 16, "none", 633.9, "DeepEP, all-to-all overlapped with delayed weight gradients, no CUDA graphs; embedding and loss counted in the pipeline split."),
 ("qwen3_235b/gb200/mxfp8_128GPU_TP1PP1EP64_partial_cg_overlap.yaml", "qwen3-235b-a22b", "GB200", 128, "MXFP8", 8192, 1, 1, 1, None, 64, "none", 1018.0, "HybridEP, CUDA graphs over attention, router and preprocessing (partial), all-to-all overlapped with delayed weight gradients. A/B pair with the next row."),
 ("qwen3_235b/gb200/mxfp8_128GPU_TP1PP1EP64_paged_stash_fullcg_overlap.yaml", "qwen3-235b-a22b", "GB200", 128, "MXFP8", 8192, 1, 1, 1, None, 64, "none", 1159.5, "HybridEP, one CUDA graph over the whole iteration (paged stash), all-to-all overlapped with delayed weight gradients. A/B pair with the row before."),
 ("qwen3_30b/h100/bf16_32GPU_TP1PP1EP8.yaml", "qwen3-30b-a3b", "H100", 32, "BF16", 256, 1, 1, 1, None, 8, "none", 234.1, "HybridEP, no CUDA graphs (the index's BF16 baseline)."),
 ("qwen3_30b/h100/fp8_32GPU_TP1PP1EP8.yaml", "qwen3-30b-a3b", "H100", 32, "FP8 (blockwise)", 256, 1, 1, 1, None, 8, "none", 232.4, "HybridEP, CUDA graphs over attention, router and preprocessing, FP8 blockwise scaling."),
 ("qwen3_30b/gb200/bf16_16GPU_TP1PP1EP16.yaml", "qwen3-30b-a3b", "GB200", 16, "BF16", 512, 4, 1, 1, None, 16, "none", 528.0, "HybridEP, no CUDA graphs, gradient reduction and parameter gather not overlapped (the index's BF16 baseline)."),
 ("qwen3_30b/gb200/mxfp8_16GPU_TP1PP1EP16_partial_cg.yaml", "qwen3-30b-a3b", "GB200", 16, "MXFP8", 512, 4, 1, 1, None, 16, "none", 514.0, "HybridEP, CUDA graphs over attention, router and preprocessing (partial), gradient reduction not overlapped. A/B pair with the next row."),
 ("qwen3_30b/gb200/mxfp8_16GPU_TP1PP1EP16_paged_stash.yaml", "qwen3-30b-a3b", "GB200", 16, "MXFP8", 512, 4, 1, 1, None, 16, "none", 646.8, "HybridEP, one CUDA graph over the whole iteration (paged stash), gradient reduction not overlapped. A/B pair with the row before."),
]


def moe_recipes():
    out = []
    for i, (yaml, model, gpu, n, prec, gbs, mbs, tp, pp, vp, ep, rec, tfl, note) in enumerate(RECIPE_ROWS, 1):
        tok = round(tfl * 1e12 / card_flops_per_token(model), 3)
        step = gbs * 4096 / (n * tok)
        out.append(row(model, gpu, n, prec, gbs, mbs, 4096, tp, pp, vp, 1, ep, 1, rec, tok, tfl,
                       round(step, 6), ["tokens_per_s_per_gpu", "step_time_s"], {
                           "id": "MLMR-%02d" % i, "source": RECIPES % yaml,
                           "source_section": "Recipe Index (examples/moe_recipes/README.md): median TFLOP/s/GPU",
                           "notes": note + " Force-balanced routing, mock data. Tokens/s and step time derived from the median TFLOP/s at %.3f GFLOP per token (the verification cards' count for this model)." % (card_flops_per_token(model) / 1e9),
                           "measurement_kind": "benchmark (recipe index, median)"}))
        # the step time is rounded, so its tokens/s is the derived one within the assert's 1e-5
    return out


write("verification_cards.json", verification_cards())
write("moe_recipes.json", moe_recipes())

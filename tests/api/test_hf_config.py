"""test_hf_config.py — a planner's own model from its Hugging Face config.json, through a real
fathomd: POST /v1/models/from-hf-config for one config of every family, whose parameter counts
must equal the published ones; {"model": {"hf_config": ...}} in /v1/estimate, a search sweep and
the transformer endpoint giving what the matching preset gives; unknown architectures and bad
keys as 422s naming the field; summary.parameters_mtp beside the totals.

The configs in tests/data/hf_config/ are the files as the checkpoints publish them on the
Hugging Face hub (<org>/<name>/config.json), keys Fathom ignores included. Six were added on
2026-11-27 without a copy of the hub at hand: Qwen1.5-MoE-A2.7B, OLMo-2-1124-7B, GLM-4.5-Air,
gemma-3-1b-pt and the two Llama 4 configs carry every key that sets the shape as those
checkpoints publish it, transcribed, and only some of the keys Fathom ignores
(transformers_version left out; Llama 4's vision_config cut to its sizes). gemma-3-4b-pt,
-12b-pt and -27b-pt (2026-11-27, the same way) carry their text_config as published, which
leaves keys to Gemma3TextConfig's defaults; their shapes agree with TensorRT-LLM's copy of the
27B config in its Gemma 3 tests and with the Gemma 3 report's parameter counts;
Mistral-Small-3.1-24B-Base-2503 (the same way) has its vision_config and text_config keys as
published; starcoderbase, bloom and llama-65b (the same way) every key that sets the shape and
most of the others."""
import json
import os
import unittest

from harness import SOURCE, ServerTestCase, validate

DATA = os.path.join(SOURCE, "tests", "data", "hf_config")

# Published parameter counts: (total, active or None, places, source). `places` is the
# precision the source publishes: the count must round to it (10**9 · 10**-places apart at most
# half a unit). Exact counts (places None) are the safetensors totals the hub shows, which the
# presets' comments also give.
PUBLISHED = {
    "Meta-Llama-3-8B": (8030261248, None, None,
                        "meta-llama/Meta-Llama-3-8B safetensors total (8,030,261,248)"),
    "Llama-3.1-405B": (405853388800, None, None,
                       "meta-llama/Llama-3.1-405B safetensors total (405,853,388,800)"),
    "Mistral-7B-v0.3": (7248023552, None, None,
                        "mistralai/Mistral-7B-v0.3 safetensors total (7,248,023,552)"),
    "Qwen2.5-7B": (7615616512, None, None, "Qwen/Qwen2.5-7B model card: 7.61B; safetensors 7,615,616,512"),
    "Qwen2.5-72B": (72706203648, None, None, "Qwen/Qwen2.5-72B model card: 72.7B; safetensors 72,706,203,648"),
    "Qwen3-8B": (8.2e9, None, 1, "Qwen/Qwen3-8B model card: 8.2B parameters"),
    "Qwen3-30B-A3B": (30.5e9, 3.3e9, 1, "Qwen/Qwen3-30B-A3B model card: 30.5B total, 3.3B activated"),
    "Qwen3-235B-A22B": (235e9, 22e9, 0, "Qwen/Qwen3-235B-A22B model card: 235B total, 22B activated"),
    "Mixtral-8x7B-v0.1": (46702792704, 12879925248, None,
                          "mistralai/Mixtral-8x7B-v0.1 safetensors total; Mistral AI's "
                          "'Mixtral of experts' (2024): 47B total, 13B active"),
    "DeepSeek-V2": (236e9, 21e9, 0, "DeepSeek-V2 technical report (arXiv 2405.04434), abstract: "
                                   "236B total, 21B activated per token"),
    # DeepSeek-V3 report (arXiv 2412.19437): 671B total, 37B activated, without the MTP module
    "DeepSeek-V3": (671026419200, 37552297472, None,
                    "DeepSeek-V3 technical report: 671B total, 37B activated (main model; the "
                    "hub's 685B adds the 14B MTP module)"),
    # OpenAI's gpt-oss model card (2025), table 1: totals, and active parameters counted
    # without the token embedding (a lookup): Fathom's active count includes it.
    "gpt-oss-120b": (116.83e9, 5.13e9, 2, "gpt-oss model card, table 1: 116.83B total, 5.13B active"),
    "gpt-oss-20b": (20.91e9, 3.61e9, 2, "gpt-oss model card, table 1: 20.91B total, 3.61B active"),
    "gemma-7b": (8.54e9, None, 2, "Gemma technical report (arXiv 2403.08295), table 2: "
                                  "7,751,248,896 non-embedding + 786,432,000 embedding = 8.54B"),
    "gemma-2-9b": (9.24e9, None, 2, "google/gemma-2-9b on the hub: 9.24B parameters"),
    "Phi-3-mini-4k-instruct": (3.8e9, None, 1, "Phi-3 technical report (arXiv 2404.14219): "
                                               "phi-3-mini, 3.8B parameters"),
    "phi-4": (14.7e9, None, 1, "microsoft/phi-4 on the hub: 14.7B parameters"),
    # Qwen's 'Qwen1.5-MoE: Matching 7B Model Performance with 1/3 Activated Parameters'
    # (2024-03-28): 14.3B in total, 2.7B activated (the shared expert's gate, 49,152 in all, is
    # not counted)
    "Qwen1.5-MoE-A2.7B": (14.3e9, 2.7e9, 1, "Qwen blog, Qwen1.5-MoE: 14.3B total, 2.7B activated"),
    # 7,298,617,344 with q_norm and k_norm (32 · 8,192, not counted)
    "OLMo-2-1124-7B": (7.3e9, None, 1, "allenai/OLMo-2-1124-7B on the hub: 7.3B parameters"),
    # GLM-4.5 report (arXiv 2508.06471): 'GLM-4.5-Air, with 106B total parameters and 12B
    # activated' (the main model; Fathom's 106.85B cut as the report cuts it; the MTP layer apart)
    "GLM-4.5-Air": (106e9, None, 0, "GLM-4.5 technical report: GLM-4.5-Air, 106B total"),
    # Gemma 3 technical report (arXiv 2503.19786), table 1: 1B, 302M embedding + 698M
    # non-embedding parameters (each to the million)
    "gemma-3-1b-pt": (1.00e9, None, 2, "Gemma 3 technical report, table 1: 302M + 698M"),
    # Gemma 3's multimodal checkpoints: the text tower, the keys its text_config leaves out taken
    # from Gemma3TextConfig's defaults (vocab 262,208, 8 heads of 256, 4 KV heads). By hand, with
    # tied embeddings V·h, per block q and o 2·h·n·d, k and v 2·h·kv·d, the gated MLP 3·h·ff and
    # two norms 2·h, and the final norm h:
    # 4B  (h 2,560, 34 blocks, 8/4 heads of 256, ff 10,240): 671,252,480 + 34 · 94,376,960 +
    #     2,560 = 3,880,071,680
    # 12B (h 3,840, 48 blocks, 16/8 heads of 256, ff 15,360): 1,006,878,720 + 48 · 224,140,800
    #     + 3,840 = 11,765,640,960
    # 27B (h 5,376, 62 blocks, 32/16 heads of 128, ff 21,504): 1,409,630,208 + 62 · 412,887,552
    #     + 5,376 = 27,008,663,808
    # The Gemma 3 report's table 1 (non-embedding parameters, to the million): 3,209M, 10,759M,
    # 25,600M; the counts above less V·h are 3,208.8M, 10,758.8M and 25,599.0M, and the q_norm,
    # k_norm and post-norms Fathom notes as not counted (62 · 11,008 = 0.68M in the 27B) make up
    # the rest.
    "gemma-3-4b-pt": (3880071680, None, None, "hand count of the text tower"),
    "gemma-3-12b-pt": (11765640960, None, None, "hand count of the text tower"),
    "gemma-3-27b-pt": (27008663808, None, None, "hand count of the text tower"),
    # Mistral Small 3.1 (Mistral3ForConditionalGeneration): the text model under text_config is
    # Mistral Small 3's, whose text-only checkpoint the hub counts at 23.6B; by hand, untied
    # embeddings 2 · 131,072 · 5,120 = 1,342,177,280, 40 blocks of 52,428,800 (attention, 32/8
    # heads of 128) + 503,316,480 (MLP) + 10,240 (norms), and the final norm 5,120:
    # 23,572,403,200
    "Mistral-Small-3.1-24B-Base-2503": (23572403200, None, None,
                                        "hand count; mistralai/Mistral-Small-24B-Base-2501 on "
                                        "the hub: 23.6B parameters"),
    # StarCoderBase (GPTBigCodeForCausalLM, GPT-2's key names): by hand, the token table
    # 49,152 · 6,144 = 301,989,888 (tied to the output layer) and the position table 8,192 ·
    # 6,144 = 50,331,648; per block two LayerNorms with shifts 4 · 6,144 = 24,576, the fused
    # multi-query projection 6,144 · (6,144 + 2 · 128) + its bias 6,400 = 39,328,000, the output
    # projection 6,144² + 6,144 = 37,754,880, the MLP 2 · 6,144 · 24,576 + 24,576 + 6,144 =
    # 302,020,608: 379,128,064 a block, 40 blocks, and the final LayerNorm 12,288:
    # 15,517,456,384, the paper's 15.5B
    "starcoderbase": (15517456384, None, None,
                      "hand count; Li et al. 2023 (arXiv:2305.06161): StarCoderBase, 15.5B"),
    # BLOOM (BloomForCausalLM): by hand, the tied token table 250,880 · 14,336 = 3,596,615,680;
    # per block two LayerNorms with shifts 57,344, the fused QKV 3 · 14,336² + 43,008 =
    # 616,605,696, the output projection 14,336² + 14,336 = 205,535,232, the MLP 2 · 4 · 14,336²
    # + 57,344 + 14,336 = 1,644,238,848: 2,466,437,120 a block, 70 blocks, and the final
    # LayerNorm 28,672: 176,247,242,752. The LayerNorm after the token embedding (28,672, noted
    # as not counted) makes the BLOOM paper's 176,247M (arXiv:2211.05100, table 3).
    "bloom": (176247242752, None, None, "hand count; BLOOM paper, table 3: 176,247M"),
    # LLaMA 65B (huggyllama/llama-65b, the LLaMA checkpoint in transformers' format): untied
    # tables 2 · 32,000 · 8,192 = 524,288,000, per block attention 4 · 8,192² = 268,435,456, the
    # gated MLP 3 · 8,192 · 22,016 = 541,065,216 and two norms 16,384, 80 blocks, the final norm
    # 8,192: 65,285,660,672 (the paper's table 2 rounds it to 65.2B)
    "llama-65b": (65285660672, None, None, "hand count; Touvron et al. 2023: 65.2B"),
    # Llama 4: Meta's model cards give 109B and 400B in total with the vision encoder, which
    # Fathom leaves out, and 17B activated. The text towers by hand: embeddings and output layer
    # 2 · 202,048 · 5,120 = 2,068,971,520, the final norm 5,120, and per block attention
    # 2 · 5,120² + 2 · 5,120 · 1,024 = 62,914,560 and two norms 10,240; an expert or the shared
    # expert 3 · 5,120 · 8,192 = 125,829,120, a dense MLP 3 · 5,120 · 16,384 = 251,658,240, the
    # router 5,120 per expert.
    # Scout, 48 MoE blocks of 16 experts: 48 · (62,914,560 + 10,240 + 17 · 125,829,120 + 81,920)
    # + 2,068,976,640 = 107,769,861,120; activated 48 · (62,924,800 + 2 · 125,829,120 + 81,920)
    # + 2,068,976,640 = 17,172,894,720 (the card's 17B)
    "Llama-4-Scout-17B-16E": (107769861120, 17172894720, None,
                              "hand count of the text tower (card: 17B activated)"),
    # Maverick, 24 dense blocks and 24 MoE blocks of 128 experts: 24 · 314,583,040 + 24 ·
    # (62,924,800 + 129 · 125,829,120 + 655,360) + 2,068,976,640 = 400,711,848,960 (the card's
    # 400B with its vision encoder); activated 24 · 314,583,040 + 24 · 315,238,400 +
    # 2,068,976,640 = 17,184,691,200 (17B)
    "Llama-4-Maverick-17B-128E": (400711848960, 17184691200, None,
                                  "hand count of the text tower (card: 17B activated)"),
}
# The preset each config is also shipped as: the same model, field for field.
PRESET = {"Meta-Llama-3-8B": "llama3-8B", "Llama-3.1-405B": "llama3.1-405B",
          "Mistral-7B-v0.3": "mistral-7B-v0.3", "Qwen2.5-7B": "qwen2.5-7B",
          "Qwen2.5-72B": "qwen2.5-72B", "Qwen3-30B-A3B": "qwen3-30B-A3B",
          "Qwen3-235B-A22B": "qwen3-235B-A22B", "Mixtral-8x7B-v0.1": "mixtral-8x7B",
          "DeepSeek-V3": "deepseek-v3", "gpt-oss-120b": "gpt-oss-120B",
          "Llama-4-Scout-17B-16E": "llama4-scout", "Llama-4-Maverick-17B-128E": "llama4-maverick"}
FAMILIES = {"llama", "mistral", "qwen2", "qwen3", "qwen3_moe", "mixtral", "deepseek_v2",
            "deepseek_v3", "gpt_oss", "gemma", "gemma2", "phi3", "qwen2_moe", "olmo2", "glm4_moe",
            "gemma3_text", "llama4", "gemma3", "gpt_bigcode", "bloom"}


def config(name):
    with open(os.path.join(DATA, name + ".json")) as f:
        return json.load(f)


def rounds_to(got, published, places):
    """got, in billions, is the published figure to its last place: rounded, or cut as some
    model cards cut (Qwen's 30.53B is '30.5B', its 3.35B active '3.3B')."""
    unit = 10 ** -places
    return abs(got / 1e9 - published / 1e9) <= unit / 2 or 0 <= got / 1e9 - published / 1e9 < unit


class HfConfig(ServerTestCase):
    def read(self, name):
        r = self.server.post("/v1/models/from-hf-config", config(name))
        self.assertEqual(r.status, 200, r.body)
        out = r.json()
        validate(out, "hf_config.response.json")
        return out

    def test_published_counts_per_family(self):
        seen = set()
        for name, (total, active, places, source) in PUBLISHED.items():
            with self.subTest(model=name, source=source):
                validate(config(name), "hf_config.json")  # the request schema holds for it
                out = self.read(name)
                seen.add(out["family"])
                p = out["parameters"]
                main_total = p["total"] - p["mtp"]
                main_active = p["active"] - p["mtp_active"]
                if out["family"] == "gpt_oss":  # OpenAI's active count leaves the lookup out
                    main_active -= out["model"]["vocab_size"] * out["model"]["hidden"]
                if places is None:
                    self.assertEqual(main_total, total)
                    if active is not None:
                        self.assertEqual(main_active, active)
                else:
                    self.assertTrue(rounds_to(main_total, total, places), (main_total, total))
                    if active is not None:
                        self.assertTrue(rounds_to(main_active, active, places),
                                        (main_active, active))
        self.assertEqual(seen, FAMILIES)

    def test_configs_read_as_the_presets(self):
        for name, preset in PRESET.items():
            with self.subTest(model=name):
                out = self.read(name)
                want = self.server.get("/v1/presets/models/" + preset).json()
                want.pop("$comment", None)
                got = out["model"]
                for key, value in want.items():
                    if key == "seq_size":  # the presets name the length they were trained at
                        continue
                    if isinstance(value, dict):  # moe, mla: the preset leaves defaults out
                        for k, v in value.items():
                            self.assertEqual(got[key][k], v, key + "." + k)
                    else:
                        self.assertEqual(got.get(key), value, key)

    def test_notes_say_what_was_assumed(self):
        out = self.read("Qwen3-8B")
        self.assertEqual(out["model"]["seq_size"], 8192)
        self.assertTrue(any("max_position_embeddings 40960" in n for n in out["notes"]), out["notes"])
        self.assertTrue(any("q_norm" in n for n in out["notes"]), out["notes"])
        out = self.read("DeepSeek-V3")
        self.assertEqual(out["model"]["seq_size"], 4096)  # rope_scaling's original length
        self.assertEqual(out["datatype"], "bfloat16")
        # transformers 5 saves the same config with rope_parameters (rope_theta moved inside)
        # and dtype in place of rope_scaling and torch_dtype: the same model
        cfg = config("DeepSeek-V3")
        cfg["rope_parameters"] = dict(cfg.pop("rope_scaling"), rope_theta=cfg.pop("rope_theta"))
        cfg["dtype"] = cfg.pop("torch_dtype")
        v5 = self.server.post("/v1/models/from-hf-config", cfg)
        self.assertEqual(v5.status, 200, v5.body)
        self.assertEqual(v5.json()["model"], out["model"])
        self.assertEqual(v5.json()["datatype"], "bfloat16")
        self.assertTrue(any(n.startswith("seq_size 4096 from the config's rope_parameters.")
                            for n in v5.json()["notes"]), v5.json()["notes"])
        cfg["rope_parameters"]["original_max_position_embeddings"] = "4k"
        self.assertError(self.server.post("/v1/models/from-hf-config", cfg), 422, "invalid_field",
                         "rope_parameters.original_max_position_embeddings")

    def test_model_hf_config_wherever_a_model_is(self):
        execution = {"num_procs": 8, "tensor_par": 8, "batch_size": 8, "datatype": "bfloat16",
                     "attention_kernel": "fused"}
        by_preset = self.server.post("/v1/estimate", {"model": "llama3-8B", "system": "h100_sxm",
                                                      "execution": execution})
        by_config = self.server.post("/v1/estimate", {
            "model": {"hf_config": config("Meta-Llama-3-8B")}, "system": "h100_sxm",
            "execution": execution})
        self.assertEqual(by_config.status, 200, by_config.body)
        self.assertEqual(by_config.json()["summary"]["step_time_s"],
                         by_preset.json()["summary"]["step_time_s"])
        # seq_size beside the config overrides its length
        short = self.server.post("/v1/estimate", {
            "model": {"hf_config": config("Meta-Llama-3-8B"), "seq_size": 4096},
            "system": "h100_sxm", "execution": execution})
        self.assertEqual(short.status, 200, short.body)
        s = short.json()["summary"]
        self.assertAlmostEqual(s["tokens_per_s"] / s["sample_rate"], 4096, delta=1e-6)
        t = self.server.post("/v1/transformer", {"model": {"hf_config": config("gemma-7b")}})
        self.assertEqual(t.status, 200, t.body)
        self.assertEqual(t.json()["params"]["total"], 8537680896)
        sweep = self.server.post("/v1/sweep", {
            "kind": "optimal_execution", "model": {"hf_config": config("Qwen2.5-7B")},
            "system": "h100_sxm", "num_procs": 8, "max_batch_size": 16, "datatype": "bfloat16",
            "options": {"max_tensor_par": 2, "max_pipeline_par": 1}})
        self.assertIn(sweep.status, (200, 202), sweep.body)

    def test_refusals_name_the_field(self):
        cfg = config("Meta-Llama-3-8B")
        cfg["architectures"] = ["RwkvForCausalLM"]  # a recurrent model: not a transformer
        r = self.server.post("/v1/models/from-hf-config", cfg)
        err = self.assertError(r, 422, "invalid_field", "architectures")
        for known in ("LlamaForCausalLM", "DeepseekV3ForCausalLM", "GptOssForCausalLM",
                      "Phi3ForCausalLM", "GPTBigCodeForCausalLM"):  # the last: none cut
            self.assertIn(known, err["message"])
        r = self.server.post("/v1/estimate", {"model": {"hf_config": cfg}, "system": "h100_sxm",
                                              "execution": {"num_procs": 1, "batch_size": 1}})
        self.assertError(r, 422, "invalid_field", "model.hf_config.architectures")
        cfg = config("Meta-Llama-3-8B")
        cfg["num_key_value_heads"] = 5
        r = self.server.post("/v1/models/from-hf-config", cfg)
        self.assertError(r, 422, "invalid_field", "num_key_value_heads")
        cfg = config("Meta-Llama-3-8B")
        cfg["hidden_size"] = "4096"
        r = self.server.post("/v1/estimate", {"model": {"hf_config": cfg}, "system": "h100_sxm",
                                              "execution": {"num_procs": 1, "batch_size": 1}})
        self.assertError(r, 422, "invalid_field", "model.hf_config.hidden_size")
        cfg = config("Qwen3-30B-A3B")
        cfg["mlp_only_layers"] = [0, 5]
        self.assertError(self.server.post("/v1/models/from-hf-config", cfg), 422,
                         "invalid_field", "mlp_only_layers")
        cfg = config("Meta-Llama-3-8B")
        del cfg["architectures"]
        self.assertError(self.server.post("/v1/models/from-hf-config", cfg), 422,
                         "invalid_field", "architectures")
        # A key Fathom reads, of the wrong JSON type, is named; so is the config key a refused
        # model field came from (not the model's moe.top_k or moe.first_dense_blocks).
        for key, value in (("torch_dtype", 5), ("rope_scaling", "foo"), ("rope_scaling", [1, 2])):
            cfg = dict(config("Qwen2.5-7B"), **{key: value})
            self.assertError(self.server.post("/v1/models/from-hf-config", cfg), 422,
                             "invalid_field", key)
        cfg = dict(config("Qwen3-30B-A3B"), num_experts_per_tok=129)  # of 128 experts
        self.assertError(self.server.post("/v1/models/from-hf-config", cfg), 422,
                         "invalid_field", "num_experts_per_tok")
        r = self.server.post("/v1/estimate", {"model": {"hf_config": cfg}, "system": "h100_sxm",
                                              "execution": {"num_procs": 1, "batch_size": 1}})
        self.assertError(r, 422, "invalid_field", "model.hf_config.num_experts_per_tok")
        cfg = dict(config("Qwen3-30B-A3B"), decoder_sparse_step=100)  # of 48 blocks
        self.assertError(self.server.post("/v1/models/from-hf-config", cfg), 422,
                         "invalid_field", "decoder_sparse_step")
        # A torch_dtype Fathom does not run is noted and leaves the datatype to the request.
        for dtype in ("int8", "foo"):
            r = self.server.post("/v1/models/from-hf-config",
                                 dict(config("Qwen2.5-7B"), torch_dtype=dtype))
            self.assertEqual(r.status, 200, r.body)
            self.assertNotIn("datatype", r.json())
            self.assertTrue(any('torch_dtype "%s"' % dtype in n for n in r.json()["notes"]),
                            r.json()["notes"])
        # A quantized checkpoint's format: one Fathom serves is the model's checkpoint_weights,
        # another is noted and leaves it at bf16; a malformed quantization_config is named, and
        # MXFP4 on a dense model is refused at the config key it came from.
        for q, want in (({"quant_method": "awq", "bits": 4, "group_size": 128}, "int4"),
                        ({"quant_method": "gptq", "bits": 8}, None),
                        ({"quant_method": "modelopt", "quant_algo": "NVFP4"}, "fp4"),
                        ({"quant_method": "modelopt", "quant_algo": "FP8_PB_WO"}, "fp8"),
                        ({"quant_method": "compressed-tensors", "format": "float-quantized"},
                         "fp8"),
                        ({"quant_method": "bitsandbytes", "load_in_4bit": True}, None)):
            r = self.server.post("/v1/models/from-hf-config",
                                 dict(config("Qwen2.5-7B"), quantization_config=q))
            self.assertEqual(r.status, 200, r.body)
            self.assertEqual(r.json()["model"].get("checkpoint_weights"), want, q)
            said = [n for n in r.json()["notes"] if n.startswith("checkpoint_weights")]
            self.assertEqual(len(said), 1, r.json()["notes"])
            self.assertIn('"%s"' % q["quant_method"], said[0])
        for q, field in (("fp8", "quantization_config"), ({"bits": 4}, "quantization_config.quant_method"),
                         ({"quant_method": "mxfp4"}, "quantization_config")):
            cfg = dict(config("Qwen2.5-7B"), quantization_config=q)
            self.assertError(self.server.post("/v1/models/from-hf-config", cfg), 422,
                             "invalid_field", field)
        r = self.server.post("/v1/estimate", {"model": {"hf_config": config("gemma-7b"),
                                                        "hidden": 8},
                                              "system": "h100_sxm",
                                              "execution": {"num_procs": 1, "batch_size": 1}})
        self.assertError(r, 422, "invalid_field", "model.hidden")

    def test_layer_patterns_shared_experts_and_dense_blocks(self):
        # Gemma 3: is_sliding = (layer_idx + 1) % sliding_window_pattern != 0, so every 6th block
        # attends to the whole sequence and the other five to the last 512 tokens
        m = self.read("gemma-3-1b-pt")["model"]
        self.assertEqual((m["sliding_window"], m["full_attention_every"]), (512, 6))
        self.assertEqual((m["attn_size"], m["kv_heads"], m["tied_embeddings"]), (256, 1, True))
        # the same pattern spelled out as newer configs write it
        cfg = config("gemma-3-1b-pt")
        del cfg["sliding_window_pattern"]
        cfg["layer_types"] = ["full_attention" if (i + 1) % 6 == 0 else "sliding_attention"
                              for i in range(26)]
        self.assertEqual(self.server.post("/v1/models/from-hf-config", cfg).json()["model"], m)
        cfg["layer_types"] = ["full_attention"] * 26  # no window at all
        full = self.server.post("/v1/models/from-hf-config", cfg).json()["model"]
        self.assertNotIn("sliding_window", {k for k, v in full.items() if v})
        cfg["layer_types"][3] = "sliding_attention"  # no period: refused, naming the key
        self.assertError(self.server.post("/v1/models/from-hf-config", cfg), 422,
                         "invalid_field", "layer_types")
        cfg["layer_types"] = ["local"] * 26
        self.assertError(self.server.post("/v1/models/from-hf-config", cfg), 422,
                         "invalid_field", "layer_types")
        # Qwen2-MoE: 60 routed experts of 1,408 and one shared expert of 5,632 in every block
        moe = self.read("Qwen1.5-MoE-A2.7B")["model"]["moe"]
        self.assertEqual((moe["num_experts"], moe["top_k"], moe["expert_feedforward"],
                          moe["shared_experts"], moe["shared_expert_feedforward"]),
                         (60, 4, 1408, 1, 5632))
        cfg = config("Qwen1.5-MoE-A2.7B")
        del cfg["shared_expert_intermediate_size"]
        self.assertError(self.server.post("/v1/models/from-hf-config", cfg), 422,
                         "invalid_field", "shared_expert_intermediate_size")
        # GLM-4.5-Air: the first block dense (intermediate_size 10,944), the MTP layer apart,
        # grouped-query attention of 96 heads of 128 on a hidden size of 4,096
        out = self.read("GLM-4.5-Air")
        m = out["model"]
        self.assertEqual((m["moe"]["first_dense_blocks"], m["feedforward"], m["mtp_blocks"]),
                         (1, 10944, 1))
        self.assertEqual((m["attn_heads"], m["attn_size"], m["kv_heads"], m["qkv_bias"]),
                         (96, 128, 8, True))
        self.assertNotIn("mla", {k for k, v in m.items() if v})
        self.assertTrue(any("o_proj has none" in n for n in out["notes"]), out["notes"])
        # Llama 4: the text model under text_config; Maverick's MoE every 2nd block from the
        # 2nd ((layer_idx + 1) % interleave_moe_layer_step == 0), dense blocks of
        # intermediate_size_mlp; chunked attention with a global block every 4th
        out = self.read("Llama-4-Maverick-17B-128E")
        m = out["model"]
        self.assertEqual((m["moe"]["first_dense_blocks"], m["moe"]["every"], m["feedforward"]),
                         (1, 2, 16384))
        self.assertEqual((m["sliding_window"], m["full_attention_every"], m["chunked_attention"]),
                         (8192, 4, True))
        self.assertTrue(any("vision" in n for n in out["notes"]), out["notes"])
        cfg = config("Llama-4-Scout-17B-16E")
        cfg["text_config"]["no_rope_layers"] = [1] * 48  # chunked everywhere: not modelled
        self.assertError(self.server.post("/v1/models/from-hf-config", cfg), 422,
                         "invalid_field", "text_config.no_rope_layers")
        cfg["text_config"]["no_rope_layers"] = [int((i + 1) % 4 != 0) for i in range(48)]
        self.assertEqual(self.server.post("/v1/models/from-hf-config", cfg).json()["model"],
                         self.read("Llama-4-Scout-17B-16E")["model"])
        cfg["text_config"]["hidden_size"] = "5120"
        self.assertError(self.server.post("/v1/models/from-hf-config", cfg), 422,
                         "invalid_field", "text_config.hidden_size")
        del cfg["text_config"]
        self.assertError(self.server.post("/v1/models/from-hf-config", cfg), 422,
                         "invalid_field", "text_config")

    def test_gemma3_multimodal_text_tower_with_class_defaults(self):
        # gemma-3-4b's text_config gives neither heads, head_dim nor vocab_size: transformers
        # takes Gemma3TextConfig's defaults, and the notes name each one so taken
        out = self.read("gemma-3-4b-pt")
        m = out["model"]
        self.assertEqual((m["attn_heads"], m["kv_heads"], m["attn_size"], m["vocab_size"]),
                         (8, 4, 256, 262208))
        self.assertEqual((m["sliding_window"], m["full_attention_every"], m["tied_embeddings"]),
                         (1024, 6, True))
        defaults = [n for n in out["notes"] if "Gemma3TextConfig's defaults" in n]
        self.assertEqual(len(defaults), 1, out["notes"])
        for key in ("vocab_size 262208", "num_attention_heads 8", "num_key_value_heads 4",
                    "head_dim 256"):
            self.assertIn(key, defaults[0])
        self.assertNotIn("hidden_size", defaults[0])  # given, so not defaulted
        self.assertTrue(any("vision encoder" in n for n in out["notes"]), out["notes"])
        # a key the config gives is read, not defaulted; a bad one names its path
        cfg = config("gemma-3-4b-pt")
        cfg["text_config"]["num_attention_heads"] = 16
        cfg["text_config"]["num_key_value_heads"] = 8
        r = self.server.post("/v1/models/from-hf-config", cfg)
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json()["model"]["attn_heads"], 16)
        cfg["text_config"]["num_key_value_heads"] = 3
        self.assertError(self.server.post("/v1/models/from-hf-config", cfg), 422,
                         "invalid_field", "text_config.num_key_value_heads")
        del cfg["text_config"]
        self.assertError(self.server.post("/v1/models/from-hf-config", cfg), 422,
                         "invalid_field", "text_config")
        # the text-only 1B gives every key: no defaults taken, the same model as before
        one = self.read("gemma-3-1b-pt")
        self.assertFalse(any("defaults" in n for n in one["notes"]), one["notes"])
        # and the 27B estimates like any model
        r = self.server.post("/v1/estimate", {
            "model": {"hf_config": config("gemma-3-27b-pt")}, "system": "h100_sxm",
            "execution": {"num_procs": 8, "tensor_par": 8, "batch_size": 8,
                          "datatype": "bfloat16", "attention_kernel": "fused"}})
        self.assertEqual(r.status, 200, r.body)

    def test_any_multimodal_wrapper_of_a_known_text_model(self):
        # a ...ForConditionalGeneration class without a row of its own is read by its
        # text_config's model_type, as AutoModelForCausalLM reads it
        out = self.read("Mistral-Small-3.1-24B-Base-2503")
        self.assertEqual(out["family"], "mistral")
        self.assertTrue(any("Mistral3ForConditionalGeneration's vision tower" in n
                            for n in out["notes"]), out["notes"])
        text = config("Mistral-Small-3.1-24B-Base-2503")["text_config"]
        alone = self.server.post("/v1/models/from-hf-config",
                                 dict(text, architectures=["MistralForCausalLM"]))
        self.assertEqual(alone.status, 200, alone.body)
        self.assertEqual(alone.json()["model"], out["model"])  # the text model, nothing else
        llava = {"architectures": ["LlavaForConditionalGeneration"], "text_config": dict(text)}
        self.assertEqual(self.server.post("/v1/models/from-hf-config", llava).json()["model"],
                         out["model"])
        llava["text_config"]["model_type"] = "ministral3"
        r = self.server.post("/v1/models/from-hf-config", llava)
        self.assertError(r, 422, "invalid_field", "text_config.model_type")
        self.assertIn("mistral", r.json()["error"]["message"])  # the known ones are listed
        del llava["text_config"]["model_type"]
        self.assertError(self.server.post("/v1/models/from-hf-config", llava), 422,
                         "invalid_field", "text_config.model_type")
        llava["text_config"] = None
        self.assertError(self.server.post("/v1/models/from-hf-config", llava), 422,
                         "invalid_field", "text_config")
        # a text model whose config leaves its sizes to the class defaults (LLaVA 1.5's Vicuna)
        # is refused naming the key, not read with a guess
        llava["text_config"] = {"model_type": "llama", "vocab_size": 32064,
                                "max_position_embeddings": 4096}
        self.assertError(self.server.post("/v1/models/from-hf-config", llava), 422,
                         "invalid_field", "text_config.hidden_size")

    def test_published_runs_read_from_their_checkpoints(self):
        # The whole runs the plan is checked against (tests/data/plans/published_runs.json,
        # their models written from each paper's architecture) read from their checkpoints'
        # configs as the same models: the plan of a run and of its config.json agree. Llama 3.1
        # 405B and DeepSeek-V3 go by preset (test_configs_read_as_the_presets); MPT-7B (remote
        # code, MPTForCausalLM) and Falcon-180B are not read.
        with open(os.path.join(SOURCE, "tests", "data", "plans", "published_runs.json")) as f:
            runs = {r["name"]: r["plan"]["model"] for r in json.load(f)["runs"]}
        for run, name in (("LLaMA 65B", "llama-65b"), ("BLOOM 176B", "bloom"),
                          ("StarCoderBase 15.5B", "starcoderbase")):
            with self.subTest(run=run):
                m = self.read(name)["model"]
                for key, value in runs[run].items():
                    self.assertEqual(m.get(key), value, key)
        # BLOOM's config gives no length (ALiBi): its pre-training length, said in the notes
        out = self.read("bloom")
        self.assertEqual((out["model"]["seq_size"], out["model"]["kv_heads"]), (2048, 112))
        self.assertTrue(any(n.startswith("seq_size 2048: every BLOOM model") for n in
                            out["notes"]), out["notes"])
        r = self.server.post("/v1/transformer", {"model": {"hf_config": config("bloom"),
                                                           "seq_size": 4096}})
        self.assertEqual(r.status, 200, r.body)

    def test_gpt2_lineage_keys(self):
        m = self.read("starcoderbase")["model"]
        self.assertEqual((m["gated_mlp"], m["qkv_bias"]), (False, True))
        # multi_query false: a key/value head per query head; n_inner null: 4 · n_embd
        cfg = config("starcoderbase")
        cfg["multi_query"] = False
        cfg["n_inner"] = None
        m = self.server.post("/v1/models/from-hf-config", cfg).json()["model"]
        self.assertEqual((m["kv_heads"], m["feedforward"]), (48, 4 * 6144))
        cfg["n_embd"] = 6100  # 48 heads do not divide it: the key is named as written
        r = self.server.post("/v1/models/from-hf-config", cfg)
        err = self.assertError(r, 422, "invalid_field", "head_dim")
        self.assertIn("n_embd", err["message"])
        del cfg["n_layer"]
        self.assertError(self.server.post("/v1/models/from-hf-config", cfg), 422,
                         "invalid_field", "n_layer")

    def test_parameters_mtp_beside_the_totals(self):
        r = self.server.post("/v1/estimate", {
            "model": "deepseek-v3", "system": "h100_sxm",
            "execution": {"num_procs": 1024, "tensor_par": 1, "pipeline_par": 16, "data_par": 64,
                          "expert_par": 64, "expert_par_net": 1, "batch_size": 1024,
                          "datatype": "bfloat16", "fp8": True, "attention_kernel": "fused",
                          "activation_recompute": "full", "optimizer_sharding": True,
                          "tensor_par_net": 0, "pipeline_par_net": 1, "data_par_net": 1}})
        self.assertEqual(r.status, 200, r.body)
        s = r.json()["summary"]
        # the DeepSeek-V3 report's 671B and 37B are the totals without the MTP module
        self.assertEqual(s["parameters_total"] - s["parameters_mtp"], 671026419200)
        self.assertEqual(s["parameters_active"] - s["parameters_mtp_active"], 37552297472)
        # one MTP depth: a block of the last kind (MoE: 256 experts of 3·7168·2048, the shared
        # one, the router, MLA) plus 2·7168² and three norms; ≈ 11.6B, 1.7 % of the total
        self.assertAlmostEqual(s["parameters_mtp"] / 1e9, 11.61, delta=0.01)
        dense = self.server.post("/v1/estimate", {
            "model": "llama3-8B", "system": "h100_sxm",
            "execution": {"num_procs": 8, "tensor_par": 8, "batch_size": 8,
                          "datatype": "bfloat16"}}).json()["summary"]
        self.assertEqual((dense["parameters_mtp"], dense["parameters_mtp_active"]), (0, 0))


if __name__ == "__main__":
    unittest.main()

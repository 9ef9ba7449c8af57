#!/usr/bin/env python3
"""make_corpus.py — writes the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/)
from the project's own requests: the presets, tests/data/ (golden cases of every module) and the
bodies the API tests send. Re-run it after a request format changes; it replaces each target's
folder. Seeds are kept small (a few KiB) so libFuzzer's default input size stays small; a few
seeds are deliberately refused requests, since the refusal paths are code to fuzz too.

Usage: python3 tests/fuzz/make_corpus.py   (from anywhere)"""
import csv
import glob
import hashlib
import io
import json
import os
import random
import shutil

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(ROOT, "tests", "fuzz", "corpus")
rng = random.Random(9)  # deterministic: the same checkout always writes the same corpus


def load_jsonl(rel):
    with open(os.path.join(ROOT, rel)) as f:
        return [json.loads(line) for line in f if line.strip()]


def preset(kind, name=None):
    out = {}
    for p in sorted(glob.glob(os.path.join(ROOT, "presets", kind, "*.json"))):
        with open(p) as f:
            d = json.load(f)
        d.pop("$comment", None)
        d.pop("$aliases", None)  # other names of the preset, not a member
        out[os.path.basename(p)[:-5]] = d
    return out if name is None else out[name]


MODELS = preset("models")
SYSTEMS = preset("systems")
LLM_CASES = load_jsonl("tests/data/llm/cases.jsonl")
GOODPUT_CASES = load_jsonl("tests/data/goodput/cases.jsonl")
GOODPUT_FITS = load_jsonl("tests/data/goodput/fit_cases.jsonl")
SCALING_CASES = load_jsonl("tests/data/scaling/cases.jsonl")


def pick(items, n):
    items = list(items)
    return items if len(items) <= n else rng.sample(items, n)


def write(target, seeds):
    d = os.path.join(OUT, target)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    seen = set()
    for i, s in enumerate(seeds):
        text = s if isinstance(s, str) else json.dumps(s, separators=(",", ":"))
        h = hashlib.sha1(text.encode()).hexdigest()[:10]
        if h in seen:
            continue
        seen.add(h)
        with open(os.path.join(d, "%03d-%s.json" % (i, h)), "w") as f:
            f.write(text)
    print("%-18s %3d seeds, largest %d bytes" % (target, len(seen), max(
        os.path.getsize(p) for p in glob.glob(os.path.join(d, "*")))))


def unique(values):
    out, seen = [], set()
    for v in values:
        k = json.dumps(v, sort_keys=True)
        if k not in seen:
            seen.add(k)
            out.append(v)
    return out


# ---- model, system, execution: the shared members ----
GPT2 = {"hidden": 768, "attn_heads": 12, "num_blocks": 12, "seq_size": 1024, "vocab_size": 50257,
        "bias": False, "tied_embeddings": True}
models = list(MODELS.values()) + list(MODELS) + [GPT2]
models += unique(c["model"] for c in LLM_CASES)[:10]
models += [
    {"hidden": 768, "attn_heads": 12, "num_blocks": 12, "seq_size": 1024},
    {"hidden": 100, "attn_heads": 7, "attn_size": 14, "num_blocks": 1, "seq_size": 8},
    {"hidden": 1, "attn_heads": 1, "num_blocks": 1, "seq_size": 1, "feedforward": 1,
     "vocab_size": 0, "position_embedding": "none"},
    {"hidden": 1048576, "attn_heads": 65536, "num_blocks": 16384, "seq_size": 1048576,
     "feedforward": 4194304, "vocab_size": 1048576, "bias": True, "tied_embeddings": False},
    {"hidden": 768, "attn_heads": 7, "num_blocks": 1, "seq_size": 8},      # refused: attn_size
    {"hidden": 768.5, "attn_heads": 12, "num_blocks": 1, "seq_size": 8},   # refused: not an int
    {"hidden": 768, "attn_heads": 12, "num_blocks": 1, "seq_size": 8, "x": 1},
    "no-such-model", 12, None, [],
    # the modern block's fields
    {"hidden": 64, "attn_heads": 8, "kv_heads": 2, "num_blocks": 2, "seq_size": 16,
     "vocab_size": 1000, "gated_mlp": True, "norm": "rmsnorm", "qkv_bias": True, "causal": False,
     "position_embedding": "rope", "tied_embeddings": False},
    {"hidden": 64, "attn_heads": 8, "kv_heads": 3, "num_blocks": 2, "seq_size": 16},  # refused
    {"hidden": 64, "attn_heads": 8, "norm": "batchnorm", "num_blocks": 2, "seq_size": 16},
    {"hidden": 64, "attn_heads": 8, "kv_heads": 1, "causal": True, "num_blocks": 1, "seq_size": 1},
]
# variants: a preset with members replaced (the model target's own: the canonical seeds keep
# drawing from the list above)
variants = [{"preset": "llama3.1-8B", "seq_size": 131072},
            {"preset": "deepseek-v3", "moe": {"top_k": 4}, "mla": {"kv_lora_rank": 256}},
            {"preset": "qwen3-30B-A3B", "moe": 7}]
write("model", models + variants)

systems = list(SYSTEMS.values()) + list(SYSTEMS)
systems += unique(c["system"] for c in LLM_CASES)[:8]
a100 = SYSTEMS["a100_80g"]
one_net = json.loads(json.dumps(a100))
one_net["networks"] = one_net["networks"][:1]
no_mem2 = json.loads(json.dumps(a100))
no_mem2["mem2"]["GiB"] = 0
with_attention = json.loads(json.dumps(a100))
with_attention["attention_efficiency"] = 0.6
bad_attention = json.loads(json.dumps(a100))
bad_attention["attention_efficiency"] = 0
systems += [one_net, no_mem2, with_attention, bad_attention, "no-such-system", {}]
write("system", systems)

executions = unique(c["execution"] for c in LLM_CASES)
executions = pick(executions, 30)
with open(os.path.join(ROOT, "tests/data/llm/example_3072_t4_p64_d12_mbs4_full.json")) as f:
    EXAMPLE = json.load(f)  # the README's 3072-GPU megatron-1T execution
executions.append(EXAMPLE)
executions += [
    {"batch_size": 8},
    {"batch_size": 64, "num_procs": 8, "tensor_par": 2, "pipeline_par": 2},
    {"batch_size": 64, "tensor_par": 8, "pipeline_par": 8, "data_par": 1, "microbatch_size": 1,
     "activation_recompute": "full", "tensor_par_net": 0, "pipeline_par_net": 1,
     "data_par_net": 1},
    {"batch_size": 16, "training": False, "datatype": "bfloat16"},
    {"batch_size": 16, "datatype": "float8", "attention_type": "multiquery",
     "tensor_par_comm_type": "rs_ag", "seq_par_ag_redo": True, "tensor_par_overlap": "ring"},
    {"batch_size": 1099511627776, "num_procs": 1073741824, "tensor_par": 1073741824},
    {"batch_size": 16, "datatype": "bfloat16", "attention_kernel": "fused", "fp8": True,
     "tensor_par": 2, "num_procs": 2, "tensor_par_comm_type": "rs_ag"},
    {"batch_size": 16, "attention_kernel": "flash"},                       # refused
    {"batch_size": 16, "num_procs": 8, "context_par": 2, "context_par_net": 0, "zero_stage": 3,
     "shard_group": 2, "attention_kernel": "fused", "datatype": "bfloat16"},
    {"batch_size": 16, "num_procs": 4, "zero_stage": 2, "optimizer_sharding": True},
    {"batch_size": 16, "num_procs": 4, "zero_stage": 1, "low_precision_gradients": True,
     "fp8": True, "fp8_params": True, "datatype": "bfloat16"},
    {"batch_size": 16, "num_procs": 4, "zero_stage": 0, "optimizer_sharding": True},  # refused
    {"batch_size": 16, "context_par": 0},                                             # refused
    {"batch_size": 16, "fp8": True, "datatype": "float32"},               # refused by the model
    {"num_procs": 8},                       # refused: batch_size is required
    {"batch_size": 8, "tensor_par": 0},
    # mixture of experts: expert parallelism folded onto TP×DP, its tier, imbalance, overlap
    {"batch_size": 64, "num_procs": 16, "pipeline_par": 2, "expert_par": 8, "expert_tensor_par": 1,
     "expert_par_net": 1, "moe_load_imbalance": 1.3, "moe_capacity_factor": 1.25,
     "moe_a2a_overlap": True, "datatype": "bfloat16"},
    {"batch_size": 8, "expert_par": 3},                                    # refused by the model
    {"batch_size": 8, "moe_load_imbalance": 0.5},                          # refused
]
write("execution", executions)

# ---- transformer ----
TRAINING = {"tokens": 3e11, "gpu_hour_price": 2.5, "gpu_power_kw": 0.4, "pue": 1.2,
            "co2_kg_per_kwh": 0.4}
transformer = [
    {"model": GPT2},
    {"model": "gpt3-175B"},
    {"model": "megatron-126M", "tokens": 2e9},
    {"model": "gpt3-175B", "batch_size": 1536, "measured_step_time_s": 20, "gpu_peak_flops": 312e12,
     "num_gpus": 1024},
    {"model": "palm-540B", "tokens": 7.8e11, "gpu_peak_flops": 275e12, "mfu": 0.46,
     "time_budget_days": 50},
    {"model": "chinchilla", "gpu_memory_gib": 80, "tensor_par": 8, "micro_batch_size": 2},
    {"model": "gopher-280B", "param_count": 2.8e11, "recompute_overhead": 0.05,
     "backward_forward_ratio": 1.5, "tokens": 3e11},
    {"model": "megatron-22B", "lora": {"rank": 8}},
    {"model": "megatron-22B", "lora": {"rank": 64, "tuned_layers": 4}},
    {"model": "gpt3-13B", "tokens": 3e11, "num_gpus": 512, "gpu_peak_flops": 312e12,
     "training": TRAINING},
    {"model": "gpt3-13B", "batch_size": None, "lora": None},
    {"model": {"hidden": 768, "attn_heads": 12, "num_blocks": 12, "seq_size": 1024}, "mfu": 1},
    {"model": {"hidden": 1048576, "attn_heads": 65536, "num_blocks": 16384, "seq_size": 1048576},
     "tokens": 1e16, "num_gpus": 100000000, "gpu_peak_flops": 1e21, "time_budget_days": 1e-9},
    {}, {"model": "gpt3-175B", "tokens": -1}, {"model": "gpt3-175B", "mfu": 2},
]
transformer += [{"model": m} for m in list(MODELS)[:6]]
# model variants: a preset with members replaced, a moe object merged member by member
transformer += [{"model": {"preset": "llama3-8B", "seq_size": 32768}},
                {"model": {"preset": "qwen3-30B-A3B", "moe": {"top_k": 4}}}]
write("transformer", transformer)

# ---- estimate ----
estimate = [{"model": c["model"], "system": c["system"], "execution": c["execution"]}
            for c in pick(LLM_CASES, 16)]
estimate += [
    {"model": "megatron-1T", "system": "a100_80g", "execution": EXAMPLE},
    {"model": "megatron-1T", "system": "a100_80g", "execution": EXAMPLE, "training": TRAINING},
    {"model": "megatron-126M", "system": "h100_sxm", "execution": {"batch_size": 8}},
    {"model": "mixtral-8x7B", "system": "h100_sxm",
     "execution": {"batch_size": 64, "num_procs": 64, "tensor_par": 2, "pipeline_par": 4,
                   "expert_par": 8, "datatype": "bfloat16", "tensor_par_net": 0,
                   "pipeline_par_net": 1, "data_par_net": 1, "expert_par_net": 1}},
    {"model": {"hidden": 256, "seq_size": 128, "attn_heads": 4, "num_blocks": 4, "vocab_size": 1000,
               "gated_mlp": True, "mtp_blocks": 1,
               "moe": {"num_experts": 8, "top_k": 2, "expert_feedforward": 128, "shared_experts": 1,
                       "first_dense_blocks": 1, "every": 1, "router_bias": True,
                       "router_groups": 4, "router_group_top_k": 2},
               "mla": {"q_lora_rank": 64, "kv_lora_rank": 32, "qk_nope_head_dim": 32,
                       "qk_rope_head_dim": 16, "v_head_dim": 32}},
     "system": "h100_sxm",
     "execution": {"batch_size": 8, "num_procs": 8, "expert_par": 4, "expert_tensor_par": 2,
                   "datatype": "bfloat16", "moe_a2a_overlap": True}},
    {"model": {"hidden": 256, "seq_size": 128, "attn_heads": 4, "num_blocks": 4,
               "moe": {"num_experts": 4, "top_k": 5}},                      # refused: top_k
     "system": "h100_sxm", "execution": {"batch_size": 8}},
    {"model": "gpt3-175B", "system": "a100_80g",
     "execution": {"num_procs": 64, "tensor_par": 8, "pipeline_par": 8, "data_par": 1,
                   "batch_size": 64, "microbatch_size": 1, "activation_recompute": "full",
                   "tensor_par_net": 0, "pipeline_par_net": 1, "data_par_net": 1}},
    {"model": "megatron-22B", "system": "b200",
     "execution": {"batch_size": 32, "num_procs": 8, "tensor_par": 8, "training": False}},
    {"model": "gpt3-13B", "system": "mi300x",
     "execution": {"batch_size": 1024, "num_procs": 64, "tensor_par": 4, "pipeline_par": 4,
                   "pipeline_interleaving": 2, "weight_offload": True, "optimizer_offload": True}},
    {"model": {"hf_config": {"architectures": ["Qwen3MoeForCausalLM"], "hidden_size": 256,
                             "intermediate_size": 512, "num_hidden_layers": 4,
                             "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64,
                             "vocab_size": 1000, "num_experts": 8, "num_experts_per_tok": 2,
                             "moe_intermediate_size": 128, "max_position_embeddings": 256,
                             "rope_scaling": None, "tie_word_embeddings": False},
               "seq_size": 128},
     "system": "h100_sxm", "execution": {"batch_size": 8, "datatype": "bfloat16"}},
    {"model": {"hf_config": {"architectures": ["Qwen3MoeForCausalLM"], "hidden_size": 256,
                             "intermediate_size": 512, "num_hidden_layers": 4,
                             "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64,
                             "vocab_size": 1000, "num_experts": 8, "num_experts_per_tok": 2,
                             "moe_intermediate_size": 128, "max_position_embeddings": 256,
                             "quantization_config": {"quant_method": "modelopt",
                                                     "quant_algo": "NVFP4"}},
               "seq_size": 128},
     "system": "b200", "execution": {"batch_size": 8, "datatype": "bfloat16"}},
    {"model": {"hf_config": {"architectures": ["Gemma3ForCausalLM"], "hidden_size": 256,
                             "intermediate_size": 512, "num_hidden_layers": 6,
                             "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 64,
                             "vocab_size": 1000, "sliding_window": 32,
                             "layer_types": ["sliding_attention"] * 2 + ["full_attention"]
                             + ["sliding_attention"] * 2 + ["full_attention"],
                             "max_position_embeddings": 256},
               "seq_size": 128},
     "system": "h100_sxm", "execution": {"batch_size": 8, "datatype": "bfloat16"}},
    {"model": {"hf_config": {"architectures": ["Qwen2MoeForCausalLM"], "hidden_size": 256,
                             "intermediate_size": 512, "num_hidden_layers": 4,
                             "num_attention_heads": 4, "vocab_size": 1000, "num_experts": 6,
                             "num_experts_per_tok": 2, "moe_intermediate_size": 64,
                             "shared_expert_intermediate_size": 256,
                             "max_position_embeddings": 256}},
     "system": "h100_sxm", "execution": {"batch_size": 8, "datatype": "bfloat16"}},
    {"model": {"hf_config": {"architectures": ["Llama4ForConditionalGeneration"],
                             "text_config": {"hidden_size": 256, "intermediate_size": 128,
                                             "intermediate_size_mlp": 512,
                                             "num_hidden_layers": 4, "num_attention_heads": 4,
                                             "num_key_value_heads": 2, "vocab_size": 1000,
                                             "num_local_experts": 4, "num_experts_per_tok": 1,
                                             "interleave_moe_layer_step": 2,
                                             "attention_chunk_size": 64, "no_rope_layers": [],
                                             "max_position_embeddings": 10485760}},
               "seq_size": 128},
     "system": "h100_sxm", "execution": {"batch_size": 8, "datatype": "bfloat16"}},
    # Gemma 3's multimodal class: the text_config's missing keys from the class defaults
    {"model": {"hf_config": {"architectures": ["Gemma3ForConditionalGeneration"],
                             "text_config": {"hidden_size": 256, "intermediate_size": 512,
                                             "num_hidden_layers": 6, "vocab_size": 1000,
                                             "sliding_window": 32}},
               "seq_size": 128},
     "system": "h100_sxm", "execution": {"batch_size": 8, "datatype": "bfloat16"}},
    # any other multimodal wrapper, by its text_config's model_type
    {"model": {"hf_config": {"architectures": ["LlavaForConditionalGeneration"],
                             "text_config": {"model_type": "mistral", "hidden_size": 256,
                                             "intermediate_size": 512, "num_hidden_layers": 2,
                                             "num_attention_heads": 4, "vocab_size": 1000,
                                             "max_position_embeddings": 128}}},
     "system": "h100_sxm", "execution": {"batch_size": 8, "datatype": "bfloat16"}},
    # GPT-2's key names (GPTBigCode: StarCoder)
    {"model": {"hf_config": {"architectures": ["GPTBigCodeForCausalLM"], "n_embd": 256,
                             "n_inner": None, "n_layer": 2, "n_head": 4, "n_positions": 128,
                             "multi_query": True, "vocab_size": 1000}},
     "system": "h100_sxm", "execution": {"batch_size": 8, "datatype": "bfloat16"}},
    {"model": {"hf_config": {"architectures": ["BloomForCausalLM"], "hidden_size": 256,
                             "n_layer": 2, "n_head": 4, "vocab_size": 1000}},
     "system": "h100_sxm", "execution": {"batch_size": 8, "datatype": "bfloat16"}},
    {"model": {"hf_config": {"architectures": ["RwkvForCausalLM"]}},          # refused
     "system": "h100_sxm", "execution": {"batch_size": 8}},
    {"model": "megatron-1T", "system": "no-such-system", "execution": EXAMPLE},
    {"model": "megatron-1T", "system": "a100_80g"},
    {"model": "megatron-1T", "system": "a100_80g", "execution": {"batch_size": 3, "num_procs": 2}},
]
for name in list(SYSTEMS)[:4]:
    estimate.append({"model": "megatron-126M", "system": name,
                     "execution": {"batch_size": 8, "num_procs": 8, "tensor_par": 1,
                                   "pipeline_par": 1, "data_par": 8, "data_par_net": 1}})
write("estimate", estimate)

# ---- sweeps and grids ----
SMALL = {"kind": "optimal_execution", "model": "megatron-126M", "system": "a100_80g",
         "num_procs": 8, "max_batch_size": 64, "datatype": "float16", "options": {"top_n": 3}}
GRID = {"kind": "grid",
        "base": {"model": "gpt3-175B", "system": "a100_80g",
                 "execution": {"num_procs": 64, "tensor_par": 8, "pipeline_par": 8, "data_par": 1,
                               "batch_size": 64, "microbatch_size": 1,
                               "activation_recompute": "full", "tensor_par_net": 0,
                               "pipeline_par_net": 1, "data_par_net": 1}},
        "axes": {"execution.microbatch_size": [1, 2, 4],
                 "execution.activation_recompute": ["full", "none"]},
        "top_n": 2}
tiny_base = {"model": "megatron-126M", "system": "a100_80g",
             "execution": {"batch_size": 8, "num_procs": 2, "data_par": 2, "data_par_net": 1}}
grids = [
    GRID,
    dict(GRID, axes={"execution.microbatch_size": [1, 2, 4], "execution.tensor_par": [1, 8]}),
    {"kind": "grid", "base": tiny_base, "axes": {"execution.batch_size": [8, 16, 32, 64]}},
    {"kind": "grid", "base": tiny_base, "axes": {"system.mem1.GiB": [16, 40, 80],
                                                 "model.seq_size": [512, 2048]}},
    {"kind": "grid", "base": tiny_base, "axes": {"system.networks[0].bandwidth": [100, 300],
                                                 "system.matrix.float16.gflops_efficiency[0][1]":
                                                     [0.5, 0.9]}},
    {"kind": "grid", "base": tiny_base, "axes": {"execution.datatype": ["float16", "bfloat16",
                                                                        "float8"],
                                                 "execution.training": [True, False]}},
    {"kind": "grid", "base": dict(tiny_base, training={"tokens": 1e9}),
     "axes": {"training.tokens": [1e9, 1e10]}, "top_n": 1},
    {"kind": "grid", "base": tiny_base, "axes": {"model": ["megatron-126M", "gpt3-13B"]}},
    {"kind": "grid", "base": tiny_base, "axes": {"execution.attention_kernel": ["unfused", "fused"],
                                                 "execution.fp8": [False, True]}},
    {"kind": "grid", "base": tiny_base, "axes": {"execution.zero_stage": [0, 1, 2, 3],
                                                 "execution.context_par": [1, 2]}},
    {"kind": "grid", "base": tiny_base, "axes": {"model.kv_heads": [1, 4, 12],
                                                 "model.gated_mlp": [False, True]}},
    {"kind": "grid", "base": tiny_base, "axes": {"execution.no_such": [1]}},
    {"kind": "grid", "base": tiny_base, "axes": {}},
    {"kind": "grid", "base": tiny_base, "axes": {"execution.batch_size": []}},
    {"kind": "grid", "base": tiny_base, "axes": {"execution.batch_size": [[1]]}},
    {"kind": "grid", "base": tiny_base, "axes": {"execution.batch_size": list(range(1, 200))}},
]
sweeps = [
    SMALL,
    dict(SMALL, options={"top_n": 3, "mbs_break": False}),
    dict(SMALL, options={"mbs_break": True, "no_tp_overlap": True, "no_dp_overlap": True,
                         "fused_activation": "all"}),
    dict(SMALL, num_procs=1, max_batch_size=1),
    dict(SMALL, model="llama3-8B", system="h100_sxm", datatype="bfloat16", num_procs=2,
         max_batch_size=2, options={"attention_kernel": "all", "fp8": "all"}),
    dict(SMALL, options={"fp8": "sometimes"}),
    dict(SMALL, num_procs=2, max_batch_size=4, options={"fused_activation": False}),
    {"kind": "optimal_execution", "model": "gpt3-13B", "system": "a100_80e", "num_procs": 256,
     "max_batch_size": 512, "datatype": "float16", "options": {"top_n": 2}},
    {"kind": "optimal_execution", "model": "megatron-22B", "system": "h100_80g_nvl8",
     "num_procs": 64, "max_batch_size": 512, "datatype": "float16", "options": {"top_n": 2}},
    {"kind": "optimal_execution", "model": "gpt3-175B", "system": "a100_80g", "num_procs": 1024,
     "max_batch_size": 1024},
    {"model": "megatron-126M", "system": "a100_80g", "num_procs": 8, "max_batch_size": 64},
    {"kind": "optimal_execution", "model": "megatron-126M", "system": "a100_80g",
     "num_procs": 1048576, "max_batch_size": 1048576, "datatype": "bfloat16"},
    {}, {"kind": "random"},
] + grids[:8] + [
    # cluster plans (search_plan_codec.c): every form of tokens, systems and counts, and the
    # refusals of tests/api/test_plan.py
    {"kind": "plan", "model": "llama3-8B", "tokens": 1e10, "batch_tokens": 1048576,
     "systems": [{"name": "cheap", "system": "h100_sxm", "price_per_gpu_hour": 2},
                 {"name": "dear", "system": "h100_sxm", "price_per_gpu_hour": 4}],
     "gpu_counts": [8, 16, 32], "deadline_days": 1, "budget_dollars": 500},
    {"kind": "plan", "model": "llama3-70B", "tokens": "chinchilla", "systems": ["h100_sxm", "b200"],
     "gpu_counts": {"from": 512, "to": 2048, "factor": 2}, "max_gpus": 1024,
     "options": {"fp8": "all"}, "failures": {"per_gpu_hour": 1e-5, "storage_gbps": 50,
                                              "restart_minutes": 5}, "pue": 1.2},
    {"kind": "plan", "model": "llama3-8B", "tokens": {"flops": 1e21}, "seq_size": 4096,
     "batch_tokens": [524288, 1048576], "systems": ["mi300x"],
     "gpu_counts": {"from": 8, "to": 32, "step": 8}, "co2_kg_per_kwh": 0.1},
    {"kind": "plan", "model": "llama3-8B", "tokens": 1e10, "systems": [], "gpu_counts": [8]},
    {"kind": "plan", "model": "llama3-8B", "tokens": 1e10, "systems": ["h100_sxm"],
     "gpu_counts": [8, 1031]},
    {"kind": "plan", "model": "llama3-8B", "tokens": 1e19, "systems": ["h100_sxm"],
     "gpu_counts": [8], "deadline_days": 0},
    {"kind": "serving_plan", "model": "llama3-70B",
     "traffic": {"requests_per_s": 20, "input_tokens": 2000, "output_tokens": 200},
     "slo": {"ttft_ms_p99": 2000, "tpot_ms": 50}, "systems": ["h100_sxm", "h200", "b200"]},
    {"kind": "serving_plan", "model": "qwen3-30B-A3B",
     "traffic": {"requests_per_s": 3, "input_tokens": {"mean": 1000, "p90": 3000}, "output_tokens": 300},
     "slo": {"ttft_ms_p50": 500}, "systems": [{"name": "h100_sxm", "price_per_gpu_hour": 2}],
     "engine": "sglang", "weights_datatypes": ["fp8", "int4"], "modes": ["disaggregated"], "max_gpus_per_replica": 4},
    {"kind": "serving_plan", "model": "llama3-8B", "traffic": {"requests_per_s": 1, "input_tokens": 10, "output_tokens": 10},
     "slo": {}, "systems": ["h100_sxm"]},
    {"kind": "serving_plan", "model": "llama3-8B", "traffic": {"requests_per_s": 1, "input_tokens": 100,
     "output_tokens": {"mean": 100, "spread": 30}}, "slo": {"tpot_ms": 40}, "systems": ["l40s"]},
    {"kind": "serving_plan", "model": "llama3-8B", "traffic": {"requests_per_s": 3, "input_tokens": {"low": 500, "high": 1500},
     "output_tokens": {"low": 50, "high": 50}}, "slo": {"ttft_ms_p99": 900}, "systems": ["h200"]},
    {"kind": "serving_plan", "model": "gpt-oss-120B", "traffic": {"requests_per_s": 2, "input_tokens": 1000,
     "output_tokens": 1000}, "slo": {"tpot_ms": 200}, "systems": ["h100_sxm"],
     "weights_datatypes": ["nvfp4", "mxfp4"], "max_gpus_per_replica": 1},
    # the run around the step: the auto batch, a ramp, goodput statistics, every loss
    {"kind": "plan", "model": "llama3-8B", "tokens": 1e10, "batch_tokens": "auto",
     "batch_schedule": [{"batch_tokens": 262144, "tokens": 1e9}], "systems": ["h100_sxm"],
     "gpu_counts": [8, 16], "goodput": {"init_batch_tokens": 65536, "grad_params": {"sqr": 1, "var": 4}},
     "failures": {"planned_per_gpu_hour": 1e-6, "storage_gbps_per_gpu": 0.5, "queue_minutes": 30},
     "losses": {"evaluation": 0.01, "slow_nodes": 0.02, "data_loader": 0.005}},
    {"kind": "plan", "model": "llama3-8B", "tokens": 1e10, "systems": ["h100_sxm"], "gpu_counts": [8],
     "goodput": {"init_batch_tokens": 65536, "critical_batch_tokens": 1e6},
     "batch_schedule": [{"batch_tokens": 100, "tokens": 2e10}], "losses": {"slow_nodes": 1}},
]
write("sweep", sweeps)
write("grid", grids + [{k: v for k, v in g.items() if k != "kind"} for g in grids[:5]])

# ---- goodput ----
def goodput_body(c):
    body = {k: v for k, v in c.items() if k not in ("kind", "expected", "options")}
    body.update(c.get("options", {}))
    return body


evals = [goodput_body(c) for c in GOODPUT_CASES if c["kind"] == "evaluate"]
opts = [goodput_body(c) for c in GOODPUT_CASES if c["kind"] == "optimize"]
evaluate = pick(evals, 20)
e0 = evaluate[0]
evaluate += [
    dict(e0, num_nodes=[1, 1, 2], num_replicas=[1, 2, 4], atomic_bsz=[64, 128, 256],
         accum_steps=[0, 1, 2]),
    dict(e0, atomic_bsz=[32, 64, 128, 256, 512]),
    dict(e0, num_nodes=2, num_replicas=1),                    # refused: nodes > replicas
    dict(e0, atomic_bsz=1, accum_steps=0, init_batch_size=1024),
    dict(e0, perf_params=dict(e0["perf_params"], gamma=10)),
    dict(e0, perf_params=dict(e0["perf_params"], gamma=1)),
    dict(e0, atomic_bsz=[1, 2], accum_steps=[3]),              # refused: lengths differ
    {k: v for k, v in e0.items() if k != "grad_params"},
]
write("goodput_evaluate", evaluate)
optimize = pick([o for o in opts if "atomic_bsz_range" in o], 8) + pick(
    [o for o in opts if "atomic_bsz_range" not in o], 8)
o0 = optimize[0]
optimize += [
    dict(o0, curve=True),
    dict(o0, num_nodes=[1, 2, 4], num_replicas=[1, 2, 4, 8, 16]),
    dict(o0, num_nodes=[1, 2], num_replicas=[2, 4], curve=True, accumulation=True),
    dict(o0, atomic_bsz_range=[None, None]),
    dict(o0, atomic_bsz_range=[None, 64]),
    dict(o0, atomic_bsz_range=[1024, 8]),
    dict(o0, max_batch_size=o0["init_batch_size"]),
    dict(o0, num_nodes=[8], num_replicas=[1]),                 # refused: no allocation
    {k: v for k, v in o0.items() if k not in ("max_batch_size", "atomic_bsz_range",
                                              "accumulation")},
]
write("goodput_optimize", optimize)

fits = []
for c in GOODPUT_FITS[:24]:
    rows = c["measurements"]
    fits.append({"measurements": rows if len(rows) <= 24 else rows[:24]})
m = GOODPUT_FITS[0]["measurements"]
fits += [{"measurements": m[:1]}, {"measurements": m[:3]},
         {"measurements": [dict(r, num_nodes=1, num_replicas=1) for r in m[:8]]},
         {"measurements": [dict(m[0], accum_step_time=0)]}, {"measurements": []}, {}]
write("goodput_fit", fits)

# ---- scaling ----
scaling = []
for c in pick([c for c in SCALING_CASES if c["kind"] != "tipping_point"], 20):
    scaling.append({"gpu": c["gpu"], "amp_mode": c["amp_mode"], c["kind"]: c[c["kind"]]})
scaling += [
    {"gpu": "V100", "dollars": 30}, {"gpu": "P4", "hours": 100}, {"gpu": "V100", "hours": 0.1},
    {"gpu": "K80", "amp_mode": "O2", "width": 32},
    {"gpu": "V100", "hours": 24, "co2_kg_per_kwh": 0.1, "loss_fit": {"a": 40, "b": 0.1, "c": 2},
     "param_fit": {"d": 1e3, "e": 0.5, "f": 0}},
    {"gpu": {"k": 2.21527743e7, "k1": 1.18538628, "k2": 1.43150104, "b": 0.1, "c": 0.2,
             "layer_base": 128, "price_per_hour": 3.06, "power_kw": 0.3, "batch_size": 60},
     "hours": 10},
    {"law": "hf2020", "gpu": "T4", "width": 1e6},
    {"law": "chinchilla", "flops": 1e21}, {"law": "chinchilla", "params": 70e9, "tokens": 1.4e12},
    {"law": "chinchilla", "flops": 5.76e23},
    {"gpu": "V100", "hours": 3, "dollars": 30}, {"gpu": "V100"}, {"law": "kaplan"},
]
write("scaling", scaling)

with open(os.path.join(ROOT, "tests/data/scaling/loss_vs_compute.csv")) as f:
    table = list(csv.reader(f))
header, rows = table[0], table[1:]
runs = []
for j, name in enumerate(header):
    if not name.endswith(" - valid_loss"):
        continue
    pts = [[float(r[0]), float(r[j])] for r in rows if r[j] not in ("", "undefined")]
    if len(pts) > 5:
        runs.append({"name": name[:-len(" - valid_loss")], "points": pts})


def thin(run, n):
    pts = run["points"]
    step = max(1, len(pts) // n)
    return {"name": run["name"], "points": pts[::step][:n]}


fit = []
for k in range(12):
    chosen = rng.sample(runs, min(len(runs), rng.randint(3, 7)))
    fit.append({"runs": [thin(r, rng.randint(6, 12)) for r in chosen]})
fit.append({"runs": [dict(thin(r, 8), params=1e8 * (i + 1)) for i, r in enumerate(runs[:5])]})
fit.append({"runs": [{"points": thin(r, 7)["points"]} for r in runs[:4]]})
# CSV text seeds: a few columns and rows of the calculator's file.
for k in range(6):
    cols = [0] + sorted(rng.sample([j for j, h in enumerate(header) if h.endswith("valid_loss")],
                                   rng.randint(3, 5)))
    keep = [r for r in rows if any(r[j] not in ("", "undefined") for j in cols[1:])]
    keep = keep[::max(1, len(keep) // 40)][:40]
    out = io.StringIO()
    w = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    w.writerow([header[j] for j in cols])
    for r in keep:
        w.writerow([r[j] for j in cols])
    fit.append({"csv": out.getvalue()})
fit += [{"runs": [thin(runs[0], 6)]}, {"csv": "global_step\n1\n"}, {"runs": [], "csv": ""}, {}]
write("scaling_fit", fit)

# ---- calibrate ----
NCCL = ("# nThread 1 nGpus 1 minBytes 1024 maxBytes 1048576 step: 4(factor) warmup iters: 5 iters: 20\n"
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
        "        1024           256     float     sum      -1    20.11    0.05    0.09      0    19.80    0.05    0.09      0\n"
        "     1048576        262144     float     sum      -1    35.20   29.79   52.13      0    35.00   29.96   52.43      0\n"
        "# Avg bus bandwidth    : 26.11\n")
GEMM = [{"m": 4096, "n": 4096, "k": 4096, "datatype": "bfloat16", "tflops": 700},
        {"m": 512, "n": 512, "k": 512, "datatype": "bfloat16", "tflops": 200}]
RUN = {"model": "llama3-8B", "execution": {"num_procs": 16, "tensor_par": 2, "batch_size": 32,
                                           "datatype": "bfloat16", "attention_kernel": "fused"},
       "measured": {"step_time_s": 3.0}}
COLL = {"collective": "all_reduce", "procs": 8, "network": 0, "output": NCCL}
write("calibrate", [
    {"system": "h100_sxm", "gemms": GEMM},
    {"system": "h100_sxm", "collectives": [COLL]},
    {"system": "h100_sxm", "runs": [RUN, dict(RUN, measured={"tokens_per_s_per_proc": 9000})]},
    {"system": "h100_sxm", "gemms": GEMM[:1], "collectives": [COLL], "runs": [RUN]},
    {"system": "h100_sxm", "collectives": [dict(COLL, output=NCCL.replace("35.20", "3x.20"))]},
    {"system": "h100_sxm", "collectives": [dict(COLL, procs=4)]},
    {"system": "a100_80g", "gemms": GEMM},
    {"system": "h100_sxm"},
])


# ---- inference: POST /v1/inference (serving), good and refused ----
SERVE = {"tensor_par": 4, "weights_datatype": "fp8", "input_tokens": 2000, "output_tokens": 200,
         "requests_per_s": 5}
inference = [
    {"model": "llama3-70B", "system": "h100_sxm", "serving": SERVE},
    {"model": "llama3-8B", "system": "h200", "serving": {"input_tokens": 1024, "output_tokens": 1024, "engine": "trtllm", "num_requests": 300}},
    {"model": "llama3-8B", "system": "h200", "serving": {"input_tokens": 202, "output_tokens": {"mean": 214, "spread": 150}, "num_requests": 500}},
    {"model": "llama3-8B", "system": "h200", "serving": {"input_tokens": {"low": 100, "high": 300}, "output_tokens": {"low": 107, "high": 321}, "num_requests": 64, "engine": "sglang"}},
    {"model": "llama3-8B", "system": "h200", "serving": {"input_tokens": {"low": 300, "high": 100}, "output_tokens": 10}},
    {"model": "llama3-8B", "system": "h100_sxm", "serving": {"input_tokens": {"mean": 100, "spread": 80}, "output_tokens": {"mean": 20, "p90": 400}, "num_requests": 7, "requests_per_s": 2, "max_batch_size": 2, "prefix_cache_hit": 0.5}},
    {"model": "llama3-8B", "system": "l40s", "serving": {"input_tokens": {"mean": 500, "spread": 200}, "output_tokens": 100, "concurrency": 16, "engine": "sglang"}},
    {"model": "deepseek-v3", "system": "b200", "serving": {"attention_data_par": 8, "expert_par": 8, "weights_datatype": "fp4", "input_tokens": 1024, "output_tokens": 1024, "speculative": {"method": "mtp", "tokens": 2, "acceptance": 0.7}}},
    {"model": "gpt-oss-120B", "system": "h200", "serving": {"weights_datatype": "int4", "kv_datatype": "fp8", "input_tokens": 8192, "output_tokens": 512, "chunked_prefill": True, "max_batch_tokens": 2048, "prefix_cache_hit": 0.5}},
    {"model": "qwen3-30B-A3B", "system": "h100_sxm", "serving": {"input_tokens": 2000, "output_tokens": 200, "requests_per_s": 3,
                                                              "disaggregated": {"prefill": {"tensor_par": 2}, "decode": {"tensor_par": 1}, "kv_transfer_net": 1}}},
    {"model": "llama3-8B", "system": "h100_sxm", "serving": {"input_tokens": 100, "output_tokens": 100, "speculative": {"method": "draft", "tokens": 4, "acceptance": 0.6, "model": "llama3-8B"}}},
    {"model": MODELS["mistral-7B-v0.3"], "system": SYSTEMS["a100_sxm"], "serving": {"input_tokens": 300, "output_tokens": 30}},
    {"model": {"preset": "qwen3-30B-A3B", "checkpoint_weights": "fp8"}, "system": "h100_sxm", "serving": {"input_tokens": 1000, "output_tokens": 100}},
    # refused
    {"model": {"preset": "llama3-8B", "checkpoint_weights": "mxfp4"}, "system": "h100_sxm", "serving": {"input_tokens": 1000, "output_tokens": 100}},
    {"model": "llama3-70B", "system": "h100_sxm", "serving": dict(SERVE, tensor_par=3)},
    {"model": "llama3-70B", "system": "h100_sxm", "serving": dict(SERVE, concurrency=3)},
    {"model": "llama3-70B", "system": "h100_sxm", "serving": dict(SERVE, weights_datatype="fp6")},
    {"model": "llama3-70B", "system": "h100_sxm", "serving": {"input_tokens": 0, "output_tokens": 1}},
    {"model": "llama3-70B", "system": "h100_sxm", "serving": dict(SERVE, input_tokens={"mean": 2000, "p90": 2500})},
    {"model": "llama3-70B", "system": "h100_sxm", "serving": dict(SERVE, output_tokens={"mean": 200, "spread": 9, "p90": 250})},
]
write("inference", inference)

# ---- canonical hashing: any JSON at all ----
canonical = (pick(models, 6) + pick(systems[:4], 2) + pick(executions, 4) + pick(estimate, 4)
             + pick(sweeps, 4) + pick(evaluate, 3) + pick(scaling, 3))
canonical += [
    "0", "-0", "-0.0", "1e308", "5e-324", "0.1", "123456789012345678", "9007199254740993",
    "-9223372036854775808", "true", "null", '"\\u00e9\\ud83d\\ude00\\n\\t\\"\\\\"', '"\\u0000"',
    '{"b":1,"a":[1,2.5,{"d":null,"c":"x"}],"":{}}', "[[[[[[[[[[[]]]]]]]]]]]",
    '{"z":1e-7,"y":1.7976931348623157e308,"x":2.2250738585072014e-308,"w":1.0,"v":100.0}',
    '{"\\u00e9":1,"e":2,"E":3,"\\ud83d\\ude00":4}', '[0.30000000000000004, 1e21, 1e22, 123e-20]',
]
write("canonical", canonical)

# ---- the dictionary (-dict=tests/fuzz/fathom.dict): every member name and enum value of the
# schemas, the preset names and a few sweep paths, so mutations can spell real fields ----
def schema_words(node, keys, values):
    if isinstance(node, dict):
        for k, v in node.get("properties", {}).items():
            keys.add(k)
        for e in node.get("enum", []):
            if isinstance(e, str):
                values.add(e)
        if isinstance(node.get("const"), str):
            values.add(node["const"])
        for v in node.values():
            schema_words(v, keys, values)
    elif isinstance(node, list):
        for v in node:
            schema_words(v, keys, values)


# The HTTP edge (fuzz_http): the bad-input corpus of tests/bad_input/ as bytes ({sweep} an id of
# no sweep, {len} the body's length), and a few good requests.
def http_seeds():
    import codecs
    sweep = "0" * 64
    out = [b"GET /healthz HTTP/1.1\r\nHost: f\r\n\r\n",
           b"GET /v1/version?x=1&y=%41 HTTP/1.1\r\nHost: f\r\nAccept: text/csv\r\n\r\n",
           b"POST /v1/transformer HTTP/1.1\r\nHost: f\r\nContent-Type: application/json\r\n"
           b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
           b"OPTIONS /v1/estimate HTTP/1.1\r\nHost: f\r\nOrigin: http://x\r\n\r\n"]
    for path in sorted(glob.glob(os.path.join(ROOT, "tests", "bad_input", "*.txt"))):
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.rstrip("\n")
                if not line.strip() or line.startswith("#"):
                    continue
                raw = codecs.escape_decode(line.split(" ", 1)[1].replace("{sweep}", sweep).encode())[0]
                head, sep, body = raw.partition(b"\r\n\r\n")
                out.append(head.replace(b"{len}", str(len(body)).encode()) + sep + body)
    return out


def write_bytes(target, seeds):
    d = os.path.join(OUT, target)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    for i, s in enumerate(seeds):
        with open(os.path.join(d, "%03d-%s.http" % (i, hashlib.sha1(s).hexdigest()[:10])), "wb") as f:
            f.write(s)
    print("%-18s %3d seeds" % (target, len(seeds)))


HTTP_TOKENS = ["GET ", "POST ", "PUT ", "DELETE ", "OPTIONS ", "HEAD ", " HTTP/1.1\r\n",
               " HTTP/1.0\r\n", "\r\n", "\r\n\r\n", "Host: f\r\n", "Content-Length: ",
               "Content-Type: application/json\r\n", "Transfer-Encoding: chunked\r\n",
               "Accept: text/csv\r\n", "If-None-Match: ", "Origin: ", "Authorization: Bearer ",
               "Connection: close\r\n", "Expect: 100-continue\r\n", "/v1/sweep/", "/v1/sweeps",
               "/v1/results/", "/v1/presets/systems/", "/v1/presets/models/", "/v1/estimate",
               "/results?format=csv", "?offset=", "&limit=", "%00", "%FF", "%C3%28", "%2e%2e/",
               "0\r\n\r\n"]
write_bytes("http", http_seeds())

keys, values = set(), set(MODELS) | set(SYSTEMS)
REQUEST_PARTS = ("model.json", "llm_system.json", "llm_execution.json", "training.json",
                 "hf_config.json", "serving.json")
for p in glob.glob(os.path.join(ROOT, "schemas", "*.json")):
    if ".request." in p or os.path.basename(p) in REQUEST_PARTS:
        with open(p) as f:
            schema_words(json.load(f), keys, values)
for s in SYSTEMS.values():
    schema_words({"properties": s}, keys, values)
    for v in s.values():
        if isinstance(v, dict):
            keys.update(v)
values.update(["grid", "optimal_execution", "execution.tensor_par", "system.mem1.GiB",
               "system.networks[0].bandwidth", "model.seq_size", "V100", "K80", "P100", "T4"])


def dict_line(token):
    """A libFuzzer dictionary entry: backslash and quote escaped, other bytes below 0x20 as \\xNN."""
    text = token.replace("\\", "\\\\").replace('"', '\\"')
    return '"%s"' % "".join(c if ord(c) >= 0x20 else "\\x%02X" % ord(c) for c in text)


with open(os.path.join(ROOT, "tests", "fuzz", "fathom.dict"), "w") as f:
    f.write("# fathom.dict — libFuzzer dictionary for every fuzz target; written by make_corpus.py.\n")
    for t in ["{", "}", "[", "]", ",", ":", "true", "false", "null", "-", "0", "1e308", "-1",
              "0.5", "9007199254740993", "1e-320", "\\u0000", "\\ud800"] + HTTP_TOKENS:
        f.write(dict_line(t) + "\n")
    for k in sorted(keys):
        f.write(dict_line('"%s":' % k) + "\n")
    for v in sorted(values - keys):
        f.write(dict_line('"%s"' % v) + "\n")
print("fathom.dict        %d keys, %d values" % (len(keys), len(values - keys)))

"""fsdp_external_check.py — Fathom on FSDP runs outside presets/validation (issue 32, doc/collectives.md,
"FSDP runs of other frameworks"): each published row through `fathom estimate` with the fsdp stack
(torchtitan's rows with the torchtitan stack) under both collective models, named on the system:
Calculon's formula (`"calculon"`) and NCCL's (`"nccl"`, what these stacks take on a system that
leaves it out), and the error of each.

Rows (tokens/s/GPU as published):
  mosaicml/llm-foundry@8c8dd48 scripts/train/benchmarking/README.md (tables of 2023-10): MPT models
    under Composer FSDP1 FULL_SHARD, amp_bf16, limit_all_gathers; A100 40GB and 80GB "with 1600 Gbps
    node-node interconnect (RoCE)" (eight 200 Gb/s ports a node: 25 GB/s a GPU, the a100 presets'
    second tier); H100 80GB, network not stated (h100_sxm: one 400 Gb/s NIC a GPU). MPT: d_model/128
    heads of 128, feed-forward 4·d_model, GELU, LayerNorm, no biases, learned positions, tied
    embeddings, vocabulary 50,368 (scripts/train/yamls/pretrain/mpt-*.yaml).
  pytorch/torchtitan@1ea476e docs/performance.md (2024-04): Llama 2 13B and 70B, FSDP2 on 64 A100
    80GB, the cluster of presets/validation/pytorch_runs.json's TT0-076...078 (network not stated).
  foundation-model-stack/fms-fsdp@0d31998 README.md (IBM, 2024): Llama 2 7B/13B/34B/70B under FSDP1,
    eager (use_torch_compile off for the table: the PyTorch blog of 2024-03 reports these rows
    before torch.compile), bf16 mixed precision, 4,096 tokens, vocabulary 32,000, on 128 A100
    (80GB: 13B at microbatch 1 without recompute does not fit 40GB); 7B and 13B hybrid-sharded
    within a node (HSDP, shard_group 8), 34B and 70B fully sharded with every block recomputed.
    Network not stated.

    python3 scripts/fsdp_external_check.py [build/fathom]      (from the repository root)"""
import json
import os
import subprocess
import sys
import tempfile

FATHOM = sys.argv[1] if len(sys.argv) > 1 else "build/fathom"
MPT = {"1b": (2048, 24), "3b": (2560, 32), "7b": (4096, 32), "13b": (5120, 40), "30b": (7168, 48),
       "70b": (8192, 80)}
# (system preset, model, seq, GPUs, microbatch, grad accumulation, tokens/s/GPU, activation ckpt)
MOSAIC = [
    ("a100_sxm_40g", "1b", 2048, 8, 8, 8, 19271, False),
    ("a100_sxm_40g", "1b", 2048, 16, 8, 1, 19085, False),
    ("a100_sxm_40g", "1b", 2048, 64, 10, 1, 19001, False),
    ("a100_sxm_40g", "1b", 2048, 128, 10, 1, 18647, False),
    ("a100_sxm_40g", "3b", 2048, 8, 5, 8, 10065, False),
    ("a100_sxm_40g", "3b", 2048, 16, 5, 1, 9750, False),
    ("a100_sxm_40g", "3b", 2048, 32, 6, 1, 9914, False),
    ("a100_sxm_40g", "3b", 2048, 64, 6, 1, 9736, False),
    ("a100_sxm_40g", "3b", 2048, 128, 6, 1, 9538, False),
    ("a100_sxm_40g", "7b", 2048, 8, 12, 4, 3679, True),
    ("a100_sxm_40g", "7b", 2048, 16, 16, 1, 3645, True),
    ("a100_sxm_40g", "7b", 2048, 32, 18, 1, 3725, True),
    ("a100_sxm_40g", "7b", 2048, 64, 18, 1, 3665, True),
    ("a100_sxm_40g", "7b", 2048, 128, 18, 1, 3623, True),
    ("a100_sxm_40g", "13b", 2048, 8, 4, 16, 1668, True),
    ("a100_sxm_40g", "13b", 2048, 16, 10, 1, 1993, True),
    ("a100_sxm_40g", "13b", 2048, 32, 14, 1, 1998, True),
    ("a100_sxm_40g", "13b", 2048, 64, 16, 1, 1976, True),
    ("a100_sxm_40g", "13b", 2048, 128, 16, 1, 1972, True),
    ("a100_sxm_40g", "30b", 2048, 32, 4, 1, 857, True),
    ("a100_sxm_40g", "30b", 2048, 128, 6, 1, 865, True),
    ("a100_sxm_40g", "70b", 2048, 64, 2, 1, 276, True),
    ("a100_sxm_40g", "70b", 2048, 128, 4, 1, 376, True),
    ("a100_sxm", "7b", 2048, 8, 6, 2, 4641, False),
    ("a100_sxm", "13b", 2048, 8, 2, 3, 2262, False),
    ("a100_sxm", "70b", 2048, 32, 2, 16, 373, True),
    ("a100_sxm", "70b", 2048, 64, 8, 4, 410, True),
    ("h100_sxm", "1b", 2048, 8, 14, 1, 45455, False),
    ("h100_sxm", "1b", 2048, 16, 20, 1, 46037, False),
    ("h100_sxm", "1b", 2048, 32, 20, 1, 45130, False),
    ("h100_sxm", "1b", 2048, 64, 20, 1, 44402, False),
    ("h100_sxm", "3b", 2048, 16, 10, 3, 24142, False),
    ("h100_sxm", "3b", 2048, 32, 6, 3, 23021, False),
    ("h100_sxm", "3b", 2048, 64, 6, 3, 22525, False),
    ("h100_sxm", "7b", 2048, 8, 6, 1, 10643, False),
    ("h100_sxm", "7b", 2048, 128, 6, 1, 10475, False),
    ("h100_sxm", "7b", 2048, 256, 6, 1, 10119, False),
    ("h100_sxm", "7b", 2048, 512, 6, 1, 9670, False),
    ("h100_sxm", "13b", 2048, 8, 2, 1, 4792, False),
    ("h100_sxm", "13b", 2048, 16, 2, 1, 4767, False),
    ("h100_sxm", "13b", 2048, 32, 2, 1, 4811, False),
    ("h100_sxm", "13b", 2048, 64, 2, 1, 4800, False),
    ("h100_sxm", "13b", 2048, 128, 16, 1, 5080, True),
    ("h100_sxm", "13b", 2048, 256, 16, 1, 4989, True),
    ("h100_sxm", "13b", 2048, 512, 16, 1, 4952, True),
    ("h100_sxm", "30b", 2048, 16, 10, 3, 2263, True),
    ("h100_sxm", "30b", 2048, 32, 14, 3, 2308, True),
    ("h100_sxm", "30b", 2048, 128, 8, 1, 2199, True),
    ("h100_sxm", "30b", 2048, 256, 8, 1, 2148, True),
    ("h100_sxm", "30b", 2048, 512, 8, 1, 2115, True),
    ("h100_sxm", "70b", 2048, 32, 2, 16, 882, True),
    ("h100_sxm", "70b", 2048, 64, 8, 4, 1039, True),
    ("h100_sxm", "70b", 2048, 128, 8, 1, 1058, True),
    ("h100_sxm", "70b", 2048, 256, 8, 1, 1035, True),
    ("h100_sxm", "70b", 2048, 512, 8, 1, 1007, True),
]
LLAMA2 = {"13B": dict(hidden=5120, feedforward=13824, attn_heads=40, kv_heads=40, num_blocks=40),
          "70B": dict(hidden=8192, feedforward=28672, attn_heads=64, kv_heads=8, num_blocks=80)}
# (model, microbatch, recompute: none / every second block / full, tokens/s/GPU); 64 GPUs, 4,096 tokens
TITAN = [("13B", 2, "none", 2162), ("13B", 2, "layer", 1914), ("70B", 2, "full", 353)]
LLAMA2.update({"7B": dict(hidden=4096, feedforward=11008, attn_heads=32, kv_heads=32, num_blocks=32),
               "34B": dict(hidden=8192, feedforward=22016, attn_heads=64, kv_heads=8, num_blocks=48)})
# fms-fsdp's table: (model, microbatch, every block recomputed, shard group, tokens/s/GPU); 128 GPUs
IBM = [("7B", 2, False, 8, 3760), ("13B", 1, False, 8, 1700), ("34B", 8, True, 128, 772),
       ("70B", 6, True, 128, 380)]


def system(tmp, name, coll):
    with open(os.path.join("presets", "systems", name + ".json")) as f:
        d = {k: v for k, v in json.load(f).items() if not k.startswith("$")}
    d["collectives"] = coll
    return d


def estimate(tmp, model, ex, sysobj):
    paths = []
    for i, obj in enumerate((model, ex, sysobj)):
        p = os.path.join(tmp, "%d.json" % i)
        with open(p, "w") as f:
            json.dump(obj, f)
        paths.append(p)
    out = json.loads(subprocess.run([FATHOM, "estimate"] + paths, capture_output=True,
                                    text=True, check=True).stdout)
    return out["summary"]["tokens_per_s_per_proc"], out["summary"]["mem_tier1_bytes"] / 2**30, \
        out["fits_memory"]


def execution(n, mbs, ga, stack):
    return {"num_procs": n, "data_par": n, "batch_size": n * mbs * ga, "microbatch_size": mbs,
            "datatype": "bfloat16", "zero_stage": 3, "data_par_overlap": True,
            "data_par_net": 0 if n <= 8 else 1, "stack": stack}


def llama2(m):
    return dict(LLAMA2[m], seq_size=4096, attn_size=128, vocab_size=32000, bias=False,
                tied_embeddings=False, position_embedding="rope", gated_mlp=True, norm="rmsnorm",
                causal=True)


def report(label, rows, tmp):
    errs = {"calculon": [], "nccl": []}
    print("\n" + label)
    print("%-13s %5s %5s %4s %3s %2s %7s | %8s %7s | %8s %7s | %s" % (
        "system", "model", "seq", "gpus", "mbs", "ga", "meas", "calculon", "err", "nccl", "err",
        "memory GiB"))
    for name, mname, seq, n, mbs, ga, meas, model, ex in rows:
        line = "%-13s %5s %5d %4d %3d %2d %7d |" % (name, mname, seq, n, mbs, ga, meas)
        for coll in ("calculon", "nccl"):
            t, gib, fits = estimate(tmp, model, ex, system(tmp, name, coll))
            e = (t / meas - 1) * 100
            errs[coll].append(abs(e))
            line += " %8.0f %+6.1f%% |" % (t, e)
        print(line + " %.1f%s" % (gib, "" if fits else " (estimated not to fit)"))
    for coll, v in errs.items():
        print("  %s: %d rows, mean %.1f%%, worst %.1f%%" % (coll, len(v), sum(v) / len(v), max(v)))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        rows = {}
        for name, m, seq, n, mbs, ga, meas, ac in MOSAIC:
            h, blocks = MPT[m]
            model = {"hidden": h, "feedforward": 4 * h, "seq_size": seq, "attn_heads": h // 128,
                     "attn_size": 128, "num_blocks": blocks, "vocab_size": 50368, "bias": False,
                     "tied_embeddings": True, "position_embedding": "learned",
                     "gated_mlp": False, "norm": "layernorm", "causal": True}
            ex = execution(n, mbs, ga, "fsdp")
            ex["activation_recompute"] = "full" if ac else "none"
            rows.setdefault(name, []).append((name, m, seq, n, mbs, ga, meas, model, ex))
        for name in ("a100_sxm_40g", "a100_sxm", "h100_sxm"):
            report("llm-foundry (MosaicML Composer FSDP1), " + name, rows[name], tmp)
        titan = []
        for m, mbs, ac, meas in TITAN:
            model = llama2(m)
            ex = execution(64, mbs, 1, "torchtitan")
            ex["activation_recompute"] = "none" if ac == "none" else "full"
            if ac == "layer":
                ex["recompute_blocks"] = model["num_blocks"] // 2
            titan.append(("a100_sxm", "L2-" + m, 4096, 64, mbs, 1, meas, model, ex))
        report("torchtitan (FSDP2) Llama 2 on 64 A100 80GB", titan, tmp)
        ibm = []
        for m, mbs, ac, group, meas in IBM:
            ex = execution(128, mbs, 1, "fsdp")
            ex["shard_group"] = group
            ex["activation_recompute"] = "full" if ac else "none"
            ibm.append(("a100_sxm", "L2-" + m, 4096, 128, mbs, 1, meas, llama2(m), ex))
        report("IBM fms-fsdp (FSDP1, eager) Llama 2 on 128 A100 80GB", ibm, tmp)


if __name__ == "__main__":
    main()

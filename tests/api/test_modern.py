"""test_modern.py — the models planners train today through a real fathomd: the modern presets'
parameter counts from /v1/transformer and /v1/estimate alike, an estimate with every new feature
on (against its schema), bad values of every new field as 422s naming the field, the measured
validation table, and searches that free the attention kernel and FP8."""
import json
import os
import subprocess
import tempfile
import unittest

from harness import FATHOM_CLI, ServerTestCase, validate
from test_sweeps import wait_for

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# Published totals of the presets' configs (config.json of each model).
PARAMETERS = {"llama3-8B": 8030261248, "llama3-70B": 70553706496, "llama3.1-405B": 405853388800,
              "mistral-7B-v0.3": 7248023552, "qwen2.5-7B": 7615616512, "qwen2.5-72B": 72706203648}

LATER_RELEASES = os.path.join(ROOT, "presets", "validation", "later_releases.json")
VERIFICATION_CARDS = os.path.join(ROOT, "presets", "validation", "verification_cards.json")
MOE_RECIPES = os.path.join(ROOT, "presets", "validation", "moe_recipes.json")
BLACKWELL_ULTRA = os.path.join(ROOT, "presets", "validation", "blackwell_ultra.json")


def published_error(published, row, estimated):
    """Percent error of an estimate against the row's published figure (tokens/s/GPU, else
    TFLOP/s/GPU), computed from the published rows, not from what the report prints."""
    p = published[row["id"]]
    measured = p["tokens_per_s_per_gpu"] if p.get("tokens_per_s_per_gpu") else p["tflops_per_gpu"]
    return 100.0 * (estimated - measured) / measured


def validate_runs(path, *flags):
    """fathom validate --runs PATH [flags]: the finished process."""
    return subprocess.run([FATHOM_CLI, "--presets", os.path.join(ROOT, "presets"), "validate",
                           "--runs", path, *flags], capture_output=True, text=True, timeout=600)


LLAMA70_H100 = {"num_procs": 64, "tensor_par": 4, "pipeline_par": 8, "data_par": 2, "batch_size": 128,
                "pipeline_interleaving": 5, "datatype": "bfloat16", "fp8": True,
                "attention_kernel": "fused", "activation_recompute": "attn_only",
                "tensor_par_comm_type": "rs_ag", "seq_par_ag_redo": True, "optimizer_sharding": True,
                "data_par_overlap": True, "tensor_par_net": 0, "pipeline_par_net": 1, "data_par_net": 1}


class Modern(ServerTestCase):
    def test_parameter_counts_agree(self):
        for name, total in PARAMETERS.items():
            t = self.server.post("/v1/transformer", {"model": name})
            self.assertEqual(t.status, 200, t.body)
            self.assertEqual(t.json()["params"]["total"], total, name)
            e = self.server.post("/v1/estimate", {"model": name, "system": "h100_sxm",
                                                  "execution": {"num_procs": 8, "tensor_par": 8,
                                                                "batch_size": 8, "datatype": "bfloat16"}})
            if e.status == 422:  # Qwen2.5 7B's 28 heads do not split 8 ways: TP 4
                e = self.server.post("/v1/estimate", {"model": name, "system": "h100_sxm",
                                                      "execution": {"num_procs": 8, "tensor_par": 4,
                                                                    "batch_size": 8, "datatype": "bfloat16"}})
            self.assertEqual(e.status, 200, e.body)
            self.assertEqual(e.json()["summary"]["parameters_total"], total, name)

    def test_llama3_70b_with_every_feature(self):
        r = self.server.post("/v1/estimate", {"model": "llama3-70B", "system": "h100_sxm", "execution": LLAMA70_H100})
        self.assertEqual(r.status, 200, r.body)
        out = r.json()
        validate(out, "estimate.response.json")
        s = out["summary"]
        self.assertEqual(s["parameters_total"], PARAMETERS["llama3-70B"])
        # Megatron's count: 3 × (2·70.55e9-ish GEMM params + attention + logits) per token
        self.assertAlmostEqual(s["model_flops_per_token"] * 128 * 8192, s["model_flops_per_step"], delta=1)
        self.assertGreater(s["hardware_flops_per_step"], s["model_flops_per_step"])  # attention recompute
        self.assertTrue(0 < s["mfu"] < 1)
        self.assertAlmostEqual(s["tflops_per_proc"] * 1e12 * s["step_time_s"] * 64, s["model_flops_per_step"],
                               delta=1e-6 * s["model_flops_per_step"])
        mem = s["memory"]
        first, last = mem["stages"]
        self.assertEqual((first["stage"], last["stage"]), ("first", "last"))
        self.assertEqual(mem["bytes_per_parameter"], {"weights": 2, "gradients": 4, "optimizer": 6})
        heaviest = first if mem["heaviest_stage"] == "first" else last
        self.assertEqual(heaviest["total"], s["mem_tier1_bytes"])
        self.assertGreater(s["outer_layers_time_s"], 0)
        self.assertAlmostEqual(sum(s["time_breakdown_s"].values()), s["step_time_s"], delta=1e-9 * s["step_time_s"])
        self.assertEqual(out["stats"]["total_time"], s["step_time_s"])

    def test_low_precision_gradients(self):
        """bfloat16 gradients (Megatron's grad_reduce_in_fp32 = False): 2 bytes per parameter
        in place of 4 on every stage, 2·params less memory, the same step time; false is the
        default and normalizes away (the same answer as leaving it out)."""
        def post(**extra):
            r = self.server.post("/v1/estimate", {"model": "llama3-70B", "system": "h100_sxm",
                                                  "execution": dict(LLAMA70_H100, **extra)})
            self.assertEqual(r.status, 200, r.body)
            return r.json()
        fp32, bf16, off = post(), post(low_precision_gradients=True), post(low_precision_gradients=False)
        validate(bf16, "estimate.response.json")
        self.assertEqual(off, fp32)
        mem32, mem16 = fp32["summary"]["memory"], bf16["summary"]["memory"]
        self.assertEqual(mem16["bytes_per_parameter"], dict(mem32["bytes_per_parameter"], gradients=2))
        for a, b in zip(mem32["stages"], mem16["stages"]):
            self.assertAlmostEqual(b["gradients"] * 2, a["gradients"], delta=1e-6 * a["gradients"])
            self.assertAlmostEqual(a["total"] - b["total"], a["gradients"] / 2, delta=1e-6 * a["total"])
            self.assertEqual((a["weights"], a["optimizer"], a["activations"]),
                             (b["weights"], b["optimizer"], b["activations"]))
        self.assertEqual(bf16["summary"]["step_time_s"], fp32["summary"]["step_time_s"])

    def test_recompute_some_blocks(self):
        """Full recompute of one of each chunk's blocks (Llama 3 70B on 64 H100s, 80 blocks over
        8 stages × 5 chunks: 2 blocks per chunk) reruns half the forward that recomputing every
        block does, and holds memory between no recompute and full recompute; 3 > 2 is a 422."""
        exe = dict(LLAMA70_H100, activation_recompute="none", seq_par_ag_redo=False)
        def post(**extra):
            r = self.server.post("/v1/estimate", {"model": "llama3-70B", "system": "h100_sxm",
                                                  "execution": dict(exe, **extra)})
            self.assertEqual(r.status, 200, r.body)
            return r.json()
        none, full, half = post(), post(activation_recompute="full"), \
            post(activation_recompute="full", recompute_blocks=1)
        validate(half, "estimate.response.json")
        re = lambda o: o["summary"]["time_breakdown_s"]["recompute"]
        self.assertEqual(re(none), 0)
        self.assertAlmostEqual(re(half), re(full) / 2, delta=1e-9 * re(full))
        mem = lambda o: o["summary"]["mem_tier1_bytes"]
        self.assertLess(mem(full), mem(half))
        self.assertLess(mem(half), mem(none))
        r = self.server.post("/v1/estimate", {"model": "llama3-70B", "system": "h100_sxm",
                                              "execution": dict(exe, activation_recompute="full", recompute_blocks=3)})
        self.assertEqual(r.status, 422, r.body)
        self.assertEqual(r.json()["error"]["field"], "execution.recompute_blocks")

    def test_calculon_model_objects_stay_calculon(self):
        # A model without the new fields normalizes without them (Calculon's block).
        body = {"model": "gpt3-175B", "system": "a100_80g",
                "execution": {"num_procs": 64, "tensor_par": 8, "pipeline_par": 8, "batch_size": 64,
                              "tensor_par_net": 0, "pipeline_par_net": 1, "data_par_net": 1}}
        r = self.server.post("/v1/estimate", body)
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json()["summary"]["outer_layers_time_s"], 0)

    def test_bad_new_fields_name_the_field(self):
        base = {"hidden": 4096, "seq_size": 4096, "attn_heads": 32, "num_blocks": 4, "vocab_size": 32000}
        cases = [
            ({"kv_heads": 3}, {}, "model.kv_heads"),
            ({"kv_heads": 0}, {}, "model.kv_heads"),
            ({"kv_heads": "8"}, {}, "model.kv_heads"),
            ({"gated_mlp": 1}, {}, "model.gated_mlp"),
            ({"norm": "batchnorm"}, {}, "model.norm"),
            ({"qkv_bias": "yes"}, {}, "model.qkv_bias"),
            ({"causal": "yes"}, {}, "model.causal"),
            ({"position_embedding": "alibi"}, {}, "model.position_embedding"),
            ({"kv_heads": 8}, {"attention_kernel": "flash"}, "execution.attention_kernel"),
            ({"kv_heads": 8}, {"fp8": "true"}, "execution.fp8"),
            ({"kv_heads": 8}, {"fp8": True, "datatype": "float32"}, "execution.fp8"),
            ({"kv_heads": 8}, {"attention_type": "multiquery"}, "execution.attention_type"),
            ({"kv_heads": 8}, {"low_precision_gradients": "yes"}, "execution.low_precision_gradients"),
            # a sliding window: a positive count of tokens, over a causal sequence, on one rank
            ({"sliding_window": 0}, {}, "model.sliding_window"),
            ({"sliding_window": "128"}, {}, "model.sliding_window"),
            ({"sliding_window": 128, "causal": False}, {}, "model.sliding_window"),
            ({"full_attention_every": 2}, {}, "model.full_attention_every"),
            ({"sliding_window": 128, "full_attention_every": 0}, {}, "model.full_attention_every"),
            # chunked local attention: a boolean, and the chunk is the sliding window
            ({"chunked_attention": True}, {}, "model.chunked_attention"),
            ({"sliding_window": 128, "chunked_attention": 1}, {}, "model.chunked_attention"),
            ({"sliding_window": 128}, {"context_par": 2, "num_procs": 2, "attention_kernel": "fused"},
             "execution.context_par"),
            # recompute_blocks: a count of blocks full recompute reruns, at most a chunk's 4
            ({"kv_heads": 8}, {"activation_recompute": "full", "recompute_blocks": 0}, "execution.recompute_blocks"),
            ({"kv_heads": 8}, {"activation_recompute": "full", "recompute_blocks": "2"}, "execution.recompute_blocks"),
            ({"kv_heads": 8}, {"activation_recompute": "full", "recompute_blocks": 5}, "execution.recompute_blocks"),
            ({"kv_heads": 8}, {"activation_recompute": "none", "recompute_blocks": 1}, "execution.recompute_blocks"),
            ({}, {"activation_recompute": "full", "recompute_blocks": 1}, "execution.recompute_blocks"),
            # 8 key/value heads cannot be split 3 ways, nor 3 ranks share whole heads
            ({"hidden": 3072, "attn_heads": 24, "kv_heads": 8}, {"tensor_par": 3, "num_procs": 3},
             "execution.tensor_par"),
        ]
        for model_extra, exe_extra, field in cases:
            exe = {"batch_size": 8, "num_procs": 1, "datatype": "bfloat16"}
            exe.update(exe_extra)
            r = self.server.post("/v1/estimate", {"model": dict(base, **model_extra), "system": "h100_sxm",
                                                  "execution": exe})
            self.assertEqual(r.status, 422, (model_extra, exe_extra, r.body))
            self.assertEqual(r.json()["error"]["field"], field, (model_extra, exe_extra, r.body))
        # a system without float8 cannot run FP8 GEMMs
        r = self.server.post("/v1/estimate", {"model": dict(base, kv_heads=8), "system": "a100_80g",
                                              "execution": {"batch_size": 8, "fp8": True}})
        self.assertEqual(r.status, 422, r.body)
        self.assertEqual(r.json()["error"]["field"], "execution.fp8")
        # attention_efficiency out of (0, 1]
        sysobj = self.server.get("/v1/presets/systems/h100_sxm").json()
        for bad in (0, 1.5, -0.1, "half"):
            r = self.server.post("/v1/estimate", {"model": "llama3-8B", "system": dict(sysobj, attention_efficiency=bad),
                                                  "execution": {"batch_size": 8}})
            self.assertEqual(r.status, 422, r.body)
            self.assertEqual(r.json()["error"]["field"], "system.attention_efficiency")

    def test_measured_validation(self):
        r = self.server.get("/v1/validation")
        self.assertEqual(r.status, 200)
        m = r.json()["measured"]
        self.assertEqual(m["rows_total"], 48)
        rows = {row["id"]: row for row in m["rows"]}
        # every dense row is estimated: context-parallel and FSDP rows included
        for row in m["rows"]:
            if "experts" not in row.get("reason", ""):
                self.assertTrue(row["expressible"], row)
        self.assertGreaterEqual(m["rows_estimated"], 20)
        row = rows["MB-019"]
        self.assertEqual((row["compared"], row["measured"]), ("tokens_per_s_per_gpu", 1602))
        self.assertEqual(row["estimated"], row["estimated_tokens_per_s_per_gpu"])
        self.assertAlmostEqual(row["error_pct"], 100 * (row["estimated"] - 1602) / 1602, places=9)
        for rid in ("MB-002", "MB-006", "MB-018", "NEMO2407-031"):   # context parallel, FSDP
            self.assertTrue(rows[rid]["expressible"], rows[rid])
        cp_only = rows["NEMOCP-044"]   # publishes TFLOP/s only
        self.assertEqual((cp_only["compared"], cp_only["measured"]), ("tflops_per_gpu", 549))
        self.assertEqual(cp_only["layout"]["cp"], 16)
        # its estimate is counted as its source counts: NeMo's llama2 formula (24.03/24.07),
        # gbs·s·L·h²·(12 + 12·g/n + 18·f/h + 12·s/h + 6·V/(L·h)), every s×s score included —
        # NeMo 24.07's own table fixes it: 767 TFLOP/s at 16,634 tokens/s/GPU for Llama 2 7B
        md = cp_only["estimate_request"]["model"]
        gbs, s, L, h = (cp_only["estimate_request"]["execution"]["batch_size"], md["seq_size"],
                        md["num_blocks"], md["hidden"])
        nemo_flops = gbs * s * L * h * h * (12 + 12 * md["kv_heads"] / md["attn_heads"]
                                            + 18 * md["feedforward"] / h + 12 * s / h
                                            + 6 * md["vocab_size"] / (L * h))
        self.assertAlmostEqual(cp_only["estimated"] * 1e12 * cp_only["step_time_s"] * 512 / nemo_flops,
                               1.0, places=9)
        per_token_7b = 4096 * 4096 * 32 * (12 + 12 + 18 * 11008 / 4096 + 12 * 4096 / 4096
                                           + 6 * 32000 / (32 * 4096))
        self.assertAlmostEqual(767e12 / 16634 / per_token_7b, 1.0, delta=0.002)
        errors = [abs(x["error_pct"]) for x in m["rows"]
                  if x["expressible"] and x["compared"] == "tokens_per_s_per_gpu"]
        self.assertAlmostEqual(m["mean_abs_error_pct"], sum(errors) / len(errors), places=9)
        self.assertAlmostEqual(m["max_abs_error_pct"], max(errors), places=9)
        dense = [abs(x["error_pct"]) for x in m["rows"]
                 if x["expressible"] and x["compared"] == "tokens_per_s_per_gpu" and not x["moe"]]
        self.assertEqual(m["dense_rows_estimated"], len(dense))
        self.assertAlmostEqual(m["dense_mean_abs_error_pct"], sum(dense) / len(dense), places=9)
        self.assertAlmostEqual(m["dense_max_abs_error_pct"], max(dense), places=9)
        loso = [abs(x["loso"]["error_pct"]) for x in m["rows"] if x["expressible"]
                and x["compared"] == "tokens_per_s_per_gpu" and not x["moe"] and "error_pct" in x["loso"]]
        self.assertEqual(m["loso"]["dense_rows_estimated"], len(loso))
        self.assertAlmostEqual(m["loso"]["dense_mean_abs_error_pct"], sum(loso) / len(loso), places=9)
        # rows Fathom cannot tell apart: grouped here from the rows' own estimate requests
        same = {}
        for x in m["rows"]:
            if x["expressible"]:
                key = (x["compared"], json.dumps(x["estimate_request"], sort_keys=True))
                same.setdefault(key, []).append(x)
        expected = [g for g in same.values() if len(g) > 1]
        served = m["indistinguishable"]["groups"]
        self.assertEqual(len(served), len(expected))
        for g, want in zip(served, sorted(expected, key=lambda g: m["rows"].index(g[0]))):
            lo, hi = min(x["measured"] for x in want), max(x["measured"] for x in want)
            self.assertEqual(g["ids"], [x["id"] for x in want])
            self.assertEqual((g["measured_min"], g["measured_max"]), (lo, hi))
            self.assertAlmostEqual(g["error_floor_pct"], 100 * (hi - lo) / (hi + lo), places=9)
            self.assertEqual(len({x["estimated"] for x in want}), 1)
        # one Llama 3 70B layout published by three sources
        self.assertIn(["MB-019", "MB0909-030", "MLM-104"], [g["ids"] for g in served])
        self.assertAlmostEqual(m["indistinguishable"]["error_floor_pct"],
                               max(g["error_floor_pct"] for g in served), places=9)

    def test_measured_accuracy(self):
        """The estimates against the published measurements themselves (read from the validation
        set, not from what the report prints), within the accuracy reached with the sourced
        presets (doc/validation.md, "Measured runs"). The issue's target — mean 5%, worst 10% — is not met
        yet; these bounds keep what is reached from slipping, and a row may not move far."""
        m = self.server.get("/v1/validation").json()["measured"]
        with open(os.path.join(ROOT, "presets", "validation", "measured_runs.json")) as f:
            published = {r["id"]: r for r in json.load(f)}

        def error(row, estimated):
            return published_error(published, row, estimated)

        groups = {"dense": [], "moe": [], "tflops": [], "loso_dense": [], "loso_tflops": []}
        for row in m["rows"]:
            self.assertTrue(row["expressible"], row)
            self.assertEqual(row["source"], published[row["id"]]["source"])
            e = error(row, row["estimated"])
            self.assertAlmostEqual(row["error_pct"], e, places=6)
            by_tflops = row["compared"] == "tflops_per_gpu"
            kind = "tflops" if by_tflops else "moe" if row["moe"] else "dense"
            groups[kind].append(abs(e))
            loso = row["loso"]
            self.assertNotEqual(loso["left_out_source"], "")
            if "estimated" in loso:  # calibrated on the other sources' rows only
                le = error(row, loso["estimated"])
                self.assertAlmostEqual(loso["error_pct"], le, places=6)
                if kind != "moe":
                    groups["loso_" + kind].append(abs(le))
            else:  # B200 and GB200: one source measured them
                self.assertIn(row["system"], ("b200", "gb200_nvl72"), row)
                self.assertIn("reason", loso)

        def check(kind, n, mean, worst):
            errs = groups[kind]
            self.assertEqual(len(errs), n, kind)
            self.assertLessEqual(sum(errs) / n, mean, (kind, errs))
            self.assertLessEqual(max(errs), worst, (kind, errs))

        # built-in presets (doc/validation.md: 6.4% / 29.2%, 37.9% / 133.4%, 35.4% / 52.5%)
        check("dense", 20, 6.5, 29.5)
        check("moe", 19, 38.5, 134.0)
        check("tflops", 9, 36.0, 53.0)
        # leave-one-source-out calibrated, H100 rows (doc/validation.md: 4.4% / 9.9%, 9.9% / 13.0%: a
        # dense row's preset is fitted on the other sources' dense rows)
        check("loso_dense", 15, 4.5, 10.0)
        check("loso_tflops", 9, 10.0, 13.5)

    def test_small_moe_warning_quotes_the_validation(self):
        """moe_small_hidden: every estimate of an MoE model narrower than 4096 carries it, and
        the figures it quotes are those of the published runs — the validation set and the later
        releases — recomputed here from the measurements, so the message cannot go stale when
        the step model moves. Dense and wider MoE models do not get it."""
        rows = [r for r in self.server.get("/v1/validation").json()["measured"]["rows"]]
        out = validate_runs(LATER_RELEASES, "--json")
        self.assertEqual(out.returncode, 0, out.stderr)
        rows += json.loads(out.stdout)["rows"]
        published = {}
        for name in (os.path.join(ROOT, "presets", "validation", "measured_runs.json"), LATER_RELEASES):
            with open(name) as f:
                published.update({r["id"]: r for r in json.load(f)})

        def error(row):
            return published_error(published, row, row["estimated"])

        moe = [r for r in rows if r["moe"] and r["compared"] == "tokens_per_s_per_gpu"]
        small = [error(r) for r in moe if r["estimate_request"]["model"]["hidden"] < 4096]
        wide = [error(r) for r in moe if r["estimate_request"]["model"]["hidden"] >= 4096]
        self.assertEqual({published[r["id"]]["model"] for r in moe
                          if r["estimate_request"]["model"]["hidden"] < 4096},
                         {"GPT-OSS 120B", "Qwen3-30B-A3B"})
        warned = {}
        for r in moe:
            got = self.server.post("/v1/estimate", r["estimate_request"])
            self.assertEqual(got.status, 200, got.body)
            codes = {w["code"]: w["message"] for w in got.json()["warnings"]}
            small_model = r["estimate_request"]["model"]["hidden"] < 4096
            self.assertEqual("moe_small_hidden" in codes, small_model, (r["id"], codes))
            if small_model:
                warned[r["id"]] = codes["moe_small_hidden"]
        message = next(iter(warned.values()))
        mean = sum(abs(e) for e in small) / len(small)
        for quoted in ("the %d published" % len(small), "by %.1f%% on average" % mean,
                       "from %+.1f%% to %+.1f%%" % (min(small), max(small)),
                       "too fast in %d of them" % sum(1 for e in small if e > 0),
                       "the %d runs of wider MoE models, by %.1f%%"
                       % (len(wide), sum(abs(e) for e in wide) / len(wide))):
            self.assertIn(quoted, message)
        # The widest release-to-release spread of each small model: the same GPUs, count,
        # precision, batch, sequence and layout published in several releases.
        same = ("model", "gpu_type", "gpu_count", "precision", "global_batch", "micro_batch",
                "seq_len", "tp", "pp", "vp", "cp", "ep")
        groups = {}
        for r in moe:
            if r["estimate_request"]["model"]["hidden"] < 4096:
                p = published[r["id"]]
                groups.setdefault(tuple(p[k] for k in same), []).append(p["tokens_per_s_per_gpu"])
        widest = {}
        for key, tokens in groups.items():
            if len(tokens) > 1 and max(tokens) / min(tokens) > widest.get(key[0], (1, 0, 0))[0]:
                widest[key[0]] = (max(tokens) / min(tokens), min(tokens), max(tokens), key[2],
                                  key[1].split()[0])
        self.assertEqual(set(widest), {"GPT-OSS 120B", "Qwen3-30B-A3B"})
        self.assertIn("up to %.2fx apart" % max(w[0] for w in widest.values()), message)
        for name, (_, low, high, gpus, gpu) in widest.items():
            self.assertIn("%s on %d %ss: %s and %s" % (name, gpus, gpu, format(int(low), ","),
                                                        format(int(high), ",")), message)
        dense = self.server.post("/v1/estimate", {"model": "llama3-8B", "system": "h100_sxm", "execution": {
            "num_procs": 8, "tensor_par": 1, "data_par": 8, "batch_size": 8, "fp8": True}}).json()
        self.assertNotIn("moe_small_hidden", [w["code"] for w in dense["warnings"]])

    def test_validate_own_runs(self):
        """fathom validate --runs FILE: the same report over a file of rows, here the four files
        shipped beside the validation set (later Megatron-Bridge releases, the model
        verification cards' tuned recipes, whose stated step times give their tokens/s,
        Megatron-LM's MoE recipes, whose tokens/s is their TFLOP/s at the cards' FLOPs per token,
        and the GB300 and B300 rows of the Megatron-Bridge pages),
        compared with the figures each file publishes; a file that is not an array of rows is
        refused naming "runs"."""
        for path in (LATER_RELEASES, VERIFICATION_CARDS, MOE_RECIPES, BLACKWELL_ULTRA):
            with self.subTest(path=os.path.basename(path)):
                self.check_own_runs(path)
        with tempfile.NamedTemporaryFile("w", suffix=".json") as bad:
            json.dump({"rows": []}, bad)
            bad.flush()
            out = validate_runs(bad.name)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("runs", out.stdout + out.stderr)

    def test_moe_recipes_tokens_from_cards(self):
        """moe_recipes.json publishes only TFLOP/s; its tokens/s must be that TFLOP/s over the
        FLOPs per token the verification cards state for the same model (their TFLOP/s over their
        tokens/s), and each A/B pair (partial against full-iteration CUDA graphs) must be one
        layout, so that Fathom gives both one estimate and the measured gap is the graphs'."""
        with open(VERIFICATION_CARDS) as f:
            cards = json.load(f)
        with open(MOE_RECIPES) as f:
            recipes = json.load(f)
        per_token = {}
        for c in cards:
            per_token.setdefault(c["model"], []).append(c["tflops_per_gpu"] * 1e12 / c["tokens_per_s_per_gpu"])
        for r in recipes:
            self.assertIn("tokens_per_s_per_gpu", r["derived_fields"])
            flops = sum(per_token[r["model"]]) / len(per_token[r["model"]])
            self.assertAlmostEqual(r["tflops_per_gpu"] * 1e12 / flops / r["tokens_per_s_per_gpu"], 1, places=5)
        layout = ("model", "gpu_type", "gpu_count", "precision", "global_batch", "micro_batch", "tp", "pp", "vp", "ep")
        pairs = [r for r in recipes if "A/B pair" in r["notes"]]
        self.assertEqual(len(pairs), 4)
        m = json.loads(validate_runs(MOE_RECIPES, "--json").stdout)
        estimated = {row["id"]: row["estimated"] for row in m["rows"]}
        for a, b in zip(pairs[::2], pairs[1::2]):
            self.assertEqual([a[k] for k in layout], [b[k] for k in layout])
            self.assertEqual(estimated[a["id"]], estimated[b["id"]])
            self.assertGreater(b["tokens_per_s_per_gpu"], a["tokens_per_s_per_gpu"])  # full graphs faster

    def check_own_runs(self, path):
        with open(path) as f:
            published = {r["id"]: r for r in json.load(f)}
        out = validate_runs(path, "--json")
        self.assertEqual(out.returncode, 0, out.stderr)
        m = json.loads(out.stdout)
        self.assertEqual((m["source"], m["rows_total"]), (path, len(published)))
        expressed = 0
        for row in m["rows"]:
            p = published[row["id"]]
            # every row is expressible, uneven virtual pipeline chunks included (DeepSeek-V3's 61
            # blocks on 2 stages, 31 each, in 8 chunks: the recipe's uneven pipeline layout)
            self.assertTrue(row["expressible"], row)
            expressed += 1
            self.assertEqual(row["measured"], p["tokens_per_s_per_gpu"])
            tokens_per_step = p["global_batch"] * p["seq_len"] / p["gpu_count"]
            self.assertAlmostEqual(row["estimated"], tokens_per_step / row["step_time_s"], places=6)
            # a row's own step time and tokens/s are one measurement
            self.assertAlmostEqual(tokens_per_step / p["step_time_s"] / p["tokens_per_s_per_gpu"], 1, places=3)
        text = validate_runs(path)
        self.assertEqual(text.returncode, 0, text.stderr)
        self.assertIn("tokens/s/GPU over %d of %d rows" % (expressed, len(published)), text.stdout)

    def test_measured_rule_least_recompute(self):
        """Each row's estimate_request, posted to /v1/estimate, gives the row's step time; and
        the recompute the rule chose is the least that fits: the rung before it on the rule's
        ladder (none, attn_only, attn_only + layernorm, + moe_act, + mla_up_proj, full of 1, 2,
        ... blocks per chunk) does not fit."""
        m = self.server.get("/v1/validation").json()["measured"]
        # as the service lists them: in the order of the module names, not of the ladder
        ladder_modules = ([], ["layernorm"], ["moe_act", "layernorm"],
                          ["moe_act", "mla_up_proj", "layernorm"], ["mla_up_proj", "layernorm"])
        checked = set()
        for row in m["rows"]:
            if not row["expressible"]:
                continue
            req = row["estimate_request"]
            r = self.server.post("/v1/estimate", req)
            self.assertEqual(r.status, 200, (row["id"], r.body))
            self.assertEqual(r.json()["summary"]["step_time_s"], row["step_time_s"], row["id"])
            e = dict(req["execution"])
            chosen, mods = e["activation_recompute"], e.pop("recompute_modules", [])
            if chosen == "none" or (chosen == "full" and "recompute_blocks" not in e):
                continue  # nothing before it / every block: its rungs are not in the row
            if chosen == "full" and e["recompute_blocks"] > 1:
                before = dict(e, recompute_blocks=e["recompute_blocks"] - 1)
            elif chosen == "full":  # attn_only with every module set the model can take
                del e["recompute_blocks"]
                model = req["model"]
                usable = [s for s in ladder_modules if ("moe" in model or "moe_act" not in s)
                          and ("mla" in model or "mla_up_proj" not in s)]
                before = dict(e, activation_recompute="attn_only", recompute_modules=max(usable, key=len))
            elif mods:  # the same set without the module the ladder added last
                last = "mla_up_proj" if "mla_up_proj" in mods else "moe_act" if "moe_act" in mods else "layernorm"
                before = dict(e, recompute_modules=[x for x in mods if x != last])
            else:
                before = dict(e, activation_recompute="none")
            if not before.get("recompute_modules", True):
                del before["recompute_modules"]
            r = self.server.post("/v1/estimate", dict(req, execution=before))
            self.assertEqual(r.status, 200, (row["id"], r.body))
            self.assertFalse(r.json()["fits_memory"], (row["id"], before))
            checked.add((chosen, len(mods), "recompute_blocks" in e))
        # the rows exercise each kind of step: selective modules and a few full blocks
        self.assertTrue(any(c[0] == "attn_only" and c[1] >= 1 for c in checked), checked)
        self.assertTrue(any(c[0] == "full" for c in checked), checked)

    def test_search_frees_kernel_and_fp8(self):
        body = {"kind": "optimal_execution", "model": "llama3-8B", "system": "h100_sxm", "num_procs": 8,
                "max_batch_size": 16, "datatype": "bfloat16",
                "options": {"top_n": 3, "attention_kernel": "all", "fp8": "all"}}
        r = self.server.post("/v1/sweep", body)
        self.assertEqual(r.status, 202, r.body)
        status = wait_for(self.server, r.json()["id"])
        self.assertEqual(status["status"], "done", status)
        validate(status, "sweep_status.response.json")
        best = status["best"][0]["execution"]
        self.assertEqual(best["attention_kernel"], "fused")
        self.assertTrue(best["fp8"])
        bad = dict(body, options={"fp8": "sometimes"})
        r = self.server.post("/v1/sweep", bad)
        self.assertEqual(r.status, 422)
        self.assertEqual(r.json()["error"]["field"], "options.fp8")
        r = self.server.post("/v1/sweep", dict(body, system="a100_80g", datatype="float16", options={"fp8": True}))
        self.assertEqual(r.status, 422)
        self.assertEqual(r.json()["error"]["field"], "options.fp8")

    def finished_search(self, body):
        """Runs a search sweep to the end and returns its best list, checked against its schema."""
        r = self.server.post("/v1/sweep", body)
        self.assertEqual(r.status, 202, r.body)
        status = wait_for(self.server, r.json()["id"])
        self.assertEqual(status["status"], "done", status)
        validate(status, "sweep_status.response.json")
        return status["best"]

    def estimate_matches(self, model, entry):
        """A best-list entry re-estimated alone gives its rate; returns that estimate."""
        est = self.server.post("/v1/estimate", {"model": model, "system": "h100_sxm", "execution": entry["execution"]})
        self.assertEqual(est.status, 200, est.body)
        self.assertEqual(est.json()["summary"]["sample_rate"], entry["summary"]["sample_rate"])
        return est.json()

    def test_search_recomputes_fewest_blocks(self):
        """options.recompute_blocks "fewest": a 32-block, 8192-wide model at sequence 8192 on 8
        H100s without offload, where layouts fit only with full recompute of some blocks; those
        rank, name their recompute_blocks, and re-estimate to the same rate."""
        model = {"hidden": 8192, "feedforward": 28672, "seq_size": 8192, "attn_heads": 64, "kv_heads": 8,
                 "num_blocks": 32, "vocab_size": 128256, "gated_mlp": True, "norm": "rmsnorm",
                 "position_embedding": "rope", "tied_embeddings": False}
        body = {"kind": "optimal_execution", "model": model, "system": "h100_sxm", "num_procs": 8,
                "max_batch_size": 16, "datatype": "bfloat16",
                "options": {"top_n": 10, "attention_kernel": "fused", "no_offload": True,
                            "recompute_blocks": "fewest"}}
        best = self.finished_search(body)
        some = [b for b in best if "recompute_blocks" in b["execution"]]
        self.assertTrue(some, best)
        for b in some:
            self.assertEqual(b["execution"]["activation_recompute"], "full")
            self.estimate_matches(model, b)
        r = self.server.post("/v1/sweep", dict(body, options={"recompute_blocks": "some"}))
        self.assertEqual(r.status, 422)
        self.assertEqual(r.json()["error"]["field"], "options.recompute_blocks")

    def test_search_recomputes_fewest_modules(self):
        """options.recompute_modules "fewest": a 16-block MoE with multi-latent attention at
        sequence 16384 on 8 H100s without offload or tensor parallelism (with TP 2 one fits
        without recompute, an MoE block's MLP keeping no TP collective), whose fastest layouts
        fit only with selective recompute; those rank, name their modules, re-estimate to the
        same rate, and do not fit without them. The best beats the same search without the
        option."""
        model = {"hidden": 4096, "feedforward": 8192, "seq_size": 16384, "attn_heads": 32, "num_blocks": 16,
                 "vocab_size": 32000, "gated_mlp": True, "norm": "rmsnorm", "position_embedding": "rope",
                 "tied_embeddings": False, "moe": {"num_experts": 64, "top_k": 8, "expert_feedforward": 1536},
                 "mla": {"q_lora_rank": 512, "kv_lora_rank": 256, "qk_nope_head_dim": 128,
                         "qk_rope_head_dim": 64, "v_head_dim": 128}}
        # FP8 off as before the modern defaults freed it: the case is about recompute alone
        options = {"top_n": 10, "attention_kernel": "fused", "no_offload": True, "fp8": False,
                   "max_tensor_par": 1}
        body = {"kind": "optimal_execution", "model": model, "system": "h100_sxm", "num_procs": 8,
                "max_batch_size": 16, "datatype": "bfloat16"}
        best = {}
        for pick in ("none", "fewest"):
            best[pick] = self.finished_search(dict(body, options=dict(options, recompute_modules=pick)))
        self.assertFalse([b for b in best["none"] if "recompute_modules" in b["execution"]])
        some = [b for b in best["fewest"] if "recompute_modules" in b["execution"]]
        self.assertTrue(some, best["fewest"])
        for b in some:
            self.assertNotEqual(b["execution"]["activation_recompute"], "full")
            self.estimate_matches(model, b)
            bare = dict(b["execution"])
            del bare["recompute_modules"]
            est = self.server.post("/v1/estimate", {"model": model, "system": "h100_sxm", "execution": bare})
            self.assertEqual(est.status, 200, est.body)
            self.assertFalse(est.json()["fits_memory"])
        self.assertGreater(best["fewest"][0]["summary"]["sample_rate"], best["none"][0]["summary"]["sample_rate"])
        r = self.server.post("/v1/sweep", dict(body, options={"recompute_modules": "all"}))
        self.assertEqual(r.status, 422)
        self.assertEqual(r.json()["error"]["field"], "options.recompute_modules")

    def test_search_with_low_precision_gradients(self):
        """options.low_precision_gradients: every execution the search ranks holds bfloat16
        gradients and re-estimates alone to its rate with 2 gradient bytes a parameter; with
        less memory held, the best is at least as fast as with fp32 gradients, and some ranked
        layout does not fit with fp32 ones. false normalizes away (the same sweep id)."""
        model = {"hidden": 8192, "feedforward": 28672, "seq_size": 8192, "attn_heads": 64, "kv_heads": 8,
                 "num_blocks": 32, "vocab_size": 128256, "gated_mlp": True, "norm": "rmsnorm",
                 "position_embedding": "rope", "tied_embeddings": False}
        body = {"kind": "optimal_execution", "model": model, "system": "h100_sxm", "num_procs": 8,
                "max_batch_size": 8, "datatype": "bfloat16",
                "options": {"top_n": 10, "attention_kernel": "fused", "no_offload": True}}
        fp32 = self.finished_search(body)
        with_opt = dict(body, options=dict(body["options"], low_precision_gradients=True))
        bf16 = self.finished_search(with_opt)
        self.assertTrue(bf16)
        tighter = 0
        for b in bf16:
            self.assertTrue(b["execution"]["low_precision_gradients"], b["execution"])
            est = self.estimate_matches(model, b)
            self.assertEqual(est["summary"]["memory"]["bytes_per_parameter"]["gradients"],
                             2 / (b["execution"]["shard_group"] if b["execution"].get("zero_stage", 0) >= 2 else 1))
            wide = dict(b["execution"], low_precision_gradients=False)
            again = self.server.post("/v1/estimate", {"model": model, "system": "h100_sxm", "execution": wide})
            self.assertEqual(again.status, 200, again.body)
            tighter += not again.json()["fits_memory"]
        self.assertGreater(tighter, 0, bf16)
        self.assertGreaterEqual(bf16[0]["summary"]["sample_rate"], fp32[0]["summary"]["sample_rate"])
        self.assertFalse([b for b in fp32 if b["execution"].get("low_precision_gradients")])
        ids = [self.server.post("/v1/sweep", dict(body, options=dict(body["options"], **extra))).json()["id"]
               for extra in ({}, {"low_precision_gradients": False})]
        self.assertEqual(ids[0], ids[1])
        r = self.server.post("/v1/sweep", dict(body, options={"low_precision_gradients": "yes"}))
        self.assertEqual(r.status, 422)
        self.assertEqual(r.json()["error"]["field"], "options.low_precision_gradients")


    def test_search_fixes_execution_options(self):
        """options.pipeline_schedule, moe_a2a_overlap, fp8_activation_cache, fp8_params and
        optimizer_state_datatype set those fields of every execution ranked (each re-estimates
        alone to its rate); their defaults normalize away (the same sweep id); a schedule no
        layout can run leaves the search empty, not refused; bad values name options.<field>."""
        model = {"hidden": 1024, "seq_size": 2048, "attn_heads": 16, "kv_heads": 4, "num_blocks": 8,
                 "vocab_size": 32000, "gated_mlp": True, "norm": "rmsnorm",
                 "position_embedding": "rope", "tied_embeddings": False,
                 "moe": {"num_experts": 8, "top_k": 2, "expert_feedforward": 1024}}
        opts = {"pipeline_schedule": "dualpipe", "moe_a2a_overlap": True, "fp8": True,
                "fp8_activation_cache": True, "fp8_params": True, "optimizer_state_datatype": "bfloat16"}
        body = {"kind": "optimal_execution", "model": model, "system": "h100_sxm", "num_procs": 16,
                "max_batch_size": 64, "datatype": "bfloat16",
                "options": dict(opts, top_n=5, no_offload=True)}
        best = self.finished_search(body)
        self.assertTrue(best)
        for b in best:
            e = b["execution"]
            for k, v in opts.items():
                self.assertEqual(e[k], v, (k, e))
            self.assertEqual(e["pipeline_par"] % 2, 0, e)
            self.estimate_matches(model, b)
        plain = dict(body, options={"top_n": 5})
        ids = [self.server.post("/v1/sweep", dict(plain, options=dict(plain["options"], **extra))).json()["id"]
               for extra in ({}, {"pipeline_schedule": "1f1b", "moe_a2a_overlap": False,
                                  "fp8_params": False, "fp8_activation_cache": False,
                                  "optimizer_state_datatype": "float32"})]
        self.assertEqual(ids[0], ids[1])
        # one GPU has no pipeline for DualPipe: nothing ranked, the search not refused
        self.assertEqual(self.finished_search(dict(body, num_procs=1, max_batch_size=8)), [])
        dense = dict(model)
        del dense["moe"]
        for bad, field in (({"pipeline_schedule": "gpipe"}, "options.pipeline_schedule"),
                           ({"moe_a2a_overlap": "yes"}, "options.moe_a2a_overlap"),
                           ({"fp8": False, "fp8_activation_cache": True}, "options.fp8_activation_cache"),
                           ({"fp8": False, "fp8_params": True}, "options.fp8_params"),
                           ({"optimizer_state_datatype": "fp8"}, "options.optimizer_state_datatype")):
            r = self.server.post("/v1/sweep", dict(body, options=bad))
            self.assertEqual(r.status, 422, (bad, r.body))
            self.assertEqual(r.json()["error"]["field"], field)
        r = self.server.post("/v1/sweep", dict(body, model=dense, options={"moe_a2a_overlap": True}))
        self.assertEqual(r.json()["error"]["field"], "options.moe_a2a_overlap")
        r = self.server.post("/v1/sweep", dict(body, model="gpt3-13B", datatype="float16",
                                               options={"pipeline_schedule": "dualpipe"}))
        self.assertEqual(r.json()["error"]["field"], "options.pipeline_schedule")

if __name__ == "__main__":
    unittest.main()


class Sharded(ServerTestCase):
    """[2/8]: the Llama 3 paper's 405B layouts, and bad sharded or long-context values."""

    PAPER = {"num_procs": 16384, "tensor_par": 8, "context_par": 1, "pipeline_par": 16, "data_par": 128,
             "batch_size": 2048, "datatype": "bfloat16", "attention_kernel": "fused",
             "activation_recompute": "attn_only", "tensor_par_comm_type": "rs_ag", "seq_par_ag_redo": True,
             "zero_stage": 1, "data_par_overlap": True}

    def test_llama_405b_paper_layouts(self):
        # 16,384 H100s, TP 8, CP 1, PP 16, DP 128, sequence 8192, 16M tokens per batch
        r = self.server.post("/v1/estimate", {"model": "llama3.1-405B", "system": "h100_sxm",
                                              "execution": self.PAPER})
        self.assertEqual(r.status, 200, r.body)
        validate(r.json(), "estimate.response.json")
        # CP 16 at sequence 131,072 (the long-context stage)
        model = self.server.get("/v1/presets/models/llama3.1-405B").json()
        model["seq_size"] = 131072
        exe = dict(self.PAPER, context_par=16, data_par=8, batch_size=128)
        r = self.server.post("/v1/estimate", {"model": model, "system": "h100_sxm", "execution": exe})
        self.assertEqual(r.status, 200, r.body)
        out = r.json()
        self.assertGreater(out["summary"]["time_breakdown_s"]["context_parallel_comm"], 0)
        self.assertEqual(out["summary"]["num_procs"], 16384)

    def test_bad_sharded_values_name_the_field(self):
        model = {"hidden": 4096, "seq_size": 4096, "attn_heads": 32, "kv_heads": 8, "num_blocks": 4,
                 "vocab_size": 32000}
        base = {"batch_size": 16, "num_procs": 8, "datatype": "bfloat16", "attention_kernel": "fused"}
        cases = [
            ({"context_par": 3, "num_procs": 6}, "execution.context_par"),          # 6 does not divide 4096
            ({"context_par": 0}, "execution.context_par"),
            ({"context_par": 2, "attention_kernel": "unfused"}, "execution.context_par"),
            ({"zero_stage": 4}, "execution.zero_stage"),
            ({"zero_stage": "3"}, "execution.zero_stage"),
            ({"zero_stage": 0, "optimizer_sharding": True}, "execution.zero_stage"),
            ({"zero_stage": 3, "weight_offload": True}, "execution.zero_stage"),
            ({"zero_stage": 2, "optimizer_offload": True}, "execution.zero_stage"),
            ({"zero_stage": 1, "shard_group": 3}, "execution.shard_group"),
            ({"zero_stage": 0, "shard_group": 2}, "execution.shard_group"),
            ({"num_procs": 8, "tensor_par": 2, "context_par": 2, "data_par": 3}, "execution.num_procs"),
            ({"context_par": 2, "context_par_net": 9}, "execution.context_par_net"),
        ]
        for extra, field in cases:
            r = self.server.post("/v1/estimate", {"model": model, "system": "h100_sxm",
                                                  "execution": dict(base, **extra)})
            self.assertEqual(r.status, 422, (extra, r.body))
            self.assertEqual(r.json()["error"]["field"], field, (extra, r.body))
        # Calculon's block cannot shard parameters or split the sequence
        for extra in ({"zero_stage": 3}, {"context_par": 2}):
            r = self.server.post("/v1/estimate", {"model": "gpt3-13B", "system": "h100_sxm",
                                                  "execution": dict(base, **extra)})
            self.assertEqual(r.status, 422, (extra, r.body))

    def test_optimizer_sharding_is_zero_stage_1(self):
        body = {"model": "llama3-8B", "system": "h100_sxm",
                "execution": {"num_procs": 8, "batch_size": 16, "datatype": "bfloat16"}}
        a = self.server.post("/v1/estimate", dict(body, execution=dict(body["execution"], optimizer_sharding=True)))
        b = self.server.post("/v1/estimate", dict(body, execution=dict(body["execution"], zero_stage=1)))
        self.assertEqual(a.status, 200, a.body)
        self.assertEqual(a.header("ETag"), b.header("ETag"))   # one normalized request
        self.assertEqual(a.body, b.body)

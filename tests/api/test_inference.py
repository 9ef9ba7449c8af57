"""test_inference.py — POST /v1/inference, `fathom infer` and GET /v1/validation?inference=true
through a real fathomd: the KV cache of published models worked by hand, the answer against its
schema, normalization and the cache, the CLI giving the same answer, the validation report over
inference_runs.json, and a 422 naming the field for every bad value."""
import json
import os
import statistics
import subprocess
import tempfile
import unittest

from harness import SOURCE, ServerTestCase, validate

CLI = os.environ.get("FATHOM_CLI", os.path.join(SOURCE, "build", "fathom"))

BASE = {"model": "llama3-70B", "system": "h100_sxm",
        "serving": {"tensor_par": 4, "weights_datatype": "fp8", "input_tokens": 2000,
                    "output_tokens": 200, "requests_per_s": 5, "engine": "vllm"}}


def body(**serving):
    b = json.loads(json.dumps(BASE))
    b["serving"].update(serving)
    for k, v in list(b["serving"].items()):
        if v is None:
            del b["serving"][k]
    return b


class Inference(ServerTestCase):
    def post(self, b):
        return self.server.post("/v1/inference", b)

    def test_answer_and_schema(self):
        r = self.post(BASE)
        self.assertEqual(r.status, 200, r.body)
        out = r.json()
        validate(out, "inference.response.json")
        self.assertTrue(out["fits_memory"])
        # Llama 3 70B, FP8 KV: 80 blocks · 2 · 8 KV heads · 128 · 1 B = 163,840 B a token
        self.assertEqual(out["kv_cache_bytes_per_token"], 163840)
        # 5 requests a second of 200 tokens: 1,000 output tokens/s over 4 GPUs
        self.assertAlmostEqual(out["requests_per_s"], 5, places=9)
        self.assertAlmostEqual(out["output_tokens_per_s_per_gpu"], 250, places=6)
        self.assertGreater(out["ttft_p99_s"], out["ttft_s"] * 0.999)
        self.assertAlmostEqual(out["output_tokens_per_s_per_user"], 1 / out["tpot_s"], places=6)
        self.assertIn(out["decode"]["bound"], ("memory", "compute", "network", "host"))
        self.assertTrue(out["curve"])
        for a, b in zip(out["curve"], out["curve"][1:]):  # more users, fewer tokens/s each
            self.assertGreater(b["concurrency"], a["concurrency"])
            self.assertLessEqual(b["output_tokens_per_s_per_user"], a["output_tokens_per_s_per_user"] * 1.0001)
        # the H100 preset's $2.99 per GPU-hour: 4 GPUs at 1,000 output tokens/s cost at most
        # 4·2.99/3.6 = 3.32 $ per million tokens of output and input together
        d = out["dollars_per_million_tokens"]
        self.assertLess(d["output"] * 1000 / 1e6 + d["input"] * 10000 / 1e6, 4 * 2.99 / 3600 * 1.0001)
        again = self.post(BASE)
        self.assertEqual(again.header("X-Fathom-Cache"), "hit")
        self.assertEqual(again.body, r.body)

    def test_kv_cache_by_model(self):
        # by hand: Llama 3.1 8B BF16 32·4,096 = 131,072; 405B 126·4,096 = 516,096;
        # DeepSeek-V3 (MLA, FP8) 61·576 = 35,136; GPT-OSS 120B BF16 at 2,000 + 200 tokens: 18 full
        # blocks keep 2,200 tokens, 18 windowed 128, 2,048 B each: 2,048·(18·2,200 + 18·128)/2,200
        cases = [("llama3-8B", "bf16", 1, 131072), ("llama3.1-405B", "bf16", 8, 516096),
                 ("deepseek-v3", "fp8", 8, 35136), ("gpt-oss-120B", "bf16", 1, 2048 * (18 * 2200 + 18 * 128) / 2200)]
        for model, kv, tp, want in cases:
            b = body(tensor_par=tp, kv_datatype=kv, requests_per_s=None, concurrency=1)
            b["model"] = model
            b["system"] = "h200"
            r = self.post(b)
            self.assertEqual(r.status, 200, (model, r.body))
            self.assertAlmostEqual(r.json()["kv_cache_bytes_per_token"], want, delta=1e-9 * want)

    def test_kv_cache_by_engine(self):
        # Llama 4 Scout, BF16 KV: 2·8 KV heads·128·2 B = 4,096 B a token a block; 48 blocks, the
        # 12 every fourth global, 36 chunked at 8,192. A request of 16,000 + 384 = 16,384 tokens:
        # vLLM frees past chunks, (12·16,384 + 36·8,192)·4,096 / 16,384 = 122,880 B a token;
        # TensorRT-LLM keeps every token in every block (its chunked attention is a mask):
        # 48·4,096 = 196,608 B a token, what its pool holds.
        for engine, want in (("vllm", 122880), ("trtllm", 196608)):
            b = body(tensor_par=8, kv_datatype="bf16", requests_per_s=None, concurrency=1,
                     input_tokens=16000, output_tokens=384, engine=engine)
            b["model"] = "llama4-scout"
            b["system"] = "h200"
            r = self.post(b)
            self.assertEqual(r.status, 200, (engine, r.body))
            self.assertAlmostEqual(r.json()["kv_cache_bytes_per_token"], want, delta=1e-9 * want)
            self.assertAlmostEqual(r.json()["memory"]["kv_bytes_per_request"], want * 16384,
                                   delta=1e-9 * want * 16384)

    def test_normalized_defaults_and_cli(self):
        b = body(engine="trtllm")
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(b, f)
        try:
            cli = subprocess.run([CLI, "--presets", os.path.join(SOURCE, "presets"), "infer", f.name],
                                 capture_output=True, text=True, timeout=120)
        finally:
            os.unlink(f.name)
        self.assertEqual(cli.returncode, 0, cli.stderr)
        served = self.post(b).json()
        self.assertEqual(json.loads(cli.stdout)["output_tokens_per_s_per_gpu"], served["output_tokens_per_s_per_gpu"])
        self.assertEqual(served["engine"]["max_batch_tokens"], 8192)  # TensorRT-LLM's max_num_tokens
        self.assertFalse(served["engine"]["chunked_prefill"])

    def test_token_spread_as_p90(self):
        # {mean, p90} is {mean, spread} with spread = (p90 - mean)/z, z the standard normal's
        # 90th percentile (Python's statistics module, not the server's GSL): the same answer
        z = statistics.NormalDist().inv_cdf(0.9)
        by_spread = self.post(body(input_tokens={"mean": 2000, "spread": 400}))
        by_p90 = self.post(body(input_tokens={"mean": 2000, "p90": 2000 + 400 * z}))
        self.assertEqual(by_spread.status, 200, by_spread.body)
        self.assertEqual(by_p90.status, 200, by_p90.body)
        a, b = by_spread.json(), by_p90.json()
        self.assertAlmostEqual(b["ttft_p99_s"], a["ttft_p99_s"], delta=1e-9 * a["ttft_p99_s"])
        # the long prompts of the spread lengthen the p99 TTFT beyond a fixed 2,000-token prompt
        fixed = self.post(BASE).json()
        self.assertGreater(a["ttft_p99_s"], fixed["ttft_p99_s"])

    def test_disaggregated_and_speculative(self):
        b = body(tensor_par=None)
        b["serving"]["disaggregated"] = {"prefill": {"tensor_par": 4}, "decode": {"tensor_par": 4}}
        r = self.post(b)
        self.assertEqual(r.status, 200, r.body)
        out = r.json()
        self.assertGreater(out["prefill_gpus"], 0)
        self.assertGreater(out["kv_transfer_s"], 0)
        self.assertAlmostEqual(out["gpus"], out["prefill_gpus"] + out["decode_gpus"], places=9)
        s = body(speculative={"method": "mtp", "tokens": 1, "acceptance": 0.8})
        s["model"] = "deepseek-v3"
        s["system"] = "h200"
        s["serving"].update(tensor_par=8, requests_per_s=1)
        r = self.post(s)
        self.assertEqual(r.status, 200, r.body)
        self.assertAlmostEqual(r.json()["tokens_per_step"], 1.8, places=9)  # (1 − 0.8²)/(1 − 0.8)

    def test_loads_and_counts(self):
        # zero is no load: refused naming the field, and a load member given is given
        for field in ("requests_per_s", "concurrency", "num_requests"):
            load = {"requests_per_s": None, field: 0}
            self.assertError(self.post(body(**load)), 422, "invalid_field", "serving." + field)
        for b, field in ((body(concurrency=0), "concurrency"), (body(num_requests=2.5), "num_requests"),
                         (body(max_batch_size=1.5), "max_batch_size")):
            self.assertError(self.post(b), 422, "invalid_field", "serving." + field)
        # the largest run is followed as the one below it: queued at once, one at a time, the
        # mean TTFT grows by half a lifetime a request (n = 10**6 was once the steady state)
        one = dict(model="llama3-8B", system="h100_sxm",
                   serving={"input_tokens": 1, "output_tokens": 1000, "max_batch_size": 1})
        ttft = {}
        for n in (10, 999999, 1000000):
            b = json.loads(json.dumps(one))
            b["serving"]["num_requests"] = n
            r = self.post(b)
            self.assertEqual(r.status, 200, r.body)
            ttft[n] = r.json()
            life = 1 / ttft[n]["requests_per_s"]
            t1 = ttft[n]["ttft_s"] - (n - 1) / 2 * life
            # p99: request ceil(0.99 n), (ceil(0.99 n) - 1) lifetimes after the first
            rank = -(-99 * n // 100)
            self.assertAlmostEqual(ttft[n]["ttft_p99_s"], t1 + (rank - 1) * life,
                                   delta=1e-6 * ttft[n]["ttft_p99_s"])
        self.assertGreater(ttft[1000000]["ttft_s"], ttft[999999]["ttft_s"])
        self.assertGreater(ttft[10]["ttft_p99_s"], 1.9 * ttft[10]["ttft_s"])

    def test_prefill_pool_bounds_the_rate(self):
        dis = {"prefill": {"tensor_par": 4}, "decode": {"tensor_par": 4}}
        auto = self.post(body(tensor_par=None, disaggregated=dis)).json()
        starved = self.post(body(tensor_par=None,
                                 disaggregated=dict(dis, prefill_per_decode=0.001)))
        self.assertEqual(starved.status, 200, starved.body)
        out = starved.json()
        # one prefill replica takes R_p = 5 / (auto's prefill replicas) prompts a second
        rate_p = 5 / (auto["prefill_gpus"] / 4)
        self.assertAlmostEqual(out["requests_per_s"], 0.001 * rate_p, delta=1e-9 * rate_p)
        self.assertLess(out["output_tokens_per_s_per_gpu"], auto["output_tokens_per_s_per_gpu"])
        self.assertIn("overloaded", [w["code"] for w in out["warnings"]])
        # The curve is fed by the same pool: at every concurrency the starved pool's rate
        # (0.001·R_p requests a second, 200 tokens each) over its fixed GPUs (the decode
        # replica's and 0.001 of a 4-GPU prefill replica), never the automatic ratio's figures.
        gpus = out["decode_gpus"] + 0.001 * 4
        self.assertGreater(len(out["curve"]), 1)
        for point in out["curve"]:
            self.assertAlmostEqual(point["output_tokens_per_s_per_gpu"],
                                   0.001 * rate_p * 200 / gpus, delta=1e-6 * rate_p)
        self.assertGreater(out["curve"][-1]["ttft_s"], out["curve"][0]["ttft_s"])
        zero = body(tensor_par=None, disaggregated=dict(dis, prefill_per_decode=0))
        self.assertError(self.post(zero), 422, "invalid_field",
                         "serving.disaggregated.prefill_per_decode")

    def test_gpu_variant_fp4_rate(self):
        """A variant may replace the FP4 rate serving reads, and a power limit lowers it with the
        matrix rates (the same tensor cores' clock): b200 at 700 W of its 1,000 W keeps
        (700 - 105)/(1000 - 105) of its clock (idle 0.105 of board power, as the 700 W H100's
        73.5 W), and answers as the whole object written out by hand does."""
        full = self.server.get("/v1/presets/systems/b200").json()
        fp4 = body(tensor_par=None, weights_datatype="fp4")
        fp4["model"] = "llama3-8B"
        def served(system):
            b = json.loads(json.dumps(fp4))
            b["system"] = system
            r = self.post(b)
            self.assertEqual(r.status, 200, r.body)
            return r.json()["output_tokens_per_s_per_gpu"]
        half = dict(full, float4_tflops=full["float4_tflops"] / 2)
        self.assertEqual(served({"preset": "b200", "float4_tflops": full["float4_tflops"] / 2}),
                         served(half))
        k = (700 - 105) / (1000 - 105)
        capped = json.loads(json.dumps(full))
        for proc in ("matrix", "vector"):
            for dt in capped[proc]:
                capped[proc][dt]["tflops"] *= k
        capped["float4_tflops"] *= k
        capped["power_per_gpu_kw"] = 0.7
        self.assertAlmostEqual(served({"preset": "b200", "power_limit_w": 700}), served(capped),
                               delta=1e-9 * served(capped))

    def test_draft_model_memory(self):
        spec = {"method": "draft", "tokens": 4, "acceptance": 0.7}
        b = dict(model="llama3-8B", system="h100_sxm",
                 serving={"input_tokens": 2000, "output_tokens": 200, "concurrency": 8})
        plain = self.post(b).json()
        b["serving"]["speculative"] = dict(spec, model="llama3-8B")
        same = self.post(b).json()
        self.assertEqual(same["memory"]["weights_bytes"], 2 * plain["memory"]["weights_bytes"])
        b["serving"]["speculative"] = dict(spec, model="deepseek-v3")  # 671B on one GPU
        self.assertFalse(self.post(b).json()["fits_memory"])

    def test_mxfp4_needs_routed_experts(self):
        self.assertError(self.post(body(weights_datatype="mxfp4")), 422, "invalid_field",
                         "serving.weights_datatype")

    def test_fp4_without_a_rate_warns(self):
        r = self.post(body(weights_datatype="nvfp4"))
        self.assertEqual(r.status, 200, r.body)
        self.assertIn("no_fp4_rate", [w["code"] for w in r.json()["warnings"]])

    def test_mxfp4_experts(self):
        # gpt-oss's checkpoint: MXFP4 experts (0.5 + 1/32 B a value), the rest BF16; on an H100
        # (no FP4 rate) the experts run dequantized at the 16-bit rate, which is no warning
        s = body(weights_datatype="mxfp4", requests_per_s=None, concurrency=8)
        s["model"] = "gpt-oss-120B"
        r = self.post(s)
        self.assertEqual(r.status, 200, r.body)
        out = r.json()
        self.assertNotIn("no_fp4_rate", [w["code"] for w in out["warnings"]])
        s["serving"]["weights_datatype"] = "bf16"
        plain = self.post(s).json()
        self.assertLess(out["memory"]["weights_bytes"], 0.4 * plain["memory"]["weights_bytes"])
        # the preset states its checkpoint (checkpoint_weights mxfp4): a request naming no
        # format is served from it, and a variant that states bf16 from BF16 weights
        del s["serving"]["weights_datatype"]
        self.assertEqual(self.post(s).json(), out)
        self.assertEqual((out["weights_datatype"], out["kv_datatype"]), ("mxfp4", "bf16"))
        s["model"] = {"preset": "gpt-oss-120B", "checkpoint_weights": "bf16"}
        self.assertEqual(self.post(s).json(), plain)

    def test_served_from_the_checkpoint_it_ships(self):
        # DeepSeek-V3 publishes FP8 weights only (checkpoint_weights fp8): with no format named,
        # FP8 weights and, as under any FP8 weights, an FP8 KV cache
        s = body(requests_per_s=None, concurrency=8, tensor_par=8, weights_datatype=None)
        s["model"] = "deepseek-v3"
        s["system"] = "h200"
        unnamed = self.post(s)
        self.assertEqual(unnamed.status, 200, unnamed.body)
        s["serving"].update(weights_datatype="fp8", kv_datatype="fp8")
        self.assertEqual(unnamed.json(), self.post(s).json())
        self.assertEqual((unnamed.json()["weights_datatype"], unnamed.json()["kv_datatype"]),
                         ("fp8", "fp8"))
        # a dense model's checkpoint cannot be MXFP4 (routed experts only), named where it is
        self.assertError(self.post(dict(BASE, model={"preset": "llama3-8B",
                                                     "checkpoint_weights": "mxfp4"})),
                         422, "invalid_field", "model.checkpoint_weights")
        self.assertError(self.post(dict(BASE, model={"preset": "gpt-oss-20B",
                                                     "checkpoint_weights": "fp6"})),
                         422, "invalid_field", "model.checkpoint_weights")

    def test_decode_attention_efficiency(self):
        # a system's measured decode-attention share of memory bandwidth sets the KV reads: half
        # the share, twice the time of the KV bytes (less the 21 µs a call the H100 measured)
        with open(os.path.join(SOURCE, "presets", "systems", "h100_sxm.json")) as f:
            sys_obj = {k: v for k, v in json.load(f).items() if not k.startswith("$")}
        fixed_load = body(requests_per_s=None, concurrency=16)
        plain = self.post(dict(fixed_load, system=sys_obj))
        self.assertEqual(plain.status, 200, plain.body)
        half = self.post(dict(fixed_load, system=dict(sys_obj, decode_attention_efficiency=0.46)))
        self.assertEqual(half.status, 200, half.body)
        a, b = plain.json()["decode"], half.json()["decode"]
        self.assertAlmostEqual(a["kv_bytes"], b["kv_bytes"], delta=1e-6 * a["kv_bytes"])
        fixed = 21e-6 * 80  # one call per block, 80 blocks
        ratio = (b["breakdown_s"]["kv_read"] - fixed) / (a["breakdown_s"]["kv_read"] - fixed)
        self.assertAlmostEqual(ratio, 2.0, places=6)
        for bad in (0, 1.5, "fast"):
            self.assertError(self.post(dict(body(), system=dict(sys_obj, decode_attention_efficiency=bad))),
                             422, "invalid_field", "system.decode_attention_efficiency")

    def test_float4_efficiency(self):
        # FP4 GEMMs run at float4_efficiency of the FP8 curve: half of it, twice the compute side
        # of every FP4 GEMM (the 16-bit output layer keeps its rate, so a little under twice)
        with open(os.path.join(SOURCE, "presets", "systems", "b200.json")) as f:
            sys_obj = {k: v for k, v in json.load(f).items() if not k.startswith("$")}
        self.assertEqual(sys_obj["float4_efficiency"], 0.853)
        fixed_load = body(weights_datatype="nvfp4", requests_per_s=None, concurrency=16)
        plain = self.post(dict(fixed_load, system=sys_obj))
        self.assertEqual(plain.status, 200, plain.body)
        half = self.post(dict(fixed_load, system=dict(sys_obj, float4_efficiency=0.4265)))
        self.assertEqual(half.status, 200, half.body)
        a, b = plain.json()["decode"], half.json()["decode"]
        ratio = b["breakdown_s"]["gemm_compute"] / a["breakdown_s"]["gemm_compute"]
        self.assertGreater(ratio, 1.9)
        self.assertLessEqual(ratio, 2.0 + 1e-9)
        for bad in (0, 1.5, "fast"):
            self.assertError(self.post(dict(body(), system=dict(sys_obj, float4_efficiency=bad))),
                             422, "invalid_field", "system.float4_efficiency")

    def test_external_runs(self):
        # fathom validate --inference --runs reads serving runs from outside inference_runs.json
        # (presets/validation/inference_external_runs.json): every row is estimated, the report
        # is the same report, and a file that is not an array of runs is refused naming it
        path = os.path.join(SOURCE, "presets", "validation", "inference_external_runs.json")
        with open(path) as f:
            rows = json.load(f)
        cli = subprocess.run([CLI, "--presets", os.path.join(SOURCE, "presets"), "validate", "--inference",
                              "--runs", path, "--json"], capture_output=True, text=True, timeout=300)
        self.assertEqual(cli.returncode, 0, cli.stderr)
        out = json.loads(cli.stdout)
        self.assertEqual(out["rows_total"], len(rows))
        self.assertEqual(out["rows_estimated"], len(rows))
        ids = {x["id"] for x in out["rows"] if "error_pct" in x}
        self.assertEqual(ids, {r["id"] for r in rows})
        self.assertEqual({s["source"] for s in out["by_source"]}, {r["doc_revision"] for r in rows})
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump({"not": "an array"}, f)
        try:
            bad = subprocess.run([CLI, "--presets", os.path.join(SOURCE, "presets"), "validate", "--inference",
                                  "--runs", f.name], capture_output=True, text=True, timeout=60)
        finally:
            os.unlink(f.name)
        self.assertNotEqual(bad.returncode, 0)
        # a member the reader takes, of another type, names the row and the member: read with
        # its default, "tp": "4" ran as TP 1; null stands for an unstated figure
        typed = [dict(rows[0], tp=str(rows[0]["tp"]))]
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(typed, f)
        try:
            bad = subprocess.run([CLI, "--presets", os.path.join(SOURCE, "presets"), "validate",
                                  "--inference", "--runs", f.name], capture_output=True,
                                 text=True, timeout=60)
        finally:
            os.unlink(f.name)
        self.assertEqual(bad.returncode, 1, bad.stdout + bad.stderr)
        err = json.loads(bad.stdout or bad.stderr)["error"]
        self.assertEqual(err["field"], "runs[0].tp")
        self.assertIn(rows[0]["id"], err["message"])

    def test_bad_requests_name_the_field(self):
        bad = "invalid_field"
        cases = [
            (body(tensor_par=3), "infeasible_execution", "serving.tensor_par"),  # 64 heads
            (body(tensor_par=0), bad, "serving.tensor_par"),
            (body(expert_par=2), bad, "serving.expert_par"),  # a dense model
            (body(weights_datatype="fp6"), bad, "serving.weights_datatype"),
            (body(kv_datatype=8), bad, "serving.kv_datatype"),
            (body(kv_datatype="mxfp4"), bad, "serving.kv_datatype"),  # a weights format only
            (body(input_tokens=0), bad, "serving.input_tokens"),
            (body(input_tokens={"mean": 10, "p90": 5}), bad, "serving.input_tokens.p90"),
            (body(input_tokens={"mean": 10, "spread": 2, "p90": 20}), bad, "serving.input_tokens.p90"),
            (body(input_tokens={"mean": 10, "sd": 2}), bad, "serving.input_tokens.sd"),
            (body(output_tokens="200"), bad, "serving.output_tokens"),
            (body(concurrency=4), bad, "serving.requests_per_s"),
            (body(prefix_cache_hit=1.5), bad, "serving.prefix_cache_hit"),
            (body(engine="tgi"), bad, "serving.engine"),
            (body(chunked_prefill="yes"), bad, "serving.chunked_prefill"),
            (body(max_batch_tokens=0), bad, "serving.max_batch_tokens"),
            (body(speculative={"method": "mtp", "tokens": 2, "acceptance": 0.7}), "infeasible_execution",
             "serving.speculative.method"),
            (body(speculative={"method": "draft", "tokens": 2, "acceptance": 0.7}), bad, "serving.speculative.model"),
            (body(speculative={"method": "draft", "tokens": 99, "acceptance": 0.7}), bad, "serving.speculative.tokens"),
            (body(disaggregated={"prefill": {}, "decode": {}}), bad, "serving.tensor_par"),
            (body(tensor_par=None, disaggregated={"prefill": {"tensor_par": 4}}), bad, "serving.disaggregated.decode"),
            (body(tensor_par=None, disaggregated={"prefill": {}, "decode": {}, "kv_transfer_net": 9}), bad,
             "serving.disaggregated.kv_transfer_net"),
            (body(nonsense=1), bad, "serving.nonsense"),
            (body(num_requests=10, requests_per_s=None, concurrency=4), bad, "serving.num_requests"),
        ]
        for b, code, field in cases:
            self.assertError(self.post(b), 422, code, field)
        self.assertError(self.post({"model": "llama3-70B", "system": "h100_sxm"}), 422, "invalid_field", "serving")
        self.assertError(self.post(dict(BASE, model="nope")), 422, "invalid_field", "model")

    def test_validation_report(self):
        plain = self.server.get("/v1/validation").json()
        self.assertNotIn("inference", plain)
        r = self.server.get("/v1/validation?inference=true")
        self.assertEqual(r.status, 200, r.body[:300])
        out = r.json()
        validate(out, "validation.response.json")
        inf = out["inference"]
        with open(os.path.join(SOURCE, "presets", "validation", "inference_runs.json")) as f:
            rows = json.load(f)
        self.assertEqual(inf["rows_total"], len(rows))
        self.assertEqual(inf["dense"]["rows"] + inf["moe"]["rows"], inf["rows_estimated"])
        # the report's mean is the mean of its rows' errors
        errs = [abs(x["error_pct"]) for x in inf["rows"] if "error_pct" in x]
        self.assertEqual(len(errs), inf["rows_estimated"])
        self.assertAlmostEqual(inf["mean_abs_error_pct"], sum(errs) / len(errs), places=6)
        self.assertAlmostEqual(inf["max_abs_error_pct"], max(errs), places=6)
        by_id = {x["id"]: x for x in inf["rows"]}
        for row in rows[:50]:
            self.assertEqual(by_id[row["id"]]["measured_tokens_per_s_per_gpu"], row["output_tokens_per_s_per_gpu"])
        self.assertError(self.server.get("/v1/validation?inference=maybe"), 422, "invalid_field", "inference")


if __name__ == "__main__":
    unittest.main()

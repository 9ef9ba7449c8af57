"""test_estimate.py — POST /v1/estimate, presets and GET /v1/validation through a real fathomd,
against Calculon's own figures."""
import json
import os
import unittest

from harness import SOURCE, ServerTestCase, validate

with open(os.path.join(SOURCE, "tests", "data", "llm", "example_3072_t4_p64_d12_mbs4_full.json")) as f:
    EXAMPLE = json.load(f)


class Estimate(ServerTestCase):
    def test_calculon_readme_example(self):
        r = self.server.post("/v1/estimate", {"model": "megatron-1T", "system": "a100_80g", "execution": EXAMPLE})
        self.assertEqual(r.status, 200, r.body)
        out = r.json()
        self.assertTrue(out["feasible"])
        self.assertAlmostEqual(out["stats"]["total_time"], 131.9006, places=4)   # Calculon prints 131.9006
        self.assertAlmostEqual(out["stats"]["sample_rate"], 23.29, places=2)
        self.assertEqual(len(out["stats"]), 96)
        self.assertEqual(out["summary"]["step_time_s"], out["stats"]["total_time"])
        validate(out, "estimate.response.json")
        again = self.server.post("/v1/estimate", {"model": "megatron-1T", "system": "a100_80g", "execution": EXAMPLE})
        self.assertEqual(again.header("X-Fathom-Cache"), "hit")
        self.assertEqual(again.body, r.body)

    def test_training_budget_prices_the_run(self):
        body = {"model": "megatron-1T", "system": "a100_80g", "execution": EXAMPLE,
                "training": {"tokens": 450e9, "gpu_hour_price": 2.5, "gpu_power_kw": 0.4, "pue": 1.1}}
        r = self.server.post("/v1/estimate", body)
        self.assertEqual(r.status, 200, r.body)
        out = r.json()
        run, step = out["run"], out["stats"]["total_time"]
        steps = -(-450e9 // (EXAMPLE["batch_size"] * 2048))  # megatron-1T: seq_size 2048
        self.assertEqual(run["steps"], steps)
        self.assertAlmostEqual(run["wall_time_s"], steps * step, delta=1e-6 * steps * step)
        self.assertAlmostEqual(run["days"], run["wall_time_s"] / 86400, places=9)
        self.assertAlmostEqual(run["gpu_hours"], run["wall_time_s"] / 3600 * 3072, delta=1e-6 * run["gpu_hours"])
        self.assertAlmostEqual(run["dollars"], run["gpu_hours"] * 2.5, delta=1e-6 * run["dollars"])
        self.assertAlmostEqual(run["kwh"], 0.4 * run["gpu_hours"] * 1.1, delta=1e-6 * run["kwh"])
        self.assertAlmostEqual(run["co2_kg"], run["kwh"] * 0.534, delta=1e-6 * run["co2_kg"])
        validate(out, "estimate.response.json")
        bad = dict(body, training={"tokens": -1})
        self.assertError(self.server.post("/v1/estimate", bad), 422, "invalid_field", "training.tokens")

    def test_run_cost_defaults_to_the_systems_price_and_power(self):
        # a100_80g's preset: $1.79 per GPU-hour and 400 W (its $comment_cost sources them)
        body = {"model": "megatron-1T", "system": "a100_80g", "execution": EXAMPLE, "training": {"tokens": 450e9}}
        r = self.server.post("/v1/estimate", body)
        self.assertEqual(r.status, 200, r.body)
        run = r.json()["run"]
        self.assertAlmostEqual(run["dollars"], run["gpu_hours"] * 1.79, delta=1e-6 * run["dollars"])
        self.assertAlmostEqual(run["kwh"], run["gpu_hours"] * 0.4, delta=1e-6 * run["kwh"])
        # the request's figures win over the preset's
        body["training"] = {"tokens": 450e9, "gpu_hour_price": 3.0}
        run = self.server.post("/v1/estimate", body).json()["run"]
        self.assertAlmostEqual(run["dollars"], run["gpu_hours"] * 3.0, delta=1e-6 * run["dollars"])
        # a system object gives them too; without them the training figures are required
        system = self.server.get("/v1/presets/systems/a100_80g").json()
        system.pop("$comment", None)
        system["price_per_gpu_hour"] = 2.0
        body = dict(body, system=system, training={"tokens": 450e9})
        run = self.server.post("/v1/estimate", body).json()["run"]
        self.assertAlmostEqual(run["dollars"], run["gpu_hours"] * 2.0, delta=1e-6 * run["dollars"])
        del system["price_per_gpu_hour"], system["power_per_gpu_kw"]
        self.assertError(self.server.post("/v1/estimate", body), 422, "invalid_field", "training.gpu_hour_price")
        system["price_per_gpu_hour"] = -1
        self.assertError(self.server.post("/v1/estimate", body), 422, "invalid_field", "system.price_per_gpu_hour")

    def test_does_not_fit_is_200_with_violation(self):
        ex = {"num_procs": 64, "tensor_par": 1, "pipeline_par": 64, "data_par": 1, "batch_size": 64,
              "microbatch_size": 1, "activation_recompute": "none", "pipeline_par_net": 1, "data_par_net": 1}
        r = self.server.post("/v1/estimate", {"model": "megatron-1T", "system": "a100_80g", "execution": ex})
        self.assertEqual(r.status, 200, r.body)
        out = r.json()
        self.assertFalse(out["fits_memory"])
        v = out["violations"][0]
        self.assertEqual(v["tier"], 1)
        self.assertGreater(v["needed_bytes"], v["capacity_bytes"])
        self.assertEqual(out["summary"]["mem_tier1_capacity_bytes"], 80 * 2**30)

    def test_infeasible_and_invalid_executions_name_the_field(self):
        cases = [
            (dict(EXAMPLE, data_par=11), None, "execution.num_procs"),         # tp*pp*dp != num_procs
            (dict(EXAMPLE, pipeline_interleaving=7), None, "execution.pipeline_interleaving"),
            (dict(EXAMPLE, activation_recompute="sometimes"), "invalid_field", "execution.activation_recompute"),
            (dict(EXAMPLE, tensor_par_net=5), None, None),
            (dict(EXAMPLE, colour="red"), "invalid_field", "execution.colour"),
        ]
        for ex, code, field in cases:
            with self.subTest(ex=ex):
                r = self.server.post("/v1/estimate", {"model": "megatron-1T", "system": "a100_80g", "execution": ex})
                self.assertEqual(r.status, 422, r.body)
                err = r.json()["error"]
                self.assertIn(err["code"], ("infeasible_execution", "invalid_field"))
                if code:
                    self.assertEqual(err["code"], code)
                if field:
                    self.assertEqual(err["field"], field)
                self.assertTrue(err.get("field", "").startswith(("execution.", "system.", "model")), err)
        r = self.server.post("/v1/estimate", {"model": "megatron-1T", "system": "no-such-system", "execution": EXAMPLE})
        self.assertEqual(r.json()["error"]["field"], "system")

    def test_null_is_not_the_default(self):
        """The schemas give these fields a type without null: a null is refused naming the
        field (leaving the field out takes the default), as a null batch_size already was."""
        cases = [("execution", "training", "must be true or false, not null"),
                 ("execution", "num_procs", "must be an integer, not null"),
                 ("execution", "fp8", "must be true or false, not null"),
                 ("execution", "datatype", "not null"),
                 ("training", "pue", "not null")]
        for where, key, message in cases:
            body = {"model": "megatron-1T", "system": "a100_80g", "execution": dict(EXAMPLE),
                    "training": {"tokens": 450e9}}
            body[where][key] = None
            r = self.server.post("/v1/estimate", body)
            self.assertEqual(r.status, 422, (key, r.body))
            self.assertEqual(r.json()["error"]["field"], "%s.%s" % (where, key))
            self.assertIn(message, r.json()["error"]["message"])
        body = {"model": "megatron-1T", "system": "a100_80g", "execution": dict(EXAMPLE)}
        del body["execution"]["num_procs"]
        self.assertEqual(self.server.post("/v1/estimate", body).status, 200)

    def test_presets(self):
        p = self.server.get("/v1/presets").json()
        models = [m["name"] for m in p["models"]]
        systems = [s["name"] for s in p["systems"]]
        for name in ["anthropic-52B", "chinchilla", "gopher-280B", "gpt3-13B", "gpt3-175B", "lamda",
                     "megatron-126M", "megatron-1T", "megatron-22B", "megatron-40B", "megatron-5B",
                     "palm-540B", "turing-530B"]:
            self.assertIn(name, models)
        for name in ["a100_80e", "a100_80g", "a100_sxm", "h100_80g_nvl8", "h100_sxm", "h200", "h800",
                     "b200", "b300", "gb200_nvl72", "gb300_nvl72", "mi300x"]:
            self.assertIn(name, systems)
        m = self.server.get("/v1/presets/models/gpt3-175B").json()
        self.assertEqual(m["hidden"], 12288)
        self.assertEqual(self.server.get("/v1/presets/systems/a100_80g").json()["mem1"]["GiB"], 80)
        self.assertEqual(self.server.get("/v1/presets/models/gpt5").status, 404)
        self.assertEqual(self.server.get("/v1/presets/gadgets/x").status, 404)
        # Every system preset estimates a run.
        for name in systems:
            r = self.server.post("/v1/estimate", {"model": "megatron-126M", "system": name,
                                                  "execution": {"num_procs": 8, "data_par": 8, "batch_size": 64}})
            self.assertEqual(r.status, 200, (name, r.body))

    def test_model_variant(self):
        """{"preset": name, members...}: the preset's object with those members replaced (a
        "moe" object only in the members it names) is one request with that object written out:
        the same ETag; and a variant's refusals name the member at fault."""
        execution = {"num_procs": 8, "data_par": 8, "batch_size": 8, "microbatch_size": 1,
                     "datatype": "bfloat16", "attention_kernel": "fused", "zero_stage": 3}
        def post(model):
            return self.server.post("/v1/estimate", {"model": model, "system": "h100_sxm",
                                                     "execution": execution})
        full = self.server.get("/v1/presets/models/llama3.1-8B").json()
        long = dict(full, seq_size=32768)
        variant = post({"preset": "llama3.1-8B", "seq_size": 32768})
        self.assertEqual(variant.status, 200, variant.body)
        self.assertEqual(variant.header("ETag"), post(long).header("ETag"))
        short = post("llama3.1-8B").json()["summary"]["step_time_s"]
        # four times the tokens a sequence, and attention growing with them: > 4x the step
        self.assertGreater(variant.json()["summary"]["step_time_s"], 4 * short)
        moe = self.server.get("/v1/presets/models/qwen3-30B-A3B").json()
        moe["moe"]["top_k"] = 4
        self.assertEqual(post({"preset": "qwen3-30B-A3B", "moe": {"top_k": 4}}).header("ETag"),
                         post(moe).header("ETag"))
        for model, field in [({"preset": "llama3.1-8b"}, "model.preset"),
                             ({"preset": 8}, "model.preset"),
                             ({"preset": "llama3.1-8B", "seq_size": 0}, "model.seq_size"),
                             ({"preset": "llama3.1-8B", "depth": 4}, "model.depth"),
                             ({"preset": "qwen3-30B-A3B", "moe": {"top": 4}}, "model.moe.top"),
                             ({"preset": "llama3.1-8B", "hf_config": {}}, "model.hf_config")]:
            self.assertError(post(model), 422, "invalid_field", field)
        self.assertIn('did you mean "llama3.1-8B"', post({"preset": "llama3.1-8b"}).json()["error"]["message"])

    def test_validation_reproduces_calculon(self):
        r = self.server.get("/v1/validation")
        self.assertEqual(r.status, 200)
        tab5 = [t for t in r.json()["tables"] if t["name"] == "tab5"][0]
        self.assertEqual(round(tab5["mean_abs_error_pct"], 2), 3.65)
        self.assertEqual(round(tab5["max_abs_error_pct"], 2), 8.87)


if __name__ == "__main__":
    unittest.main(verbosity=2)

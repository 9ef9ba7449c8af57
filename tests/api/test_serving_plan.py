"""test_serving_plan.py — the serving plan (`fathom serve-plan`, kind "serving_plan"): the plan the
issue names — Llama 3.1 70B at 20 requests/s, 2,000 prompt and 200 output tokens, TTFT p99 ≤ 2 s
and TPOT ≤ 50 ms over H100, H200 and B200 — finishes in under 10 s, every system's chosen
configuration meets the targets and re-estimates through POST /v1/inference to what the plan
says, the Pareto front is not dominated, and bad plans are refused naming the field; a plan that
nothing meets says why, per system, with the least each layout does."""
import json
import os
import statistics
import subprocess
import tempfile
import time
import unittest

import csv
import io

from harness import SOURCE, ServerTestCase, validate
from test_sweeps import wait_for

CLI = os.environ.get("FATHOM_CLI", os.path.join(SOURCE, "build", "fathom"))
PLAN = {"kind": "serving_plan", "model": "llama3-70B",
        "traffic": {"requests_per_s": 20, "input_tokens": 2000, "output_tokens": 200},
        "slo": {"ttft_ms_p99": 2000, "tpot_ms": 50}, "systems": ["h100_sxm", "h200", "b200"]}


def run_plan(body):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(body, f)
    try:
        t0 = time.monotonic()
        out = subprocess.run([CLI, "--presets", os.path.join(SOURCE, "presets"), "serve-plan", f.name,
                              "--json"], capture_output=True, text=True, timeout=300)
        return out, time.monotonic() - t0
    finally:
        os.unlink(f.name)


class ServingPlan(ServerTestCase):
    def test_plan_meets_and_reestimates(self):
        out, wall = run_plan(PLAN)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertLess(wall, 10.0)
        plan = json.loads(out.stdout)
        self.assertEqual([s["name"] for s in plan["systems"]], PLAN["systems"])
        for s in plan["systems"]:
            best = s["best"]
            self.assertIsNotNone(best, s["name"])
            self.assertTrue(best["meets"])
            self.assertLessEqual(best["ttft_p99_s"], 2.0)
            self.assertLessEqual(best["tpot_s"], 0.050)
            # the chosen configuration, re-estimated by POST /v1/inference
            r = self.server.post("/v1/inference", best["request"])
            self.assertEqual(r.status, 200, r.body)
            est = r.json()
            self.assertEqual(est["ttft_p99_s"], best["ttft_p99_s"])
            self.assertEqual(est["ttft_p50_s"], best["ttft_p50_s"])
            self.assertEqual(est["tpot_s"], best["tpot_s"])
            self.assertEqual(est["requests_per_s"], best["requests_per_s_per_replica"])
            self.assertNotIn("overloaded", [w["code"] for w in est["warnings"]])
            # the fleet: replicas × (decode GPUs + prefill GPUs per decode replica)
            self.assertAlmostEqual(best["gpus"], best["replicas"] * est["gpus"], delta=1e-9 * best["gpus"])
            self.assertAlmostEqual(best["replicas"] * est["requests_per_s"], 20, delta=1e-9)
            price = {"h100_sxm": 2.99, "h200": 3.79, "b200": 4.99}[s["name"]]
            self.assertAlmostEqual(best["dollars_per_hour"], best["gpus"] * price, places=9)
            # $ per million output tokens: the fleet's hour over 20·200·3600 tokens
            self.assertAlmostEqual(best["dollars_per_million_output_tokens"],
                                   best["dollars_per_hour"] / (20 * 200 * 3600) * 1e6, places=9)
            # the cheapest of the system's candidates that meet
            cands = [c for c in plan["candidates"] if c["system"] == s["name"] and c["meets"]]
            self.assertEqual(len(cands), s["meeting"])
            self.assertEqual(min(c["dollars_per_hour"] for c in cands), best["dollars_per_hour"])
        # the Pareto front: none of its members is dominated by any candidate that meets
        meets = [c for c in plan["candidates"] if c["meets"]]
        for i in plan["pareto"]:
            p = plan["candidates"][i]
            for c in meets:
                self.assertFalse(c["dollars_per_hour"] <= p["dollars_per_hour"] and c["tpot_s"] <= p["tpot_s"]
                                 and (c["dollars_per_hour"] < p["dollars_per_hour"] or c["tpot_s"] < p["tpot_s"]))

    def test_none_meets_says_why(self):
        # TPOT 5 ms for Llama 3 70B: below what any H100 layout does with one request in flight.
        # Each candidate that fits carries that least (re-estimated here at concurrency 1), the
        # system counts its reasons, and its hint quotes the least of each latency.
        body = dict(PLAN, slo={"tpot_ms": 5}, systems=["h100_sxm"])
        out, _ = run_plan(body)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        plan = json.loads(out.stdout)
        (system,) = plan["systems"]
        self.assertIsNone(system["best"])
        self.assertIsNone(plan["cheapest"])
        self.assertEqual(sum(system["reasons"].values()), system["candidates"])
        fitting = [c for c in plan["candidates"] if c["fits"]]
        self.assertTrue(fitting)
        self.assertEqual(system["reasons"]["TPOT above the target"], len(fitting))
        checked = 0
        for c in [c for c in fitting if c["mode"] == "aggregated"][:3]:
            checked += 1
            w = c["weights_datatype"]
            serving = dict(tensor_par=c["layout"]["tensor_par"],
                           pipeline_par=c["layout"]["pipeline_par"], weights_datatype=w,
                           kv_datatype="fp8" if w == "fp8" else "bf16", input_tokens=2000,
                           output_tokens=200, concurrency=1)
            r = self.server.post("/v1/inference", {"model": "llama3-70B", "system": "h100_sxm",
                                                   "serving": serving})
            self.assertEqual(r.status, 200, r.body)
            for key in ("ttft_p50_s", "ttft_p99_s", "tpot_s"):
                self.assertAlmostEqual(c["at_one_request"][key], r.json()[key], delta=1e-12)
            self.assertGreater(c["at_one_request"]["tpot_s"], 0.005)
        self.assertEqual(checked, 3)
        least = min(c["at_one_request"]["tpot_s"] for c in fitting)
        self.assertIn("TPOT %.4g ms" % (1e3 * least), system["hint"])
        # DeepSeek-R1 (the alias of DeepSeek-V3's shape) in 8 H100s' 640 GB: nothing holds it
        body = dict(PLAN, model="deepseek-r1", systems=["h100_sxm"])
        out, _ = run_plan(body)
        plan = json.loads(out.stdout)
        (system,) = plan["systems"]
        self.assertEqual(system["reasons"], {"does not fit in memory": system["candidates"]})
        self.assertIn("no layout of at most 8 GPUs a replica holds the model", system["hint"])
        self.assertNotIn("at_one_request", json.dumps(plan["candidates"]))

    def test_table_without_json(self):
        # without --json: one row per system (its cheapest fleet), the cheapest of all marked C,
        # the Pareto front's rows marked *, each with its GPUs and $/hour as the plan block has them
        plan = json.loads(run_plan(PLAN)[0].stdout)
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(PLAN, f)
        try:
            table = subprocess.run([CLI, "--presets", os.path.join(SOURCE, "presets"), "serve-plan",
                                    f.name], capture_output=True, text=True, timeout=300, check=True).stdout
        finally:
            os.unlink(f.name)
        lines = table.splitlines()
        rows = lines[1:1 + len(plan["systems"])]
        cheapest = plan["candidates"][plan["cheapest"]]
        for row, s in zip(rows, plan["systems"]):
            cells = row[4:].split()
            best = s["best"]
            self.assertEqual(cells[0], s["name"])
            self.assertEqual((cells[1], cells[2]), (best["mode"], best["weights_datatype"]))
            self.assertEqual(int(cells[5]), best["gpus"])
            self.assertAlmostEqual(float(cells[6]), best["dollars_per_hour"], delta=0.006)
            self.assertEqual(row[1] == "C", best == cheapest, row)
            self.assertEqual(row[0] == "*", best["pareto"], row)
        front = [l for l in lines[1 + len(plan["systems"]):] if l.startswith("*")]
        self.assertEqual(len(front), len(plan["pareto"]))
        for line, i in zip(front, plan["pareto"]):
            self.assertAlmostEqual(float(line[4:].split()[6]), plan["candidates"][i]["dollars_per_hour"],
                                   delta=0.006)

    def test_bad_plans_name_the_field(self):
        cases = [
            (dict(PLAN, traffic={"requests_per_s": 0, "input_tokens": 2000, "output_tokens": 200}),
             "traffic.requests_per_s"),
            (dict(PLAN, traffic={"requests_per_s": 1, "input_tokens": {"mean": 2000, "p90": 100}, "output_tokens": 200}),
             "traffic.input_tokens.p90"),
            (dict(PLAN, slo={}), "slo"),
            (dict(PLAN, slo={"tpot_ms": -5}), "slo.tpot_ms"),
            (dict(PLAN, systems=[]), "systems"),
            (dict(PLAN, systems=["nope"]), "systems[0]"),
            (dict(PLAN, systems=[{"name": "h100_sxm", "price_per_gpu_hour": -1}]), "systems[0].price_per_gpu_hour"),
            (dict(PLAN, systems=[{"name": "h100_sxm", "price_per_gpu_hour": 0}]), "systems[0].price_per_gpu_hour"),
            (dict(PLAN, systems=[{"name": "nope"}]), "systems[0].name"),
            (dict(PLAN, systems=["h100_sxm", "h100_sxm"]), "systems[1]"),
            (dict(PLAN, systems=["h100_sxm", {"name": "h100_sxm", "price_per_gpu_hour": 1}]), "systems[1]"),
            (dict(PLAN, kind="plan"), "kind"),
            (dict(PLAN, weights_datatypes=["fp6"]), "weights_datatypes[0]"),
            # MXFP4 is gpt-oss's routed-expert format: a dense model has none to quantize
            (dict(PLAN, weights_datatypes=["bf16", "mxfp4"]), "weights_datatypes"),
            (dict(PLAN, modes=[]), "modes"),
            (dict(PLAN, extra=1), "extra"),
        ]
        for body, field in cases:
            out, _ = run_plan(body)
            self.assertEqual(out.returncode, 1, (field, out.stdout))
            err = json.loads(out.stdout)["error"]
            self.assertEqual(err["code"], "invalid_field", out.stdout)
            self.assertEqual(err["field"], field, out.stdout)

    def test_price_override_and_distributions(self):
        body = dict(PLAN, systems=[{"name": "h100_sxm", "price_per_gpu_hour": 1.5}],
                    traffic={"requests_per_s": 5, "input_tokens": {"mean": 1000, "p90": 2000}, "output_tokens": 200},
                    modes=["aggregated"], weights_datatypes=["fp8"])
        out, _ = run_plan(body)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        best = json.loads(out.stdout)["systems"][0]["best"]
        self.assertEqual(best["mode"], "aggregated")
        self.assertEqual(best["weights_datatype"], "fp8")
        self.assertAlmostEqual(best["dollars_per_hour"], best["gpus"] * 1.5, places=9)
        # the request carries the spread (p90 − mean)/z, z the standard normal's 90th percentile
        # (Python's statistics module), and the overridden price
        serving = best["request"]["serving"]
        z = statistics.NormalDist().inv_cdf(0.9)
        self.assertAlmostEqual(serving["input_tokens"]["spread"], 1000 / z, places=9)
        self.assertEqual(best["request"]["system"]["price_per_gpu_hour"], 1.5)
        est = self.server.post("/v1/inference", best["request"]).json()
        self.assertEqual(est["ttft_p99_s"], best["ttft_p99_s"])
        # the same traffic with its spread given as a standard deviation plans the same fleet
        body["traffic"] = dict(body["traffic"], input_tokens={"mean": 1000, "spread": 1000 / z})
        out, _ = run_plan(body)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        again = json.loads(out.stdout)["systems"][0]["best"]
        self.assertEqual(again["layout"], best["layout"])
        self.assertEqual(again["replicas"], best["replicas"])
        self.assertAlmostEqual(again["ttft_p99_s"], best["ttft_p99_s"], delta=1e-9 * best["ttft_p99_s"])


    def test_gpt_oss_from_its_own_checkpoint(self):
        # GPT-OSS-120B on one 80 GB H100: in FP8 its 117 B parameters do not fit; from its MXFP4
        # checkpoint (routed experts at 4.25 bits, the rest BF16) they do, and the plan's
        # candidate re-estimates through /v1/inference with the format the checkpoint has
        body = dict(PLAN, model="gpt-oss-120B", systems=["h100_sxm"], modes=["aggregated"],
                    weights_datatypes=["fp8", "mxfp4"], max_gpus_per_replica=1,
                    traffic={"requests_per_s": 2, "input_tokens": 1000, "output_tokens": 1000},
                    slo={"tpot_ms": 200})
        out, _ = run_plan(body)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        plan = json.loads(out.stdout)
        by_format = {c["weights_datatype"]: c for c in plan["candidates"]}
        self.assertEqual(sorted(by_format), ["fp8", "mxfp4"])
        self.assertFalse(by_format["fp8"]["fits"])
        self.assertTrue(by_format["mxfp4"]["fits"])
        best = plan["systems"][0]["best"]
        self.assertEqual(best["weights_datatype"], "mxfp4")
        serving = best["request"]["serving"]
        self.assertEqual((serving["weights_datatype"], serving["kv_datatype"]), ("mxfp4", "bf16"))
        est = self.server.post("/v1/inference", best["request"])
        self.assertEqual(est.status, 200, est.body)
        self.assertEqual(est.json()["tpot_s"], best["tpot_s"])
        self.assertLess(est.json()["memory"]["weights_bytes"], 80 * 2**30)
        # with no formats named the plan tries the checkpoint the preset states, MXFP4, alone;
        # a BF16 checkpoint (the variant) is tried in BF16 and, on the H100's FP8 rate, in FP8
        del body["weights_datatypes"]
        out, _ = run_plan(body)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        unnamed = json.loads(out.stdout)
        self.assertEqual({c["weights_datatype"] for c in unnamed["candidates"]}, {"mxfp4"})
        self.assertEqual(unnamed["systems"][0]["best"], best)
        body["model"] = {"preset": "gpt-oss-120B", "checkpoint_weights": "bf16"}
        out, _ = run_plan(body)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertEqual({c["weights_datatype"] for c in json.loads(out.stdout)["candidates"]},
                         {"bf16", "fp8"})


class ServingPlanSweep(ServerTestCase):
    def test_sweep_runs_like_the_cli(self):
        """The same plan as a sweep of kind serving_plan through fathomd: done with every unit,
        its serving_plan block the CLI's, the CSV of candidates, and the spec its own normal
        form."""
        r = self.server.post("/v1/sweep", PLAN)
        self.assertIn(r.status, (200, 202), r.body)
        doc = wait_for(self.server, r.json()["id"])
        self.assertEqual(doc["status"], "done", doc)
        validate(doc, "sweep_status.response.json")
        self.assertEqual(doc["kind"], "serving_plan")
        units = doc["progress"]["total"]
        self.assertEqual(doc["progress"]["done"], units)
        plan = doc["serving_plan"]
        self.assertEqual(len(plan["candidates"]), units)
        self.assertEqual(doc["counts"]["good"], sum(c["meets"] for c in plan["candidates"]))
        cli, _ = run_plan(PLAN)
        self.assertEqual(cli.returncode, 0, cli.stdout)
        self.assertEqual(json.loads(cli.stdout), plan)
        again = self.server.post("/v1/sweep", doc["spec"])
        self.assertEqual((again.status, again.json()["id"], again.json()["created"]),
                         (200, doc["id"], False))
        csv_text = self.server.get("/v1/sweep/%s/results?format=csv" % doc["id"]).body
        # the last line is the trailer that says the body is whole (doc/api.md)
        body, trailer = csv_text.rstrip("\r\n").rsplit("\r\n", 1)
        self.assertEqual(trailer, "#complete rows=%d next_offset=%d" % (units, units))
        rows = list(csv.DictReader(io.StringIO(body + "\r\n")))
        self.assertEqual(len(rows), units)
        self.assertEqual(rows[0]["system"], plan["candidates"][0]["system"])
        self.assertEqual(sum(r["meets"] == "true" for r in rows), doc["counts"]["good"])
        # Each row says its index, as a plan's does: a cut CSV resumes at the last one's + 1.
        self.assertEqual([r["index"] for r in rows], [str(i) for i in range(units)])
        page = self.server.get("/v1/sweep/%s/results?format=csv&offset=5&limit=2" % doc["id"]).body
        page_rows = list(csv.reader(io.StringIO(page)))
        self.assertEqual([r[0] for r in page_rows], ["index", "5", "6", "#complete rows=2 next_offset=7"])
        bad = self.server.post("/v1/sweep", dict(PLAN, slo={"tpot_ms": 0}))
        self.assertError(bad, 422, "invalid_field", "slo.tpot_ms")


if __name__ == "__main__":
    unittest.main()

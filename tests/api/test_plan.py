"""test_plan.py — cluster plans ({"kind": "plan"} sweeps) end to end: an answer known by
construction (two systems alike but for price, a deadline only the largest count meets, a budget
only the smallest meets), every candidate's layout re-estimated through /v1/estimate, the CSV of
candidates, cancel, a restart, the CLI, and bad plans naming their field."""
import csv
import io
import json
import math
import statistics
import os
import shutil
import signal
import subprocess
import tempfile
import unittest

from harness import FATHOM_CLI, SOURCE, Server, ServerTestCase, validate
from test_sweeps import wait_for

COUNTS = [8, 16, 32]
BASE = {"kind": "plan", "model": "llama3-8B", "tokens": 1e10, "batch_tokens": 1048576,
        "systems": [{"name": "cheap", "system": "h100_sxm", "price_per_gpu_hour": 2},
                    {"name": "dear", "system": "h100_sxm", "price_per_gpu_hour": 4}],
        "gpu_counts": COUNTS}


def run_plan(test, server, body):
    r = server.post("/v1/sweep", body)
    test.assertIn(r.status, (200, 202), r.body)
    doc = wait_for(server, r.json()["id"])
    test.assertEqual(doc["status"], "done", doc)
    validate(doc, "sweep_status.response.json")
    return doc


class Plans(ServerTestCase):
    def test_answer_by_construction(self):
        doc = run_plan(self, self.server, BASE)
        self.assertEqual(doc["progress"], {"done": 6, "total": 6})
        # the normalized spec is its own normal form: posting it again is the same sweep
        again = self.server.post("/v1/sweep", doc["spec"])
        self.assertEqual((again.json()["id"], again.json()["created"]), (doc["id"], False))
        plan = doc["plan"]
        cands = plan["candidates"]
        self.assertEqual([(c["system"], c["num_procs"]) for c in cands],
                         [(s, n) for s in ("cheap", "dear") for n in COUNTS])
        cheap, dear = cands[:3], cands[3:]
        for a, b in zip(cheap, dear):
            # the same GPU: the same layout and days; twice the price: twice the dollars
            self.assertEqual(a["execution"], b["execution"])
            self.assertEqual(a["days"], b["days"])
            self.assertAlmostEqual(b["dollars"], 2 * a["dollars"], delta=1e-9 * b["dollars"])
            # the bill from its own parts: expected = ideal / goodput times what published runs
            # paid over the plan's figure for them (doc/plan.md), GPU-hours × price, kWh
            g, pub = a["failures"]["goodput"], a["published"]
            self.assertAlmostEqual(pub["gpu_hours_tuned"], a["gpu_hours_ideal"] / g,
                                   delta=1e-9 * a["gpu_hours"])
            self.assertAlmostEqual(a["gpu_hours"], max(a["gpu_hours_ideal"], pub["gpu_hours_tuned"] * pub["ratio"]),
                                   delta=1e-9 * a["gpu_hours"])
            self.assertAlmostEqual(a["gpu_hours"], a["days"] * 24 * a["num_procs"], delta=1e-9 * a["gpu_hours"])
            self.assertAlmostEqual(a["dollars"], a["gpu_hours"] * 2, delta=1e-9 * a["dollars"])
            self.assertAlmostEqual(a["mwh"], a["gpu_hours"] * 0.7 / 1000, delta=1e-9 * a["mwh"])  # h100_sxm: 700 W
            self.assertAlmostEqual(a["co2_tonnes"], a["mwh"] * 0.534, delta=1e-9 * a["co2_tonnes"])
            self.assertEqual(a["rejected"], [])
        # the cheaper system dominates at every count: the front is the cheap system's
        self.assertEqual({(c["system"], c["num_procs"]) for c in plan["pareto"]},
                         {("cheap", n) for n in COUNTS})
        days = [c["days"] for c in cheap]
        dollars = [c["dollars"] for c in cheap]
        self.assertTrue(days[0] > days[1] > days[2], days)
        self.assertTrue(dollars[0] < dollars[1] < dollars[2], dollars)
        # a deadline only 32 GPUs meet, a budget only 8 GPUs meet
        body = dict(BASE, deadline_days=(days[1] + days[2]) / 2, budget_dollars=(dollars[0] + dollars[1]) / 2)
        plan = run_plan(self, self.server, body)["plan"]
        self.assertEqual((plan["cheapest_within_deadline"]["system"], plan["cheapest_within_deadline"]["num_procs"]), ("cheap", 32))
        self.assertEqual((plan["fastest_within_budget"]["system"], plan["fastest_within_budget"]["num_procs"]), ("cheap", 8))
        reasons = {(c["system"], c["num_procs"]): c["rejected"] for c in plan["candidates"]}
        self.assertEqual(reasons[("cheap", 8)], ["misses_deadline"])
        self.assertEqual(reasons[("cheap", 16)], ["misses_deadline", "over_budget"])
        self.assertEqual(reasons[("cheap", 32)], ["over_budget"])
        self.assertEqual(reasons[("dear", 32)], ["over_budget"])
        self.assertEqual(len(plan["pareto"]), 3)  # the front ignores the constraints

    def test_layouts_reestimate_to_the_same_step_time(self):
        doc = run_plan(self, self.server, BASE)
        spec = doc["spec"]
        systems = {s["name"]: s["system"] for s in spec["systems"]}
        for c in doc["plan"]["candidates"]:
            r = self.server.post("/v1/estimate", {"model": spec["model"], "system": systems[c["system"]],
                                                  "execution": c["execution"]})
            self.assertEqual(r.status, 200, r.body)
            out = r.json()
            self.assertTrue(out["fits_memory"])
            self.assertEqual(out["summary"]["step_time_s"], c["step_time_s"])
            self.assertEqual(c["execution"]["batch_size"] * 8192, c["batch_tokens"])  # llama3-8B: seq 8192

    def test_candidates_csv_and_json(self):
        sid = self.server.post("/v1/sweep", BASE).json()["id"]
        doc = wait_for(self.server, sid)
        r = self.server.get("/v1/sweep/%s/results?format=csv" % sid)
        self.assertEqual(r.status, 200, r.body)
        rows = list(csv.reader(io.StringIO(r.body)))
        self.assertEqual(rows[0][:3], ["index", "system", "num_procs"])
        self.assertEqual(len(rows), 1 + 6 + 1)
        self.assertEqual(rows[-1], ["#complete rows=6 next_offset=6"])
        col = rows[0].index("dollars")
        for row, c in zip(rows[1:], doc["plan"]["candidates"]):
            self.assertEqual(float(row[col]), c["dollars"])
            self.assertEqual(row[rows[0].index("execution.tensor_par")], str(c["execution"]["tensor_par"]))
        js = self.server.get("/v1/sweep/%s/results" % sid).json()
        self.assertEqual(js["rows"], "all")
        self.assertEqual([p["num_procs"] for p in js["points"]], COUNTS * 2)

    def test_cancel_and_restart(self):
        big = dict(BASE, model="llama3-70B", systems=["h100_sxm", "h200", "b200"],
                   gpu_counts={"from": 64, "to": 4096, "factor": 2}, batch_tokens=[2097152, 4194304])
        sid = self.server.post("/v1/sweep", big).json()["id"]
        r = self.server.request("DELETE", "/v1/sweep/" + sid)
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(wait_for(self.server, sid)["status"], "cancelled")
        # a finished plan survives a restart, answer and all
        first = Server().start()
        try:
            doc = run_plan(self, first, BASE)
            first.stop()
            again = Server(db_dir=first.db_dir).start()
            try:
                after = again.get("/v1/sweep/" + doc["id"]).json()
                self.assertEqual(after["plan"], doc["plan"])
            finally:
                again.stop()
        finally:
            first.kill()

    def test_sigkill_mid_plan_resumes_to_the_uninterrupted_answer(self):
        # 12 candidates of Llama 3 70B, about a second each on one worker
        body = dict(BASE, model="llama3-70B", tokens="chinchilla", batch_tokens=4194304,
                    systems=["h100_sxm", "b200"], gpu_counts=[256, 512, 768, 1024, 1536, 2048])
        with open(os.path.join(self.server.db_dir, "long-plan.json"), "w") as f:
            json.dump(body, f)
        expected = json.loads(subprocess.run(
            [FATHOM_CLI, "--presets", os.path.join(SOURCE, "presets"), "plan", f.name, "--json"],
            capture_output=True, text=True, check=True).stdout)
        tmp = tempfile.mkdtemp(prefix="fathom-plan-kill-")
        try:
            s = Server(db_dir=tmp, extra_args=["--workers", "1"]).start()
            sid = s.post("/v1/sweep", body).json()["id"]
            doc = wait_for(s, sid, predicate=lambda d: 0 < d["progress"]["done"] < d["progress"]["total"], timeout=300)
            self.assertEqual(doc["status"], "running")
            s.stop(signal.SIGKILL)
            status, done = s.stored_row("SELECT status, done FROM sweeps WHERE id=?", (sid,))
            self.assertEqual(status, "running")
            self.assertGreater(done, 0)
            s = Server(db_dir=tmp, extra_args=["--workers", "2"]).start()
            got = wait_for(s, sid, timeout=300)
            self.assertEqual(got["status"], "done")
            self.assertEqual(got["progress"], {"done": 12, "total": 12})
            self.assertEqual(got["plan"], expected)
            # The evaluations of the whole run, the candidates' before the kill included: as
            # many as the uninterrupted run's searches made (each candidate says its own).
            self.assertEqual(got["evaluations"],
                             sum(c["search"]["estimated"] for c in expected["candidates"]))
            self.assertEqual(s.stop(), 0)
        finally:
            shutil.rmtree(tmp)

    def test_cli_prints_the_same_plan(self):
        doc = run_plan(self, self.server, BASE)
        with open(os.path.join(self.server.db_dir, "plan.json"), "w") as f:
            json.dump(BASE, f)
        out = subprocess.run([FATHOM_CLI, "--presets", os.path.join(SOURCE, "presets"), "plan", f.name, "--json"],
                             capture_output=True, text=True, check=True)
        self.assertEqual(json.loads(out.stdout), json.loads(json.dumps(doc["plan"])))
        table = subprocess.run([FATHOM_CLI, "--presets", os.path.join(SOURCE, "presets"), "plan", f.name],
                               capture_output=True, text=True, check=True).stdout
        self.assertIn("cheap", table)
        self.assertIn("Pareto", table)

    def test_cli_table_names_the_warnings(self):
        # Qwen3-30B-A3B (hidden 2,048) carries moe_small_hidden on every candidate: each row is
        # marked "!", and the code is given once below the table with how many carry it
        body = {"kind": "plan", "model": "qwen3-30B-A3B", "tokens": 1e10, "batch_tokens": 1048576,
                "systems": ["h100_sxm"], "gpu_counts": [8, 16]}
        with open(os.path.join(self.server.db_dir, "plan_moe.json"), "w") as f:
            json.dump(body, f)
        cli = [FATHOM_CLI, "--presets", os.path.join(SOURCE, "presets"), "plan", f.name]
        plan = json.loads(subprocess.run(cli + ["--json"], capture_output=True, text=True,
                                         check=True).stdout)
        table = subprocess.run(cli, capture_output=True, text=True, check=True).stdout
        lines = table.splitlines()
        rows = lines[1:1 + len(plan["candidates"])]
        counts = {}
        for row, c in zip(rows, plan["candidates"]):
            self.assertEqual(row[3] == "!", bool(c["warnings"]), row)
            for w in c["warnings"]:
                counts[w["code"]] = counts.get(w["code"], 0) + 1
        self.assertIn("moe_small_hidden", counts)
        for code, n in counts.items():
            self.assertIn("  %s (%d of %d candidates" % (code, n, len(plan["candidates"])), table)
        self.assertEqual(sum(1 for l in lines if l.startswith("  ") and " candidates; first: " in l),
                         len(counts))

    def test_chinchilla_and_flops_tokens(self):
        # llama3-8B: the compute-optimal tokens of the summary's parameter count under the one
        # Chinchilla fit, the tokens /v1/scaling answers for that size (about 20.5 each)
        est = self.server.post("/v1/estimate", {"model": "llama3-8B", "system": "h100_sxm",
                                                "execution": {"num_procs": 8, "tensor_par": 8, "batch_size": 8}}).json()
        params = est["summary"]["parameters_total"]
        active = est["summary"]["parameters_active"]
        r = self.server.post("/v1/sweep", dict(BASE, tokens="chinchilla"))
        self.assertEqual(r.status, 202, r.body)
        spec = self.server.get("/v1/sweep/" + r.json()["id"]).json()["spec"]
        optimal = self.server.post("/v1/scaling", {"law": "chinchilla", "params": params}).json()
        self.assertEqual(spec["tokens"], float(int(optimal["tokens"])))
        self.assertAlmostEqual(spec["tokens"] / params, 20.5, delta=0.1)
        r = self.server.post("/v1/sweep", dict(BASE, tokens={"flops": 6e21}))
        spec = self.server.get("/v1/sweep/" + r.json()["id"]).json()["spec"]
        self.assertAlmostEqual(spec["tokens"], 6e21 / (6 * active), delta=1)
        for sid in (r.json()["id"],):
            self.server.request("DELETE", "/v1/sweep/" + sid)

    def test_auto_batch_losses_and_ranges(self):
        # the plan's default batch: DeepSeek LLM's law for the run's compute, worked here from
        # the model's own parameter count (llama3-8B: vocab 128256, hidden 4096, 32 blocks,
        # untied embeddings, seq 8192)
        est = self.server.post("/v1/estimate", {"model": "llama3-8B", "system": "h100_sxm",
                                                "execution": {"num_procs": 8, "tensor_par": 8, "batch_size": 8}}).json()
        nonembed = est["summary"]["parameters_active"] - 2 * 128256 * 4096
        flops = (6 * nonembed + 6 * 32 * 4096 * 8192) * 1e10
        law = 0.2920 * flops ** 0.3271
        body = {k: v for k, v in BASE.items() if k != "batch_tokens"}
        doc = run_plan(self, self.server, dict(body, deadline_days=1000))
        self.assertEqual(doc["spec"]["batch_tokens"], "auto")
        self.assertAlmostEqual(doc["spec"]["batch_law_tokens"], law, delta=1e-9 * law)
        for c in doc["plan"]["candidates"]:
            e, seqs = c["execution"], c["batch_tokens"] // 8192
            dp, pp = e["data_par"], e["pipeline_par"]
            self.assertEqual(c["batch"]["rule"], "auto")
            self.assertEqual(seqs % dp, 0)  # rounded to what the layout divides
            self.assertGreaterEqual(seqs, dp * pp)  # no replica's pipeline idles
            target = round(law / 8192)
            self.assertTrue(abs(seqs - target) <= dp / 2 or seqs == dp * pp, (seqs, target, dp))
            # every loss, and the goodput they leave
            l = c["losses"]
            g = (1 - l["checkpoint_writes"] - l["lost_work"] - l["restarts"] - l["planned_restarts"]) \
                * (1 - l["evaluation"]) * (1 - l["slow_nodes"]) * (1 - l["data_loader"])
            self.assertAlmostEqual(l["goodput"], g, delta=1e-12)
            self.assertAlmostEqual(l["evaluation"], 10 / 3000, delta=1e-15)
            self.assertAlmostEqual(l["slow_nodes"], 0.015, delta=1e-15)
            # the point: the tuned stack over its goodput times the ratio published runs of
            # its GPU generation paid over the plan's figure for them (doc/plan.md)
            pub = c["published"]
            self.assertAlmostEqual(c["gpu_hours"], c["gpu_hours_ideal"] / g * pub["ratio"],
                                   delta=1e-9 * c["gpu_hours"])
            self.assertGreater(pub["ratio"], 1)  # the H100 runs paid more than the tuned stack
            self.assertIsNone(pub["left_out"])  # llama3-8B was not a published run
            # the range: P10-P90, the point times e^(±z·sigma) with z the standard normal's 90th
            # percentile, never below the ideal; days and dollars are the same range
            lo, hi = c["gpu_hours_range"]
            self.assertEqual(pub["range_coverage"], 0.8)
            w = math.exp(statistics.NormalDist().inv_cdf(0.9) * pub["sigma"])
            self.assertAlmostEqual(hi, c["gpu_hours"] * w, delta=1e-9 * hi)
            self.assertAlmostEqual(lo, max(c["gpu_hours_ideal"], c["gpu_hours"] / w), delta=1e-9 * lo)
            self.assertTrue(lo <= c["gpu_hours"] <= hi, (lo, c["gpu_hours"], hi))
            n = c["num_procs"]
            self.assertAlmostEqual(c["days_range"][1], hi / n / 24, delta=1e-9 * hi)
            self.assertAlmostEqual(c["dollars_range"][0], lo * c["price_per_gpu_hour"], delta=1e-6 * lo)
            self.assertEqual(c["deadline_verdict"], "within")  # 1000 days
            # the interruptions are those of the days the plan reports (the cluster is exposed to
            # failures for as long as the run takes), not of the shorter modelled wall time: the
            # job MTBF M = 1/(lambda N) and the planned Mp = 1/(lambda_p N) from doc/plan.md's defaults
            f, hours = c["failures"], c["days"] * 24
            lam, lam_p = 419 / (54 * 24 * 16384), 47 / (54 * 24 * 16384)
            self.assertAlmostEqual(f["mtbf_hours"], 1 / (lam * n), delta=1e-9 * f["mtbf_hours"])
            self.assertAlmostEqual(f["expected_interruptions"], hours * lam * n,
                                   delta=1e-9 * f["expected_interruptions"])
            self.assertAlmostEqual(f["expected_planned"], hours * lam_p * n,
                                   delta=1e-9 * f["expected_planned"])
        # a deadline inside one candidate's range is at risk; below it, missed
        c = doc["plan"]["candidates"][0]
        lo, hi = c["days_range"]
        for deadline, verdict in (((lo + hi) / 2, "at risk"), (lo * 0.9, "misses"), (hi * 1.1, "within")):
            with self.subTest(verdict=verdict):
                got = run_plan(self, self.server, dict(body, deadline_days=deadline))["plan"]["candidates"][0]
                self.assertEqual(got["deadline_verdict"], verdict)


    def test_more_tokens_never_cheaper_near_a_published_runs_compute(self):
        # Llama 3 8B (8.03B active) on 2,048 H100: at 6.5e13 tokens its 6·N·D, 3.13e24, is within
        # 10% of DeepSeek-V3's (37B × 14.8T × 6 = 3.29e24) on its GPU count and generation. It is
        # not DeepSeek-V3's run, so no run is left out at either token count, k̄ is the same (the
        # two H100 runs: sqrt(1.218058 · 1.130394) = 1.173408) and the figures scale with the
        # tokens; a match on compute left DeepSeek-V3 out of the one plan (k̄ 1.218), and 1.1x
        # its compute then planned 3.7% fewer GPU-hours than just below it
        body = {"kind": "plan", "model": "llama3-8B", "systems": ["h100_sxm"], "gpu_counts": [2048],
                "batch_tokens": 16777216}
        got = [run_plan(self, self.server, dict(body, tokens=t))["plan"]["candidates"][0]
               for t in (5.5e13, 6.5e13)]
        for c in got:
            self.assertIsNone(c["published"]["left_out"])
            self.assertAlmostEqual(c["published"]["ratio"], 1.173408, delta=1e-6)
        self.assertEqual(got[0]["execution"], got[1]["execution"])
        for key in ("gpu_hours", "days", "dollars", "mwh"):
            self.assertAlmostEqual(got[1][key] / got[0][key], 6.5 / 5.5, delta=1e-4, msg=key)

    def test_a_run_that_never_finishes_misses_the_deadline_and_budget(self):
        # half a failure per GPU-hour on 64 GPUs: an interruption every 113 s, less than a
        # restart (15 min), so the run never finishes; like a candidate that does not fit it
        # misses every deadline and budget (not "at risk": no part of its range meets them)
        doc = run_plan(self, self.server, dict(BASE, gpu_counts=[64], systems=["h100_sxm"],
                                               deadline_days=1000, budget_dollars=1e9,
                                               failures={"per_gpu_hour": 0.5}))
        c = doc["plan"]["candidates"][0]
        self.assertEqual(c["rejected"], ["never_finishes"])
        self.assertEqual((c["deadline_verdict"], c["budget_verdict"]), ("misses", "misses"))
        self.assertIsNone(doc["plan"]["cheapest_within_deadline"])
        # no range: null in the JSON, an empty cell in the CSV like its days and dollars
        self.assertEqual(c["days_range"], [None, None])
        rows = list(csv.reader(io.StringIO(
            self.server.get("/v1/sweep/%s/results?format=csv" % doc["id"]).body)))
        for key in ("days", "dollars", "gpu_hours_range", "days_range", "dollars_range"):
            self.assertEqual(rows[1][rows[0].index(key)], "", key)
        self.assertEqual(rows[1][rows[0].index("rejected")], "never_finishes")

    def test_checkpoint_holds_the_optimizer_state_as_trained(self):
        # Llama 3 8B (8,030,261,248 parameters): bfloat16 weights 2 bytes, fp32 master 4, Adam's
        # two moments 4 + 4 = 14 bytes; with BF16 moments (DeepSeek-V3's recipe) 2 + 4 + 2 + 2 =
        # 10 bytes. The checkpoint counted 14 whatever the moments were.
        params = 8030261248
        for state, per_param in (("float32", 14), ("bfloat16", 10)):
            doc = run_plan(self, self.server, dict(BASE, gpu_counts=[8], systems=["h100_sxm"],
                                                   options={"optimizer_state_datatype": state}))
            c = doc["plan"]["candidates"][0]
            self.assertEqual(c["failures"]["checkpoint_bytes"], params * per_param, state)

    def test_schedule_and_goodput_choose_the_batch(self):
        # a ramp: a quarter of the tokens at 256K tokens a step, on the main batch's layout
        stage = {"batch_tokens": 262144, "tokens": 2.5e9}
        doc = run_plan(self, self.server, dict(BASE, batch_schedule=[stage]))
        plain = run_plan(self, self.server, BASE)
        for c, p in zip(doc["plan"]["candidates"], plain["plan"]["candidates"]):
            st = c["batch"]["schedule"][0]
            dp = c["execution"]["data_par"]
            self.assertEqual(st["batch_tokens"], max(1, (32 + dp // 2) // dp) * dp * 8192)
            self.assertEqual(st["steps"], -(-2.5e9 // st["batch_tokens"]))
            main_steps = -(-7.5e9 // c["batch_tokens"])
            self.assertEqual(c["steps"], st["steps"] + main_steps)
            self.assertAlmostEqual(c["days_ideal"] * 86400, st["steps"] * st["step_time_s"] +
                                   main_steps * c["step_time_s"], delta=1e-6 * c["days_ideal"] * 86400)
            self.assertGreaterEqual(c["days_ideal"], p["days_ideal"] * 0.999)  # small batches cost more
        # goodput statistics: a critical batch of 64K tokens makes large batches wasteful; the
        # candidate takes the batch with the best goodput and trains tokens / efficiency
        crit, b0 = 65536.0, 65536.0
        doc = run_plan(self, self.server, dict(BASE, batch_tokens=[524288, 1048576, 4194304],
                                               goodput={"init_batch_tokens": b0, "critical_batch_tokens": crit}))
        for c in doc["plan"]["candidates"]:
            b = c["batch_tokens"]
            eff = (crit + b0) / (crit + b)
            self.assertEqual(c["batch"]["chosen_by"], "goodput")
            self.assertAlmostEqual(c["batch"]["statistical_efficiency"], eff, delta=1e-12)
            self.assertAlmostEqual(c["batch"]["tokens_trained"], 1e10 / eff, delta=1e-6 * 1e10 / eff)
        # Pollux's statistics give the same critical batch: var / sqr · B0
        r = self.server.post("/v1/sweep", dict(BASE, goodput={"init_batch_tokens": b0,
                                                             "grad_params": {"sqr": 2.0, "var": 2.0}}))
        spec = self.server.get("/v1/sweep/" + r.json()["id"]).json()["spec"]
        self.assertEqual(spec["goodput"], {"init_batch_tokens": b0, "critical_batch_tokens": b0})

    def test_a_search_too_large_names_what_makes_it_smaller(self):
        small = Server(extra_args=["--max-search-executions", "1000"]).start()
        try:
            r = small.post("/v1/sweep", BASE)
            self.assertError(r, 422, "limit_exceeded", "gpu_counts[0]")
            msg = r.json()["error"]["message"]
            for words in ("two stages", "options.max_tensor_par", "options.max_pipeline_par",
                          "options.no_tp_overlap", "batch_tokens"):
                self.assertIn(words, msg)
            self.assertNotIn("--max-search-executions", msg)
        finally:
            small.stop()

    def test_options_fix_every_candidates_execution(self):
        """The execution options a plan passes to every candidate's search (the pipeline
        schedule, the all-to-all overlap, FP8 storage, the moments' datatype) are in every
        candidate's layout, which re-estimates to the same step time; DualPipe's auto batch gives
        each replica an even number of microbatches, at least 2 x pipeline_par; a count where
        no layout can run DualPipe is a candidate that does not fit, not a refused plan."""
        model = {"hidden": 1024, "seq_size": 2048, "attn_heads": 16, "kv_heads": 4, "num_blocks": 8,
                 "vocab_size": 32000, "gated_mlp": True, "norm": "rmsnorm",
                 "position_embedding": "rope", "tied_embeddings": False,
                 "moe": {"num_experts": 8, "top_k": 2, "expert_feedforward": 1024}}
        opts = {"pipeline_schedule": "dualpipe", "moe_a2a_overlap": True, "fp8": True,
                "fp8_activation_cache": True, "fp8_params": True,
                "optimizer_state_datatype": "bfloat16"}
        body = {"kind": "plan", "model": model, "tokens": 1e10, "systems": ["h100_sxm"],
                "gpu_counts": [1, 16], "options": opts}
        doc = run_plan(self, self.server, body)
        c1, c16 = doc["plan"]["candidates"]
        self.assertFalse(c1["fits"], c1)  # one GPU has no pipeline to run DualPipe on
        self.assertTrue(c16["fits"], c16)
        e = c16["execution"]
        for k in ("pipeline_schedule", "moe_a2a_overlap", "fp8_activation_cache", "fp8_params",
                  "optimizer_state_datatype"):
            self.assertEqual(e[k], opts[k], (k, e))
        nmb = e["batch_size"] // e["data_par"] // e["microbatch_size"]
        self.assertEqual(nmb % 2, 0, e)
        self.assertGreaterEqual(nmb, 2 * e["pipeline_par"], e)
        est = self.server.post("/v1/estimate", {"model": model, "system": "h100_sxm", "execution": e})
        self.assertEqual(est.status, 200, est.body)
        self.assertEqual(est.json()["summary"]["step_time_s"], c16["step_time_s"])
        self.assertEqual(doc["spec"]["options"]["pipeline_schedule"], "dualpipe")

    def test_a_stated_layout_is_the_layout_planned(self):
        """tensor_par, pipeline_par, microbatch_size and activation_recompute pin each
        candidate's layout (a run's report, doc/plan.md): the pinned layout is the one planned,
        it re-estimates to the same step time, it is no faster than the free search's, the spec
        keeps the pins, and a count too small for the pinned degrees is refused naming it."""
        pins = {"tensor_par": 2, "pipeline_par": 2, "microbatch_size": 1,
                "activation_recompute": "full"}
        body = dict(BASE, systems=["h100_sxm"], gpu_counts=[8])
        free = run_plan(self, self.server, body)["plan"]["candidates"][0]
        doc = run_plan(self, self.server, dict(body, options=pins))
        c = doc["plan"]["candidates"][0]
        self.assertTrue(c["fits"], c)
        # 2 GPUs: too few for tensor_par 2 x pipeline_par 2, refused as any count without a layout
        self.assertError(self.server.post("/v1/sweep", dict(body, gpu_counts=[2], options=pins)),
                         422, "invalid_field", "gpu_counts[0]")
        for k, v in pins.items():
            self.assertEqual(c["execution"][k], v, (k, c["execution"]))
            self.assertEqual(doc["spec"]["options"][k], v)
        self.assertGreaterEqual(c["step_time_s"], free["step_time_s"])
        self.assertNotEqual(free["execution"]["activation_recompute"], "full", free["execution"])
        est = self.server.post("/v1/estimate", {"model": "llama3-8B", "system": "h100_sxm",
                                                "execution": c["execution"]})
        self.assertEqual(est.status, 200, est.body)
        self.assertEqual(est.json()["summary"]["step_time_s"], c["step_time_s"])

    def test_a_rejection_says_what_the_search_found(self):
        """1,000,000 GPUs: every layout's data-parallel group spans more GPUs than h100_sxm's
        largest network tier (65,536), so nothing is estimated and the reason says so, not
        that nothing fits in memory."""
        r = self.server.post("/v1/sweep", {"kind": "plan", "model": "llama3-8B", "tokens": 1e12,
                                           "systems": ["h100_sxm"], "gpu_counts": [1000000]})
        self.assertEqual(r.status, 202, r.body)
        sid = r.json()["id"]
        self.assertEqual(wait_for(self.server, sid)["status"], "done")
        c = self.server.get("/v1/sweep/%s/results" % sid).json()["points"][0]
        self.assertEqual(c["rejected"], ["does_not_fit"])
        self.assertEqual(c["search"]["estimated"], 0)
        self.assertGreater(c["search"]["total"], 0)
        self.assertIn("network tier", c["reason"])
        self.assertIn("65536", c["reason"])
        self.assertNotIn("memory", c["reason"])

    def test_bad_plans_name_the_field(self):
        cases = [
            (dict(BASE, systems=[]), "invalid_field", "systems"),
            (dict(BASE, gpu_counts=[8, 1031]), "invalid_field", "gpu_counts[1]"),  # a prime: no layout
            (dict(BASE, deadline_days=0), "invalid_field", "deadline_days"),
            (dict(BASE, tokens=1e19), "limit_exceeded", "tokens"),
            (dict(BASE, tokens="lots"), "invalid_field", "tokens"),
            (dict(BASE, systems=["no-such-gpu"]), "invalid_field", "systems[0]"),
            (dict(BASE, systems=["h100_sxm", "h100_sxm"]), "invalid_field", "systems[1]"),
            (dict(BASE, systems=[{"name": "x", "system": "h100_sxm", "price_per_gpu_hour": -1}]),
             "invalid_field", "systems[0].price_per_gpu_hour"),
            (dict(BASE, gpu_counts={"from": 8, "to": 64}), "invalid_field", "gpu_counts"),
            (dict(BASE, options={"fp8": "maybe"}), "invalid_field", "options.fp8"),
            (dict(BASE, failures={"storage_gbps": 0}), "invalid_field", "failures.storage_gbps"),
            (dict(BASE, batch_tokens=100), "invalid_field", "batch_tokens"),
            (dict(BASE, batch_tokens="big"), "invalid_field", "batch_tokens"),
            (dict(BASE, batch_schedule=[{"batch_tokens": 100, "tokens": 1e9}]), "invalid_field",
             "batch_schedule[0].batch_tokens"),
            (dict(BASE, batch_schedule=[{"batch_tokens": 262144, "tokens": 2e10}]), "invalid_field",
             "batch_schedule"),
            (dict(BASE, batch_schedule=[{"batch_tokens": 262144}]), "invalid_field",
             "batch_schedule[0].tokens"),
            (dict(BASE, goodput={"critical_batch_tokens": 1e6}), "invalid_field", "goodput.init_batch_tokens"),
            (dict(BASE, goodput={"init_batch_tokens": 1e5}), "invalid_field", "goodput"),
            (dict(BASE, goodput={"init_batch_tokens": 1e5, "critical_batch_tokens": 1,
                                 "grad_params": {"sqr": 1, "var": 1}}), "invalid_field", "goodput"),
            (dict(BASE, goodput={"init_batch_tokens": 1e5, "grad_params": {"sqr": 0, "var": 1}}),
             "invalid_field", "goodput.grad_params.sqr"),
            (dict(BASE, losses={"slow_nodes": 1}), "invalid_field", "losses.slow_nodes"),
            (dict(BASE, losses={"stalls": 0.1}), "invalid_field", "losses.stalls"),
            (dict(BASE, failures={"storage_gbps": 100, "storage_gbps_per_gpu": 1}), "invalid_field",
             "failures.storage_gbps_per_gpu"),
            (dict(BASE, failures={"queue_minutes": -1}), "invalid_field", "failures.queue_minutes"),
            (dict(BASE, options={"compile": True}), "invalid_field", "options.compile"),
            (dict(BASE, options={"stack": "jax"}), "invalid_field", "options.stack"),
            (dict(BASE, options={"pipeline_schedule": "gpipe"}), "invalid_field",
             "options.pipeline_schedule"),
            (dict(BASE, options={"moe_a2a_overlap": True}), "invalid_field",
             "options.moe_a2a_overlap"),  # llama3-8B has no experts
            (dict(BASE, options={"fp8_activation_cache": True}), "invalid_field",
             "options.fp8_activation_cache"),  # the plan's fp8 is false
            (dict(BASE, options={"fp8": True, "fp8_params": 1}), "invalid_field", "options.fp8_params"),
            (dict(BASE, options={"optimizer_state_datatype": "float8"}), "invalid_field",
             "options.optimizer_state_datatype"),
            (dict(BASE, options={"tensor_par": 0}), "invalid_field", "options.tensor_par"),
            (dict(BASE, options={"pipeline_par": "4"}), "invalid_field", "options.pipeline_par"),
            (dict(BASE, options={"microbatch_size": -1}), "invalid_field",
             "options.microbatch_size"),
            (dict(BASE, options={"activation_recompute": "some"}), "invalid_field",
             "options.activation_recompute"),
        ]
        for body, code, field in cases:
            with self.subTest(field=field):
                self.assertError(self.server.post("/v1/sweep", body), 422, code, field)


if __name__ == "__main__":
    unittest.main()

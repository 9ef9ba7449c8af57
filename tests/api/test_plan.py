"""test_plan.py — cluster plans ({"kind": "plan"} sweeps) end to end: an answer known by
construction (two systems alike but for price, a deadline only the largest count meets, a budget
only the smallest meets), every candidate's layout re-estimated through /v1/estimate, the CSV of
candidates, cancel, a restart, the CLI, and bad plans naming their field."""
import csv
import io
import json
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
            # the bill from its own parts: expected = ideal / goodput, GPU-hours × price, kWh
            g = a["failures"]["goodput"]
            self.assertAlmostEqual(a["days"], a["days_ideal"] / g, delta=1e-9 * a["days"])
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
        ]
        for body, code, field in cases:
            with self.subTest(field=field):
                self.assertError(self.server.post("/v1/sweep", body), 422, code, field)


if __name__ == "__main__":
    unittest.main()

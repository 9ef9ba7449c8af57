"""test_plan_published.py — published whole pre-training runs (tests/data/plans/published_runs.json:
GPU-hours as their authors state them, on their GPU type and count) planned on a server with its
default limits, as a new user would: every plan is accepted (DeepSeek-V3 on 2,048 H800 included),
and each run's published GPU-hours are compared with the candidate's gpu_hours_range (issue 35:
inside the range, the range at most 1.6x wide, the point estimate within 20% on average).

The table printed is the report. Each plan is a prediction, not a recall: the plan leaves the
published run it reproduces out of the table it calibrates against (published.left_out), so its
point is the tuned stack over its goodput times what the other runs of its GPU generation paid
over the plan's figure for them, and its range that ratio's spread (doc/plan.md, "An honest
range"). Rows whose miss is known and explained there are listed in KNOWN_MISSES and only
printed; every other row must meet each criterion, so a regression fails here."""
import json
import math
import os
import unittest

from harness import SOURCE, ServerTestCase
from test_sweeps import wait_for

RUNS = json.load(open(os.path.join(SOURCE, "tests", "data", "plans", "published_runs.json")))["runs"]

# (run, criterion) pairs that miss today, with the reason in doc/plan.md ("What the published runs
# say about Fathom"): criterion "inside", "width" (at most 1.6x) or "point" (within 20%).
STARCODER = ("StarCoderBase paid 1.97x the plan's figure at its own stated layout (TP 4, PP 4, DP 32, "
             "microbatch 1, 4M-token batch) where the other A100 runs paid 1.31-1.59x: predicted "
             "from them it lands 27% low, outside a P10-P90 range 1.32x wide")
FALCON = ("Falcon-180B paid 1.31x the plan's figure, the least of the A100 runs; predicted from the "
          "others (1.42-1.97x, MPT-7B's 1.70x since FSDP's shard groups cross nodes on every NIC) "
          "its point lands 21% high, inside its range")
KNOWN_MISSES = {
    ("StarCoderBase 15.5B", "inside"): STARCODER, ("StarCoderBase 15.5B", "point"): STARCODER,
    ("Falcon-180B", "point"): FALCON,
}


def generation(run):
    return "A100" if "a100" in json.dumps(run["plan"]["systems"]) else "H100"


class PublishedRuns(ServerTestCase):
    def test_published_runs_against_their_ranges(self):
        ids = []
        for run in RUNS:
            r = self.server.post("/v1/sweep", run["plan"])  # the server's default limits
            # 200 for a plan another row already posted (the same sweep)
            self.assertIn(r.status, (200, 202), (run["name"], r.body))
            ids.append(r.json()["id"])
        rows, errors, misses, cands = [], [], [], []
        for run, sid in zip(RUNS, ids):
            doc = wait_for(self.server, sid, timeout=850)
            self.assertEqual(doc["status"], "done", doc)
            c = doc["plan"]["candidates"][0]
            self.assertTrue(c["fits"], (run["name"], c["reason"]))
            cands.append(c)
            pub = run["published_gpu_hours"]
            lo, hi = c["gpu_hours_range"]
            point = c["gpu_hours"]
            self.assertTrue(lo <= point <= hi)
            got = {"inside": lo <= pub <= hi, "width": hi / lo <= 1.6,
                   "point": abs(point / pub - 1) <= 0.2}
            errors.append(abs(point / pub - 1))
            rows.append((run["name"], pub, lo, point, hi, hi / lo, point / pub - 1, c["mfu"],
                         c["batch_tokens"], c["search"].get("stages", 1),
                         c["published"]["gpu_hours_tuned"]))
            e = c["execution"]  # the layout a report states is the layout planned
            for k in ("tensor_par", "pipeline_par", "microbatch_size", "activation_recompute"):
                if k in run["plan"].get("options", {}):
                    self.assertEqual(e[k], run["plan"]["options"][k], (run["name"], k))
            if run["name"] == "DeepSeek-V3":  # the report's options reach its search (sec. 3.2-3.3)
                e = c["execution"]
                for k, v in run["plan"]["options"].items():
                    self.assertEqual(e[k], v, (k, e))
                print("\nDeepSeek-V3 plans TP %d, PP %d, DP %d, EP %d, ZeRO-%d, recompute %s: %.0f "
                      "tokens/s/GPU (its run: 1,543)" % (
                          e["tensor_par"], e["pipeline_par"], e["data_par"], e["expert_par"],
                          e.get("zero_stage", 0), e.get("recompute_modules"),
                          c["tokens_per_s"] / c["num_procs"]))
            for criterion, ok in got.items():
                if not ok and (run["name"], criterion) not in KNOWN_MISSES:
                    misses.append("%s: %s" % (run["name"], criterion))
        # leave-one-out, and the plan's tuned figures stored in the table (core/plan/plan_range.c)
        # still the plan's: each run's ratio from the other runs of its generation, worked here
        # from this test's own plans, within 2% of what the server used (one stored figure 8%
        # off moves an A100 ratio 2%, an H100 one 8%)
        live = {run["name"]: run["published_gpu_hours"] / c["published"]["gpu_hours_tuned"]
                for run, c in zip(RUNS, cands)}
        for run, c in zip(RUNS, cands):
            self.assertEqual(c["published"]["left_out"], run["name"])
            others = [math.log(live[o["name"]]) for o in RUNS
                      if o is not run and generation(o) == generation(run)]
            want = math.exp(sum(others) / len(others))
            self.assertLess(abs(c["published"]["ratio"] / want - 1), 0.02,
                            (run["name"], c["published"]["ratio"], want))
        print("\n%-20s %11s %11s %11s %11s %6s %7s %6s %9s %6s %11s" % (
            "run", "published", "low", "point", "high", "width", "point", "mfu", "batch_M", "stages",
            "tuned"))
        for name, pub, lo, point, hi, width, err, mfu, batch, stages, tuned in rows:
            print("%-20s %11.4g %11.4g %11.4g %11.4g %6.2f %+6.1f%% %6.3f %9.2f %6d %11.5g" % (
                name, pub, lo, point, hi, width, 100 * err, mfu, batch / 2**20, stages, tuned))
        print("mean |point - published| / published: %.1f%% over %d runs" % (
            100 * sum(errors) / len(errors), len(errors)))
        self.assertLessEqual(sum(errors) / len(errors), 0.20)  # issue 35: within 20% on average
        self.assertEqual(misses, [], "rows missing a criterion they met before")

    def test_llama3_405b_auto_batch_mfu(self):
        # Llama 3.1 405B on 16,384 H100s with the plan's default batch: the published GPU-hours
        # inside the range (the step's MFU is printed beside the paper's 38-43%)
        run = next(r for r in RUNS if r["name"] == "Llama 3.1 405B")
        self.assertNotIn("batch_tokens", run["plan"])
        r = self.server.post("/v1/sweep", run["plan"])
        doc = wait_for(self.server, r.json()["id"], timeout=850)
        c = doc["plan"]["candidates"][0]
        self.assertEqual(c["batch"]["rule"], "auto")
        lo, hi = c["gpu_hours_range"]
        self.assertTrue(lo <= run["published_gpu_hours"] <= hi, (lo, hi))
        mfu = c["published"]["mfu_6nd_expected"]
        print("\nLlama 3.1 405B auto: batch %d tokens, step MFU %.3f, expected whole-run MFU %.3f"
              % (c["batch_tokens"], c["mfu"], mfu))
        self.assertTrue(0.2 < c["mfu"] < 0.6, c["mfu"])

    def test_a100_step_at_bloom_layout(self):
        # The A100 step is not too fast: at BLOOM's own layout it steps at BLOOM's own measured
        # rate. BigScience's tr11-176B-ml run (Megatron-DeepSpeed): TP 4, PP 12, DP 8 on 384
        # A100 80GB, microbatch 2, global batch 2048 of 2048 tokens, every block recomputed,
        # ZeRO-1, no flash attention; reported 156 TFLOP/s per GPU counting the recompute
        # (Megatron's 96·B·s·l·h²(1 + s/6h + V/16lh) per step). The hardware FLOPs of the step
        # over its time must land within 10% of 156 (today 165, +6%), i.e. the 176B model's
        # 6ND MFU near 156/312 × 3/4 = 37.5%, where the plan's own layout runs 72%.
        run = next(r for r in RUNS if r["name"] == "BLOOM 176B")
        ex = {"num_procs": 384, "tensor_par": 4, "pipeline_par": 12, "data_par": 8,
              "pipeline_par_net": 1, "data_par_net": 1, "batch_size": 2048, "microbatch_size": 2,
              "datatype": "bfloat16", "activation_recompute": "full", "attention_kernel": "unfused",
              "tensor_par_comm_type": "ar", "optimizer_sharding": True, "zero_stage": 1,
              "fused_activation": True, "data_par_overlap": True}
        r = self.server.post("/v1/estimate", {"model": run["plan"]["model"], "system": "a100_sxm",
                                              "execution": ex})
        self.assertEqual(r.status, 200, r.body)
        s = r.json()["summary"]
        tflops = s["hardware_flops_per_step"] / s["step_time_s"] / 384 / 1e12
        print("\nBLOOM 176B at its own layout: %.0f TFLOP/s per GPU (run: 156), 6ND MFU %.3f"
              % (tflops, s["mfu"]))
        self.assertLess(abs(tflops / 156 - 1), 0.10, tflops)


if __name__ == "__main__":
    unittest.main()

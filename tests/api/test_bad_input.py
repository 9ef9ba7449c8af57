"""test_bad_input.py — hundreds of malformed requests across every endpoint: each is refused with a
4xx JSON error (naming the field where there is one), none gets a 5xx, none hangs, and the
server's memory stays flat across the corpus."""
import copy
import json
import os
import time
import unittest

from harness import ServerTestCase, SLOW

PERF = {"alpha_c": 0.1, "beta_c": 0.01, "alpha_n": 0.05, "beta_n": 0.01, "alpha_r": 0.02,
        "beta_r": 0.004, "gamma": 1.5}
GRAD = {"sqr": 0.01, "var": 0.1}

# A valid body for every endpoint; the corpus is built by breaking each of them.
VALID = {
    "/v1/transformer": {"model": {"hidden": 768, "attn_heads": 12, "num_blocks": 12, "seq_size": 1024,
                                  "vocab_size": 50257}, "tokens": 3e11, "batch_size": 512,
                        "gpu_peak_flops": 312e12, "mfu": 0.4, "num_gpus": 8, "lora": {"rank": 4}},
    "/v1/estimate": {"model": "gpt3-175B", "system": "a100_80g",
                     "execution": {"num_procs": 64, "tensor_par": 8, "pipeline_par": 8, "data_par": 1,
                                   "batch_size": 64, "microbatch_size": 1, "pipeline_par_net": 1},
                     "training": {"tokens": 3e11, "gpu_hour_price": 2.0, "gpu_power_kw": 0.7}},
    "/v1/sweep": {"kind": "optimal_execution", "model": "megatron-126M", "system": "a100_80g",
                  "num_procs": 8, "max_batch_size": 64, "datatype": "float16", "options": {"top_n": 2}},
    "/v1/scaling": {"gpu": "V100", "amp_mode": "O0", "dollars": 30},
    "/v1/scaling/fit": {"runs": [{"name": "r%d" % k, "points": [[1e8 * (k + 1) * (i + 1), 6.0 - 0.2 * i - 0.1 * k]
                                                                for i in range(8)]} for k in range(4)]},
    "/v1/goodput/evaluate": {"perf_params": PERF, "grad_params": GRAD, "init_batch_size": 32,
                             "num_nodes": 1, "num_replicas": 4, "atomic_bsz": 32, "accum_steps": 0},
    "/v1/goodput/optimize": {"perf_params": PERF, "grad_params": GRAD, "init_batch_size": 32,
                             "num_nodes": 2, "num_replicas": 8, "max_batch_size": 1024},
    "/v1/goodput/fit": {"measurements": [{"num_nodes": 1, "num_replicas": r, "atomic_bsz": b,
                                          "accum_step_time": 0.1 + 0.001 * b, "optim_step_time": 0.12 + 0.001 * b + 0.01 * r}
                                         for r in (1, 2, 4) for b in (16, 32, 64)]},
}

PARSE_BREAKERS = [
    "", " ", "{", "}", "[", '{"a":', '{"a":1,}', "{'a': 1}", '{"a": NaN}', '{"a": Infinity}',
    # (a 30-digit integer is valid JSON, read as a real: test_dashboard.LargeIntegers)
    '{"a": -Infinity}', '{"a": 1e999999}', '{"a": -1e999999}', "null x",
    '{"a":1,"a":2}', '{"s": "\xff\xfe"}', '{"s": "\\ud800"}', "[" * 64 + "]" * 64, '{"a":' * 40 + "1" + "}" * 40,
    "\x00", '{"a": tru}', '{"a": 01}', '{"a": .5}', '{"a": "unterminated}',
]
WRONG_TYPES = ["text", 3.5, -1, [], {}, True]


def paths(obj, prefix=""):
    """Every member path of a JSON object (objects only; array elements by index)."""
    out = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            p = "%s.%s" % (prefix, k) if prefix else k
            out.append(p)
            out.extend(paths(v, p))
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:2]):
            out.extend(paths(v, "%s[%d]" % (prefix, i)))
    return out


def set_path(obj, path, value, delete=False):
    import re
    parts = re.findall(r"[^.\[\]]+|\[\d+\]", path)
    cur = obj
    for part in parts[:-1]:
        cur = cur[int(part[1:-1])] if part.startswith("[") else cur[part]
    last = parts[-1]
    key = int(last[1:-1]) if last.startswith("[") else last
    if delete:
        del cur[key]
    else:
        cur[key] = value


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class BadInput(ServerTestCase):
    def send(self, path, body, headers=None):
        t0 = time.time()
        r = self.server.post(path, body, headers=headers or {"Content-Type": "application/json"})
        self.assertLess(time.time() - t0, 10 * SLOW, "slow answer on %s" % path)
        self.assertLess(r.status, 500, "%s %r -> %s %s" % (path, body, r.status, r.body))
        return r

    def corpus(self):
        cases = []
        for path, valid in VALID.items():
            for text in PARSE_BREAKERS:
                cases.append((path, text, 400, None))
            for v in ["[]", '"text"', "42", "null", "true"]:
                cases.append((path, v, 422, ""))
            cases.append((path, dict(valid, zzz_unknown=1), 422, "zzz_unknown"))
            for p in paths(valid):
                for bad in WRONG_TYPES[:3]:
                    b = copy.deepcopy(valid)
                    set_path(b, p, bad)
                    cases.append((path, b, None, p))
                b = copy.deepcopy(valid)
                set_path(b, p, 2 ** 53 + 1)
                cases.append((path, b, None, p))
                b = copy.deepcopy(valid)
                set_path(b, p, 1e308)
                cases.append((path, b, None, p))
                b = copy.deepcopy(valid)
                set_path(b, p, None, delete=True)
                cases.append((path, b, None, None))
        # Oversized arrays and absurd sweeps.
        cases.append(("/v1/goodput/evaluate", dict(VALID["/v1/goodput/evaluate"], num_replicas=list(range(1, 20002))), 422, None))
        # Past the row cap the body is past 1 MiB too: 413 or 422 are both refusals.
        cases.append(("/v1/goodput/fit", {"measurements": VALID["/v1/goodput/fit"]["measurements"] * 2000}, None, None))
        cases.append(("/v1/sweep", dict(VALID["/v1/sweep"], num_procs=2 ** 40), 422, "num_procs"))
        cases.append(("/v1/sweep", {"kind": "grid", "base": VALID["/v1/estimate"],
                                     "axes": {"execution.microbatch_size": list(range(1, 10001)),
                                              "execution.batch_size": list(range(1, 10001))}}, 422, "axes"))
        return cases

    def wait_idle(self):
        """Until no sweep is queued or running (valid mutations of a sweep body start sweeps)."""
        deadline = time.time() + 120 * SLOW
        while time.time() < deadline:
            m = self.server.get("/metrics").body
            if 'fathom_sweeps{state="queued"} 0' in m and 'fathom_sweeps{state="running"} 0' in m:
                return
            time.sleep(0.1)
        self.fail("sweeps still running")

    def check(self, path, body, status, field):
        text = body if isinstance(body, str) else json.dumps(body)
        r = self.send(path, text)
        if r.status in (200, 202):
            # A mutation that is still a valid request (an optional field removed, a value in
            # range) may be answered; anything else must be refused.
            self.assertIsNone(status, "%s %s accepted: %s" % (path, text[:200], r.body[:200]))
            return 0
        err = r.json()["error"]
        self.assertTrue(err["code"] and err["message"])
        if status is not None:
            self.assertEqual(r.status, status, "%s %r: %s" % (path, text[:200], r.body))
        if r.status == 422 and field:
            self.assertTrue(err.get("field", "").startswith(field.split("[")[0]) or
                            field.startswith(err.get("field", "\0")),
                            "%s %s: field %r, expected %r" % (path, text[:120], err.get("field"), field))
        if r.status == 422:
            self.assertIn("field", err, r.body)
        return 1

    def test_corpus(self):
        cases = self.corpus()
        self.assertGreaterEqual(len(cases), 200)
        refused = sum(self.check(*case) for case in cases)
        self.assertGreaterEqual(refused, 200)
        # Memory stays flat: a second pass over the whole corpus (answers now cached, sweeps
        # already known) must not grow the server. The first pass brought allocator arenas,
        # SQLite's page caches and the worker threads to their working size.
        self.wait_idle()
        rss0 = rss_kb(self.server.proc.pid)
        for case in cases:
            self.check(*case)
        self.wait_idle()
        rss1 = rss_kb(self.server.proc.pid)
        # ASan keeps freed memory in quarantine and valgrind has its own heap: RSS means
        # something only for a plain build.
        if not (os.environ.get("ASAN_OPTIONS") or os.environ.get("FATHOM_TEST_WRAPPER")):
            self.assertLess(rss1, rss0 * 1.10 + 1024, "RSS grew from %d kB to %d kB" % (rss0, rss1))

    def test_content_types(self):
        body = json.dumps(VALID["/v1/transformer"])
        for ct in ["text/plain", "application/xml", "multipart/form-data; boundary=x", "image/png", "application/jsonx"]:
            r = self.send("/v1/transformer", body, headers={"Content-Type": ct})
            self.assertEqual(r.status, 415, ct)
        for ct in ["application/json", "application/json; charset=utf-8", "APPLICATION/JSON",
                   "application/x-www-form-urlencoded"]:
            r = self.send("/v1/transformer", body, headers={"Content-Type": ct})
            self.assertEqual(r.status, 200, ct)

    def test_non_finite_results(self):
        """A result that overflows to Infinity is a 422 naming the input, never a 200 missing a
        member (JSON has no Infinity). Pollux's optimizer time at 1e-300 s and gamma 10 is
        (2·1e-3000)^(1/10): below the smallest double, so the step time is 0 s."""
        tiny = dict.fromkeys(PERF, 1e-300)
        tiny["gamma"] = 10
        cases = [
            ("/v1/goodput/evaluate", dict(VALID["/v1/goodput/evaluate"], perf_params=tiny),
             "perf_params"),
            ("/v1/goodput/optimize", dict(VALID["/v1/goodput/optimize"], perf_params=tiny),
             "perf_params"),
            # 1e9 sequences of 875 GFLOP in 1e-300 s
            ("/v1/transformer", dict(VALID["/v1/transformer"], batch_size=1e9,
                                     measured_step_time_s=1e-300), "measured_step_time_s"),
            ("/v1/transformer", dict(VALID["/v1/transformer"], measured_step_time_s=1,
                                     gpu_peak_flops=1e-300), "gpu_peak_flops"),
            ("/v1/transformer", dict(VALID["/v1/transformer"], gpu_peak_flops=1e-300,
                                     mfu=1e-300), "gpu_peak_flops"),
        ]
        for path, body, field in cases:
            r = self.server.post(path, body)
            self.assertEqual(r.status, 422, "%s %s" % (path, r.body))
            self.assertEqual(r.json()["error"]["field"], field, r.body)
        # The same members at ordinary values are all there.
        r = self.server.post("/v1/goodput/evaluate", VALID["/v1/goodput/evaluate"])
        self.assertIn("throughput_samples_per_s", r.json())
        r = self.server.post("/v1/transformer", dict(VALID["/v1/transformer"],
                                                     measured_step_time_s=1))
        self.assertIn("mfu", r.json())

    def test_null_is_not_absent(self):
        """null where the schema does not allow it is a 422 naming the member (doc/api.md: leaving
        a member out is how a request takes its default). These optional objects and lists took
        null as absent: a 200 without the run's cost, the LoRA, the disaggregation asked for."""
        serving = {"model": "llama3-8B", "system": "h100_sxm",
                   "serving": {"input_tokens": 128, "output_tokens": 128}}
        calibrate = {"system": "h100_sxm", "gemms": [{"m": 4096, "n": 4096, "k": 4096,
                                                      "datatype": "bfloat16", "tflops": 600}]}
        cases = [
            ("/v1/estimate", VALID["/v1/estimate"], [], "training"),
            ("/v1/transformer", VALID["/v1/transformer"], [], "lora"),
            ("/v1/transformer", VALID["/v1/transformer"], [], "training"),
            ("/v1/goodput/evaluate", VALID["/v1/goodput/evaluate"], [], "accum_steps"),
            ("/v1/inference", serving, ["serving"], "disaggregated"),
            ("/v1/inference", serving, ["serving"], "speculative"),
            ("/v1/calibrate", calibrate, [], "runs"),
            ("/v1/calibrate", calibrate, [], "collectives"),
        ]
        for path, valid, parent, key in cases:
            self.assertEqual(self.server.post(path, valid).status, 200, path)
            body = copy.deepcopy(valid)
            obj = body
            for k in parent:
                obj = obj[k]
            obj[key] = None
            field = ".".join(parent + [key])
            with self.subTest(path=path, field=field):
                r = self.send(path, body)
                self.assertEqual(r.status, 422, r.body)
                self.assertEqual(r.json()["error"]["field"], field, r.body)
                self.assertIn("null", r.json()["error"]["message"])
        # where the schema allows null (an open bound of goodput's atomic_bsz_range) it is taken
        body = dict(VALID["/v1/goodput/optimize"], atomic_bsz_range=[None, 64])
        self.assertEqual(self.send("/v1/goodput/optimize", body).status, 200)

    def test_zero_without_data_parallelism_names_the_member_given(self):
        """A ZeRO stage on one data-parallel rank is refused naming what the request gave:
        zero_stage 2 was blamed on execution.optimizer_sharding, a member it did not have."""
        e = {"num_procs": 8, "tensor_par": 8, "data_par": 1, "batch_size": 8}
        for extra, field in (({"zero_stage": 2}, "zero_stage"), ({"zero_stage": 1}, "zero_stage"),
                             ({"optimizer_sharding": True}, "optimizer_sharding"),
                             ({"zero_stage": 3, "optimizer_sharding": True}, "zero_stage")):
            body = {"model": "llama3-8B", "system": "h100_sxm", "execution": dict(e, **extra)}
            with self.subTest(extra=extra):
                r = self.send("/v1/estimate", body)
                self.assertEqual(r.status, 422, r.body)
                self.assertEqual(r.json()["error"]["field"], "execution." + field, r.body)
        grid = {"kind": "grid", "base": {"model": "llama3-8B", "system": "h100_sxm",
                                         "execution": dict(e, zero_stage=2)},
                "axes": {"execution.batch_size": [8, 16]}}
        r = self.send("/v1/sweep", grid)
        self.assertEqual((r.status, r.json()["error"]["field"]),
                         (422, "base.execution.zero_stage"), r.body)

    def test_content_encoding(self):
        body = json.dumps(VALID["/v1/transformer"])
        for ce in ["gzip", "deflate", "br", "identity, gzip"]:
            r = self.send("/v1/transformer", body, headers={"Content-Type": "application/json",
                                                            "Content-Encoding": ce})
            self.assertEqual(r.status, 415, ce)
            self.assertEqual(r.json()["error"]["field"], "Content-Encoding", r.body)
        r = self.server.request("PUT", "/v1/presets/systems/x", body="{}",
                                headers={"Content-Encoding": "gzip"})
        self.assertEqual((r.status, r.json()["error"]["field"]), (415, "Content-Encoding"))
        for ce in ["identity", "IDENTITY", " identity "]:
            r = self.send("/v1/transformer", body, headers={"Content-Encoding": ce})
            self.assertEqual(r.status, 200, ce)

    def test_query_parameters(self):
        """A parameter a resource does not read, or one given twice, is a 422 naming it: never
        silently ignored (doc/api.md lists each resource's)."""
        sid = self.server.post("/v1/sweep", VALID["/v1/sweep"]).json()["id"]
        refused = [
            ("/v1/sweep/%s/results?bogus=1" % sid, "bogus"),
            ("/v1/sweep/%s/results?limit=1&limit=2" % sid, "limit"),
            ("/v1/sweep/%s/points?limit=-5&offset=abc" % sid, "limit"),
            ("/v1/sweep/%s?offset=1" % sid, "offset"),
            ("/v1/validation?bogus=1", "bogus"),
            ("/v1/validation?inference=true&inference=false", "inference"),
            ("/v1/sweeps?status=bogus", "status"),
            ("/v1/presets?x=1", "x"),
            ("/healthz?x", "x"),
            # a parameter with no "=" is not left out: it was the resource's default, a 200
            ("/v1/sweep/%s/results?offset" % sid, "offset"),
            ("/v1/sweep/%s/results?format" % sid, "format"),
            ("/v1/sweeps?limit", "limit"),
            ("/v1/validation?inference", "inference"),
        ]
        for path, field in refused:
            r = self.server.get(path)
            self.assertEqual(r.status, 422, "%s: %s" % (path, r.body))
            self.assertEqual(r.json()["error"]["field"], field, r.body)
        r = self.server.post("/v1/transformer?foo=1", VALID["/v1/transformer"])
        self.assertEqual((r.status, r.json()["error"]["field"]), (422, "foo"))
        for path in ["/v1/sweep/%s/results?format=csv&offset=0&limit=100" % sid,
                     "/v1/sweeps?limit=1", "/v1/sweep/%s/points" % sid, "/v1/sweep/" + sid]:
            self.assertEqual(self.server.get(path).status, 200, path)

    def test_path_traversal(self):
        for p in ["/../README.md", "/static/../README.md", "/..%2fREADME.md", "/%2e%2e/%2e%2e/etc/passwd",
                  "/../../../../etc/passwd", "/./../CMakeLists.txt", "//etc/passwd"]:
            r = self.server.get(p)
            self.assertIn(r.status, (400, 404), p)
            self.assertNotIn("cmake_minimum_required", r.body)
            self.assertNotIn("root:", r.body)


if __name__ == "__main__":
    unittest.main(verbosity=2)

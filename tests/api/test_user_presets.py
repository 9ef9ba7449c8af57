"""test_user_presets.py — user system presets end to end: PUT a calibrated system, see it listed,
use it by name in /v1/estimate, a search sweep and a grid axis, find it again after a restart on
the same database, replace it and get a new answer (never a stale cached one, from the hot map
of exact bytes or from the result table), DELETE it; and the refusals: a bad system (422 naming
the field), a built-in name (409), a bad name (422), a large body (413), a missing or wrong
token (401)."""
import json
import tempfile
import shutil
import unittest

from harness import Server, validate
from test_sweeps import wait_for

EXECUTION = {"num_procs": 1024, "tensor_par": 8, "pipeline_par": 8, "data_par": 16,
             "batch_size": 1024, "microbatch_size": 1, "pipeline_par_net": 1, "data_par_net": 1,
             "tensor_par_comm_type": "rs_ag", "optimizer_sharding": True}
ESTIMATE = {"model": "gpt3-175B", "system": "our-a100", "execution": EXECUTION}
SEARCH = {"kind": "optimal_execution", "model": "megatron-126M", "system": "our-a100",
          "num_procs": 8, "max_batch_size": 64, "datatype": "float16", "options": {"top_n": 3}}
CALIBRATE = {"system": "a100_80g",
             "gemms": [{"m": 8192, "n": 8192, "k": 8192, "datatype": "float16", "tflops": 230},
                       {"m": 4096, "n": 4096, "k": 1024, "datatype": "float16", "tflops": 190}]}
URL = "/v1/presets/systems/our-a100"


def user_names(server):
    r = server.get("/v1/presets")
    assert r.status == 200, r.body
    validate(r.json(), "presets.response.json")
    return [s["name"] for s in r.json()["systems"] if s.get("user")]


class UserPresets(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="fathom-presets-")
        self.server = Server(db_dir=self.dir).start()

    def tearDown(self):
        try:
            # A clean exit: under the sanitizers a leak makes it non-zero.
            self.assertEqual(self.server.stop(), 0, self.server.report())
        finally:
            self.server.kill()
            shutil.rmtree(self.dir, ignore_errors=True)

    def put(self, system, url=URL, **kw):
        return self.server.request("PUT", url, body=system, **kw)

    def step_time(self, body=ESTIMATE):
        r = self.server.post("/v1/estimate", body)
        self.assertEqual(r.status, 200, r.body)
        return r.json()["summary"]["step_time_s"], r.header("X-Fathom-Cache")

    def test_lifecycle(self):
        s = self.server
        calibrated = s.post("/v1/calibrate", CALIBRATE)
        self.assertEqual(calibrated.status, 200, calibrated.body)
        system = calibrated.json()["system"]

        r = self.put(system)
        self.assertEqual(r.status, 201, r.body)
        validate(r.json(), "preset_put.response.json")
        self.assertEqual(r.header("Location"), URL)
        self.assertEqual(r.json()["system"], system)
        self.assertEqual(user_names(s), ["our-a100"])
        self.assertEqual(s.get(URL).json(), system)

        # By name, the estimate is the object's estimate, under the object's hash.
        by_name, _ = self.step_time()
        by_object, cache = self.step_time(dict(ESTIMATE, system=system))
        self.assertEqual(by_name, by_object)
        self.assertEqual(cache, "hit")
        builtin, _ = self.step_time(dict(ESTIMATE, system="a100_80g"))
        self.assertGreater(by_name, builtin)  # calibrated GEMMs are slower than Calculon's 0.95

        # In a search sweep, by name.
        sid = s.post("/v1/sweep", SEARCH).json()["id"]
        doc = wait_for(s, sid)
        self.assertEqual(doc["status"], "done", doc)
        self.assertEqual(len(doc["best"]), 3)

        # Survives a restart on the same database.
        self.assertEqual(s.stop(), 0)
        s = self.server = Server(db_dir=self.dir).start()
        self.assertEqual(user_names(s), ["our-a100"])
        self.assertEqual(self.step_time()[0], by_name)

        # Replaced: the same bytes get the new system's answer, even after being served twice
        # (a body seen twice would enter the hot map of exact bytes if it named a built-in).
        self.assertEqual(self.step_time()[1], "hit")
        faster = json.loads(json.dumps(system))
        faster["matrix"]["float16"]["tflops"] *= 2
        r = self.put(faster)
        self.assertEqual(r.status, 200, r.body)
        self.assertFalse(r.json()["created"])
        replaced, cache = self.step_time()
        self.assertLess(replaced, by_name)
        self.assertEqual(cache, "miss")
        # ... and the same sweep body is a new sweep.
        self.assertNotEqual(s.post("/v1/sweep", SEARCH).json()["id"], sid)

        # Deleted: gone from the list and by name.
        r = s.request("DELETE", URL)
        self.assertEqual(r.status, 200, r.body)
        validate(r.json(), "preset_delete.response.json")
        self.assertEqual(user_names(s), [])
        self.assertEqual(s.get(URL).status, 404)
        r = s.post("/v1/estimate", ESTIMATE)
        self.assertEqual(r.status, 422, r.body)
        self.assertEqual(r.json()["error"]["field"], "system")
        self.assertEqual(s.request("DELETE", URL).status, 404)

    def test_grid_axis_by_name(self):
        s = self.server
        system = s.get("/v1/presets/systems/a100_80g").json()
        system["matrix"]["float16"]["tflops"] = 624
        self.assertEqual(self.put(system).status, 201)
        grid = {"kind": "grid", "base": {"model": "gpt3-175B", "system": "a100_80g", "execution": dict(
            EXECUTION, num_procs=64, data_par=1, batch_size=64, optimizer_sharding=False)},
            "axes": {"system": ["a100_80g", "our-a100"]}}
        r = s.post("/v1/sweep", grid)
        self.assertEqual(r.status, 202, r.body)
        self.assertEqual(wait_for(s, r.json()["id"])["status"], "done")
        points = s.get("/v1/sweep/%s/results" % r.json()["id"]).json()["points"]
        times = [p["summary"]["step_time_s"] for p in points]
        self.assertLess(times[1], times[0])
        r = s.post("/v1/sweep", dict(grid, axes={"system": ["a100_80g", "nope"]}))
        self.assertEqual(r.status, 422, r.body)
        self.assertEqual(r.json()["error"]["field"], "axes.system[1]")

    def test_price_and_power_kept(self):
        """A preset's price and power are stored and given back, so a plan can bill it; a
        calibrated system keeps its base's (a100_80g: $1.79, 0.4 kW, presets/systems)."""
        s = self.server
        calibrated = s.post("/v1/calibrate", CALIBRATE)
        self.assertEqual(calibrated.status, 200, calibrated.body)
        system = calibrated.json()["system"]
        self.assertEqual(system["price_per_gpu_hour"], 1.79)
        self.assertEqual(system["power_per_gpu_kw"], 0.4)
        system.update(price_per_gpu_hour=99, power_per_gpu_kw=0.7)
        r = self.put(system)
        self.assertEqual(r.status, 201, r.body)
        self.assertEqual(r.json()["system"]["price_per_gpu_hour"], 99)
        got = s.get(URL).json()
        self.assertEqual((got["price_per_gpu_hour"], got["power_per_gpu_kw"]), (99, 0.7))
        plan = {"kind": "plan", "model": "megatron-126M", "tokens": 1e9, "systems": ["our-a100"],
                "gpu_counts": [8]}
        r = s.post("/v1/sweep", plan)
        self.assertEqual(r.status, 202, r.body)
        self.assertEqual(wait_for(s, r.json()["id"])["status"], "done")
        point = s.get("/v1/sweep/%s/results" % r.json()["id"]).json()["points"][0]
        self.assertEqual(point["status"], 200, point)
        self.assertEqual((point["price_per_gpu_hour"], point["power_per_gpu_kw"]), (99, 0.7))
        # Without a price the preset still stores, and the plan asks for one.
        del system["price_per_gpu_hour"]
        self.assertEqual(self.put(system).status, 200)
        self.assertNotIn("price_per_gpu_hour", s.get(URL).json())
        r = s.post("/v1/sweep", plan)
        self.assertEqual(r.status, 422, r.body)
        self.assertEqual(r.json()["error"]["field"], "systems[0].price_per_gpu_hour")

    def test_serving_members_kept(self):
        """A preset stored from b200 keeps what only serving reads (presets/systems/b200.json:
        float4_tflops 9000, float4_efficiency 0.853, decode_attention_efficiency 0.729), so a
        serving estimate on it equals one on b200 itself: dropped, FP4 weights had no tensor
        rate to run at."""
        s = self.server
        url = "/v1/presets/systems/our-b200"
        r = self.put({"preset": "b200"}, url=url)
        self.assertEqual(r.status, 201, r.body)
        got = s.get(url).json()
        self.assertEqual((got["float4_tflops"], got["float4_efficiency"],
                          got["decode_attention_efficiency"]), (9000, 0.853, 0.729))
        serve = {"model": "llama3-8B", "serving": {"weights_datatype": "fp4", "input_tokens": 1000,
                                                    "output_tokens": 100}}
        ours = s.post("/v1/inference", dict(serve, system="our-b200"))
        theirs = s.post("/v1/inference", dict(serve, system="b200"))
        self.assertEqual(ours.status, 200, ours.body)
        self.assertEqual(theirs.status, 200, theirs.body)
        self.assertEqual(ours.json()["output_tokens_per_s_per_gpu"],
                         theirs.json()["output_tokens_per_s_per_gpu"])
        r = self.put({"preset": "b200", "float4_efficiency": 2}, url=url)
        self.assertEqual(r.status, 422, r.body)
        self.assertEqual(r.json()["error"]["field"], "float4_efficiency")
        self.assertEqual(s.request("DELETE", url).status, 200)

    def test_refusals(self):
        s = self.server
        system = s.get("/v1/presets/systems/a100_80g").json()
        bad = json.loads(json.dumps(system))
        bad["mem1"]["GiB"] = -1
        r = self.put(bad)
        self.assertEqual(r.status, 422, r.body)
        self.assertEqual(r.json()["error"]["code"], "invalid_field")
        self.assertEqual(r.json()["error"]["field"], "mem1.GiB")
        bad = json.loads(json.dumps(system))
        bad["networks"][1]["surprise"] = 1
        r = self.put(bad)
        self.assertEqual(r.status, 422, r.body)
        self.assertEqual(r.json()["error"]["field"], "networks[1].surprise")
        r = self.put('"a100_80g"')
        self.assertEqual(r.status, 422, r.body)
        r = self.put("{not json")
        self.assertEqual(r.status, 400, r.body)

        for name in ("a100_80g", "h100_sxm"):
            for method in ("PUT", "DELETE"):
                r = s.request(method, "/v1/presets/systems/" + name, body=system)
                self.assertEqual(r.status, 409, r.body)
                self.assertEqual(r.json()["error"]["code"], "conflict")
                self.assertIn("built-in", r.json()["error"]["message"])
        self.assertEqual(s.get("/v1/presets/systems/a100_80g").json(), system)

        for name in ("Big", "-x", ".x", "a%20b", "a" * 65, "caf%C3%A9", "a%2Fb"):
            r = self.put(system, url="/v1/presets/systems/" + name)
            self.assertEqual(r.status, 422, (name, r.body))
            self.assertEqual(r.json()["error"]["field"], "name")
        self.assertEqual(self.put(system, url="/v1/presets/systems/" + "a" * 64).status, 201)
        self.assertEqual(self.put(system, url="/v1/presets/systems/x_1.2-b").status, 201)

        r = self.put(dict(system, pad="x" * 70000))
        self.assertEqual(r.status, 413, r.body)
        self.assertEqual(user_names(s), ["a" * 64, "x_1.2-b"])

    def test_token(self):
        self.server.kill()
        s = self.server = Server(db_dir=self.dir, env={"FATHOM_API_TOKEN": "s3cret"}).start()
        system = s.get("/v1/presets/systems/a100_80g").json()
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret"}):
            r = self.put(system, headers=headers)
            self.assertEqual(r.status, 401, r.body)
            self.assertEqual(r.json()["error"]["code"], "unauthorized")
            self.assertEqual(r.header("WWW-Authenticate"), 'Bearer realm="fathom"')
        ok = {"Authorization": "Bearer s3cret"}
        self.assertEqual(self.put(system, headers=ok).status, 201)
        # RFC 9110 11.1: the scheme is case-insensitive ("bearer" was refused with 401).
        self.assertEqual(self.put(system, headers={"Authorization": "bearer s3cret"}).status, 200)
        self.assertEqual(s.request("DELETE", URL).status, 401)
        # Reading and using need no token.
        self.assertEqual(user_names(s), ["our-a100"])
        self.assertEqual(s.post("/v1/estimate", ESTIMATE).status, 200)
        self.assertEqual(s.request("DELETE", URL, headers=ok).status, 200)


if __name__ == "__main__":
    unittest.main(verbosity=2)

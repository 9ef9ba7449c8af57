"""test_models.py — the scaling-law and goodput endpoints through a real fathomd: the seeds'
printed figures, the response schemas, caching and a few refusals."""
import os
import unittest

from harness import SOURCE, ServerTestCase, validate

PERF = {"alpha_c": 0.1, "beta_c": 0.01, "alpha_n": 0.05, "beta_n": 0.01, "alpha_r": 0.02,
        "beta_r": 0.004, "gamma": 1.5}
GRAD = {"sqr": 0.01, "var": 0.1}


class Scaling(ServerTestCase):
    def test_thirty_dollars_of_v100(self):
        # The calculator's own example: $30 on a V100 in O0.
        r = self.server.post("/v1/scaling", {"gpu": "V100", "amp_mode": "O0", "dollars": 30})
        self.assertEqual(r.status, 200, r.body)
        out = r.json()
        self.assertAlmostEqual(out["width"], 1042.95, delta=0.01)
        self.assertAlmostEqual(out["loss"], 3.134, delta=0.001)
        self.assertAlmostEqual(out["hours"], 14.963, delta=0.001)
        self.assertEqual([out["optimal_shape"]["depth"], out["optimal_shape"]["width"]], [8, 1056])
        self.assertEqual([out["alternate_shape"]["depth"], out["alternate_shape"]["width"]], [13, 824])
        validate(out, "scaling.response.json")
        self.assertEqual(self.server.post("/v1/scaling", {"gpu": "V100", "amp_mode": "O0", "dollars": 30})
                         .header("X-Fathom-Cache"), "hit")

    def test_chinchilla(self):
        r = self.server.post("/v1/scaling", {"law": "chinchilla", "flops": 1e21})
        self.assertEqual(r.status, 200, r.body)
        out = r.json()
        # Epoch AI's fit: 2.78e9 parameters on 6.0e10 tokens (test_scaling_core.c, by hand)
        self.assertEqual(out["fit"], "besiroglu2024")
        self.assertAlmostEqual(out["params"] / 2.7785e9, 1, delta=2e-4)
        self.assertAlmostEqual(out["tokens_per_param"], 21.59, delta=0.01)

    def test_fit_reproduces_the_calculator(self):
        with open(os.path.join(SOURCE, "tests", "data", "scaling", "loss_vs_compute.csv")) as f:
            csv_text = f.read()
        r = self.server.post("/v1/scaling/fit", {"csv": csv_text})
        self.assertEqual(r.status, 200, r.body)
        out = r.json()
        for got, want in zip([out["loss_fit"][k] for k in "abc"],
                             [28.678776896926124, 0.10858627469751919, 1.9472408621762696]):
            self.assertAlmostEqual(got / want, 1.0, delta=1e-4)
        for got, want in zip([out["param_fit"][k] for k in "def"],
                             [0.04048254990660259, 0.7211575502975575, -45459.5300801673]):
            self.assertAlmostEqual(got / want, 1.0, delta=1e-4)
        validate(out, "scaling_fit.response.json")

    def test_refusals(self):
        cases = [({"gpu": "V100", "amp_mode": "O0", "dollars": -1}, "dollars"),
                 ({"gpu": "V100", "amp_mode": "O0", "width": 8}, "width"),
                 ({"gpu": "H9000", "amp_mode": "O0", "hours": 1}, "gpu"),
                 ({"gpu": "V100", "amp_mode": "O7", "hours": 1}, "amp_mode")]
        for body, field in cases:
            with self.subTest(field=field):
                self.assertError(self.server.post("/v1/scaling", body), 422, "invalid_field", field)
        # Found by fuzzing: a fit that makes the hours infinite used to abort the process in GSL.
        r = self.server.post("/v1/scaling", {"gpu": "V100", "hours": 24, "co2_kg_per_kwh": 0.1,
                                             "loss_fit": {"a": 40, "b": 0.1, "c": 2},
                                             "param_fit": {"d": 0.02, "e": 0.01, "f": 23.145619}})
        self.assertEqual(r.status, 422, r.body)
        self.assertEqual(self.server.get("/healthz").status, 200)
        # Found by fuzzing: a run's derived parameter count past the limit is refused at once,
        # naming the points it comes from.
        r = self.server.post("/v1/scaling/fit", {"runs": [{"points": [[1e27, 4.0]]}]})
        self.assertError(r, 422, "invalid_field", "runs[0].points")
        r = self.server.post("/v1/scaling", {"gpu": "V100", "amp_mode": "O0", "hours": 1, "dollars": 2})
        self.assertEqual(r.status, 422)
        self.assertIn(r.json()["error"]["field"], ("hours", "dollars"))


class Goodput(ServerTestCase):
    def test_evaluate_optimize_fit(self):
        ev = {"perf_params": PERF, "grad_params": GRAD, "init_batch_size": 32, "num_nodes": 1,
              "num_replicas": 4, "atomic_bsz": 32, "accum_steps": 0}
        r = self.server.post("/v1/goodput/evaluate", ev)
        self.assertEqual(r.status, 200, r.body)
        validate(r.json(), "goodput_evaluate.response.json")
        op = {"perf_params": PERF, "grad_params": GRAD, "init_batch_size": 32, "num_nodes": [1, 2],
              "num_replicas": [2, 8], "max_batch_size": 1024, "curve": True}
        r = self.server.post("/v1/goodput/optimize", op)
        self.assertEqual(r.status, 200, r.body)
        validate(r.json(), "goodput_optimize.response.json")
        fit = {"measurements": [{"num_nodes": 1, "num_replicas": n, "atomic_bsz": b,
                                 "accum_step_time": 0.01 + 0.001 * b,
                                 "optim_step_time": 0.012 + 0.001 * b + 0.004 * n}
                                for n in (1, 2, 4) for b in (8, 16, 32)]}
        r = self.server.post("/v1/goodput/fit", fit)
        self.assertEqual(r.status, 200, r.body)
        validate(r.json(), "goodput_fit.response.json")
        bad = dict(ev, num_nodes=8)
        self.assertError(self.server.post("/v1/goodput/evaluate", bad), 422, "invalid_field")
        self.assertError(self.server.post("/v1/goodput/fit", {"measurements": []}), 422,
                         "invalid_field", "measurements")


if __name__ == "__main__":
    unittest.main(verbosity=2)

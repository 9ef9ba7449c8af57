"""test_openapi.py — /openapi.json documents every route fathomd answers, with its request and
response schemas, and the answers match them.

The routes are read from the server's own table (server/routes.c, server/routes_extra.h, the
sub-resources routes_sweep_one serves, and the estimate endpoints /v1/version lists), so a route
added there without a document entry fails here."""
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from harness import SOURCE, ServerTestCase, validate
from test_sweeps import GRID, SMALL, wait_for

ROW = re.compile(r'\{"(GET|POST|PUT|DELETE|PATCH)",\s*"([^"]+)",\s*([01]),\s*"([^"]+)"')


def source(*parts):
    with open(os.path.join(SOURCE, *parts)) as f:
        return f.read()


def route_table():
    """(method, OpenAPI path) of every row of the route table."""
    rows = ROW.findall(source("server", "routes.c")) + ROW.findall(source("server", "routes_extra.h"))
    assert len(rows) >= 10, rows
    out = set()
    for method, _path, _prefix, label in rows:
        if "{kind}" in label:  # h_preset_one: models/<name> or systems/<name>
            out |= {(method, label.replace("{kind}", k)) for k in ("models", "systems")}
        else:
            out.add((method, label))
    # routes_sweep_one also serves <id>/<sub> for the sub-resources it compares against
    for sub in re.findall(r'strcmp\(slash, "(/[a-z]+)"\)', source("server", "sweeps_http.c")):
        out.add(("GET", "/v1/sweep/{id}" + sub))
    return out


class OpenApi(ServerTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.doc = cls.server.get("/openapi.json").json()

    def operation(self, method, path):
        self.assertTrue(path in self.doc["paths"], "%s %s is served but not documented" % (method, path))
        op = self.doc["paths"][path].get(method.lower())
        self.assertIsNotNone(op, "%s %s is served but not documented" % (method, path))
        return op

    def test_every_route_is_documented_with_schemas(self):
        routes = route_table()
        routes |= {("POST", p) for p in self.server.get("/v1/version").json()["estimate_endpoints"]}
        self.assertIn(("POST", "/v1/sweep"), routes)
        self.assertIn(("GET", "/v1/sweep/{id}/results"), routes)
        for method, path in sorted(routes):
            with self.subTest(route="%s %s" % (method, path)):
                op = self.operation(method, path)
                ok = op["responses"].get("200") or op["responses"].get("202")
                schema = next(iter(ok["content"].values()))["schema"]
                self.assertTrue(schema, "%s %s has no response schema" % (method, path))
                if method == "POST":
                    body = op["requestBody"]["content"]["application/json"]["schema"]
                    self.assertTrue(body.get("$ref"), "%s %s has no request schema" % (method, path))
                for ref in [schema.get("$ref")] + ([body["$ref"]] if method == "POST" else []):
                    if ref:
                        self.assertIn(ref.rsplit("/", 1)[1], self.doc["components"]["schemas"])
        documented = {(m.upper(), p) for p, ops in self.doc["paths"].items() for m in ops}
        self.assertEqual(documented - routes, set(), "documented but not served")

    def lint(self, path):
        return subprocess.run(["node", os.path.join(SOURCE, "tests", "openapi", "lint.mjs"), path],
                              capture_output=True, text=True, timeout=120)

    def test_document_passes_an_openapi_31_validator(self):
        """@seriousme/openapi-schema-validator (web/'s devDependencies) against the served
        document; a document broken on purpose must fail it."""
        if not shutil.which("node") or not shutil.which("npm"):
            self.skipTest("node and npm are missing (scripts/test.d/50-browser.sh installs them)")
        build = subprocess.run([os.path.join(SOURCE, "scripts", "build_web.sh")], capture_output=True,
                               text=True, timeout=600)
        self.assertEqual(build.returncode, 0, build.stderr)
        with tempfile.TemporaryDirectory() as tmp:
            good = os.path.join(tmp, "openapi.json")
            with open(good, "w") as f:
                json.dump(self.doc, f)
            r = self.lint(good)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("valid OpenAPI 3.1", r.stdout)
            broken = json.loads(json.dumps(self.doc))
            broken["paths"]["/v1/sweeps"]["get"]["responses"]["200"].pop("description")
            broken["paths"]["/v1/version"]["get"]["operationId"] = "getSweeps"
            with open(good, "w") as f:
                json.dump(broken, f)
            r = self.lint(good)
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertIn("getSweeps twice", r.stderr)

    def test_document_says_what_a_dashboard_needs(self):
        paths = self.doc["paths"]
        results = paths["/v1/sweep/{id}/results"]["get"]
        self.assertEqual({p["name"] for p in results["parameters"] if p["in"] == "query"},
                         {"format", "offset", "limit"})
        self.assertIn("text/csv", results["responses"]["200"]["content"])
        for path in ("/v1/sweep/{id}", "/v1/sweep/{id}/results", "/v1/results/{hash}"):
            self.assertIn("304", paths[path]["get"]["responses"], path)
            self.assertIn("ETag", paths[path]["get"]["responses"]["200"]["headers"], path)
        self.assertEqual(self.doc["components"]["securitySchemes"]["bearerToken"]["scheme"], "bearer")
        self.assertEqual(paths["/v1/sweep"]["post"]["security"], [{"bearerToken": []}, {}])
        self.assertIn("409", paths["/v1/sweep/{id}"]["delete"]["responses"])
        self.assertNotIn("security", paths["/v1/sweep/{id}"]["get"])
        ids = [op["operationId"] for ops in paths.values() for op in ops.values()]
        self.assertEqual(len(ids), len(set(ids)))
        self.assertIn("postModelsFromHfConfig", ids)

    def test_sweep_requests_match_the_sweep_schema(self):
        validate(SMALL, "sweep.request.json")
        validate(GRID, "sweep.request.json")

    def test_answers_match_their_schemas(self):
        r = self.server.post("/v1/sweep", GRID)
        self.assertEqual(r.status, 202, r.body)
        validate(r.json(), "sweep.response.json")
        sid = r.json()["id"]
        wait_for(self.server, sid)
        search = self.server.post("/v1/sweep", SMALL).json()["id"]
        wait_for(self.server, search)
        est = self.server.post("/v1/estimate", {"model": "gpt3-175B", "system": "a100_80g",
                                                "execution": {"num_procs": 8, "batch_size": 8}})
        checks = [("/healthz", "health.response.json"), ("/readyz", "health.response.json"),
                  ("/v1/presets", "presets.response.json"),
                  ("/v1/results/" + est.header("ETag").strip('"'), "result.response.json"),
                  ("/v1/sweeps", "sweeps.response.json"),
                  ("/v1/sweep/" + sid + "/results", "sweep_results.response.json"),
                  ("/v1/sweep/" + search + "/results", "sweep_results.response.json"),
                  ("/v1/sweep/" + search, "sweep_status.response.json"),
                  ("/v1/validation", "validation.response.json")]
        for path, schema in checks:
            with self.subTest(path=path):
                got = self.server.get(path)
                self.assertEqual(got.status, 200, got.body)
                validate(got.json(), schema)


if __name__ == "__main__":
    unittest.main()

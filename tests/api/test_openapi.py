"""test_openapi.py — /openapi.json documents every route fathomd answers, with its request and
response schemas, and the answers match them.

The routes are read from the server's own table (server/routes.c, server/routes_extra.h, the
sub-resources routes_sweep_one serves, and the estimate endpoints /v1/version lists), so a route
added there without a document entry fails here."""
import os
import re
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

"""test_dashboard.py — the API as a dashboard developer meets it with curl and from a browser on
another origin: integers past 2^53 in real fields, errors that name their cause and their fix,
network defaults a planner expects, CORS preflights and allow-lists, conditional GETs (304),
and a search's CSV that says what it holds."""
import os
import unittest

from harness import SOURCE, ServerTestCase
from test_sweeps import SMALL, wait_for

EST = {"model": "gpt3-175B", "system": "a100_80g"}


class LargeIntegers(ServerTestCase):
    def test_integer_beyond_int64_in_a_real_field_is_the_same_as_its_exponent_form(self):
        as_int = self.server.post("/v1/scaling", '{"law":"chinchilla","flops":100000000000000000000}')
        as_exp = self.server.post("/v1/scaling", '{"law":"chinchilla","flops":1e20}')
        self.assertEqual(as_int.status, 200, as_int.body)
        self.assertEqual(as_exp.status, 200, as_exp.body)
        self.assertEqual(as_int.json(), as_exp.json())
        # Canonical hashing: the same value is the same request, whichever way it is written.
        self.assertEqual(as_int.header("ETag"), as_exp.header("ETag"))
        self.assertEqual(as_exp.header("X-Fathom-Cache"), "hit")

    def test_integer_beyond_2_53_in_a_real_field(self):
        r = self.server.post("/v1/scaling", '{"law":"chinchilla","flops":1000000000000000000}')
        self.assertEqual(r.status, 200, r.body)
        e = self.server.post("/v1/scaling", '{"law":"chinchilla","flops":1e18}')
        self.assertEqual(r.header("ETag"), e.header("ETag"))

    def test_counts_keep_their_2_53_limit(self):
        for digits in ("9007199254740993", "100000000000000000000"):
            body = '{"model":"gpt3-175B","system":"a100_80g","execution":{"batch_size":%s}}' % digits
            r = self.server.post("/v1/estimate", body)
            err = self.assertError(r, 422, "invalid_field", "execution.batch_size")
            self.assertIn("2^53", err["message"])

    def test_long_integer_inside_a_string_is_left_alone(self):
        r = self.server.post("/v1/scaling", '{"law":"chinchilla","flops":1e20,"x":"100000000000000000000"}')
        self.assertError(r, 422, "invalid_field", "x")

    def test_malformed_json_keeps_the_clients_column(self):
        r = self.server.post("/v1/scaling", '{"law":"chinchilla","flops":100000000000000000000,}')
        err = self.assertError(r, 400, "invalid_json")
        self.assertEqual(err["line"], 1)
        self.assertEqual(err["column"], 51)  # the '}' after the comma, not the long integer


class ErrorsNameTheirCause(ServerTestCase):
    def test_defaults_put_node_spanning_groups_on_the_node_spanning_tier(self):
        r = self.server.post("/v1/estimate", dict(EST, execution={"num_procs": 1024, "batch_size": 1024}))
        self.assertEqual(r.status, 200, r.body)
        got = self.server.get("/v1/results/" + r.header("ETag").strip('"')).json()["request"]["execution"]
        self.assertEqual((got["tensor_par_net"], got["pipeline_par_net"], got["data_par_net"]), (0, 0, 1))

    def test_defaults_fill_tier0_first(self):
        ex = {"num_procs": 1024, "tensor_par": 8, "pipeline_par": 8, "batch_size": 1024}
        r = self.server.post("/v1/estimate", dict(EST, execution=ex))
        self.assertEqual(r.status, 200, r.body)
        got = self.server.get("/v1/results/" + r.header("ETag").strip('"')).json()["request"]["execution"]
        self.assertEqual((got["tensor_par_net"], got["pipeline_par_net"], got["data_par_net"]), (0, 1, 1))

    def test_given_nets_are_kept_and_the_error_names_the_net_field_and_the_fix(self):
        ex = {"num_procs": 1024, "batch_size": 1024, "data_par_net": 0}
        r = self.server.post("/v1/estimate", dict(EST, execution=ex))
        err = self.assertError(r, 422, "infeasible_execution", "execution.data_par")
        self.assertIn("execution.data_par_net=0", err["message"])
        self.assertIn("larger tier", err["message"])

    def test_datatype_is_checked_before_the_networks(self):
        ex = {"num_procs": 1024, "batch_size": 1024, "datatype": "bfloat16", "data_par_net": 0}
        r = self.server.post("/v1/estimate", dict(EST, execution=ex))
        self.assertError(r, 422, "invalid_field", "execution.datatype")


class EmptyMemory(ServerTestCase):
    def system(self, mem1, mem2):
        sys = self.server.get("/v1/presets/systems/a100_80g").json()
        sys["mem1"]["GiB"], sys["mem2"]["GiB"] = mem1, mem2
        return dict(EST, system=sys, execution={"num_procs": 8, "batch_size": 8, "tensor_par": 8,
                                                "weight_offload": True})

    def test_tier1_of_zero_is_refused_naming_the_field(self):
        r = self.server.post("/v1/estimate", self.system(0, 256))
        err = self.assertError(r, 422, "invalid_field", "system.mem1.GiB")
        self.assertIn("greater than 0", err["message"])

    def test_an_empty_tier2_violation_has_no_infinite_ratio(self):
        r = self.server.post("/v1/estimate", self.system(80, 0))
        self.assertEqual(r.status, 200, r.body)
        msgs = [v["message"] for v in r.json()["violations"]]
        self.assertTrue(msgs, r.body)
        for m in msgs:
            self.assertNotIn("inf", m)


class Cors(ServerTestCase):
    server_args = ("--cors-origins", "https://dash.example.com, http://localhost:3000")

    def test_preflight_from_an_allowed_origin(self):
        r = self.server.request("OPTIONS", "/v1/estimate", headers={
            "Origin": "https://dash.example.com", "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type"})
        self.assertEqual(r.status, 204, r.body)
        self.assertEqual(r.header("Access-Control-Allow-Origin"), "https://dash.example.com")
        self.assertIn("POST", r.header("Access-Control-Allow-Methods"))
        self.assertIn("Content-Type", r.header("Access-Control-Allow-Headers"))
        r = self.server.request("OPTIONS", "/v1/sweep/abc", headers={"Origin": "http://localhost:3000"})
        self.assertEqual(r.status, 204)
        self.assertIn("DELETE", r.header("Access-Control-Allow-Methods"))

    def test_answers_carry_the_origin_and_expose_the_etag(self):
        r = self.server.post("/v1/estimate", dict(EST, execution={"num_procs": 8, "batch_size": 8}),
                             headers={"Origin": "https://dash.example.com"})
        self.assertEqual(r.header("Access-Control-Allow-Origin"), "https://dash.example.com")
        self.assertIn("ETag", r.header("Access-Control-Expose-Headers"))
        self.assertEqual(r.header("Vary"), "Origin")
        e = self.server.get("/v1/nope", headers={"Origin": "http://localhost:3000"})
        self.assertEqual(e.header("Access-Control-Allow-Origin"), "http://localhost:3000")

    def test_other_origins_get_no_allow_header(self):
        r = self.server.request("OPTIONS", "/v1/estimate", headers={
            "Origin": "https://evil.example.com", "Access-Control-Request-Method": "POST"})
        self.assertEqual(r.status, 204)
        self.assertIsNone(r.header("Access-Control-Allow-Origin"))
        g = self.server.get("/healthz", headers={"Origin": "https://dash.example.com.evil"})
        self.assertIsNone(g.header("Access-Control-Allow-Origin"))


class NoCorsByDefault(ServerTestCase):
    def test_default_allows_no_origin(self):
        r = self.server.request("OPTIONS", "/v1/estimate", headers={
            "Origin": "https://dash.example.com", "Access-Control-Request-Method": "POST"})
        self.assertEqual(r.status, 204)
        self.assertEqual(r.header("Allow"), "POST")
        self.assertIsNone(r.header("Access-Control-Allow-Origin"))


class ConditionalGet(ServerTestCase):
    def test_result_revalidates_to_304(self):
        r = self.server.post("/v1/estimate", dict(EST, execution={"num_procs": 8, "batch_size": 8}))
        etag = r.header("ETag")
        path = "/v1/results/" + etag.strip('"')
        full = self.server.get(path)
        self.assertEqual(full.status, 200)
        self.assertEqual(full.header("ETag"), etag)
        again = self.server.get(path, headers={"If-None-Match": etag})
        self.assertEqual(again.status, 304)
        self.assertEqual(again.body, "")
        self.assertEqual(again.header("ETag"), etag)
        self.assertEqual(self.server.get(path, headers={"If-None-Match": 'W/"x", ' + etag}).status, 304)
        self.assertEqual(self.server.get(path, headers={"If-None-Match": '"other"'}).status, 200)

    def test_finished_sweep_revalidates_to_304(self):
        sid = self.server.post("/v1/sweep", SMALL).json()["id"]
        wait_for(self.server, sid)
        for _ in range(2):  # from the database, then from the in-memory copy
            full = self.server.get("/v1/sweep/" + sid)
            self.assertEqual(full.status, 200)
            etag = full.header("ETag")
            self.assertTrue(etag)
            again = self.server.get("/v1/sweep/" + sid, headers={"If-None-Match": etag})
            self.assertEqual(again.status, 304)
            self.assertEqual(again.body, "")


    def test_results_carry_an_etag_and_answer_accept_csv(self):
        sid = self.server.post("/v1/sweep", SMALL).json()["id"]
        self.assertEqual(wait_for(self.server, sid)["status"], "done")
        path = "/v1/sweep/%s/results" % sid
        js = self.server.get(path)
        self.assertEqual(js.status, 200)
        etag = js.header("ETag")
        self.assertTrue(etag)
        self.assertEqual(js.header("Vary"), "Accept")
        again = self.server.get(path, headers={"If-None-Match": etag})
        self.assertEqual((again.status, again.body), (304, ""))
        # Accept: text/csv without ?format is the CSV, with its own tag
        csv = self.server.get(path, headers={"Accept": "text/csv"})
        self.assertEqual(csv.status, 200)
        self.assertTrue(csv.header("Content-Type").startswith("text/csv"), csv.header("Content-Type"))
        self.assertEqual(csv.body, self.server.get(path + "?format=csv").body)
        self.assertNotEqual(csv.header("ETag"), etag)
        self.assertEqual(self.server.get(path, headers={"Accept": "text/csv", "If-None-Match": csv.header("ETag")}).status, 304)
        # JSON named first wins; a browser's wildcard keeps JSON; ?format overrides Accept
        self.assertTrue(self.server.get(path, headers={"Accept": "application/json, text/csv"})
                        .header("Content-Type").startswith("application/json"))
        self.assertTrue(self.server.get(path, headers={"Accept": "*/*"})
                        .header("Content-Type").startswith("application/json"))
        self.assertTrue(self.server.get(path + "?format=json", headers={"Accept": "text/csv"})
                        .header("Content-Type").startswith("application/json"))
        # weights decide (RFC 9110 §12.5.1): JSON named first at q=0.5 loses to CSV; q=0 refuses
        for accept, form in (("application/json;q=0.5, text/csv", "text/csv"),
                             ("text/csv;q=0", "application/json"),
                             ("text/*, text/csv;q=0", "application/json"),
                             ("*/*;q=0.1, text/csv;q=0.2", "text/csv")):
            self.assertTrue(self.server.get(path, headers={"Accept": accept})
                            .header("Content-Type").startswith(form), accept)
        # another page is another answer
        self.assertNotEqual(self.server.get(path + "?limit=1").header("ETag"), etag)

    def test_running_sweep_has_an_etag_that_moves_with_it(self):
        big = dict(SMALL, num_procs=64, max_batch_size=256, options={"top_n": 3})
        sid = self.server.post("/v1/sweep", big).json()["id"]
        first = self.server.get("/v1/sweep/" + sid)
        etag = first.header("ETag")
        self.assertTrue(etag, first.body)
        same = self.server.get("/v1/sweep/" + sid, headers={"If-None-Match": etag})
        if same.status == 304:  # nothing moved between the two reads
            self.assertEqual(same.body, "")
        else:  # it moved: a new body under a new tag
            self.assertEqual(same.status, 200)
            self.assertNotEqual(same.header("ETag"), etag)
        done = wait_for(self.server, sid)
        self.assertEqual(done["status"], "done")
        self.assertEqual(self.server.get("/v1/sweep/" + sid, headers={"If-None-Match": etag}).status,
                         200 if first.json()["status"] != "done" else 304)

    def test_delete_on_a_finished_sweep_is_a_conflict_naming_its_status(self):
        sid = self.server.post("/v1/sweep", SMALL).json()["id"]
        self.assertEqual(wait_for(self.server, sid)["status"], "done")
        r = self.server.request("DELETE", "/v1/sweep/" + sid)
        err = self.assertError(r, 409, "conflict", "status")
        self.assertIn("done", err["message"])
        self.assertEqual(self.server.get("/v1/sweep/" + sid).json()["status"], "done")


class SearchConstraints(ServerTestCase):
    def search(self, max_batch_size=60, **options):
        # 60: data_par 8 does not divide it, so exact_batch has layouts to skip
        body = dict(SMALL, max_batch_size=max_batch_size, options=dict(SMALL["options"], top_n=20, **options))
        r = self.server.post("/v1/sweep", body)
        self.assertIn(r.status, (200, 202), r.body)
        doc = wait_for(self.server, r.json()["id"])
        self.assertEqual(doc["status"], "done", doc)
        return doc

    def test_constraints_narrow_the_space_and_hold_in_every_result(self):
        free = self.search()
        for options, holds in [
                ({"no_offload": True}, lambda e: not (e["weight_offload"] or e["activations_offload"] or e["optimizer_offload"])),
                ({"max_tensor_par": 1}, lambda e: e["tensor_par"] == 1),
                ({"max_pipeline_par": 1}, lambda e: e["pipeline_par"] == 1),
                ({"exact_batch": True}, lambda e: e["batch_size"] == 60)]:
            with self.subTest(options=options):
                doc = self.search(**options)
                self.assertLess(doc["counts"]["total"], free["counts"]["total"])
                self.assertTrue(doc["best"])
                for b in doc["best"]:
                    self.assertTrue(holds(b["execution"]), b["execution"])
                self.assertEqual(doc["spec"]["options"][list(options)[0]], list(options.values())[0])

    def test_without_constraints_the_normalized_search_is_unchanged(self):
        doc = self.search()
        for k in ("no_offload", "exact_batch", "max_tensor_par", "max_pipeline_par"):
            self.assertNotIn(k, doc["spec"]["options"])

    def test_a_zero_cap_is_refused_by_name(self):
        r = self.server.post("/v1/sweep", dict(SMALL, options={"max_tensor_par": 0}))
        self.assertError(r, 422, "invalid_field", "options.max_tensor_par")


class SearchCsv(ServerTestCase):
    def test_search_csv_says_it_holds_the_top_n_and_points_to_the_sample(self):
        sid = self.server.post("/v1/sweep", SMALL).json()["id"]
        wait_for(self.server, sid)
        r = self.server.get("/v1/sweep/%s/results?format=csv" % sid)
        self.assertEqual(r.status, 200)
        rows = [l for l in r.body.splitlines() if l]
        self.assertEqual(rows[-1], "#complete rows=%d next_offset=%d" % ((SMALL["options"]["top_n"],) * 2))
        self.assertEqual(len(rows) - 2, SMALL["options"]["top_n"])
        self.assertEqual(r.header("X-Fathom-Rows"), "top_n")
        self.assertIn("</v1/sweep/%s/points>" % sid, r.header("Link"))
        j = self.server.get("/v1/sweep/%s/results" % sid).json()
        self.assertEqual(j["rows"], "top_n")
        # The API reference (doc/api.md, where the README's API text moved) says what a
        # search's download holds.
        with open(os.path.join(SOURCE, "doc", "api.md")) as f:
            api_doc = f.read()
        self.assertNotIn("downloads every point", api_doc)
        self.assertIn("top N", api_doc)


if __name__ == "__main__":
    unittest.main()

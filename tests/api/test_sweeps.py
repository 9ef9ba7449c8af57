"""test_sweeps.py — asynchronous sweeps end to end: submit, poll, idempotent ids, cancel, the
queue limit, the size limit, grid paging in JSON and CSV, the bearer token, and a SIGKILL in
the middle of a search followed by a restart that finishes with exactly the uninterrupted
result."""
import csv
import io
import json
import os
import signal
import sqlite3
import subprocess
import tempfile
import shutil
import time
import unittest

from harness import FATHOM_CLI, SLOW, SOURCE, Server, ServerTestCase, sqlite_only, validate

SMALL = {"kind": "optimal_execution", "model": "megatron-126M", "system": "a100_80g",
         "num_procs": 8, "max_batch_size": 64, "datatype": "float16", "options": {"top_n": 3}}
# About a million executions: long enough to interrupt, short enough for a test.
MEDIUM = {"kind": "optimal_execution", "model": "gpt3-13B", "system": "a100_80e",
          "num_procs": 256, "max_batch_size": 512, "datatype": "float16", "options": {"top_n": 2}}
# About four million executions: several seconds on one worker.
LONG = {"kind": "optimal_execution", "model": "megatron-22B", "system": "h100_80g_nvl8",
        "num_procs": 64, "max_batch_size": 512, "datatype": "float16", "options": {"top_n": 2}}
GRID = {"kind": "grid",
        "base": {"model": "gpt3-175B", "system": "a100_80g",
                 "execution": {"num_procs": 64, "tensor_par": 8, "pipeline_par": 8, "data_par": 1,
                               "batch_size": 64, "microbatch_size": 1, "activation_recompute": "full",
                               "tensor_par_net": 0, "pipeline_par_net": 1, "data_par_net": 1}},
        "axes": {"execution.microbatch_size": [1, 2, 4], "execution.activation_recompute": ["full", "none"]},
        "top_n": 2}


def wait_for(server, sweep_id, statuses=("done", "failed", "cancelled"), timeout=120, predicate=None):
    deadline = time.time() + timeout * SLOW
    while time.time() < deadline:
        r = server.get("/v1/sweep/" + sweep_id)
        doc = r.json()
        if doc.get("status") in statuses or (predicate and predicate(doc)):
            return doc
        time.sleep(0.05)
    raise AssertionError("sweep %s did not reach %s: %s" % (sweep_id, statuses, doc))


def cli_search(args):
    out = subprocess.run([FATHOM_CLI, "--presets", os.path.join(SOURCE, "presets")] + args,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


class Sweeps(ServerTestCase):
    def test_search_sweep_matches_cli(self):
        r = self.server.post("/v1/sweep", SMALL)
        # 202 when this post created it, 200 when test_search_results_csv did
        self.assertEqual(r.status, 202 if r.json()["created"] else 200, r.body)
        sid = r.json()["id"]
        self.assertRegex(sid, "^[0-9a-f]{64}$")
        self.assertEqual(r.header("Location"), "/v1/sweep/" + sid)
        doc = wait_for(self.server, sid)
        self.assertEqual(doc["status"], "done", doc)
        self.assertEqual(doc["progress"]["done"], doc["progress"]["total"])
        self.assertEqual(doc["counts"]["total"], 298072)  # Calculon's count for this space
        cli = cli_search(["search", "megatron-126M", "8", "64", "float16", "a100_80g", "--top-n", "3"])
        self.assertEqual(doc["counts"], cli["counts"])
        self.assertEqual([b["execution"] for b in doc["best"]], [b["execution"] for b in cli["best"]])
        self.assertEqual([b["stats"] for b in doc["best"]], [b["stats"] for b in cli["best"]])
        # The sample of the space does not depend on how the work was split.
        self.assertNotIn("points", doc)  # status stays small for pollers
        sample = self.server.get("/v1/sweep/%s/points" % sid).json()
        validate(sample, "sweep_points.response.json")
        self.assertEqual(sample["columns"], ["sample_rate", "mem_tier1_bytes", "mem_tier2_bytes"])
        self.assertGreater(len(sample["points"]), 1000)
        self.assertLessEqual(len(sample["points"]), 4096)
        self.assertEqual(sample["points"], cli["points"])
        one = cli_search(["search", "megatron-126M", "8", "64", "float16", "a100_80g", "--top-n", "3", "--threads", "1"])
        self.assertEqual(one["points"], cli["points"])
        self.assertTrue(all(p[0] <= doc["best"][0]["summary"]["sample_rate"] for p in sample["points"]))
        validate(doc, "sweep_status.response.json")
        # Posting it again gives the same id and does not run it again.
        again = self.server.post("/v1/sweep", dict(SMALL, options={"top_n": 3, "mbs_break": False}))
        self.assertEqual(again.status, 200)  # it exists: 200, as doc/api.md and the OpenAPI say
        self.assertEqual(again.json()["id"], sid)
        self.assertFalse(again.json()["created"])
        listed = self.server.get("/v1/sweeps").json()["sweeps"]
        self.assertIn(sid, [s["id"] for s in listed])

    def test_search_results_csv(self):
        sid = self.server.post("/v1/sweep", SMALL).json()["id"]
        wait_for(self.server, sid)
        r = self.server.get("/v1/sweep/%s/results?format=csv" % sid)
        self.assertEqual(r.status, 200)
        self.assertTrue(r.header("Content-Type").startswith("text/csv"))
        rows = list(csv.reader(io.StringIO(r.body)))
        self.assertEqual(rows[0][:3], ["rank", "num_procs", "tensor_par"])
        self.assertIn("sample_rate", rows[0])
        # the header, the top 3, and the trailer that says the body is whole
        self.assertEqual(len(rows), 1 + 3 + 1)
        self.assertEqual(rows[-1], ["#complete rows=3 next_offset=3"])

    def test_grid_sweep_paging(self):
        r = self.server.post("/v1/sweep", GRID)
        self.assertEqual(r.status, 202, r.body)
        sid = r.json()["id"]
        doc = wait_for(self.server, sid)
        self.assertEqual(doc["status"], "done", doc)
        self.assertEqual(doc["counts"]["points"], 6)
        self.assertEqual(doc["counts"]["total"], 6)
        rates = [b["summary"]["sample_rate"] for b in doc["best"]]
        self.assertEqual(len(rates), 2)
        self.assertEqual(rates, sorted(rates, reverse=True))
        self.assertError(self.server.get("/v1/sweep/%s/points" % sid), 404, "not_found")
        page1 = self.server.get("/v1/sweep/%s/results?format=json&limit=4" % sid).json()
        page2 = self.server.get("/v1/sweep/%s/results?offset=4&limit=4" % sid).json()
        self.assertEqual([p["index"] for p in page1["points"]], [0, 1, 2, 3])
        self.assertEqual([p["index"] for p in page2["points"]], [4, 5])
        # Axes sorted by name, last fastest: recompute varies slowest here.
        self.assertEqual(page1["points"][0]["values"],
                         {"execution.activation_recompute": "full", "execution.microbatch_size": 1})
        self.assertEqual(page2["points"][1]["values"],
                         {"execution.activation_recompute": "none", "execution.microbatch_size": 4})
        # Each point is what /v1/estimate answers for it.
        body = json.loads(json.dumps(GRID["base"]))
        body["execution"]["microbatch_size"] = 2
        est = self.server.post("/v1/estimate", body).json()
        self.assertEqual(page1["points"][1]["stats"], est["stats"])
        r = self.server.get("/v1/sweep/%s/results?format=csv" % sid)
        rows = list(csv.reader(io.StringIO(r.body)))
        self.assertEqual(rows[0][:3], ["index", "execution.activation_recompute", "execution.microbatch_size"])
        self.assertIn("block_fw_flops", rows[0])
        self.assertEqual(len(rows), 7 + 1)
        self.assertEqual(rows[-1], ["#complete rows=6 next_offset=6"])
        self.assertError(self.server.get("/v1/sweep/%s/results?limit=-1" % sid), 422, "invalid_field", "limit")
        # Strict numbers everywhere: no sign, no spaces, no trailing text, no silent clamping.
        for bad in ("+4", "4x", " 4", "", "100001", "99999999999999999999999"):
            self.assertError(self.server.get("/v1/sweep/%s/results?limit=%s" % (sid, bad.replace(" ", "%20"))),
                             422, "invalid_field", "limit")
        self.assertError(self.server.get("/v1/sweep/%s/results?offset=-3" % sid), 422, "invalid_field", "offset")
        for bad in ("0", "201", "abc", "5x"):
            self.assertError(self.server.get("/v1/sweeps?limit=" + bad), 422, "invalid_field", "limit")
        self.assertEqual(len(self.server.get("/v1/sweeps?limit=1").json()["sweeps"]), 1)
        self.assertError(self.server.get("/v1/sweep/%s/results?format=xml" % sid), 422, "invalid_field", "format")
        # The results and the sample are read-only: DELETE there is a 405 (it was a 404), and
        # the sweep is untouched.
        for sub in ("results", "points"):
            r = self.server.request("DELETE", "/v1/sweep/%s/%s" % (sid, sub))
            self.assertError(r, 405, "method_not_allowed")
            self.assertEqual(r.header("Allow"), "GET")
        self.assertError(self.server.request("DELETE", "/v1/sweep/%s/nope" % sid), 404, "not_found")
        # Another method there names GET alone (the sweep's DELETE is not the results').
        for method in ("POST", "PUT"):
            r = self.server.request(method, "/v1/sweep/%s/results" % sid, body={})
            self.assertError(r, 405, "method_not_allowed")
            self.assertEqual(r.header("Allow"), "GET")
        self.assertEqual(self.server.request("PUT", "/v1/sweep/" + sid, body={}).header("Allow"),
                         "GET, DELETE")
        self.assertEqual(self.server.get("/v1/sweep/" + sid).json()["status"], "done")

    def test_bad_specs_name_the_field(self):
        cases = [
            ({}, "kind"),
            ({"kind": "random"}, "kind"),
            (dict(SMALL, num_procs=0), "num_procs"),
            (dict(SMALL, options={"top_n": 1000}), "options.top_n"),
            (dict(GRID, axes={"execution.nope": [1]}), "axes.execution.nope"),
            (dict(GRID, axes={"execution.tensor_par": []}), "axes.execution.tensor_par"),
            (dict(GRID, base=dict(GRID["base"], execution=dict(GRID["base"]["execution"], tensor_par="8"))),
             "base.execution.tensor_par"),
            # Pins no layout of megatron-126M (12 heads, 12 blocks) on 8 GPUs with a batch of 64
            # can meet: refused at creation, not a "done" search with nothing in it.
            (dict(SMALL, options={"tensor_par": 3}), "options.tensor_par"),  # 3 does not divide 8
            (dict(SMALL, options={"tensor_par": 16}), "options.tensor_par"),
            (dict(SMALL, options={"pipeline_par": 64}), "options.pipeline_par"),
            (dict(SMALL, options={"microbatch_size": 1000}), "options.microbatch_size"),
            # Axis values every point would fail on: refused at creation, naming the value.
            (dict(GRID, axes={"execution.tensor_par": [8, "x"]}), "axes.execution.tensor_par[1]"),
            (dict(GRID, axes={"execution.tensor_par": [4.5]}), "axes.execution.tensor_par[0]"),
            (dict(GRID, axes={"execution": [1, 2]}), "axes.execution[0]"),
            (dict(GRID, axes={"system": ["a100_80g", 3]}), "axes.system[1]"),
            # a system's name on the model axis: it was accepted and failed its point
            (dict(GRID, axes={"model": ["gpt3-175B", "h100_sxm"]}), "axes.model[1]"),
            (dict(GRID, axes={"execution.optimizer_sharding": [True, 1]}),
             "axes.execution.optimizer_sharding[1]"),
        ]
        for body, field in cases:
            with self.subTest(field=field):
                self.assertError(self.server.post("/v1/sweep", body), 422, "invalid_field", field)
        # A value whose refusal hangs on another axis is left to its point, and a real may stand
        # where the base wrote an integral one (mem1.GiB 80 is a real field).
        for axes in ({"execution.microbatch_size": [1, 3]}, {"system.mem1.GiB": [0.5, 80]},
                     {"execution.tensor_par": [8.0]}):
            with self.subTest(axes=axes):
                self.assertEqual(self.server.post("/v1/sweep", dict(GRID, axes=axes)).status, 202)
        # A pin some layout meets is searched.
        r = self.server.post("/v1/sweep", dict(SMALL, options={"top_n": 3, "tensor_par": 4}))
        self.assertEqual(r.status, 202, r.body)
        doc = wait_for(self.server, r.json()["id"])
        self.assertTrue(doc["best"] and all(b["execution"]["tensor_par"] == 4 for b in doc["best"]))
        self.assertError(self.server.get("/v1/sweep/" + "0" * 64), 404, "not_found")
        self.assertError(self.server.get("/v1/sweep/xyz"), 404, "not_found")
        r = self.server.get("/v1/sweep")
        self.assertError(r, 405, "method_not_allowed")


class SearchDownloads(ServerTestCase):
    """Apart from Sweeps, which the valgrind stage runs: this search (52,018 evaluations) takes a
    second natively and a quarter of an hour under memcheck; ASan covers its code."""

    def test_search_csv_has_every_ranked_rows_members(self):
        # An execution writes recompute_blocks and recompute_modules only when set, so ranked
        # rows differ in their members: rank 1 has neither here, later ranks one or the other.
        # The CSV's columns are every member any row has (they were the first row's: the others'
        # recompute_blocks and recompute_modules were dropped), a row without one an empty cell.
        body = {"kind": "optimal_execution", "model": "llama3-8B", "system": "a100_sxm_40g",
                "num_procs": 8, "max_batch_size": 64,
                "options": {"top_n": 100, "recompute_blocks": "fewest"}}
        sid = self.server.post("/v1/sweep", body).json()["id"]
        self.assertEqual(wait_for(self.server, sid)["status"], "done")
        points = self.server.get("/v1/sweep/%s/results" % sid).json()["points"]
        members = set().union(*(p["execution"] for p in points))
        self.assertTrue({"recompute_blocks", "recompute_modules"} <= members - set(points[0]["execution"]))
        for offset in (0, 10):
            r = self.server.get("/v1/sweep/%s/results?format=csv&offset=%d" % (sid, offset))
            rows = [x for x in csv.reader(io.StringIO(r.body)) if not x[0].startswith("#")]
            head = rows[0]
            self.assertTrue(members <= set(head), members - set(head))
            self.assertEqual(len(rows) - 1, len(points) - offset)
            for row, point in zip(rows[1:], points[offset:]):
                self.assertEqual(int(row[0]), point["rank"])
                for key in members:
                    cell, value = row[head.index(key)], point["execution"].get(key)
                    if value is None:
                        self.assertEqual(cell, "", (point["rank"], key))
                    elif isinstance(value, (list, dict)):
                        self.assertEqual(json.loads(cell), value, (point["rank"], key))
                    else:
                        self.assertEqual(cell, str(value).lower() if isinstance(value, bool) else str(value),
                                         (point["rank"], key))

class Limits(unittest.TestCase):
    def test_queue_full_cancel_and_too_large(self):
        s = Server(extra_args=["--workers", "1", "--max-queued-sweeps", "1",
                               "--max-sweep-points", "4", "--max-search-executions", "5000000"]).start()
        try:
            a = s.post("/v1/sweep", LONG).json()["id"]
            self.assertEqual(wait_for(s, a, statuses=("running", "done"))["status"], "running")
            b = s.post("/v1/sweep", dict(LONG, options={"top_n": 3})).json()["id"]
            r = s.post("/v1/sweep", dict(LONG, options={"top_n": 4}))
            self.assertEqual(r.status, 429, r.body)
            self.assertEqual(r.json()["error"]["code"], "queue_full")
            self.assertTrue(r.header("Retry-After"))
            # Cancel: the running search stops promptly (well within the deadline below).
            t0 = time.time()
            r = s.request("DELETE", "/v1/sweep/" + a)
            self.assertEqual(r.status, 200)
            self.assertEqual(r.json()["status"], "cancelled")
            s.request("DELETE", "/v1/sweep/" + b)
            # Generous for a busy machine: a search that ignored the flag would run for minutes.
            deadline = time.time() + 10.0 * SLOW
            busy = None
            while time.time() < deadline:
                metrics = s.get("/metrics").body
                busy = [l for l in metrics.splitlines() if l.startswith("fathom_worker_pool_busy ")]
                if busy == ["fathom_worker_pool_busy 0"]:
                    break
                time.sleep(0.02)
            self.assertEqual(busy, ["fathom_worker_pool_busy 0"], "still busy %.2fs after cancel" % (time.time() - t0))
            self.assertEqual(s.get("/v1/sweep/" + a).json()["status"], "cancelled")
            # Too large: each limit names itself.
            r = s.post("/v1/sweep", dict(GRID, axes={"execution.microbatch_size": [1, 2, 4], "execution.tensor_par": [1, 8]}))
            self.assertEqual(r.status, 422)
            self.assertEqual(r.json()["error"]["code"], "limit_exceeded")
            self.assertEqual(r.json()["error"]["field"], "axes")
            self.assertIn("--max-sweep-points", r.json()["error"]["message"])
            r = s.post("/v1/sweep", dict(LONG, model="gpt3-175B", system="a100_80g", num_procs=1024, max_batch_size=1024))
            self.assertEqual(r.status, 422)
            self.assertEqual(r.json()["error"]["code"], "limit_exceeded")
            self.assertIn("--max-search-executions", r.json()["error"]["message"])
            self.assertEqual(s.stop(), 0)
        finally:
            s.cleanup()

    def test_repost_of_a_cancelled_sweep_needs_a_queue_slot(self):
        """Posting a cancelled sweep's body again runs it again (doc/api.md), so it waits in the
        queue as a new one does: with the queue full that is a 429, not a 202 "created": false
        that leaves it cancelled."""
        s = Server(extra_args=["--workers", "1", "--max-queued-sweeps", "1"]).start()
        try:
            a = s.post("/v1/sweep", LONG).json()["id"]
            self.assertEqual(wait_for(s, a, statuses=("running", "done"))["status"], "running")
            r = s.post("/v1/sweep", SMALL)
            self.assertEqual((r.status, r.json()["created"]), (202, True), r.body)
            sid = r.json()["id"]
            self.assertEqual(s.request("DELETE", "/v1/sweep/" + sid).json()["status"], "cancelled")
            b = s.post("/v1/sweep", dict(LONG, options={"top_n": 3})).json()["id"]
            self.assertEqual(s.get("/v1/sweep/" + b).json()["status"], "queued")  # the queue is full
            r = s.post("/v1/sweep", SMALL)
            self.assertEqual(r.status, 429, r.body)
            self.assertEqual(r.json()["error"]["code"], "queue_full")
            self.assertEqual(s.get("/v1/sweep/" + sid).json()["status"], "cancelled")
            # A slot frees: the same body runs again, from the start, to the end.
            self.assertEqual(s.request("DELETE", "/v1/sweep/" + b).status, 200)
            self.assertEqual(s.request("DELETE", "/v1/sweep/" + a).status, 200)
            r = s.post("/v1/sweep", SMALL)
            self.assertEqual((r.status, r.json()["created"]), (202, True), r.body)
            doc = wait_for(s, sid)
            self.assertEqual(doc["status"], "done")
            self.assertEqual(doc["counts"]["total"], 298072)
            # Done, it exists: 200 and "created": false, and it is not run again.
            r = s.post("/v1/sweep", SMALL)
            self.assertEqual((r.status, r.json()["id"], r.json()["created"]), (200, sid, False))
            self.assertEqual(r.header("Location"), "/v1/sweep/" + sid)
            self.assertEqual(s.get("/v1/sweep/" + sid).json()["status"], "done")
            self.assertEqual(s.stop(), 0)
        finally:
            s.cleanup()

    def test_token_guards_create_and_cancel_only(self):
        s = Server(env={"FATHOM_API_TOKEN": "s3cret"}).start()
        try:
            r = s.post("/v1/sweep", SMALL)
            self.assertEqual(r.status, 401)
            self.assertEqual(r.json()["error"]["code"], "unauthorized")
            r = s.post("/v1/sweep", SMALL, headers={"Authorization": "Bearer wrong"})
            self.assertEqual(r.status, 401)
            r = s.post("/v1/sweep", SMALL, headers={"Authorization": "Bearer s3cret"})
            self.assertEqual(r.status, 202)
            sid = r.json()["id"]
            self.assertEqual(s.get("/v1/sweep/" + sid).status, 200)
            self.assertEqual(s.request("DELETE", "/v1/sweep/" + sid).status, 401)
            self.assertEqual(s.post("/v1/transformer", {"model": "gpt3-175B"}).status, 200)
            self.assertEqual(s.stop(), 0)
        finally:
            s.cleanup()


class Durability(unittest.TestCase):
    def test_sigkill_mid_search_resumes_to_identical_result(self):
        ref = Server(extra_args=["--workers", "2"]).start()
        try:
            rid = ref.post("/v1/sweep", LONG).json()["id"]
            expected = wait_for(ref, rid, timeout=300)
            self.assertEqual(expected["status"], "done")
            expected_points = ref.get("/v1/sweep/%s/points" % rid).json()["points"]
            self.assertGreater(len(expected_points), 100)
            self.assertEqual(ref.stop(), 0)
        finally:
            ref.cleanup()

        tmp = tempfile.mkdtemp(prefix="fathom-kill-")
        try:
            s = Server(db_dir=tmp, extra_args=["--workers", "1"]).start()
            sid = s.post("/v1/sweep", LONG).json()["id"]
            self.assertEqual(sid, rid)
            doc = wait_for(s, sid, predicate=lambda d: 0 < d["progress"]["done"] < d["progress"]["total"],
                           timeout=300)
            self.assertEqual(doc["status"], "running")
            s.stop(signal.SIGKILL)
            self.assertTrue(s.integrity_ok())
            status, done = s.stored_row("SELECT status, done FROM sweeps WHERE id=?", (sid,))
            self.assertEqual(status, "running")
            self.assertGreater(done, 0)
            s = Server(db_dir=tmp, extra_args=["--workers", "2"]).start()
            got = wait_for(s, sid, timeout=300)
            self.assertTrue(any(r.get("msg") == "sweep resumed" and r.get("done", 0) > 0 for r in s.log_records()),
                            s.lines)
            self.assertEqual(got["status"], "done")
            self.assertEqual(got["counts"], expected["counts"])
            self.assertEqual(got["best"], expected["best"])
            self.assertEqual(s.get("/v1/sweep/%s/points" % sid).json()["points"], expected_points)
            self.assertEqual(s.stop(), 0)
            self.assertTrue(s.integrity_ok())
        finally:
            shutil.rmtree(tmp)

    @sqlite_only
    def test_results_of_a_sweep_whose_stored_spec_does_not_read(self):
        """A stored spec that is not JSON fails its sweep, and its download is a 404 saying so
        (it was a 200 whose body was an error object of code "ok")."""
        tmp = tempfile.mkdtemp(prefix="fathom-spec-")
        try:
            s = Server(db_dir=tmp).start()
            self.assertEqual(s.stop(), 0)
            sid = "a" * 64
            db = sqlite3.connect(s.db)
            db.execute("INSERT INTO sweeps (id, kind, spec, status, size, created_at) "
                       "VALUES (?, 'grid', 'not json', 'queued', 1, '2026-01-01T00:00:00.000Z')", (sid,))
            db.commit()
            db.close()
            s = Server(db_dir=tmp).start()
            doc = wait_for(s, sid, statuses=("failed",))
            self.assertIn("not JSON", doc["error"]["message"])
            for q in ("", "?format=csv"):
                r = s.get("/v1/sweep/%s/results%s" % (sid, q))
                self.assertEqual(r.status, 404, r.body)
                self.assertEqual(r.json()["error"]["code"], "not_found")
                self.assertIn(sid, r.json()["error"]["message"])
            self.assertEqual(s.stop(), 0)
        finally:
            shutil.rmtree(tmp)

    def test_sigterm_mid_sweep_checkpoints_and_resumes(self):
        tmp = tempfile.mkdtemp(prefix="fathom-term-")
        try:
            s = Server(db_dir=tmp, extra_args=["--workers", "1"]).start()
            sid = s.post("/v1/sweep", LONG).json()["id"]
            doc = wait_for(s, sid, predicate=lambda d: 0 < d["progress"]["done"] < d["progress"]["total"],
                           timeout=300)
            self.assertEqual(doc["status"], "running")
            t0 = time.time()
            self.assertEqual(s.stop(signal.SIGTERM), 0)
            self.assertLess(time.time() - t0, 5 * SLOW)
            status, done = s.stored_row("SELECT status, done FROM sweeps WHERE id=?", (sid,))
            self.assertEqual(status, "running")
            s = Server(db_dir=tmp).start()
            self.assertEqual(wait_for(s, sid, timeout=300)["status"], "done")
            self.assertEqual(s.stop(), 0)
        finally:
            shutil.rmtree(tmp)


if __name__ == "__main__":
    unittest.main(verbosity=2)

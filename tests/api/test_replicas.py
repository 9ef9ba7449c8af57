"""test_replicas.py — several fathomd replicas on one PostgreSQL database (FATHOM_TEST_DB; skipped
without it): a result computed on one is a cache hit on another; sweeps submitted anywhere are
run by the replicas together; the units of one search run on all three replicas (helpers claim
units from the end and store their results, the owner merges them in order) with exactly the
result of one SQLite fathomd, also when a helper is SIGKILLed mid-unit; a replica SIGKILLed mid-search loses its lease and another finishes
the search with exactly the result of one SQLite fathomd; a cancel sent to one replica stops the
workers of the replica running the sweep; and a PostgreSQL restart mid-sweep turns the replicas
not ready until they reconnect, after which the sweep completes with the identical result, also
when its only replica dropped it during the outage and takes it up again; a replica started
while the server is down waits for it (--db-wait), one whose database refuses it does not
(FATHOM_TEST_PG_DIR names the cluster to restart: scripts/pg_cluster.sh). Every wait polls."""
import os
import signal
import subprocess
import unittest
import uuid

from harness import PG_DSN, SLOW, SOURCE, Server, wait_until

# About four million executions: several seconds on one worker, long enough to interrupt.
LONG = {"kind": "optimal_execution", "model": "megatron-22B", "system": "h100_80g_nvl8",
        "num_procs": 64, "max_batch_size": 512, "datatype": "float16", "options": {"top_n": 2}}
GPT = '{"model":{"hidden":%d,"attn_heads":8,"num_blocks":4,"seq_size":256},"tokens":1e9}'
GPT2 = GPT % 512


def sweep(server, sid):
    return server.get("/v1/sweep/" + sid).json()


def finished(server, sid, timeout=300):
    # (a replica answering 503 while it reconnects has no status yet: it is waited through)
    return wait_until(lambda: (lambda d: d if d.get("status") in ("done", "failed", "cancelled") else None)(
        sweep(server, sid)), "sweep %s to finish" % sid, timeout)


def replica_of(server):
    """The replica id a fathomd records as a sweep's runner (hostname-pid)."""
    return "%s-%d" % (os.uname().nodename[:63], server.proc.pid)


@unittest.skipUnless(PG_DSN, "needs FATHOM_TEST_DB (a PostgreSQL server)")
class Replicas(unittest.TestCase):
    reference = None

    @classmethod
    def setUpClass(cls):
        # The same search on one SQLite fathomd: what every shared run must reproduce exactly.
        ref = Server(sqlite=True, extra_args=["--workers", "2"]).start()
        try:
            rid = ref.post("/v1/sweep", LONG).json()["id"]
            doc = finished(ref, rid)
            assert doc["status"] == "done", doc
            cls.reference = (doc["counts"], doc["best"], ref.get("/v1/sweep/%s/points" % rid).json()["points"])
            assert ref.stop() == 0
        finally:
            ref.cleanup()

    def setUp(self):
        self.database = "fathom_rep_" + uuid.uuid4().hex[:12]
        self.replicas = []

    def tearDown(self):
        # A clean stop, checked: under sanitizers or valgrind a report fails the test here.
        try:
            for r in self.replicas:
                if r.proc and r.proc.poll() is None:
                    self.assertEqual(r.stop(), 0, r.report())
        finally:
            for r in self.replicas:
                r.cleanup()
        from harness import psql
        psql(PG_DSN, "DROP DATABASE IF EXISTS %s WITH (FORCE)" % self.database)

    def start(self, n, workers=1):
        for _ in range(n):
            self.replicas.append(Server(pg_database=self.database,
                                        extra_args=["--workers", str(workers)]).start())
        return self.replicas

    def assert_reference(self, server, sid):
        doc = finished(server, sid)
        self.assertEqual(doc["status"], "done", doc)
        counts, best, points = self.reference
        self.assertEqual(doc["counts"], counts)
        self.assertEqual(doc["best"], best)
        self.assertEqual(server.get("/v1/sweep/%s/points" % sid).json()["points"], points)
        return doc

    def test_result_computed_on_a_is_a_hit_on_b(self):
        a, b = self.start(2)
        first = a.post("/v1/transformer", GPT2)
        self.assertEqual(first.header("X-Fathom-Cache"), "miss")
        a.wait_stored(first.header("ETag").strip('"'))
        again = b.post("/v1/transformer", GPT2)
        self.assertEqual(again.header("X-Fathom-Cache"), "hit")
        self.assertEqual(again.body, first.body)

    def test_user_preset_put_on_a_is_used_on_b(self):
        a, b = self.start(2)
        calibrate = {"system": "a100_80g",
                     "gemms": [{"m": 8192, "n": 8192, "k": 8192, "datatype": "float16", "tflops": 230}]}
        system = a.post("/v1/calibrate", calibrate).json()["system"]
        r = a.request("PUT", "/v1/presets/systems/our-a100", body=system)
        self.assertIn(r.status, (200, 201), r.body)
        self.assertIn("our-a100", [s["name"] for s in b.get("/v1/presets").json()["systems"] if s.get("user")])
        body = {"model": "gpt3-175B", "system": "our-a100",
                "execution": {"num_procs": 64, "tensor_par": 8, "pipeline_par": 8, "data_par": 1,
                              "batch_size": 64, "microbatch_size": 1}}
        on_b = b.post("/v1/estimate", body)
        self.assertEqual(on_b.status, 200, on_b.body)
        self.assertEqual(b.request("DELETE", "/v1/presets/systems/our-a100").status // 100, 2)
        self.assertNotIn("our-a100", [s["name"] for s in a.get("/v1/presets").json()["systems"] if s.get("user")])

    def test_sigkilled_replica_search_finished_by_the_others(self):
        a, b, c = self.start(3)
        sid = a.post("/v1/sweep", LONG).json()["id"]
        # Whichever replica claimed it, kill that one once some of it is checkpointed.
        doc = wait_until(lambda: (lambda d: d if d.get("runs") and 0 < d["progress"]["done"] < d["progress"]["total"] else None)(
            sweep(b, sid)), "the search to checkpoint", 300)
        owner = doc["runs"][0]["replica"]
        victim = next(r for r in self.replicas if replica_of(r) == owner)
        victim.stop(signal.SIGKILL)
        survivor = next(r for r in self.replicas if r is not victim)
        got = self.assert_reference(survivor, sid)
        ran = {run["replica"] for run in got["runs"]}
        self.assertIn(owner, ran)
        self.assertGreaterEqual(len(ran), 2, got["runs"])  # the rest ran elsewhere
        # Any replica answers the same.
        for r in self.replicas:
            if r is not victim:
                self.assertEqual(sweep(r, sid)["counts"], got["counts"])

    def assert_runs_cover(self, doc):
        """`runs` covers every unit once, in order, and names the replica of each stretch."""
        runs = sorted(doc["runs"], key=lambda r: r["first_unit"])
        at = 0
        for run in runs:
            self.assertEqual(run["first_unit"], at, runs)
            self.assertGreater(run["last_unit"], run["first_unit"], runs)
            at = run["last_unit"]
        self.assertEqual(at, doc["progress"]["total"], runs)

    def test_one_search_split_over_three_replicas(self):
        a, b, c = self.start(3)
        sid = a.post("/v1/sweep", LONG).json()["id"]
        got = self.assert_reference(a, sid)
        self.assert_runs_cover(got)
        ran = {run["replica"] for run in got["runs"]}
        self.assertEqual(ran, {replica_of(r) for r in (a, b, c)}, got["runs"])

    def test_sigkilled_helper_search_finished_identically(self):
        a, b, c = self.start(3)
        sid = a.post("/v1/sweep", LONG).json()["id"]
        doc = wait_until(lambda: (lambda d: d if d.get("runs") and d["status"] == "running" else None)(
            sweep(a, sid)), "the search to checkpoint", 300)
        owner = doc["runs"][0]["replica"]
        # A helper (not the owner) in the middle of one of the search's units.
        victim = wait_until(lambda: next((r for r in self.replicas if replica_of(r) != owner and
                                          "fathom_worker_pool_busy 1" in r.get("/metrics").body), None),
                            "a helper to run a unit", 300)
        victim.stop(signal.SIGKILL)
        survivor = next(r for r in self.replicas if r is not victim)
        got = self.assert_reference(survivor, sid)
        self.assert_runs_cover(got)
        self.assertIn(owner, {run["replica"] for run in got["runs"]})

    def test_sweeps_submitted_to_one_run_on_all(self):
        a, b, c = self.start(3)
        ids = []
        for top_n in (1, 2, 3, 4, 5, 6):
            spec = {"kind": "optimal_execution", "model": "megatron-126M", "system": "a100_80g",
                    "num_procs": 8, "max_batch_size": 64, "datatype": "float16",
                    "options": {"top_n": top_n}}
            ids.append(a.post("/v1/sweep", spec).json()["id"])
        runners = set()
        for sid in ids:
            doc = finished(c, sid)
            self.assertEqual(doc["status"], "done", doc)
            runners |= {run["replica"] for run in doc["runs"]}
        self.assertGreaterEqual(len(runners), 2, runners)

    def test_cancel_on_b_stops_workers_on_a(self):
        a, b = self.start(2)
        sid = a.post("/v1/sweep", LONG).json()["id"]
        doc = wait_until(lambda: (lambda d: d if d.get("runs") else None)(sweep(b, sid)),
                         "the search to start", 300)
        owner = next(r for r in self.replicas if replica_of(r) == doc["runs"][0]["replica"])
        other = next(r for r in self.replicas if r is not owner)
        self.assertEqual(other.request("DELETE", "/v1/sweep/" + sid).json()["status"], "cancelled")
        # The owner learns it at its next lease renewal or checkpoint, whichever comes first.
        dropped = ("sweep no longer runs here", "sweep checkpoint not written")
        wait_until(lambda: any(rec.get("msg", "").startswith(dropped) and rec.get("sweep") == sid
                               for rec in owner.log_records()), "the owner to drop the sweep", 30)
        wait_until(lambda: "fathom_worker_pool_busy 0" in owner.get("/metrics").body,
                   "the owner's workers to stop", 30)
        self.assertEqual(sweep(owner, sid)["status"], "cancelled")

    @unittest.skipUnless(os.environ.get("FATHOM_TEST_PG_DIR"), "needs FATHOM_TEST_PG_DIR to stop the server")
    def test_database_down_answers_flow_not_stored(self):
        """As with a full disk on SQLite: /readyz 503, sweeps refused with 503, cached answers
        still served, new estimates computed and answered but not stored; all back once the
        server is."""
        (a,) = self.start(1)
        cached = a.post("/v1/transformer", GPT2)
        a.wait_stored(cached.header("ETag").strip('"'))
        self.assertEqual(a.post("/v1/transformer", GPT2).header("X-Fathom-Cache"), "hit")
        cluster = os.environ["FATHOM_TEST_PG_DIR"]
        script = os.path.join(SOURCE, "scripts", "pg_cluster.sh")
        subprocess.run([script, "stop", cluster], check=True, timeout=120)
        try:
            wait_until(lambda: a.get("/readyz").status == 503, "not ready", 30)
            r = a.post("/v1/sweep", LONG)
            self.assertEqual(r.status, 503, r.body)
            self.assertEqual(r.json()["error"]["code"], "unavailable")
            self.assertEqual(a.post("/v1/transformer", GPT2).header("X-Fathom-Cache"), "hit")
            fresh = a.post("/v1/transformer", GPT % 1024)
            self.assertEqual(fresh.status, 200, fresh.body)
            self.assertEqual(fresh.header("X-Fathom-Stored"), "false")
        finally:
            subprocess.run([script, "start", cluster], check=True, timeout=120, stdout=subprocess.DEVNULL)
        wait_until(lambda: a.get("/readyz").status == 200, "ready again", 60)
        self.assertEqual(a.post("/v1/sweep", LONG).status, 202)

    @unittest.skipUnless(os.environ.get("FATHOM_TEST_PG_DIR"), "needs FATHOM_TEST_PG_DIR to restart the server")
    def test_replica_started_before_its_database_waits_for_it(self):
        """A replica started while PostgreSQL is down (a pod scheduled before its database, or
        during a database restart) keeps trying, saying so in its log, and serves once the
        server is up; it used to exit at the first refused connection."""
        from harness import pg_create
        import threading
        dsn = pg_create(self.database)
        a = Server(pg_database=self.database, extra_args=["--db-wait", "600"])
        a.db_arg = lambda: dsn  # created above: psql cannot while the server is down
        self.replicas.append(a)
        cluster = os.environ["FATHOM_TEST_PG_DIR"]
        script = os.path.join(SOURCE, "scripts", "pg_cluster.sh")
        subprocess.run([script, "stop", cluster], check=True, timeout=120)
        starting = threading.Thread(target=lambda: a.start(timeout=300), daemon=True)
        try:
            starting.start()
            waits = lambda: [r for r in a.log_records() if r.get("msg") == "waiting for the database"]
            wait_until(lambda: len(waits()) >= 2, "the replica to wait for the database", 60)
            self.assertIsNone(a.proc.poll(), a.report())
            self.assertIn("cannot connect to PostgreSQL", waits()[0]["reason"])
            self.assertNotIn("\n", waits()[0]["reason"])
            self.assertGreater(waits()[0]["next_try_ms"], 0)
        finally:
            subprocess.run([script, "start", cluster], check=True, timeout=120, stdout=subprocess.DEVNULL)
        starting.join(300)
        wait_until(lambda: a.port is not None and a.get("/readyz").status == 200, "the replica to serve", 60)
        self.assertEqual(a.post("/v1/transformer", GPT2).status, 200)

    def test_database_that_refuses_is_not_waited_for(self):
        """Waiting cures a server that is not up yet, not one that answers and refuses: a database
        that does not exist ends the start at once, with the server's reason, however long
        --db-wait is."""
        from harness import FATHOMD, pg_dsn
        dsn = pg_dsn(self.database)  # never created
        out = subprocess.run([FATHOMD, "--listen", "127.0.0.1:0", "--db", dsn, "--db-wait", "3600",
                              "--migrations", os.path.join(SOURCE, "migrations"),
                              "--presets", os.path.join(SOURCE, "presets")],
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 1, out.stderr)
        self.assertNotIn("waiting for the database", out.stderr)
        self.assertIn("cannot start", out.stderr)
        self.assertIn("does not exist", out.stderr)

    @unittest.skipUnless(os.environ.get("FATHOM_TEST_PG_DIR"), "needs FATHOM_TEST_PG_DIR to restart the server")
    def test_postgresql_restart_mid_sweep(self):
        a, b = self.start(2)
        sid = a.post("/v1/sweep", LONG).json()["id"]
        wait_until(lambda: 0 < sweep(a, sid)["progress"]["done"], "the search to checkpoint", 300)
        # A restart (pg_ctl stop, then start): stopped until every replica has noticed, so the
        # test sees the not-ready window however fast the server comes back.
        cluster = os.environ["FATHOM_TEST_PG_DIR"]
        script = os.path.join(SOURCE, "scripts", "pg_cluster.sh")
        subprocess.run([script, "stop", cluster], check=True, timeout=120)
        try:
            for r in (a, b):
                wait_until(lambda: r.get("/readyz").status == 503, "a replica to report not ready", 60)
        finally:
            subprocess.run([script, "start", cluster], check=True, timeout=120, stdout=subprocess.DEVNULL)
        for r in (a, b):
            wait_until(lambda: r.get("/readyz").status == 200, "a replica to reconnect", 60)
        try:
            self.assert_reference(b, sid)
        except AssertionError as e:  # what both replicas logged, to tell where the sweep stopped
            raise AssertionError("%s\nsweep: %s\nreplica a:\n%s\nreplica b:\n%s"
                                 % (e, sweep(b, sid), "\n".join(a.lines[-150:]),
                                    "\n".join(b.lines[-150:]))) from None

    @unittest.skipUnless(os.environ.get("FATHOM_TEST_PG_DIR"), "needs FATHOM_TEST_PG_DIR to restart the server")
    def test_sweep_dropped_while_database_away_is_taken_up_again(self):
        """A sweep's only replica drops it when a checkpoint fails with the server away, and takes
        it up again from that checkpoint when the server is back. The units it had claimed past
        the checkpoint are still its own: they are claimed again and run, not waited for under
        the lease this replica itself keeps renewing (the sweep used to stall there forever)."""
        (a,) = self.start(1)
        sid = a.post("/v1/sweep", LONG).json()["id"]
        wait_until(lambda: 0 < sweep(a, sid)["progress"]["done"], "the search to checkpoint", 300)
        cluster = os.environ["FATHOM_TEST_PG_DIR"]
        script = os.path.join(SOURCE, "scripts", "pg_cluster.sh")
        subprocess.run([script, "stop", cluster], check=True, timeout=120)
        try:  # the drop, seen in the log; the server comes back well inside the units' leases
            wait_until(lambda: any(r.get("sweep") == sid and "dropping the job" in r.get("msg", "")
                                   for r in a.log_records()), "the job to be dropped", 60)
        finally:
            subprocess.run([script, "start", cluster], check=True, timeout=120, stdout=subprocess.DEVNULL)
        wait_until(lambda: a.get("/readyz").status == 200, "the replica to reconnect", 60)
        try:
            self.assert_reference(a, sid)
        except AssertionError as e:
            raise AssertionError("%s\nsweep: %s\nreplica:\n%s" % (e, sweep(a, sid),
                                                                   "\n".join(a.lines[-150:]))) from None


if __name__ == "__main__":
    unittest.main(verbosity=2)

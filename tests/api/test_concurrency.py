"""test_concurrency.py — many clients at once: every request answered, /metrics counters exact
under concurrency, sweeps finishing while estimates are served, and SIGTERM under load losing
nothing."""
import http.client
import re
import signal
import shutil
import tempfile
import threading
import unittest

from harness import SLOW, Server, ServerTestCase, wait_until
from test_sweeps import GRID, LONG, SMALL, wait_for

THREADS = 8
PER_THREAD = 40


def metric(text, name, **labels):
    """Sum of the samples of `name` whose labels include `labels`."""
    total = 0.0
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        m = re.match(r'^([a-z_]+)(\{[^}]*\})? ([0-9.e+-]+)$', line)
        if not m or m.group(1) != name:
            continue
        got = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
        if all(got.get(k) == v for k, v in labels.items()):
            total += float(m.group(3))
    return total


class Concurrency(ServerTestCase):
    server_args = ("--threads", "4", "--workers", "2")

    def test_counters_exact_under_concurrency(self):
        before = self.server.get("/metrics").body
        errors = []
        statuses = []
        lock = threading.Lock()

        def client(k):
            conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=60 * SLOW)
            for i in range(PER_THREAD):
                # Half the requests repeat (cache hits), half are new (misses).
                seq = 64 * (1 + (i % 2 == 0 and i or k * PER_THREAD + i))
                body = '{"model":{"hidden":512,"attn_heads":8,"num_blocks":4,"seq_size":%d}}' % seq
                try:
                    conn.request("POST", "/v1/transformer", body=body)
                    r = conn.getresponse()
                    r.read()
                    with lock:
                        statuses.append(r.status)
                except Exception as e:  # noqa: BLE001 - any failure is the finding
                    with lock:
                        errors.append(repr(e))
                    conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=60 * SLOW)
            conn.close()

        threads = [threading.Thread(target=client, args=(k,)) for k in range(THREADS)]
        sweep = self.server.post("/v1/sweep", dict(GRID, top_n=3)).json()["id"]
        search = self.server.post("/v1/sweep", SMALL).json()["id"]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        self.assertEqual(len(statuses), THREADS * PER_THREAD)
        self.assertEqual(set(statuses), {200})
        after = self.server.get("/metrics").body
        sent = THREADS * PER_THREAD
        self.assertEqual(metric(after, "fathom_http_requests_total", route="/v1/transformer", status="200")
                         - metric(before, "fathom_http_requests_total", route="/v1/transformer", status="200"), sent)
        hits = metric(after, "fathom_cache_hits_total") - metric(before, "fathom_cache_hits_total")
        misses = metric(after, "fathom_cache_misses_total") - metric(before, "fathom_cache_misses_total")
        self.assertEqual(hits + misses, sent)
        self.assertGreater(hits, 0)
        self.assertEqual(metric(after, "fathom_http_request_duration_seconds_count", route="/v1/transformer")
                         - metric(before, "fathom_http_request_duration_seconds_count", route="/v1/transformer"), sent)
        self.assertEqual(wait_for(self.server, sweep)["status"], "done")
        self.assertEqual(wait_for(self.server, search)["status"], "done")
        final = self.server.get("/metrics").body
        self.assertGreaterEqual(metric(final, "fathom_sweeps", state="done"), 2)
        self.assertGreaterEqual(metric(final, "fathom_evaluations_total"), 6)
        self.assertEqual(metric(final, "fathom_worker_pool_busy"), 0)
        self.assertGreater(metric(final, "fathom_db_size_bytes"), 0)
        self.assertIn('fathom_build_info{version="', final)


class ShutdownUnderLoad(unittest.TestCase):
    def test_sigterm_during_sweep_under_load_loses_nothing(self):
        tmp = tempfile.mkdtemp(prefix="fathom-load-")
        try:
            s = Server(db_dir=tmp, extra_args=["--workers", "1"]).start()
            sid = s.post("/v1/sweep", LONG).json()["id"]
            wait_for(s, sid, predicate=lambda d: d["progress"]["done"] > 0, timeout=300)
            keep = http.client.HTTPConnection("127.0.0.1", s.port, timeout=30 * SLOW)
            keep.request("GET", "/readyz")
            r = keep.getresponse()
            r.read()
            self.assertEqual(r.status, 200)
            stop = threading.Event()
            answered = []

            def load():
                while not stop.is_set():
                    try:
                        c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=5 * SLOW)
                        c.request("POST", "/v1/transformer", body='{"model":"gpt3-175B","tokens":3e11}')
                        resp = c.getresponse()
                        resp.read()
                        answered.append(resp.status)
                        c.close()
                    except OSError:
                        pass  # refused once the listening socket is closed: expected

            workers = [threading.Thread(target=load) for _ in range(4)]
            for w in workers:
                w.start()
            self.addCleanup(lambda: [stop.set()] + [w.join() for w in workers])
            # SIGTERM once the load is being answered (however slow the machine).
            wait_until(lambda: answered, "the first answers under load")
            s.proc.send_signal(signal.SIGTERM)
            # Readiness fails at once on a connection that was already open: once the server
            # says it is shutting down, /readyz answers 503.
            wait_until(lambda: any(rec.get("msg") == "shutting down" for rec in s.log_records()),
                       "the shutdown to begin")
            try:
                keep.request("GET", "/readyz")
                r = keep.getresponse()
                r.read()
                self.assertEqual(r.status, 503)
            except (OSError, http.client.HTTPException):
                pass  # the daemon may already have closed idle connections
            keep.close()
            self.assertEqual(s.proc.wait(30 * SLOW), 0)
            stop.set()
            for w in workers:
                w.join()
            self.assertTrue(answered)
            self.assertEqual(set(answered), {200})  # every request that got in was answered
            self.assertTrue(any(rec.get("msg") == "stopped cleanly" for rec in s.log_records()))
            s.cleanup()
            s = Server(db_dir=tmp).start()
            doc = wait_for(s, sid, timeout=300)
            self.assertEqual(doc["status"], "done")
            self.assertEqual(doc["counts"]["total"], 3892112)  # Calculon's count for this space
            self.assertEqual(s.stop(), 0)
            s.cleanup()
        finally:
            shutil.rmtree(tmp)


if __name__ == "__main__":
    unittest.main(verbosity=2)

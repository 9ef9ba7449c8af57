"""test_faults.py — what a planner's service must survive: SIGKILL in the middle of writes, a
full disk, a read-only database, slow clients and too many connections. Tests that need to mount
a file system (root) say so and skip where that is not allowed."""
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest

from harness import SLOW, Server, sqlite_only, wait_until

GPT = '{"model":{"hidden":%d,"attn_heads":8,"num_blocks":4,"seq_size":256},"tokens":1e9}'


def can_mount():
    d = tempfile.mkdtemp(prefix="fathom-mnt-")
    ok = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", d],
                        capture_output=True).returncode == 0
    if ok:
        subprocess.run(["umount", d])
    os.rmdir(d)
    return ok


class Mounted:
    """A small tmpfs of its own, for filling up or making read-only."""
    def __init__(self, size):
        self.dir = tempfile.mkdtemp(prefix="fathom-fs-")
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s" % size, "tmpfs", self.dir], check=True)

    def remount(self, mode):
        subprocess.run(["mount", "-o", "remount,%s" % mode, self.dir], check=True)

    def close(self):
        subprocess.run(["umount", "-l", self.dir])
        os.rmdir(self.dir)


class KillDuringWrites(unittest.TestCase):
    def test_sigkill_while_storing_results(self):
        tmp = tempfile.mkdtemp(prefix="fathom-kill-")
        try:
            s = Server(db_dir=tmp).start()
            stop = threading.Event()

            def hammer(k):
                i = 0
                while not stop.is_set():
                    i += 1
                    try:
                        c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=5)
                        c.request("POST", "/v1/transformer", body=GPT % (8 * (1000 * k + i)))
                        c.getresponse().read()
                        c.close()
                    except OSError:
                        return

            threads = [threading.Thread(target=hammer, args=(k,)) for k in range(4)]
            for t in threads:
                t.start()
            # Kill once writes are under way (at least a few batches stored), however slow the machine.
            wait_until(lambda: s.stored_count("SELECT COUNT(*) FROM results") > 20, "rows to be stored", 120)
            s.stop(signal.SIGKILL)
            stop.set()
            for t in threads:
                t.join()
            self.assertTrue(s.integrity_ok())
            rows = s.stored_rows("SELECT hash, request, response FROM results")
            self.assertGreater(len(rows), 10)
            for h, req, resp in rows:  # every stored row is whole
                json.loads(req)
                self.assertEqual(json.loads(resp)["params"]["total"] > 0, True)
            s = Server(db_dir=tmp).start()
            for h, _, resp in rows[:20]:
                got = s.get("/v1/results/" + h)
                self.assertEqual(got.status, 200)
                self.assertEqual(got.json()["response"], json.loads(resp))
            self.assertEqual(s.stop(), 0)
        finally:
            shutil.rmtree(tmp)


@sqlite_only  # the database's own disk: test_replicas stops the PostgreSQL server instead
@unittest.skipUnless(os.geteuid() == 0 and can_mount(), "needs root and tmpfs mounts")
class FullAndReadOnlyDisk(unittest.TestCase):
    def test_full_disk_refuses_writes_and_serves_cached_reads(self):
        fs = Mounted("2m")
        try:
            s = Server(db_dir=fs.dir).start()
            cached = s.post("/v1/transformer", GPT % 512)
            self.assertEqual(cached.status, 200)
            h = cached.header("ETag").strip('"')
            # The answer does not wait for its commit: wait for the row before filling the disk,
            # or the write-behind finds the disk full and the row is (rightly) never stored.
            s.wait_stored(h)
            # Fill what is left of the file system.
            with open(os.path.join(fs.dir, "ballast"), "wb") as f:
                try:
                    while True:
                        f.write(b"\0" * 65536)
                        f.flush()
                except OSError:
                    pass
            r = s.post("/v1/sweep", {"kind": "grid", "base": {"model": "gpt3-175B", "system": "a100_80g",
                                                              "execution": {"num_procs": 8, "data_par": 8, "batch_size": 8}},
                                     "axes": {"execution.microbatch_size": [1, 2]}})
            self.assertEqual(r.status, 503, r.body)
            self.assertEqual(r.json()["error"]["code"], "unavailable")
            # Cached reads still work; a new estimate is still computed (just not stored).
            self.assertEqual(s.post("/v1/transformer", GPT % 512).header("X-Fathom-Cache"), "hit")
            self.assertEqual(s.get("/v1/results/" + h).status, 200)
            fresh = s.post("/v1/transformer", GPT % 1024)
            self.assertEqual(fresh.status, 200)
            self.assertEqual(fresh.header("X-Fathom-Stored"), "false")
            os.unlink(os.path.join(fs.dir, "ballast"))
            self.assertEqual(s.stop(), 0)
        finally:
            fs.close()

    def test_read_only_database(self):
        fs = Mounted("16m")
        try:
            s = Server(db_dir=fs.dir).start()
            cached = s.post("/v1/transformer", GPT % 512)
            h = cached.header("ETag").strip('"')
            # Results are written behind the answer: wait for the row.
            s.wait_stored(h)
            s.stop(signal.SIGKILL)  # leaves the WAL and its index behind, as a crash would
            fs.remount("ro")
            s = Server(db_dir=fs.dir).start()
            self.assertEqual(s.get("/readyz").status, 200)
            self.assertEqual(s.post("/v1/transformer", GPT % 512).header("X-Fathom-Cache"), "hit")
            self.assertEqual(s.get("/v1/results/" + h).status, 200)
            r = s.post("/v1/sweep", {"kind": "optimal_execution", "model": "megatron-126M", "system": "a100_80g",
                                     "num_procs": 8, "max_batch_size": 64, "datatype": "float16"})
            self.assertEqual(r.status, 503, r.body)
            fresh = s.post("/v1/transformer", GPT % 2048)
            self.assertEqual(fresh.status, 200)
            self.assertEqual(fresh.header("X-Fathom-Stored"), "false")
            self.assertEqual(s.stop(), 0)
        finally:
            fs.close()


class SlowAndManyClients(unittest.TestCase):
    def test_slowloris_is_cut_off_and_others_are_served(self):
        s = Server(extra_args=["--connection-timeout", "2", "--max-per-ip", "0"]).start()
        try:
            socks = []
            for _ in range(40):
                c = socket.create_connection(("127.0.0.1", s.port))
                c.sendall(b"POST /v1/transformer HTTP/1.1\r\nHost: x\r\nX-Slow: ")
                socks.append(c)
            t0 = time.time()
            self.assertEqual(s.get("/healthz").status, 200)
            self.assertLess(time.time() - t0, 1.0 * SLOW)
            # Each slow connection is closed by the server once its 2 s are up: wait until every
            # one has been (a generous deadline), never for a guessed time.
            open_socks = list(socks)

            def all_closed():
                for c in list(open_socks):
                    c.settimeout(0.01)  # only looks: sending would keep the connection alive
                    try:
                        if c.recv(1) != b"":
                            continue
                    except socket.timeout:
                        continue  # still open
                    except OSError:
                        pass
                    open_socks.remove(c)
                return not open_socks
            wait_until(all_closed, "the server to close every slow connection", 60)
            self.assertGreaterEqual(time.time() - t0, 1.5, "closed before the connection timeout")
            for c in socks:
                c.close()
            self.assertEqual(s.stop(), 0)
        finally:
            s.cleanup()

    def assert_limit(self, extra_args, allowed, what):
        """With `allowed` connections held open, one more is closed unanswered; once they are
        released the server answers again."""
        s = Server(extra_args=extra_args).start()
        try:
            # Held connections are known to be accepted once each has had an answer (keep-alive
            # keeps them open afterwards): no guessing how long accepting takes.
            held = []
            for _ in range(allowed):
                c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=30 * SLOW)
                c.request("GET", "/healthz")
                self.assertEqual(c.getresponse().read() is not None, True)
                held.append(c)
            extra = socket.create_connection(("127.0.0.1", s.port))
            extra.settimeout(3)
            try:
                extra.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                got = extra.recv(100)
            except OSError:
                got = b""
            self.assertEqual(got, b"", "one connection past %s was served" % what)
            extra.close()
            for c in held:
                c.close()

            def answers():
                try:
                    return s.request("GET", "/healthz", timeout=2).status == 200
                except (OSError, http.client.HTTPException):
                    return False  # the server has not yet seen the held connections go
            wait_until(answers, "the server to answer again once the connections are released")
            self.assertEqual(s.stop(), 0)
        finally:
            s.cleanup()

    def test_per_ip_connection_limit(self):
        self.assert_limit(["--max-per-ip", "4"], 4, "--max-per-ip 4")

    def test_connection_limit(self):
        self.assert_limit(["--max-connections", "4", "--max-per-ip", "0", "--threads", "1"], 4,
                          "--max-connections 4")

    def test_chunked_body_past_the_limit(self):
        s = Server().start()
        try:
            c = socket.create_connection(("127.0.0.1", s.port))
            c.sendall(b"POST /v1/transformer HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                      b"Content-Type: application/json\r\n\r\n")
            chunk = b"x" * 65536
            try:
                for _ in range(40):  # 2.5 MiB
                    c.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                c.sendall(b"0\r\n\r\n")
            except OSError:
                pass
            c.settimeout(10)
            head = c.recv(200)
            c.close()
            self.assertTrue(head.startswith(b"HTTP/1.1 413"), head)
            self.assertEqual(s.stop(), 0)
        finally:
            s.cleanup()


if __name__ == "__main__":
    unittest.main(verbosity=2)

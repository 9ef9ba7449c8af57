"""test_big_download.py — a 100,000-point grid sweep (the default --max-sweep-points) downloads
whole, as JSON and as CSV, while fathomd's peak resident memory (VmHWM) stays under a bound, and a
paused download holds no database reader (a WAL checkpoint completes while the client waits).

Slow (about a minute on 2 cores: 100,000 estimates, ~500 MB written and read back), so it carries
the `slow` label and the ASan pass (-LE slow) leaves it out."""
import csv
import io
import json
import socket
import sqlite3
import time
import unittest

from harness import SLOW, Server, wait_until
from test_sweeps import GRID

POINTS = 100_000
# The bound of the issue: fathomd's whole peak, the sweep's run included. A download holds at most
# SWEEP_DOWNLOAD_MAX_BYTES (1 MiB) of text plus one decoded point, whatever the sweep's size.
MAX_PEAK_KB = 64 * 1024


def vm_hwm_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise AssertionError("no VmHWM in /proc/%d/status" % pid)


def get_stream(port, path):
    """A raw GET whose body is read a piece at a time (the answer is hundreds of megabytes)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=120 * SLOW)
    sock.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % path).encode())
    return sock, sock.makefile("rb", buffering=1 << 16)


def dechunk(f):
    """Yields the body's pieces of a chunked HTTP/1.1 answer (after its status and headers)."""
    status = f.readline()
    assert status.startswith(b"HTTP/1.1 200"), status
    headers = {}
    while True:
        line = f.readline().strip()
        if not line:
            break
        k, v = line.split(b":", 1)
        headers[k.strip().lower()] = v.strip()
    assert headers.get(b"transfer-encoding") == b"chunked", headers
    while True:
        size = int(f.readline().split(b";")[0], 16)
        if size == 0:
            return
        yield f.read(size)
        f.readline()


class BigDownload(unittest.TestCase):
    def test_full_results_in_bounded_memory(self):
        s = Server().start()
        try:
            body = dict(GRID, axes={"system.mem1.GiB": list(range(40, 1040)),
                                    "system.mem2.GiB": list(range(100, 200))})
            r = s.post("/v1/sweep", body)
            self.assertEqual(r.status, 202, r.body)
            sid = r.json()["id"]
            doc = wait_until(lambda: (lambda d: d if d["status"] in ("done", "failed") else None)(
                s.get("/v1/sweep/" + sid).json()), "the sweep to finish", 600)
            self.assertEqual(doc["status"], "done", doc.get("error"))
            self.assertEqual(doc["counts"]["total"], POINTS)
            # One answer from the store for the spot check below.
            first = s.get("/v1/sweep/%s/results?limit=1" % sid).json()["points"][0]

            # JSON: one GET of every point, parsed point by point as it arrives.
            sock, f = get_stream(s.port, "/v1/sweep/%s/results?limit=%d" % (sid, POINTS))
            dec = json.JSONDecoder()
            text, pos, count, head = "", 0, 0, None
            for piece in dechunk(f):
                text = text[pos:] + piece.decode()
                pos = 0
                if head is None:
                    at = text.find('"points":[')
                    if at < 0:
                        continue
                    head = json.loads(text[:at] + '"points":[]}')
                    pos = at + len('"points":[')
                while True:
                    while pos < len(text) and text[pos] in ",":
                        pos += 1
                    if pos >= len(text) or text[pos] == "]":
                        break
                    try:
                        point, end = dec.raw_decode(text, pos)
                    except ValueError:
                        break  # the rest of this point is in the next piece
                    self.assertEqual(point["index"], count)
                    if count == 0:
                        self.assertEqual(point, first)
                    count += 1
                    pos = end
            sock.close()
            # the trailer: the body is whole, and the next page would start after the last point
            self.assertEqual(json.loads('{"points":[' + text[pos:].strip()),
                             {"points": [], "complete": True, "next_offset": POINTS})
            self.assertEqual(head["size"], POINTS)
            self.assertEqual(count, POINTS)

            # CSV: the same points, one row each after the header.
            sock, f = get_stream(s.port, "/v1/sweep/%s/results?format=csv&limit=%d" % (sid, POINTS))
            rows, rest = 0, b""
            for piece in dechunk(f):
                lines = (rest + piece).split(b"\r\n")
                rest = lines.pop()
                for line in lines:
                    if line.startswith(b"#complete"):
                        self.assertEqual(line, b"#complete rows=%d next_offset=%d" % (POINTS, POINTS))
                        rows = -rows  # seen: nothing may follow
                        continue
                    self.assertGreaterEqual(rows, 0, "a row after the trailer")
                    if rows == 0:
                        self.assertTrue(line.startswith(b"index,system.mem1.GiB,system.mem2.GiB,status"), line[:80])
                    else:
                        self.assertEqual(next(csv.reader(io.StringIO(line.decode())))[0], str(rows - 1))
                    rows += 1
            sock.close()
            self.assertEqual(rest, b"")
            self.assertEqual(-rows, 1 + POINTS)

            # A paused download holds no reader: with the client not reading, a checkpoint that
            # must wait for every reader (TRUNCATE) completes.
            sock, f = get_stream(s.port, "/v1/sweep/%s/results?limit=%d" % (sid, POINTS))
            f.read(4096)
            db = sqlite3.connect(s.db, timeout=30)
            busy = wait_until(lambda: db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0 or None,
                              "a WAL checkpoint beside a paused download", 30)
            db.close()
            sock.close()
            self.assertTrue(busy)

            peak = vm_hwm_kb(s.proc.pid)
            print("fathomd VmHWM after a %d-point sweep and its downloads: %d kB" % (POINTS, peak))
            self.assertLess(peak, MAX_PEAK_KB, "fathomd's peak resident memory")
            self.assertEqual(s.stop(), 0)
        finally:
            s.cleanup()


if __name__ == "__main__":
    unittest.main(verbosity=2)

"""test_bad_corpus.py — the bad-input corpus of tests/bad_input/ sent as raw bytes on a socket:
invalid UTF-8, NUL and control bytes, HTTP framing, sweep options, shard groups (see its README).
Every case gets its status and, from Fathom, a JSON error object naming its field; nothing gets a
5xx from Fathom; /healthz answers after each; each request's log line keeps its path, status and
request id. Then mutations of the corpus drawn at random at run time — inputs that are not in the
repository — must get no 5xx from Fathom either, with the server answering after each."""
import codecs
import glob
import json
import os
import random
import re
import socket
import unittest

from harness import SOURCE, ServerTestCase, wait_until

CORPUS = os.path.join(SOURCE, "tests", "bad_input")
SMALL = {"kind": "optimal_execution", "model": "megatron-126M", "system": "a100_80g",
         "num_procs": 8, "max_batch_size": 64, "datatype": "float16", "options": {"top_n": 2}}


def load_cases():
    """[(file, line number, status, field or None, libmicrohttpd's own?, raw request template)]"""
    cases = []
    for path in sorted(glob.glob(os.path.join(CORPUS, "*.txt"))):
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        for n, line in enumerate(lines, 1):
            if not line.strip() or line.startswith("#"):
                continue
            expect, raw = line.split(" ", 1)
            mhd = expect.startswith("mhd:")
            status, _, field = expect[4:].partition(":") if mhd else expect.partition(":")
            cases.append((os.path.basename(path), n, int(status), field or None, mhd, raw))
    return cases


def render(raw, sweep):
    """The template's bytes: escapes decoded, {sweep} and {len} filled in."""
    data = codecs.escape_decode(raw.replace("{sweep}", sweep).encode("utf-8"))[0]
    head, sep, body = data.partition(b"\r\n\r\n")
    return head.replace(b"{len}", str(len(body)).encode()) + sep + body


def exchange(port, data, timeout=20):
    """Sends data on a fresh connection (closed for writing after it) and reads the answer:
    (status or None, headers as a dict of lower-case names, body bytes)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(data)
        try:
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        out = b""
        while True:
            try:
                piece = s.recv(65536)
            except (ConnectionResetError, socket.timeout):
                break
            if not piece:
                break
            out += piece
    finally:
        s.close()
    m = re.match(rb"HTTP/1\.[01] (\d{3})", out)
    if not m:
        return None, {}, out
    head, _, body = out.partition(b"\r\n\r\n")
    headers = {}
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        headers.setdefault(k.strip().lower().decode("latin-1"), v.strip().decode("latin-1"))
    if headers.get("transfer-encoding") == "chunked":
        plain, rest = b"", body
        while rest:
            size, _, rest = rest.partition(b"\r\n")
            n = int(size.split(b";")[0] or b"0", 16)
            if n == 0:
                break
            plain, rest = plain + rest[:n], rest[n + 2:]
        body = plain
    return int(m.group(1)), headers, body


class BadCorpus(ServerTestCase):
    def setUp(self):
        super().setUp()
        r = self.server.post("/v1/sweep", SMALL)
        self.sweep = r.json()["id"]
        wait_until(lambda: self.server.get("/v1/sweep/" + self.sweep).json()["status"] == "done",
                   "the corpus's sweep to finish")

    def assert_healthy(self, what):
        r = self.server.get("/healthz")
        self.assertEqual(r.status, 200, "no /healthz after %s" % what)

    def test_every_case(self):
        cases = load_cases()
        self.assertGreater(len(cases), 40)
        classes = {c[0] for c in cases}
        self.assertTrue({"encoding.txt", "control_bytes.txt", "framing.txt", "options.txt"} <= classes)
        for name, n, status, field, mhd, raw in cases:
            what = "%s:%d" % (name, n)
            with self.subTest(case=what):
                got, headers, body = exchange(self.server.port, render(raw, self.sweep))
                self.assertEqual(got, status, "%s: %r" % (what, body[:300]))
                if mhd:
                    # libmicrohttpd's own answer: never Fathom's (no request id)
                    self.assertNotIn("x-request-id", headers, what)
                else:
                    self.assertIn("x-request-id", headers, what)
                    if status >= 400:
                        doc = json.loads(body)
                        self.assertEqual(set(doc), {"error"}, what)
                        self.assertTrue(doc["error"]["code"] and doc["error"]["message"], what)
                        if field is not None:
                            self.assertEqual(doc["error"].get("field"), field, what)
                    # the request's log line keeps its id, path and status
                    rid = headers["x-request-id"]
                    rec = wait_for_record(self.server, rid)
                    self.assertEqual(rec["status"], status, what)
                    self.assertTrue(rec["path"].startswith("/"), what)
                self.assert_healthy(what)

    def test_mutations_not_in_the_repository(self):
        """Mutations of the corpus drawn now: bytes flipped, inserted or cut in the request
        line and headers, percent-escapes of any byte put in the path and query. None may get a
        5xx from Fathom; the server must answer after each."""
        seed = random.randrange(1 << 30)
        rng = random.Random(seed)
        templates = [render(c[5], self.sweep) for c in load_cases()]
        fathom_answers = 0
        for i in range(300):
            data = bytearray(rng.choice(templates))
            line_end = data.find(b"\r\n")
            for _ in range(rng.randint(1, 4)):
                how = rng.randrange(4)
                at = rng.randrange(max(1, line_end)) if line_end > 0 else 0
                if how == 0:
                    data[at:at] = b"%%%02X" % rng.randrange(256)
                elif how == 1:
                    data[at:at] = bytes([rng.randrange(256)])
                elif how == 2 and len(data) > 1:
                    del data[at]
                else:
                    pos = rng.randrange(len(data))
                    data[pos] = rng.randrange(256)
            got, headers, body = exchange(self.server.port, bytes(data), timeout=30)
            what = "mutation %d (seed %d): %r" % (i, seed, bytes(data[:200]))
            if got is not None and "x-request-id" in headers:
                fathom_answers += 1
                self.assertLess(got, 500, "%s -> %r" % (what, body[:200]))
            if i % 25 == 0:
                self.assert_healthy(what)
        self.assert_healthy("the mutations (seed %d)" % seed)
        self.assertGreater(fathom_answers, 50, "seed %d: too few mutations reached Fathom" % seed)


def wait_for_record(server, request_id):
    """The log record of a request (written after its answer)."""
    def find():
        for rec in server.log_records():
            if rec.get("request_id") == request_id and rec.get("msg") == "request":
                return rec
        return None
    return wait_until(find, "the log line of request " + request_id, timeout=10)


if __name__ == "__main__":
    unittest.main(verbosity=2)

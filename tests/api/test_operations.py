"""test_operations.py — fathomd as an operator runs it: settings refused before anything is
opened (exit 2), one process per SQLite file, SIGHUP, and /metrics as strict Prometheus text."""
import os
import re
import signal
import socket
import subprocess
import tempfile
import unittest

from harness import FATHOMD, SLOW, SOURCE, Server, ServerTestCase, sqlite_only, wait_until

DATA_ARGS = ["--presets", os.path.join(SOURCE, "presets"),
             "--migrations", os.path.join(SOURCE, "migrations"),
             "--static", os.path.join(SOURCE, "static"),
             "--schemas", os.path.join(SOURCE, "schemas")]


def run_fathomd(args, env=None, cwd=None, timeout=10):
    """Runs fathomd expecting it to refuse to start; returns (exit status, stderr). A fathomd
    that starts instead is stopped and reported as a failure."""
    full_env = dict(os.environ, **(env or {}))
    try:
        out = subprocess.run([FATHOMD] + DATA_ARGS + args, capture_output=True, text=True,
                             env=full_env, cwd=cwd, timeout=timeout * SLOW)
    except subprocess.TimeoutExpired as e:
        raise AssertionError("fathomd %s started instead of refusing:\n%s" % (args, e.stderr))
    return out.returncode, out.stderr


class Settings(unittest.TestCase):
    def test_db_values_sqlite_would_misread_are_refused(self):
        """SQLite takes "" and ":memory:" and gives each pooled connection a private database:
        fathomd answered /readyz 200 while every read failed with "no such table", and kept
        nothing at exit. An empty FATHOM_DB (an unset variable in a manifest) did that. A libpq
        key=value string or an upper-case scheme became a SQLite file named after it, the
        password in the "listening" log line (or in the error)."""
        with tempfile.TemporaryDirectory() as tmp:
            for env, args in (({"FATHOM_DB": ""}, []), ({}, ["--db", ""]),
                              ({}, ["--db", ":memory:"]),
                              ({"FATHOM_DB": "host=db user=fathom password=hunter2"}, []),
                              ({}, ["--db", "POSTGRESQL://fathom:hunter2@db:5432/fathom"])):
                with self.subTest(env=env, args=args):
                    rc, err = run_fathomd(["--listen", "127.0.0.1:0"] + args, env=env, cwd=tmp)
                    self.assertEqual(rc, 2, err)
                    self.assertIn("FATHOM_DB", err)
                    self.assertNotIn("hunter2", err)
            self.assertEqual(os.listdir(tmp), [])

    def test_listen_address_is_checked_as_a_setting(self):
        """A host that is not an address was reported (exit 1) only after the database had been
        opened and migrated; trailing text after an IPv6 address's bracket was ignored."""
        with tempfile.TemporaryDirectory() as tmp:
            db = os.path.join(tmp, "fathom.db")
            for listen in ("foo:0", "[::1]x:0", "[::1:0", "[127.0.0.1]:0", ":0", "127.0.0.1",
                           "127.0.0.1:65536", "256.0.0.1:0"):
                with self.subTest(listen=listen):
                    rc, err = run_fathomd(["--listen", listen, "--db", db])
                    self.assertEqual(rc, 2, err)
                    self.assertIn("is not ADDR:PORT", err)
                    self.assertFalse(os.path.exists(db), "the database was opened first")

    def test_bracketed_ipv6_listen_address(self):
        try:
            with socket.socket(socket.AF_INET6) as probe:
                probe.bind(("::1", 0))
        except OSError:
            self.skipTest("no IPv6 loopback here")
        s = Server(extra_args=["--listen", "[::1]:0"]).start()
        try:
            listening = [r for r in s.log_records() if r.get("msg") == "listening"][0]
            self.assertEqual(listening["host"], "::1")
            with socket.create_connection(("::1", s.port), timeout=10 * SLOW) as c:
                c.sendall(b"GET /healthz HTTP/1.0\r\n\r\n")
                self.assertRegex(c.recv(64), rb"^HTTP/1\.[01] 200 ")
            self.assertEqual(s.stop(), 0)
        finally:
            s.cleanup()


class Lifecycle(unittest.TestCase):
    @sqlite_only
    def test_second_fathomd_on_the_same_sqlite_file_is_refused(self):
        """Both started, and each resumes the queued and running sweeps it finds at start: the
        same sweep ran twice, racing over its checkpoints."""
        first = Server().start()
        try:
            second = Server(db_dir=first.db_dir)
            with self.assertRaises(AssertionError):
                second.start(timeout=10)
            self.assertEqual(second.proc.wait(10 * SLOW), 1)
            # One JSON log line, as every line fathomd writes (it was plain text).
            said = [r for r in second.log_records() if r.get("msg") == "cannot start"]
            self.assertEqual(len(said), 1, second.lines)
            self.assertEqual(said[0]["level"], "error")
            self.assertIn("in use by another fathomd", said[0]["reason"])
            second.cleanup()
            self.assertEqual(first.get("/readyz").status, 200)
            self.assertEqual(first.stop(), 0)
            # The lock goes with the process: the next one starts.
            third = Server(db_dir=first.db_dir).start()
            self.assertEqual(third.get("/readyz").status, 200)
            self.assertEqual(third.stop(), 0)
            third.cleanup()
        finally:
            first.cleanup()

    @sqlite_only
    def test_a_database_a_newer_fathomd_migrated_is_named_in_a_warning(self):
        """It started silently: an operator rolling back could not tell this build may not read
        what the newer one wrote."""
        import sqlite3
        known = max(int(f[:4]) for f in os.listdir(os.path.join(SOURCE, "migrations"))
                    if f.endswith(".sql"))
        first = Server().start()
        try:
            self.assertEqual(first.stop(), 0)
            self.assertFalse([r for r in first.log_records() if r.get("level") == "warn"],
                             first.lines)
            with sqlite3.connect(first.db) as db:
                db.execute("INSERT INTO schema_migrations VALUES (?, '9999_future', 'now')",
                           (known + 1,))
            again = Server(db_dir=first.db_dir).start()
            self.assertEqual(again.get("/readyz").status, 200)
            self.assertEqual(again.stop(), 0)
            warned = [r for r in again.log_records()
                      if r.get("msg") == "database schema is newer than this fathomd"]
            self.assertEqual(len(warned), 1, again.lines)
            self.assertEqual((warned[0]["schema_version"], warned[0]["known_schema_version"]),
                             (known + 1, known))
            again.cleanup()
        finally:
            first.cleanup()

    def test_sighup_is_logged_and_ignored(self):
        """SIGHUP's default action ended fathomd at once, with no clean close."""
        s = Server().start()
        try:
            s.proc.send_signal(signal.SIGHUP)
            wait_until(lambda: any("SIGHUP ignored" in r.get("msg", "") for r in s.log_records()),
                       "the SIGHUP log line", timeout=10)
            self.assertIsNone(s.proc.poll())
            self.assertEqual(s.get("/readyz").status, 200)
            self.assertEqual(s.stop(), 0)
            self.assertTrue(any(r.get("msg") == "stopped cleanly" for r in s.log_records()))
        finally:
            s.cleanup()


NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
SAMPLE = re.compile(r"^(%s)(?:\{(.*)\})? (\S+)$" % NAME)
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,|$)')


def prometheus_problems(text):
    """What is wrong with text as Prometheus text exposition 0.0.4, strictly."""
    problems, types, helps, seen, done, hist = [], {}, set(), set(), set(), {}
    current = None
    if not text.endswith("\n"):
        problems.append("no final newline")

    def family(name):
        for suffix in ("_bucket", "_sum", "_count"):
            base = name[:-len(suffix)]
            if name.endswith(suffix) and types.get(base) == "histogram":
                return base
        return name

    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            _, kind, name, rest = line.split(" ", 3)
            if name in done:
                problems.append("%d: %s after the samples of %s" % (n, kind, name))
            if kind == "HELP":
                if name in helps:
                    problems.append("%d: second HELP for %s" % (n, name))
                helps.add(name)
            else:
                if name in types:
                    problems.append("%d: second TYPE for %s" % (n, name))
                types[name] = rest
                if rest == "counter" and not name.endswith("_total"):
                    problems.append("%d: counter %s does not end in _total" % (n, name))
            current = name
            continue
        m = SAMPLE.match(line)
        if not m:
            problems.append("%d: not a sample: %r" % (n, line))
            continue
        name, labels, value = m.groups()
        fam = family(name)
        if fam not in types:
            problems.append("%d: %s has no TYPE before it" % (n, name))
        if fam != current and fam in done:
            problems.append("%d: samples of %s are not together" % (n, fam))
        current = fam
        done.add(fam)
        lab, pos = {}, 0
        for lm in LABEL.finditer(labels or ""):
            if lm.start() != pos or lm.group(1) in lab:
                break
            lab[lm.group(1)] = lm.group(2)
            pos = lm.end()
        if pos != len(labels or ""):
            problems.append("%d: bad labels %r" % (n, labels))
        try:
            float(value)
        except ValueError:
            problems.append("%d: bad value %r" % (n, value))
            continue
        key = (name, tuple(sorted(lab.items())))
        if key in seen:
            problems.append("%d: duplicate series %r" % (n, key))
        seen.add(key)
        if types.get(fam) == "histogram":
            h = hist.setdefault((fam, tuple(sorted((k, v) for k, v in lab.items() if k != "le"))),
                                {"buckets": [], "count": None, "sum": None})
            if name.endswith("_bucket"):
                h["buckets"].append((lab.get("le"), float(value)))
            else:
                h[name.rsplit("_", 1)[1]] = float(value)
    for (fam, labels), h in hist.items():
        les = [le for le, _ in h["buckets"]]
        counts = [c for _, c in h["buckets"]]
        if not les or les[-1] != "+Inf":
            problems.append("%s%r: no le=\"+Inf\" bucket last" % (fam, labels))
        elif les[:-1] != sorted(les[:-1], key=float) or counts != sorted(counts):
            problems.append("%s%r: buckets not in order or not cumulative" % (fam, labels))
        elif h["count"] != counts[-1] or h["sum"] is None:
            problems.append("%s%r: _count is not the +Inf bucket, or no _sum" % (fam, labels))
    return problems


class Metrics(ServerTestCase):
    def test_metrics_is_strict_prometheus_text(self):
        for path in ("/healthz", "/readyz", "/nope", "/v1/version"):
            self.server.get(path)
        self.server.request("PATCH", "/metrics")
        r = self.server.get("/metrics")
        self.assertEqual(r.status, 200)
        self.assertTrue(r.header("Content-Type").startswith("text/plain"), r.header("Content-Type"))
        self.assertEqual(prometheus_problems(r.body), [], r.body)
        # The checker itself catches what it is for.
        self.assertTrue(prometheus_problems("# TYPE a counter\na 1\n"))
        self.assertTrue(prometheus_problems("# TYPE a_total counter\na_total 1\na_total 2\n"))
        self.assertTrue(prometheus_problems(
            '# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n'))


if __name__ == "__main__":
    unittest.main(verbosity=2)

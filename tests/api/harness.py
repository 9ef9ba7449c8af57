"""harness.py — starts a real fathomd for the API tests and talks HTTP to it.

Each Server runs the binary named by $FATHOMD on a free loopback port (--listen 127.0.0.1:0; the
port is read from the "listening" log line) with its database in a temporary directory, and
keeps every log line it prints so tests can assert on them.

With FATHOM_TEST_DB set to a PostgreSQL DSN (postgresql://user@host:port/db, a superuser's: the
test stage scripts/test.d/17-postgresql.sh sets it), every Server gets a database of its own on
that server instead of a SQLite file: named after its directory, so a Server started again on the
same db_dir finds the same data. Tests that read or damage the SQLite file itself are marked
@sqlite_only and skipped then.
"""
import hashlib
import http.client
import json
import os
import signal
import subprocess
import tempfile
import threading
import time
import unittest

SOURCE = os.environ.get("FATHOM_SOURCE", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
FATHOMD = os.environ.get("FATHOMD", os.path.join(SOURCE, "build", "fathomd"))
FATHOM_CLI = os.environ.get("FATHOM_CLI", os.path.join(SOURCE, "build", "fathom"))
# Under valgrind or sanitizers everything is slower; tests scale their waits by this.
SLOW = float(os.environ.get("FATHOM_TEST_SLOWDOWN", "1"))
# A command that runs fathomd (e.g. "valgrind --error-exitcode=99 ..."): the stage that checks
# for memory errors sets it, and a non-zero exit at shutdown then fails the test.
WRAPPER = os.environ.get("FATHOM_TEST_WRAPPER", "").split()
PG_DSN = os.environ.get("FATHOM_TEST_DB", "")

sqlite_only = unittest.skipIf(PG_DSN, "reads, damages or replaces the SQLite file itself")


def pg_dsn(database):
    """The DSN of `database` on the FATHOM_TEST_DB server."""
    import urllib.parse
    u = urllib.parse.urlsplit(PG_DSN)
    return urllib.parse.urlunsplit((u.scheme, u.netloc, "/" + database, u.query, ""))


def psql(dsn, sql):
    """Runs sql with psql on dsn; returns its unaligned output."""
    out = subprocess.run(["psql", "-X", "-qtA", "-v", "ON_ERROR_STOP=1", dsn, "-c", sql],
                         capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise AssertionError("psql failed: %s" % out.stderr)
    return out.stdout.strip()


def pg_create(database):
    """Creates `database` unless it exists; returns its DSN."""
    if not psql(PG_DSN, "SELECT 1 FROM pg_database WHERE datname = '%s'" % database):
        psql(PG_DSN, "CREATE DATABASE %s" % database)
    return pg_dsn(database)


def wait_until(predicate, what, timeout=60):
    """Polls predicate() until it returns something true and returns that; fails after timeout
    seconds (scaled by SLOW). Tests wait for the state they need this way, never for a fixed time:
    on a busy machine a fixed sleep is either too short (a flaky test) or wastes time."""
    deadline = time.time() + timeout * SLOW
    while True:
        got = predicate()
        if got:
            return got
        if time.time() > deadline:
            raise AssertionError("gave up after %ss waiting for %s" % (timeout * SLOW, what))
        time.sleep(0.02)


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def json(self):
        return json.loads(self.body)

    def header(self, name):
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None


class Server:
    def __init__(self, db_dir=None, extra_args=(), env=None, wrapper=(), pg_database=None,
                 sqlite=False):
        """pg_database: with FATHOM_TEST_DB, the database to use (replicas share one by name);
        sqlite: a SQLite file even when FATHOM_TEST_DB is set (a reference to compare with)."""
        self.tmp = None
        if db_dir is None:
            self.tmp = tempfile.TemporaryDirectory(prefix="fathom-api-")
            db_dir = self.tmp.name
        self.db_dir = db_dir
        self.db = os.path.join(db_dir, "fathom.db")
        self.pg_database = None
        self.owns_database = pg_database is None
        if PG_DSN and not sqlite:
            self.pg_database = pg_database or (
                "fathom_" + hashlib.sha1(os.path.abspath(db_dir).encode()).hexdigest()[:16])
        self.extra_args = list(extra_args)
        self.env = dict(os.environ, **(env or {}))
        self.wrapper = list(wrapper) or list(WRAPPER)
        self.proc = None
        self.port = None
        self.lines = []
        self._ready = threading.Event()

    def db_arg(self):
        """What --db is: the SQLite file, or this server's PostgreSQL database."""
        return pg_create(self.pg_database) if self.pg_database else self.db

    def start(self, timeout=30):
        args = self.wrapper + [FATHOMD, "--listen", "127.0.0.1:0", "--db", self.db_arg(),
                               "--presets", os.path.join(SOURCE, "presets"),
                               "--migrations", os.path.join(SOURCE, "migrations"),
                               "--static", os.path.join(SOURCE, "static"),
                               "--schemas", os.path.join(SOURCE, "schemas")] + self.extra_args
        self.proc = subprocess.Popen(args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                     env=self.env, text=True)
        self._reader = threading.Thread(target=self._read_log, daemon=True)
        self._reader.start()
        if not self._ready.wait(timeout * SLOW) or self.port is None:
            self.kill()
            raise AssertionError("fathomd did not start:\n" + "\n".join(self.lines))
        return self

    def _read_log(self):
        self._read_lines()
        self._ready.set()  # the process ended: stop waiting for "listening"

    def _read_lines(self):
        for line in self.proc.stderr:
            line = line.rstrip("\n")
            self.lines.append(line)
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if rec.get("msg") == "listening":
                self.port = rec["port"]
                self._ready.set()

    def report(self, n=60):
        """The lines that are not JSON log records (sanitizer and valgrind reports), else the log's tail."""
        other = [l for l in self.lines if not l.startswith("{")]
        return "\n".join((other or self.lines)[:n])

    def log_records(self):
        out = []
        for line in list(self.lines):
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
        return out

    def request(self, method, path, body=None, headers=None, timeout=60):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout * SLOW)
        hdrs = dict(headers or {})
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
            hdrs.setdefault("Content-Type", "application/json")
        try:
            conn.request(method, path, body=body, headers=hdrs)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered (413) and closed before the whole body was sent
        r = conn.getresponse()
        resp = Response(r.status, r.getheaders(), r.read().decode("utf-8", "replace"))
        conn.close()
        return resp

    def send_oversized(self, path, declared, chunk=b"x" * 65536, total=None):
        """Declares a body of `declared` bytes and sends up to `total` of it; the server may
        answer (and close) before the body is sent, which is what a limit should do."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30 * SLOW)
        conn.putrequest("POST", path)
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Content-Length", str(declared))
        conn.endheaders()
        sent = 0
        try:
            while sent < (total if total is not None else declared):
                conn.send(chunk)
                sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass
        r = conn.getresponse()
        resp = Response(r.status, r.getheaders(), r.read().decode("utf-8", "replace"))
        conn.close()
        return resp

    def stored_rows(self, sql, args=()):
        """The rows of a query (? placeholders) run on the server's database with a connection
        of its own, as tuples (integers as int)."""
        if self.pg_database:
            for a in args:
                sql = sql.replace("?", "'%s'" % str(a).replace("'", "''"), 1)
            out = subprocess.run(["psql", "-X", "-qtA", "-F", "\x1f", "-R", "\x1e", "-v", "ON_ERROR_STOP=1",
                                  pg_dsn(self.pg_database), "-c", sql],
                                 capture_output=True, text=True, timeout=60)
            if out.returncode != 0:
                raise AssertionError("psql failed: %s" % out.stderr)
            text = out.stdout.rstrip("\n")
            return [tuple(int(v) if v.lstrip("-").isdigit() else v for v in row.split("\x1f"))
                    for row in text.split("\x1e") if row]
        import sqlite3
        db = sqlite3.connect(self.db, timeout=30)
        try:
            return db.execute(sql, args).fetchall()
        finally:
            db.close()

    def stored_row(self, sql, args=()):
        """The first row of stored_rows, or None."""
        rows = self.stored_rows(sql, args)
        return rows[0] if rows else None

    def stored_count(self, sql, args=()):
        """A COUNT(*) query run on the server's database with a connection of its own."""
        return self.stored_row(sql, args)[0]

    def integrity_ok(self):
        """Whether the database checks out: SQLite's integrity_check (PostgreSQL keeps its own)."""
        if self.pg_database:
            return True
        import sqlite3
        db = sqlite3.connect(self.db, timeout=30)
        try:
            return db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        finally:
            db.close()

    def wait_stored(self, result_hash, timeout=60):
        """Until the write-behind has stored the result row `result_hash` (answers do not wait
        for their commit, so a test that needs the row on disk waits for it)."""
        wait_until(lambda: self.stored_count("SELECT COUNT(*) FROM results WHERE hash=?", (result_hash,)),
                   "result %s to be stored" % result_hash, timeout)

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, body, **kw):
        return self.request("POST", path, body=body, **kw)

    def stop(self, sig=signal.SIGTERM, timeout=30):
        """Sends sig and waits; returns the exit status."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout * SLOW)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("fathomd did not stop within %ss" % timeout)
        self._close_log()
        if self.proc.returncode != 0 and sig != signal.SIGKILL:
            import sys
            sys.stderr.write("fathomd exited with %s:\n%s\n" % (self.proc.returncode, self.report()))
        return self.proc.returncode

    def _close_log(self):
        """Once the process is gone: the reader has seen EOF; close its pipe."""
        if self.proc and self.proc.poll() is not None and self.proc.stderr and not self.proc.stderr.closed:
            self._reader.join(5)
            if not self._reader.is_alive():
                self.proc.stderr.close()

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._close_log()

    def cleanup(self):
        self.kill()
        if self.tmp:
            self.tmp.cleanup()
            if self.pg_database and self.owns_database:
                psql(PG_DSN, "DROP DATABASE IF EXISTS %s" % self.pg_database)


class ServerTestCase(unittest.TestCase):
    """One fathomd for the whole class."""
    server_args = ()

    @classmethod
    def setUpClass(cls):
        cls.server = Server(extra_args=cls.server_args).start()

    @classmethod
    def tearDownClass(cls):
        status = cls.server.stop()
        cls.server.cleanup()
        if status != 0:
            raise AssertionError("fathomd exited with %s:\n%s" % (status, cls.server.report()))

    def assertError(self, resp, status, code, field=None):
        self.assertEqual(resp.status, status, resp.body)
        self.assertEqual(resp.header("Content-Type"), "application/json")
        err = resp.json()["error"]
        self.assertEqual(err["code"], code, resp.body)
        self.assertTrue(err["message"])
        if field is not None:
            self.assertEqual(err.get("field"), field, resp.body)
        return err


def load_schema(name):
    with open(os.path.join(SOURCE, "schemas", name)) as f:
        return json.load(f)


def validate(instance, schema_name):
    """Validates instance against schemas/<schema_name> (jsonschema, draft 2020-12)."""
    import jsonschema
    schema = load_schema(schema_name)
    store = {}
    for fn in os.listdir(os.path.join(SOURCE, "schemas")):
        if fn.endswith(".json") and fn != "openapi.json":
            s = load_schema(fn)
            store[s.get("$id", fn)] = s
    resolver = jsonschema.RefResolver(base_uri=schema.get("$id", ""), referrer=schema, store=store)
    jsonschema.Draft202012Validator(schema, resolver=resolver).validate(instance)

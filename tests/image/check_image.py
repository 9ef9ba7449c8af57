#!/usr/bin/python3
"""check_image.py — checks an exported Fathom image and gets real answers from fathomd inside it.

Called by tests/image/test_image.sh with the folder `podman export` filled (--rootfs) and the
output of `podman image inspect` (--inspect). It checks the image's configuration (non-root
numeric user, port, volume, environment, healthcheck, entrypoint) and contents (no compiler or
headers, the data directories as in the source tree), then runs
    chroot --userspec=<the image's user> ROOTFS /usr/local/bin/fathomd --listen 127.0.0.1:0
as PID 1 of a new PID namespace (unshare), with the image's environment (so
FATHOM_DB=/data/fathom.db and the compiled-in data directory are what is tested), and calls
it: /healthz, /readyz, the image's HEALTHCHECK command, an estimate compared with Calculon's
numbers (tests/data/llm), a sweep polled until done and compared with Calculon's count of
executions (tests/data/search/README.md), /metrics, and SIGTERM to PID 1 → exit 0.
Prints one line per check and "image: N passed, N failed" last.
"""
import argparse
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

# The sweep: Calculon's exhaustive optimal-execution search of megatron-126M on 8 a100_80g with
# batch at most 64 tries 298,072 executions (tests/data/search/README.md, "Sizes of exhaustive
# searches").
SWEEP_REQUEST = {"kind": "optimal_execution", "model": "megatron-126M", "system": "a100_80g",
                 "num_procs": 8, "max_batch_size": 64}
SWEEP_TOTAL_EXECUTIONS = 298072
SWEEP_TIMEOUT_S = 900
REL_TOL = 1e-9  # as tests/unit/llm/test_llm_golden.c

# Programs that make a runtime stage a build stage: compilers, their drivers and the assembler
# and linker they call.
COMPILER_RE = re.compile(r"^(?:[a-z0-9_]+-linux-gnu[a-z]*-)?"
                         r"(?:cc|c\+\+|c89|c99|gcc|g\+\+|cpp|clang|clang\+\+|clang-cpp|tcc|cc1|"
                         r"cc1plus|collect2|as|ld|ld\.bfd|ld\.gold|lld|ld\.lld)"
                         r"(?:-[0-9][0-9.]*)?$")
BIN_DIRS = ["bin", "sbin", "usr/bin", "usr/sbin", "usr/local/bin", "usr/local/sbin", "usr/libexec",
            "usr/lib/gcc", "usr/lib/llvm-14", "usr/lib/llvm-15"]
DATA_DIRS = ["static", "presets", "migrations", "schemas"]
DATADIR = "usr/local/share/fathom"

passed = 0
failed = 0


def check(ok, what, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"  ok   {what}")
    else:
        failed += 1
        print(f"  FAIL {what}" + (f": {detail}" if detail else ""))
    sys.stdout.flush()
    return ok


def finish():
    print(f"image: {passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


def load_inspect(path):
    with open(path) as f:
        data = json.load(f)
    img = data[0] if isinstance(data, list) else data
    cfg = img.get("Config") or {}
    health = img.get("HealthCheck") or img.get("Healthcheck") or cfg.get("Healthcheck")
    return img, cfg, health


def resolve_user(rootfs, user):
    """The image's USER ("uid[:gid]" or names) as numbers, looked up in the image's files."""
    name, _, group = user.partition(":")

    def lookup(path, key, want_field):
        with open(os.path.join(rootfs, path)) as f:
            for line in f:
                parts = line.rstrip("\n").split(":")
                if parts[0] == key:
                    return int(parts[want_field])
        raise KeyError(f"{key} not in /{path}")

    uid = int(name) if name.isdigit() else lookup("etc/passwd", name, 2)
    if group:
        gid = int(group) if group.isdigit() else lookup("etc/group", group, 2)
    else:
        gid = lookup("etc/passwd", name, 3) if not name.isdigit() else uid
    return uid, gid


def check_config(rootfs, cfg, health):
    print("image configuration:")
    user = cfg.get("User") or ""
    check(user != "", "USER is set", "the image runs as root")
    uid, gid = resolve_user(rootfs, user) if user else (0, 0)
    check(uid != 0, f"USER {user!r} is not root (uid {uid})")
    check(user.split(":")[0].isdigit(), f"USER {user!r} is numeric",
          "Kubernetes runAsNonRoot cannot verify a user name")
    with open(os.path.join(rootfs, "etc/passwd")) as f:
        names = {int(l.split(":")[2]): l.split(":")[0] for l in f if l.count(":") >= 6}
    check(uid in names, f"uid {uid} has an entry in /etc/passwd ({names.get(uid)})")
    env = dict(e.split("=", 1) for e in cfg.get("Env") or [])
    check(env.get("FATHOM_DB") == "/data/fathom.db", "ENV FATHOM_DB=/data/fathom.db",
          str(env.get("FATHOM_DB")))
    check(env.get("FATHOM_LISTEN") == "0.0.0.0:8080", "ENV FATHOM_LISTEN=0.0.0.0:8080",
          str(env.get("FATHOM_LISTEN")))
    check("8080/tcp" in (cfg.get("ExposedPorts") or {}), "EXPOSE 8080",
          str(cfg.get("ExposedPorts")))
    check("/data" in (cfg.get("Volumes") or {}), "VOLUME /data", str(cfg.get("Volumes")))
    check((cfg.get("Entrypoint") or [None])[0] == "/usr/local/bin/fathomd" and not cfg.get("Cmd"),
          "ENTRYPOINT is fathomd in exec form (PID 1, gets SIGTERM)",
          f"Entrypoint {cfg.get('Entrypoint')} Cmd {cfg.get('Cmd')}")
    test = (health or {}).get("Test") or []
    check(len(test) > 1 and test[0] == "CMD", "HEALTHCHECK is set (exec form)", str(health))
    st = os.stat(os.path.join(rootfs, "data"))
    check(st.st_uid == uid, f"/data is owned by uid {uid}", f"owned by {st.st_uid}")
    return uid, gid, env, test[1:]


def check_contents(rootfs, context):
    print("image contents:")
    found = []
    for d in BIN_DIRS:
        top = os.path.join(rootfs, d)
        for dirpath, _, files in os.walk(top):
            for fn in files:
                if COMPILER_RE.match(fn):
                    found.append(os.path.relpath(os.path.join(dirpath, fn), rootfs))
    check(not found, "no compiler, assembler or linker (cc, gcc, clang, cpp, as, ld...)",
          ", ".join(found[:10]))
    check(not os.path.exists(os.path.join(rootfs, "usr/lib/gcc")), "no /usr/lib/gcc (cc1)")
    headers = []
    for dirpath, _, files in os.walk(os.path.join(rootfs, "usr/include")):
        headers += [fn for fn in files if fn.endswith(".h")]
    check(not headers, "no C headers (-dev packages)", ", ".join(headers[:10]))
    for prog in ("usr/bin/node", "usr/bin/nodejs", "usr/bin/npm", "usr/bin/cmake", "usr/bin/make"):
        check(not os.path.lexists(os.path.join(rootfs, prog)), f"no /{prog}")
    for d in ("src", "build", "stage"):
        check(not os.path.lexists(os.path.join(rootfs, d)), f"no build-stage folder /{d}")
    for prog in ("fathomd", "fathom"):
        p = os.path.join(rootfs, "usr/local/bin", prog)
        check(os.access(p, os.X_OK), f"/usr/local/bin/{prog} is there and executable")
    for d in DATA_DIRS:
        img_dir = os.path.join(rootfs, DATADIR, d)
        src_dir = os.path.join(context, d)
        if not check(os.path.isdir(img_dir), f"/{DATADIR}/{d}/ is there"):
            continue
        if d == "static":
            continue  # the image's static/ also has the build stage's vendor/ bundle
        want = sorted(os.path.relpath(os.path.join(p, f), src_dir)
                      for p, _, fs in os.walk(src_dir) for f in fs)
        have = sorted(os.path.relpath(os.path.join(p, f), img_dir)
                      for p, _, fs in os.walk(img_dir) for f in fs)
        check(want == have, f"/{DATADIR}/{d}/ holds the source tree's {len(want)} files",
              f"missing {sorted(set(want) - set(have))[:5]} extra {sorted(set(have) - set(want))[:5]}")


class Fathomd:
    """fathomd running chrooted in the exported image, as the image's user, on a free port, and
    as PID 1 of a PID namespace of its own (unshare), as in a container: the kernel then drops
    every signal fathomd has no handler for, so SIGTERM stops it only if it handles SIGTERM."""

    def __init__(self, rootfs, uid, gid, env):
        self.lines = []
        self.port = None
        self._listening = threading.Event()
        args = ["unshare", "--pid", "--fork", "--kill-child",
                "chroot", f"--userspec={uid}:{gid}", rootfs, "/usr/local/bin/fathomd",
                "--listen", "127.0.0.1:0"]
        print("  $ " + " ".join(args))
        self.proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
        threading.Thread(target=self._read, daemon=True).start()
        self.pid = None  # fathomd's pid as this machine sees it (unshare's child)

    def find_pid(self, timeout=10):
        path = f"/proc/{self.proc.pid}/task/{self.proc.pid}/children"
        end = time.monotonic() + timeout
        while time.monotonic() < end and self.proc.poll() is None:
            try:
                with open(path) as f:
                    kids = f.read().split()
            except OSError:
                kids = []
            if kids:
                self.pid = int(kids[0])
                return self.pid
            time.sleep(0.05)
        return None

    def _read(self):
        for line in self.proc.stderr:
            line = line.rstrip("\n")
            self.lines.append(line)
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict) and rec.get("msg") == "listening":
                self.port = rec.get("port")
                self._listening.set()
        self._listening.set()

    def wait_listening(self, timeout):
        self._listening.wait(timeout)
        return self.port

    def request(self, method, path, body=None, timeout=60):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            data = json.dumps(body).encode() if body is not None else None
            headers = {"Content-Type": "application/json"} if data is not None else {}
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            return resp.status, dict(resp.getheaders()), resp.read()
        finally:
            conn.close()

    def json(self, method, path, body=None):
        status, headers, raw = self.request(method, path, body)
        try:
            return status, json.loads(raw)
        except ValueError:
            return status, raw.decode(errors="replace")

    def status_field(self, field):
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return line.split()[1:]
        return []

    def tail(self, n=20):
        return "\n".join(self.lines[-n:])


def find_key(obj, key):
    """The first value of key anywhere in a JSON document (the sweep's result may be nested)."""
    if isinstance(obj, dict):
        if key in obj:
            return obj[key]
        for v in obj.values():
            r = find_key(v, key)
            if r is not None:
                return r
    elif isinstance(obj, list):
        for v in obj:
            r = find_key(v, key)
            if r is not None:
                return r
    return None


def close_enough(a, b):
    if b is None:  # Calculon writes null for a statistic it leaves at zero
        b = 0.0
    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
        return a == b
    return abs(a - b) <= REL_TOL * (abs(b) if b != 0 else 1.0)


def check_estimate(srv, source):
    cases_path = os.path.join(source, "tests/data/llm/cases.jsonl")
    expected_path = os.path.join(source, "tests/data/llm/expected.jsonl")
    with open(cases_path) as fc, open(expected_path) as fe:
        for case_line, exp_line in zip(fc, fe):
            case, exp = json.loads(case_line), json.loads(exp_line)
            if exp.get("ok"):
                break
        else:
            check(False, "tests/data/llm has a feasible case")
            return
    body = {k: case[k] for k in ("model", "system", "execution")}
    t = time.monotonic()
    status, resp = srv.json("POST", "/v1/estimate", body)
    ms = (time.monotonic() - t) * 1000
    if not check(status == 200, f"POST /v1/estimate ({case['name']}) → 200 in {ms:.0f} ms",
                 f"{status} {str(resp)[:300]}"):
        return
    stats = resp.get("stats") or {}
    missing = [k for k in exp["stats"] if k not in stats]
    wrong = [f"{k}: got {stats[k]!r}, Calculon {v!r}" for k, v in exp["stats"].items()
             if k in stats and not close_enough(stats[k], v)]
    check(not missing, f"estimate has all {len(exp['stats'])} of Calculon's statistics",
          f"missing {missing[:5]}")
    check(not wrong, f"estimate statistics equal Calculon's within {REL_TOL:g} relative "
          f"(sample_rate {stats.get('sample_rate')!r} vs {exp['stats'].get('sample_rate')!r})",
          "; ".join(wrong[:5]))


def check_sweep(srv):
    t = time.monotonic()
    status, resp = srv.json("POST", "/v1/sweep", SWEEP_REQUEST)
    sid = resp.get("id") if isinstance(resp, dict) else None
    if not check(status == 202 and sid, "POST /v1/sweep (megatron-126M, 8 × a100_80g, "
                 "max batch 64) → 202 with an id", f"{status} {str(resp)[:300]}"):
        return
    state, doc = None, None
    while time.monotonic() - t < SWEEP_TIMEOUT_S:
        status, doc = srv.json("GET", f"/v1/sweep/{sid}")
        if status != 200:
            break
        state = doc.get("state") or doc.get("status")
        if state in ("done", "failed", "cancelled", "error"):
            break
        time.sleep(0.5)
    secs = time.monotonic() - t
    if not check(status == 200 and state == "done", f"GET /v1/sweep/{sid} reaches done "
                 f"({secs:.1f} s)", f"{status} state {state!r}: {str(doc)[:400]}"):
        return
    counts = find_key(doc, "counts") or {}
    check(counts.get("total") == SWEEP_TOTAL_EXECUTIONS,
          f"sweep tried {SWEEP_TOTAL_EXECUTIONS} executions, as Calculon counts them",
          f"counts {counts}")
    check(counts.get("good", -1) + counts.get("bad", -1) == counts.get("total"),
          "sweep counts: good + bad = total", str(counts))
    best = find_key(doc, "best") or []
    ex = best[0].get("execution", {}) if best else {}
    check(bool(best) and ex.get("num_procs") == 8 and
          ex.get("tensor_par", 0) * ex.get("pipeline_par", 0) * ex.get("data_par", 0) == 8 and
          ex.get("batch_size", 0) <= 64,
          "sweep's best execution splits 8 processors with batch ≤ 64", str(ex)[:300])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rootfs", required=True)
    ap.add_argument("--inspect", required=True)
    ap.add_argument("--source", required=True, help="the repository (test data)")
    ap.add_argument("--context", help="the build context (default: --source)")
    a = ap.parse_args()
    rootfs = os.path.abspath(a.rootfs)

    img, cfg, health = load_inspect(a.inspect)
    uid, gid, env, health_cmd = check_config(rootfs, cfg, health)
    context = a.context or a.source
    check_contents(rootfs, context)

    print("fathomd in the image:")
    env.setdefault("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
    srv = Fathomd(rootfs, uid, gid, env)
    try:
        if not check(srv.wait_listening(30) is not None and srv.find_pid() is not None,
                     "fathomd starts and logs its port", srv.tail()):
            finish()
        check(srv.status_field("NSpid")[-1:] == ["1"], "fathomd is PID 1 in its PID namespace",
              str(srv.status_field("NSpid")))
        check(srv.status_field("Uid")[:1] == [str(uid)],
              f"fathomd runs as uid {uid}", str(srv.status_field("Uid")))
        status, body = srv.json("GET", "/healthz")
        check(status == 200 and body == {"status": "ok"}, "GET /healthz → 200 {status: ok}",
              f"{status} {body}")
        status, body = srv.json("GET", "/readyz")
        check(status == 200, "GET /readyz → 200 (database open in /data)", f"{status} {body}")
        status, body = srv.json("GET", "/v1/version")
        check(status == 200 and "/v1/estimate" in (body.get("estimate_endpoints") or []),
              f"GET /v1/version → 200, serves /v1/estimate (version {body.get('version')})",
              f"{status} {str(body)[:300]}")
        status, body = srv.json("GET", "/v1/presets/models/megatron-126M")
        check(status == 200, "presets are found in the installed data directory",
              f"{status} {str(body)[:200]}")

        # The image's own HEALTHCHECK command, run in the image as its user: passes against
        # this fathomd, fails against a port nobody listens on.
        if health_cmd:
            henv = dict(env, FATHOM_LISTEN=f"127.0.0.1:{srv.port}")
            hargs = ["chroot", f"--userspec={uid}:{gid}", rootfs] + health_cmd
            rc = subprocess.run(hargs, env=henv, capture_output=True, timeout=30).returncode
            check(rc == 0, "the image's HEALTHCHECK command passes against fathomd", f"exit {rc}")
            henv["FATHOM_LISTEN"] = "127.0.0.1:1"
            rc = subprocess.run(hargs, env=henv, capture_output=True, timeout=30).returncode
            check(rc != 0, "the HEALTHCHECK command fails when nothing answers", f"exit {rc}")

        check_estimate(srv, a.source)
        check_sweep(srv)

        status, headers, raw = srv.request("GET", "/metrics")
        text = raw.decode(errors="replace")
        check(status == 200 and "fathom_" in text, "GET /metrics → 200 with fathom_ metrics",
              f"{status} {text[:200]}")
        if os.path.exists(os.path.join(context, "static", "index.html")):
            status, headers, raw = srv.request("GET", "/")
            check(status == 200, "GET / serves the web page", str(status))
        if os.path.exists(os.path.join(context, "web", "package.json")):
            status, headers, raw = srv.request("GET", "/vendor/chart.umd.min.js")
            check(status == 200 and len(raw) > 1000,
                  "GET /vendor/chart.umd.min.js (bundled by the build stage) → 200",
                  f"{status}, {len(raw)} bytes")
        print(f"  fathomd peak resident memory: {' '.join(srv.status_field('VmHWM'))}")

        # As `docker stop` or the kubelet: SIGTERM from outside the namespace to its PID 1.
        os.kill(srv.pid, signal.SIGTERM)
        try:
            rc = srv.proc.wait(60)  # unshare exits with fathomd's status
        except subprocess.TimeoutExpired:
            rc = None
        check(rc == 0, "SIGTERM to PID 1 → fathomd exits 0", f"exit {rc}\n{srv.tail()}")
        check(any('"stopped cleanly"' in l for l in srv.lines), "fathomd logs 'stopped cleanly'",
              srv.tail(5))
        db = os.path.join(rootfs, "data", "fathom.db")
        check(os.path.exists(db) and os.stat(db).st_uid == uid,
              "the database is /data/fathom.db (the image's FATHOM_DB), owned by the image's user")
    finally:
        if srv.proc.poll() is None:
            srv.proc.kill()
            srv.proc.wait()
    if failed:
        print("fathomd's last log lines:\n" + srv.tail(30))
    finish()


if __name__ == "__main__":
    main()

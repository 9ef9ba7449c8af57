#!/usr/bin/env python3
"""replicas.py — sweep throughput of 1 and of 3 fathomd replicas on one PostgreSQL, and the
database's share of the CPU time, against one fathomd on SQLite for reference.

A batch of sweeps is submitted to the first replica and timed until every one is done: BATCH
optimal-execution searches (megatron-126M on 8 A100s, batch <= 64: 298,072 executions each,
different top_n so each is its own sweep) and GRIDS grid sweeps of 512 estimates each (every
point is a row written to the database). Each replica runs --workers 1. The database's share is
the CPU time of the PostgreSQL server's processes (the postmaster and its children, live and
exited) over that plus the CPU time of the fathomd processes, measured over the batch.

    bench/replicas.py [--batch 6] [--grids 4]      (needs build/fathomd and Debian's postgresql)

On a machine with fewer cores than replicas the replicas share the cores: 3 replicas cannot be
3 times as fast on 2 cores. The figures in README were measured on such a machine.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time
import uuid

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "api"))

TICK = os.sysconf("SC_CLK_TCK")


def search(top_n):
    return {"kind": "optimal_execution", "model": "megatron-126M", "system": "a100_80g",
            "num_procs": 8, "max_batch_size": 64, "datatype": "float16", "options": {"top_n": top_n}}


def grid(k):
    return {"kind": "grid",
            "base": {"model": "gpt3-175B", "system": "a100_80g",
                     "execution": {"num_procs": 64, "tensor_par": 8, "pipeline_par": 8, "data_par": 1,
                                   "batch_size": 64 * (k + 1), "microbatch_size": 1,
                                   "activation_recompute": "full", "tensor_par_net": 0,
                                   "pipeline_par_net": 1, "data_par_net": 1}},
            "axes": {"execution.microbatch_size": [1, 2, 4, 8],
                     "execution.activation_recompute": ["full", "none"],
                     "execution.tensor_par": [1, 2, 4, 8], "execution.pipeline_par": [1, 2, 4, 8],
                     "execution.data_par": [1, 2, 4, 8]},
            "top_n": 2}


def cpu_of(pid, children=False):
    """Seconds of CPU of pid (and of its exited, reaped children)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rpartition(")")[2].split()
    except OSError:
        return 0.0
    ticks = int(fields[11]) + int(fields[12])
    if children:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / TICK


def postgres_cpu(pg_dir):
    with open(os.path.join(pg_dir, "data", "postmaster.pid")) as f:
        master = int(f.readline())
    total = cpu_of(master, children=True)
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    if int(f.read().rpartition(")")[2].split()[1]) == master:
                        total += cpu_of(int(d))
            except (OSError, ValueError, IndexError):
                pass
    return total


def run(n, specs, pg_dir, sqlite=False):
    import harness
    database = "bench_" + uuid.uuid4().hex[:10]
    servers = [harness.Server(pg_database=database, sqlite=sqlite, extra_args=["--workers", "1", "--max-queued-sweeps", "1000"]).start()
               for _ in range(n)]
    try:
        pg0 = postgres_cpu(pg_dir) if not sqlite else 0
        fd0 = sum(cpu_of(s.proc.pid) for s in servers)
        t0 = time.time()
        ids = [servers[0].post("/v1/sweep", s).json()["id"] for s in specs]
        runners = set()
        for sid in ids:
            harness.wait_until(lambda: servers[-1].get("/v1/sweep/" + sid).json()["status"] == "done",
                               "sweep %s" % sid, 3600)
            runners |= {r["replica"] for r in servers[-1].get("/v1/sweep/" + sid).json().get("runs", [])}
        wall = time.time() - t0
        fd = sum(cpu_of(s.proc.pid) for s in servers) - fd0
        pg = (postgres_cpu(pg_dir) - pg0) if not sqlite else 0
        return wall, fd, pg, len(runners)
    finally:
        for s in servers:
            s.stop()
            s.cleanup()
        if not sqlite:
            harness.psql(harness.PG_DSN, "DROP DATABASE IF EXISTS %s WITH (FORCE)" % database)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=6)
    ap.add_argument("--grids", type=int, default=4)
    a = ap.parse_args()
    pg_dir = tempfile.mkdtemp(prefix="fathom-bench-pg-")
    script = os.path.join(ROOT, "scripts", "pg_cluster.sh")
    dsn = subprocess.run([script, "start", pg_dir], check=True, capture_output=True, text=True).stdout.strip()
    os.environ["FATHOM_TEST_DB"] = dsn
    try:
        specs = [search(k + 1) for k in range(a.batch)] + [grid(k) for k in range(a.grids)]
        print("batch: %d searches of 298,072 executions + %d grids of 512 points; --workers 1 per replica; %d cores"
              % (a.batch, a.grids, os.cpu_count()))
        print("%-22s %8s %12s %14s %12s %9s" % ("setup", "wall s", "sweeps/min", "fathomd cpu s", "db cpu s", "db share"))
        for label, n, sqlite in (("1 fathomd, SQLite", 1, True), ("1 replica, PostgreSQL", 1, False),
                                 ("3 replicas, PostgreSQL", 3, False)):
            wall, fd, pg, runners = run(n, specs, pg_dir, sqlite)
            share = pg / (pg + fd) if pg + fd else 0
            print("%-22s %8.1f %12.1f %14.1f %12.1f %8.1f%%%s" % (
                label, wall, 60 * len(specs) / wall, fd, pg, 100 * share,
                "" if sqlite else "  (sweeps ran on %d replicas)" % runners), flush=True)
    finally:
        subprocess.run([script, "stop", pg_dir])
        subprocess.run(["rm", "-rf", pg_dir])


if __name__ == "__main__":
    main()

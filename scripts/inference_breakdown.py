#!/usr/bin/env python3
"""inference_breakdown.py — the serving validation broken down as doc/serving.md quotes it: mean
|error| / mean signed error of output tokens/s/GPU by model, GPU, weights, tensor parallelism,
input:output ratio and decode bound, and the rows measured on two GPUs of one die under
different hosts (GB200 against B200, GB300 against B300): the measured ratio of each pair, the
model's, and the mean |log| of the model's ratio over the measured one.

Usage: python3 scripts/inference_breakdown.py [FATHOM]   (default build/fathom; runs
       FATHOM validate --inference --json)"""
import collections
import json
import math
import statistics
import subprocess
import sys

HOST_PAIRS = (("GB200", "B200"), ("GB300", "B300"))


def rows_of(fathom):
    out = subprocess.run([fathom, "validate", "--inference", "--json"], check=True,
                         capture_output=True, text=True).stdout
    return [r for r in json.loads(out)["rows"] if r.get("error_pct") is not None]


def group(rows, key):
    groups = collections.OrderedDict()
    for r in rows:
        groups.setdefault(key(r), []).append(r["error_pct"])
    return ", ".join("%s %d / %+d" % (k, round(statistics.mean(map(abs, v))),
                                      round(statistics.mean(v))) for k, v in groups.items())


def tp_class(r):
    lay = r["layout"]
    if lay.get("ep", 1) > 1 or lay.get("dp_attention", 1) > 1:
        return "expert/attention-data parallel"
    return "TP %d" % lay["tp"]


def io_class(r):
    q = r["isl"] / r["osl"]
    return "prompt-heavy" if q >= 4 else "decode-heavy" if q <= 0.25 else "even"


def host_pairs(rows, a, b):
    by_id = {r["id"]: r for r in rows}
    measured, model, err = [], [], []
    for rid, r in by_id.items():
        other = by_id.get(rid.replace("-%s-" % a, "-%s-" % b)) if "-%s-" % a in rid else None
        if not other:
            continue
        m = r["measured_tokens_per_s_per_gpu"] / other["measured_tokens_per_s_per_gpu"]
        p = r["estimated_tokens_per_s_per_gpu"] / other["estimated_tokens_per_s_per_gpu"]
        measured.append(m)
        model.append(p)
        err.append(abs(math.log(p / m)))
    if not err:
        return "%s/%s: no pairs" % (a, b)
    return ("%s/%s: %d pairs, median ratio measured %.3f, model %.3f; mean |log(model/measured)| "
            "%.3f" % (a, b, len(err), statistics.median(measured), statistics.median(model),
                      statistics.mean(err)))


def main():
    rows = rows_of(sys.argv[1] if len(sys.argv) > 1 else "build/fathom")
    print("mean |error| / mean signed error, %:")
    for name, key in (("model", lambda r: r["model"]), ("GPU", lambda r: r["gpu"]),
                      ("weights", lambda r: r["weights"]), ("TP", tp_class),
                      ("input:output", io_class), ("decode bound", lambda r: r["decode"]["bound"])):
        print("  %s: %s" % (name, group(rows, key)))
    for a, b in HOST_PAIRS:
        print(host_pairs(rows, a, b))


if __name__ == "__main__":
    main()

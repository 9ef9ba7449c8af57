"""validation_rows.py — what the make_*.py scripts share: the validation set's rows, which lend
each new row its model's shape, the GPU names, and one row in measured_runs.json's format from a
layout and its figures."""
import json
import os

VALIDATION = os.path.join("presets", "validation")
BASE = {r["id"]: r for r in json.load(open(os.path.join(VALIDATION, "measured_runs.json")))}
GPU = {"GB200": "GB200 (DGX-GB200, NVL72)", "H100": "H100-SXM5-80GB (DGX-H100)",
       "B200": "B200 (DGX-B200)", "GB300": "GB300 (DGX-GB300, NVL72)", "B300": "B300 (DGX-B300)"}


def layout_row(template, gpu, n, precision, gbs, mbs, seq, tp, pp, vp, cp, ep, etp, fsdp,
               recompute, tokens, tflops, step_s, derived, fields):
    """The validation row `template` (its model's shape) with this layout, batches and figures;
    `derived` names the fields computed from the published ones beside dp and grad_accum, and
    `fields` sets the rest (id, source, notes …)."""
    r = dict(BASE[template])
    dp = n // (tp * pp * cp)
    assert dp * tp * pp * cp == n and gbs % (dp * mbs) == 0, template
    r.update({"seq_len": seq, "gpu_type": GPU[gpu], "gpu_count": n, "precision": precision,
              "tp": tp, "pp": pp, "vp": vp, "cp": cp, "ep": ep, "etp": etp, "dp": dp, "fsdp": fsdp,
              "global_batch": gbs, "micro_batch": mbs, "grad_accum": gbs // (dp * mbs),
              "recompute": recompute, "tokens_per_s_per_gpu": tokens, "tflops_per_gpu": tflops,
              "mfu": None, "step_time_s": step_s, "memory_gib": None,
              "derived_fields": ["dp", "grad_accum"] + derived, "fsdp_enabled": fsdp > 0})
    r.update(fields)
    r.pop("tflops_without_cp", None)
    return r


def write(name, rows):
    json.dump(rows, open(os.path.join(VALIDATION, name), "w"), indent=1)

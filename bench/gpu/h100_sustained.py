#!/usr/bin/env python3
"""bench/gpu/h100_sustained.py — the second short run on the same kind of device: what a GEMM
and a memory copy draw in power and clock when sustained for seconds (the figures behind the
power-cap model of a GPU variant), attention at decode (one query token against a KV cache of
each length: how close to HBM bandwidth the KV read runs), and FP8 grouped GEMM where PyTorch
has it. Writes OUTDIR/sustained.json; prints one line per measurement."""
import json, os, subprocess, sys, threading, time, traceback

import torch
import torch.nn.functional as F

OUT = sys.argv[1] if len(sys.argv) > 1 else "."
R = {"script": "bench/gpu/h100_sustained.py", "sections": {}}
DEV = "cuda"


def save():
    json.dump(R, open(os.path.join(OUT, "sustained.json"), "w"), indent=1)


def sample_smi(stop, samples):
    while not stop.is_set():
        try:
            o = subprocess.run(["nvidia-smi", "--query-gpu=power.draw,clocks.sm,clocks.mem,temperature.gpu",
                                "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=5).stdout
            samples.append([float(v) for v in o.strip().split(",")])
        except Exception:
            pass
        time.sleep(0.2)


def sustained(label, fn, work, seconds):
    fn(); torch.cuda.synchronize()
    stop, samples = threading.Event(), []
    th = threading.Thread(target=sample_smi, args=(stop, samples)); th.start()
    t0 = time.time(); n = 0
    while time.time() - t0 < seconds:
        for _ in range(10):
            fn()
        torch.cuda.synchronize(); n += 10
    el = time.time() - t0
    stop.set(); th.join()
    late = samples[len(samples) // 3:] or samples
    med = lambda i: sorted(s[i] for s in late)[len(late) // 2]
    d = {"label": label, "seconds": el, "calls": n, "rate_per_s": work * n / el,
         "power_w_median": med(0), "sm_mhz_median": med(1), "mem_mhz_median": med(2),
         "temp_c_median": med(3), "samples": len(samples)}
    print("sustained", d, flush=True)
    return d


def run(name, f):
    t0 = time.time()
    try:
        R["sections"][name] = f()
    except Exception as e:
        R["sections"][name] = {"error": repr(e), "trace": traceback.format_exc()[-1500:]}
        print(name, "FAILED", e, flush=True)
    R["sections"][name]["wall_s"] = round(time.time() - t0, 1)
    save()


def power():
    idle = subprocess.run(["nvidia-smi", "--query-gpu=power.draw,clocks.sm,power.limit,clocks.max.sm",
                           "--format=csv,noheader,nounits"], capture_output=True, text=True).stdout.strip()
    a = torch.randn(8192, 8192, device=DEV, dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device=DEV, dtype=torch.bfloat16)
    g = sustained("bf16 gemm 8192^3", lambda: a @ b, 2 * 8192 ** 3, 15)
    a8 = a.to(torch.float8_e4m3fn); b8 = b.to(torch.float8_e4m3fn).t().contiguous().t()
    one = torch.ones((), device=DEV)
    g8 = sustained("fp8 gemm 8192^3 tensorwise", lambda: torch._scaled_mm(a8, b8, scale_a=one, scale_b=one,
                   out_dtype=torch.bfloat16), 2 * 8192 ** 3, 10)
    x = torch.empty(1 << 30, device=DEV, dtype=torch.uint8)
    c = sustained("d2d copy 1 GiB", lambda: x.clone(), 2 * (1 << 30), 8)
    return {"idle_power_w,sm_mhz,limit_w,max_sm_mhz": idle, "rows": [g, g8, c],
            "units": "rate_per_s: FLOP/s for GEMMs, bytes read+written per s for the copy"}


def decode_attention():
    rows = []
    for hq, hkv, d in ((64, 8, 128), (32, 8, 128)):
        for L in (1024, 4096, 16384, 65536):
            for B in (1, 16, 64):
                kv_bytes = 2 * B * hkv * L * d * 2
                if kv_bytes > 20e9:
                    continue
                q = torch.randn(B, hq, 1, d, device=DEV, dtype=torch.bfloat16)
                k = torch.randn(B, hkv, L, d, device=DEV, dtype=torch.bfloat16)
                v = torch.randn(B, hkv, L, d, device=DEV, dtype=torch.bfloat16)
                f = lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
                for _ in range(3):
                    f()
                torch.cuda.synchronize()
                ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
                ts = []
                for _ in range(10):
                    ev[0].record(); f(); ev[1].record(); ev[1].synchronize()
                    ts.append(ev[0].elapsed_time(ev[1]) / 1e3)
                t = sorted(ts)[5]
                rows.append({"q_heads": hq, "kv_heads": hkv, "head_dim": d, "kv_len": L, "batch": B,
                             "s": t, "kv_bytes": kv_bytes, "kv_gbps": kv_bytes / t / 1e9})
                print("decode_attn", rows[-1], flush=True)
                del q, k, v
        torch.cuda.empty_cache()
    return {"kernel": "F.scaled_dot_product_attention(enable_gqa=True), one query token, no mask",
            "rows": rows}


def fp8_grouped():
    if not hasattr(torch, "_scaled_grouped_mm"):
        raise RuntimeError("torch._scaled_grouped_mm absent")
    rows = []
    for model, hidden, ffn in (("qwen3-30B-A3B", 2048, 768), ("deepseek-v3", 7168, 2048)):
        for local, tpe in ((16, 512), (16, 2048), (32, 2048)):
            tokens = local * tpe
            k, n = hidden, 2 * ffn
            x = torch.randn(tokens, k, device=DEV).to(torch.float8_e4m3fn)
            w = torch.randn(local, n, k, device=DEV).to(torch.float8_e4m3fn).transpose(-2, -1)
            offs = torch.arange(1, local + 1, device=DEV, dtype=torch.int32) * tpe
            sa = torch.ones(tokens, device=DEV, dtype=torch.float32)
            sb = torch.ones(local, n, device=DEV, dtype=torch.float32)
            f = lambda: torch._scaled_grouped_mm(x, w, sa, sb, offs=offs, out_dtype=torch.bfloat16)
            for _ in range(3):
                f()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(20):
                f()
            torch.cuda.synchronize()
            t = (time.perf_counter() - t0) / 20
            fl = 2.0 * tokens * k * n
            rows.append({"model": model, "local_experts": local, "tokens_per_expert": tpe, "phase": "gate_up",
                         "s": t, "eff_vs_fp8_peak": fl / t / 1978.9e12})
            print("fp8_grouped", rows[-1], flush=True)
    return {"rows": rows}


run("power_clock", power)
run("decode_attention", decode_attention)
run("fp8_grouped_gemm", fp8_grouped)
print("done", flush=True)

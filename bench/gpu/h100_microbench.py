#!/usr/bin/env python3
"""bench/gpu/h100_microbench.py — measures on one GPU what Fathom's presets otherwise take from
papers: GEMM and grouped-GEMM efficiency by shape and datatype, attention kernels (PyTorch SDPA's
flash, cuDNN and memory-efficient backends) by sequence length and head size, memory-bound passes
as eager PyTorch runs them, host cost per kernel launch with and without CUDA graphs, and one
Llama 3 8B block forward+backward eager against torch.compile.

Run on the device machine: python3 bench/gpu/h100_microbench.py OUTDIR
Writes OUTDIR/microbench.json (appended section by section, so a run cut short keeps what it
measured) and prints one line per measurement. Every figure is the median of timed repetitions
after warm-up, timed with CUDA events on random normal data. Nothing in the build or the tests
needs this script or a GPU."""
import json, os, subprocess, sys, time, traceback

import torch
import torch.nn.functional as F

OUT = sys.argv[1] if len(sys.argv) > 1 else "."
RESULT = {"script": "bench/gpu/h100_microbench.py", "sections": {}}
DEV = "cuda"
torch.backends.cuda.matmul.allow_tf32 = True


def save():
    with open(os.path.join(OUT, "microbench.json"), "w") as f:
        json.dump(RESULT, f, indent=1)


def timed(fn, warmup=3, reps=10):
    """Median seconds of fn() over reps, CUDA events, after warmup calls."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / 1e3)
    times.sort()
    return times[len(times) // 2]


def section(name):
    def deco(f):
        t0 = time.time()
        try:
            RESULT["sections"][name] = f()
        except Exception as e:  # keep going: one failed section must not lose the others
            RESULT["sections"][name] = {"error": repr(e), "trace": traceback.format_exc()[-2000:]}
            print(f"[{name}] FAILED: {e!r}", flush=True)
        RESULT["sections"].setdefault(name, {})
        if isinstance(RESULT["sections"][name], dict):
            RESULT["sections"][name]["wall_s"] = round(time.time() - t0, 1)
        save()
        return f
    return deco


def smi(query):
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=" + query, "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception as e:
        return repr(e)


@section("device")
def _():
    p = torch.cuda.get_device_properties(0)
    d = {"name": p.name, "sms": p.multi_processor_count, "memory_bytes": p.total_memory,
         "torch": torch.__version__, "cuda": torch.version.cuda,
         "cudnn": torch.backends.cudnn.version(),
         "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
         "smi": smi("name,driver_version,power.limit,power.default_limit,clocks.max.sm,"
                    "clocks.max.mem,memory.total")}
    print("device", d, flush=True)
    return d


PEAK = {"bf16": 989.4e12, "fp8": 1978.9e12}  # H100 SXM5 dense datasheet peaks


def rand(*shape, dtype=torch.bfloat16):
    return torch.randn(*shape, device=DEV, dtype=dtype)


def fp8_pair(m, k, n, rowwise):
    a = rand(m, k).to(torch.float8_e4m3fn)
    b = rand(n, k).to(torch.float8_e4m3fn).t()  # column-major second operand, as cuBLASLt wants
    if rowwise:
        sa = torch.ones(m, 1, device=DEV, dtype=torch.float32)
        sb = torch.ones(1, n, device=DEV, dtype=torch.float32)
    else:
        sa = torch.ones((), device=DEV, dtype=torch.float32)
        sb = torch.ones((), device=DEV, dtype=torch.float32)
    return lambda: torch._scaled_mm(a, b, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)


GEMM_SHAPES = [
    # (label, M tokens, K, N)
    ("square 1024", 1024, 1024, 1024), ("square 2048", 2048, 2048, 2048),
    ("square 4096", 4096, 4096, 4096), ("square 8192", 8192, 8192, 8192),
    ("square 16384", 16384, 16384, 16384),
    ("llama3-8B qkv s8192", 8192, 4096, 6144), ("llama3-8B o s8192", 8192, 4096, 4096),
    ("llama3-8B gate+up s8192", 8192, 4096, 28672), ("llama3-8B down s8192", 8192, 14336, 4096),
    ("llama3-8B gate+up s16384", 16384, 4096, 28672),
    ("llama3-70B tp8 qkv s8192", 8192, 8192, 1280), ("llama3-70B tp8 o s8192", 8192, 1024, 8192),
    ("llama3-70B tp8 gate+up s8192", 8192, 8192, 7168), ("llama3-70B tp8 down s8192", 8192, 3584, 8192),
    ("llama3-70B tp8 gate+up mbs16", 131072, 8192, 7168),
    ("llama3-405B tp8 gate+up s8192", 8192, 16384, 13312), ("llama3-405B tp8 down s8192", 8192, 6656, 16384),
    ("decode m1 8192x8192", 1, 8192, 8192), ("decode m8 8192x8192", 8, 8192, 8192),
    ("decode m32 8192x8192", 32, 8192, 8192), ("decode m64 8192x8192", 64, 8192, 8192),
    ("decode m128 8192x8192", 128, 8192, 8192), ("decode m256 8192x8192", 256, 8192, 8192),
    ("decode m512 8192x8192", 512, 8192, 8192), ("decode m1024 8192x8192", 1024, 8192, 8192),
]


@section("gemm")
def _():
    rows = []
    for label, m, k, n in GEMM_SHAPES:
        flops = 2.0 * m * k * n
        row = {"label": label, "m": m, "k": k, "n": n}
        a, b = rand(m, k), rand(k, n)
        t = timed(lambda: a @ b)
        row["bf16_s"] = t
        row["bf16_tflops"] = flops / t / 1e12
        row["bf16_eff"] = flops / t / PEAK["bf16"]
        # bytes moved at least once: A, B, C in bf16
        row["bf16_min_bytes"] = 2.0 * (m * k + k * n + m * n)
        row["bf16_gbps_at_min_bytes"] = row["bf16_min_bytes"] / t / 1e9
        del a, b
        for name, rw in (("fp8_tensorwise", False), ("fp8_rowwise", True)):
            try:
                if m % 16 or k % 16 or n % 16:
                    raise ValueError("fp8 needs multiples of 16")
                f = fp8_pair(m, k, n, rw)
                t = timed(f)
                row[name + "_s"] = t
                row[name + "_tflops"] = flops / t / 1e12
                row[name + "_eff"] = flops / t / PEAK["fp8"]
            except Exception as e:
                row[name + "_error"] = repr(e)[:200]
        torch.cuda.empty_cache()
        rows.append(row)
        print("gemm", {k2: (round(v, 4) if isinstance(v, float) else v) for k2, v in row.items()}, flush=True)
    return {"peak_tflops": {k2: v / 1e12 for k2, v in PEAK.items()}, "rows": rows}


# Expert shapes (hidden -> 2*ffn for gate+up, ffn -> hidden for down) of the validation models.
EXPERTS = [("qwen3-30B-A3B", 2048, 768), ("qwen3-235B-A22B", 4096, 1536),
           ("gpt-oss-120B", 2880, 2880), ("deepseek-v3", 7168, 2048)]


@section("grouped_gemm")
def _():
    if not hasattr(torch, "_grouped_mm"):
        raise RuntimeError("torch._grouped_mm absent")
    rows = []
    for model, hidden, ffn in EXPERTS:
        for local in (8, 16, 32):
            for tpe in (128, 512, 2048, 8192):
                tokens = local * tpe
                if tokens * max(hidden, 2 * ffn) * 2 > 6e9:
                    continue
                offs = torch.arange(1, local + 1, device=DEV, dtype=torch.int32) * tpe
                for phase, k, n in (("gate_up", hidden, 2 * ffn), ("down", ffn, hidden)):
                    x = rand(tokens, k)
                    w = rand(local, n, k).transpose(-2, -1)  # (E, K, N), last dim contiguous in K
                    flops = 2.0 * tokens * k * n
                    row = {"model": model, "local_experts": local, "tokens_per_expert": tpe,
                           "phase": phase, "k": k, "n": n}
                    try:
                        t = timed(lambda: torch._grouped_mm(x, w, offs=offs, out_dtype=torch.bfloat16))
                        row["grouped_s"] = t
                        row["grouped_eff"] = flops / t / PEAK["bf16"]
                    except Exception as e:
                        row["grouped_error"] = repr(e)[:200]
                    ws = [w[i] for i in range(local)]
                    xs = list(x.split(tpe))

                    def seq():
                        for i in range(local):
                            xs[i] @ ws[i]
                    t = timed(seq)
                    row["sequential_s"] = t
                    row["sequential_eff"] = flops / t / PEAK["bf16"]
                    rows.append(row)
                    print("grouped", row, flush=True)
                    del x, w, ws, xs
                torch.cuda.empty_cache()
    return {"rows": rows}


def attn_flops(b, hq, s, d, causal):
    f = 4.0 * b * hq * s * s * d  # QK^T and PV, 2 FLOPs per MAC
    return f / 2 if causal else f


@section("attention")
def _():
    from torch.nn.attention import sdpa_kernel, SDPBackend
    backends = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
                "efficient": SDPBackend.EFFICIENT_ATTENTION}
    rows = []
    for hq, hkv, d in ((32, 8, 128), (64, 8, 64)):
        for s in (1024, 2048, 4096, 8192, 16384, 32768):
            b = max(1, 32768 // s)
            for name, be in backends.items():
                row = {"backend": name, "q_heads": hq, "kv_heads": hkv, "head_dim": d, "seq": s,
                       "batch": b, "causal": True}
                try:
                    q = rand(b, hq, s, d).requires_grad_()
                    # SDPA's fused kernels take equal head counts; GQA is expanded as
                    # torchtitan's repeat_kv does before calling SDPA.
                    k = rand(b, hkv, s, d).repeat_interleave(hq // hkv, 1).requires_grad_()
                    v = rand(b, hkv, s, d).repeat_interleave(hq // hkv, 1).requires_grad_()
                    with sdpa_kernel(be):
                        fwd = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)
                        tf = timed(fwd)
                        o = fwd()
                        g = torch.randn_like(o)

                        def fb():
                            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                            out.backward(g)
                        tfb = timed(fb, warmup=2, reps=6)
                    fl = attn_flops(b, hq, s, d, True)
                    row.update({"fwd_s": tf, "fwd_tflops": fl / tf / 1e12,
                                "fwd_eff": fl / tf / PEAK["bf16"],
                                "bwd_s": tfb - tf, "bwd_tflops": 2.5 * fl / (tfb - tf) / 1e12,
                                "bwd_eff": 2.5 * fl / (tfb - tf) / PEAK["bf16"],
                                "fwd_bwd_eff": 3.5 * fl / tfb / PEAK["bf16"]})
                    del q, k, v, o, g
                except Exception as e:
                    row["error"] = repr(e)[:300]
                torch.cuda.empty_cache()
                rows.append(row)
                print("attn", {k2: (round(v2, 4) if isinstance(v2, float) else v2) for k2, v2 in row.items()}, flush=True)
    return {"flops": "causal forward 2*b*h*s^2*d (half of 4*b*h*s^2*d); backward 2.5x forward",
            "rows": rows}


def rmsnorm_eager(x, w, eps=1e-5):
    # The textbook RMSNorm as eager PyTorch code writes it (Llama reference / torchtitan's
    # non-fused path): a float32 upcast, a square-mean reduction, rsqrt, two multiplies.
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).type_as(x) * w


def rope_eager(x, cos, sin):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


@section("memory_bound")
def _():
    rows = []
    for tokens, hidden in ((8192, 4096), (16384, 8192)):
        x = rand(tokens, hidden)
        y = rand(tokens, hidden)
        w = rand(hidden)
        base = 2.0 * tokens * hidden  # bytes of one bf16 tensor

        def add(label, fn, min_bytes, ops, reps=20):
            t = timed(fn, warmup=3, reps=reps)
            rows.append({"pass": label, "tokens": tokens, "hidden": hidden, "s": t,
                         "min_bytes": min_bytes, "gbps_at_min_bytes": min_bytes / t / 1e9,
                         "tensor_passes_equiv": t * 3.35e12 / base, "eager_ops": ops})
            print("membound", rows[-1], flush=True)
        add("copy", lambda: x.clone(), 2 * base, 1)
        add("residual add", lambda: x + y, 3 * base, 1)
        add("rmsnorm eager", lambda: rmsnorm_eager(x, w), 2 * base, 7)
        if hasattr(F, "rms_norm"):
            add("F.rms_norm", lambda: F.rms_norm(x, (hidden,), w, 1e-5), 2 * base, 1)
        g = rand(tokens, hidden * 2)
        add("swiglu eager silu(g)*u", lambda: F.silu(g[:, :hidden]) * g[:, hidden:], 3 * base, 2)
        xh = rand(tokens, hidden // 128, 128)
        cos = rand(tokens, 1, 128)
        sin = rand(tokens, 1, 128)
        add("rope eager rotate_half", lambda: rope_eager(xh, cos, sin), 2 * base, 5)
        add("cast bf16->fp8 tensorwise (amax, scale, cast)",
            lambda: (x * (448.0 / x.abs().amax().float())).to(torch.float8_e4m3fn), 1.5 * base, 4)
        del x, y, g, xh
        torch.cuda.empty_cache()
    logits = rand(8192, 128256)
    tgt = torch.randint(0, 128256, (8192,), device=DEV)
    t = timed(lambda: F.cross_entropy(logits.float(), tgt), reps=10)
    rows.append({"pass": "cross_entropy fp32 upcast 8192x128256", "s": t,
                 "min_bytes": 2.0 * logits.numel(), "gbps_at_min_bytes": 2.0 * logits.numel() / t / 1e9})
    print("membound", rows[-1], flush=True)
    return {"hbm_datasheet_gbps": 3350, "rows": rows}


@section("launch")
def _():
    a = torch.zeros(1, device=DEV)
    n = 20000
    for _ in range(1000):
        a.add_(1)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        a.add_(1)
    host = (time.perf_counter() - t0) / n
    torch.cuda.synchronize()
    wall = (time.perf_counter() - t0) / n
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            a.add_(1)
    torch.cuda.current_stream().wait_stream(s)
    with torch.cuda.graph(g):
        for _ in range(1000):
            a.add_(1)
    g.replay()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(10):
        g.replay()
    torch.cuda.synchronize()
    graph = (time.perf_counter() - t0) / (10 * 1000)
    d = {"eager_host_s_per_launch": host, "eager_wall_s_per_kernel": wall,
         "graph_replay_s_per_kernel": graph, "kernel": "in-place add on one element"}
    print("launch", d, flush=True)
    return d


class Block(torch.nn.Module):
    """A Llama 3 block as torchtitan writes it (RMSNorm, GQA attention with RoPE and SDPA, SwiGLU)."""

    def __init__(s, dim=4096, heads=32, kv=8, ffn=14336):
        super().__init__()
        s.h, s.kv, s.hd = heads, kv, dim // heads
        s.wq = torch.nn.Linear(dim, dim, bias=False)
        s.wk = torch.nn.Linear(dim, kv * s.hd, bias=False)
        s.wv = torch.nn.Linear(dim, kv * s.hd, bias=False)
        s.wo = torch.nn.Linear(dim, dim, bias=False)
        s.w1 = torch.nn.Linear(dim, ffn, bias=False)
        s.w3 = torch.nn.Linear(dim, ffn, bias=False)
        s.w2 = torch.nn.Linear(ffn, dim, bias=False)
        s.n1 = torch.nn.Parameter(torch.ones(dim))
        s.n2 = torch.nn.Parameter(torch.ones(dim))

    def forward(s, x, cos, sin):
        b, t, _ = x.shape
        h = rmsnorm_eager(x, s.n1)
        q = s.wq(h).view(b, t, s.h, s.hd)
        k = s.wk(h).view(b, t, s.kv, s.hd)
        v = s.wv(h).view(b, t, s.kv, s.hd)
        q, k = rope_eager(q, cos, sin), rope_eager(k, cos, sin)
        r = s.h // s.kv
        k = k.repeat_interleave(r, 2)
        v = v.repeat_interleave(r, 2)
        o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                           is_causal=True)
        x = x + s.wo(o.transpose(1, 2).reshape(b, t, -1))
        h = rmsnorm_eager(x, s.n2)
        return x + s.w2(F.silu(s.w1(h)) * s.w3(h))


@section("llama_block")
def _():
    rows = []
    dim, heads, kv, ffn = 4096, 32, 8, 14336
    for bsz, seq in ((1, 8192), (2, 8192)):
        blk = Block(dim, heads, kv, ffn).to(DEV, torch.bfloat16)
        x = rand(bsz, seq, dim).requires_grad_()
        cos = rand(1, seq, 1, dim // heads)
        sin = rand(1, seq, 1, dim // heads)
        g = rand(bsz, seq, dim)
        tokens = bsz * seq
        params = dim * dim * 2 + 2 * dim * kv * (dim // heads) + 3 * dim * ffn
        flops_fwd = 2.0 * tokens * params + attn_flops(bsz, heads, seq, dim // heads, True)
        flops = 3.0 * flops_fwd  # fwd + bwd (bwd 2x; attention's 2.5x ignored: a convention)
        for mode in ("eager", "compiled"):
            f = blk if mode == "eager" else torch.compile(blk)

            def step():
                out = f(x, cos, sin)
                out.backward(g)
            t_c0 = time.time()
            step()  # compile (for compiled) outside the timing
            torch.cuda.synchronize()
            first = time.time() - t_c0
            t = timed(step, warmup=2, reps=8)
            rows.append({"mode": mode, "batch": bsz, "seq": seq, "fwd_bwd_s": t,
                         "model_tflops": flops / t / 1e12, "mfu_bf16": flops / t / PEAK["bf16"],
                         "first_call_s": first})
            print("block", rows[-1], flush=True)
        del blk, x, g
        torch.cuda.empty_cache()
    return {"model": "Llama 3 8B block (dim 4096, 32 heads, 8 kv, ffn 14336), bf16",
            "flops": "3 x (2 x tokens x block params + causal attention fwd)", "rows": rows}


print("done", flush=True)
save()

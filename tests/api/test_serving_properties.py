"""test_serving_properties.py — POST /v1/inference answers side by side, as a capacity planner
compares them: one input changed, the answer must move the way the physics does. Each case is a
metamorphic property (doc/serving.md): adding a prompt to a decode batch never shortens the step
(so input tokens never cost nothing), a request arriving while another decodes waits at most one
step (half of one on average, wherever its arrival falls in it), throughput per GPU rises and throughput per user falls with concurrency, the curve agrees
with single answers at its concurrencies, an FP8 KV cache is half a BF16 one, and dollars and
joules add up to the GPUs' price and power; a disaggregated p99 request pays its p99
prompt's own prefill and KV transfer; a prompt in chunks does the whole prompt's work; the token
budget bounds the requests a replica holds by the tokens it takes (none of a prompt on a
disaggregated decode replica); and a layout that does not fit says which memory it ran out of.
Llama 3.1 70B is named by its alias (presets/models/llama3-70B.json)."""
import statistics
import unittest

from harness import ServerTestCase

H200_PRICE, H200_KW = 3.79, 0.7  # presets/systems/h200.json


def body(model, system, **serving):
    return {"model": model, "system": system, "serving": serving}


class ServingProperties(ServerTestCase):
    def infer(self, model, system, **serving):
        r = self.server.post("/v1/inference", body(model, system, **serving))
        self.assertEqual(r.status, 200, r.body)
        return r.json()

    def test_prompt_step_not_shorter_than_decode(self):
        # Llama 3.1 8B FP8 on one H200 under TensorRT-LLM, 128 in, 4,096 out: the decode step is
        # replayed from a CUDA graph (each kernel's dispatch on the GPU), the step with a prompt
        # runs eagerly; the eager step's GPU still dispatches every kernel, so it is never the
        # shorter one, and the prompt's share of the GPU-seconds (its dollars, its joules) is
        # above 0. It was 0: the eager step came out ≈ 0.1 ms shorter than the batch alone.
        for c in (1, 4, 16):
            out = self.infer("llama3-8B", "h200", weights_datatype="fp8", engine="trtllm",
                             input_tokens=128, output_tokens=4096, concurrency=c)
            self.assertGreaterEqual(out["prefill"]["time_s"], out["decode"]["time_s"], c)
            self.assertGreater(out["dollars_per_million_tokens"]["input"], 0, c)
            self.assertGreater(out["energy_per_token_j"]["input"], 0, c)

    def test_finite_run_waits_at_most_a_step(self):
        # Two requests of 128 + 4,096 tokens at 0.05/s: the second arrives at 20 s while the
        # first decodes alone (its lifetime ≈ 35 s), so it waits for that one step to end (≤ one
        # decode step of one sequence) and takes its prompt's step beside it. That is at most
        # the closed loop of two's p99 TTFT (a prompt's step beside the batch plus one whole
        # step), give or take the contexts (10 %). The run of ≈ 2,400 decode steps before the
        # arrival was counted at its first step's time and costed at its middle one, so the
        # second request was admitted ≈ 0.13 s late: a p99 of 0.146 s against 0.017 s.
        base = dict(weights_datatype="bf16", input_tokens=128, output_tokens=4096)
        two = self.infer("llama3-8B", "h100_sxm", concurrency=2, **base)
        run = self.infer("llama3-8B", "h100_sxm", num_requests=2, requests_per_s=0.05, **base)
        alone = self.infer("llama3-8B", "h100_sxm", num_requests=1, **base)
        self.assertAlmostEqual(run["ttft_p50_s"], alone["ttft_s"], delta=1e-9)
        self.assertLess(run["ttft_p99_s"], 1.1 * two["ttft_p99_s"])
        self.assertGreater(run["ttft_p99_s"], alone["ttft_s"])
        # a finite run at a slower rate never gives its requests a longer TTFT here: fewer in
        # flight when each arrives
        ttfts = [self.infer("llama3-8B", "h100_sxm", num_requests=200, requests_per_s=r,
                            **base)["ttft_s"] for r in (0.05, 0.18, 0.54)]
        self.assertEqual(ttfts, sorted(ttfts))

    def test_finite_run_arrival_phase(self):
        # Poisson arrivals fall anywhere in the step in progress, so a request arriving while
        # another decodes alone waits half a decode step on average, wherever i/λ falls in it.
        # Two requests of 128 + 4,096 tokens, the second 20.1, 20.5 or 20.9 lone decode steps
        # after the first: its TTFT is the lone TTFT plus half a step plus what one decoding
        # sequence adds to its prompt's step (< 0.15 of a step at batch one, weight-bound).
        # Taken at i/λ it waited 0.9, 0.5 or 0.1 of a step: a faster rate gave a shorter TTFT.
        base = dict(weights_datatype="bf16", input_tokens=128, output_tokens=4096)
        lone = self.infer("llama3-8B", "h100_sxm", num_requests=1, **base)
        t1, step = lone["ttft_s"], lone["tpot_s"]
        seconds = []
        for phase in (0.1, 0.5, 0.9):
            run = self.infer("llama3-8B", "h100_sxm", num_requests=2,
                             requests_per_s=1 / ((20 + phase) * step), **base)
            seconds.append(2 * run["ttft_s"] - t1)  # the second request's TTFT
        for t2 in seconds:
            self.assertAlmostEqual(t2, seconds[0], delta=0.01 * seconds[0])
            self.assertGreater(t2, t1 + 0.5 * step)
            self.assertLess(t2, t1 + 0.65 * step)

    def test_concurrency_and_curve(self):
        base = dict(tensor_par=4, weights_datatype="fp8", input_tokens=2000, output_tokens=500)
        sat = self.infer("llama3-70B", "h100_sxm", **base)
        points = [self.infer("llama3-70B", "h100_sxm", concurrency=c, **base)
                  for c in (1, 2, 4, 8, 16, 32, 64, 128) if c <= sat["max_concurrency"]]
        self.assertGreater(len(points), 4)
        for a, b in zip(points, points[1:]):
            self.assertGreaterEqual(b["output_tokens_per_s_per_gpu"],
                                    a["output_tokens_per_s_per_gpu"])
            self.assertLessEqual(b["output_tokens_per_s_per_user"],
                                 a["output_tokens_per_s_per_user"])
            self.assertGreaterEqual(b["tpot_s"], a["tpot_s"])
        for p in sat["curve"]:
            one = self.infer("llama3-70B", "h100_sxm", concurrency=p["concurrency"], **base)
            for k in ("output_tokens_per_s_per_gpu", "output_tokens_per_s_per_user", "tpot_s",
                      "ttft_s"):
                self.assertAlmostEqual(p[k], one[k], delta=1e-9 * one[k], msg=(p, k))

    def test_kv_format_and_money(self):
        base = dict(weights_datatype="bf16", input_tokens=2000, output_tokens=500)
        bf16 = self.infer("llama3-8B", "h200", kv_datatype="bf16", **base)
        fp8 = self.infer("llama3-8B", "h200", kv_datatype="fp8", **base)
        # 32 blocks · 2 · 8 KV heads · 128 · 2 B = 131,072 B a token in BF16, half in FP8
        self.assertEqual(bf16["kv_cache_bytes_per_token"], 131072)
        self.assertEqual(fp8["kv_cache_bytes_per_token"], 65536)
        self.assertGreaterEqual(fp8["max_concurrency"], bf16["max_concurrency"])
        # every GPU-second goes to input or output: $ in · input/s + $ out · output/s is the
        # GPUs' price a second, and joules likewise their board power
        for out in (bf16, fp8):
            rin = out["requests_per_s"] * 2000
            rout = out["output_tokens_per_s"]
            d, e = out["dollars_per_million_tokens"], out["energy_per_token_j"]
            self.assertAlmostEqual((d["input"] * rin + d["output"] * rout) / 1e6,
                                   out["gpus"] * H200_PRICE / 3600, delta=1e-9)
            self.assertAlmostEqual(e["input"] * rin + e["output"] * rout,
                                   out["gpus"] * H200_KW * 1000, delta=1e-6)


    def test_disaggregated_p99_prompt(self):
        # Disaggregated, one request in flight, prompts of mean 1,000 and p90 2,000 tokens: the
        # p99 request brings the p99 prompt P = 1,000 + 2.326·σ, σ = 1,000/z₀.₉ (Python's
        # NormalDist), and pays what a plain P-token request pays before its first token — P's
        # prefill steps and KV transfer — but waits a whole decode step to join the batch where
        # the plain one's mean waits half: p99 = p50(P) − TPOT(P)/2 + TPOT (one stage, τ = 1).
        # It had scaled the mean prompt's prefill, transfer and half step by P/1,000: DeepSeek-V3
        # on 8 B200 came out 32 % above the plain P request's own p99.
        z = statistics.NormalDist().inv_cdf(0.9)
        big = 1000 + 2.326 * 1000 / z
        for model, system, tp in (("llama3-8B", "h100_sxm", 1), ("llama3-70B", "h200", 4)):
            base = dict(weights_datatype="fp8", output_tokens=100, concurrency=1,
                        disaggregated={"prefill": {"tensor_par": tp}, "decode": {"tensor_par": tp}})
            spread = self.infer(model, system, input_tokens={"mean": 1000, "p90": 2000}, **base)
            plain = self.infer(model, system, input_tokens=big, **base)
            self.assertAlmostEqual(spread["ttft_p99_s"],
                                   plain["ttft_p50_s"] - plain["tpot_s"] / 2 + spread["tpot_s"],
                                   delta=1e-9 * plain["ttft_p50_s"], msg=model)

    def test_chunked_prompt_and_token_budget(self):
        # Llama 3.1 8B FP8 on one H100 under vLLM (budget 8,192), one request of 100,000 prompt
        # tokens: in 13 chunks it does the whole prompt's attention (every token attends to the
        # tokens before it, whichever chunk it is in) in more steps than taken whole, so its TTFT
        # is not the shorter one. Each chunk had been priced as attending within itself: 2.19 s
        # chunked against 7.69 s whole.
        base = dict(weights_datatype="fp8", input_tokens=100000, output_tokens=200,
                    engine="vllm", max_batch_tokens=8192, concurrency=1)
        chunked = self.infer("llama3-8B", "h100_sxm", chunked_prefill=True, **base)
        whole = self.infer("llama3-8B", "h100_sxm", chunked_prefill=False, **base)
        self.assertGreaterEqual(chunked["ttft_s"], whole["ttft_s"])
        # a 20,000-token prompt with one or two output tokens runs in three chunks: it fits (the
        # token budget's bound had counted one prompt step: 8,192/20,000 of a request, none)
        for out in (1, 2):
            one = self.infer("llama3-8B", "h100_sxm", weights_datatype="fp8", input_tokens=20000,
                             output_tokens=out, engine="vllm", concurrency=1)
            self.assertTrue(one["fits_memory"], out)
            self.assertEqual(one["max_concurrency"], 1, out)
        # a disaggregated decode replica runs no prompt: the KV pool, not prompt tokens against
        # the budget, bounds what it holds — vLLM reserves I + O/2 tokens a request, 65,536 B a
        # token (FP8 KV), so floor(pool/(65,536 · 20,050)) = 93 on an H200 (it had held 40)
        dis = self.infer("llama3-8B", "h200", weights_datatype="fp8", input_tokens=20000,
                         output_tokens=100, engine="vllm",
                         disaggregated={"prefill": {"tensor_par": 1}, "decode": {"tensor_par": 1}})
        self.assertEqual(dis["max_concurrency"],
                         dis["memory"]["kv_capacity_bytes"] // (65536 * 20050))
        self.assertEqual(dis["max_concurrency"], 93)
    def test_output_spread_holds_longer_sequences(self):
        # Outputs of mean 2,000 and p90 4,000 tokens (σ = 2,000/z₀.₉): a decode slot holds each
        # request for as many steps as it has output tokens, so the slots hold long outputs more
        # often and the mean sequence is I + O/2 + σ²/(2·O) (it was I + O/2, the spread ignored):
        # vLLM reserves that much KV a request, so fewer requests fit, and a step at the same
        # concurrency reads more KV and is no shorter.
        z = statistics.NormalDist().inv_cdf(0.9)
        sigma = 2000 / z
        base = dict(weights_datatype="fp8", input_tokens=1000, engine="vllm")
        plain = self.infer("llama3-8B", "h200", output_tokens=2000, concurrency=64, **base)
        spread = self.infer("llama3-8B", "h200", output_tokens={"mean": 2000, "p90": 4000},
                            concurrency=64, **base)
        slot = lambda o, s: 1000 + o / 2 + s * s / (2 * o)
        self.assertAlmostEqual(spread["decode"]["kv_bytes"] / plain["decode"]["kv_bytes"],
                               slot(2000, sigma) / slot(2000, 0), delta=1e-9)
        self.assertGreaterEqual(spread["tpot_s"], plain["tpot_s"])
        self.assertLess(spread["max_concurrency"], plain["max_concurrency"])

    def test_finite_run_waits_for_its_longest_output(self):
        # 500 requests queued at once, 200 in and 214 ± 150 out: the run makes the lengths of
        # the normal at positions (r + ½)/500 and ends with its longest, 214 + 150·Φ⁻¹(0.999) =
        # 677.5 tokens, decoding in a shrinking batch. It takes longer than 500 requests of 214
        # tokens and makes the tokens its lengths add up to (the shortest positions make one
        # each). Prompts of 200 ± 50 are dealt the same way: 200 on average, and a
        # request's prompt and output lengths independent (the rate moves, the mean does not).
        z = statistics.NormalDist().inv_cdf
        made = sum(max(1, 214 + 150 * z((r + 0.5) / 500)) for r in range(500)) / 500
        base = dict(weights_datatype="fp8", input_tokens=200, engine="vllm", num_requests=500)
        plain = self.infer("llama3-8B", "h200", output_tokens=214, **base)
        spread = self.infer("llama3-8B", "h200", output_tokens={"mean": 214, "spread": 150},
                            **base)
        self.assertAlmostEqual(spread["output_tokens_per_s"] / spread["requests_per_s"], made,
                               delta=1e-6 * made)
        self.assertLess(spread["requests_per_s"], plain["requests_per_s"])
        prompts = self.infer("llama3-8B", "h200",
                             output_tokens={"mean": 214, "spread": 150},
                             **dict(base, input_tokens={"mean": 200, "spread": 50}))
        self.assertAlmostEqual(prompts["input_tokens_per_s_per_gpu"] / prompts["requests_per_s"],
                               200, delta=1e-6 * 200)
        self.assertAlmostEqual(prompts["output_tokens_per_s"] / prompts["requests_per_s"], made,
                               delta=1e-6 * made)
        self.assertEqual(prompts["warnings"], [])

    def test_finite_run_of_uniform_lengths(self):
        # vllm bench's random dataset at 214 output tokens and --random-range-ratio 0.5 draws
        # lengths uniform between 107 and 321: {"low", "high"}. 500 requests queued at once make
        # 214 tokens on average (the positions (r + 1/2)/500 are symmetric), the longest
        # 107 + 214 * 499.5/500 = 320.8; a normal of the same spread, (321 - 107)/sqrt(12) = 61.8,
        # runs to 214 + 61.8 * 3.09 = 405 tokens, so its run is the longer. Half a bound is a
        # 422 naming the other.
        base = dict(weights_datatype="fp8", input_tokens=200, engine="vllm", num_requests=500)
        uniform = self.infer("llama3-8B", "h200", output_tokens={"low": 107, "high": 321}, **base)
        normal = self.infer("llama3-8B", "h200",
                            output_tokens={"mean": 214, "spread": 214 / 12 ** 0.5}, **base)
        plain = self.infer("llama3-8B", "h200", output_tokens=214, **base)
        self.assertAlmostEqual(uniform["output_tokens_per_s"] / uniform["requests_per_s"], 214,
                               delta=1e-9 * 214)
        self.assertLess(uniform["requests_per_s"], plain["requests_per_s"])
        self.assertGreater(uniform["requests_per_s"], normal["requests_per_s"])
        r = self.server.post("/v1/inference", body("llama3-8B", "h200",
                                                   output_tokens={"low": 107}, **base))
        self.assertEqual(r.status, 422, r.body)
        self.assertEqual(r.json()["error"]["field"], "serving.output_tokens.high")

    def test_what_does_not_fit_says_why(self):
        # Llama 3.1 70B in BF16 (70.55e9 parameters, 2 bytes each: 141 GB) on one 80 GB H100
        # cannot hold its weights; on four it holds them (35 GB a GPU) but not the KV cache of
        # one 2,000,000-token request (80 blocks x 2 x 8 KV heads x 128 x 2 B = 327,680 B a
        # token, 82 kB on each of the four: 164 GB a GPU). Each says which, and a layout that
        # fits says neither.
        codes = lambda a: {w["code"] for w in a["warnings"]}
        common = dict(input_tokens=2000, output_tokens=200, concurrency=8)
        one = self.infer("llama3.1-70B", "h100_sxm", tensor_par=1, **common)
        self.assertFalse(one["fits_memory"])
        self.assertGreater(one["memory"]["weights_bytes"], one["memory"]["capacity_bytes"])
        self.assertIn("weights_over_memory", codes(one))
        self.assertNotIn("no_request_fits", codes(one))
        long = self.infer("llama3.1-70B", "h100_sxm", tensor_par=4, input_tokens=2_000_000,
                          output_tokens=200, concurrency=8)
        self.assertFalse(long["fits_memory"])
        self.assertEqual(long["kv_cache_bytes_per_token"], 327680)
        self.assertGreater(long["memory"]["kv_bytes_per_request"],
                           long["memory"]["kv_capacity_bytes"])
        self.assertEqual(codes(long) & {"weights_over_memory", "no_request_fits"},
                         {"no_request_fits"})
        fits = self.infer("llama3.1-70B", "h100_sxm", tensor_par=4, **common)
        self.assertTrue(fits["fits_memory"])
        self.assertFalse(codes(fits) & {"weights_over_memory", "no_request_fits"})


if __name__ == "__main__":
    unittest.main()

"""test_properties.py — metamorphic properties of the training estimates, as a capacity planner
compares answers side by side: one input changed from a realistic base, the answer must move the
way the physics says (or stay). Each property names why it holds; the exceptions the step model
documents (a ring leaving the NVLink domain, a host-bound FP8 MoE block on a Grace host, eager
torchao casts, FSDP holding more than Megatron's ZeRO-1 under PP) are left out of the bases."""
import math
import unittest

from harness import ServerTestCase

# Megatron-style layouts of the presets, modern defaults spelled out.
COMMON = {"datatype": "bfloat16", "attention_kernel": "fused", "optimizer_sharding": True,
          "activation_recompute": "none"}
BASES = [
    ("llama3-8B", {"num_procs": 16, "tensor_par": 2, "pipeline_par": 2, "data_par": 4,
                   "batch_size": 64, "microbatch_size": 2}),
    ("llama3-70B", {"num_procs": 64, "tensor_par": 4, "pipeline_par": 4, "data_par": 4,
                    "batch_size": 128, "microbatch_size": 1}),
    ("qwen3-30B-A3B", {"num_procs": 16, "tensor_par": 1, "pipeline_par": 2, "data_par": 8,
                       "expert_par": 8, "batch_size": 128, "microbatch_size": 1}),
]


def walk(obj, path=""):
    """Every number of an answer with its path."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from walk(v, path + "." + k)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from walk(v, "%s[%d]" % (path, i))
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
        yield path, obj


class Properties(ServerTestCase):
    def summary(self, model, execution, system="h100_sxm"):
        body = {"model": model, "system": system, "execution": dict(COMMON, **execution)}
        r = self.server.post("/v1/estimate", body)
        self.assertEqual(r.status, 200, (body, r.body))
        out = r.json()
        # every answer: finite, no negative time or byte, MFU in (0, 1]
        for path, v in walk(out):
            self.assertTrue(math.isfinite(v), path)
            if not path.endswith("_pct"):  # a change's percentage may fall
                self.assertGreaterEqual(v, 0, (path, body))
        s = out["summary"]
        self.assertGreater(s["mfu"], 0)
        self.assertLessEqual(s["mfu"], 1)
        return s

    def test_faster_gpu_same_node(self):
        """H100 → H200 → B200, 8 GPUs a node each, the same layout and datatypes: the step never
        lengthens (every rate and bandwidth is at least as high) and the memory is the same
        bytes (what a rank holds does not depend on the GPU)."""
        for model, base in BASES:
            for extra in ({}, {"activation_recompute": "full"}, {"fp8": True}):
                got = [self.summary(model, dict(base, **extra), system)
                       for system in ("h100_sxm", "h200", "b200")]
                for a, b in zip(got, got[1:]):
                    self.assertLessEqual(b["step_time_s"], a["step_time_s"], (model, extra))
                    self.assertEqual(b["mem_tier1_bytes"], a["mem_tier1_bytes"], (model, extra))

    def test_memory_falls_as_the_model_is_split(self):
        """More tensor or pipeline ranks (the data-parallel degree kept), a higher ZeRO stage or
        more recompute never hold more on a GPU."""
        for model, base in BASES:
            for axis in ("tensor_par", "pipeline_par"):
                prev = None
                for degree in (1, 2, 4):
                    e = dict(base, **{axis: degree})
                    e["num_procs"] = e["tensor_par"] * e["pipeline_par"] * e["data_par"]
                    m = self.summary(model, e)["mem_tier1_bytes"]
                    if prev is not None:
                        self.assertLessEqual(m, prev, (model, axis, degree))
                    prev = m
            stages = [dict(base, optimizer_sharding=False, zero_stage=0)] + \
                [dict(base, zero_stage=z) for z in (1, 2, 3)]
            mems = [self.summary(model, e)["mem_tier1_bytes"] for e in stages]
            self.assertEqual(mems, sorted(mems, reverse=True), model)
            mems = [self.summary(model, dict(base, activation_recompute=r))["mem_tier1_bytes"]
                    for r in ("none", "attn_only", "full")]
            self.assertEqual(mems, sorted(mems, reverse=True), model)

    def test_memory_grows_with_the_work_a_rank_holds(self):
        """A longer sequence or a larger microbatch never holds less; the step never shortens
        with more microbatches, nor do tokens/s per GPU fall (the bubble and the data-parallel
        reduction are shared by more work)."""
        for model, base in BASES:
            preset = self.server.get("/v1/presets/models/" + model).json()
            preset = preset.get("model", preset)
            prev = None
            for seq in (2048, 4096, 8192):
                s = self.summary(dict(preset, seq_size=seq), base)
                if prev:
                    self.assertGreaterEqual(s["mem_tier1_bytes"], prev["mem_tier1_bytes"])
                    ratio = s["tokens_per_s_per_proc"] / prev["tokens_per_s_per_proc"]
                    self.assertTrue(0.5 <= ratio <= 2, (model, seq, ratio))
                prev = s
            mems = [self.summary(model, dict(base, microbatch_size=mbs))["mem_tier1_bytes"]
                    for mbs in (1, 2, 4)]
            self.assertEqual(mems, sorted(mems), model)
            prev = None
            for mult in (1, 2, 4, 8):
                s = self.summary(model, dict(base, batch_size=base["data_par"] *
                                             base["microbatch_size"] * mult))
                if prev:
                    self.assertGreaterEqual(s["step_time_s"], prev["step_time_s"])
                    self.assertGreaterEqual(s["tokens_per_s_per_proc"],
                                            prev["tokens_per_s_per_proc"] * (1 - 1e-9))
                prev = s

    def test_optimisations_never_slow_the_step(self):
        """FP8 GEMMs on these shapes, DP overlap, and under torchtitan compile and async TP: each
        only removes work or hides it."""
        for model, base in BASES:
            plain = self.summary(model, base)["step_time_s"]
            self.assertLessEqual(self.summary(model, dict(base, fp8=True))["step_time_s"], plain)
            self.assertLessEqual(
                self.summary(model, dict(base, data_par_overlap=True))["step_time_s"], plain)
        model, base = BASES[0]
        for fp8 in ({}, {"fp8": True, "fp8_recipe": "tensorwise"}):
            eager = dict(base, stack="torchtitan", zero_stage=3, **fp8)
            compiled = dict(eager, compile=True)
            t_eager = self.summary(model, eager)["step_time_s"]
            t_compiled = self.summary(model, compiled)["step_time_s"]
            t_async = self.summary(model, dict(compiled, async_tp=True))["step_time_s"]
            self.assertLessEqual(t_compiled, t_eager, fp8)
            self.assertLessEqual(t_async, t_compiled, fp8)


if __name__ == "__main__":
    unittest.main()

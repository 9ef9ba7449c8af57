"""test_planner.py — the API as a capacity planner uses it: fine-tuning (execution.finetune) in
/v1/estimate, a search and a plan; the modern defaults of a search (fused attention, the natural
datatype, FP8 free) against Calculon's defaults for Calculon's models; a plan over systems of
different datatypes; the transformer endpoint's LoRA GPUs in whole tensor-parallel groups."""
import unittest

from harness import ServerTestCase, validate
from test_plan import run_plan
from test_sweeps import wait_for

LAYOUT = {"num_procs": 8, "tensor_par": 1, "data_par": 8, "batch_size": 64, "microbatch_size": 1,
          "datatype": "bfloat16", "attention_kernel": "fused", "optimizer_sharding": True,
          "tensor_par_net": 0, "pipeline_par_net": 0, "data_par_net": 0}
# DeepSeek-V3 on 256 H100s: PP 16, DP 16, EP 16 across nodes, full recompute
DEEPSEEK = dict(model="deepseek-v3", num_procs=256, pipeline_par=16, data_par=16, expert_par=16,
                expert_par_net=1, data_par_net=1, pipeline_par_net=1, batch_size=256,
                activation_recompute="full")


class FineTuning(ServerTestCase):
    def estimate(self, finetune=None, model="llama3-8B", **extra):
        execution = dict(LAYOUT, **extra)
        if finetune:
            execution["finetune"] = finetune
        return self.server.post("/v1/estimate", {"model": model, "system": "h100_sxm",
                                                 "execution": execution})

    def test_lora_and_qlora_memory_per_gpu(self):
        pre = self.estimate().json()["summary"]
        full = self.estimate({"method": "full"}).json()["summary"]
        self.assertEqual(full["step_time_s"], pre["step_time_s"])
        r = self.estimate({"method": "lora", "rank": 16})
        self.assertEqual(r.status, 200, r.body)
        out = r.json()
        validate(out, "estimate.response.json")
        lora = out["summary"]
        # Llama 3 8B, rank 16 on all seven projections of 32 blocks:
        # 16·[(4096+4096)·2 + (4096+1024)·2 + (4096+14336)·3] = 16·[16384 + 10240 + 55296]
        # = 1,310,720 a block, 41,943,040 in all
        self.assertEqual(lora["parameters_trainable"], 41943040)
        self.assertEqual(pre["parameters_trainable"], pre["parameters_total"])
        st = lora["memory"]["stages"][0]
        # gradients: fp32 of the adapters (data_par 8 holds them whole at ZeRO-1): 4 bytes each
        self.assertEqual(st["gradients"], 41943040 * 4)
        # optimizer: 12 bytes an adapter parameter over the 8 shards of ZeRO-1
        self.assertAlmostEqual(st["optimizer"], 41943040 * 12 / 8, delta=1)
        self.assertLess(lora["mem_tier1_bytes"], pre["mem_tier1_bytes"] / 2)
        self.assertLess(lora["step_time_s"], pre["step_time_s"])  # no weight-gradient GEMMs
        q = self.estimate({"method": "qlora", "rank": 16}).json()["summary"]
        # NF4 weights: 8.03 B parameters at 4.127 bits ≈ 4.14 GB against 16.06 GB in bf16
        self.assertAlmostEqual(q["memory"]["stages"][0]["weights"] - 41943040 * 2,
                               8030261248 * 4.126953125 / 8, delta=1)
        self.assertGreater(q["step_time_s"], lora["step_time_s"])  # dequantization

    def test_refusals_name_the_field(self):
        cases = [({"method": "lora"}, "execution.finetune.rank"),
                 ({"method": "dora", "rank": 8}, "execution.finetune.method"),
                 ({"method": "full", "rank": 8}, "execution.finetune.rank"),
                 ({"method": "qlora", "rank": 8, "base_datatype": "bfloat16"}, "execution.finetune.base_datatype"),
                 ({"method": "lora", "rank": 8, "base_datatype": "nf4"}, "execution.finetune.base_datatype"),
                 ({"method": "lora", "rank": 8, "targets": []}, "execution.finetune.targets"),
                 ({"method": "lora", "rank": 8, "targets": ["qkv"]}, "execution.finetune.targets[0]"),
                 ({"method": "lora", "rank": 8, "alpha": 16}, "execution.finetune.alpha"),
                 ({"method": "lora", "rank": 2048}, "execution.finetune.rank")]
        for ft, field in cases:
            with self.subTest(finetune=ft):
                self.assertError(self.estimate(ft), 422, "invalid_field", field)
        # what a model does not have: MLA has no k_proj, a dense model no routed experts
        r = self.estimate({"method": "lora", "rank": 8, "targets": ["k_proj"]}, **DEEPSEEK)
        err = self.assertError(r, 422, "invalid_field", "execution.finetune.targets")
        self.assertIn("kv_b_proj", err["message"])
        self.assertError(self.estimate({"method": "lora", "rank": 8, "routed_experts": False}),
                         422, "invalid_field", "execution.finetune.routed_experts")
        self.assertError(self.estimate({"method": "lora", "rank": 8, "targets": "all"}),
                         422, "invalid_field", "execution.finetune.targets")
        self.assertError(self.estimate({"method": "lora", "rank": 8, "targets": ["q_a_proj"]}),
                         422, "invalid_field", "execution.finetune.targets")

    def test_lora_on_experts_mla_and_mtp(self):
        # Mixtral 8x7B, rank 16, all-linear: attention q 16·(4096+4096) = 131,072, k and v
        # 16·(4096+1024) = 81,920 each, o 131,072 (425,984 a block); each of the 8 experts' w1,
        # w3, w2 16·(4096+14336) = 294,912, 7,077,888 a block: 7,503,872 · 32 = 240,123,904
        mix = dict(model="mixtral-8x7B", expert_par=8)
        pre = self.estimate(**mix).json()["summary"]
        out = self.estimate({"method": "lora", "rank": 16}, **mix)
        self.assertEqual(out.status, 200, out.body)
        validate(out.json(), "estimate.response.json")
        lora = out.json()["summary"]
        self.assertEqual(lora["parameters_trainable"], 240123904)
        self.assertLess(lora["step_time_s"], pre["step_time_s"])
        self.assertLess(lora["mem_tier1_bytes"], pre["mem_tier1_bytes"] / 4)
        # the experts frozen (no shared experts, no dense MLP: the attention's adapters alone)
        att = self.estimate({"method": "lora", "rank": 16, "routed_experts": False}, **mix).json()["summary"]
        self.assertEqual(att["parameters_trainable"], 425984 * 32)
        self.assertLess(att["mem_tier1_bytes"], lora["mem_tier1_bytes"])
        # DeepSeek-V3, rank 16, all-linear: attention q_a 16·(7168+1536) = 139,264, q_b
        # 16·(1536+128·192) = 417,792, kv_a 16·(7168+576) = 123,904, kv_b 16·(512+128·256) =
        # 532,480, o 16·(128·128+7168) = 376,832: 1,590,272; a routed expert 3·16·(7168+2048) =
        # 442,368, ×256 = 113,246,208, the shared expert 442,368; a dense block's MLP
        # 3·16·(7168+18432) = 1,228,800. 58 MoE blocks and the MTP depth at 115,278,848, 3 dense
        # at 2,819,072: 6,809,909,248. Without the routed experts: 59 · 2,032,640 + 3 · 2,819,072
        # = 128,382,976.
        pre = self.estimate(**DEEPSEEK).json()["summary"]
        lora = self.estimate({"method": "lora", "rank": 16}, **DEEPSEEK).json()["summary"]
        self.assertEqual(lora["parameters_trainable"], 6809909248)
        self.assertLess(lora["step_time_s"], pre["step_time_s"])
        self.assertLess(lora["mem_tier1_bytes"], pre["mem_tier1_bytes"] / 2)
        shared = self.estimate({"method": "lora", "rank": 16, "routed_experts": False}, **DEEPSEEK).json()["summary"]
        self.assertEqual(shared["parameters_trainable"], 128382976)
        q = self.estimate({"method": "qlora", "rank": 16}, **DEEPSEEK).json()["summary"]
        self.assertLess(q["mem_tier1_bytes"], lora["mem_tier1_bytes"])

    def test_fsdp2_with_a_frozen_base(self):
        # torchtitan, ZeRO-3 over 8: the frozen base sharded in bf16 with no gradient or
        # optimizer shard; the 41,943,040 adapter parameters as FSDP2 trains any: optimizer
        # 8/8 bytes each = 41,943,040; gradients 4/8 each + one block's 1,310,720 unsharded
        # (bf16 + fp32) = 20,971,520 + 7,864,320 = 28,835,840
        fsdp = dict(stack="torchtitan", zero_stage=3)
        full = self.estimate({"method": "full"}, **fsdp).json()["summary"]["memory"]["stages"][0]
        r = self.estimate({"method": "lora", "rank": 16}, **fsdp)
        self.assertEqual(r.status, 200, r.body)
        st = r.json()["summary"]["memory"]["stages"][0]
        self.assertEqual(st["optimizer"], 41943040)
        self.assertEqual(st["gradients"], 28835840)
        self.assertLess(st["weights"], full["weights"])

    def test_search_and_plan_fine_tune(self):
        body = {"kind": "optimal_execution", "model": "llama3-8B", "system": "h100_sxm",
                "num_procs": 8, "max_batch_size": 64, "finetune": {"method": "qlora", "rank": 16},
                "options": {"max_tensor_par": 2, "max_pipeline_par": 2, "top_n": 2}}
        r = self.server.post("/v1/sweep", body)
        self.assertIn(r.status, (200, 202), r.body)
        doc = wait_for(self.server, r.json()["id"])
        self.assertEqual(doc["status"], "done", doc)
        self.assertEqual(doc["spec"]["finetune"]["base_datatype"], "nf4")
        for b in doc["best"]:
            self.assertEqual(b["execution"]["finetune"]["method"], "qlora")
            self.assertEqual(b["summary"]["parameters_trainable"], 41943040)
        bad = dict(body, model="deepseek-v3", finetune={"method": "lora", "rank": 16, "targets": ["k_proj"]})
        self.assertError(self.server.post("/v1/sweep", bad), 422, "invalid_field", "finetune.targets")
        bad = {"kind": "plan", "model": "llama3-8B", "tokens": 1e9, "systems": ["h100_sxm"],
               "gpu_counts": [8], "finetune": {"method": "lora", "rank": 16, "routed_experts": False}}
        self.assertError(self.server.post("/v1/sweep", bad), 422, "invalid_field", "finetune.routed_experts")
        plan = run_plan(self, self.server, {
            "kind": "plan", "model": "llama3-8B", "tokens": 1e9, "batch_tokens": 524288,
            "systems": [{"name": "h100", "system": "h100_sxm", "price_per_gpu_hour": 2}],
            "gpu_counts": [8], "finetune": {"method": "lora", "rank": 16}})
        c = plan["plan"]["candidates"][0]
        self.assertEqual(c["execution"]["finetune"]["method"], "lora")


class ModernDefaults(ServerTestCase):
    def search(self, model, system, **extra):
        body = dict({"kind": "optimal_execution", "model": model, "system": system,
                     "num_procs": 8, "max_batch_size": 16,
                     "options": {"max_tensor_par": 2, "max_pipeline_par": 1}}, **extra)
        r = self.server.post("/v1/sweep", body)
        self.assertIn(r.status, (200, 202), r.body)
        doc = wait_for(self.server, r.json()["id"])
        self.assertEqual(doc["status"], "done", doc)
        return doc

    def test_modern_model_defaults_and_calculon_defaults(self):
        doc = self.search("llama3-8B", "h100_sxm")
        self.assertEqual(doc["spec"]["datatype"], "bfloat16")
        self.assertEqual(doc["spec"]["options"]["attention_kernel"], "fused")
        self.assertEqual(doc["spec"]["options"]["fp8"], "all")
        # a system without FP8 (A100): FP8 stays off, bfloat16 still the natural datatype
        doc = self.search("llama3-8B", "a100_sxm")
        self.assertEqual(doc["spec"]["options"]["fp8"], False)
        # Calculon's model keeps Calculon's defaults (its golden searches depend on them)
        doc = self.search("megatron-126M", "a100_80g")
        self.assertEqual(doc["spec"]["datatype"], "float16")
        self.assertEqual(doc["spec"]["options"]["attention_kernel"], "unfused")
        self.assertEqual(doc["spec"]["options"]["fp8"], False)
        # what a request says is kept
        doc = self.search("llama3-8B", "h100_sxm", datatype="float16",
                          options={"max_tensor_par": 2, "max_pipeline_par": 1,
                                   "attention_kernel": "unfused", "fp8": False})
        self.assertEqual((doc["spec"]["datatype"], doc["spec"]["options"]["attention_kernel"],
                          doc["spec"]["options"]["fp8"]), ("float16", "unfused", False))


class PlanDatatypes(ServerTestCase):
    def test_systems_of_several_datatypes(self):
        # a100_80g has float16 rates only; h100_sxm bfloat16 too: one plan, each at its best
        doc = run_plan(self, self.server, {
            "kind": "plan", "model": "llama3-8B", "tokens": 1e9, "batch_tokens": 524288,
            "systems": [{"name": "a100", "system": "a100_80g", "price_per_gpu_hour": 1.5},
                        {"name": "h100", "system": "h100_sxm", "price_per_gpu_hour": 2}],
            "gpu_counts": [8]})
        self.assertEqual(doc["spec"]["datatype"], ["bfloat16", "float16"])
        by = {c["system"]: c for c in doc["plan"]["candidates"]}
        self.assertEqual(by["a100"]["execution"]["datatype"], "float16")
        self.assertEqual(by["h100"]["execution"]["datatype"], "bfloat16")
        # one datatype the system lacks: refused naming the system
        r = self.server.post("/v1/sweep", {
            "kind": "plan", "model": "llama3-8B", "tokens": 1e9, "batch_tokens": 524288,
            "systems": [{"name": "a100", "system": "a100_80g"}], "gpu_counts": [8],
            "datatype": "bfloat16"})
        err = self.assertError(r, 422, "invalid_field", "datatype")
        self.assertIn("a100", err["message"])
        r = self.server.post("/v1/sweep", {
            "kind": "plan", "model": "llama3-8B", "tokens": 1e9, "batch_tokens": 524288,
            "systems": [{"name": "a100", "system": "a100_80g"}], "gpu_counts": [8],
            "datatype": ["bfloat16", "bfloat16"]})
        self.assertError(r, 422, "invalid_field", "datatype[1]")


class TransformerLora(ServerTestCase):
    def test_gpus_by_memory_in_whole_tensor_parallel_groups(self):
        r = self.server.post("/v1/transformer", {"model": "llama3-8B", "tensor_par": 8,
                                                 "gpu_memory_gib": 80, "lora": {"rank": 16}})
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json()["lora"]["gpus_by_memory"] % 8, 0)
        self.assertGreaterEqual(r.json()["lora"]["gpus_by_memory"], 8)


if __name__ == "__main__":
    unittest.main()

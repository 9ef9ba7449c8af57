"""test_moe.py — mixture of experts, multi-latent attention and MTP through a real fathomd: the
published parameter counts of the MoE presets from /v1/estimate, an estimate of DeepSeek-V3 on
1024 H100s against its schema (expert and non-expert memory, the all-to-all on the node tier),
bad MoE fields as 422s naming the field, and the MoE rows of the measured validation table."""
import unittest

from harness import ServerTestCase, validate
from test_sweeps import wait_for

# Published totals and active parameters (the models' config.json, DeepSeek-V3 without MTP).
PARAMETERS = {"mixtral-8x7B": (46702792704, 12879925248),
              "mixtral-8x22B": (140630071296, 39161468928)}
DEEPSEEK_V3 = (671026419200, 37552297472)

DEEPSEEK_H100 = {"num_procs": 1024, "tensor_par": 1, "pipeline_par": 16, "data_par": 64,
                 "expert_par": 64, "expert_par_net": 1, "batch_size": 1024,
                 "datatype": "bfloat16", "fp8": True, "attention_kernel": "fused",
                 "activation_recompute": "full", "optimizer_sharding": True,
                 "data_par_overlap": True, "tensor_par_net": 0, "pipeline_par_net": 1,
                 "data_par_net": 1}


class Moe(ServerTestCase):
    def estimate(self, model, execution, system="h100_sxm"):
        return self.server.post("/v1/estimate", {"model": model, "system": system, "execution": execution})

    def test_parameter_counts(self):
        for name, (total, active) in PARAMETERS.items():
            r = self.estimate(name, {"num_procs": 8, "tensor_par": 1, "expert_par": 8,
                                     "batch_size": 8, "datatype": "bfloat16"})
            self.assertEqual(r.status, 200, r.body)
            s = r.json()["summary"]
            self.assertEqual(s["parameters_total"], total, name)
            self.assertEqual(s["parameters_active"], active, name)
            t = self.server.post("/v1/transformer", {"model": name})  # the analytic model agrees
            self.assertEqual(t.status, 200, t.body)
            self.assertEqual(t.json()["params"]["total"], total, name)
        model = self.server.get("/v1/presets/models/deepseek-v3").json()
        model.pop("$comment", None)
        model["mtp_blocks"] = 0
        r = self.estimate(model, DEEPSEEK_H100)
        self.assertEqual(r.status, 200, r.body)
        s = r.json()["summary"]
        self.assertEqual((s["parameters_total"], s["parameters_active"]), DEEPSEEK_V3)

    def test_deepseek_v3_estimate(self):
        r = self.estimate("deepseek-v3", DEEPSEEK_H100)
        self.assertEqual(r.status, 200, r.body)
        out = r.json()
        validate(out, "estimate.response.json")
        s = out["summary"]
        self.assertEqual(s["expert_parallel_tier"], 1)  # EP 64 spans eight 8-GPU nodes
        self.assertGreater(s["time_breakdown_s"]["expert_parallel_comm"], 0)
        self.assertGreater(s["routed_expert_compute_s"], 0)
        self.assertAlmostEqual(sum(s["time_breakdown_s"].values()), s["step_time_s"],
                               delta=1e-9 * s["step_time_s"])
        first = s["memory"]["stages"][0]
        # hand-worked in tests/unit/llm/test_llm_moe.c: 12·176,160,768 expert optimizer bytes
        self.assertEqual(first["expert"]["optimizer"], 2113929216)
        self.assertEqual(first["non_expert"]["optimizer"], 545648688)
        self.assertAlmostEqual(first["expert"]["weights"] + first["non_expert"]["weights"], first["weights"])
        self.assertTrue(0 < s["mfu"] < 1)
        # expert_par_net left out: the first tier that connects the 64-GPU expert group, the
        # same estimate as naming it (it was tensor_par_net's tier 0, refused as too small)
        implicit = {k: v for k, v in DEEPSEEK_H100.items() if k != "expert_par_net"}
        r0 = self.estimate("deepseek-v3", implicit)
        self.assertEqual(r0.status, 200, r0.body)
        self.assertEqual(r0.json()["summary"]["expert_parallel_tier"], 1)
        self.assertEqual(r0.json()["summary"]["step_time_s"], s["step_time_s"])
        # an EP group inside one node stays on the node's tier
        r8 = self.estimate("deepseek-v3", dict(implicit, expert_par=8))
        self.assertEqual(r8.status, 200, r8.body)
        self.assertEqual(r8.json()["summary"]["expert_parallel_tier"], 0)
        # named too small, still refused naming the field
        bad = self.estimate("deepseek-v3", dict(DEEPSEEK_H100, expert_par_net=0))
        self.assertEqual(bad.status, 422, bad.body)
        self.assertEqual(bad.json()["error"]["field"], "execution.expert_par_net")
        # overlapping dispatch/combine never makes the step slower
        r2 = self.estimate("deepseek-v3", dict(DEEPSEEK_H100, moe_a2a_overlap=True))
        self.assertEqual(r2.status, 200, r2.body)
        self.assertLessEqual(r2.json()["summary"]["step_time_s"], s["step_time_s"])
        # a busier rank is slower
        r3 = self.estimate("deepseek-v3", dict(DEEPSEEK_H100, moe_load_imbalance=1.5))
        self.assertGreater(r3.json()["summary"]["step_time_s"], s["step_time_s"])
        # the flex dispatcher (a token crosses InfiniBand once per remote node) moves less
        # across nodes than the plain all-to-all, and is echoed in the normalized execution
        r4 = self.estimate("deepseek-v3", dict(DEEPSEEK_H100, moe_dispatcher="flex"))
        self.assertEqual(r4.status, 200, r4.body)
        b4 = r4.json()["summary"]["time_breakdown_s"]
        self.assertLess(b4["expert_parallel_comm"], s["time_breakdown_s"]["expert_parallel_comm"])
        self.assertGreater(b4["expert_parallel_comm"], 0)

    def test_selective_recompute_modules(self):
        """recompute_modules (Megatron's selective recompute): each module set stores less than
        no recompute and reruns some forward (the recompute line), more modules store less
        still, the moe module reruns the dispatch and combine too, and the normalized execution
        echoes the list."""
        none = dict(DEEPSEEK_H100, activation_recompute="none")
        results = {}
        for mods in ([], ["moe_act"], ["moe_act", "mla_up_proj"], ["moe_act", "mla_up_proj", "moe"]):
            r = self.estimate("deepseek-v3", dict(none, recompute_modules=mods))
            self.assertEqual(r.status, 200, r.body)
            out = r.json()
            validate(out, "estimate.response.json")
            results[len(mods)] = out["summary"]
            stored = self.server.get("/v1/results/" + r.header("ETag").strip('"')).json()
            if mods:
                self.assertEqual(stored["request"]["execution"]["recompute_modules"], mods)
            else:
                self.assertNotIn("recompute_modules", stored["request"]["execution"])
        for n in (1, 2, 3):
            self.assertLess(results[n]["mem_tier1_bytes"], results[n - 1]["mem_tier1_bytes"], n)
            self.assertGreater(results[n]["time_breakdown_s"]["recompute"],
                               results[n - 1]["time_breakdown_s"]["recompute"], n)
        self.assertEqual(results[0]["time_breakdown_s"]["recompute"], 0)
        self.assertEqual(results[2]["time_breakdown_s"]["expert_parallel_comm"],
                         results[0]["time_breakdown_s"]["expert_parallel_comm"])
        self.assertGreater(results[3]["time_breakdown_s"]["expert_parallel_comm"],
                           results[2]["time_breakdown_s"]["expert_parallel_comm"])
        # layernorm beside moe_act: both norms rerun and their outputs are not kept; the list
        # comes back in the order of the module names
        r = self.estimate("deepseek-v3", dict(none, recompute_modules=["layernorm", "moe_act"]))
        self.assertEqual(r.status, 200, r.body)
        ln = r.json()["summary"]
        self.assertLess(ln["mem_tier1_bytes"], results[1]["mem_tier1_bytes"])
        self.assertGreater(ln["time_breakdown_s"]["recompute"], results[1]["time_breakdown_s"]["recompute"])
        stored = self.server.get("/v1/results/" + r.header("ETag").strip('"')).json()
        self.assertEqual(stored["request"]["execution"]["recompute_modules"], ["moe_act", "layernorm"])
        # refusals name the field
        for exe, field in ((dict(DEEPSEEK_H100, recompute_modules=["moe"]), "execution.recompute_modules"),
                           (dict(none, recompute_modules=["mamba"]), "execution.recompute_modules[0]"),
                           (dict(none, recompute_modules=["moe", "moe"]), "execution.recompute_modules[1]"),
                           (dict(none, recompute_modules="moe"), "execution.recompute_modules"),
                           (dict(none, attention_kernel="unfused", recompute_modules=["mla_up_proj"]),
                            "execution.recompute_modules")):
            r = self.estimate("deepseek-v3", exe)
            self.assertEqual(r.status, 422, (exe, r.body))
            self.assertEqual(r.json()["error"]["field"], field, r.body)
        r = self.estimate("mixtral-8x7B", {"num_procs": 8, "expert_par": 8, "batch_size": 8,
                                           "datatype": "bfloat16", "activation_recompute": "none",
                                           "attention_kernel": "fused",
                                           "recompute_modules": ["mla_up_proj"]})
        self.assertEqual(r.status, 422, r.body)
        self.assertEqual(r.json()["error"]["field"], "execution.recompute_modules")
        # every Mixtral block is an MoE block: no dense MLP for mlp to rerun
        r = self.estimate("mixtral-8x7B", {"num_procs": 8, "expert_par": 8, "batch_size": 8,
                                           "datatype": "bfloat16", "activation_recompute": "none",
                                           "recompute_modules": ["mlp"]})
        self.assertEqual(r.status, 422, r.body)
        self.assertEqual(r.json()["error"]["field"], "execution.recompute_modules")
        self.assertIn("MoE block", r.json()["error"]["message"])

    def test_bad_moe_fields_name_the_field(self):
        base = {"hidden": 1024, "seq_size": 1024, "attn_heads": 8, "num_blocks": 4, "vocab_size": 32000,
                "gated_mlp": True}
        moe = {"num_experts": 8, "top_k": 2}
        exe = {"batch_size": 8, "num_procs": 8, "datatype": "bfloat16"}
        cases = [
            (dict(moe, top_k=9), {}, "model.moe.top_k"),
            (dict(moe, num_experts=0), {}, "model.moe.num_experts"),
            (dict(moe, top_k="2"), {}, "model.moe.top_k"),
            (dict(moe, first_dense_blocks=4), {}, "model.moe.first_dense_blocks"),
            (dict(moe, every=0), {}, "model.moe.every"),
            (dict(moe, router_bias=1), {}, "model.moe.router_bias"),
            (dict(moe, experts=8), {}, "model.moe.experts"),
            (dict(moe, router_groups=3, router_group_top_k=1), {}, "model.moe.router_groups"),  # 3 ∤ 8
            (dict(moe, router_groups=-1, router_group_top_k=1), {}, "model.moe.router_groups"),
            (dict(moe, router_groups=4), {}, "model.moe.router_group_top_k"),
            (dict(moe, router_group_top_k=1), {}, "model.moe.router_groups"),
            (dict(moe, router_groups=4, router_group_top_k=5), {}, "model.moe.router_group_top_k"),
            # one group of 1 expert cannot hold the token's 2
            (dict(moe, router_groups=8, router_group_top_k=1), {}, "model.moe.router_group_top_k"),
            (moe, {"expert_par": 3}, "execution.expert_par"),        # 3 does not divide 8 experts
            (moe, {"expert_par": 0}, "execution.expert_par"),
            (dict(moe, num_experts=16), {"expert_par": 16}, "execution.expert_par"),  # > TP·DP = 8
            (moe, {"expert_par": 8, "expert_par_net": 9}, "execution.expert_par_net"),
            (moe, {"expert_tensor_par": 3}, "execution.expert_tensor_par"),
            (moe, {"moe_load_imbalance": 0.5}, "execution.moe_load_imbalance"),
            (moe, {"moe_capacity_factor": -1}, "execution.moe_capacity_factor"),
            (moe, {"moe_a2a_overlap": "yes"}, "execution.moe_a2a_overlap"),
            (moe, {"moe_dispatcher": "deepep"}, "execution.moe_dispatcher"),
            (moe, {"moe_dispatcher": 1}, "execution.moe_dispatcher"),
            (moe, {"moe_fp8_dispatch": "yes"}, "execution.moe_fp8_dispatch"),
            (moe, {"cuda_graphs": "moe"}, "execution.cuda_graphs"),
            (None, {"expert_par": 2}, "execution.expert_par"),       # no experts to split
        ]
        for m, e, field in cases:
            model = dict(base, moe=m) if m is not None else dict(base, kv_heads=8)
            r = self.estimate(model, dict(exe, **e))
            self.assertEqual(r.status, 422, (m, e, r.body))
            self.assertEqual(r.json()["error"]["field"], field, (m, e, r.body))
        for bad_mla, field in (({"kv_lora_rank": 16}, "model.mla.qk_nope_head_dim"),
                               ({"kv_lora_rank": 0, "qk_nope_head_dim": 8, "qk_rope_head_dim": 4,
                                 "v_head_dim": 8}, "model.mla.kv_lora_rank")):
            r = self.estimate(dict(base, mla=bad_mla), exe)
            self.assertEqual(r.status, 422, r.body)
            self.assertEqual(r.json()["error"]["field"], field)
        r = self.estimate(dict(base, mtp_blocks=17), exe)
        self.assertEqual(r.json()["error"]["field"], "model.mtp_blocks")

    def test_host_graphs_and_fp8_dispatch(self):
        """The host launch model and the MoE dispatch fields through the API: a small MoE model on
        one H100 at microbatch 1 waits on its host with every kernel launched eagerly, less with
        the recipes' partial CUDA graphs, not at all with one graph over the iteration; FP8
        dispatch moves fewer bytes; Grace hosts launch 2.75x slower than x86 ones; tiled TP
        overlap now runs with MoE blocks (it was a 422)."""
        exe = {"num_procs": 8, "tensor_par": 1, "expert_par": 8, "batch_size": 64,
               "microbatch_size": 1, "datatype": "bfloat16", "fp8": True,
               "attention_kernel": "fused", "activation_recompute": "none",
               "optimizer_sharding": True, "moe_dispatcher": "flex"}
        host = {}
        for graphs in ("none", "partial", "full"):
            r = self.estimate("qwen3-30B-A3B", dict(exe, cuda_graphs=graphs))
            self.assertEqual(r.status, 200, r.body)
            out = r.json()
            validate(out, "estimate.response.json")
            s = out["summary"]
            host[graphs] = s["host_block_s"]["forward"] + s["host_block_s"]["backward"]
            self.assertAlmostEqual(sum(s["time_breakdown_s"].values()), s["step_time_s"],
                                   delta=1e-9 * s["step_time_s"])
        self.assertGreater(host["none"], host["partial"])
        self.assertGreater(host["partial"], host["full"])
        r = self.estimate("qwen3-30B-A3B", dict(exe, moe_fp8_dispatch=True,
                                                expert_par_net=1, num_procs=16, expert_par=16))
        r0 = self.estimate("qwen3-30B-A3B", dict(exe, expert_par_net=1, num_procs=16,
                                                 expert_par=16))
        self.assertEqual(r.status, 200, r.body)
        self.assertLess(r.json()["summary"]["time_breakdown_s"]["expert_parallel_comm"],
                        r0.json()["summary"]["time_breakdown_s"]["expert_parallel_comm"])
        # a Grace host launches 2.75x slower than an x86 one (TE issue #2053); a replayed
        # kernel costs the GPU, not the host: the x86 measurement's 1.0 us
        for grace in ("gb200_nvl72", "gb300_nvl72", "gh200"):
            system = self.server.get("/v1/presets/systems/" + grace).json()
            self.assertEqual((system["host_launch_s"], system["graph_launch_s"]),
                             (1.82e-5, 1e-6), grace)
        tp2 = dict(exe, num_procs=8, tensor_par=2, tensor_par_comm_type="rs_ag",
                   tensor_par_overlap="ring")
        r = self.estimate("qwen3-30B-A3B", tp2)
        self.assertEqual(r.status, 200, r.body)

    def test_hardware_flops_count_what_runs(self):
        """hardware_flops_per_step is the matrix work all processors run: the imbalance slows
        the busiest rank without adding FLOPs, DeepSeek-V3's dense blocks run their dense MLP
        (a narrower one runs fewer), and a context-parallel pair runs what one rank would."""
        base = dict(DEEPSEEK_H100, activation_recompute="none")
        s1 = self.estimate("deepseek-v3", base).json()["summary"]
        s15 = self.estimate("deepseek-v3", dict(base, moe_load_imbalance=1.5)).json()["summary"]
        self.assertGreater(s15["step_time_s"], s1["step_time_s"])
        self.assertAlmostEqual(s15["hardware_flops_per_step"] / s1["hardware_flops_per_step"], 1,
                               places=12)  # was 1.245
        model = self.server.get("/v1/presets/models/deepseek-v3").json()
        model.pop("$comment", None)
        narrow = self.estimate(dict(model, feedforward=4096), base).json()["summary"]
        # 3 dense blocks, 3 gated linears of 7168 x (18432 - 4096), 6 FLOPs a weight, a token
        fewer = 3 * 3 * 7168 * (18432 - 4096) * 6 * 1024 * 4096
        self.assertAlmostEqual((s1["hardware_flops_per_step"] - narrow["hardware_flops_per_step"])
                               / fewer, 1, places=9)
        qwen = {"num_procs": 16, "tensor_par": 1, "data_par": 16, "expert_par": 16,
                "batch_size": 64, "datatype": "bfloat16", "attention_kernel": "fused",
                "activation_recompute": "none"}
        one = self.estimate("qwen3-30B-A3B", qwen).json()["summary"]
        cp = self.estimate("qwen3-30B-A3B", dict(qwen, data_par=8, context_par=2)).json()
        self.assertAlmostEqual(cp["summary"]["hardware_flops_per_step"]
                               / one["hardware_flops_per_step"], 1, places=6)  # was 0.5

    def test_search_covers_expert_layouts(self):
        # big enough that the GPU, not the host, sets the pace (a smaller model's best layouts
        # all wait on their host alike and EP 8, one expert a rank, launches the fewest kernels)
        model = {"hidden": 4096, "seq_size": 4096, "attn_heads": 32, "kv_heads": 8, "num_blocks": 4,
                 "vocab_size": 32000, "gated_mlp": True, "norm": "rmsnorm", "position_embedding": "rope",
                 "moe": {"num_experts": 8, "top_k": 2, "expert_feedforward": 4096}}
        body = {"kind": "optimal_execution", "model": model, "system": "h100_sxm", "num_procs": 8,
                "max_batch_size": 8, "datatype": "bfloat16",
                "options": {"top_n": 100, "attention_kernel": "fused", "mbs_break": True}}
        r = self.server.post("/v1/sweep", body)
        self.assertEqual(r.status, 202, r.body)
        status = wait_for(self.server, r.json()["id"])
        self.assertEqual(status["status"], "done", status)
        validate(status, "sweep_status.response.json")
        layouts = set()
        for entry in status["best"]:
            e = entry["execution"]
            ep, etp = e.get("expert_par", 1), e.get("expert_tensor_par", 1)
            self.assertEqual(8 % ep, 0)
            self.assertEqual((e["tensor_par"] * e["data_par"]) % (ep * etp), 0)
            layouts.add((ep, etp))
        self.assertGreater(len(layouts), 1, layouts)

    def test_measured_moe_rows(self):
        r = self.server.get("/v1/validation")
        self.assertEqual(r.status, 200)
        m = r.json()["measured"]
        moe = [row for row in m["rows"] if row["moe"]]
        self.assertEqual(len(moe), 19)
        for row in moe:  # none of them needs context parallelism or FSDP
            self.assertTrue(row["expressible"], row)
        self.assertEqual(m["moe_rows_estimated"], 19)
        errors = [abs(x["error_pct"]) for x in moe]
        self.assertAlmostEqual(m["moe_mean_abs_error_pct"], sum(errors) / len(errors), places=9)
        self.assertAlmostEqual(m["moe_max_abs_error_pct"], max(errors), places=9)


if __name__ == "__main__":
    unittest.main()

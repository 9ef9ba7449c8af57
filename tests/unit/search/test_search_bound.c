/* test_search_bound.c — the pieces of the search's bound pruning (core/search/search_bound.h):
 * the running top-N floor and the out-of-reach rule worked by hand, and the rules the walk leans
 * on checked against the model, for a modern block, a small MoE and Calculon's block, over a
 * grid of executions: every execution steps no faster than the same one on the ideal-network
 * system (every tier the best tier) with nothing offloaded, whatever its networks and offloads
 * (the bound's key being its degrees, DP and TP overlap, ZeRO stage, context parallelism,
 * kernel, FP8 and microbatch); memory needs do not shrink as the microbatch grows; and a refusal
 * said to hold for every microbatch does. */
#include "search_test_util.h"

#include <math.h>

#include "search_bound.h"

static void test_rates_floor(void **state)
{
    (void)state;
    search_rates_t t;
    search_rates_init(&t, 3);
    search_rates_add(&t, 5);
    search_rates_add(&t, 1);
    assert_true(search_rates_floor(&t) == 0); /* two of three: nothing ruled out yet */
    search_rates_add(&t, 3);
    assert_true(search_rates_floor(&t) == 1); /* {5, 3, 1} */
    search_rates_add(&t, 4);
    assert_true(search_rates_floor(&t) == 3); /* {5, 4, 3} */
    search_rates_add(&t, 2);                  /* below the floor: no change */
    search_rates_add(&t, NAN);
    assert_true(search_rates_floor(&t) == 3);
    assert_true(t.rate[0] == 5 && t.rate[1] == 4);
}

static void test_out_of_reach(void **state)
{
    (void)state;
    /* batch 64 at >= 2 s is at most 32/s */
    assert_true(search_out_of_reach(64, 2, 33));
    assert_false(search_out_of_reach(64, 2, 32));               /* a tie may still rank */
    assert_false(search_out_of_reach(64, 2, 32 * (1 + 1e-12))); /* within the margin */
    assert_false(search_out_of_reach(64, 0, 33));               /* no bound */
    assert_false(search_out_of_reach(64, 2, 0));                /* no floor */
}

static void test_ideal_system(void **state)
{
    (void)state;
    search_request_t req;
    test_request("{\"model\":\"llama3-8B\",\"system\":\"h100_sxm\",\"num_procs\":8,"
                 "\"max_batch_size\":8,\"datatype\":\"bfloat16\"}",
                 &req);
    llm_system_t ideal;
    search_ideal_system(&req.system, &ideal);
    /* h100_sxm's tiers: NVLink 450 GB/s at 0.65, 10 us, usage 0.15, all-reduce
     * offset 1; InfiniBand 50 GB/s at 0.9, 20 us, usage 0.02, offset 0. The best
     * of each, and no compute taken: */
    assert_int_equal(ideal.num_networks, 2);
    for (int i = 0; i < ideal.num_networks; i++) {
        const llm_network_t *n = &ideal.networks[i];
        assert_true(n->bandwidth_gbps == 450 && n->efficiency == 0.9);
        assert_true(n->latency_s == 1e-5 && n->processor_usage == 0);
        assert_true(n->ops[LLM_OP_ALL_REDUCE].scalar == 1 && n->ops[LLM_OP_ALL_REDUCE].offset == 0);
        assert_false(n->must_be_filled);
        assert_true(n->size > (int64_t)1 << 40);
    }
    assert_true(ideal.mem1.gib == req.system.mem1.gib && ideal.mem2.gib == req.system.mem2.gib);
    /* the host as it is (6.62 us a launch): a pass lasts max(host, GPU), which the ideal
     * network's faster GPU side never lengthens */
    assert_true(ideal.host_launch_s == 6.62e-6 && ideal.graph_launch_s == 1e-6);
    assert_true(ideal.matrix.rate[LLM_DT_BFLOAT16].tflops ==
                req.system.matrix.rate[LLM_DT_BFLOAT16].tflops);
}

/* The module sets options.recompute_modules "fewest" may give an execution without full
 * recompute, none first (the walk's ladder, each a superset of the one before). */
static const unsigned module_sets[] = {
    0, LLM_RECOMPUTE_MOE_ACT, LLM_RECOMPUTE_MOE_ACT | LLM_RECOMPUTE_MLA_UP_PROJ,
    LLM_RECOMPUTE_MOE_ACT | LLM_RECOMPUTE_MLA_UP_PROJ | LLM_RECOMPUTE_MOE};

static int module_set_count(const search_request_t *req, const llm_execution_t *e)
{
    return req->options.fewest_recompute_modules && e->activation_recompute != LLM_RECOMPUTE_FULL
               ? 4
               : 1;
}

/* Every combination of the fields the bound must cover, for one keyed execution
 * e (with options.recompute_blocks "fewest", full recompute of every block and of
 * one block per chunk, the least the walk may choose; with options.recompute_modules
 * "fewest", every module set of the walk's ladder). Returns the number of
 * executions the model accepted. */
static int check_covered(const search_request_t *req, const llm_system_t *ideal, llm_execution_t *e)
{
    llm_execution_t lower;
    const bool fewest = req->options.fewest_recompute_blocks;
    search_ideal_execution(e, fewest, &lower);
    llm_result_t lo, re;
    if (llm_estimate(&req->model, ideal, &lower, &lo, NULL) != 0)
        return 0;
    int accepted = 0;
    const int nn = req->system.num_networks;
    /* the expert-parallel tier too, for a mixture of experts */
    const int nets = nn * nn * nn * nn * (req->model.moe.num_experts > 0 ? nn : 1);
    const int blocks = fewest && e->activation_recompute == LLM_RECOMPUTE_FULL ? 2 : 1;
    const int mods = module_set_count(req, e);
    for (int bits = 0; bits < 8 * blocks * mods; bits++)
        for (int net = 0; net < nets; net++) {
            e->recompute_blocks = bits / 8 % blocks; /* 0: every block, 1: one per chunk */
            e->recompute_modules = module_sets[bits / 8 / blocks];
            e->weight_offload = bits & 1;
            e->activations_offload = bits & 2;
            e->optimizer_offload = bits & 4;
            e->tensor_par_net = net % nn;
            e->pipeline_par_net = net / nn % nn;
            e->data_par_net = net / nn / nn % nn;
            e->context_par_net = net / nn / nn / nn % nn;
            e->expert_par_net = net / nn / nn / nn / nn % nn;
            if (llm_estimate(&req->model, &req->system, e, &re, NULL) != 0)
                continue;
            accepted++;
            if (!(re.stats.total_time >= lo.stats.total_time)) {
                print_error("hidden %lld: tp %lld pp %lld dp %lld cp %lld mbs %lld "
                            "offload and recompute_blocks bits %d net %d: "
                            "%.17g s below the bound %.17g s\n",
                            (long long)req->model.hidden, (long long)e->tensor_par,
                            (long long)e->pipeline_par, (long long)e->data_par,
                            (long long)e->context_par, (long long)e->microbatch_size, bits, net,
                            re.stats.total_time, lo.stats.total_time);
                fail();
            }
        }
    e->recompute_blocks = 0;
    e->recompute_modules = 0;
    return accepted;
}

/* The memory rule the walk leans on: an execution that estimates but does not
 * fit with microbatch m does not fit with any larger microbatch of the same
 * local batch. */
static int check_memory_grows(const search_request_t *req, llm_execution_t e)
{
    const int64_t local = e.batch_size / e.data_par;
    int checked = 0; /* larger microbatches estimated after one that did not fit */
    const int nn = req->system.num_networks;
    for (int net = 0; net < nn * nn * nn * nn * nn; net++) { /* the first assignment accepted */
        e.tensor_par_net = net % nn;
        e.pipeline_par_net = net / nn % nn;
        e.data_par_net = net / nn / nn % nn;
        e.context_par_net = net / nn / nn / nn % nn;
        e.expert_par_net = net / nn / nn / nn / nn % nn;
        e.microbatch_size = 1;
        llm_result_t r;
        if (llm_estimate(&req->model, &req->system, &e, &r, NULL) == 0)
            break;
    }
    for (int bits = 0; bits < 8; bits++) {
        e.weight_offload = bits & 1;
        e.activations_offload = bits & 2;
        e.optimizer_offload = bits & 4;
        bool did_not_fit = false, refused_for_all = false;
        for (int64_t mbs = 1; mbs <= local; mbs++) {
            if (local % mbs != 0)
                continue;
            e.microbatch_size = mbs;
            llm_result_t r;
            fathom_error_t why;
            if (llm_estimate(&req->model, &req->system, &e, &r, &why) != 0) {
                refused_for_all = refused_for_all || search_refusal_spans_microbatches(why.field);
                continue;
            }
            if (refused_for_all) {
                print_error("tp %lld pp %lld dp %lld: accepted with microbatch %lld after a "
                            "refusal said to hold for every microbatch\n",
                            (long long)e.tensor_par, (long long)e.pipeline_par,
                            (long long)e.data_par, (long long)mbs);
                fail();
            }
            if (did_not_fit && r.fits_memory) {
                print_error("tp %lld pp %lld dp %lld: fits with microbatch %lld, not "
                            "with a smaller "
                            "one\n",
                            (long long)e.tensor_par, (long long)e.pipeline_par,
                            (long long)e.data_par, (long long)mbs);
                fail();
            }
            checked += did_not_fit;
            did_not_fit = did_not_fit || !r.fits_memory;
        }
    }
    return checked;
}

static int memory_checks; /* larger microbatches checked after one that did not fit */

static int check_grid_request(search_request_t req)
{
    llm_system_t ideal;
    search_ideal_system(&req.system, &ideal);
    const int64_t n = req.num_procs;
    int accepted = 0;
    for (int64_t tp = 1; tp <= n; tp *= 2)
        for (int64_t cp = 1; tp * cp <= n; cp *= 2)
            for (int64_t pp = 1; tp * cp * pp <= n && pp <= req.model.num_blocks; pp *= 2)
                for (int key = 0; key < 3 * 4 * 2 * 2 * 2 * 2 * 2; key += TEST_SAMPLE_STRIDE) {
                    llm_execution_t e;
                    memset(&e, 0, sizeof e);
                    e.num_procs = n;
                    e.tensor_par = tp;
                    e.context_par = cp;
                    e.pipeline_par = pp;
                    e.data_par = n / (tp * cp * pp);
                    e.batch_size = req.max_batch_size;
                    e.microbatch_size = key % 2 ? 1 : e.batch_size / e.data_par;
                    e.datatype = req.datatype;
                    e.training = true;
                    e.pipeline_interleaving = 1;
                    e.tensor_par_comm_type = LLM_TP_COMM_RS_AG;
                    e.tensor_par_overlap = (llm_tp_overlap_t)(key / 2 % 3);
                    e.zero_stage = req.model.calculon_block ? key / 6 % 2 : key / 6 % 4;
                    e.optimizer_sharding = e.zero_stage >= 1;
                    e.activation_recompute =
                        key / 24 % 2 ? LLM_RECOMPUTE_FULL : LLM_RECOMPUTE_ATTN_ONLY;
                    e.seq_par_ag_redo = key / 48 % 2;
                    e.fused_activation = true;
                    e.attention_kernel = req.model.calculon_block
                                             ? LLM_ATTN_KERNEL_UNFUSED
                                             : (llm_attn_kernel_t)(key / 96 % 2);
                    e.fp8 = !req.model.calculon_block && key / 192 % 2;
                    e.data_par_overlap = key / 384 % 2;
                    e.expert_par = e.expert_tensor_par = 1;
                    e.moe_load_imbalance = 1;
                    /* expert_par 2 (whose memory grows past the GPU); with flex dispatch the
                     * widest group the fold allows, up to 16, which across two H100 nodes
                     * splits into NVLink domains, where flex differs */
                    const int64_t widest =
                        req.options.moe_dispatcher == LLM_MOE_DISPATCH_FLEX ? 16 : 2;
                    for (int64_t ep = 2; ep <= widest; ep *= 2)
                        if (req.model.moe.num_experts > 0 && req.model.moe.num_experts % ep == 0 &&
                            e.tensor_par * e.data_par % ep == 0)
                            e.expert_par = ep;
                    e.moe_dispatcher = req.options.moe_dispatcher;
                    e.attention_type = LLM_ATTN_MULTIHEAD;
                    if (req.model.calculon_block && cp > 1)
                        continue;
                    accepted += check_covered(&req, &ideal, &e);
                    /* the walk's memory rule holds for each module set it may take */
                    for (int i = 0; i < module_set_count(&req, &e); i++) {
                        e.recompute_modules = module_sets[i];
                        memory_checks += check_memory_grows(&req, e);
                    }
                    e.recompute_modules = 0;
                }
    return accepted;
}

static int check_grid(const char *request_json)
{
    search_request_t req;
    test_request(request_json, &req);
    return check_grid_request(req);
}

static void test_bound_holds(void **state)
{
    (void)state;
    /* a modern block with embeddings (4 blocks, so offloading is allowed from 1
     * stage) */
    assert_true(check_grid("{\"model\":{\"hidden\":4096,\"feedforward\":14336,\"seq_size\":4096,"
                           "\"attn_heads\":32,\"kv_heads\":8,\"num_blocks\":8,"
                           "\"vocab_size\":128256,\"gated_mlp\":true,\"norm\":\"rmsnorm\","
                           "\"position_embedding\":\"rope\",\"tied_embeddings\":false},"
                           "\"system\":\"h100_sxm\",\"num_procs\":16,\"max_batch_size\":32,"
                           "\"datatype\":\"bfloat16\"}") > 1000 / TEST_SAMPLE_STRIDE);
    /* the same with full recompute of the fewest blocks (the bound reruns one per chunk) */
    assert_true(check_grid("{\"model\":{\"hidden\":4096,\"feedforward\":14336,\"seq_size\":4096,"
                           "\"attn_heads\":32,\"kv_heads\":8,\"num_blocks\":8,"
                           "\"vocab_size\":128256,\"gated_mlp\":true,\"norm\":\"rmsnorm\","
                           "\"position_embedding\":\"rope\",\"tied_embeddings\":false},"
                           "\"system\":\"h100_sxm\",\"num_procs\":16,\"max_batch_size\":32,"
                           "\"datatype\":\"bfloat16\",\"options\":{\"recompute_blocks\":\"fewest\"}}") > 1000 / TEST_SAMPLE_STRIDE);
    /* a small mixture of experts with multi-latent attention, its modules recomputed where an
     * execution does not fit */
    assert_true(check_grid("{\"model\":{\"hidden\":1024,\"seq_size\":2048,\"attn_heads\":16,"
                           "\"num_blocks\":8,\"vocab_size\":32000,\"gated_mlp\":true,"
                           "\"norm\":\"rmsnorm\",\"position_embedding\":\"rope\","
                           "\"tied_embeddings\":false,\"feedforward\":4096,\"moe\":{\"num_experts\":8,"
                           "\"top_k\":2,\"expert_feedforward\":1024},\"mla\":{\"q_lora_rank\":256,"
                           "\"kv_lora_rank\":128,\"qk_nope_head_dim\":64,\"qk_rope_head_dim\":32,"
                           "\"v_head_dim\":64}},\"system\":\"h100_sxm\",\"num_procs\":16,"
                           "\"max_batch_size\":32,\"datatype\":\"bfloat16\","
                           "\"options\":{\"recompute_modules\":\"fewest\"}}") > 1000 / TEST_SAMPLE_STRIDE);
    /* a small mixture of experts */
    assert_true(check_grid("{\"model\":{\"hidden\":1024,\"seq_size\":2048,\"attn_heads\":16,"
                           "\"kv_heads\":4,\"num_blocks\":8,\"vocab_size\":32000,"
                           "\"gated_mlp\":true,\"norm\":\"rmsnorm\",\"position_embedding\":"
                           "\"rope\",\"tied_embeddings\":false,\"moe\":{\"num_experts\":8,"
                           "\"top_k\":2,\"expert_feedforward\":1024}},\"system\":\"h100_sxm\","
                           "\"num_procs\":16,\"max_batch_size\":32,\"datatype\":\"bfloat16\"}") >
                1000 / TEST_SAMPLE_STRIDE);
    /* 16 experts, 4 per token, with the flex dispatcher: expert groups of 16 span two nodes,
     * here joined by a tier as fast as NVLink, where flex sends less than the ideal tier's
     * plain all-to-all (a bound costing flex as that would not hold) */
    search_request_t flex;
    test_request("{\"model\":{\"hidden\":1024,\"seq_size\":2048,\"attn_heads\":16,"
                           "\"kv_heads\":4,\"num_blocks\":8,\"vocab_size\":32000,"
                           "\"gated_mlp\":true,\"norm\":\"rmsnorm\",\"position_embedding\":"
                           "\"rope\",\"tied_embeddings\":false,\"moe\":{\"num_experts\":16,"
                           "\"top_k\":4,\"expert_feedforward\":512}},\"system\":\"h100_sxm\","
                           "\"num_procs\":16,\"max_batch_size\":32,\"datatype\":\"bfloat16\","
                           "\"options\":{\"moe_dispatcher\":\"flex\"}}", &flex);
    flex.system.networks[1].bandwidth_gbps = flex.system.networks[0].bandwidth_gbps;
    flex.system.networks[1].efficiency = flex.system.networks[0].efficiency;
    assert_true(check_grid_request(flex) > 1000 / TEST_SAMPLE_STRIDE);
    /* Calculon's block on Calculon's A100 (two network tiers) */
    assert_true(check_grid("{\"model\":\"gpt3-13B\",\"system\":\"a100_80g\",\"num_procs\":16,"
                           "\"max_batch_size\":32,\"datatype\":\"float16\"}") > 1000 / TEST_SAMPLE_STRIDE);
    assert_true(memory_checks > 0); /* the grids reach microbatches that do not fit */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rates_floor),
        cmocka_unit_test(test_out_of_reach),
        cmocka_unit_test(test_ideal_system),
        cmocka_unit_test(test_bound_holds),
    };
    return cmocka_run_group_tests(tests, test_load_presets, test_free_presets);
}

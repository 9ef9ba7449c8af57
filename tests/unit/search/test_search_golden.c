/* test_search_golden.c — the search against Calculon's own output (tests/data/search/, copied
 * from ../shared/golden/search/): turing-530B on 5128 a100_80g, max batch 2520, float16, with
 * -m (top 1) and exhaustive with -t 5. Same executions in the same order (the top 4 of the
 * exhaustive search tie on sample rate: their order is Calculon's enumeration order), all 96
 * statistics within 1e-9 relative, same total/good/bad counts. Then: the result does not
 * depend on the thread count, and pruning (SEARCH_EVALUATE) gives exactly what estimating every
 * execution (SEARCH_EVALUATE_ALL) gives. */
#include <math.h>

#include "llm_codec.h"
#include "search_test_util.h"

#define TURING_REQUEST(options)                                                              \
    "{\"model\":\"turing-530B\",\"system\":\"a100_80g\",\"num_procs\":5128,"               \
    "\"max_batch_size\":2520,\"datatype\":\"float16\",\"options\":" options "}"

static void compare_entry(const search_entry_t *got, const json_t *want, size_t rank)
{
    json_t *exe = codec_llm_execution_encode(&got->execution);
    const json_t *want_exe = json_object_get(want, "execution");
    assert_non_null(exe);
    assert_non_null(want_exe);
    /* Calculon's 23 fields must match; Fathom's own are at their Calculon defaults. */
    json_t *kernel = json_object_get(exe, "attention_kernel"), *fp8 = json_object_get(exe, "fp8");
    assert_string_equal(json_string_value(kernel), "unfused");
    assert_true(json_is_false(fp8));
    assert_int_equal(json_integer_value(json_object_get(exe, "context_par")), 1);
    assert_int_equal(json_integer_value(json_object_get(exe, "zero_stage")),
                     json_is_true(json_object_get(want_exe, "optimizer_sharding")) ? 1 : 0);
    assert_int_equal(json_integer_value(json_object_get(exe, "shard_group")),
                     json_integer_value(json_object_get(want_exe, "data_par")));
    static const char *const fathoms[] = {"attention_kernel", "fp8",        "context_par",
                                          "context_par_net",  "zero_stage", "shard_group"};
    for (size_t i = 0; i < sizeof fathoms / sizeof fathoms[0]; i++)
        json_object_del(exe, fathoms[i]);
    if (!json_equal(exe, want_exe)) {
        char *a = json_dumps(exe, JSON_SORT_KEYS);
        char *b = json_dumps(want_exe, JSON_SORT_KEYS);
        print_error("rank %zu execution differs:\n got  %s\n want %s\n", rank, a, b);
        free(a);
        free(b);
        json_decref(exe);
        fail();
    }
    json_decref(exe);

    const json_t *want_stats = json_object_get(want, "stats");
    assert_int_equal(json_object_size(want_stats), LLM_STAT__COUNT);
    int bad = 0;
    for (int i = 0; i < LLM_STAT__COUNT; i++) {
        const char *name = llm_stat_name((llm_stat_t)i);
        const json_t *w = json_object_get(want_stats, name);
        if (!json_is_number(w)) {
            print_error("rank %zu: golden stat %s missing\n", rank, name);
            bad++;
            continue;
        }
        double ref = json_number_value(w);
        double val = llm_stat_value(&got->result.stats, (llm_stat_t)i);
        double dev = ref == 0 ? fabs(val) : fabs(val - ref) / fabs(ref);
        if (!(dev <= 1e-9)) {
            print_error("rank %zu: %s = %.17g, Calculon %.17g (deviation %.3g)\n", rank, name,
                        val, ref, dev);
            bad++;
        }
    }
    assert_int_equal(bad, 0);
}

static void check_golden(const char *request, const char *golden_file,
                         unsigned long long total, unsigned long long good,
                         unsigned long long bad)
{
    search_request_t req;
    search_result_t res;
    test_request(request, &req);
    test_run(&req, 2, &res);

    json_error_t jerr;
    json_t *golden = json_load_file(golden_file, 0, &jerr);
    if (!golden) {
        print_error("cannot read %s: %s\n", golden_file, jerr.text);
        fail();
    }
    if (res.total != total || res.good != good || res.bad != bad) {
        print_error("counts total/good/bad %llu/%llu/%llu, Calculon %llu/%llu/%llu\n",
                    (unsigned long long)res.total, (unsigned long long)res.good,
                    (unsigned long long)res.bad, total, good, bad);
        fail();
    }
    assert_int_equal(res.n_best, json_object_size(golden));
    for (int i = 0; i < res.n_best; i++) {
        char key[16];
        snprintf(key, sizeof key, "%d", i);
        compare_entry(&res.best[i], json_object_get(golden, key), (size_t)i);
    }
    json_decref(golden);
    search_result_close(&res);
}

static void test_turing_mbs_break(void **state)
{
    (void)state;
    check_golden(TURING_REQUEST("{\"mbs_break\":true}"),
                 "tests/data/search/turing-530B_5128_a100_80g_m.json", 8112, 1080, 7032);
}

static void test_turing_exhaustive_top5(void **state)
{
    (void)state;
    check_golden(TURING_REQUEST("{\"top_n\":5}"),
                 "tests/data/search/turing-530B_5128_a100_80g_full_t5.json", 10944, 1080, 9864);
}

/* The sample of good executions of a result, sorted by position, is the same in both. */
static void assert_same_points(search_result_t *a, search_result_t *b, const char *what)
{
    search_points_sort(a->points, a->n_points);
    search_points_sort(b->points, b->n_points);
    if (a->n_points != b->n_points) {
        print_error("%s: %d vs %d sample points\n", what, a->n_points, b->n_points);
        fail();
    }
    for (int i = 0; i < a->n_points; i++)
        if (memcmp(&a->points[i], &b->points[i], sizeof a->points[i]) != 0) {
            print_error("%s: sample point %d differs\n", what, i);
            fail();
        }
}

/* Two results are the same: counts, every ranked entry bit for bit, and the sample. */
static void assert_same_result(search_result_t *a, search_result_t *b, const char *what)
{
    if (a->total != b->total || a->good != b->good || a->bad != b->bad ||
        a->pruned != b->pruned || a->n_best != b->n_best) {
        print_error("%s: total/good/bad/n %llu/%llu/%llu/%d vs %llu/%llu/%llu/%d\n", what,
                    (unsigned long long)a->total, (unsigned long long)a->good,
                    (unsigned long long)a->bad, a->n_best, (unsigned long long)b->total,
                    (unsigned long long)b->good, (unsigned long long)b->bad, b->n_best);
        fail();
    }
    for (int i = 0; i < a->n_best; i++) {
        const search_entry_t *x = &a->best[i], *y = &b->best[i];
        /* (unit, index) is the enumeration position: it determines the execution. */
        if (x->unit != y->unit || x->index != y->index ||
            memcmp(&x->result.stats, &y->result.stats, sizeof x->result.stats) != 0) {
            print_error("%s: rank %d differs: unit %u index %u rate %.17g vs unit %u index %u "
                        "rate %.17g\n", what, i, x->unit, x->index,
                        x->result.stats.sample_rate, y->unit, y->index,
                        y->result.stats.sample_rate);
            fail();
        }
    }
    assert_same_points(a, b, what);
}

/* A small search with every loop in play (fused both ways, TP/DP overlap, offloads, two
 * networks), many ties, and both good and bad executions (a 6-block 16384-wide model on 4
 * a100_80g: memory does not always fit, offloading is refused below 3 blocks per processor). */
#define SMALL_REQUEST                                                                          \
    "{\"model\":{\"hidden\":16384,\"seq_size\":2048,\"attn_heads\":128,\"num_blocks\":6},"  \
    "\"system\":\"a100_80g\",\"num_procs\":4,\"max_batch_size\":4,\"datatype\":\"float16\","  \
    "\"options\":{\"top_n\":40,\"fused_activation\":\"all\"}}"

/* The same with Fathom's dimensions freed on a modern block: grouped-query attention, gated MLP,
 * embeddings and output layer, both attention kernels and FP8 on and off (h100_sxm has float8).
 * About 7.3 billion parameters: on one GPU of 8 they do not fit, split eight ways they do. */
#define MODERN_REQUEST MODERN_REQUEST_TOP("40")
#define MODERN_TOP1_REQUEST MODERN_REQUEST_TOP("1")
#define MODERN_REQUEST_TOP(n)                                                                  \
    "{\"model\":{\"hidden\":8192,\"feedforward\":28672,\"seq_size\":4096,\"attn_heads\":64,"\
    "\"kv_heads\":8,\"num_blocks\":6,\"vocab_size\":128256,\"gated_mlp\":true,"              \
    "\"norm\":\"rmsnorm\",\"position_embedding\":\"rope\",\"tied_embeddings\":false},"       \
    "\"system\":\"h100_sxm\",\"num_procs\":8,\"max_batch_size\":8,\"datatype\":\"bfloat16\"," \
    "\"options\":{\"top_n\":" n ",\"attention_kernel\":\"all\",\"fp8\":\"all\"}}"

/* Every Fathom dimension free on 4 GPUs: context parallelism, all ZeRO stages, both kernels,
 * FP8, uneven pipeline splits (5 blocks). */
#define ALL_FREE_REQUEST ALL_FREE_REQUEST_TOP("40")
#define ALL_FREE_TOP1_REQUEST ALL_FREE_REQUEST_TOP("1")
#define ALL_FREE_REQUEST_TOP(n)                                                                \
    "{\"model\":{\"hidden\":8192,\"feedforward\":28672,\"seq_size\":4096,\"attn_heads\":64,"\
    "\"kv_heads\":8,\"num_blocks\":5,\"vocab_size\":128256,\"gated_mlp\":true,"              \
    "\"norm\":\"rmsnorm\",\"position_embedding\":\"rope\",\"tied_embeddings\":false},"       \
    "\"system\":\"h100_sxm\",\"num_procs\":4,\"max_batch_size\":4,\"datatype\":\"bfloat16\"," \
    "\"options\":{\"top_n\":" n ",\"attention_kernel\":\"all\",\"fp8\":\"all\","             \
    "\"context_par\":\"all\",\"zero_stage\":\"all\"}}"

/* A small mixture of experts: 8 experts of 1024, 2 per token, on 8 H100s. The search adds the
 * expert layouts (expert_par dividing 8, expert_tensor_par dividing 1024, their product dividing
 * tp·dp): on a unit with tp·dp = 8 that is (1,1) (1,2) (1,4) (1,8) (2,1) (2,2) (2,4) (4,1) (4,2)
 * (8,1), ten of them. */
#define MOE_REQUEST                                                                            \
    "{\"model\":{\"hidden\":1024,\"seq_size\":2048,\"attn_heads\":16,\"kv_heads\":4,"      \
    "\"num_blocks\":4,\"vocab_size\":32000,\"gated_mlp\":true,\"norm\":\"rmsnorm\","        \
    "\"position_embedding\":\"rope\",\"tied_embeddings\":false,"                              \
    "\"moe\":{\"num_experts\":8,\"top_k\":2,\"expert_feedforward\":1024}},"                  \
    "\"system\":\"h100_sxm\",\"num_procs\":8,\"max_batch_size\":8,\"datatype\":\"bfloat16\"," \
    "\"options\":{\"top_n\":40,\"attention_kernel\":\"fused\"}}"

/* 16 experts, 4 per token, on two nodes of 8 H100s with the flex dispatcher: expert groups of 16
 * split into two NVLink domains, where the bound takes dispatch as free. */
#define MOE_FLEX_REQUEST                                                                       \
    "{\"model\":{\"hidden\":1024,\"seq_size\":2048,\"attn_heads\":16,\"kv_heads\":4,"      \
    "\"num_blocks\":4,\"vocab_size\":32000,\"gated_mlp\":true,\"norm\":\"rmsnorm\","        \
    "\"position_embedding\":\"rope\",\"tied_embeddings\":false,"                              \
    "\"moe\":{\"num_experts\":16,\"top_k\":4,\"expert_feedforward\":512}},"                  \
    "\"system\":\"h100_sxm\",\"num_procs\":16,\"max_batch_size\":16,\"datatype\":\"bfloat16\"," \
    "\"options\":{\"top_n\":40,\"attention_kernel\":\"fused\",\"moe_dispatcher\":\"flex\"}}"

/* A 32-block, 8192-wide model at sequence 8192 on 8 H100s, no offload: layouts that do not fit
 * without recompute fit with full recompute of a few blocks per chunk, and some of those rank. */
#define FEWEST_REQUEST                                                                         \
    "{\"model\":{\"hidden\":8192,\"feedforward\":28672,\"seq_size\":8192,\"attn_heads\":64,"\
    "\"kv_heads\":8,\"num_blocks\":32,\"vocab_size\":128256,\"gated_mlp\":true,"             \
    "\"norm\":\"rmsnorm\",\"position_embedding\":\"rope\",\"tied_embeddings\":false},"      \
    "\"system\":\"h100_sxm\",\"num_procs\":8,\"max_batch_size\":16,\"datatype\":\"bfloat16\","\
    "\"options\":{\"top_n\":40,\"attention_kernel\":\"fused\",\"no_offload\":true,"          \
    "\"fp8\":false,\"recompute_blocks\":\"fewest\"}}"

/* A 16-block MoE with multi-latent attention at sequence 16384 on 8 H100s, no offload, no tensor
 * parallelism: the fastest layouts fit only with selective recompute of its modules (with TP 2
 * one fits without any, an MoE block's MLP keeping no TP collective). */
#define MODULES_REQUEST                                                                        \
    "{\"model\":{\"hidden\":4096,\"feedforward\":8192,\"seq_size\":16384,\"attn_heads\":32,"  \
    "\"num_blocks\":16,\"vocab_size\":32000,\"gated_mlp\":true,\"norm\":\"rmsnorm\","         \
    "\"position_embedding\":\"rope\",\"tied_embeddings\":false,"                              \
    "\"moe\":{\"num_experts\":64,\"top_k\":8,\"expert_feedforward\":1536},"                  \
    "\"mla\":{\"q_lora_rank\":512,\"kv_lora_rank\":256,\"qk_nope_head_dim\":128,"             \
    "\"qk_rope_head_dim\":64,\"v_head_dim\":128}},"                                           \
    "\"system\":\"h100_sxm\",\"num_procs\":8,\"max_batch_size\":16,\"datatype\":\"bfloat16\","\
    "\"options\":{\"top_n\":40,\"attention_kernel\":\"fused\",\"no_offload\":true,"          \
    "\"fp8\":false,\"max_tensor_par\":1,\"recompute_modules\":\"fewest\"}}"

static void test_thread_count_independence(void **state)
{
    (void)state;
    /* the modern ones are bound-pruned: what they skip must not depend on threads either */
    const char *requests[] = {TURING_REQUEST("{\"top_n\":20}"),
                              TURING_REQUEST("{\"top_n\":3,\"mbs_break\":true}"), SMALL_REQUEST,
                              MODERN_REQUEST, ALL_FREE_REQUEST, MOE_REQUEST, MOE_FLEX_REQUEST,
                              FEWEST_REQUEST, MODULES_REQUEST};
    for (size_t k = 0; k < sizeof requests / sizeof requests[0]; k += TEST_SAMPLE_STRIDE) {
        search_request_t req;
        search_result_t one, two, three;
        test_request(requests[k], &req);
        test_run(&req, 1, &one);
        test_run(&req, 2, &two);
        test_run(&req, 3, &three);
        assert_true(one.n_best > 0);
        assert_same_result(&one, &two, "1 vs 2 threads");
        assert_same_result(&one, &three, "1 vs 3 threads");
        search_result_close(&one);
        search_result_close(&two);
        search_result_close(&three);
    }
}

static void test_pruned_equals_unpruned(void **state)
{
    (void)state;
    const char *requests[] = {TURING_REQUEST("{\"top_n\":100}"),
                              TURING_REQUEST("{\"top_n\":10,\"mbs_break\":true}"),
                              SMALL_REQUEST, MODERN_REQUEST, ALL_FREE_REQUEST,
                              MOE_REQUEST, MOE_FLEX_REQUEST, MODERN_TOP1_REQUEST,
                              ALL_FREE_TOP1_REQUEST, FEWEST_REQUEST, MODULES_REQUEST};
    for (size_t k = 0; k < sizeof requests / sizeof requests[0]; k += TEST_SAMPLE_STRIDE) {
        search_request_t req;
        search_result_t pruned, full;
        test_request(requests[k], &req);
        req.mode = SEARCH_EVALUATE;
        test_run(&req, 2, &pruned);
        req.mode = SEARCH_EVALUATE_ALL;
        test_run(&req, 2, &full);
        /* The unpruned search estimates everything; pruning must have skipped something, or
         * this test compares nothing. */
        assert_int_equal(full.estimated, full.total);
        assert_int_equal(full.pruned, 0);
        assert_true(pruned.estimated < full.estimated);
        if (req.model.calculon_block) {
            /* Calculon's block: only known-bad executions are skipped, counts stay Calculon's */
            assert_int_equal(pruned.pruned, 0);
            assert_same_result(&pruned, &full, "pruned vs unpruned");
        } else {
            /* bound pruning: the best list and the sample are exact; what it skipped is
             * counted apart, taken from good and bad alike */
            assert_true(pruned.pruned > 0);
            assert_int_equal(pruned.good + pruned.bad + pruned.pruned, full.total);
            assert_true(pruned.good <= full.good && pruned.bad <= full.bad);
            pruned.good = full.good;
            pruned.bad = full.bad;
            pruned.pruned = 0;
            assert_same_result(&pruned, &full, "bound-pruned vs unpruned");
        }
        /* The real search tries exactly what the count-only walk counts (without mbs_break). */
        if (!req.options.mbs_break) {
            search_result_t counted;
            req.mode = SEARCH_COUNT_ONLY;
            test_run(&req, 2, &counted);
            assert_int_equal(counted.total, full.total);
            search_result_close(&counted);
        }
        search_result_close(&pruned);
        search_result_close(&full);
    }
}

/* A best-list entry estimated alone fits and gives the rate the search ranked it at. */
static void assert_entry_reestimates(const search_request_t *req, const search_entry_t *entry)
{
    llm_result_t r;
    assert_int_equal(llm_estimate(&req->model, &req->system, &entry->execution, &r, NULL), 0);
    assert_true(r.fits_memory);
    assert_true(r.stats.sample_rate == entry->result.stats.sample_rate);
}

/* Whether execution e fits (it must be estimable). */
static bool fits(const search_request_t *req, const llm_execution_t *e)
{
    llm_result_t r;
    assert_int_equal(llm_estimate(&req->model, &req->system, e, &r, NULL), 0);
    return r.fits_memory;
}

/* options.recompute_blocks "fewest": a full-recompute entry of the best list reruns the fewest
 * blocks of each chunk that fit — its estimate alone gives its rate and fits, one block fewer
 * does not fit, and it beats recomputing every block — and the search is at least as fast as
 * without the option, over the same space with the same verdicts. */
static void test_fewest_recompute_blocks(void **state)
{
    (void)state;
    search_request_t req;
    search_result_t fewest, every;
    test_request(FEWEST_REQUEST, &req);
    test_run(&req, 2, &fewest);
    req.options.fewest_recompute_blocks = false;
    test_run(&req, 2, &every);
    int some = 0;
    for (int i = 0; i < fewest.n_best; i++) {
        llm_execution_t e = fewest.best[i].execution;
        if (e.recompute_blocks == 0)
            continue;
        some++;
        assert_int_equal(e.activation_recompute, LLM_RECOMPUTE_FULL);
        assert_entry_reestimates(&req, &fewest.best[i]);
        const double rate = fewest.best[i].result.stats.sample_rate;
        llm_result_t r;
        if (e.recompute_blocks > 1) {
            e.recompute_blocks--;
            assert_false(fits(&req, &e));
        }
        e.recompute_blocks = 0;
        assert_int_equal(llm_estimate(&req.model, &req.system, &e, &r, NULL), 0);
        assert_true(r.fits_memory && r.stats.sample_rate < rate);
    }
    assert_true(some > 0);
    assert_int_equal(fewest.total, every.total);
    assert_int_equal(fewest.good + fewest.pruned + fewest.bad, every.good + every.pruned + every.bad);
    assert_true(fewest.best[0].result.stats.sample_rate >= every.best[0].result.stats.sample_rate);
    assert_true(fewest.best[fewest.n_best - 1].result.stats.sample_rate >
                every.best[every.n_best - 1].result.stats.sample_rate);
    search_result_close(&fewest);
    search_result_close(&every);
}

/* The module sets options.recompute_modules "fewest" tries, in order, on an MLA MoE model. */
#define LN LLM_RECOMPUTE_LAYERNORM
static const unsigned module_ladder[] = {
    LN, LN | LLM_RECOMPUTE_MOE_ACT, LN | LLM_RECOMPUTE_MOE_ACT | LLM_RECOMPUTE_MLA_UP_PROJ,
    LN | LLM_RECOMPUTE_MOE_ACT | LLM_RECOMPUTE_MLA_UP_PROJ | LLM_RECOMPUTE_MOE};
#undef LN

/* options.recompute_modules "fewest": an entry with selective recompute gets its rate from its
 * own estimate and fits, while without modules, or with the set before it on the ladder, it does
 * not fit; the space is the same as without the option, and the best is at least as fast. */
static void test_fewest_recompute_modules(void **state)
{
    (void)state;
    search_request_t req;
    search_result_t fewest, never;
    test_request(MODULES_REQUEST, &req);
    test_run(&req, 2, &fewest);
    req.options.fewest_recompute_modules = false;
    test_run(&req, 2, &never);
    int some = 0;
    for (int i = 0; i < fewest.n_best; i++) {
        llm_execution_t e = fewest.best[i].execution;
        if (e.recompute_modules == 0)
            continue;
        some++;
        assert_int_not_equal(e.activation_recompute, LLM_RECOMPUTE_FULL);
        assert_entry_reestimates(&req, &fewest.best[i]);
        int rung = 0;
        while (module_ladder[rung] != e.recompute_modules)
            assert_true(++rung < (int)(sizeof module_ladder / sizeof module_ladder[0]));
        e.recompute_modules = rung > 0 ? module_ladder[rung - 1] : 0;
        assert_false(fits(&req, &e));
    }
    assert_true(some > 0);
    assert_int_equal(fewest.total, never.total);
    assert_true(fewest.best[0].result.stats.sample_rate > never.best[0].result.stats.sample_rate);
    search_result_close(&fewest);
    search_result_close(&never);
}

/* Freeing a dimension multiplies the space by its values, and the best of a free search is at
 * least as fast as the best with the dimension fixed either way. */
static void test_free_dimensions(void **state)
{
    (void)state;
    search_request_t req;
    search_result_t all, fixed;
    test_request(MODERN_REQUEST, &req);
    test_run(&req, 2, &all);
    for (int k = 0; k < 2; k++)
        for (int f = 0; f < 2; f++) {
            req.options.attention_kernel = k ? SEARCH_PICK_ON : SEARCH_PICK_OFF;
            req.options.fp8 = f ? SEARCH_PICK_ON : SEARCH_PICK_OFF;
            test_run(&req, 2, &fixed);
            assert_int_equal(fixed.total * 4, all.total);
            assert_true(fixed.n_best > 0);
            assert_true(all.best[0].result.stats.sample_rate >=
                        fixed.best[0].result.stats.sample_rate);
            assert_int_equal(fixed.best[0].execution.attention_kernel,
                             k ? LLM_ATTN_KERNEL_FUSED : LLM_ATTN_KERNEL_UNFUSED);
            assert_int_equal(fixed.best[0].execution.fp8, f);
            search_result_close(&fixed);
        }
    /* every value of the freed dimensions appears in the space: ZeRO-3 and context
     * parallelism among the layouts that fit */
    search_result_t free_all;
    test_request(ALL_FREE_REQUEST, &req);
    test_run(&req, 2, &free_all);
    bool zero3 = false, cp2 = false, uneven = false;
    for (int i = 0; i < free_all.n_best; i++) {
        zero3 |= free_all.best[i].execution.zero_stage == 3;
        cp2 |= free_all.best[i].execution.context_par >= 2;
        uneven |= 5 % free_all.best[i].execution.pipeline_par != 0;
    }
    print_message("all free: %llu executions, %llu good; best %.4f samples/s\n",
                  (unsigned long long)free_all.total, (unsigned long long)free_all.good,
                  free_all.best[0].result.stats.sample_rate);
    assert_true(free_all.good > 0);
    assert_true(zero3 || cp2 || uneven);
    search_result_close(&free_all);
    /* on an H100 the fastest layout uses fused attention and FP8 */
    assert_int_equal(all.best[0].execution.attention_kernel, LLM_ATTN_KERNEL_FUSED);
    assert_true(all.best[0].execution.fp8);
    search_result_close(&all);
}

/* Every ranked MoE execution has an expert layout that divides what it must, and the space is
 * ten times the dense one on the units with tp·dp = 8 (every unit here: pp 1 … with 4 blocks,
 * tp·dp = 8/pp; counted against the same model without experts). */
static void test_expert_layouts(void **state)
{
    (void)state;
    search_request_t req;
    search_result_t moe, dense;
    test_request(MOE_REQUEST, &req);
    test_run(&req, 2, &moe);
    assert_true(moe.n_best > 0);
    bool some_ep = false;
    for (int i = 0; i < moe.n_best; i++) {
        const llm_execution_t *e = &moe.best[i].execution;
        assert_int_equal(8 % e->expert_par, 0);
        assert_int_equal(1024 % e->expert_tensor_par, 0);
        assert_int_equal((e->tensor_par * e->data_par) % (e->expert_par * e->expert_tensor_par), 0);
        some_ep |= e->expert_par > 1;
    }
    assert_true(some_ep);
    /* count: per unit, (pairs with ep | 8, etp | min(1024, f), ep·etp | f) for f = tp·dp */
    req.mode = SEARCH_COUNT_ONLY;
    search_result_t counted;
    test_run(&req, 1, &counted);
    req.model.moe.num_experts = 0;
    test_run(&req, 1, &dense);
    /* f = 8: 10 pairs, f = 4: (1,1) (1,2) (1,4) (2,1) (2,2) (4,1) = 6, f = 2: 3, f = 1: 1 */
    assert_true(counted.total > dense.total);
    assert_true(counted.total <= 10 * dense.total);
    search_result_close(&counted);
    search_result_close(&dense);
    search_result_close(&moe);
}

static void test_cancel(void **state)
{
    (void)state;
    search_request_t req;
    search_result_t res;
    fathom_error_t err;
    test_request(TURING_REQUEST("{}"), &req);
    assert_int_equal(search_result_init(&res, 1, &err), 0);
    volatile int cancel = 1;
    fathom_error_clear(&err);
    assert_int_equal(codec_search_run_request(&req, 2, &cancel, NULL, NULL, &res, &err), -1);
    assert_int_equal(err.code, FATHOM_E_CANCELLED);
    search_result_close(&res);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_turing_mbs_break),
        cmocka_unit_test(test_turing_exhaustive_top5),
        cmocka_unit_test(test_thread_count_independence),
        cmocka_unit_test(test_pruned_equals_unpruned),
        cmocka_unit_test(test_free_dimensions),
        cmocka_unit_test(test_fewest_recompute_blocks),
        cmocka_unit_test(test_fewest_recompute_modules),
        cmocka_unit_test(test_expert_layouts),
        cmocka_unit_test(test_cancel),
    };
    return cmocka_run_group_tests(tests, test_load_presets, test_free_presets);
}

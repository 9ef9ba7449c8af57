/* fuzz_sweep.c — libFuzzer target for sweep specs (codec_sweep_normalize): optimal-execution
 * searches and grids. The normalized spec's config hash is the sweep's id, so normalizing it
 * again must give the same text. Searches small enough to be cheap are also run, twice: with
 * the pruning walk (SEARCH_EVALUATE) and estimating everything (SEARCH_EVALUATE_ALL), which
 * search.h promises give the same result; any model and system the fuzzer invents tests that
 * promise. The rest are only planned. Limits are small so that planning stays cheap. */
#include <stdlib.h>
#include <string.h>

#include "canonical.h"
#include "fuzz_common.h"
#include "search.h"
#include "search_codec.h"
#include "search_sweep_codec.h"

/* Small on purpose: the point is the decoder and the planner, not a long search. */
static const sweep_limits_t limits = {.max_grid_points = 64, .max_search_executions = 100000};
#define RUN_MAX_EXECUTIONS 512

/* The result document of a whole search of req in `mode`, as canonical text (malloc'd). */
static char *run_search(const search_request_t *req, search_mode_t mode)
{
    search_request_t r = *req;
    r.mode = mode;
    fathom_error_t err;
    fathom_error_clear(&err);
    search_result_t res;
    if (search_result_init(&res, r.options.top_n, &err))
        fuzz_fail("search_result_init: %s", err.message);
    search_plan_t *plan = search_plan_create(&r, &err);
    if (!plan)
        fuzz_fail("a normalized search cannot be planned: %s: %s", err.field, err.message);
    if (search_run_all(plan, &res, NULL) != 0)
        fuzz_fail("search_run_all stopped without a cancel");
    json_t *doc = codec_search_result_encode(&r, &res);
    char *text = doc ? codec_canonical_dump(doc) : NULL;
    if (!text)
        fuzz_fail("cannot encode a search result");
    json_decref(doc);
    search_plan_free(plan);
    search_result_close(&res);
    return text;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_init();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *body = fuzz_parse(data, size);
    if (!body)
        return 0;
    fathom_error_t err;
    fathom_error_clear(&err);
    const sweep_kind_t *kind = NULL, *kind2 = NULL;
    uint64_t n = 0, n2 = 0;
    json_t *norm = codec_sweep_normalize(body, fuzz_ctx(), &limits, &kind, &n, &err);
    if (!norm) {
        fuzz_check_refusal("sweep", &err);
        fuzz_check_names_field("sweep", body, &err);
        json_decref(body);
        return 0;
    }
    json_decref(body);
    json_t *again = codec_sweep_normalize(norm, fuzz_ctx(), &limits, &kind2, &n2, &err);
    if (!again)
        fuzz_fail("sweep refuses its normalized spec: %s: %s", err.field, err.message);
    char *a = codec_canonical_dump(norm), *b = codec_canonical_dump(again);
    if (!a || !b || strcmp(a, b) != 0 || kind != kind2 || n != n2)
        fuzz_fail("sweep normalization is not idempotent:\n%s\n%s", a ? a : "", b ? b : "");
    free(a);
    free(b);
    json_decref(again);
    if (kind == &codec_grid_kind && codec_grid_size(norm) != n)
        fuzz_fail("grid size %llu, normalize said %llu", (unsigned long long)codec_grid_size(norm),
                  (unsigned long long)n);
#ifdef FATHOM_HAVE_SERVING
    if (kind == &codec_serving_plan_kind && n > 0) {
        /* a serving plan: its first, middle and last units (layouts) run */
        fathom_error_t e2;
        sweep_run_t *run = kind->open(norm, fuzz_ctx(), &e2);
        if (!run)
            fuzz_fail("a normalized serving plan does not open: %s: %s", e2.field, e2.message);
        const size_t units = kind->units(run), pick[3] = {0, units / 2, units - 1};
        for (int i = 0; i < 3 && units; i++) {
            sweep_unit_t u = {0};
            if (kind->run_unit(run, fuzz_ctx(), pick[i], NULL, &u, &e2))
                fuzz_fail("a serving plan unit failed: %s", e2.message);
            sweep_points_free(u.points, u.npoints);
        }
        kind->close(run);
    }
#endif
    if (kind == &codec_search_kind && n <= RUN_MAX_EXECUTIONS) {
        search_request_t req;
        if (codec_search_decode(norm, fuzz_ctx(), &req, &err))
            fuzz_fail("a normalized search does not decode: %s: %s", err.field, err.message);
        char *pruned = run_search(&req, SEARCH_EVALUATE);
        char *all = run_search(&req, SEARCH_EVALUATE_ALL);
        if (strcmp(pruned, all) != 0)
            fuzz_fail("pruned and full searches differ:\n%s\n%s", pruned, all);
        free(pruned);
        free(all);
    }
    json_decref(norm);
    return 0;
}

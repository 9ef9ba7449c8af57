/* search_test_util.h — shared helpers of the search tests: building a request from JSON text
 * through the real codec and presets (the tests run from the repository root). */
#ifndef FATHOM_SEARCH_TEST_UTIL_H
#define FATHOM_SEARCH_TEST_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "search_codec.h"

/* The search tests walk whole grids of requests and executions: tens of seconds in the normal
 * build, where every case runs. Under ASan, UBSan or TSan (5 to 20 times slower, scripts/test's
 * later stages) they take every TEST_SAMPLE_STRIDE-th case: the same code paths on a sample of
 * the inputs, which is what the sanitizers check; the normal build keeps checking every case. */
#ifdef FATHOM_TEST_SANITIZED
#define TEST_SAMPLE_STRIDE 3
#else
#define TEST_SAMPLE_STRIDE 1
#endif

static codec_presets_t *test_presets;

static inline int test_load_presets(void **state)
{
    (void)state;
    fathom_error_t err;
    test_presets = codec_presets_load("presets", &err);
    if (!test_presets) {
        print_error("cannot load presets/: %s\n", err.message);
        return -1;
    }
    return 0;
}

static inline int test_free_presets(void **state)
{
    (void)state;
    codec_presets_free(test_presets);
    test_presets = NULL;
    return 0;
}

/* Decodes a request written as JSON text; fails the test if the codec refuses it. */
static inline void test_request(const char *json, search_request_t *out)
{
    json_error_t jerr;
    json_t *body = json_loads(json, 0, &jerr);
    if (!body) {
        print_error("bad JSON in test: %s\n", jerr.text);
        fail();
    }
    fathom_error_t err;
    fathom_error_clear(&err);
    codec_ctx_t ctx = {test_presets};
    int rc = codec_search_decode(body, &ctx, out, &err);
    json_decref(body);
    if (rc) {
        print_error("request refused: %s: %s\n", err.field, err.message);
        fail();
    }
}

/* Runs a request on `threads` threads into *res (initialized here; the caller closes it). */
static inline void test_run(const search_request_t *req, int threads, search_result_t *res)
{
    fathom_error_t err;
    fathom_error_clear(&err);
    assert_int_equal(search_result_init(res, req->options.top_n, &err), 0);
    if (codec_search_run_request(req, threads, NULL, NULL, NULL, res, &err)) {
        print_error("search failed: %s: %s\n", err.field, err.message);
        fail();
    }
}

#endif

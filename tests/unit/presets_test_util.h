/* presets_test_util.h — the shipped presets/ for a unit test that loads them inside one test
 * (the suites that share them across tests load them in a group setup: llm_test_util.h,
 * search_test_util.h). Tests run from the repository root (fathom_unit_test), where presets/ is. */
#ifndef FATHOM_PRESETS_TEST_UTIL_H
#define FATHOM_PRESETS_TEST_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "presets.h"

/* The presets, or the test fails here; the caller frees them with codec_presets_free. */
static inline codec_presets_t *shipped_presets(void)
{
    fathom_error_t err;
    codec_presets_t *p = codec_presets_load("presets", &err);
    assert_non_null(p);
    return p;
}

#endif

/* fuzz_common.h — what every libFuzzer target of tests/fuzz/ shares: the preset registry (loaded
 * once, before the first input), body parsing with the server's limits, and the endpoint
 * round trip (normalize, then evaluate the normalized request).
 *
 * A target defines LLVMFuzzerTestOneInput and calls fuzz_init() from LLVMFuzzerInitialize. The
 * helpers abort() on a broken invariant so that libFuzzer records the input as a crash; a
 * refusal (an error filled in) is the expected outcome for most inputs and is not reported. */
#ifndef FATHOM_FUZZ_COMMON_H
#define FATHOM_FUZZ_COMMON_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "endpoint.h"
#include "fathom_error.h"

/* libFuzzer's entry points (declared here because the targets are C and -Wmissing-prototypes). */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Prints "fuzz: <message>" and aborts, so that libFuzzer keeps the input as a crash. */
void fuzz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Loads the presets (FATHOM_PRESETS, else "presets" under the working directory, else the source
 * tree's) into the context fuzz_ctx() returns; aborts if none can be read, since a fuzzer
 * without presets would miss every preset path. */
void fuzz_init(void);
const codec_ctx_t *fuzz_ctx(void);

/* codec_parse_body over the input; NULL when refused. Checks that a refusal names a code. */
json_t *fuzz_parse(const uint8_t *data, size_t size);

/* Aborts with a message unless err holds a refusal a client may legitimately get for a request
 * (any code but OK and INTERNAL; INTERNAL is a server bug, as is an error with no message). */
void fuzz_check_refusal(const char *what, const fathom_error_t *err);

/* Aborts when a request body that is an object is refused as invalid_field without naming the
 * field (every 4xx must say which field; only a body that is not an object has no field). */
void fuzz_check_names_field(const char *what, const json_t *body, const fathom_error_t *err);

/* normalize(body); if it succeeds, checks that normalizing the normalized request gives it
 * back unchanged (a cached request must hash alike however often it is normalized), then
 * evaluates it. Every reference is released. */
void fuzz_endpoint(const codec_endpoint_t *ep, const json_t *body);

/* Finds an endpoint by name and aborts if this build does not have it. */
const codec_endpoint_t *fuzz_endpoint_named(const char *name);

#endif

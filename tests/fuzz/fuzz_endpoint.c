/* fuzz_endpoint.c — one libFuzzer target per estimate endpoint (built once per endpoint with
 * FUZZ_ENDPOINT set to its name): the body is normalized, the normalization must be idempotent,
 * and the normalized request is evaluated (fuzz_endpoint in fuzz_common.c). */
#include "fuzz_common.h"

#ifndef FUZZ_ENDPOINT
#error "define FUZZ_ENDPOINT to the endpoint's name"
#endif

static const codec_endpoint_t *endpoint;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_init();
    endpoint = fuzz_endpoint_named(FUZZ_ENDPOINT);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *body = fuzz_parse(data, size);
    if (!body)
        return 0;
    fuzz_endpoint(endpoint, body);
    json_decref(body);
    return 0;
}

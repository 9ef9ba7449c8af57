/* fuzz_execution.c — libFuzzer target for codec_llm_execution_decode (Calculon's execution
 * object with Fathom's defaults); what is accepted must encode to a fixed point. */
#include "fuzz_common.h"
#include "fuzz_roundtrip.h"
#include "llm_codec.h"

static int decode(const json_t *v, const char *path, void *out, fathom_error_t *err)
{
    return codec_llm_execution_decode(v, path, out, err);
}

static json_t *encode(const void *in)
{
    return codec_llm_execution_encode(in);
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
    json_t *v = fuzz_parse(data, size);
    if (!v)
        return 0;
    fuzz_roundtrip("execution", v, sizeof(llm_execution_t), decode, encode);
    json_decref(v);
    return 0;
}

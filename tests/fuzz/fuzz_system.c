/* fuzz_system.c — libFuzzer target for codec_llm_system_decode: a system preset name or
 * Calculon's system object; what is accepted must encode to a fixed point. */
#include "fuzz_common.h"
#include "fuzz_roundtrip.h"
#include "llm_codec.h"

static int decode(const json_t *v, const char *path, void *out, fathom_error_t *err)
{
    return codec_llm_system_decode(v, path, fuzz_ctx()->presets, out, err);
}

static json_t *encode(const void *in)
{
    return codec_llm_system_encode(in);
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
    fuzz_roundtrip("system", v, sizeof(llm_system_t), decode, encode);
    json_decref(v);
    return 0;
}

/* fuzz_model.c — libFuzzer target for codec_model_decode: any JSON value (a preset name or a
 * model object) is decoded; what is accepted must encode to a fixed point. */
#include "fuzz_common.h"
#include "fuzz_roundtrip.h"
#include "model_codec.h"

static int decode(const json_t *v, const char *path, void *out, fathom_error_t *err)
{
    return codec_model_decode(v, path, fuzz_ctx()->presets, out, err);
}

static json_t *encode(const void *in)
{
    return codec_model_encode(in);
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
    fuzz_roundtrip("model", v, sizeof(fathom_model_t), decode, encode);
    json_decref(v);
    return 0;
}

/* fuzz_decoder.c — libFuzzer target for one member decoder, chosen at build time by
 * FUZZ_DECODER: "model" (codec_model_decode: a preset name or a model object), "system"
 * (codec_llm_system_decode: a preset name or Calculon's system object) or "execution"
 * (codec_llm_execution_decode, with Fathom's defaults). Whatever the decoder accepts must
 * encode to a fixed point (fuzz_roundtrip). */
#include <string.h>

#include "fuzz_common.h"
#include "fuzz_roundtrip.h"
#include "llm_codec.h"
#include "model_codec.h"

#ifndef FUZZ_DECODER
#error "build with -DFUZZ_DECODER=\"model\", \"system\" or \"execution\""
#endif

static int decode_model(const json_t *v, const char *path, void *out, fathom_error_t *err)
{
    return codec_model_decode(v, path, fuzz_ctx()->presets, out, err);
}

static json_t *encode_model(const void *in)
{
    return codec_model_encode(in);
}

static int decode_system(const json_t *v, const char *path, void *out, fathom_error_t *err)
{
    return codec_llm_system_decode(v, path, fuzz_ctx()->presets, out, err);
}

static json_t *encode_system(const void *in)
{
    return codec_llm_system_encode(in);
}

static int decode_execution(const json_t *v, const char *path, void *out, fathom_error_t *err)
{
    return codec_llm_execution_decode(v, path, out, err);
}

static json_t *encode_execution(const void *in)
{
    return codec_llm_execution_encode(in);
}

typedef struct {
    const char *name;
    size_t size;
    int (*decode)(const json_t *, const char *, void *, fathom_error_t *);
    json_t *(*encode)(const void *);
} decoder_t;

static const decoder_t decoders[] = {
    {"model", sizeof(fathom_model_t), decode_model, encode_model},
    {"system", sizeof(llm_system_t), decode_system, encode_system},
    {"execution", sizeof(llm_execution_t), decode_execution, encode_execution},
};

static const decoder_t *chosen;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_init();
    for (size_t i = 0; i < sizeof decoders / sizeof decoders[0]; i++)
        if (strcmp(decoders[i].name, FUZZ_DECODER) == 0)
            chosen = &decoders[i];
    if (!chosen)
        fuzz_fail("no decoder named %s in this build", FUZZ_DECODER);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *v = fuzz_parse(data, size);
    if (!v)
        return 0;
    fuzz_roundtrip(chosen->name, v, chosen->size, chosen->decode, chosen->encode);
    json_decref(v);
    return 0;
}

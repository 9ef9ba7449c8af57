/* test_transformer_codec.c — the /v1/transformer request through the codec: field errors name
 * the field, and requests that mean the same thing normalize to the same config hash. */
#include <string.h>

#include "canonical.h"
#include "endpoint.h"
#include "json_parse.h"
#include "test_util.h"

static codec_presets_t *presets;

static json_t *parse(const char *text)
{
    fathom_error_t err;
    json_t *v = codec_parse_body(text, strlen(text), &err);
    if (!v)
        fail_msg("test body does not parse: %s", err.message);
    return v;
}

static void hash_of(const char *text, char *out)
{
    codec_ctx_t ctx = {presets};
    fathom_error_t err;
    json_t *body = parse(text);
    json_t *norm = codec_transformer_endpoint.normalize(body, &ctx, &err);
    if (!norm)
        fail_msg("normalize failed: %s: %s", err.field, err.message);
    assert_int_equal(codec_config_hash("transformer", norm, out), 0);
    json_decref(norm);
    json_decref(body);
}

static void expect_error(const char *text, fathom_code_t code, const char *field)
{
    codec_ctx_t ctx = {presets};
    fathom_error_t err;
    fathom_error_clear(&err);
    json_t *body = codec_parse_body(text, strlen(text), &err);
    json_t *norm = body ? codec_transformer_endpoint.normalize(body, &ctx, &err) : NULL;
    if (norm)
        fail_msg("expected %s on %s, got success", fathom_code_name(code), field);
    if (err.code != code || strcmp(err.field, field) != 0)
        fail_msg("expected %s at '%s', got %s at '%s' (%s)", fathom_code_name(code), field,
                 fathom_code_name(err.code), err.field, err.message);
    json_decref(body);
}

static void same_meaning_same_hash(void **state)
{
    (void)state;
    char a[65], b[65], c[65], d[65];
    hash_of("{\"model\":{\"hidden\":768,\"attn_heads\":12,\"num_blocks\":12,\"seq_size\":1024}}", a);
    hash_of("{ \"model\" : { \"seq_size\":1024, \"num_blocks\":12,\n\"attn_heads\":12, "
            "\"hidden\":768 } }", b);
    /* explicit defaults: feedforward 4h, attn_size h/heads, tied, no bias, ratio 2 */
    hash_of("{\"model\":{\"hidden\":768,\"attn_heads\":12,\"num_blocks\":12,\"seq_size\":1024,"
            "\"feedforward\":3072,\"attn_size\":64,\"tied_embeddings\":true,\"bias\":false},"
            "\"backward_forward_ratio\":2,\"tensor_par\":1}", c);
    hash_of("{\"model\":{\"hidden\":768,\"attn_heads\":12,\"num_blocks\":12,\"seq_size\":2048}}", d);
    assert_string_equal(a, b);
    assert_string_equal(a, c);
    assert_string_not_equal(a, d);
    assert_true(codec_is_hash(a));
}

static void field_errors(void **state)
{
    (void)state;
    expect_error("{}", FATHOM_E_INVALID_FIELD, "model");
    expect_error("[]", FATHOM_E_INVALID_FIELD, "");
    expect_error("{\"model\":{\"hidden\":\"768\",\"attn_heads\":12,\"num_blocks\":1,\"seq_size\":8}}",
                 FATHOM_E_INVALID_FIELD, "model.hidden");
    expect_error("{\"model\":{\"hidden\":-5,\"attn_heads\":12,\"num_blocks\":1,\"seq_size\":8}}",
                 FATHOM_E_INVALID_FIELD, "model.hidden");
    expect_error("{\"model\":{\"hidden\":768.5,\"attn_heads\":12,\"num_blocks\":1,\"seq_size\":8}}",
                 FATHOM_E_INVALID_FIELD, "model.hidden");
    expect_error("{\"model\":{\"hidden\":768,\"attn_heads\":12,\"num_blocks\":1,\"seq_size\":8,"
                 "\"colour\":1}}", FATHOM_E_INVALID_FIELD, "model.colour");
    expect_error("{\"model\":{\"hidden\":768,\"attn_heads\":7,\"num_blocks\":1,\"seq_size\":8}}",
                 FATHOM_E_INVALID_FIELD, "model.attn_size");
    expect_error("{\"model\":{\"hidden\":9007199254740993,\"attn_heads\":1,\"num_blocks\":1,"
                 "\"seq_size\":8}}", FATHOM_E_INVALID_FIELD, "model.hidden");
    expect_error("{\"model\":\"no-such-model\"}", FATHOM_E_INVALID_FIELD, "model");
    expect_error("{\"model\":{\"hidden\":768,\"attn_heads\":12,\"num_blocks\":1,\"seq_size\":8},"
                 "\"mfu\":1.5}", FATHOM_E_INVALID_FIELD, "mfu");
    expect_error("{\"model\":{\"hidden\":768,\"attn_heads\":12,\"num_blocks\":1,\"seq_size\":8},"
                 "\"tokens\":0}", FATHOM_E_INVALID_FIELD, "tokens");
    expect_error("{\"model\":{\"hidden\":768,\"attn_heads\":12,\"num_blocks\":4,\"seq_size\":8},"
                 "\"lora\":{\"rank\":4,\"tuned_layers\":5}}", FATHOM_E_INVALID_FIELD,
                 "lora.tuned_layers");
}

static void parse_errors(void **state)
{
    (void)state;
    expect_error("", FATHOM_E_INVALID_JSON, "");
    expect_error("{\"model\":", FATHOM_E_INVALID_JSON, "");
    expect_error("{\"a\":1,\"a\":2}", FATHOM_E_INVALID_JSON, "");
    expect_error("{\"mfu\":NaN}", FATHOM_E_INVALID_JSON, "");
    expect_error("{\"mfu\":Infinity}", FATHOM_E_INVALID_JSON, "");
    expect_error("{\"s\":\"\xff\xfe\"}", FATHOM_E_INVALID_JSON, "");
    char deep[200];
    memset(deep, '[', 100);
    memset(deep + 100, ']', 100);
    fathom_error_t err;
    assert_null(codec_parse_body(deep, 200, &err));
    assert_int_equal(err.code, FATHOM_E_INVALID_JSON);
    assert_true(err.line == 1 && err.column == CODEC_MAX_DEPTH + 1);
}

static void evaluate_gpt2(void **state)
{
    (void)state;
    codec_ctx_t ctx = {presets};
    fathom_error_t err;
    json_t *body = parse("{\"model\":{\"hidden\":768,\"attn_heads\":12,\"num_blocks\":12,"
                         "\"seq_size\":1024,\"vocab_size\":50257,\"bias\":false,"
                         "\"tied_embeddings\":true}}");
    json_t *norm = codec_transformer_endpoint.normalize(body, &ctx, &err);
    assert_non_null(norm);
    json_t *out = codec_transformer_endpoint.evaluate(norm, &ctx, &err);
    assert_non_null(out);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(out, "params"), "total")),
                     124337664);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(out, "flops"), "forward_total")),
        291648307200LL);
    json_decref(out);
    json_decref(norm);
    json_decref(body);
}

int main(void)
{
    presets = codec_presets_empty();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(same_meaning_same_hash),
        cmocka_unit_test(field_errors),
        cmocka_unit_test(parse_errors),
        cmocka_unit_test(evaluate_gpt2),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    codec_presets_free(presets);
    return rc;
}

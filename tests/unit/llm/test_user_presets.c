/* test_user_presets.c — how a preset name resolves (codec/presets.c): built-ins first and
 * without a lookup, then the overlay's lookup once per name per request, an error of the lookup
 * surfacing as that error (not as "no such preset"), the flag saying a user preset was used; a
 * request naming a user preset normalizing to the same request (and hash) as one giving its
 * object; an unknown name's error suggesting the built-in it differs from only in case; and the
 * user preset names accepted and refused. */
#include <string.h>

#include "canonical.h"
#include "endpoint.h"
#include "llm_codec.h"
#include "test_util.h"

static codec_presets_t *builtins;

/* A fake store: one user system "ours" (a copy of a100_80g with twice the float16 rate), a
 * count of lookups, and a switch that makes the store unavailable. */
typedef struct {
    int calls;
    int unavailable;
} fake_t;

static int fake_lookup(void *ctx, preset_kind_t kind, const char *name, json_t **out,
                       fathom_error_t *err)
{
    fake_t *f = ctx;
    f->calls++;
    *out = NULL;
    if (f->unavailable)
        return fathom_error_set(err, FATHOM_E_UNAVAILABLE, NULL, "database is down");
    if (kind == PRESET_SYSTEM && strcmp(name, "ours") == 0) {
        *out = json_deep_copy(codec_presets_find(builtins, PRESET_SYSTEM, "a100_80g"));
        json_t *f16 = json_object_get(json_object_get(*out, "matrix"), "float16");
        json_object_set_new(f16, "tflops", json_integer(624));
    }
    return 0;
}

static void builtins_first_then_user_once(void **state)
{
    (void)state;
    fake_t f = {0};
    codec_presets_t *p = codec_presets_overlay(builtins, fake_lookup, &f);
    assert_non_null(p);
    fathom_error_t err;
    const json_t *obj;
    assert_int_equal(codec_presets_resolve(p, PRESET_SYSTEM, "a100_80g", &obj, &err), 0);
    assert_ptr_equal(obj, codec_presets_find(builtins, PRESET_SYSTEM, "a100_80g"));
    assert_int_equal(f.calls, 0);
    assert_false(codec_presets_used_user(p));

    assert_int_equal(codec_presets_resolve(p, PRESET_SYSTEM, "ours", &obj, &err), 0);
    assert_non_null(obj);
    const json_t *again;
    assert_int_equal(codec_presets_resolve(p, PRESET_SYSTEM, "ours", &again, &err), 0);
    assert_ptr_equal(obj, again);
    assert_int_equal(f.calls, 1);
    assert_true(codec_presets_used_user(p));

    assert_int_equal(codec_presets_resolve(p, PRESET_SYSTEM, "nope", &obj, &err), 0);
    assert_null(obj);
    assert_int_equal(codec_presets_resolve(p, PRESET_SYSTEM, "nope", &obj, &err), 0);
    assert_int_equal(f.calls, 2); /* an absent name is remembered too */
    assert_true(codec_presets_is_builtin(p, PRESET_SYSTEM, "a100_80g"));
    assert_false(codec_presets_is_builtin(p, PRESET_SYSTEM, "ours"));
    codec_presets_free(p);
}

static void lookup_failure_is_not_unknown_name(void **state)
{
    (void)state;
    fake_t f = {.unavailable = 1};
    codec_presets_t *p = codec_presets_overlay(builtins, fake_lookup, &f);
    llm_system_t s;
    fathom_error_t err;
    fathom_error_clear(&err);
    json_t *name = json_string("ours");
    assert_int_equal(codec_llm_system_decode(name, "system", p, &s, &err), -1);
    assert_int_equal(err.code, FATHOM_E_UNAVAILABLE);
    f.unavailable = 0;
    json_t *other = json_string("nope");
    fathom_error_clear(&err);
    assert_int_equal(codec_llm_system_decode(other, "system", p, &s, &err), -1);
    assert_int_equal(err.code, FATHOM_E_INVALID_FIELD);
    assert_string_equal(err.field, "system");
    json_decref(name);
    json_decref(other);
    codec_presets_free(p);
}

/* A name that differs from a built-in only in letter case is refused with the built-in's name
 * as the likely one, through either decoder that reads a system name (a plain name and a
 * {"preset": …} variant) and for a model; a part of some names ("H100": the four H100 systems of
 * presets/systems, sorted) lists them, the first eight by name when more match; a name like no
 * built-in gets no suggestion. */
static void unknown_name_suggests_case(void **state)
{
    (void)state;
    fathom_error_t err;
    llm_system_t s;
    json_t *plain = json_string("H100_SXM");
    assert_int_equal(codec_llm_system_decode(plain, "system", builtins, &s, &err), -1);
    assert_int_equal(err.code, FATHOM_E_INVALID_FIELD);
    assert_string_equal(err.field, "system");
    assert_non_null(strstr(err.message, "did you mean \"h100_sxm\"?"));
    json_t *variant = json_pack("{s:s,s:f}", "preset", "H100_sxm", "memory_gib", 96.0);
    assert_int_equal(codec_llm_system_decode(variant, "system", builtins, &s, &err), -1);
    assert_string_equal(err.field, "system.preset");
    assert_non_null(strstr(err.message, "did you mean \"h100_sxm\"?"));
    const json_t *model = json_string("llama3-8b");
    assert_int_equal(codec_presets_deref(builtins, PRESET_MODEL, &model, "model", &err), -1);
    assert_string_equal(err.field, "model");
    assert_non_null(strstr(err.message, "did you mean \"llama3-8B\"?"));
    json_decref((json_t *)model);
    json_t *part = json_string("H100");
    assert_int_equal(codec_llm_system_decode(part, "system", builtins, &s, &err), -1);
    assert_null(strstr(err.message, "did you mean"));
    assert_non_null(strstr(err.message, "contain it: h100_80g_nvl8, h100_nvl, h100_pcie, "
                                        "h100_sxm (GET"));
    /* "00" is in 14 system names: the first eight by name, then an ellipsis */
    json_t *many = json_string("00");
    assert_int_equal(codec_llm_system_decode(many, "system", builtins, &s, &err), -1);
    assert_non_null(strstr(err.message, "contain it: a100_80e, a100_80g, a100_sxm, a100_sxm_40g, "
                                        "b200, b300, gb200_nvl72, gb300_nvl72, … (GET"));
    json_decref(many);
    json_t *none = json_string("zz9");
    assert_int_equal(codec_llm_system_decode(none, "system", builtins, &s, &err), -1);
    assert_null(strstr(err.message, "did you mean"));
    assert_null(strstr(err.message, "contain it"));
    json_decref(plain);
    json_decref(variant);
    json_decref(part);
    json_decref(none);
}

static void hash_of(const char *system, codec_presets_t *p, char out[CODEC_HASH_HEX_LEN + 1])
{
    json_t *body = json_pack("{s:s,s:s,s:{s:i,s:i,s:i}}", "model", "gpt3-175B", "system", system,
                             "execution", "num_procs", 8, "tensor_par", 8, "batch_size", 8);
    codec_ctx_t ctx = {p};
    fathom_error_t err;
    json_t *norm = codec_estimate_endpoint.normalize(body, &ctx, &err);
    if (!norm)
        fail_msg("normalize: %s: %s", err.field, err.message);
    assert_int_equal(codec_config_hash("estimate", norm, out), 0);
    json_decref(norm);
    json_decref(body);
}

static void name_normalizes_to_its_content(void **state)
{
    (void)state;
    fake_t f = {0};
    codec_presets_t *p = codec_presets_overlay(builtins, fake_lookup, &f);
    char by_name[CODEC_HASH_HEX_LEN + 1], builtin[CODEC_HASH_HEX_LEN + 1];
    hash_of("ours", p, by_name);
    hash_of("a100_80g", p, builtin);
    assert_string_not_equal(by_name, builtin); /* the content differs, so does the hash */

    /* The same request with the object in place of the name is the same request. */
    const json_t *obj = codec_presets_find(p, PRESET_SYSTEM, "ours");
    json_t *body = json_pack("{s:s,s:O,s:{s:i,s:i,s:i}}", "model", "gpt3-175B", "system", obj,
                             "execution", "num_procs", 8, "tensor_par", 8, "batch_size", 8);
    codec_ctx_t ctx = {builtins};
    fathom_error_t err;
    json_t *norm = codec_estimate_endpoint.normalize(body, &ctx, &err);
    assert_non_null(norm);
    char by_object[CODEC_HASH_HEX_LEN + 1];
    assert_int_equal(codec_config_hash("estimate", norm, by_object), 0);
    assert_string_equal(by_name, by_object);
    json_decref(norm);
    json_decref(body);
    codec_presets_free(p);
}

static void names(void **state)
{
    (void)state;
    static const char *const good[] = {"a", "0", "our-a100", "h100_ours.v2", "a-", NULL};
    static const char *const bad[] = {"", "A", "-a", "_a", ".a", "a b", "a/b", "a\\b", "é",
                                      "a:b", NULL};
    fathom_error_t err;
    for (int i = 0; good[i]; i++)
        if (codec_preset_name_check(good[i], "name", &err))
            fail_msg("'%s' refused: %s", good[i], err.message);
    for (int i = 0; bad[i]; i++) {
        if (!codec_preset_name_check(bad[i], "name", &err))
            fail_msg("'%s' accepted", bad[i]);
        assert_string_equal(err.field, "name");
    }
    char longest[CODEC_PRESET_NAME_MAX + 2];
    memset(longest, 'a', sizeof longest);
    longest[CODEC_PRESET_NAME_MAX] = '\0';
    assert_int_equal(codec_preset_name_check(longest, "name", &err), 0);
    longest[CODEC_PRESET_NAME_MAX] = 'a';
    longest[CODEC_PRESET_NAME_MAX + 1] = '\0';
    assert_int_equal(codec_preset_name_check(longest, "name", &err), -1);
}

int main(void)
{
    fathom_error_t err;
    builtins = codec_presets_load("presets", &err);
    if (!builtins) {
        fprintf(stderr, "presets: %s\n", err.message);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(builtins_first_then_user_once),
        cmocka_unit_test(lookup_failure_is_not_unknown_name),
        cmocka_unit_test(unknown_name_suggests_case),
        cmocka_unit_test(name_normalizes_to_its_content),
        cmocka_unit_test(names),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    codec_presets_free(builtins);
    return rc;
}

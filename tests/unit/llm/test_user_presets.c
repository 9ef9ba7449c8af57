/* test_user_presets.c — how a preset name resolves (codec/presets.c): built-ins first and
 * without a lookup, then the overlay's lookup once per name per request, an error of the lookup
 * surfacing as that error (not as "no such preset"), the flag saying a user preset was used; a
 * request naming a user preset normalizing to the same request (and hash) as one giving its
 * object; an unknown name's error suggesting the built-in it differs from only in case; the
 * user preset names accepted and refused; and a model's aliases ("$aliases": llama3.1-70B for
 * llama3-70B) resolving, listing and hashing as the preset, with a directory whose aliases clash
 * or are malformed refused at load. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* The hash of an 8-GPU estimate of `model` on `system`, names resolved through p. */
static void estimate_hash(const char *model, const char *system, codec_presets_t *p,
                          char out[CODEC_HASH_HEX_LEN + 1])
{
    json_t *body = json_pack("{s:s,s:s,s:{s:i,s:i,s:i}}", "model", model, "system", system,
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
    estimate_hash("gpt3-175B", "ours", p, by_name);
    estimate_hash("gpt3-175B", "a100_80g", p, builtin);
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

static const json_t *listed(const json_t *list, const char *kind, const char *name)
{
    size_t i;
    const json_t *entry;
    json_array_foreach(json_object_get(list, kind), i, entry)
    {
        if (strcmp(json_string_value(json_object_get(entry, "name")), name) == 0)
            return entry;
    }
    return NULL;
}

static void aliases_are_the_preset(void **state)
{
    (void)state;
    static const char *const pairs[][2] = {{"llama3.1-8B", "llama3-8B"},
                                           {"llama3.1-70B", "llama3-70B"},
                                           {"llama3.3-70B", "llama3-70B"},
                                           {"deepseek-r1", "deepseek-v3"}};
    json_t *list = codec_presets_list(builtins);
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        const json_t *alias = codec_presets_find(builtins, PRESET_MODEL, pairs[i][0]);
        assert_non_null(alias);
        assert_ptr_equal(alias, codec_presets_find(builtins, PRESET_MODEL, pairs[i][1]));
        assert_null(json_object_get(alias, "$aliases")); /* taken out, as "$comment" is */
        assert_true(codec_presets_is_builtin(builtins, PRESET_MODEL, pairs[i][0]));
        const json_t *entry = listed(list, "models", pairs[i][0]);
        assert_non_null(entry);
        assert_string_equal(json_string_value(json_object_get(entry, "alias_of")), pairs[i][1]);
        assert_true(json_string_length(json_object_get(entry, "comment")) > 0);
        assert_null(json_object_get(listed(list, "models", pairs[i][1]), "alias_of"));
        char a[CODEC_HASH_HEX_LEN + 1], b[CODEC_HASH_HEX_LEN + 1];
        estimate_hash(pairs[i][0], "h100_sxm", builtins, a);
        estimate_hash(pairs[i][1], "h100_sxm", builtins, b);
        assert_string_equal(a, b);
    }
    json_decref(list);
    fathom_error_t err;
    const json_t *model = json_string("llama3.1-70b");
    assert_int_equal(codec_presets_deref(builtins, PRESET_MODEL, &model, "model", &err), -1);
    assert_non_null(strstr(err.message, "did you mean \"llama3.1-70B\"?"));
    json_decref((json_t *)model);
}

/* Loads a registry from a directory whose models/ holds the given files (name, text pairs,
 * NULL-ended): its load error's message, or "" when it loads. */
static void load_models(const char *const *files, char *message, size_t cap)
{
    char dir[] = "/tmp/fathom-presets-XXXXXX", sub[64], path[128];
    assert_non_null(mkdtemp(dir));
    snprintf(sub, sizeof sub, "%s/models", dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    snprintf(sub, sizeof sub, "%s/systems", dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    for (int i = 0; files[i]; i += 2) {
        snprintf(path, sizeof path, "%s/models/%s.json", dir, files[i]);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(files[i + 1], f);
        fclose(f);
    }
    fathom_error_t err;
    codec_presets_t *p = codec_presets_load(dir, &err);
    snprintf(message, cap, "%s", p ? "" : err.message);
    codec_presets_free(p);
    for (int i = 0; files[i]; i += 2) {
        snprintf(path, sizeof path, "%s/models/%s.json", dir, files[i]);
        unlink(path);
    }
    snprintf(sub, sizeof sub, "%s/models", dir);
    rmdir(sub);
    snprintf(sub, sizeof sub, "%s/systems", dir);
    rmdir(sub);
    rmdir(dir);
}

static void clashing_aliases_refused(void **state)
{
    (void)state;
    char msg[FATHOM_ERROR_MESSAGE_MAX];
    const char *const fine[] = {"a", "{\"$aliases\": {\"a.1\": \"the same shape\"}}", "b", "{}",
                                NULL};
    load_models(fine, msg, sizeof msg);
    assert_string_equal(msg, "");
    const char *const shadows[] = {"a", "{\"$aliases\": {\"b\": \"the same shape\"}}", "b", "{}",
                                   NULL};
    load_models(shadows, msg, sizeof msg);
    assert_non_null(strstr(msg, "'b' is both a preset and an alias of 'a'"));
    const char *const twice[] = {"a", "{\"$aliases\": {\"c\": \"x\"}}", "b",
                                 "{\"$aliases\": {\"c\": \"y\"}}", NULL};
    load_models(twice, msg, sizeof msg);
    assert_non_null(strstr(msg, "alias 'c' is also another preset's"));
    const char *const unsaid[] = {"a", "{\"$aliases\": {\"c\": \"\"}}", NULL};
    load_models(unsaid, msg, sizeof msg);
    assert_non_null(strstr(msg, "alias 'c' has no comment"));
    const char *const bad_name[] = {"a", "{\"$aliases\": {\"c d\": \"x\"}}", NULL};
    load_models(bad_name, msg, sizeof msg);
    assert_non_null(strstr(msg, "alias 'c d' is not a preset name"));
    const char *const not_object[] = {"a", "{\"$aliases\": [\"c\"]}", NULL};
    load_models(not_object, msg, sizeof msg);
    assert_non_null(strstr(msg, "$aliases is not an object"));
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
        cmocka_unit_test(aliases_are_the_preset),
        cmocka_unit_test(clashing_aliases_refused),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    codec_presets_free(builtins);
    return rc;
}

/* presets.c — loading the preset registry, and resolving names: built-ins, then user presets
 * through a per-request overlay (see presets.h). */
#include "presets.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "text.h"

/* A guard against a stray huge directory: presets are a curated handful of files. */
#define PRESETS_MAX_PER_KIND 256

/* An overlay's mutable part: written through a const registry pointer by the one thread that
 * owns the overlay (the request's). */
typedef struct {
    codec_preset_lookup_fn fn;
    void *fn_ctx;
    json_t *fetched[PRESET__KINDS]; /* name → user object, or null when there is none */
    int used;                       /* a name resolved to a user preset */
} user_lookup_t;

struct codec_presets {
    json_t *objects[PRESET__KINDS];  /* name → object without "$comment" */
    json_t *comments[PRESET__KINDS]; /* name → comment string */
    json_t *aliases[PRESET__KINDS];  /* alias → the file name of the preset it stands for */
    json_t *measured;                /* validation/measured_runs.json: an array, or NULL */
    json_t *pytorch;                 /* validation/pytorch_runs.json: an array, or NULL */
    char *dir;                       /* the directory it was loaded from; NULL when empty */
    const codec_presets_t *base;     /* an overlay's built-ins; NULL for a loaded registry */
    user_lookup_t *user;             /* an overlay's lookup; NULL for a loaded registry */
};

/* The registry holding the built-ins: the overlay's base, or p itself. */
static const codec_presets_t *builtins(const codec_presets_t *p)
{
    return p && p->base ? p->base : p;
}

const char *codec_preset_kind_name(preset_kind_t kind)
{
    return kind == PRESET_MODEL ? "models" : "systems";
}

codec_presets_t *codec_presets_empty(void)
{
    codec_presets_t *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    for (int k = 0; k < PRESET__KINDS; k++) {
        p->objects[k] = json_object();
        p->comments[k] = json_object();
        p->aliases[k] = json_object();
        if (!p->objects[k] || !p->comments[k] || !p->aliases[k]) {
            codec_presets_free(p);
            return NULL;
        }
    }
    return p;
}

void codec_presets_free(codec_presets_t *p)
{
    if (!p)
        return;
    for (int k = 0; k < PRESET__KINDS; k++) {
        json_decref(p->objects[k]);
        json_decref(p->comments[k]);
        json_decref(p->aliases[k]);
    }
    json_decref(p->measured);
    json_decref(p->pytorch);
    free(p->dir);
    if (p->user) {
        for (int k = 0; k < PRESET__KINDS; k++)
            json_decref(p->user->fetched[k]);
        free(p->user);
    }
    free(p);
}

codec_presets_t *codec_presets_overlay(const codec_presets_t *base, codec_preset_lookup_fn fn,
                                       void *fn_ctx)
{
    codec_presets_t *p = codec_presets_empty();
    if (!p)
        return NULL;
    p->base = builtins(base);
    p->user = calloc(1, sizeof *p->user);
    if (!p->user) {
        codec_presets_free(p);
        return NULL;
    }
    p->user->fn = fn;
    p->user->fn_ctx = fn_ctx;
    for (int k = 0; k < PRESET__KINDS; k++) {
        if ((p->user->fetched[k] = json_object()) == NULL) {
            codec_presets_free(p);
            return NULL;
        }
    }
    return p;
}

/* A preset notes its sources under "$comment" and, for separately sourced parts (prices, efficiency
 * curves), under further "$comment_<topic>" keys. They are taken out of the object and joined, in
 * file order, into the one comment /v1/presets shows. NULL when out of memory. */
static json_t *preset_take_comments(json_t *obj)
{
    char *joined = strdup("");
    if (!joined)
        return NULL;
    const char *key;
    json_t *value;
    void *tmp;
    json_object_foreach_safe(obj, tmp, key, value) {
        if (strncmp(key, "$comment", 8) != 0)
            continue;
        if (json_is_string(value) && json_string_length(value) > 0) {
            size_t have = strlen(joined), add = json_string_length(value);
            char *grown = realloc(joined, have + add + 2);
            if (!grown) {
                free(joined);
                return NULL;
            }
            joined = grown;
            if (have)
                joined[have++] = ' ';
            memcpy(joined + have, json_string_value(value), add);
            joined[have + add] = '\0';
        }
        json_object_del(obj, key);
    }
    json_t *comment = json_string(joined);
    free(joined);
    return comment;
}

/* [a-z0-9][a-z0-9_.-]{0,63}, and with upper_case also A-Z where a-z is: a built-in's file name
 * may have capitals (llama3-8B), a user's may not. */
static bool name_form_ok(const char *name, bool upper_case)
{
    size_t n = strlen(name);
    bool ok = n >= 1 && n <= CODEC_PRESET_NAME_MAX;
    for (size_t i = 0; ok && i < n; i++) {
        char c = name[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                     (upper_case && c >= 'A' && c <= 'Z');
        ok = alnum || (i > 0 && (c == '_' || c == '.' || c == '-'));
    }
    return ok;
}

/* A preset file may name other models of exactly its shape under "$aliases": {"<alias>":
 * "<comment: which model, its source, why the shape is the same>"} (Llama 3.1 70B for Llama 3's:
 * they differ only in rope_scaling and max_position_embeddings, which change no count). The member
 * is taken out of obj and each alias recorded in pending as alias → [file name, comment]. */
static int take_aliases(json_t *obj, const char *name, const char *file, json_t *pending,
                        fathom_error_t *err)
{
    json_t *aliases = json_object_get(obj, "$aliases");
    if (!aliases)
        return 0;
    const char *alias;
    json_t *comment;
    if (!json_is_object(aliases))
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL,
                                "preset %s: $aliases is not an object of alias → comment", file);
    json_object_foreach(aliases, alias, comment)
    {
        if (!json_is_string(comment) || json_string_length(comment) == 0)
            return fathom_error_set(err, FATHOM_E_INTERNAL, NULL,
                                    "preset %s: alias '%s' has no comment saying what it is", file,
                                    alias);
        if (!name_form_ok(alias, true))
            return fathom_error_set(err, FATHOM_E_INTERNAL, NULL,
                                    "preset %s: alias '%s' is not a preset name", file, alias);
        if (json_object_get(pending, alias))
            return fathom_error_set(err, FATHOM_E_INTERNAL, NULL,
                                    "preset %s: alias '%s' is also another preset's", file, alias);
        if (json_object_set_new(pending, alias, json_pack("[sO]", name, comment)))
            return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    }
    json_object_del(obj, "$aliases");
    return 0;
}

/* Each pending alias becomes a name of its preset's object (the same object: a request naming
 * the alias normalizes, and hashes, as one naming the preset), once every file is read, so that
 * an alias can never shadow a preset's own name whatever order the directory lists them in. */
static int register_aliases(codec_presets_t *p, preset_kind_t kind, const json_t *pending,
                            const char *dir, fathom_error_t *err)
{
    const char *alias;
    json_t *entry;
    json_object_foreach((json_t *)pending, alias, entry)
    {
        const char *target = json_string_value(json_array_get(entry, 0));
        if (json_object_get(p->objects[kind], alias))
            return fathom_error_set(err, FATHOM_E_INTERNAL, NULL,
                                    "%s: '%s' is both a preset and an alias of '%s'", dir, alias,
                                    target);
        if (json_object_set(p->objects[kind], alias, json_object_get(p->objects[kind], target)) ||
            json_object_set(p->comments[kind], alias, json_array_get(entry, 1)) ||
            json_object_set_new(p->aliases[kind], alias, json_string(target)))
            return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    }
    return 0;
}

static int load_kind(codec_presets_t *p, preset_kind_t kind, const char *dir, fathom_error_t *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, codec_preset_kind_name(kind));
    DIR *d = opendir(path);
    if (!d)
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "cannot open preset directory %s",
                                path);
    int rc = -1, count = 0;
    json_t *pending = json_object();
    struct dirent *e;
    while (pending && (e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len <= 5 || strcmp(e->d_name + len - 5, ".json") != 0)
            continue;
        if (++count > PRESETS_MAX_PER_KIND) {
            fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "more than %d presets in %s",
                             PRESETS_MAX_PER_KIND, path);
            goto out;
        }
        char file[4096 + 256], name[256];
        snprintf(file, sizeof file, "%s/%s", path, e->d_name);
        snprintf(name, sizeof name, "%.*s", (int)(len - 5), e->d_name);
        json_error_t jerr;
        json_t *obj = json_load_file(file, JSON_REJECT_DUPLICATES, &jerr);
        if (!obj || !json_is_object(obj)) {
            json_decref(obj);
            fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "preset %s: %s (line %d)", file,
                             obj ? "not an object" : jerr.text, jerr.line);
            goto out;
        }
        if (take_aliases(obj, name, file, pending, err)) {
            json_decref(obj);
            goto out;
        }
        json_t *comment = preset_take_comments(obj);
        if (!comment) {
            json_decref(obj);
            fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "preset %s: out of memory", file);
            goto out;
        }
        json_object_set_new(p->comments[kind], name, comment);
        json_object_set_new(p->objects[kind], name, obj);
    }
    if (!pending)
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    else if (register_aliases(p, kind, pending, path, err) == 0)
        rc = 0;
out:
    json_decref(pending);
    closedir(d);
    return rc;
}

/* DIR/validation/<name> into *out: an array, or NULL when the file is absent; -1 with err when it
 * cannot be parsed or is not an array. */
static int load_runs(const char *dir, const char *name, json_t **out, fathom_error_t *err)
{
    char file[4096];
    snprintf(file, sizeof file, "%s/validation/%s", dir, name);
    json_error_t jerr;
    *out = json_load_file(file, JSON_REJECT_DUPLICATES, &jerr);
    if (!*out && jerr.position > 0)
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "%s: %s (line %d)", file, jerr.text,
                                jerr.line);
    if (*out && !json_is_array(*out)) {
        json_decref(*out);
        *out = NULL;
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "%s: not an array", file);
    }
    return 0;
}

codec_presets_t *codec_presets_load(const char *dir, fathom_error_t *err)
{
    codec_presets_t *p = codec_presets_empty();
    if (!p) {
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
        return NULL;
    }
    for (int k = 0; k < PRESET__KINDS; k++) {
        if (load_kind(p, (preset_kind_t)k, dir, err)) {
            codec_presets_free(p);
            return NULL;
        }
    }
    p->dir = strdup(dir);
    if (!p->dir) {
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
        codec_presets_free(p);
        return NULL;
    }
    /* The measured runs are optional: a registry without them validates against Calculon only. */
    if (load_runs(dir, "measured_runs.json", &p->measured, err) ||
        load_runs(dir, "pytorch_runs.json", &p->pytorch, err)) {
        codec_presets_free(p);
        return NULL;
    }
    return p;
}

const json_t *codec_presets_measured(const codec_presets_t *p)
{
    p = builtins(p);
    return p ? p->measured : NULL;
}

const json_t *codec_presets_pytorch_runs(const codec_presets_t *p)
{
    p = builtins(p);
    return p ? p->pytorch : NULL;
}

int codec_presets_validation_path(const codec_presets_t *p, const char *file, char *out,
                                  size_t cap)
{
    p = builtins(p);
    if (!p || !p->dir)
        return -1;
    const int n = snprintf(out, cap, "%s/validation/%s", p->dir, file);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

int codec_presets_is_builtin(const codec_presets_t *p, preset_kind_t kind, const char *name)
{
    p = builtins(p);
    return p && (unsigned)kind < PRESET__KINDS && json_object_get(p->objects[kind], name) != NULL;
}

int codec_presets_resolve(const codec_presets_t *p, preset_kind_t kind, const char *name,
                          const json_t **out, fathom_error_t *err)
{
    *out = NULL;
    if (!p || (unsigned)kind >= PRESET__KINDS)
        return 0;
    const json_t *builtin = json_object_get(builtins(p)->objects[kind], name);
    user_lookup_t *u = p->user;
    if (builtin || !u || !u->fn) {
        *out = builtin;
        return 0;
    }
    /* A name no user preset can have (not [a-z0-9][a-z0-9_.-]*, so perhaps not even UTF-8,
     * which the cache below could not hold as a key) is simply not one. */
    if (codec_preset_name_check(name, NULL, NULL))
        return 0;
    json_t *seen = json_object_get(u->fetched[kind], name);
    if (!seen) {
        json_t *obj = NULL;
        if (u->fn(u->fn_ctx, kind, name, &obj, err))
            return -1;
        seen = obj ? obj : json_null();
        if (json_object_set_new(u->fetched[kind], name, seen))
            return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory");
    }
    if (json_is_null(seen))
        return 0;
    u->used = 1;
    *out = seen;
    return 0;
}

int codec_presets_deref(const codec_presets_t *p, preset_kind_t kind, const json_t **v,
                        const char *path, fathom_error_t *err)
{
    if (!json_is_string(*v))
        return 0;
    const json_t *preset;
    if (codec_presets_resolve(p, kind, json_string_value(*v), &preset, err))
        return -1;
    if (!preset)
        return codec_presets_unknown(p, kind, json_string_value(*v), path, err);
    *v = preset;
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int codec_presets_unknown(const codec_presets_t *p, preset_kind_t kind, const char *name,
                          const char *path, fathom_error_t *err)
{
    enum { SHOWN = 8 };
    const char *what = kind == PRESET_MODEL ? "model" : "system";
    const codec_presets_t *b = builtins(p);
    const char *key, *like[PRESETS_MAX_PER_KIND];
    size_t n_like = 0;
    json_t *value;
    /* a name one letter long, or longer than any preset's, is like nothing worth listing */
    const int search = b && (unsigned)kind < PRESET__KINDS && strlen(name) >= 2 &&
                       strlen(name) <= CODEC_PRESET_NAME_MAX;
    if (search)
        json_object_foreach(b->objects[kind], key, value)
        {
            if (strcasecmp(key, name) == 0)
                return fathom_error_set(err, FATHOM_E_INVALID_FIELD, path,
                                        "\"%s\" is not a %s preset; did you mean \"%s\"? "
                                        "(names are case-sensitive; GET /v1/presets lists them)",
                                        name, what, key);
            if (codec_contains_nocase(key, name) && n_like < PRESETS_MAX_PER_KIND)
                like[n_like++] = key;
        }
    if (n_like == 0)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, path,
                                "\"%s\" is not a %s preset (GET /v1/presets lists them)", name,
                                what);
    /* the registry's order is the directory's: sorted before cut, the same request names the
     * same presets on every machine */
    qsort(like, n_like, sizeof like[0], by_name);
    char list[FATHOM_ERROR_MESSAGE_MAX] = "";
    size_t len = 0;
    for (size_t i = 0; i < n_like && i < SHOWN && len < sizeof list; i++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", like[i]);
    return fathom_error_set(err, FATHOM_E_INVALID_FIELD, path,
                            "\"%s\" is not a %s preset; those whose names contain it: %s%s "
                            "(GET /v1/presets lists them all)",
                            name, what, list, n_like > SHOWN ? ", …" : "");
}

const json_t *codec_presets_find(const codec_presets_t *p, preset_kind_t kind, const char *name)
{
    const json_t *out;
    fathom_error_t err;
    return codec_presets_resolve(p, kind, name, &out, &err) ? NULL : out;
}

int codec_presets_used_user(const codec_presets_t *p)
{
    return p && p->user && p->user->used;
}

int codec_preset_name_check(const char *name, const char *field, fathom_error_t *err)
{
    if (name_form_ok(name, false))
        return 0;
    return fathom_error_set(err, FATHOM_E_INVALID_FIELD, field,
                            "a preset name is 1 to %d characters of a-z, 0-9, '_', '.' and '-', "
                            "starting with a letter or digit",
                            CODEC_PRESET_NAME_MAX);
}

json_t *codec_presets_list(const codec_presets_t *p)
{
    p = builtins(p);
    json_t *out = json_object();
    for (int k = 0; k < PRESET__KINDS && out; k++) {
        size_t n = json_object_size(p->objects[k]), i = 0;
        const char **names = calloc(n ? n : 1, sizeof *names);
        json_t *arr = json_array();
        const char *key;
        json_t *val;
        json_object_foreach(p->objects[k], key, val) names[i++] = key;
        qsort(names, n, sizeof *names, by_name);
        for (i = 0; i < n; i++) {
            json_t *entry = json_pack("{s:s,s:O}", "name", names[i], "comment",
                                      json_object_get(p->comments[k], names[i]));
            json_t *target = json_object_get(p->aliases[k], names[i]);
            if (entry && target)
                json_object_set(entry, "alias_of", target);
            json_array_append_new(arr, entry);
        }
        free(names);
        json_object_set_new(out, codec_preset_kind_name((preset_kind_t)k), arr);
    }
    return out;
}

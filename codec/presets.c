/* presets.c — loading and looking up the preset registry (see presets.h). */
#include "presets.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A guard against a stray huge directory: presets are a curated handful of files. */
#define PRESETS_MAX_PER_KIND 256

struct codec_presets {
    json_t *objects[PRESET__KINDS];  /* name → object without "$comment" */
    json_t *comments[PRESET__KINDS]; /* name → comment string */
    json_t *measured;                /* validation/measured_runs.json: an array, or NULL */
};

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
        if (!p->objects[k] || !p->comments[k]) {
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
    }
    json_decref(p->measured);
    free(p);
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

static int load_kind(codec_presets_t *p, preset_kind_t kind, const char *dir, fathom_error_t *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, codec_preset_kind_name(kind));
    DIR *d = opendir(path);
    if (!d)
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "cannot open preset directory %s",
                                path);
    int rc = -1, count = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
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
        json_t *comment = preset_take_comments(obj);
        if (!comment) {
            json_decref(obj);
            fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "preset %s: out of memory", file);
            goto out;
        }
        json_object_set_new(p->comments[kind], name, comment);
        json_object_set_new(p->objects[kind], name, obj);
    }
    rc = 0;
out:
    closedir(d);
    return rc;
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
    /* The measured runs are optional: a registry without them validates against Calculon only. */
    char file[4096];
    snprintf(file, sizeof file, "%s/validation/measured_runs.json", dir);
    json_error_t jerr;
    p->measured = json_load_file(file, JSON_REJECT_DUPLICATES, &jerr);
    if (!p->measured && jerr.position > 0) {
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "%s: %s (line %d)", file, jerr.text,
                         jerr.line);
        codec_presets_free(p);
        return NULL;
    }
    if (p->measured && !json_is_array(p->measured)) {
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "%s: not an array", file);
        codec_presets_free(p);
        return NULL;
    }
    return p;
}

const json_t *codec_presets_measured(const codec_presets_t *p)
{
    return p ? p->measured : NULL;
}

const json_t *codec_presets_find(const codec_presets_t *p, preset_kind_t kind, const char *name)
{
    if (!p || (unsigned)kind >= PRESET__KINDS)
        return NULL;
    return json_object_get(p->objects[kind], name);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

json_t *codec_presets_list(const codec_presets_t *p)
{
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
            json_array_append_new(arr, json_pack("{s:s,s:O}", "name", names[i], "comment",
                                                 json_object_get(p->comments[k], names[i])));
        }
        free(names);
        json_object_set_new(out, codec_preset_kind_name((preset_kind_t)k), arr);
    }
    return out;
}

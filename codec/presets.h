/* presets.h — named model and system presets: the built-in ones, loaded once from a directory
 * of JSON files, and user presets looked up by a caller-given function (fathomd's store).
 *
 * Layout: DIR/models/<name>.json and DIR/systems/<name>.json, each holding the object itself.
 * A top-level "$comment" member (a note on the source of the numbers) is kept for listings and
 * stripped from the object decoders see. "$aliases" ({"<name>": "<comment>"}) gives other names
 * of the same object, for models of exactly the same shape (llama3.1-70B for llama3-70B): an
 * alias resolves, lists and hashes as the preset itself. The registry is immutable after loading, so the
 * server's threads share it without locks.
 *
 * User presets. Every decoder resolves a name with codec_presets_resolve, and nothing else:
 * built-ins first (a user preset can never take a built-in's name), then the overlay's lookup.
 * An overlay (codec_presets_overlay) is made per request on the thread that handles it: it wraps
 * the shared registry, keeps the user objects it fetched until it is freed (so a name read twice
 * in one request is one object), and remembers whether any name resolved to a user preset — a
 * request that did cannot be answered from bytes seen before, since the preset may have changed
 * since. */
#ifndef FATHOM_PRESETS_H
#define FATHOM_PRESETS_H

#include <jansson.h>
#include <stddef.h>

#include "fathom_error.h"

typedef enum { PRESET_MODEL = 0, PRESET_SYSTEM = 1, PRESET__KINDS } preset_kind_t;

typedef struct codec_presets codec_presets_t;

/* Loads every preset under dir. NULL with err filled when dir or a file cannot be read or parsed. */
codec_presets_t *codec_presets_load(const char *dir, fathom_error_t *err);
/* An empty registry (for tests and programs that take no presets). */
codec_presets_t *codec_presets_empty(void);
void codec_presets_free(codec_presets_t *p);

/* The preset object (borrowed, without "$comment"), or NULL if there is none by that name (or
 * the user lookup failed). */
const json_t *codec_presets_find(const codec_presets_t *p, preset_kind_t kind, const char *name);

/* Looks up user preset kind/name: 0 with *out a new reference, or NULL when there is none; -1
 * with err when it cannot be read (the store is unavailable). */
typedef int (*codec_preset_lookup_fn)(void *ctx, preset_kind_t kind, const char *name,
                                      json_t **out, fathom_error_t *err);

/* A per-request registry: base's presets plus the user presets fn finds. base and fn_ctx are
 * borrowed and must outlive it; free with codec_presets_free. NULL when out of memory. */
codec_presets_t *codec_presets_overlay(const codec_presets_t *base, codec_preset_lookup_fn fn,
                                       void *fn_ctx);
/* The one resolution of a preset name: 0 with *out borrowed (valid until p is freed) or NULL
 * when no preset has that name; -1 with err when a user preset could not be read. */
int codec_presets_resolve(const codec_presets_t *p, preset_kind_t kind, const char *name,
                          const json_t **out, fathom_error_t *err);
/* What decoders call: when *v is a string, replaces it with the preset of kind it names
 * (codec_presets_resolve); -1 with FATHOM_E_INVALID_FIELD naming `path` when there is none. A
 * non-string *v is left as it is. */
int codec_presets_deref(const codec_presets_t *p, preset_kind_t kind, const json_t **v,
                        const char *path, fathom_error_t *err);
/* The error for a name no preset of kind has: FATHOM_E_INVALID_FIELD naming `path`; when a
 * built-in differs from name only in letter case ("llama3-8b" for "llama3-8B"), that name as the
 * likely one, else the built-ins whose names contain it ("h100": h100_80g_nvl8, h100_nvl, …),
 * sorted, eight at most. Always -1. */
int codec_presets_unknown(const codec_presets_t *p, preset_kind_t kind, const char *name,
                          const char *path, fathom_error_t *err);
/* Whether name is a built-in preset of kind. */
int codec_presets_is_builtin(const codec_presets_t *p, preset_kind_t kind, const char *name);
/* Whether any name resolved through p so far was a user preset. */
int codec_presets_used_user(const codec_presets_t *p);

/* Checks a user preset name: [a-z0-9][a-z0-9_.-]{0,63} (underscores allowed, as the built-ins
 * have them). -1 with FATHOM_E_INVALID_FIELD naming `field` otherwise. */
#define CODEC_PRESET_NAME_MAX 64
int codec_preset_name_check(const char *name, const char *field, fathom_error_t *err);

/* The measured training runs of DIR/validation/measured_runs.json (an array, borrowed), or NULL
 * when the directory has none. */
const json_t *codec_presets_measured(const codec_presets_t *p);
/* The PyTorch-native runs of DIR/validation/pytorch_runs.json (same format), or NULL. */
const json_t *codec_presets_pytorch_runs(const codec_presets_t *p);

/* The path of DIR/validation/<file> of the directory the registry was loaded from (0), or -1
 * for a registry not loaded from a directory (or a path longer than cap). Files read on demand
 * (inference_runs.json, 2.4 MB) are not kept in every process that loads presets. */
int codec_presets_validation_path(const codec_presets_t *p, const char *file, char *out,
                                  size_t cap);

/* {"models":[{"name","comment","alias_of"?}…],"systems":[…]} sorted by name (new reference);
 * "alias_of" names the preset an alias stands for. */
json_t *codec_presets_list(const codec_presets_t *p);

/* "models" / "systems": the directory and URL segment of a kind. */
const char *codec_preset_kind_name(preset_kind_t kind);

#endif

/* presets.h — named model and system presets, loaded once from a directory of JSON files.
 *
 * Layout: DIR/models/<name>.json and DIR/systems/<name>.json, each holding the object itself.
 * A top-level "$comment" member (a note on the source of the numbers) is kept for listings and
 * stripped from the object decoders see. The registry is immutable after loading, so the
 * server's threads share it without locks. */
#ifndef FATHOM_PRESETS_H
#define FATHOM_PRESETS_H

#include <jansson.h>

#include "fathom_error.h"

typedef enum { PRESET_MODEL = 0, PRESET_SYSTEM = 1, PRESET__KINDS } preset_kind_t;

typedef struct codec_presets codec_presets_t;

/* Loads every preset under dir. NULL with err filled when dir or a file cannot be read or parsed. */
codec_presets_t *codec_presets_load(const char *dir, fathom_error_t *err);
/* An empty registry (for tests and programs that take no presets). */
codec_presets_t *codec_presets_empty(void);
void codec_presets_free(codec_presets_t *p);

/* The preset object (borrowed, without "$comment"), or NULL if there is none by that name. */
const json_t *codec_presets_find(const codec_presets_t *p, preset_kind_t kind, const char *name);

/* The measured training runs of DIR/validation/measured_runs.json (an array, borrowed), or NULL
 * when the directory has none. */
const json_t *codec_presets_measured(const codec_presets_t *p);

/* {"models":[{"name","comment"}…],"systems":[…]} sorted by name (new reference). */
json_t *codec_presets_list(const codec_presets_t *p);

/* "models" / "systems": the directory and URL segment of a kind. */
const char *codec_preset_kind_name(preset_kind_t kind);

#endif

/* user_presets.c — the per-request preset registry: the built-ins plus the user presets of the
 * store (see user_presets.h). */
#include "user_presets.h"

/* The overlay's lookup (codec_preset_lookup_fn): user presets are systems only today, so a model
 * name that is not a built-in costs no read. */
static int lookup(void *ctx, preset_kind_t kind, const char *name, json_t **out,
                  fathom_error_t *err)
{
    server_t *srv = ctx;
    *out = NULL;
    if (kind != PRESET_SYSTEM || codec_preset_name_check(name, NULL, NULL))
        return 0;
    store_preset_t row;
    fathom_error_t e;
    fathom_error_clear(&e);
    if (store_preset_get(srv->store, codec_preset_kind_name(kind), name, &row, &e)) {
        if (e.code == FATHOM_E_NOT_FOUND)
            return 0;
        *err = e;
        return -1;
    }
    json_error_t jerr;
    *out = json_loads(row.body, 0, &jerr);
    store_preset_close(&row);
    if (!*out)
        return fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "stored preset %s is not JSON",
                                name);
    return 0;
}

codec_presets_t *user_presets_overlay(server_t *srv)
{
    return codec_presets_overlay(srv->presets, lookup, srv);
}

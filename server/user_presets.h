/* user_presets.h — the presets a request sees: the built-ins plus the user presets of the store,
 * through which every decoder resolves a name.
 *
 * DESIGN. User presets live in the store (store_preset_*), never in this process: several
 * fathomd sharing one database see each other's PUTs at once, because a request that names a
 * user preset reads its row (one row by key) through the overlay made for that request, and the
 * overlay dies with the request. (The endpoints that store and list them are presets_http.c.) */
#ifndef FATHOM_USER_PRESETS_H
#define FATHOM_USER_PRESETS_H

#include "presets.h"
#include "server.h"

/* A per-request preset registry (presets.h), reading the store when a request names a preset
 * that is not built in. Free with codec_presets_free; NULL when out of memory. */
codec_presets_t *user_presets_overlay(server_t *srv);

#endif

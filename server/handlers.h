/* handlers.h — request handlers shared across server files. */
#ifndef FATHOM_HANDLERS_H
#define FATHOM_HANDLERS_H

#include "endpoint.h"
#include "http.h"

/* POST on an estimate endpoint: cached by config hash. */
enum MHD_Result handlers_estimate(http_req_t *r, const codec_endpoint_t *ep);
/* The preset endpoints (presets_http.c): the list, one preset (tail "<kind>/<name>"), and a user
 * system preset's PUT and DELETE (tail "<name>"). */
enum MHD_Result handlers_presets_list(http_req_t *r, const char *tail);
enum MHD_Result handlers_preset_get(http_req_t *r, const char *tail);
enum MHD_Result handlers_preset_put(http_req_t *r, const char *name);
enum MHD_Result handlers_preset_delete(http_req_t *r, const char *name);
/* GET of a file under the static directory; 404 JSON when there is none. */
enum MHD_Result handlers_static(http_req_t *r);

#endif

/* handlers.h — request handlers shared across server files. */
#ifndef FATHOM_HANDLERS_H
#define FATHOM_HANDLERS_H

#include "endpoint.h"
#include "server.h"

/* 0 when the request's Content-Type may carry JSON, -1 otherwise. */
int handlers_check_json_content_type(http_req_t *r);
/* The request body as JSON, or NULL with err (415, 400, 413). */
json_t *handlers_parse_json_body(http_req_t *r, fathom_error_t *err);
/* POST on an estimate endpoint: cached by config hash. */
enum MHD_Result handlers_estimate(http_req_t *r, const codec_endpoint_t *ep);
/* GET of a file under the static directory; 404 JSON when there is none. */
enum MHD_Result handlers_static(http_req_t *r);

#endif

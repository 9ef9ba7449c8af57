/* validation_http.c — GET /v1/validation: Calculon's validation against the Megatron
 * sequence-parallelism paper (Figure 1, Figure 7, Table 5), computed by the llm codec. */
#include "llm_codec.h"
#include "routes_extra.h"

enum MHD_Result routes_validation(http_req_t *r, const char *tail)
{
    (void)tail;
    fathom_error_t err;
    fathom_error_clear(&err);
    json_t *report = codec_llm_validation_report(r->srv->presets, &err);
    if (!report)
        return http_send_error(r, &err, NULL);
    return http_send_json(r, 200, report, NULL);
}

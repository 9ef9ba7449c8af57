/* validation_http.c — GET /v1/validation: Calculon's validation against the Megatron
 * sequence-parallelism paper (Figure 1, Figure 7, Table 5) and the measured training runs,
 * computed by the llm codec; with ?inference=true also the serving model against measured
 * serving throughput (the serving codec; about a second of work, so only when asked, as
 * `fathom validate --inference` asks for it). */
#include <string.h>

#include "llm_codec.h"
#include "routes_extra.h"
#ifdef FATHOM_HAVE_SERVING
#include "serving_codec.h"
#endif

const char *const routes_validation_query[] = {"inference", NULL};

enum MHD_Result routes_validation(http_req_t *r, const char *tail)
{
    (void)tail;
    fathom_error_t err;
    fathom_error_clear(&err);
    const char *inference = http_query(r, "inference");
    if (inference && strcmp(inference, "true") != 0 && strcmp(inference, "false") != 0) {
        fathom_error_set(&err, FATHOM_E_INVALID_FIELD, "inference", "must be true or false");
        return http_send_error(r, &err, NULL);
    }
    json_t *report = codec_llm_validation_report(r->srv->presets, &err);
    if (!report)
        return http_send_error(r, &err, NULL);
#ifdef FATHOM_HAVE_SERVING
    if (inference && strcmp(inference, "true") == 0) {
        json_t *inf = codec_serving_validation_report(r->srv->presets, &err);
        if (!inf || json_object_set_new(report, "inference", inf)) {
            json_decref(report);
            if (err.code == FATHOM_E_OK)
                fathom_error_set(&err, FATHOM_E_INTERNAL, NULL, "out of memory");
            return http_send_error(r, &err, NULL);
        }
    }
#endif
    return http_send_json(r, 200, report, NULL);
}

/* fathom_error.h — the one table of Fathom's error codes, and the structured error that every
 * layer (core, codec, server) fills in when it refuses something.
 *
 * The table generates the enum, the wire name and the HTTP status. Codes are only ever appended,
 * never renumbered: clients and stored sweeps may hold them. The HTTP status is plain data here;
 * core never speaks HTTP, it only says which class of refusal it is. */
#ifndef FATHOM_ERROR_H
#define FATHOM_ERROR_H

#include <stdarg.h>

/*      enum suffix             wire name                 HTTP status */
#define FATHOM_ERROR_MAP(XX)                                           \
    XX(OK,                      "ok",                       200)       \
    XX(INVALID_JSON,            "invalid_json",             400)       \
    XX(INVALID_FIELD,           "invalid_field",            422)       \
    XX(INFEASIBLE_EXECUTION,    "infeasible_execution",     422)       \
    XX(LIMIT_EXCEEDED,          "limit_exceeded",           422)       \
    XX(BODY_TOO_LARGE,          "body_too_large",           413)       \
    XX(NOT_FOUND,               "not_found",                404)       \
    XX(METHOD_NOT_ALLOWED,      "method_not_allowed",       405)       \
    XX(UNSUPPORTED_MEDIA_TYPE,  "unsupported_media_type",   415)       \
    XX(QUEUE_FULL,              "queue_full",               429)       \
    XX(UNAUTHORIZED,            "unauthorized",             401)       \
    XX(UNAVAILABLE,             "unavailable",              503)       \
    XX(INTERNAL,                "internal",                 500)       \
    XX(NO_CONVERGENCE,          "no_convergence",           422)       \
    XX(CONFLICT,                "conflict",                 409)       \
    XX(CANCELLED,               "cancelled",                409)       \
    XX(BAD_REQUEST,             "bad_request",              400)

typedef enum {
#define XX(name, wire, status) FATHOM_E_##name,
    FATHOM_ERROR_MAP(XX)
#undef XX
    FATHOM_E__COUNT
} fathom_code_t;

/* Sizes are bounded so an error can live on the stack and be filled from any layer without
 * allocation (an allocation failure must itself be reportable). */
#define FATHOM_ERROR_FIELD_MAX 256
#define FATHOM_ERROR_MESSAGE_MAX 512

typedef struct {
    fathom_code_t code;
    char field[FATHOM_ERROR_FIELD_MAX];     /* JSON path of the offending field, "" if none */
    char message[FATHOM_ERROR_MESSAGE_MAX]; /* human-readable reason */
    int line, column;                       /* position in the body, for invalid_json only */
} fathom_error_t;

/* Resets err to FATHOM_E_OK with empty field and message. */
void fathom_error_clear(fathom_error_t *err);

/* Sets code, field (may be NULL) and a printf-style message; returns -1 so a check can be
 * written as `return fathom_error_set(...)`. err may be NULL (the error is then dropped). */
int fathom_error_set(fathom_error_t *err, fathom_code_t code, const char *field, const char *fmt,
                     ...) __attribute__((format(printf, 4, 5)));

int fathom_error_vset(fathom_error_t *err, fathom_code_t code, const char *field, const char *fmt,
                      va_list ap) __attribute__((format(printf, 4, 0)));

/* The wire name ("invalid_field") and HTTP status (422) of a code. */
const char *fathom_code_name(fathom_code_t code);
int fathom_code_http_status(fathom_code_t code);

#endif

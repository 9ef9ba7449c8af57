/* fathom_error.c — names, statuses and setters for the error table in fathom_error.h. */
#include "fathom_error.h"

#include <stdio.h>
#include <string.h>

static const char *const code_names[] = {
#define XX(name, wire, status) wire,
    FATHOM_ERROR_MAP(XX)
#undef XX
};

static const int code_statuses[] = {
#define XX(name, wire, status) status,
    FATHOM_ERROR_MAP(XX)
#undef XX
};

void fathom_error_clear(fathom_error_t *err)
{
    if (!err)
        return;
    err->code = FATHOM_E_OK;
    err->field[0] = '\0';
    err->message[0] = '\0';
    err->line = err->column = 0;
}

int fathom_error_vset(fathom_error_t *err, fathom_code_t code, const char *field, const char *fmt,
                      va_list ap)
{
    if (!err)
        return -1;
    err->code = code;
    snprintf(err->field, sizeof err->field, "%s", field ? field : "");
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    err->line = err->column = 0;
    return -1;
}

int fathom_error_set(fathom_error_t *err, fathom_code_t code, const char *field, const char *fmt,
                     ...)
{
    va_list ap;
    va_start(ap, fmt);
    fathom_error_vset(err, code, field, fmt, ap);
    va_end(ap);
    return -1;
}

const char *fathom_code_name(fathom_code_t code)
{
    if ((unsigned)code >= FATHOM_E__COUNT)
        return "internal";
    return code_names[code];
}

int fathom_code_http_status(fathom_code_t code)
{
    if ((unsigned)code >= FATHOM_E__COUNT)
        return 500;
    return code_statuses[code];
}

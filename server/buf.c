/* buf.c — the capped growable buffer (see buf.h). */
#include "buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void buf_init(buf_t *b, size_t max)
{
    b->data = NULL;
    b->len = b->cap = 0;
    b->max = max;
}

int buf_append(buf_t *b, const void *p, size_t n)
{
    if (n > b->max - b->len)
        return BUF_TOO_BIG;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        if (cap > b->max + 1)
            cap = b->max + 1;
        char *grown = realloc(b->data, cap);
        if (!grown)
            return BUF_NO_MEMORY;
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int buf_appends(buf_t *b, const char *s)
{
    return buf_append(b, s, strlen(s));
}

int buf_appendv(buf_t *b, const char *fmt, va_list ap)
{
    char small[256];
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    int rc;
    if (n < 0) {
        rc = BUF_NO_MEMORY;
    } else if ((size_t)n < sizeof small) {
        rc = buf_append(b, small, (size_t)n);
    } else {
        char *big = malloc((size_t)n + 1);
        rc = BUF_NO_MEMORY;
        if (big) {
            vsnprintf(big, (size_t)n + 1, fmt, again);
            rc = buf_append(b, big, (size_t)n);
            free(big);
        }
    }
    va_end(again);
    return rc;
}

int buf_appendf(buf_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = buf_appendv(b, fmt, ap);
    va_end(ap);
    return rc;
}

void buf_consume(buf_t *b, size_t n)
{
    if (n >= b->len) {
        buf_reset(b);
        return;
    }
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
    b->data[b->len] = '\0';
}

void buf_reset(buf_t *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

void buf_free(buf_t *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

char *buf_take(buf_t *b)
{
    char *out = b->data ? b->data : strdup("");
    b->data = NULL;
    b->len = b->cap = 0;
    return out;
}

/* buf.h — the one growable byte buffer of the server, with a hard cap given at creation (curl's
 * dynbuf). Request bodies, the metrics text and streamed downloads all use it, so no buffer can
 * grow past what its owner decided, and going past the cap is its own error, distinct from
 * running out of memory. The data is always NUL-terminated (the NUL is not counted in len). */
#ifndef FATHOM_BUF_H
#define FATHOM_BUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct {
    char *data; /* NULL until the first append */
    size_t len, cap, max;
} buf_t;

/* The result of an append that did not fit. */
#define BUF_TOO_BIG (-2)
#define BUF_NO_MEMORY (-1)

/* Starts an empty buffer that will never hold more than max bytes (plus the NUL). */
void buf_init(buf_t *b, size_t max);
/* Appends n bytes: 0, BUF_TOO_BIG (nothing appended) or BUF_NO_MEMORY. */
int buf_append(buf_t *b, const void *p, size_t n);
int buf_appends(buf_t *b, const char *s);
int buf_appendf(buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int buf_appendv(buf_t *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* Drops the first n bytes (what was sent), keeping the rest and the allocation. */
void buf_consume(buf_t *b, size_t n);
/* Empties the buffer, keeping its allocation. */
void buf_reset(buf_t *b);
/* Frees the data; the buffer is empty again (same cap). */
void buf_free(buf_t *b);
/* Hands the data over (the caller frees it; "" as a malloc'd string when empty, NULL when that
 * allocation fails); the buffer is empty again. */
char *buf_take(buf_t *b);

#endif

/* etag.h — entity tags of answers (ETag / If-None-Match): a hash of the bytes that are the whole
 * state of an answer, so equal bytes give equal tags and a client may revalidate for a 304. */
#ifndef FATHOM_ETAG_H
#define FATHOM_ETAG_H

#include <stddef.h>

#define ETAG_LEN 18

/* A strong tag: "\"" + FNV-1a 64 of data in hex + "\"" (ETAG_LEN chars and a NUL). */
void etag_of(char out[ETAG_LEN + 1], const char *data, size_t len);

#endif

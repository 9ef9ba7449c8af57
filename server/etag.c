/* etag.c — entity tags of answers (see etag.h). */
#include "etag.h"

#include <stdint.h>
#include <stdio.h>

void etag_of(char out[ETAG_LEN + 1], const char *data, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a, 64 bits */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)data[i]) * 0x100000001b3ULL;
    snprintf(out, ETAG_LEN + 1, "\"%016llx\"", (unsigned long long)h);
}

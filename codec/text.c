/* text.c — free-text matching shared by the decoders (text.h). */
#include "text.h"

#include <string.h>
#include <strings.h>

bool codec_contains_nocase(const char *text, const char *part)
{
    const size_t n = strlen(part);
    for (const char *p = text; *p; p++)
        if (strncasecmp(p, part, n) == 0)
            return true;
    return false;
}

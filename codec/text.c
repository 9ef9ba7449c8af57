/* text.c — free-text matching shared by the decoders, and reports printed into strings
 * (text.h). */
#include "text.h"

#include <stdlib.h>
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

char *codec_print_to_string(void (*print)(FILE *f, const json_t *report), const json_t *report)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    print(f, report);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

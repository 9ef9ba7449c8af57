/* accept.c — content negotiation on the Accept header (accept.h). RFC 9110 §12.5.1: a list of
 * media ranges, each optionally weighted ";q=" from 0 to 1 with at most three decimals; §12.4.2
 * for the weight's syntax. Parameters other than q are read past: no answer of Fathom's varies
 * by them. A header that does not parse is ignored (the default form), as the RFC permits. */
#include "accept.h"

#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

#define OWS(p)                                                                                     \
    while (*(p) == ' ' || *(p) == '\t')                                                            \
    (p)++

/* How well a range matches an offer: 3 the same type, 2 the type's wildcard, 1 match-all, 0 no. */
static int specificity(const char *range, size_t len, const char *offer)
{
    const char *slash = memchr(range, '/', len);
    if (!slash)
        return 0;
    const size_t major = (size_t)(slash - range), minor = len - major - 1;
    if (major == 1 && range[0] == '*' && minor == 1 && slash[1] == '*')
        return 1;
    const char *offer_slash = strchr(offer, '/');
    if ((size_t)(offer_slash - offer) != major || strncasecmp(range, offer, major) != 0)
        return 0;
    if (minor == 1 && slash[1] == '*')
        return 2;
    return strlen(offer_slash + 1) == minor && strncasecmp(slash + 1, offer_slash + 1, minor) == 0
               ? 3
               : 0;
}

/* A weight, "0", "0.5", "1.000" (§12.4.2), in thousandths; -1 when it is not one. */
static int weight(const char *p, size_t len)
{
    if (len == 0 || (p[0] != '0' && p[0] != '1') || (len > 1 && p[1] != '.') || len > 5)
        return -1;
    int w = (p[0] - '0') * 1000, scale = 100;
    for (size_t i = 2; i < len; i++, scale /= 10) {
        if (p[i] < '0' || p[i] > '9' || (p[0] == '1' && p[i] != '0'))
            return -1;
        w += (p[i] - '0') * scale;
    }
    return w;
}

typedef struct {
    int weight;      /* thousandths */
    int specificity; /* of the range that set the weight; 0: none matched yet */
    int position;    /* that range's place in the header */
} offer_score_t;

/* Reads one range's parameters (from just after its type to its comma or the end): its weight
 * in thousandths, 1000 without a q. -1 when a parameter does not parse. *end is where it stopped. */
static int range_weight(const char *p, const char **end)
{
    int w = 1000;
    while (*p == ';') {
        p++;
        OWS(p);
        const char *name = p;
        while (*p && *p != '=' && *p != ';' && *p != ',')
            p++;
        if (*p != '=')
            return -1;
        const size_t name_len = (size_t)(p - name);
        const char *value = ++p;
        if (*p == '"') { /* a quoted-string value (another parameter's): to its closing quote */
            for (p++; *p && *p != '"'; p++)
                if (*p == '\\' && p[1])
                    p++;
            if (*p++ != '"')
                return -1;
        } else {
            while (*p && *p != ';' && *p != ',' && *p != ' ' && *p != '\t')
                p++;
        }
        if (name_len == 1 && (name[0] == 'q' || name[0] == 'Q') &&
            (w = weight(value, (size_t)(p - value))) < 0)
            return -1;
        OWS(p);
    }
    *end = p;
    return w;
}

int accept_choose(const char *accept, const char *const offers[], int n)
{
    offer_score_t score[8] = {{0, 0, 0}};
    if (!accept || n < 1 || n > (int)(sizeof score / sizeof score[0]))
        return 0;
    const char *p = accept;
    for (int position = 0; *p; position++) {
        OWS(p);
        const char *range = p;
        while (*p && *p != ';' && *p != ',' && *p != ' ' && *p != '\t')
            p++;
        const size_t len = (size_t)(p - range);
        OWS(p);
        const int w = range_weight(p, &p);
        if (w < 0 || (*p && *p != ','))
            return 0;
        if (*p == ',')
            p++;
        for (int i = 0; len && i < n; i++) {
            const int s = specificity(range, len, offers[i]);
            if (s > score[i].specificity)
                score[i] = (offer_score_t){w, s, position};
        }
    }
    int best = -1;
    for (int i = 0; i < n; i++) {
        const offer_score_t *c = &score[i];
        if (c->specificity == 0 || c->weight == 0)
            continue;
        const offer_score_t *b = best < 0 ? NULL : &score[best];
        const bool named = c->specificity == 3, best_named = b && b->specificity == 3;
        if (!b || c->weight > b->weight ||
            (c->weight == b->weight && named && !best_named) ||
            (c->weight == b->weight && named == best_named && c->position < b->position))
            best = i;
    }
    return best < 0 ? 0 : best;
}

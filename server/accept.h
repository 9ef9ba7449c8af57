/* accept.h — which of the media types an answer can take a client asked for: the Accept header
 * read as RFC 9110 §12.5.1 defines it (media ranges, wildcards, weights). */
#ifndef FATHOM_ACCEPT_H
#define FATHOM_ACCEPT_H

/* The index in offers[0..n) of the type the Accept header `accept` prefers, or 0 (the default
 * form) when it is NULL, empty, does not parse, or accepts none of them.
 *
 * Each offer (a lowercase "type/subtype") gets the weight of the most specific range that
 * matches it (the type itself, then its type's wildcard, then the match-all wildcard), 1 when
 * the range has no q; q=0 refuses it. The highest weight wins; between equal weights, an offer
 * the header names before one only a wildcard reaches (so a browser's match-all keeps the
 * default), then the one named earlier in the header, then the earlier offer. */
int accept_choose(const char *accept, const char *const offers[], int n);

#endif

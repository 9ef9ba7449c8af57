/* text.h — matching words in free text, letter case aside: the notes of measured runs and the
 * names of presets are written by people, so "MXFP8" holds "fp8" and "H100" names "h100_sxm";
 * and a report printed as text into a string (the CLI's tables, GET /v1/validation's). */
#ifndef FATHOM_CODEC_TEXT_H
#define FATHOM_CODEC_TEXT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

/* Whether `part` occurs anywhere in `text`, letter case aside ("fp8" in "MXFP8"). */
bool codec_contains_nocase(const char *text, const char *part);

/* What print writes of report, as a string the caller frees; NULL when memory ran out. */
char *codec_print_to_string(void (*print)(FILE *f, const json_t *report), const json_t *report);

#endif

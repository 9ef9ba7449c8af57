/* text.h — matching words in free text, letter case aside: the notes of measured runs and the
 * names of presets are written by people, so "MXFP8" holds "fp8" and "H100" names "h100_sxm". */
#ifndef FATHOM_CODEC_TEXT_H
#define FATHOM_CODEC_TEXT_H

#include <stdbool.h>

/* Whether `part` occurs anywhere in `text`, letter case aside ("fp8" in "MXFP8"). */
bool codec_contains_nocase(const char *text, const char *part);

#endif

/* main.c — fathom CLI entry point (being written). */
#include <stdio.h>
int main(void)
{
    fprintf(stderr, "fathom: not yet\n");
    return 1;
}

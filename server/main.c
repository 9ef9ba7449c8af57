/* main.c — fathomd entry point (being written). */
#include <stdio.h>
int main(void)
{
    fprintf(stderr, "fathomd: not yet\n");
    return 1;
}

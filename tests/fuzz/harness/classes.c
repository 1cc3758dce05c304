/* classes.c — fuzz harness: the class-names file, JSON list or one name a
 * line (metrics/labels.c). */
#include "fuzz/fuzz.h"
#include "metrics/labels.h"

FUZZ_READER(classes)
{
    classes_t c;
    if (classes_parse((const char *)d, n, "classes", &c, e)) return -1;
    classes_free(&c);
    return 0;
}

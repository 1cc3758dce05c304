/* labels.c — fuzz harness: the classification labels file, JSON or CSV
 * (metrics/labels.c), and a lookup of the first key. */
#include "fuzz/fuzz.h"
#include "metrics/labels.h"

FUZZ_READER(labels)
{
    labels_t l;
    if (labels_parse((const char *)d, n, "labels", &l, e)) return -1;
    (void)labels_find(&l, l.v[0].key);
    labels_free(&l);
    return 0;
}

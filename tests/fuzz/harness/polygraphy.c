/* polygraphy.c — fuzz harness: the Polygraphy JSON reader (io/polygraphy.c):
 * the document, then every array of every iteration. */
#include "fuzz/fuzz.h"
#include "io/polygraphy.h"

FUZZ_READER(polygraphy)
{
    poly_doc_t doc;
    if (poly_open(fuzz_file("results.json", d, n), NULL, NULL, &doc, e)) return -1;
    int rc = 0;
    for (int i = 0; i < doc.niters && !rc; i++)
        for (int k = 0; k < doc.it[i].n && !rc; k++) {
            tensor_t t;
            if (!(rc = poly_load(&doc, i, k, &t, e))) tensor_free_data(&t);
        }
    poly_close(&doc);
    return rc;
}

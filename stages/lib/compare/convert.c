/* convert.c — any readable side to Polygraphy JSON (convert.h). */
#include "compare/convert.h"
#include "compare/source.h"

int convert_to_polygraphy(const char *src, const char *out, poly_kind_t kind, const char *runner, perr_t *e)
{
    cmp_side_t s;
    if (side_open(src, &s, e)) return -1;
    poly_writer_t w;
    if (poly_writer_open(&w, out, kind, runner, e)) { side_free(&s); return -1; }
    int rc = 0;
    for (int i = 0; i < s.n && !rc; i++) {
        cmp_set_t set;
        if ((rc = set_open(&s, i, &set, e))) break;
        poly_writer_begin(&w);
        for (int k = 0; k < set.n && !rc; k++) {
            tensor_t t;
            if ((rc = set_load(&set, k, &t, e))) break;
            rc = poly_writer_add(&w, set.ent[k].name, &t, e);
            tensor_free_data(&t);
        }
        poly_writer_end(&w);
        set_close(&set);
    }
    if (rc) poly_writer_abort(&w);
    else rc = poly_writer_close(&w, e);
    side_free(&s);
    return rc;
}

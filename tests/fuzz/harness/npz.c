/* npz.c — fuzz harness: the .npz (zip) reader (io/npz.c), every member. */
#include "fuzz/fuzz.h"
#include "io/npz.h"

FUZZ_READER(npz)
{
    npz_t z;
    if (npz_open_mem(d, n, "fuzz.npz", &z, e)) return -1;
    int rc = 0;
    for (int i = 0; i < z.n && !rc; i++) {
        tensor_t t;
        if (!(rc = npz_load(&z, i, &t, e))) tensor_free_data(&t);
    }
    npz_close(&z);
    return rc;
}

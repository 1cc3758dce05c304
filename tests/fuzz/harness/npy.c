/* npy.c — fuzz harness: the .npy parser (io/npy.c). */
#include "fuzz/fuzz.h"
#include "io/npy.h"

FUZZ_READER(npy)
{
    tensor_t t;
    if (npy_parse(d, n, "fuzz.npy", &t, e)) return -1;
    tensor_free_data(&t);
    return 0;
}

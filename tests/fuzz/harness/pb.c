/* pb.c — fuzz harness: the TensorProto .pb reader (io/tensorproto.c),
 * external data included (resolved against the scratch folder). */
#include <stdlib.h>
#include "fuzz/fuzz.h"
#include "io/tensorproto.h"

FUZZ_READER(pb)
{
    tensor_t t;
    char *name = NULL;
    if (pb_read(fuzz_file("input_0.pb", d, n), &t, &name, e)) return -1;
    tensor_free_data(&t);
    free(name);
    return 0;
}

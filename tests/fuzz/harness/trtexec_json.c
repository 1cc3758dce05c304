/* trtexec_json.c — fuzz harness: trtexec's --exportOutput JSON reader
 * (io/trtexec.c). */
#include "fuzz/fuzz.h"
#include "io/trtexec.h"

FUZZ_READER(trtexec_json)
{
    tensor_set_t s;
    if (trtexec_read_json(fuzz_file("output.json", d, n), &s, e)) return -1;
    tensorset_free(&s);
    return 0;
}

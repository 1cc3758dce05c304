/* timing.c — fuzz harness: a validation's timing log (build/NAME/timing.jsonl)
 * as report --timing reads and sums it (util/timing.c). */
#include "fuzz/fuzz.h"
#include "util/timing.h"

FUZZ_READER(timing)
{
    timing_t t;
    if (timing_read(fuzz_file("timing.jsonl", d, n), &t, e)) return -1;
    json_decref(timing_json(&t));
    timing_free(&t);
    return 0;
}

/* reduce_plan.c — fuzz harness: a validation plan's cell as reduce reads it
 * (stages/reduce/plan.c): the first line is the cell's name, the rest
 * plan.json. */
#include "fuzz/fuzz.h"
#include "reduce/reduce.h"

FUZZ_READER(reduce_plan)
{
    char cell[256];
    const uint8_t *rest;
    size_t nr;
    fuzz_split_line(d, n, cell, sizeof cell, &rest, &nr);
    rd_cell_t c;
    int rc = rd_cell_from_plan(fuzz_file("plan.json", rest, nr), cell, &c, e);
    rd_cell_free(&c);
    return rc;
}

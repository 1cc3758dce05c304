/* plan.c — fuzz harness: plan output (plan.json) as `report` reads and
 * judges it (stages/report/load.c), all cells. */
#include "fuzz/fuzz.h"
#include "report/report.h"

FUZZ_READER(plan)
{
    report_t r;
    int rc = report_load(&r, fuzz_file("plan.json", d, n), NULL, e);
    if (!rc) report_evaluate(&r);
    report_free(&r);
    return rc;
}

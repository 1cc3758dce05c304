/* report — turns a validation's results into reports for people and CI.
 *
 *   report --plan build/NAME/plan.json [--cells "V__P ..."] [--timing LOG] -o reports/NAME
 *   report --verdict reports/NAME/results.json
 *   report --timing build/NAME/timing.jsonl
 *
 * Writes OUT/index.html (self-contained, inline SVG charts), OUT/summary.md
 * (a CI job summary), OUT/junit.xml (one testcase per check) and
 * OUT/results.json (last, so its presence means the report is complete).
 * Failing checks are results, not errors: report exits 0 once the files are
 * written; --verdict prints the verdict and exits 1 on FAIL. With --timing the
 * reports carry the run's time by stage (the log `timed` appends to); alone,
 * --timing prints that table.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include "report.h"
#include "util/fsutil.h"
#include "version.h"

static const char usage[] =
    "usage: report --plan PLAN.json [--cells \"V__P ...\"] [--timing LOG] -o OUTDIR\n"
    "       report --verdict RESULTS.json\n"
    "       report --timing LOG\n"
    "  -p, --plan FILE     build/NAME/plan.json, written by plan\n"
    "      --cells LIST    the cells to report (default: all in the plan)\n"
    "  -o, --output DIR    index.html, summary.md, junit.xml, results.json\n"
    "      --verdict FILE  print a results.json's verdict; exit 1 on FAIL\n"
    "      --timing LOG    the run's timing log (build/NAME/timing.jsonl): its time by\n"
    "                      stage goes into the reports, or is printed when alone\n"
    "  -h, --help | -V, --version\n"
    "Exit: 0 written (or PASS), 1 FAIL (--verdict), 2 bad input, 3 internal error.\n";

/* The table `make validate` ends with. */
static int print_timing_log(const char *path)
{
    perr_t e = {0};
    timing_t t;
    if (timing_read(path, &t, &e)) perr_die("report", &e);
    print_timing(stdout, &t);
    timing_free(&t);
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"plan", required_argument, 0, 'p'}, {"cells", required_argument, 0, 'c'},
        {"output", required_argument, 0, 'o'}, {"verdict", required_argument, 0, 'v'},
        {"timing", required_argument, 0, 't'},
        {"help", no_argument, 0, 'h'}, {"version", no_argument, 0, 'V'}, {0, 0, 0, 0},
    };
    const char *plan = NULL, *cells = NULL, *out = NULL, *verdict = NULL, *timing = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "p:o:hV", longopts, NULL)) != -1) {
        switch (c) {
        case 'p': plan = optarg; break;
        case 'c': cells = optarg; break;
        case 'o': out = optarg; break;
        case 'v': verdict = optarg; break;
        case 't': timing = optarg; break;
        case 'h': fputs(usage, stdout); return 0;
        case 'V': puts("report (parity) " PARITY_VERSION); return 0;
        default: die_usage("report", "unknown option");
        }
    }
    if (verdict) return print_verdict(verdict);
    perr_t e = {0};
    if (timing && !plan && !out && optind == argc) return print_timing_log(timing);
    if (!plan || !out || optind != argc) die_usage("report", "expected --plan FILE -o DIR");
    report_t r;
    if (report_load(&r, plan, cells, &e) || (timing && timing_read(timing, &r.timing, &e))) perr_die("report", &e);
    report_evaluate(&r);
    char *p[4];
    const char *names[4] = {"index.html", "summary.md", "junit.xml", "results.json"};
    for (int i = 0; i < 4; i++) p[i] = path_join(out, names[i]);
    if (mkdir_p(out, &e) || write_html(&r, p[0], &e) || write_summary_md(&r, p[1], &e) || write_junit(&r, p[2], &e) ||
        write_results_json(&r, p[3], &e))
        perr_die("report", &e);
    for (int i = 0; i < 4; i++) free(p[i]);
    report_free(&r);
    return 0;
}

/* plan — turns a validation config into a make graph.
 *
 *   plan configs/models/NAME.yaml -o build/NAME
 *
 * Reads and validates the YAML (every name and path against a safe
 * alphabet: a config can never run a command), then writes
 * build/NAME/plan.mk, which the Makefile includes so each matrix cell
 * (preprocessing variant x precision) is an ordinary chain of targets, and
 * build/NAME/plan.json, which `report` reads. The config schema is in
 * docs/config.md.
 */
#include <getopt.h>
#include <stdio.h>
#include "emit.h"
#include "version.h"

static const char usage[] =
    "usage: plan CONFIG.yaml -o DIR\n"
    "  -o, --output DIR   where plan.mk, plan.json and the per-step argument files go\n"
    "      --schema       print every key a model config may hold (a JSON array of map\n"
    "                     keys, \"*\" any key, \"[]\" a list item), a tab, what it holds\n"
    "  -h, --help | -V, --version\n"
    "Exit: 0 written, 2 bad config (one line: file:line:col and the problem), 3 internal error.\n";

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"output", required_argument, 0, 'o'}, {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, 'V'}, {"schema", no_argument, 0, 'S'}, {0, 0, 0, 0},
    };
    const char *out = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "o:hV", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'h': fputs(usage, stdout); return 0;
        case 'V': puts("plan (parity) " PARITY_VERSION); return 0;
        case 'S': model_print_schema(); return 0;
        default: die_usage("plan", "unknown option");
        }
    }
    if (optind != argc - 1 || !out) die_usage("plan", "expected CONFIG.yaml and -o DIR");
    perr_t e = {0};
    model_cfg_t m;
    if (model_load(&m, argv[optind], out, &e) || plan_emit(&m, out, &e)) perr_die("plan", &e);
    model_free(&m);
    return 0;
}

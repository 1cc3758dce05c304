/* main.c — the op-test harness's entry (harness.h): runs every case table
 * at every ISA level, then checks that the tables cover the op table. With
 * arguments, runs only the cases of those ops (and skips the coverage). */
#include <string.h>
#include "harness.h"

static const oc_table_t tables[] = {
    {"tensor", cases_tensor, &cases_tensor_n},
    {"unary", cases_unary, &cases_unary_n},
    {"binary", cases_binary, &cases_binary_n},
    {"cast", cases_cast, &cases_cast_n},
    {"nn", cases_nn, &cases_nn_n},
    {"spatial", cases_spatial, &cases_spatial_n},
    {"reduce", cases_reduce, &cases_reduce_n},
    {"softmax", cases_softmax, &cases_softmax_n},
    {"rows", cases_rows, &cases_rows_n},
};
#define N_TABLES ((int)(sizeof tables / sizeof tables[0]))

static int wanted(const char *op, int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], op)) return 1;
    return argc < 2;
}

int main(int argc, char **argv)
{
    for (int t = 0; t < N_TABLES; t++) {
        oc_diag("cases: %s", tables[t].name);
        for (int k = 0; k < *tables[t].n; k++)
            if (wanted(tables[t].cases[k].op, argc, argv)) oc_run_table(&tables[t].cases[k], 1);
    }
    if (argc < 2) oc_check_coverage(tables, N_TABLES);
    return oc_done();
}

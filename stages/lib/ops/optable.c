/* optable.c — the one table of operators. Each family file exports its rows;
 * they are merged and sorted once by (domain, op, since) so lookups are a
 * binary search and listings come out ordered. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "ops/ops.h"

static op_def_t *table;
static int table_n;
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static int cmp_row(const void *a, const void *b)
{
    const op_def_t *x = a, *y = b;
    int c = strcmp(x->domain, y->domain);
    if (!c) c = strcmp(x->op, y->op);
    if (!c) c = x->since - y->since;
    return c;
}

static void build_table(void)
{
    const struct { const op_def_t *rows; const int *n; } fam[] = {
        {ops_elementwise, &ops_elementwise_count}, {ops_tensor, &ops_tensor_count},
        {ops_nn, &ops_nn_count}, {ops_reduce, &ops_reduce_count}, {ops_misc, &ops_misc_count},
        {ops_sequence, &ops_sequence_count},
    };
    int total = 0;
    for (size_t i = 0; i < sizeof fam / sizeof fam[0]; i++) total += *fam[i].n;
    table = xcalloc(total + 1, sizeof *table);
    for (size_t i = 0; i < sizeof fam / sizeof fam[0]; i++)
        for (int j = 0; j < *fam[i].n; j++)
            if (fam[i].rows[j].op) table[table_n++] = fam[i].rows[j];
    qsort(table, table_n, sizeof *table, cmp_row);
}

const op_def_t *op_table(int *n)
{
    pthread_once(&table_once, build_table);
    *n = table_n;
    return table;
}

static int domain_eq(const char *a, const char *b)
{
    if (!a || !strcmp(a, "ai.onnx")) a = "";
    if (!b || !strcmp(b, "ai.onnx")) b = "";
    return !strcmp(a, b);
}

const op_def_t *op_lookup(const char *domain, const char *op, int opset, const op_def_t **nearest)
{
    int n;
    const op_def_t *t = op_table(&n);
    const op_def_t *best = NULL, *near = NULL;
    for (int i = 0; i < n; i++) {
        if (!domain_eq(t[i].domain, domain) || strcmp(t[i].op, op)) continue;
        near = &t[i];
        if (opset >= t[i].since && (t[i].until == 0 || opset <= t[i].until)) best = &t[i];
    }
    if (nearest) *nearest = near;
    return best;
}

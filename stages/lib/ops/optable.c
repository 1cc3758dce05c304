/* optable.c — the one table of operators. Each family file exports its rows;
 * they are merged and sorted once by (domain, op, since), the default domain
 * spelt "" whether a row says "" or "ai.onnx", so a lookup is a binary search
 * to the op's first row and a walk over its few opset rows, and listings come
 * out ordered. tests/unit/optable.c checks the order and the lookups. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "ops/ops.h"

static op_def_t *table;
static int table_n;
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

/* The default domain has two names (and a NULL from a NodeProto without
 * one): all three sort and match as "". */
static const char *canon_domain(const char *d)
{
    return !d || !strcmp(d, "ai.onnx") ? "" : d;
}

/* Orders a row against the key (domain, op); the order cmp_row sorts by. */
static int cmp_key(const op_def_t *r, const char *domain, const char *op)
{
    int c = strcmp(canon_domain(r->domain), canon_domain(domain));
    return c ? c : strcmp(r->op, op);
}

static int cmp_row(const void *a, const void *b)
{
    const op_def_t *x = a, *y = b;
    int c = cmp_key(x, y->domain, y->op);
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

/* The rows of one op are adjacent, ordered by since: the last that covers
 * OPSET wins (a later row narrows an earlier one), the last of all is the
 * nearest (for "supported from opset N" messages). */
const op_def_t *op_lookup(const char *domain, const char *op, int opset, const op_def_t **nearest)
{
    int n;
    const op_def_t *t = op_table(&n);
    int lo = 0, hi = n;
    while (lo < hi) {   /* the first row not below (domain, op) */
        int mid = lo + (hi - lo) / 2;
        if (cmp_key(&t[mid], domain, op) < 0) lo = mid + 1;
        else hi = mid;
    }
    const op_def_t *best = NULL, *near = NULL;
    for (int i = lo; i < n && !cmp_key(&t[i], domain, op); i++) {
        near = &t[i];
        if (opset >= t[i].since && (t[i].until == 0 || opset <= t[i].until)) best = &t[i];
    }
    if (nearest) *nearest = near;
    return best;
}

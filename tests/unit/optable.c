/* optable.c — checks the operator table (ops/optable.c): it is sorted by
 * (domain, op, since), the default domain compared as "" however a row
 * spells it, which op_lookup's binary search relies on; and for every op in
 * it, at every opset 1..30 and under each name of the default domain,
 * op_lookup answers what a plain scan of the whole table answers (the last
 * row that covers the opset; the last row of the op as the nearest). An op
 * the table lacks, or one that sorts before or after every row, finds nothing. */
#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "ops/ops.h"

static const char *canon(const char *d) { return !d || !strcmp(d, "ai.onnx") ? "" : d; }

static int row_order(const op_def_t *x, const op_def_t *y)
{
    int c = strcmp(canon(x->domain), canon(y->domain));
    if (!c) c = strcmp(x->op, y->op);
    if (!c) c = (x->since > y->since) - (x->since < y->since);
    return c;
}

/* The reference: every row, in table order. */
static const op_def_t *scan(const op_def_t *t, int n, const char *domain, const char *op, int opset,
                            const op_def_t **nearest)
{
    const op_def_t *best = NULL;
    *nearest = NULL;
    for (int i = 0; i < n; i++) {
        if (strcmp(canon(t[i].domain), canon(domain)) || strcmp(t[i].op, op)) continue;
        *nearest = &t[i];
        if (opset >= t[i].since && (t[i].until == 0 || opset <= t[i].until)) best = &t[i];
    }
    return best;
}

int main(void)
{
    int n;
    const op_def_t *t = op_table(&n);
    ok(n > 100, "the table has %d rows", n);
    int unsorted = 0, nameless = 0;
    for (int i = 0; i < n; i++) {
        if (!t[i].op || !t[i].domain) nameless++;
        else if (i > 0 && t[i - 1].op && t[i - 1].domain && row_order(&t[i - 1], &t[i]) > 0) {
            if (!unsorted) diag("row %d (%s:%s since %d) sorts before row %d", i, t[i].domain, t[i].op, t[i].since, i - 1);
            unsorted++;
        }
    }
    ok(nameless == 0, "every row has a domain and an op");
    ok(unsorted == 0, "rows are sorted by (domain, op, since): %d out of order", unsorted);

    int lookups = 0, differ = 0;
    const char *defaults[] = {"", "ai.onnx", NULL};
    for (int i = 0; i < n; i++) {
        if (i > 0 && !strcmp(t[i].op, t[i - 1].op) && !strcmp(canon(t[i].domain), canon(t[i - 1].domain))) continue;
        int names = *canon(t[i].domain) ? 1 : 3;
        for (int d = 0; d < names; d++) {
            const char *dom = names == 1 ? t[i].domain : defaults[d];
            for (int opset = 1; opset <= 30; opset++) {
                const op_def_t *near_ref, *near_got = (const op_def_t *)1;
                const op_def_t *ref = scan(t, n, dom, t[i].op, opset, &near_ref);
                const op_def_t *got = op_lookup(dom, t[i].op, opset, &near_got);
                lookups++;
                if (got != ref || near_got != near_ref) {
                    if (!differ) diag("%s:%s at opset %d: lookup %p/%p, scan %p/%p", dom ? dom : "(null)", t[i].op,
                                      opset, (void *)got, (void *)near_got, (void *)ref, (void *)near_ref);
                    differ++;
                }
            }
        }
    }
    ok(differ == 0, "op_lookup agrees with a scan in %d lookups (%d differ)", lookups, differ);

    const op_def_t *near = (const op_def_t *)1;
    ok(!op_lookup("", "NoSuchOp", 17, &near) && !near, "an unknown op: no row, no nearest");
    near = (const op_def_t *)1;
    ok(!op_lookup("", "", 17, &near) && !near, "an empty name (before every row): nothing");
    near = (const op_def_t *)1;
    ok(!op_lookup("zzz.domain", "Conv", 17, &near) && !near, "a domain after every row: nothing");
    ok(op_lookup("", "Conv", 17, NULL) != NULL, "Conv at opset 17 is found without a nearest pointer");
    return done_testing();
}

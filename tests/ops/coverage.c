/* coverage.c — the sweep's completeness: every row of op_table() (one
 * domain, op and opset range) must have a case that op_lookup resolves to
 * that very row, so each kernel runs at every ISA level. Rows still without
 * one are listed in uncovered.h, an allow-list that may only shrink: a row
 * missing from both fails, and so does a listed row that has gained a case
 * (delete its line). If, Loop and Scan (rows marked control) are no
 * kernels: the executor runs their subgraphs (engine/control.c), node_run
 * never does, so they are counted apart, and ONNX's node tests
 * (tests/conformance/) and the e2e models cover them. Likewise every row
 * must have run at FP16 and BF16 storage (storage.c) or be listed with the
 * reason in fp32only.h. */
#include <string.h>
#include <stdio.h>
#include "harness.h"

static const char *const uncovered[] = {
#include "uncovered.h"
    NULL   /* (so that the list may be empty) */
};
#define N_UNCOVERED ((int)(sizeof uncovered / sizeof uncovered[0]) - 1)

/* Rows no case runs at FP16/BF16 storage, each with the reason. */
static const struct {
    const char *key, *why;
} fp32only[] = {
#include "fp32only.h"
    {NULL, NULL}
};
#define N_FP32ONLY ((int)(sizeof fp32only / sizeof fp32only[0]) - 1)

static const char *fp32_reason(const char *key)
{
    for (int i = 0; i < N_FP32ONLY; i++)
        if (!strcmp(fp32only[i].key, key)) return fp32only[i].why;
    return NULL;
}

static const char *canon(const char *d) { return !d || !strcmp(d, "ai.onnx") ? "" : d; }

/* "Op@since" for the default domain, "domain:Op@since" for another. */
static void row_key(const op_def_t *r, char *buf, size_t len)
{
    const char *d = canon(r->domain);
    snprintf(buf, len, "%s%s%s@%d", d, *d ? ":" : "", r->op, r->since);
}

static int row_has_case(const op_def_t *row, const oc_table_t *tables, int n_tables)
{
    for (int t = 0; t < n_tables; t++)
        for (int k = 0; k < *tables[t].n; k++) {
            const op_case_t *c = &tables[t].cases[k];
            if (c->fail || strcmp(c->op, row->op) || strcmp(canon(c->domain), canon(row->domain))) continue;
            if (op_lookup(canon(c->domain), c->op, c->opset, NULL) == row) return 1;
        }
    return 0;
}

static int listed(const char *key)
{
    for (int i = 0; i < N_UNCOVERED; i++)
        if (!strcmp(uncovered[i], key)) return 1;
    return 0;
}

/* The storage decision of every row: a case of it ran at FP16 and BF16
 * storage (storage.c), or fp32only.h says why none can; and the list names
 * only rows of the table that no case ran at those storages. */
static void check_storage(const op_def_t *rows, int n)
{
    int swept = 0, missing = 0, stale = 0, unknown = 0;
    char key[128];
    for (int i = 0; i < n; i++) {
        if (rows[i].control) continue;
        row_key(&rows[i], key, sizeof key);
        int has = oc_storage_swept(&rows[i], OC_FP16) && oc_storage_swept(&rows[i], OC_BF16);
        const char *why = fp32_reason(key);
        swept += has;
        if (!has && !why) {
            oc_diag("no case of %s ran at FP16/BF16 storage (add one with a float tensor, or say why in "
                    "tests/ops/fp32only.h)", key);
            missing++;
        }
        if (has && why) {
            oc_diag("%s ran at FP16/BF16 storage: delete it from tests/ops/fp32only.h", key);
            stale++;
        }
    }
    for (int i = 0; i < N_FP32ONLY; i++) {
        int found = 0;
        for (int r = 0; r < n && !found; r++) {
            row_key(&rows[r], key, sizeof key);
            found = !strcmp(key, fp32only[i].key);
        }
        if (!found) {
            oc_diag("fp32only.h lists %s, which is no row of the op table", fp32only[i].key);
            unknown++;
        }
    }
    char msg[240];
    snprintf(msg, sizeof msg, "every row of the op table ran at FP16 and BF16 storage or says why not: %d rows swept, "
             "%d listed in fp32only.h, %d without a decision", swept, N_FP32ONLY, missing);
    oc_ok(missing == 0, msg);
    snprintf(msg, sizeof msg, "fp32only.h lists only rows no case ran at FP16/BF16 storage (%d stale, %d unknown)", stale,
             unknown);
    oc_ok(stale == 0 && unknown == 0, msg);
}

void oc_check_coverage(const oc_table_t *tables, int n_tables)
{
    int n, covered = 0, missing = 0, stale = 0, unknown = 0, control = 0;
    const op_def_t *rows = op_table(&n);
    char key[128];
    for (int i = 0; i < n; i++) {
        row_key(&rows[i], key, sizeof key);
        if (rows[i].control) {
            oc_diag("%s: control flow, run by the executor, not node_run", key);
            control++;
            continue;
        }
        int has = row_has_case(&rows[i], tables, n_tables), allowed = listed(key);
        covered += has;
        if (!has && !allowed) {
            oc_diag("no case for %s (add one, or list it in tests/ops/uncovered.h)", key);
            missing++;
        }
        if (has && allowed) {
            oc_diag("%s has a case now: delete it from tests/ops/uncovered.h", key);
            stale++;
        }
    }
    for (int i = 0; i < N_UNCOVERED; i++) {
        int found = 0;
        for (int r = 0; r < n && !found; r++) {
            row_key(&rows[r], key, sizeof key);
            found = !strcmp(key, uncovered[i]);
        }
        if (!found) {
            oc_diag("uncovered.h lists %s, which is no row of the op table", uncovered[i]);
            unknown++;
        }
    }
    check_storage(rows, n);
    char msg[200];
    snprintf(msg, sizeof msg, "every row of the op table has a case or is listed as uncovered: %d of %d rows covered, "
             "%d control flow, %d listed, %d missing", covered, n, control, N_UNCOVERED, missing);
    oc_ok(missing == 0, msg);
    snprintf(msg, sizeof msg, "uncovered.h lists only uncovered rows of the table (%d stale, %d unknown)", stale, unknown);
    oc_ok(stale == 0 && unknown == 0, msg);
}

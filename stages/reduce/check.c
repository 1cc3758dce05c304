/* check.c — one tensor against its reference by the cell's own rule, as
 * compare judges it: Polygraphy's tolerances per tensor (--per-tensor
 * overrides), or the layerwise SNR floor when the cell sets one, and always
 * NaN/Inf where the reference holds none. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "reduce.h"

static int64_t nonfinite(const cmp_values_t *v) { return v->nan + v->posinf + v->neginf; }

void rd_check_tensor(const rd_cell_t *cell, const char *name, int is_output, const tensor_t *a, const tensor_t *b,
                     rd_check_t *r, perr_t *e)
{
    (void)is_output;
    memset(r, 0, sizeof *r);
    r->snr_db = NAN;
    if (!tensor_same_shape(a, b)) {
        char sa[160], sb[160];
        r->fail = 1;
        snprintf(r->why, sizeof r->why, "shape %s, the reference's %s", shape_str(a->ndim, a->dims, sa, sizeof sa),
                 shape_str(b->ndim, b->dims, sb, sizeof sb));
        return;
    }
    cmp_tol_t tol = cmp_config_tol(&cell->rule, name);
    cmp_stats_t st;
    cmp_work_t *w = cmp_work_new();
    perr_t pe = {0};
    int rc = cmp_pair(a, b, &tol, w, &st, &pe);
    cmp_work_free(w);
    if (rc) {   /* a type compare cannot judge (strings): equal or not is all there is */
        (void)e;
        snprintf(r->why, sizeof r->why, "not compared: %s", pe.msg);
        return;
    }
    r->n = st.n;
    r->max_abs = st.abs.max;
    r->max_rel = st.rel.max;
    r->snr_db = st.snr_db;
    r->mismatches = st.mismatches;
    int64_t extra = nonfinite(&st.a) - nonfinite(&st.b);
    if (extra > 0) {
        r->extra_nonfinite = extra;
        r->fail = r->nonfinite = 1;
        snprintf(r->why, sizeof r->why, "%lld non-finite value(s) where the reference is finite", (long long)extra);
    } else if (cell->rule.layer_snr_db > 0 && dtype_is_float(b->dtype)) {
        r->fail = st.snr_db < cell->rule.layer_snr_db;   /* NaN (no finite pair): judged by the NaN check */
        snprintf(r->why, sizeof r->why, "SNR %.2f dB %s %.4g dB", st.snr_db, r->fail ? "<" : ">=", cell->rule.layer_snr_db);
    } else {
        r->fail = !cmp_passed(&st, &tol);
        snprintf(r->why, sizeof r->why, "max |a-b| %.6g, max rel %.6g (atol %.4g, rtol %.4g, %s): %s", st.abs.max,
                 st.rel.max, tol.atol, tol.rtol, cmp_stat_name(tol.stat), r->fail ? "beyond tolerance" : "within");
    }
}

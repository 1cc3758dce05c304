/* ref_elementwise.c — the reference of elementwise cases: numpy
 * broadcasting done here by unravelling each output index (not bcast.h's
 * row walk), each output element computed by the case's elem function in
 * double, and the bound from the number of float32 steps of the kernel's
 * formula (harness.h: STEP_ULPS); steps 0 asks for the exact value. */
#include <string.h>
#include "harness.h"

/* Offset into a tensor of shape (nd, d) of output coordinate idx (rank r):
 * align right, size-1 axes read index 0. */
static int64_t bcast_offset(int nd, const int64_t *d, int r, const int64_t *idx)
{
    int64_t off = 0;
    for (int k = 0; k < nd; k++) off = off * d[k] + (d[k] == 1 ? 0 : idx[r - nd + k]);
    return off;
}

/* The broadcast output shape of the present inputs; -1 if they do not broadcast. */
static int bcast_dims(const oc_inst_t *t, int64_t *od)
{
    int r = 0;
    for (int i = 0; i < t->n_in; i++)
        if (t->in[i] && t->in[i]->ndim > r) r = t->in[i]->ndim;
    for (int k = 0; k < r; k++) od[k] = 1;
    for (int i = 0; i < t->n_in; i++) {
        const tensor_t *x = t->in[i];
        for (int k = 0; x && k < x->ndim; k++) {
            int64_t *o = &od[r - x->ndim + k];
            if (x->dims[k] == *o || x->dims[k] == 1) continue;
            if (*o != 1) return -1;
            *o = x->dims[k];
        }
    }
    return r;
}

int oc_ref_elementwise(const oc_inst_t *t, oc_want_t *w)
{
    const op_case_t *c = t->c;
    int64_t od[TENSOR_MAX_DIMS], idx[TENSOR_MAX_DIMS];
    int r = bcast_dims(t, od);
    if (r < 0) return -1;
    oc_want_shape(w, c->out_dt ? c->out_dt : t->in[0]->dtype, r, od, 0);
    for (int64_t i = 0; i < oc_numel(r, od); i++) {
        double x[OC_MAX_IO], mag = 1;
        oc_unravel(i, r, od, idx);
        for (int k = 0; k < t->n_in; k++) {
            const tensor_t *in = t->in[k];
            x[k] = in ? tensor_get_f64(in, bcast_offset(in->ndim, in->dims, r, idx)) : NAN;
            if (in && isfinite(x[k])) mag = fmax(mag, fabs(x[k]));
        }
        w->val[i] = c->elem(t, x);
        if (isfinite(w->val[i])) mag = fmax(mag, fabs(w->val[i]));
        w->bound[i] = c->steps * STEP_ULPS * 2 * U_FLOAT * mag;
    }
    return 0;
}

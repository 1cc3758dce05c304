/* bcast.c — plans the broadcasting walk described in bcast.h: aligns each
 * input's shape to the output's, turns broadcast axes into stride 0, drops
 * size-1 output axes and merges axes that every input walks contiguously. */
#include "ops/bcast.h"

int bcast_plan(bcast_t *b, int n, const int *ndims, const int64_t *const *dims,
               int out_ndim, const int64_t *out_dims)
{
    if (n < 1 || n > BCAST_MAX_IN || out_ndim < 0 || out_ndim > TENSOR_MAX_DIMS) return -1;
    int64_t st[BCAST_MAX_IN][TENSOR_MAX_DIMS];
    for (int i = 0; i < n; i++) {
        if (ndims[i] < 0 || ndims[i] > out_ndim) return -1;
        int off = out_ndim - ndims[i];
        int64_t stride = 1;
        for (int d = out_ndim - 1; d >= 0; d--) {
            int64_t v = d < off ? 1 : dims[i][d - off];
            if (v != out_dims[d] && v != 1) return -1;
            st[i][d] = v == 1 ? 0 : stride;
            stride *= v;
        }
    }
    /* Keep the output axes of size != 1, merging each into the axis after it
     * when every input steps through both as one contiguous run. */
    int r = 0;
    int64_t cd[TENSOR_MAX_DIMS], cs[BCAST_MAX_IN][TENSOR_MAX_DIMS];
    for (int d = out_ndim - 1; d >= 0; d--) {
        if (out_dims[d] == 1) continue;
        int merge = r > 0;
        for (int i = 0; i < n && merge; i++)
            if (st[i][d] != cs[i][r - 1] * cd[r - 1]) merge = 0;
        if (merge) {
            cd[r - 1] *= out_dims[d];
            continue;
        }
        cd[r] = out_dims[d];
        for (int i = 0; i < n; i++) cs[i][r] = st[i][d];
        r++;
    }
    /* cd/cs hold the axes innermost first; store them outermost first. */
    b->n = n;
    if (r == 0) {
        b->rank = 1;
        b->dims[0] = 1;
        for (int i = 0; i < BCAST_MAX_IN; i++) b->st[i][0] = 0;
    } else {
        b->rank = r;
        for (int k = 0; k < r; k++) {
            b->dims[k] = cd[r - 1 - k];
            for (int i = 0; i < n; i++) b->st[i][k] = cs[i][r - 1 - k];
        }
    }
    b->inner = b->dims[b->rank - 1];
    b->rows = 1;
    for (int k = 0; k < b->rank - 1; k++) b->rows *= b->dims[k];
    if (b->inner == 0) b->rows = 0;
    for (int i = 0; i < BCAST_MAX_IN; i++) b->is[i] = i < n ? b->st[i][b->rank - 1] : 0;
    return 0;
}

int bcast_plan_tensors(bcast_t *b, int n, const tensor_t *const *in, const tensor_t *out)
{
    int nd[BCAST_MAX_IN];
    const int64_t *dd[BCAST_MAX_IN];
    if (n < 1 || n > BCAST_MAX_IN) return -1;
    for (int i = 0; i < n; i++) {
        nd[i] = in[i]->ndim;
        dd[i] = in[i]->dims;
    }
    return bcast_plan(b, n, nd, dd, out->ndim, out->dims);
}

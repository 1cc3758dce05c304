/* cases_tensor.c — the TENSOR family's index arithmetic (Transpose, Slice,
 * Gather, GatherElements, ScatterElements' errors) against naive
 * coordinate loops written here, over random shapes, element sizes and
 * arguments, with exact bytes as the reference; and the error cases: a bad
 * index or argument must fail the node with a message naming it.
 *
 * The naive Slice follows CPython's slice.indices() rules (what numpy, and
 * so the ONNX reference, uses) and enumerates the indices one by one, while
 * the kernel implements the spec's clamp-and-count formula; the one case
 * where the spec departs from Python is marked in py_slice(). */
#include <string.h>
#include "harness.h"

static const dtype_t types[] = {DT_UINT8, DT_FLOAT16, DT_FLOAT, DT_INT64};

static int64_t lin(const int64_t *co, const int64_t *dims, int n)
{
    int64_t off = 0;
    for (int d = 0; d < n; d++) off = off * dims[d] + co[d];
    return off;
}

static void shuffle(int *p, int n)
{
    for (int d = 0; d < n; d++) p[d] = d;
    for (int d = n - 1; d > 0; d--) {
        int j = (int)oc_range(0, d), tmp = p[d];
        p[d] = p[j];
        p[j] = tmp;
    }
}

/* Output element i of want (exact) is element src of x: an element-size copy. */
static void copy_elem(oc_want_t *w, int64_t i, const tensor_t *x, int64_t src)
{
    size_t es = dtype_size(x->dtype);
    memcpy((char *)w->bytes + i * es, (char *)x->data + src * es, es);
}

/* ---- Transpose ---- */

static int ref_transpose(const oc_inst_t *t, oc_want_t *w)
{
    const tensor_t *x = t->in[0];
    int nd = x->ndim, perm[TENSOR_MAX_DIMS];
    const oc_attr_t *a = oc_attr(t, "perm");
    int64_t od[TENSOR_MAX_DIMS], oc[TENSOR_MAX_DIMS], ic[TENSOR_MAX_DIMS];
    for (int k = 0; k < nd; k++) perm[k] = a ? (int)a->i[k] : nd - 1 - k;   /* default: reversed */
    for (int k = 0; k < nd; k++) od[k] = x->dims[perm[k]];
    oc_want_shape(w, x->dtype, nd, od, 1);
    for (int64_t i = 0; i < oc_numel(nd, od); i++) {
        oc_unravel(i, nd, od, oc);
        for (int k = 0; k < nd; k++) ic[perm[k]] = oc[k];
        copy_elem(w, i, x, lin(ic, x->dims, nd));
    }
    return 0;
}

static void gen_transpose_random(oc_inst_t *t, int v)
{
    oc_input_t *x = oc_input(t, 0);
    int nd = (int)oc_range(1, 6), perm[TENSOR_MAX_DIMS];
    int64_t pv[TENSOR_MAX_DIMS];
    x->dt = types[v % 4];
    x->gen = GEN_BYTES;
    x->nd = nd;
    for (int d = 0; d < nd; d++) x->dims[d] = oc_range(v % 50 == 0 ? 0 : 1, nd <= 2 ? 70 : 6);
    shuffle(perm, nd);
    for (int d = 0; d < nd; d++) pv[d] = perm[d];
    if (v % 7) oc_set_ints(t, "perm", nd, pv);
}

/* The common model shapes: tiled 2-D and row paths, every element size. */
static void gen_transpose_model(oc_inst_t *t, int v)
{
    static const int64_t shapes[][4] = {{1, 256, 20, 20}, {2, 8, 400, 32}, {1, 3, 17, 129}, {1, 64, 80, 80}};
    static const int64_t perms[][4] = {{0, 2, 3, 1}, {0, 3, 1, 2}, {0, 2, 1, 3}, {0, 1, 3, 2}, {3, 2, 1, 0}};
    oc_input_t *x = oc_input(t, 0);
    x->dt = types[v % 4];
    x->gen = GEN_BYTES;
    x->nd = 4;
    memcpy(x->dims, shapes[v / 4 % 4], sizeof shapes[0]);
    oc_set_ints(t, "perm", 4, perms[v / 16]);
}

/* ---- Slice ---- */

/* CPython's PySlice_AdjustIndices (but see the start clamp below): the
 * oracle for one axis. Fills the list of selected indices; returns the count. */
static int64_t py_slice(int64_t len, int64_t start, int64_t stop, int64_t step, int64_t *sel)
{
    if (start < 0) {
        start += len;
        /* the one place the ONNX spec departs from Python: a start before the
         * beginning clamps to 0 for negative steps too (Python: -1, empty) */
        if (start < 0) start = (step < 0 && len > 0) ? 0 : step < 0 ? -1 : 0;
    } else if (start >= len) {
        start = step < 0 ? len - 1 : len;
    }
    if (stop < 0) {
        stop += len;
        if (stop < 0) stop = step < 0 ? -1 : 0;
    } else if (stop >= len) {
        stop = step < 0 ? len - 1 : len;
    }
    int64_t n = 0;
    for (int64_t i = start; step > 0 ? i < stop : i > stop;) {
        sel[n++] = i;
        if (__builtin_add_overflow(i, step, &i)) break;
    }
    return n;
}

/* Slice's argument k of axis entry i: an attribute before opset 10, else input 1 + k. */
static int64_t slice_arg(const oc_inst_t *t, int k, int i)
{
    static const char *const names[3] = {"starts", "ends", "axes"};
    if (t->node.opset < 10) return k == 3 ? 1 : oc_attr(t, names[k])->i[i];
    return tensor_get_i64(t->in[1 + k], i);
}

static int ref_slice(const oc_inst_t *t, oc_want_t *w)
{
    const tensor_t *x = t->in[0];
    int nd = x->ndim, na = t->node.opset < 10 ? oc_attr(t, "starts")->n : (int)tensor_numel(t->in[1]);
    int64_t sel[TENSOR_MAX_DIMS][16], cnt[TENSOR_MAX_DIMS], oc[TENSOR_MAX_DIMS], ic[TENSOR_MAX_DIMS];
    for (int d = 0; d < nd; d++) {
        cnt[d] = x->dims[d];
        for (int64_t i = 0; i < x->dims[d]; i++) sel[d][i] = i;
    }
    for (int i = 0; i < na; i++) {
        int64_t d = slice_arg(t, 2, i);
        if (d < 0) d += nd;
        cnt[d] = py_slice(x->dims[d], slice_arg(t, 0, i), slice_arg(t, 1, i), slice_arg(t, 3, i), sel[d]);
    }
    oc_want_shape(w, x->dtype, nd, cnt, 1);
    for (int64_t i = 0; i < oc_numel(nd, cnt); i++) {
        oc_unravel(i, nd, cnt, oc);
        for (int d = 0; d < nd; d++) ic[d] = sel[d][oc[d]];
        copy_elem(w, i, x, lin(ic, x->dims, nd));
    }
    return 0;
}

static int64_t pick_bound(int64_t dim)
{
    switch (oc_rand() % 8) {
    case 0: return INT64_MAX;
    case 1: return INT64_MIN;
    case 2: return -dim - (int64_t)(oc_rand() % 3);
    default: return oc_range(-dim - 2, dim + 2);
    }
}

/* A random subset of axes in random order, negative axes too; from opset
 * 10 steps of either sign (some extreme), bounds as int32 (clipped) or int64. */
static void gen_slice(oc_inst_t *t, int v)
{
    oc_input_t *x = oc_input(t, 0);
    int nd = (int)oc_range(1, 4), opset = t->c->opset, order[TENSOR_MAX_DIMS];
    x->dt = types[v % 4];
    x->gen = GEN_BYTES;
    x->nd = nd;
    for (int d = 0; d < nd; d++) x->dims[d] = oc_range(v % 40 == 0 ? 0 : 1, 7);
    int na = (int)oc_range(1, nd);
    shuffle(order, nd);
    int64_t args[4][TENSOR_MAX_DIMS];   /* start end axis step */
    for (int i = 0; i < na; i++) {
        int d = order[i];
        args[2][i] = oc_rand() % 2 ? d : d - nd;
        args[0][i] = pick_bound(x->dims[d]);
        args[1][i] = pick_bound(x->dims[d]);
        args[3][i] = opset < 10 ? 1 : oc_rand() % 10 == 0 ? (oc_rand() % 2 ? INT64_MAX : INT64_MIN)
                                                        : (oc_rand() % 2 ? 1 : -1) * oc_range(1, 3);
    }
    if (opset < 10) {
        oc_set_ints(t, "starts", na, args[0]);
        oc_set_ints(t, "ends", na, args[1]);
        oc_set_ints(t, "axes", na, args[2]);
        t->n_in = 1;
        return;
    }
    t->n_in = 5;
    for (int k = 0; k < 4; k++) {
        oc_input_t *a = oc_input(t, 1 + k);
        *a = (oc_input_t){.dt = v % 2 ? DT_INT64 : DT_INT32, .nd = 1, .dims = {na}, .gen = GEN_INT64S, .nv = na};
        memcpy(a->iv, args[k], (size_t)na * sizeof a->iv[0]);
    }
}

/* ---- Gather, GatherElements ---- */

static int ref_gather(const oc_inst_t *t, oc_want_t *w)
{
    const tensor_t *x = t->in[0], *ind = t->in[1];
    int nd = x->ndim, qd = ind->ndim, axis = (int)oc_int(t, "axis", 0);
    if (axis < 0) axis += nd;
    int64_t od[TENSOR_MAX_DIMS], oc[TENSOR_MAX_DIMS], ic[TENSOR_MAX_DIMS];
    int r = 0;
    for (int d = 0; d < axis; d++) od[r++] = x->dims[d];
    for (int d = 0; d < qd; d++) od[r++] = ind->dims[d];
    for (int d = axis + 1; d < nd; d++) od[r++] = x->dims[d];
    oc_want_shape(w, x->dtype, r, od, 1);
    for (int64_t i = 0; i < oc_numel(r, od); i++) {
        /* out[a..., q..., b...] = data[a..., ind[q...], b...] */
        oc_unravel(i, r, od, oc);
        int64_t k = tensor_get_i64(ind, lin(oc + axis, ind->dims, qd));
        for (int d = 0; d < axis; d++) ic[d] = oc[d];
        ic[axis] = k < 0 ? k + x->dims[axis] : k;
        for (int d = axis + 1; d < nd; d++) ic[d] = oc[d - 1 + qd];
        copy_elem(w, i, x, lin(ic, x->dims, nd));
    }
    return 0;
}

static int ref_gather_elements(const oc_inst_t *t, oc_want_t *w)
{
    const tensor_t *x = t->in[0], *ind = t->in[1];
    int nd = x->ndim, axis = (int)oc_int(t, "axis", 0);
    int64_t co[TENSOR_MAX_DIMS];
    oc_want_shape(w, x->dtype, nd, ind->dims, 1);
    for (int64_t i = 0; i < tensor_numel(ind); i++) {
        oc_unravel(i, nd, ind->dims, co);
        int64_t k = tensor_get_i64(ind, i);
        co[axis] = k < 0 ? k + x->dims[axis] : k;
        copy_elem(w, i, x, lin(co, x->dims, nd));
    }
    return 0;
}

static void gen_gather(oc_inst_t *t, int v)
{
    oc_input_t *x = oc_input(t, 0), *q = oc_input(t, 1);
    int nd = (int)oc_range(1, 4), qd = (int)oc_range(0, 2);
    x->dt = types[v % 4];
    x->gen = GEN_BYTES;
    x->nd = nd;
    for (int d = 0; d < nd; d++) x->dims[d] = oc_range(1, 6);
    int axis = (int)oc_range(0, nd - 1);
    *q = (oc_input_t){.dt = v % 2 ? DT_INT64 : DT_INT32, .nd = qd, .gen = GEN_INTS, .lo = (double)-x->dims[axis],
                      .hi = (double)x->dims[axis] - 1};
    for (int d = 0; d < qd; d++) q->dims[d] = oc_range(v % 30 == 0 ? 0 : 1, 4);
    oc_set_int(t, "axis", oc_rand() % 2 ? axis : axis - nd);
}

static void gen_gather_elements(oc_inst_t *t, int v)
{
    oc_input_t *x = oc_input(t, 0), *q = oc_input(t, 1);
    int nd = (int)oc_range(1, 4), axis = (int)oc_range(0, nd - 1);
    x->dt = types[v % 4];
    x->gen = GEN_BYTES;
    x->nd = nd;
    *q = (oc_input_t){.dt = v % 2 ? DT_INT64 : DT_INT32, .nd = nd, .gen = GEN_INTS};
    for (int d = 0; d < nd; d++) {
        x->dims[d] = oc_range(1, 5);
        q->dims[d] = d == axis ? oc_range(1, 6) : oc_range(1, x->dims[d]);
    }
    q->lo = (double)-x->dims[axis];
    q->hi = (double)x->dims[axis] - 1;
    oc_set_int(t, "axis", axis);
}

/* Variant v: index 3 of a 2x2 index tensor set just past either end (4,
 * -5), far out (100) or to INT32_MIN; int32 for even v, int64 for odd. */
static void gen_bad_index(oc_inst_t *t, int v)
{
    static const int64_t bad[4] = {4, -5, 100, INT32_MIN};
    *oc_input(t, 1) = (oc_input_t){.dt = v % 2 ? DT_INT64 : DT_INT32, DIMS(2, 2), .gen = GEN_INT64S, .nv = 4,
                                   .iv = {0, 3, 1, bad[v / 2]}};
}

#define X34 IN_U(DT_FLOAT, -1, 1, DIMS(3, 4))
#define BAD_INDEX(op_, n) {.op = op_, .opset = 16, .what = "out-of-range index", .n_in = n, \
        .in = {X34, IN_NONE, IN_U(DT_FLOAT, -1, 1, DIMS(2, 2))}, .attr = {AI("axis", 1)}, \
        .gen = gen_bad_index, .variants = 8, .fail = "out of range"}
#define SLICE_BAD(what_, ...) {.op = "Slice", .opset = 13, .what = what_, .n_in = 5, .fail = "under_test", \
        .in = {IN_U(DT_FLOAT, -1, 1, DIMS(4, 5)), __VA_ARGS__}}

const op_case_t cases_tensor[] = {
    {.op = "Transpose", .opset = 13, .what = "random shapes, perms and element sizes", .n_in = 1,
     .gen = gen_transpose_random, .variants = 400, .ref = ref_transpose},
    {.op = "Transpose", .opset = 13, .what = "model shapes, 1 and 3 threads", .n_in = 1,
     .gen = gen_transpose_model, .variants = 80, .threads = 3, .ref = ref_transpose},
    {.op = "Transpose", .opset = 13, .what = "a repeated axis", .n_in = 1, .in = {IN_U(DT_FLOAT, -1, 1, DIMS(2, 3, 4))},
     .attr = {AIS("perm", 0, 0, 1)}, .fail = "perm"},
    {.op = "Transpose", .opset = 13, .what = "a perm of the wrong length", .n_in = 1,
     .in = {IN_U(DT_FLOAT, -1, 1, DIMS(2, 3, 4))}, .attr = {AIS("perm", 1, 0)}, .fail = "perm"},
    {.op = "Transpose", .opset = 13, .what = "an axis out of range", .n_in = 1,
     .in = {IN_U(DT_FLOAT, -1, 1, DIMS(2, 3, 4))}, .attr = {AIS("perm", 0, 1, 3)}, .fail = "perm"},
    {.op = "Slice", .opset = 9, .what = "random slices (attributes)", .n_in = 1, .gen = gen_slice, .variants = 100,
     .ref = ref_slice},
    {.op = "Slice", .opset = 13, .what = "random slices: negative steps, clamping, int32/int64", .n_in = 5,
     .gen = gen_slice, .variants = 400, .ref = ref_slice},
    SLICE_BAD("step 0", IN_L(DT_INT64, DIMS(1), 0), IN_L(DT_INT64, DIMS(1), 3), IN_L(DT_INT64, DIMS(1), 0),
              IN_L(DT_INT64, DIMS(1), 0)),
    SLICE_BAD("a repeated axis", IN_L(DT_INT64, DIMS(2), 0), IN_L(DT_INT64, DIMS(2), 3), IN_L(DT_INT64, DIMS(2), 0),
              IN_L(DT_INT64, DIMS(2), 1)),
    SLICE_BAD("an axis out of range", IN_L(DT_INT64, DIMS(1), 0), IN_L(DT_INT64, DIMS(1), 3),
              IN_L(DT_INT64, DIMS(1), 2), IN_L(DT_INT64, DIMS(1), 1)),
    {.op = "Gather", .opset = 13, .what = "random shapes, axes and index types", .n_in = 2, .gen = gen_gather,
     .variants = 300, .ref = ref_gather},
    {.op = "GatherElements", .opset = 13, .what = "random shapes, axes and index types", .n_in = 2,
     .gen = gen_gather_elements, .variants = 200, .ref = ref_gather_elements},
    BAD_INDEX("Gather", 2),
    BAD_INDEX("GatherElements", 2),
    BAD_INDEX("ScatterElements", 3),
    {.op = "Gather", .opset = 13, .what = "float indices", .n_in = 2,
     .in = {X34, IN_U(DT_FLOAT, 0, 2, DIMS(2))}, .fail = "int32 or int64"},
};
const int cases_tensor_n = sizeof cases_tensor / sizeof cases_tensor[0];

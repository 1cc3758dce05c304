/* ops_tensor.c — index arithmetic of the TENSOR family (Transpose, Slice,
 * Gather, GatherElements, ScatterElements) checked against naive
 * implementations written here with explicit coordinate loops, over random
 * shapes, element sizes and arguments; plus the error cases: a bad index or
 * argument must fail the node with a message naming it, never crash.
 *
 * The naive Slice follows CPython's slice.indices() rules (what numpy, and
 * so the ONNX reference, uses) and enumerates the indices one by one, while
 * the kernel implements the spec's clamp-and-count formula; the one case
 * where the spec departs from Python is marked in py_slice(). */
#include "isa_each.h"
#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "ops/ops.h"
#include "util/pool.h"

/* ---- deterministic random numbers ---- */

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
static int64_t rnd_range(int64_t lo, int64_t hi) { return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1)); }

/* ---- building nodes and running them like the executor does ---- */

typedef struct test_node {
    node_t node;
    Onnx__AttributeProto attrs[4], *ptrs[4];
    int64_t ints[4][TENSOR_MAX_DIMS];
} test_node_t;

static void node_init(test_node_t *t, const char *op, int opset)
{
    memset(t, 0, sizeof *t);
    t->node.name = "under_test";
    t->node.op_type = (char *)op;
    t->node.domain = "";
    t->node.opset = opset;
    t->node.attr = t->ptrs;
}

static Onnx__AttributeProto *node_add_attr(test_node_t *t, const char *name)
{
    int i = t->node.n_attr++;
    Onnx__AttributeProto *a = &t->attrs[i];
    onnx__attribute_proto__init(a);
    a->name = (char *)name;
    t->ptrs[i] = a;
    return a;
}

static void attr_set_int(test_node_t *t, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = node_add_attr(t, name);
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    a->has_i = 1;
    a->i = v;
}

static void attr_set_ints(test_node_t *t, const char *name, const int64_t *v, int n)
{
    int slot = t->node.n_attr;
    Onnx__AttributeProto *a = node_add_attr(t, name);
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    memcpy(t->ints[slot], v, sizeof(int64_t) * n);
    a->ints = t->ints[slot];
    a->n_ints = (size_t)n;
}

static void *test_scratch(op_ctx_t *c, size_t bytes)
{
    free(c->scratch_owner);
    c->scratch_owner = xmalloc(bytes ? bytes : 1);
    return c->scratch_owner;
}

/* Shape function, allocation filled with garbage (kernels must write every
 * element), kernel. Returns 0 or -1 with e set. */
static int run_node(test_node_t *t, const tensor_t *const *in, int n_in, tensor_t **out, int n_out, perr_t *e)
{
    const op_def_t *row = op_lookup("", t->node.op_type, t->node.opset, NULL);
    if (!row) return BAD(e, "no row for %s-%d", t->node.op_type, t->node.opset);
    op_ctx_t c = {.node = &t->node, .n_in = n_in, .in = in, .n_out = n_out, .out = out,
                  .threads = 1, .err = e, .scratch = test_scratch};
    int r = row->shape(&c);
    if (r == OP_DYNAMIC) r = BAD(e, "shape unknown with all data present");
    for (int i = 0; i < n_out && !r; i++) {
        r = tensor_alloc(out[i], out[i]->dtype, out[i]->ndim, out[i]->dims, e);
        if (!r) memset(out[i]->data, 0xA5, tensor_nbytes(out[i]));
    }
    if (!r) r = row->run(&c);
    free(c.scratch_owner);
    return r;
}

static tensor_t *random_tensor(dtype_t dt, int ndim, const int64_t *dims)
{
    perr_t e = {0};
    tensor_t *t = tensor_new(dt, ndim, dims, &e);
    unsigned char *p = t->data;
    for (size_t i = 0; i < tensor_nbytes(t); i++) p[i] = (unsigned char)rnd();
    return t;
}

static const dtype_t types[] = {DT_UINT8, DT_FLOAT16, DT_FLOAT, DT_INT64};

/* Linear offset of coordinates co in a row-major shape. */
static int64_t lin(const int64_t *co, const int64_t *dims, int n)
{
    int64_t off = 0;
    for (int d = 0; d < n; d++) off = off * dims[d] + co[d];
    return off;
}

/* Coordinates of linear index i in a row-major shape. */
static void coords(int64_t i, const int64_t *dims, int n, int64_t *co)
{
    for (int d = n - 1; d >= 0; d--) {
        co[d] = dims[d] ? i % dims[d] : 0;
        i = dims[d] ? i / dims[d] : 0;
    }
}

/* ---- Transpose ---- */

static int naive_transpose_ok(const tensor_t *x, const int *perm, const tensor_t *y)
{
    size_t es = dtype_size(x->dtype);
    int64_t n = tensor_numel(y), oc[TENSOR_MAX_DIMS], ic[TENSOR_MAX_DIMS];
    for (int64_t i = 0; i < n; i++) {
        coords(i, y->dims, y->ndim, oc);
        for (int k = 0; k < y->ndim; k++) ic[perm[k]] = oc[k];
        if (memcmp((char *)y->data + i * es, (char *)x->data + lin(ic, x->dims, x->ndim) * es, es)) return 0;
    }
    return 1;
}

static void test_transpose(void)
{
    int good = 0, total = 0;
    for (int trial = 0; trial < 400; trial++) {
        int nd = (int)rnd_range(1, 6);
        int64_t dims[TENSOR_MAX_DIMS], pv[TENSOR_MAX_DIMS];
        int perm[TENSOR_MAX_DIMS];
        for (int d = 0; d < nd; d++) dims[d] = rnd_range(trial % 50 == 0 ? 0 : 1, nd <= 2 ? 70 : 6);
        for (int d = 0; d < nd; d++) perm[d] = d;
        for (int d = nd - 1; d > 0; d--) {
            int j = (int)rnd_range(0, d), tmp = perm[d];
            perm[d] = perm[j];
            perm[j] = tmp;
        }
        for (int d = 0; d < nd; d++) pv[d] = perm[d];
        tensor_t *x = random_tensor(types[trial % 4], nd, dims), y = {0};
        test_node_t t;
        node_init(&t, "Transpose", 13);
        if (trial % 7) attr_set_ints(&t, "perm", pv, nd);
        else for (int d = 0; d < nd; d++) perm[d] = nd - 1 - d;   /* default: reversed */
        perr_t e = {0};
        const tensor_t *in[1] = {x};
        tensor_t *out[1] = {&y};
        total++;
        if (run_node(&t, in, 1, out, 1, &e) == 0 && naive_transpose_ok(x, perm, &y)) good++;
        else diag("transpose trial %d failed: %s", trial, e.msg);
        tensor_free(x);
        tensor_free_data(&y);
    }
    ok(good == total, "Transpose matches the naive permutation (%d/%d random cases)", good, total);

    /* the common model shapes: tiled 2-D and row paths, every element size,
     * on one thread and on the pool (large copies are split into tasks) */
    static const int64_t shapes[][4] = {{1, 256, 20, 20}, {2, 8, 400, 32}, {1, 3, 17, 129}, {1, 64, 80, 80}};
    static const int perms[][4] = {{0, 2, 3, 1}, {0, 3, 1, 2}, {0, 2, 1, 3}, {0, 1, 3, 2}, {3, 2, 1, 0}};
    good = total = 0;
    for (int th = 1; th <= 3; th += 2) {
    pool_set_threads(th);
    for (int s = 0; s < 4; s++)
        for (int p = 0; p < 5; p++)
            for (int ti = 0; ti < 4; ti++) {
                tensor_t *x = random_tensor(types[ti], 4, shapes[s]), y = {0};
                int64_t pv[4];
                for (int d = 0; d < 4; d++) pv[d] = perms[p][d];
                test_node_t t;
                node_init(&t, "Transpose", 13);
                attr_set_ints(&t, "perm", pv, 4);
                perr_t e = {0};
                const tensor_t *in[1] = {x};
                tensor_t *out[1] = {&y};
                total++;
                if (run_node(&t, in, 1, out, 1, &e) == 0 && naive_transpose_ok(x, perms[p], &y)) good++;
                tensor_free(x);
                tensor_free_data(&y);
            }
    }
    pool_set_threads(1);
    ok(good == total, "Transpose on model shapes, 1 and 3 threads (%d/%d)", good, total);

    /* errors: not a permutation, wrong length */
    int64_t dims[3] = {2, 3, 4}, bad1[3] = {0, 0, 1}, bad2[2] = {1, 0}, bad3[3] = {0, 1, 3};
    const int64_t *bads[3] = {bad1, bad2, bad3};
    int nbad[3] = {3, 2, 3}, refused = 0;
    for (int b = 0; b < 3; b++) {
        tensor_t *x = random_tensor(DT_FLOAT, 3, dims), y = {0};
        test_node_t t;
        node_init(&t, "Transpose", 13);
        attr_set_ints(&t, "perm", bads[b], nbad[b]);
        perr_t e = {0};
        const tensor_t *in[1] = {x};
        tensor_t *out[1] = {&y};
        refused += run_node(&t, in, 1, out, 1, &e) < 0 && strstr(e.msg, "under_test") != NULL;
        tensor_free(x);
        tensor_free_data(&y);
    }
    ok(refused == 3, "Transpose refuses bad perms with a message naming the node");
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

static int64_t pick_bound(int64_t dim)
{
    switch (rnd() % 8) {
    case 0: return INT64_MAX;
    case 1: return INT64_MIN;
    case 2: return -dim - (int64_t)(rnd() % 3);
    default: return rnd_range(-dim - 2, dim + 2);
    }
}

static void test_slice(void)
{
    int good = 0, total = 0;
    for (int trial = 0; trial < 500; trial++) {
        int nd = (int)rnd_range(1, 4), opset = trial % 5 == 0 ? 9 : 13;
        int64_t dims[TENSOR_MAX_DIMS];
        for (int d = 0; d < nd; d++) dims[d] = rnd_range(trial % 40 == 0 ? 0 : 1, 7);
        /* slice a random subset of axes, in random order */
        int na = (int)rnd_range(1, nd), order[TENSOR_MAX_DIMS];
        for (int d = 0; d < nd; d++) order[d] = d;
        for (int d = nd - 1; d > 0; d--) {
            int j = (int)rnd_range(0, d), tmp = order[d];
            order[d] = order[j];
            order[j] = tmp;
        }
        int64_t st[TENSOR_MAX_DIMS], en[TENSOR_MAX_DIMS], ax[TENSOR_MAX_DIMS], sp[TENSOR_MAX_DIMS];
        int64_t sel[TENSOR_MAX_DIMS][16], cnt[TENSOR_MAX_DIMS];
        for (int d = 0; d < nd; d++) {
            cnt[d] = dims[d];
            for (int64_t i = 0; i < dims[d]; i++) sel[d][i] = i;
        }
        for (int i = 0; i < na; i++) {
            int d = order[i];
            ax[i] = rnd() % 2 ? d : d - nd;   /* negative axes too */
            st[i] = pick_bound(dims[d]);
            en[i] = pick_bound(dims[d]);
            sp[i] = opset < 10 ? 1 : rnd() % 10 == 0 ? (rnd() % 2 ? INT64_MAX : INT64_MIN)
                                                   : (rnd() % 2 ? 1 : -1) * rnd_range(1, 3);
            cnt[d] = py_slice(dims[d], st[i], en[i], sp[i], sel[d]);
        }
        tensor_t *x = random_tensor(types[trial % 4], nd, dims), y = {0};
        tensor_t *ts[4] = {0};
        test_node_t t;
        node_init(&t, "Slice", opset);
        int n_in = 1;
        if (opset < 10) {
            attr_set_ints(&t, "starts", st, na);
            attr_set_ints(&t, "ends", en, na);
            attr_set_ints(&t, "axes", ax, na);
        } else {
            int64_t len = na;
            const int64_t *src[4] = {st, en, ax, sp};
            for (int k = 0; k < 4; k++) {
                ts[k] = tensor_new(trial % 2 ? DT_INT64 : DT_INT32, 1, &len, &(perr_t){0});
                for (int i = 0; i < na; i++) {
                    if (ts[k]->dtype == DT_INT64) ((int64_t *)ts[k]->data)[i] = src[k][i];
                    else ((int32_t *)ts[k]->data)[i] = src[k][i] > INT32_MAX ? INT32_MAX
                                                      : src[k][i] < INT32_MIN ? INT32_MIN : (int32_t)src[k][i];
                }
            }
            n_in = 5;
        }
        if (opset >= 10 && trial % 2 == 0) {   /* int32 clipped the bounds: recompute the oracle */
            for (int i = 0; i < na; i++) {
                int d = order[i];
                cnt[d] = py_slice(dims[d], ((int32_t *)ts[0]->data)[i], ((int32_t *)ts[1]->data)[i],
                                  ((int32_t *)ts[3]->data)[i], sel[d]);
            }
        }
        const tensor_t *in[5] = {x, ts[0], ts[1], ts[2], ts[3]};
        tensor_t *out[1] = {&y};
        perr_t e = {0};
        int pass = run_node(&t, in, n_in, out, 1, &e) == 0 && y.ndim == nd;
        for (int d = 0; pass && d < nd; d++) pass = y.dims[d] == cnt[d];
        size_t es = dtype_size(x->dtype);
        int64_t n = pass ? tensor_numel(&y) : 0, oc[TENSOR_MAX_DIMS], ic[TENSOR_MAX_DIMS];
        for (int64_t i = 0; i < n && pass; i++) {
            coords(i, y.dims, nd, oc);
            for (int d = 0; d < nd; d++) ic[d] = sel[d][oc[d]];
            pass = !memcmp((char *)y.data + i * es, (char *)x->data + lin(ic, x->dims, nd) * es, es);
        }
        total++;
        good += pass;
        if (!pass) diag("slice trial %d (opset %d) failed: %s", trial, opset, e.msg);
        tensor_free(x);
        tensor_free_data(&y);
        for (int k = 0; k < 4; k++) tensor_free(ts[k]);
    }
    ok(good == total, "Slice matches Python slicing (%d/%d random cases, negative steps, clamping)", good, total);

    /* errors: step 0, repeated axis, axis out of range */
    int64_t dims[2] = {4, 5}, one = 1, two = 2;
    int64_t cases[3][4] = {{0, 3, 0, 0}, {0, 3, 0, 1}, {0, 3, 2, 1}};   /* start end axis step */
    int refused = 0;
    for (int k = 0; k < 3; k++) {
        int64_t len = k == 1 ? two : one;
        tensor_t *x = random_tensor(DT_FLOAT, 2, dims), y = {0}, *a[4];
        for (int j = 0; j < 4; j++) {
            a[j] = tensor_new(DT_INT64, 1, &len, &(perr_t){0});
            for (int i = 0; i < len; i++) ((int64_t *)a[j]->data)[i] = cases[k][j];
        }
        test_node_t t;
        node_init(&t, "Slice", 13);
        const tensor_t *in[5] = {x, a[0], a[1], a[2], a[3]};
        tensor_t *out[1] = {&y};
        perr_t e = {0};
        refused += run_node(&t, in, 5, out, 1, &e) < 0 && strstr(e.msg, "under_test") != NULL;
        tensor_free(x);
        tensor_free_data(&y);
        for (int j = 0; j < 4; j++) tensor_free(a[j]);
    }
    ok(refused == 3, "Slice refuses step 0, a repeated axis and an out-of-range axis");
}

/* ---- Gather / GatherElements / ScatterElements ---- */

static tensor_t *index_tensor(dtype_t dt, int ndim, const int64_t *dims, int64_t lo, int64_t hi)
{
    tensor_t *t = tensor_new(dt, ndim, dims, &(perr_t){0});
    for (int64_t i = 0; i < tensor_numel(t); i++) {
        int64_t v = rnd_range(lo, hi);
        if (dt == DT_INT64) ((int64_t *)t->data)[i] = v;
        else ((int32_t *)t->data)[i] = (int32_t)v;
    }
    return t;
}

static void test_gather(void)
{
    int good = 0, total = 0;
    for (int trial = 0; trial < 300; trial++) {
        int nd = (int)rnd_range(1, 4), qd = (int)rnd_range(0, 2);
        int64_t dims[TENSOR_MAX_DIMS], qdims[TENSOR_MAX_DIMS];
        for (int d = 0; d < nd; d++) dims[d] = rnd_range(1, 6);
        for (int d = 0; d < qd; d++) qdims[d] = rnd_range(trial % 30 == 0 ? 0 : 1, 4);
        int axis = (int)rnd_range(0, nd - 1);
        tensor_t *x = random_tensor(types[trial % 4], nd, dims), y = {0};
        tensor_t *ind = index_tensor(trial % 2 ? DT_INT64 : DT_INT32, qd, qdims, -dims[axis], dims[axis] - 1);
        test_node_t t;
        node_init(&t, "Gather", 13);
        attr_set_int(&t, "axis", rnd() % 2 ? axis : axis - nd);
        const tensor_t *in[2] = {x, ind};
        tensor_t *out[1] = {&y};
        perr_t e = {0};
        int pass = run_node(&t, in, 2, out, 1, &e) == 0 && y.ndim == nd - 1 + qd;
        size_t es = dtype_size(x->dtype);
        int64_t n = pass ? tensor_numel(&y) : 0, oc[TENSOR_MAX_DIMS], ic[TENSOR_MAX_DIMS];
        for (int64_t i = 0; i < n && pass; i++) {
            /* out[a..., q..., b...] = data[a..., ind[q...], b...] */
            coords(i, y.dims, y.ndim, oc);
            int64_t k = tensor_get_i64(ind, lin(oc + axis, qdims, qd));
            if (k < 0) k += dims[axis];
            for (int d = 0; d < axis; d++) ic[d] = oc[d];
            ic[axis] = k;
            for (int d = axis + 1; d < nd; d++) ic[d] = oc[d - 1 + qd];
            pass = !memcmp((char *)y.data + i * es, (char *)x->data + lin(ic, dims, nd) * es, es);
        }
        total++;
        good += pass;
        if (!pass) diag("gather trial %d failed: %s", trial, e.msg);
        tensor_free(x);
        tensor_free(ind);
        tensor_free_data(&y);
    }
    ok(good == total, "Gather matches the naive coordinate loop (%d/%d random cases)", good, total);

    good = total = 0;
    for (int trial = 0; trial < 200; trial++) {
        int nd = (int)rnd_range(1, 4);
        int64_t dims[TENSOR_MAX_DIMS], idims[TENSOR_MAX_DIMS];
        int axis = (int)rnd_range(0, nd - 1);
        for (int d = 0; d < nd; d++) {
            dims[d] = rnd_range(1, 5);
            idims[d] = d == axis ? rnd_range(1, 6) : rnd_range(1, dims[d]);
        }
        tensor_t *x = random_tensor(types[trial % 4], nd, dims), y = {0};
        tensor_t *ind = index_tensor(trial % 2 ? DT_INT64 : DT_INT32, nd, idims, -dims[axis], dims[axis] - 1);
        test_node_t t;
        node_init(&t, "GatherElements", 13);
        attr_set_int(&t, "axis", axis);
        const tensor_t *in[2] = {x, ind};
        tensor_t *out[1] = {&y};
        perr_t e = {0};
        int pass = run_node(&t, in, 2, out, 1, &e) == 0;
        size_t es = dtype_size(x->dtype);
        int64_t n = pass ? tensor_numel(&y) : 0, co[TENSOR_MAX_DIMS];
        for (int64_t i = 0; i < n && pass; i++) {
            coords(i, idims, nd, co);
            int64_t k = tensor_get_i64(ind, i);
            co[axis] = k < 0 ? k + dims[axis] : k;
            pass = !memcmp((char *)y.data + i * es, (char *)x->data + lin(co, dims, nd) * es, es);
        }
        total++;
        good += pass;
        tensor_free(x);
        tensor_free(ind);
        tensor_free_data(&y);
    }
    ok(good == total, "GatherElements matches the naive coordinate loop (%d/%d)", good, total);

    /* out-of-range indices: just past either end, int32 and int64 */
    static const char *ops[3] = {"Gather", "GatherElements", "ScatterElements"};
    int64_t dims[2] = {3, 4}, bad[4] = {4, -5, 100, INT32_MIN};
    int refused = 0, tried = 0;
    for (int o = 0; o < 3; o++)
        for (int b = 0; b < 4; b++)
            for (int ty = 0; ty < 2; ty++) {
                tensor_t *x = random_tensor(DT_FLOAT, 2, dims), y = {0};
                tensor_t *ind = index_tensor(ty ? DT_INT64 : DT_INT32, 2, (int64_t[]){2, 2}, 0, 3);
                tensor_t *upd = random_tensor(DT_FLOAT, 2, (int64_t[]){2, 2});
                if (ty) ((int64_t *)ind->data)[3] = bad[b];
                else ((int32_t *)ind->data)[3] = (int32_t)bad[b];
                test_node_t t;
                node_init(&t, ops[o], 16);
                attr_set_int(&t, "axis", 1);
                const tensor_t *in[3] = {x, ind, upd};
                tensor_t *out[1] = {&y};
                perr_t e = {0};
                tried++;
                refused += run_node(&t, in, o == 2 ? 3 : 2, out, 1, &e) < 0 &&
                           strstr(e.msg, "under_test") && strstr(e.msg, "out of range");
                tensor_free(x);
                tensor_free(ind);
                tensor_free(upd);
                tensor_free_data(&y);
            }
    ok(refused == tried, "out-of-range indices fail the node, not the process (%d/%d)", refused, tried);

    /* wrong index type */
    tensor_t *x = random_tensor(DT_FLOAT, 2, dims), y = {0};
    tensor_t *ind = random_tensor(DT_FLOAT, 1, (int64_t[]){2});
    test_node_t t;
    node_init(&t, "Gather", 13);
    const tensor_t *in[2] = {x, ind};
    tensor_t *out[1] = {&y};
    perr_t e = {0};
    ok(run_node(&t, in, 2, out, 1, &e) < 0 && strstr(e.msg, "int32 or int64"), "float indices are refused: %s", e.msg);
    tensor_free(x);
    tensor_free(ind);
    tensor_free_data(&y);
}

int main(void)
{
    at_each_isa(test_transpose);   /* 4-byte blocks move in registers at AVX2 and above */
    test_slice();
    test_gather();
    return done_testing();
}

/* gemm.c — MatMul and Gemm, and the BLAS wrapper the whole NN family uses.
 * Float types go to blas.c (parity's own kernels by default, the same bits
 * on every CPU; OpenBLAS with --kernels blas, float through blas.c's
 * deterministic tiling, double single-threaded); integer types use a plain loop with wrap-around uint64
 * arithmetic, which is what two's-complement hardware gives and never UB. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <cblas.h>
#include "ops/nn/nn_impl.h"
#include "ops/gemm/blas.h"
#include "ops/gemm/fgemm.h"
#include "util/isa.h"
#include "util/pool.h"

static int fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

int nn_gemm(dtype_t dt, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
            double alpha, const void *a, int64_t lda, const void *b, int64_t ldb,
            double beta, void *cmat, int64_t ldc)
{
    if (!fits_int(m) || !fits_int(n) || !fits_int(k) || !fits_int(lda) || !fits_int(ldb) || !fits_int(ldc))
        return -1;
    if (m == 0 || n == 0) return 0;
    if (k == 0) {   /* empty product: C = beta * C, without relying on BLAS corner cases */
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                if (dt == DT_FLOAT) {
                    float *p = (float *)cmat + i * ldc + j;
                    *p = beta == 0 ? 0.0f : (float)(beta * *p);
                } else {
                    double *p = (double *)cmat + i * ldc + j;
                    *p = beta == 0 ? 0.0 : beta * *p;
                }
            }
        return 0;
    }
    enum CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans;
    enum CBLAS_TRANSPOSE tb = trans_b ? CblasTrans : CblasNoTrans;
    /* BLAS wants leading dimensions >= 1 even for degenerate shapes. */
    if (lda < 1) lda = 1;
    if (ldb < 1) ldb = 1;
    if (ldc < 1) ldc = 1;
    if (dt == DT_FLOAT)
        blas_sgemm(trans_a, trans_b, m, n, k, (float)alpha, a, lda, b, ldb, (float)beta, cmat, ldc);
    else if (dt == DT_DOUBLE && kernels_mode() == KERNELS_OWN)
        blas_dgemm_own(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, cmat, ldc);
    else if (dt == DT_DOUBLE)
        cblas_dgemm(CblasRowMajor, ta, tb, (int)m, (int)n, (int)k, alpha, a, (int)lda,
                    b, (int)ldb, beta, cmat, (int)ldc);
    else
        return -1;
    return 0;
}

/* ---------------------------------------------------------------- MatMul */

typedef struct mm_plan {
    int a_vec, b_vec;             /* 1-D operands */
    int64_t m, n, k;
    int nb;                       /* batch rank of the output */
    int64_t bdims[TENSOR_MAX_DIMS], astr[TENSOR_MAX_DIMS], bstr[TENSOR_MAX_DIMS];
    int64_t nbatch, abatch, bbatch;
} mm_plan_t;

/* The bias the fuse pass gave a MatMul (fuse.c: MatMul then Add of one
 * float32 value per column): a third input, which only a fused layer may
 * have. NULL when there is none. */
static const tensor_t *fused_bias(const op_ctx_t *c)
{
    return c->n_in > 2 ? c->in[2] : NULL;
}

static int matmul_plan(op_ctx_t *c, mm_plan_t *p)
{
    if (op_check_inputs(c, 2, c->node->fused_from ? 3 : 2)) return -1;
    const tensor_t *a = c->in[0], *b = c->in[1];
    if (a->ndim < 1 || b->ndim < 1) return op_fail(c, "inputs must have rank >= 1");
    if (a->dtype != b->dtype)
        return op_fail(c, "input types differ (%s, %s)", dtype_name(a->dtype), dtype_name(b->dtype));
    if (!dtype_is_float(a->dtype) && !dtype_is_signed_int(a->dtype) && !dtype_is_unsigned_int(a->dtype))
        return op_fail(c, "type %s is not supported", dtype_name(a->dtype));
    memset(p, 0, sizeof *p);
    p->a_vec = a->ndim == 1;
    p->b_vec = b->ndim == 1;
    p->m = p->a_vec ? 1 : a->dims[a->ndim - 2];
    p->k = a->dims[a->ndim - 1];
    int64_t kb = p->b_vec ? b->dims[0] : b->dims[b->ndim - 2];
    p->n = p->b_vec ? 1 : b->dims[b->ndim - 1];
    if (kb != p->k) {
        char sa[160], sb[160];
        return op_fail(c, "shapes %s and %s cannot be multiplied", shape_str(a->ndim, a->dims, sa, sizeof sa),
                       shape_str(b->ndim, b->dims, sb, sizeof sb));
    }
    int ra = a->ndim > 2 ? a->ndim - 2 : 0, rb = b->ndim > 2 ? b->ndim - 2 : 0;
    p->nb = ra > rb ? ra : rb;
    /* Element strides of each operand's batch, 0 where it broadcasts. */
    int64_t sa = p->m * p->k, sb = p->k * p->n;
    p->abatch = p->bbatch = p->nbatch = 1;
    for (int d = p->nb - 1; d >= 0; d--) {
        int ia = d - (p->nb - ra), ib = d - (p->nb - rb);
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        if (da != db && da != 1 && db != 1) {
            char s1[160], s2[160];
            return op_fail(c, "batch dimensions of %s and %s do not broadcast",
                           shape_str(a->ndim, a->dims, s1, sizeof s1), shape_str(b->ndim, b->dims, s2, sizeof s2));
        }
        p->bdims[d] = da == 1 ? db : da;
        p->astr[d] = da == 1 ? 0 : sa;
        p->bstr[d] = db == 1 ? 0 : sb;
        sa *= da;
        sb *= db;
        p->abatch *= da;
        p->bbatch *= db;
        p->nbatch *= p->bdims[d];
    }
    const tensor_t *bias = fused_bias(c);
    if (bias && (a->dtype != DT_FLOAT || bias->dtype != DT_FLOAT || tensor_numel(bias) != p->n))
        return op_fail(c, "a fused bias must be float32 with one value per column (%lld)", (long long)p->n);
    return 0;
}

int matmul_shape(op_ctx_t *c)
{
    mm_plan_t p;
    if (matmul_plan(c, &p)) return -1;
    int64_t dims[TENSOR_MAX_DIMS];
    int r = 0;
    for (int d = 0; d < p.nb; d++) dims[r++] = p.bdims[d];
    if (!p.a_vec) dims[r++] = p.m;
    if (!p.b_vec) dims[r++] = p.n;
    return op_set_out(c, 0, c->in[0]->dtype, r, dims);
}

/* Integer product of one batch: C[m,n] = sum_k A[m,k] B[k,n], wrapping. */
#define MATMUL_INT_BODY(A, B, C, M, N, K)                                    \
    do {                                                                     \
        const T *a_ = (const T *)(A);                                        \
        const T *b_ = (const T *)(B);                                        \
        T *c_ = (T *)(C);                                                    \
        for (int64_t i = 0; i < (M); i++)                                    \
            for (int64_t j = 0; j < (N); j++) {                              \
                uint64_t acc = 0;                                            \
                for (int64_t q = 0; q < (K); q++)                            \
                    acc += (uint64_t)a_[i * (K) + q] * (uint64_t)b_[q * (N) + j]; \
                c_[i * (N) + j] = (T)acc;                                    \
            }                                                                \
    } while (0)

static int matmul_batch(op_ctx_t *c, const mm_plan_t *p, const void *a, const void *b, void *y, int64_t m)
{
    dtype_t dt = c->in[0]->dtype;
    if (dt == DT_FLOAT || dt == DT_DOUBLE) {
        if (nn_gemm(dt, 0, 0, m, p->n, p->k, 1.0, a, p->k, b, p->n, 0.0, y, p->n))
            return op_fail(c, "matrix too large for BLAS (%lld x %lld x %lld)",
                           (long long)m, (long long)p->k, (long long)p->n);
        return 0;
    }
    DISPATCH_INT(dt, MATMUL_INT_BODY(a, b, y, m, p->n, p->k),
                 return op_fail(c, "type %s is not supported", dtype_name(dt)));
    return 0;
}

/* Each batch's element offsets into A (off[t]) and B (off[nbatch + t]),
 * walking the broadcast batch dimensions with an odometer. */
static int64_t *batch_offsets(const mm_plan_t *p)
{
    int64_t *off = xmalloc(2 * (size_t)p->nbatch * sizeof *off);
    int64_t idx[TENSOR_MAX_DIMS] = {0}, aoff = 0, boff = 0;
    for (int64_t t = 0; t < p->nbatch; t++) {
        off[t] = aoff;
        off[p->nbatch + t] = boff;
        for (int d = p->nb - 1; d >= 0; d--) {
            aoff += p->astr[d];
            boff += p->bstr[d];
            if (++idx[d] < p->bdims[d]) break;
            aoff -= p->astr[d] * idx[d];
            boff -= p->bstr[d] * idx[d];
            idx[d] = 0;
        }
    }
    return off;
}

/* Batches one GEMM each. */
static int matmul_batches(op_ctx_t *c, const mm_plan_t *p, const char *ad, const char *bd, char *yd)
{
    size_t es = dtype_size(c->in[0]->dtype);
    int64_t *off = batch_offsets(p);
    int rc = 0;
    for (int64_t t = 0; t < p->nbatch && !rc; t++)
        rc = matmul_batch(c, p, ad + off[t] * es, bd + off[p->nbatch + t] * es, yd + t * p->m * p->n * es, p->m);
    free(off);
    return rc;
}

/* A batched float32 product on parity's kernels: each batch's blocks of
 * BATCH_ROWS rows are the pool's tasks, each an fgemm on the task's thread
 * (a pool_for inside a task runs serially). One after the other, the 8
 * heads of RT-DETR's 300x300 attention were 8 products of a few tiny tasks
 * each, which did not get faster past one thread (issue 41); here they are
 * 40 tasks. The bits are fgemm's for the whole batch (own_sgemm's call):
 * no element's sum depends on the rows a call covers (fgemm.c). */
#define BATCH_ROWS 64
typedef struct batch_job {
    const mm_plan_t *p;
    const float *a, *b;
    float *y;
    const int64_t *aoff, *boff;   /* per batch: the element offsets of its A and B */
    int64_t row_blocks;
} batch_job_t;

static void batch_task(void *ctx, int64_t t)
{
    const batch_job_t *j = ctx;
    const mm_plan_t *p = j->p;
    int64_t bt = t / j->row_blocks, r0 = t % j->row_blocks * BATCH_ROWS;
    int64_t rows = p->m - r0 < BATCH_ROWS ? p->m - r0 : BATCH_ROWS;
    fgemm(rows, p->n, p->k, j->a + j->aoff[bt] + r0 * p->k, p->k, j->b + j->boff[bt], p->n,
          j->y + (bt * p->m + r0) * p->n, p->n, NULL);
}

static void matmul_batches_pool(const mm_plan_t *p, const float *a, const float *b, float *y)
{
    int64_t *off = batch_offsets(p);
    batch_job_t j = {p, a, b, y, off, off + p->nbatch, (p->m + BATCH_ROWS - 1) / BATCH_ROWS};
    pool_for(p->nbatch * j.row_blocks, batch_task, &j);
    free(off);
}

/* The epilogue of a product on fgemm: the per-column bias, the node's
 * activation where the kernel does it, and last the storage rounding, in
 * the tiles, where they can. */
static fgemm_epi_t product_epilogue(op_ctx_t *c, const tensor_t *col_bias)
{
    fgemm_epi_t epi = {0};
    epi.col_bias = col_bias ? col_bias->data : NULL;
    c->act_done = fgemm_epi_act(&epi, c->node);
    if ((c->act_done || c->node->act == ACT_NONE) && fgemm_rounds(c->round_out, epi.act)) {
        epi.round = c->round_out;
        c->round_done = c->round_out != DT_UNDEFINED;
    }
    return epi;
}

/* y[r][j] += bias[j]: the fused bias where the kernel's epilogue did not
 * add it (the same single float addition). */
static void add_col_bias(float *y, const float *bias, int64_t rows, int64_t n)
{
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < n; j++) y[r * n + j] += bias[j];
}

int matmul_run(op_ctx_t *c)
{
    mm_plan_t p;
    if (matmul_plan(c, &p)) return -1;
    const tensor_t *a = c->in[0], *b = c->in[1], *bias = fused_bias(c);
    const char *ad = a->data, *bd = b->data;
    char *yd = c->out[0]->data;
    int one_gemm = p.bbatch == 1 && p.abatch == p.nbatch;   /* B shared, A not broadcast: all rows at once */
    if (one_gemm && a->dtype == DT_FLOAT && fgemm_available()) {
        /* bias and activation in the kernel's epilogue; B (the weights,
         * where c->cache is given) packed once and kept */
        fgemm_epi_t epi = product_epilogue(c, bias);
        fgemm_kept(p.nbatch * p.m, p.n, p.k, (const float *)ad, p.k, (const float *)bd, p.n, (float *)yd, p.n, &epi,
                   c->cache);
        return 0;
    }
    int rc = 0;
    if (one_gemm) rc = matmul_batch(c, &p, ad, bd, yd, p.nbatch * p.m);
    else if (a->dtype == DT_FLOAT && fgemm_available() && p.m > 0 && p.n > 0 && p.k > 0)
        matmul_batches_pool(&p, (const float *)ad, (const float *)bd, (float *)yd);
    else rc = matmul_batches(c, &p, ad, bd, yd);
    if (!rc && bias) add_col_bias((float *)yd, bias->data, p.nbatch * p.m, p.n);
    return rc;
}

/* ------------------------------------------------------------------ Gemm */

typedef struct gemm_plan {
    int ta, tb;
    int64_t m, n, k;
    int64_t cm, cn;               /* C's extent on rows / cols (1 = broadcast) */
} gemm_plan_t;

static int gemm_plan(op_ctx_t *c, gemm_plan_t *p)
{
    if (op_check_inputs(c, 2, 3)) return -1;
    const tensor_t *a = c->in[0], *b = c->in[1], *cc = c->n_in > 2 ? c->in[2] : NULL;
    if (a->ndim != 2 || b->ndim != 2) return op_fail(c, "A and B must be 2-D (ranks %d, %d)", a->ndim, b->ndim);
    if (a->dtype != b->dtype || (cc && cc->dtype != a->dtype))
        return op_fail(c, "input types differ");
    if (!dtype_is_float(a->dtype) && !dtype_is_signed_int(a->dtype) && !dtype_is_unsigned_int(a->dtype))
        return op_fail(c, "type %s is not supported", dtype_name(a->dtype));
    p->ta = attr_int(c->node, "transA", 0) != 0;
    p->tb = attr_int(c->node, "transB", 0) != 0;
    p->m = a->dims[p->ta ? 1 : 0];
    p->k = a->dims[p->ta ? 0 : 1];
    int64_t kb = b->dims[p->tb ? 1 : 0];
    p->n = b->dims[p->tb ? 0 : 1];
    if (kb != p->k)
        return op_fail(c, "inner dimensions differ (%lld and %lld)", (long long)p->k, (long long)kb);
    p->cm = p->cn = 0;
    if (cc) {
        if (cc->ndim > 2) return op_fail(c, "C must have rank <= 2, got %d", cc->ndim);
        p->cm = cc->ndim == 2 ? cc->dims[0] : 1;
        p->cn = cc->ndim >= 1 ? cc->dims[cc->ndim - 1] : 1;
        if ((p->cm != 1 && p->cm != p->m) || (p->cn != 1 && p->cn != p->n))
            return op_fail(c, "C of shape %lldx%lld does not broadcast to %lldx%lld", (long long)p->cm,
                           (long long)p->cn, (long long)p->m, (long long)p->n);
    }
    return 0;
}

int gemm_shape(op_ctx_t *c)
{
    gemm_plan_t p;
    if (gemm_plan(c, &p)) return -1;
    int64_t dims[2] = {p.m, p.n};
    return op_set_out(c, 0, c->in[0]->dtype, 2, dims);
}

/* Integer Gemm: wrap-around products; alpha and beta are applied in double
 * and saturated back (the spec allows them to be any float). */
#define GEMM_INT_BODY()                                                          \
    do {                                                                         \
        const T *a_ = (const T *)a->data;                                        \
        const T *b_ = (const T *)b->data;                                        \
        const T *c_ = cc ? (const T *)cc->data : NULL;                           \
        T *y_ = (T *)y->data;                                                    \
        for (int64_t i = 0; i < p.m; i++)                                        \
            for (int64_t j = 0; j < p.n; j++) {                                  \
                uint64_t acc = 0;                                                \
                for (int64_t q = 0; q < p.k; q++) {                              \
                    T av = p.ta ? a_[q * p.m + i] : a_[i * p.k + q];             \
                    T bv = p.tb ? b_[j * p.k + q] : b_[q * p.n + j];             \
                    acc += (uint64_t)av * (uint64_t)bv;                          \
                }                                                                \
                T cv = c_ ? c_[(p.cm == 1 ? 0 : i) * p.cn + (p.cn == 1 ? 0 : j)] : (T)0; \
                if (alpha == 1 && beta == 1) {                                   \
                    y_[i * p.n + j] = (T)(acc + (uint64_t)cv);                   \
                } else {                                                         \
                    double v = alpha * (double)(T)acc + beta * (double)cv;       \
                    y_[i * p.n + j] = (T)sat_bits(v, dtype_is_signed_int(dt), 8 * (int)sizeof(T));                                \
                }                                                                \
            }                                                                    \
    } while (0)

/* Saturating double -> integer conversion (float->int must never be UB):
 * returns the two's-complement bit pattern of the clamped value. */
static uint64_t sat_bits(double v, int is_signed, int bits)
{
    double lim = ldexp(1.0, is_signed ? bits - 1 : bits);
    if (v != v) return 0;
    if (is_signed) {
        if (v >= lim) return ((uint64_t)1 << (bits - 1)) - 1;
        if (v <= -lim) return (uint64_t)0 - ((uint64_t)1 << (bits - 1));
        return (uint64_t)(int64_t)v;
    }
    if (v <= 0) return 0;
    if (v >= lim) return bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
    return (uint64_t)v;
}

/* op(B) as a new k x n copy (B is n x k where transB is set). */
static float *gemm_b_untransposed(const float *b, int64_t k, int64_t n)
{
    float *t = xmalloc((size_t)(k * n) * sizeof *t);
    for (int64_t q = 0; q < k; q++)
        for (int64_t j = 0; j < n; j++) t[q * n + j] = b[j * k + q];
    return t;
}

/* A float32 Gemm as a Linear layer is exported: alpha 1, A untransposed, C
 * absent or one value per column with beta 1. It runs as a MatMul does:
 * on the pool, B (the weights, where the node keeps a cache) transposed
 * and packed once, C added in the epilogue, the activation and the
 * storage rounding too. The general path computed the same bits (the
 * product, then + 1*C[j], one rounding) with B transposed and packed on
 * every run and the additions in serial loops: RT-DETR's attention output
 * projections took as long at 16 threads as at one (issue 41).
 * Returns 1 when it ran, 0 when the Gemm is not of that form. */
static int gemm_linear(op_ctx_t *c, const gemm_plan_t *p, double alpha, double beta)
{
    const tensor_t *a = c->in[0], *b = c->in[1], *cc = c->n_in > 2 ? c->in[2] : NULL;
    if (a->dtype != DT_FLOAT || !fgemm_available() || alpha != 1.0 || p->ta || p->m <= 0 || p->n <= 0 || p->k <= 0)
        return 0;
    if (cc && !(beta == 1.0 && p->cm == 1 && p->cn == p->n && tensor_numel(cc) == p->n)) return 0;
    fgemm_epi_t epi = product_epilogue(c, cc);
    /* a kept packing never reads B again */
    int kept = c->cache && *c->cache;
    float *bt = p->tb && !kept ? gemm_b_untransposed(b->data, p->k, p->n) : NULL;
    fgemm_kept(p->m, p->n, p->k, a->data, p->k, bt ? bt : (const float *)b->data, p->n, c->out[0]->data, p->n, &epi,
               c->cache);
    free(bt);
    return 1;
}

int gemm_run(op_ctx_t *c)
{
    gemm_plan_t p;
    if (gemm_plan(c, &p)) return -1;
    const tensor_t *a = c->in[0], *b = c->in[1], *cc = c->n_in > 2 ? c->in[2] : NULL;
    tensor_t *y = c->out[0];
    double alpha = attr_float(c->node, "alpha", 1.0f), beta = attr_float(c->node, "beta", 1.0f);
    dtype_t dt = a->dtype;
    if (gemm_linear(c, &p, alpha, beta)) return 0;
    if (dt != DT_FLOAT && dt != DT_DOUBLE) {
        DISPATCH_INT(dt, GEMM_INT_BODY(), return op_fail(c, "type %s is not supported", dtype_name(dt)));
        return 0;
    }
    /* Y starts as beta * C (broadcast), then BLAS accumulates alpha*A*B. */
    int use_c = cc && beta != 0;
    DISPATCH_FLOAT(dt, {
        T *y_ = (T *)y->data;
        const T *c_ = use_c ? (const T *)cc->data : NULL;
        T tb_ = (T)beta;   /* rounded as numpy rounds beta * C in the input type */
        for (int64_t i = 0; i < p.m; i++)
            for (int64_t j = 0; j < p.n; j++)
                y_[i * p.n + j] = c_ ? tb_ * c_[(p.cm == 1 ? 0 : i) * p.cn + (p.cn == 1 ? 0 : j)] : (T)0;
    }, (void)0);
    if (nn_gemm(dt, p.ta, p.tb, p.m, p.n, p.k, alpha, a->data, p.ta ? p.m : p.k, b->data,
                p.tb ? p.k : p.n, use_c ? 1.0 : 0.0, y->data, p.n))
        return op_fail(c, "matrix too large for BLAS");
    return 0;
}

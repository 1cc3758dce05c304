/* elementwise_impl.h — private to the elementwise family (elementwise.c
 * holds the table; unary.c, activation.c, binary.c, variadic.c and cast.c
 * hold the kernels). Shared here: element-type masks, the shape checks every
 * file uses, and the row loops over a broadcast plan (bcast.h). */
#ifndef PARITY_ELEMENTWISE_IMPL_H
#define PARITY_ELEMENTWISE_IMPL_H

/* GCC's -O2 only vectorises loops whose trip count it knows ("very cheap"
 * cost model); the row loops here have run-time lengths, and vectorising
 * them makes Add/Mul/Relu/Less 3-10x faster on cache-resident data. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")
#endif

#include <math.h>
#include "ops/ops.h"
#include "ops/bcast.h"
#include "tensor/convert.h"   /* IS_SIGNED_T, SAT_TO_INT */

/* Element-type masks (bit = ONNX dtype code). Half types are listed where
 * the spec allows them: the executor widens them to float32 for the kernel. */
#define TM(dt) (1u << (dt))
#define TM_FLOAT (TM(DT_FLOAT) | TM(DT_DOUBLE) | TM(DT_FLOAT16) | TM(DT_BFLOAT16))
#define TM_SINT (TM(DT_INT8) | TM(DT_INT16) | TM(DT_INT32) | TM(DT_INT64))
#define TM_UINT (TM(DT_UINT8) | TM(DT_UINT16) | TM(DT_UINT32) | TM(DT_UINT64))
#define TM_INT (TM_SINT | TM_UINT)
#define TM_NUMERIC (TM_FLOAT | TM_INT)
#define TM_BOOL TM(DT_BOOL)

/* x < 0 for any integer type T, without "always false" warnings for unsigned T. */
#define LT0(T, x) (IS_SIGNED_T(T) && is_neg_i64_((int64_t)(x)))
static inline int is_neg_i64_(int64_t v) { return v < 0; }

/* Fails naming the node unless dt is in mask; `what` names the operand. */
int ew_check_type(op_ctx_t *c, dtype_t dt, unsigned mask, const char *what);
/* Fails unless input i's type is in mask; i must exist. */
int ew_check_input(op_ctx_t *c, int i, unsigned mask);
/* Output 0 = broadcast of inputs [0, n) with type dt. Inputs NULL are skipped. */
int ew_set_broadcast(op_ctx_t *c, int first, int n, dtype_t dt);
/* Fails unless inputs i and j have the same element type. */
int ew_same_types(op_ctx_t *c, int i, int j);
/* Plans the walk of inputs [0, n) onto output 0 (opset < 7 broadcast=1
 * alignment included). */
int ew_plan(op_ctx_t *c, bcast_t *b, int n);
/* Kernel-time failure for an element type the kernel has no body for. */
int ew_bad_type(op_ctx_t *c, dtype_t dt);
/* A two-valued string attribute: 0 if it is a, 1 if b, -1 (failed) otherwise. */
int ew_attr_choice(op_ctx_t *c, const char *name, const char *dflt, const char *a, const char *b);

/* ---- parallel range jobs ----
 * A kernel describes its work as a job and a range function that computes
 * output elements [s, e); ew_parallel cuts [0, total) into chunks of fixed
 * size (so results never depend on the thread count) and runs them on the
 * pool. The range function is first called with an empty range to check
 * the element types, so chunks themselves cannot fail. */
typedef struct ew_job {
    op_ctx_t *c;
    const bcast_t *b;          /* broadcast plan (NULL for unary work) */
    const void *x, *y, *z;     /* operand data in plan order */
    void *o;                   /* output data */
    int last;                  /* the kernel's last pass over output 0: its chunks may take
                                  the storage rounding (op_ctx_t.round_out); not a step of a fold */
} ew_job_t;
typedef int (*ew_range_fn)(const ew_job_t *j, int64_t s, int64_t e);

#define EW_CHUNK 16384
int ew_parallel(const ew_job_t *j, int64_t total, ew_range_fn fn);
/* One input, output 0 of the same element count: x = in[0], o = out[0]. */
int ew_unary(op_ctx_t *c, ew_range_fn fn);
/* Inputs [0, n) broadcast onto output 0 (n = 2 or 3). */
int ew_broadcast(op_ctx_t *c, int n, ew_range_fn fn);

/* (Macros passed as DISPATCH_* bodies must not expand to top-level commas.) */

/* Unary loop over elements [s, e): o[i] = EXPR with x bound to in[i]. */
#define UN_RANGE(TI, TO, IN, OUT, S, E, EXPR) do {                              \
        const TI *I_ = (const TI *)(IN);                                        \
        TO *O_ = (TO *)(OUT);                                                   \
        const int64_t e_ = (E);                                                 \
        for (int64_t i_ = (S); i_ < e_; i_++) {                                 \
            const TI x = I_[i_];                                                \
            O_[i_] = (TO)(EXPR);                                                \
        }                                                                       \
    } while (0)

/* Defines kernel `name`: float32 through vmath's array function VM
 * (vectorised, same bits on every CPU), float64 as EXPR (needs ops/elementwise/vmath.h). */
#define VMATH_UNARY(name, VM, EXPR)                                             \
    static int name##_range(const ew_job_t *j, int64_t s, int64_t e)            \
    {                                                                           \
        const dtype_t dt = j->c->in[0]->dtype;                                  \
        if (dt == DT_FLOAT) {                                                   \
            VM((const float *)j->x + s, (float *)j->o + s, e - s);              \
            return 0;                                                           \
        }                                                                       \
        DISPATCH_FLOAT(dt, UN_RANGE(T, T, j->x, j->o, s, e, EXPR),              \
                       return ew_bad_type(j->c, dt))                            \
        return 0;                                                               \
    }                                                                           \
    int name(op_ctx_t *c) { return ew_unary(c, name##_range); }

/* Walks output elements [s, e) of job j's plan row by row: ROW runs once
 * per piece of a row with pa_, pb_ (the operands' rows, TA and TB), po_
 * (the output's row, TO), j0_ .. j1_ (the piece's positions in the row)
 * and sa_, sb_ (each operand's inner stride, 0 when broadcast) in scope. */
#define BIN_ROWS(j, TA, TB, TO, S, E, ROW) do {                                 \
        const bcast_t *b_ = (j)->b;                                             \
        const TA *A_ = (const TA *)(j)->x;                                      \
        const TB *B_ = (const TB *)(j)->y;                                      \
        TO *O_ = (TO *)(j)->o;                                                  \
        const int64_t n_ = b_->inner;                                           \
        const int sa_ = (int)b_->is[0];                                         \
        const int sb_ = (int)b_->is[1];                                         \
        int64_t pos_ = (S);                                                     \
        const int64_t end_ = (E);                                               \
        if (pos_ >= end_) break;                                                \
        bcast_iter_t it_ = bcast_seek(b_, pos_ / n_);                           \
        while (pos_ < end_) {                                                   \
            const int64_t base_ = it_.row * n_;                                 \
            const int64_t j0_ = pos_ - base_;                                   \
            const int64_t j1_ = end_ - base_ < n_ ? end_ - base_ : n_;          \
            const TA *pa_ = A_ + it_.off[0];                                    \
            const TB *pb_ = B_ + it_.off[1];                                    \
            TO *po_ = O_ + base_;                                               \
            ROW;                                                                \
            pos_ = base_ + j1_;                                                 \
            bcast_next(b_, &it_);                                               \
        }                                                                       \
    } while (0)

/* Binary loop over output elements [s, e) of job j's plan: o = EXPR with x,
 * y bound to the operands j->x (TA) and j->y (TB). Within each row the four
 * stride patterns get their own loop so the compiler can vectorise them. */
#define BIN_RANGE(j, TA, TB, TO, S, E, EXPR)                                    \
    BIN_ROWS(j, TA, TB, TO, S, E, BIN_ROW_LOOPS(TA, TB, TO, EXPR))
#define BIN_ROW_LOOPS(TA, TB, TO, EXPR) do {                                    \
        if (sa_ && sb_) {                                                       \
            for (int64_t i_ = j0_; i_ < j1_; i_++) {                            \
                const TA x = pa_[i_]; const TB y = pb_[i_];                     \
                po_[i_] = (TO)(EXPR);                                           \
            }                                                                   \
        } else if (sa_) {                                                       \
            const TB y = pb_[0];                                                \
            for (int64_t i_ = j0_; i_ < j1_; i_++) {                            \
                const TA x = pa_[i_];                                           \
                po_[i_] = (TO)(EXPR);                                           \
            }                                                                   \
        } else if (sb_) {                                                       \
            const TA x = pa_[0];                                                \
            for (int64_t i_ = j0_; i_ < j1_; i_++) {                            \
                const TB y = pb_[i_];                                           \
                po_[i_] = (TO)(EXPR);                                           \
            }                                                                   \
        } else {                                                                \
            const TA x = pa_[0]; const TB y = pb_[0];                           \
            const TO v_ = (TO)(EXPR);                                           \
            for (int64_t i_ = j0_; i_ < j1_; i_++) po_[i_] = v_;                \
        }                                                                       \
    } while (0)

/* Defines range function `name` of a same-type binary op: FEXPR for float
 * types, IEXPR for integers, over x (j->x) and y (j->y) of type T. */
#define EW_BINARY_RANGE(name, FEXPR, IEXPR)                                     \
    static int name(const ew_job_t *j, int64_t s, int64_t e)                    \
    {                                                                           \
        const dtype_t dt = j->c->in[0]->dtype;                                  \
        if (dtype_is_float(dt)) {                                               \
            DISPATCH_FLOAT(dt, BIN_RANGE(j, T, T, T, s, e, FEXPR),              \
                           return ew_bad_type(j->c, dt))                        \
        } else {                                                                \
            DISPATCH_INT(dt, BIN_RANGE(j, T, T, T, s, e, IEXPR),                \
                         return ew_bad_type(j->c, dt))                          \
        }                                                                       \
        return 0;                                                               \
    }

/* Kernels and shape functions, by file. */
/* unary.c */
/* One input of a type in mask; output of its shape and type (bool if bool_out). */
int ew_shape_unary(op_ctx_t *c, unsigned mask, int bool_out);
int ew_shape_float(op_ctx_t *c);
int ew_shape_numeric(op_ctx_t *c);
int ew_shape_neg(op_ctx_t *c);
int ew_shape_not(op_ctx_t *c);
int ew_shape_isx(op_ctx_t *c);
int run_abs(op_ctx_t *c);   int run_neg(op_ctx_t *c);   int run_sign(op_ctx_t *c);
int run_ceil(op_ctx_t *c);  int run_floor(op_ctx_t *c); int run_round(op_ctx_t *c);
int run_exp(op_ctx_t *c);   int run_log(op_ctx_t *c);   int run_sqrt(op_ctx_t *c);
int run_reciprocal(op_ctx_t *c); int run_erf(op_ctx_t *c);
int run_sin(op_ctx_t *c);   int run_cos(op_ctx_t *c);   int run_tan(op_ctx_t *c);
int run_asin(op_ctx_t *c);  int run_acos(op_ctx_t *c);  int run_atan(op_ctx_t *c);
int run_sinh(op_ctx_t *c);  int run_cosh(op_ctx_t *c);  int run_tanh(op_ctx_t *c);
int run_asinh(op_ctx_t *c); int run_acosh(op_ctx_t *c); int run_atanh(op_ctx_t *c);
int run_not(op_ctx_t *c);   int run_isinf(op_ctx_t *c); int run_isnan(op_ctx_t *c);
/* activation.c */
int ew_shape_relu(op_ctx_t *c);
int ew_shape_shrink(op_ctx_t *c);
int ew_shape_prelu(op_ctx_t *c);
int ew_shape_clip(op_ctx_t *c);
int ew_shape_gelu(op_ctx_t *c);
int run_relu(op_ctx_t *c);  int run_sigmoid(op_ctx_t *c); int run_softplus(op_ctx_t *c);
int run_softsign(op_ctx_t *c); int run_elu(op_ctx_t *c); int run_selu(op_ctx_t *c);
int run_celu(op_ctx_t *c);  int run_leakyrelu(op_ctx_t *c); int run_hardsigmoid(op_ctx_t *c);
int run_hardswish(op_ctx_t *c); int run_mish(op_ctx_t *c); int run_gelu(op_ctx_t *c);
int run_thresholdedrelu(op_ctx_t *c); int run_shrink(op_ctx_t *c);
int run_prelu(op_ctx_t *c); int run_clip(op_ctx_t *c);
/* binary.c */
int ew_shape_arith(op_ctx_t *c);
int ew_shape_compare(op_ctx_t *c);
int ew_shape_equal(op_ctx_t *c);
int ew_shape_logic(op_ctx_t *c);
int ew_shape_bitshift(op_ctx_t *c);
int ew_shape_mod(op_ctx_t *c);
int ew_shape_pow(op_ctx_t *c);
int run_add(op_ctx_t *c);   int run_sub(op_ctx_t *c);   int run_mul(op_ctx_t *c);
int run_div(op_ctx_t *c);   int run_mod(op_ctx_t *c);   int run_pow(op_ctx_t *c);
int run_bitshift(op_ctx_t *c);
int run_equal(op_ctx_t *c); int run_greater(op_ctx_t *c); int run_greater_equal(op_ctx_t *c);
int run_less(op_ctx_t *c);  int run_less_equal(op_ctx_t *c);
int run_and(op_ctx_t *c);   int run_or(op_ctx_t *c);    int run_xor(op_ctx_t *c);
/* variadic.c */
int ew_shape_variadic(op_ctx_t *c);
int ew_shape_where(op_ctx_t *c);
int run_sum(op_ctx_t *c);   int run_max(op_ctx_t *c);   int run_min(op_ctx_t *c);
int run_mean(op_ctx_t *c);  int run_where(op_ctx_t *c);
/* cast.c */
int ew_shape_cast(op_ctx_t *c);
int ew_shape_castlike(op_ctx_t *c);
int run_cast(op_ctx_t *c);

#endif

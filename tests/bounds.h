/* bounds.h — error bounds for tests that compare a kernel with a reference
 * computed in another order (a loop in double, OpenBLAS, numpy). Such
 * results differ by rounding, and by how much depends on the summation order
 * a CPU's kernel picks: a constant that held on one machine fails on the
 * next. The bounds here follow from the arithmetic instead, element by
 * element, so they hold on any CPU and for any order or blocking.
 *
 * The rule (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed.,
 * §3.1): a sum of terms computed in floating point with unit roundoff u, in
 * any order, where no term goes through more than n roundings (its product,
 * then the additions on its way to the result; an FMA only saves one),
 * differs from the exact sum by at most gamma(n) * sum |term|, with
 * gamma(n) = n u / (1 - n u). A length-k dot product plus a bias: n = k + 1.
 * The reference in double has its own error, gamma(n) with u = 2^-53, which
 * the bounds add. A count larger than the true one only loosens a bound, so
 * tests may round counts up. */
#ifndef PARITY_TESTS_BOUNDS_H
#define PARITY_TESTS_BOUNDS_H

#include <math.h>
#include <stdint.h>
#include "tensor/tensor.h"

#define U_FLOAT 0x1p-24    /* unit roundoff of float32: half an ulp of 1 */
#define U_DOUBLE 0x1p-53

static inline double gamma_n(double n, double u)
{
    return n * u / (1 - n * u);
}

/* Roundings a term of a length-k dot product goes through in fgemm's
 * blocked order (ops/gemm/fgemm_impl.h: blocks of 256 steps, each one FMA
 * chain, their sums added in order): at most 256 in its block's chain,
 * one per later block's addition. For parity's own kernels only; other
 * orders (OpenBLAS, --kernels blas) keep n = k. */
static inline double dot_rounds(double k)
{
    double kb = 256, blocks = ceil(k / kb);
    return (k < kb ? k : kb) + (blocks > 1 ? blocks - 1 : 0);
}

/* |computed - reference| for a sum of terms accumulated with unit roundoff u
 * (U_FLOAT, U_DOUBLE), at most n roundings per term, mag = sum |term|; the
 * double reference's own error included. */
static inline double sum_bound(double n, double mag, double u)
{
    return (gamma_n(n, u) + gamma_n(n, U_DOUBLE)) * mag;
}

/* A value known within d passed through a function with Lipschitz constant
 * lip, computed within ulps ulps of its result (0.5 for one correctly
 * rounded operation; an ulp is at most 2u of the value): the bound on the
 * result, around want = f(exact). Subnormal results add ulps ulps of the
 * smallest subnormal. */
static inline double fn_bound(double d, double lip, double ulps, double want, double u)
{
    return lip * d + ulps * (2 * u * (fabs(want) + lip * d) + (u == U_FLOAT ? 0x1p-149 : 0x1p-1074));
}

/* Linear interpolation along naxes axes (bilinear: 2) whose source
 * coordinates, at most cmag in size, take at most ncoord operations each:
 * a weight is off by at most gamma(ncoord + 1) * (cmag + 1) (the + 1: the
 * fraction c - floor(c)), a product of naxes weights by naxes times that plus
 * gamma(naxes), and the sum over the 2^naxes taps adds its own rounding; the
 * values are at most vmax in size. For the kernel (u) and the double
 * reference alike. */
static inline double interp_bound_u(int naxes, int ncoord, double cmag, double vmax, double u)
{
    double taps = ldexp(1, naxes), dw = gamma_n(ncoord + 1, u) * (cmag + 1);
    return taps * (naxes * dw + gamma_n(naxes, u)) * vmax + gamma_n(taps, u) * vmax;
}
static inline double interp_bound(int naxes, int ncoord, double cmag, double vmax, double u)
{
    return interp_bound_u(naxes, ncoord, cmag, vmax, u) + interp_bound_u(naxes, ncoord, cmag, vmax, U_DOUBLE);
}

/* Largest |value| of a tensor (NaN skipped). */
static inline double max_abs(const tensor_t *t)
{
    double m = 0;
    for (int64_t i = 0; i < tensor_numel(t); i++) m = fmax(m, fabs(tensor_get_f64(t, i)));
    return m;
}

/* The worst |got - want| / bound over a tensor (0 where both are 0), so a
 * test passes when it is at most 1; INFINITY on a shape mismatch or where
 * one side is NaN and the other not. */
static inline double bound_ratio(const tensor_t *got, const double *want, const double *bound, int nd,
                                 const int64_t *dims)
{
    if (got->ndim != nd) return INFINITY;
    for (int d = 0; d < nd; d++)
        if (got->dims[d] != dims[d]) return INFINITY;
    double worst = 0;
    for (int64_t i = 0; i < tensor_numel(got); i++) {
        double g = tensor_get_f64(got, i), err = g == want[i] ? 0 : fabs(g - want[i]);   /* equal infinities too */
        if (isnan(g) && isnan(want[i])) continue;
        double r = err == 0 ? 0 : err / bound[i];
        if (!(r <= worst)) worst = isnan(r) ? INFINITY : r;
    }
    return worst;
}

#endif

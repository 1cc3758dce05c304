"""bounds.py — the rule of tests/bounds.h for the Python tests: a sum of
terms computed in floating point with unit roundoff u, in any order, no term
going through more than n roundings, is within gamma(n) * sum |term| of the
exact sum, gamma(n) = n u / (1 - n u) (Higham, Accuracy and Stability of
Numerical Algorithms, 2nd ed., 3.1); the float64 reference's own error is
added. Bounds are per element (numpy arrays), so they hold on any CPU."""
import numpy as np

U32, U64 = 2.0 ** -24, 2.0 ** -53


def gamma(n, u=U32):
    return n * u / (1 - n * u)


def sum_bound(n, mag, u=U32):
    """|computed - exact| of sums of magnitude mag (sum |term|, an array)."""
    return (gamma(n, u) + gamma(n, U64)) * np.asarray(mag, np.float64)


def fn_bound(d, lip, ulps, want, u=U32):
    """A value known within d through a function of Lipschitz constant lip
    computed within ulps ulps of its result (an ulp is at most 2u of it)."""
    return lip * d + ulps * 2 * u * (np.abs(want) + lip * d)


def within(got, want, bound):
    """Every element of got within its bound of want; the worst ratio."""
    err = np.abs(np.asarray(got, np.float64) - want)
    ratio = np.where(err == 0, 0.0, err / np.where(bound > 0, bound, np.inf))
    worst = float(np.max(ratio)) if ratio.size else 0.0
    return worst <= 1, worst

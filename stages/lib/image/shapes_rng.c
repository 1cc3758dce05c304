/* shapes_rng.c — the shapes dataset's random numbers: xoshiro256** seeded by
 * splitmix64, so that every image of every split has its own independent,
 * reproducible stream (shapes.h). */
#include <math.h>
#include "image/shapes.h"

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void shapes_rng_seed(shapes_rng_t *r, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&x);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t shapes_rng_u64(shapes_rng_t *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double shapes_rng_unit(shapes_rng_t *r)
{
    return (double)(shapes_rng_u64(r) >> 11) * 0x1.0p-53;
}

double shapes_rng_range(shapes_rng_t *r, double lo, double hi)
{
    return lo + (hi - lo) * shapes_rng_unit(r);
}

int shapes_rng_int(shapes_rng_t *r, int n)
{
    /* n is small (< 2^16): the modulo bias is far below anything visible. */
    return (int)(shapes_rng_u64(r) % (uint64_t)n);
}

double shapes_rng_normal(shapes_rng_t *r)
{
    /* Box-Muller; 1 - unit is in (0, 1], so the log is finite. */
    double u = 1.0 - shapes_rng_unit(r), v = shapes_rng_unit(r);
    return sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v);
}

uint64_t shapes_image_seed(uint64_t seed, uint64_t salt, uint64_t index)
{
    uint64_t x = seed;
    uint64_t a = splitmix64(&x);
    x = a ^ (salt * 0xD1B54A32D192ED03ull);
    uint64_t b = splitmix64(&x);
    x = b ^ index;
    return splitmix64(&x);
}

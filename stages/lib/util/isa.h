/* isa.h — which instruction set parity's kernels use, and whether matrix
 * products go to parity's own kernels or to OpenBLAS.
 *
 * Every kernel whose result depends on the order of its operations has one
 * arithmetic, written for several instruction sets (AVX-512, AVX2+FMA,
 * portable C) that round in the same sequence, so the bits of a result never
 * depend on the CPU. The level in use is the best the CPU has, capped by
 * PARITY_ISA (environment) or isa_set_cap (infer/build-engine --isa).
 * OpenBLAS (--kernels blas) is faster on some shapes but its results
 * depend on the CPU it runs on: an explicit choice, never a fallback. */
#ifndef PARITY_ISA_H
#define PARITY_ISA_H

typedef enum isa { ISA_GENERIC = 0, ISA_AVX2 = 1, ISA_AVX512 = 2 } isa_t;

/* The best level this CPU supports: AVX-512 needs avx512f (and the AVX2
 * level), AVX2 needs avx2, fma and f16c. */
isa_t isa_cpu(void);
/* The level the kernels use now: isa_cpu() capped by PARITY_ISA or isa_set_cap. */
isa_t isa_active(void);
const char *isa_name(isa_t isa);
/* "avx512", "avx2", "generic" -> *out; -1 for anything else. */
int isa_parse(const char *name, isa_t *out);
/* Caps the level at name (what --isa and PARITY_ISA do). Returns 0, or -1
 * with a one-line reason in err: a name that is no level, or one this CPU
 * lacks (the caller exits 2). */
int isa_select(const char *name, char *err, unsigned errlen);
/* Sets the cap directly (tests loop over levels); a level above the CPU's is clamped. */
void isa_set_cap(isa_t isa);

/* The one selection point of every kernel family with per-ISA code
 * (docs/design.md, "ISA dispatch"): of the family's tables for each level
 * -- NULL where a level has no code of its own -- the one for isa_active(),
 * else the nearest below it that has one. Each family wraps it in one typed
 * function (fgemm_arch, vmath_arch, ...), called on every use, so a level
 * capped by PARITY_ISA, --isa or isa_set_cap takes effect at once. */
const void *isa_pick(const void *generic, const void *avx2, const void *avx512);
/* A per-ISA table's address where the build has x86 kernels, else NULL
 * (the table is then not even declared): isa_pick's arguments. */
#if defined(__x86_64__) && defined(__GNUC__)
#define ISA_X86 1
#define ISA_TABLE(t) (t)
#else
#define ISA_X86 0
#define ISA_TABLE(t) ((const void *)0)
#endif

/* Matrix products: parity's own reproducible kernels (the default) or OpenBLAS. */
typedef enum kernels { KERNELS_OWN = 0, KERNELS_BLAS = 1 } kernels_t;
kernels_t kernels_mode(void);
void kernels_set_mode(kernels_t k);
/* "own" / "blas" -> 0, else -1 with a reason in err. */
int kernels_select(const char *name, char *err, unsigned errlen);
const char *kernels_name(kernels_t k);

/* What infer and build-engine do with --isa NAME and --kernels NAME (each
 * may be NULL: then PARITY_ISA, then the CPU's best; own kernels): an
 * unknown name or a level the CPU lacks is bad usage (one line, exit 2). */
void isa_configure(const char *prog, const char *isa, const char *kernels);

#endif

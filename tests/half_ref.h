/* half_ref.h — the compiler's own IEEE binary16 type, the independent oracle
 * of the float16 tests: _Float16 under gcc (libgcc's conversions); clang 14
 * has no _Float16 on x86, so there it is __fp16, whose conversions
 * (compiler-rt's, round to nearest even; the Makefile links compiler-rt
 * under clang) are the same IEEE operation. */
#ifndef PARITY_HALF_REF_H
#define PARITY_HALF_REF_H

#if defined(__clang__) && __clang_major__ < 15
typedef __fp16 half_ref_t;
#else
typedef _Float16 half_ref_t;
#endif

#endif

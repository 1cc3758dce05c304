/* isa.c — the instruction-set level the kernels run at (see isa.h): found
 * once from the CPU, capped by PARITY_ISA or --isa. A bad PARITY_ISA is bad
 * usage: one line naming it, exit 2, before any kernel runs. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/isa.h"
#include "util/err.h"
#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif

static const char *const names[] = {"generic", "avx2", "avx512"};

static atomic_int cap = -1;        /* -1: not yet read from PARITY_ISA */
static atomic_int mode = KERNELS_OWN;

isa_t isa_cpu(void)
{
    static atomic_int cpu = -1;
    int v = atomic_load(&cpu);
    if (v < 0) {
        v = ISA_GENERIC;
#if defined(__x86_64__) && defined(__GNUC__)
        /* F16C from CPUID leaf 1 (ECX bit 29): clang rejects the "f16c" string
         * of __builtin_cpu_supports; "avx2" also checks that the OS saves the
         * YMM registers. */
        unsigned a, b, c = 0, d;
        int f16c = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c) {
            v = ISA_AVX2;
            if (__builtin_cpu_supports("avx512f")) v = ISA_AVX512;
        }
#endif
        atomic_store(&cpu, v);
    }
    return (isa_t)v;
}

const char *isa_name(isa_t isa) { return isa >= ISA_GENERIC && isa <= ISA_AVX512 ? names[isa] : "?"; }

int isa_parse(const char *name, isa_t *out)
{
    for (int i = 0; i <= ISA_AVX512; i++)
        if (name && !strcmp(name, names[i])) {
            *out = (isa_t)i;
            return 0;
        }
    return -1;
}

int isa_select(const char *name, char *err, unsigned errlen)
{
    isa_t want;
    if (isa_parse(name, &want)) {
        snprintf(err, errlen, "'%s' is not an instruction set (avx512, avx2 or generic)", name ? name : "");
        return -1;
    }
    if (want > isa_cpu()) {
        snprintf(err, errlen, "this CPU does not support %s (it supports up to %s)", name, isa_name(isa_cpu()));
        return -1;
    }
    atomic_store(&cap, want);
    return 0;
}

void isa_set_cap(isa_t isa) { atomic_store(&cap, isa > isa_cpu() ? isa_cpu() : isa); }

isa_t isa_active(void)
{
    int c = atomic_load(&cap);
    if (c < 0) {
        const char *env = getenv("PARITY_ISA");
        char err[160];
        if (env && *env && isa_select(env, err, sizeof err)) {
            fprintf(stderr, "PARITY_ISA: %s\n", err);
            exit(2);
        }
        if (!env || !*env) atomic_store(&cap, isa_cpu());
        c = atomic_load(&cap);
    }
    isa_t cpu = isa_cpu();
    return c > (int)cpu ? cpu : (isa_t)c;
}

const void *isa_pick(const void *generic, const void *avx2, const void *avx512)
{
    isa_t level = isa_active();
    if (level >= ISA_AVX512 && avx512) return avx512;
    if (level >= ISA_AVX2 && avx2) return avx2;
    return generic;
}

kernels_t kernels_mode(void) { return (kernels_t)atomic_load(&mode); }
void kernels_set_mode(kernels_t k) { atomic_store(&mode, k); }
const char *kernels_name(kernels_t k) { return k == KERNELS_BLAS ? "blas" : "own"; }

int kernels_select(const char *name, char *err, unsigned errlen)
{
    if (name && !strcmp(name, "own")) kernels_set_mode(KERNELS_OWN);
    else if (name && !strcmp(name, "blas")) kernels_set_mode(KERNELS_BLAS);
    else {
        snprintf(err, errlen, "'%s' is not a kernel set (own or blas)", name ? name : "");
        return -1;
    }
    return 0;
}

void isa_configure(const char *prog, const char *isa, const char *kernels)
{
    char err[160];
    const char *env = getenv("PARITY_ISA");
    if (isa ? isa_select(isa, err, sizeof err) : env && *env && isa_select(env, err, sizeof err))
        die_usage(prog, "%s: %s", isa ? "--isa" : "PARITY_ISA", err);
    if (kernels && kernels_select(kernels, err, sizeof err)) die_usage(prog, "--kernels: %s", err);
}

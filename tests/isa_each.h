/* isa_each.h — runs a unit test's checks once per instruction-set level
 * this CPU supports (util/isa.h: AVX-512, AVX2+FMA, portable C), best
 * first, with the kernels capped at that level; restores the CPU's best. */
#ifndef PARITY_TEST_ISA_EACH_H
#define PARITY_TEST_ISA_EACH_H

#include "tap.h"
#include "util/isa.h"

static inline void at_each_isa(void (*checks)(void))
{
    for (int l = isa_cpu(); l >= ISA_GENERIC; l--) {
        isa_set_cap((isa_t)l);
        diag("kernels at ISA level %s", isa_name((isa_t)l));
        checks();
    }
    isa_set_cap(isa_cpu());
}

#endif

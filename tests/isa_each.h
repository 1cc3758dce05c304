/* isa_each.h — runs a unit test's checks once per instruction-set level
 * this CPU supports (util/isa.h: AVX-512, AVX2+FMA, portable C), best
 * first, with the kernels capped at that level; restores the CPU's best. */
#ifndef PARITY_TEST_ISA_EACH_H
#define PARITY_TEST_ISA_EACH_H

#include "tap.h"
#include "util/isa.h"

static int isa_each_level_ = -1;   /* the level at_each_isa runs now, -1 outside it */

static inline void at_each_isa(void (*checks)(void))
{
    for (int l = isa_cpu(); l >= ISA_GENERIC; l--) {
        isa_each_level_ = l;
        isa_set_cap((isa_t)l);
        diag("kernels at ISA level %s", isa_name((isa_t)l));
        checks();
    }
    isa_each_level_ = -1;
    isa_set_cap(isa_cpu());
}

/* A comparison's reference inside one level's checks: on = 1 runs every
 * kernel family at the portable level, on = 0 returns to the level
 * at_each_isa set (the CPU's best outside it). Not thread-safe: call it
 * between kernel runs. */
static inline void isa_force_generic(int on)
{
    isa_set_cap(on ? ISA_GENERIC : isa_each_level_ < 0 ? isa_cpu() : (isa_t)isa_each_level_);
}

#endif

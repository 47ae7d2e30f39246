/* sim_interleave.cpp - the hooks of an INTERLEAVE=1 build (build.sh): the
 * csrc/cuda sources are compiled with g++'s -fsanitize=thread instrumentation
 * but linked without ThreadSanitizer's runtime, so every load and store of a
 * kernel calls one of these functions first. Under BF_SIM_INTERLEAVE=1 a store
 * to device or shared memory yields to the other threads of the block
 * (bf_sim_yield, sim_runtime.cpp): between a plain `x += v`'s load and its
 * store the others load the same x, and all but one update are lost, as on a
 * GPU. Loads do not yield. In the default build nothing calls these. */
#include <stddef.h>
#include <stdint.h>

#include "sim_internal.h"

extern "C" void bf_sim_yield(void);
extern "C" char __start_bf_sim_shared[] __attribute__((weak, visibility("hidden")));
extern "C" char __stop_bf_sim_shared[] __attribute__((weak, visibility("hidden")));

static void store(void *p) {
    if (!sim_cfg().interleave) return;
    const char *c = (const char *)p;
    if ((__start_bf_sim_shared && c >= __start_bf_sim_shared && c < __stop_bf_sim_shared) || sim_is_device(p))
        bf_sim_yield();
}

#define HOOK extern "C" __attribute__((visibility("hidden")))
HOOK void __tsan_init(void) {}
HOOK void __tsan_read1(void *) {}
HOOK void __tsan_read2(void *) {}
HOOK void __tsan_read4(void *) {}
HOOK void __tsan_read8(void *) {}
HOOK void __tsan_read16(void *) {}
HOOK void __tsan_unaligned_read2(void *) {}
HOOK void __tsan_unaligned_read4(void *) {}
HOOK void __tsan_unaligned_read8(void *) {}
HOOK void __tsan_unaligned_read16(void *) {}
HOOK void __tsan_read_range(void *, size_t) {}
HOOK void __tsan_write1(void *p) { store(p); }
HOOK void __tsan_write2(void *p) { store(p); }
HOOK void __tsan_write4(void *p) { store(p); }
HOOK void __tsan_write8(void *p) { store(p); }
HOOK void __tsan_write16(void *p) { store(p); }
HOOK void __tsan_unaligned_write2(void *p) { store(p); }
HOOK void __tsan_unaligned_write4(void *p) { store(p); }
HOOK void __tsan_unaligned_write8(void *p) { store(p); }
HOOK void __tsan_unaligned_write16(void *p) { store(p); }
HOOK void __tsan_write_range(void *p, size_t) { store(p); }
HOOK void __tsan_func_entry(void *) {}
HOOK void __tsan_func_exit(void) {}
HOOK void __tsan_vptr_update(void **, void *) {}
HOOK void __tsan_vptr_read(void **) {}

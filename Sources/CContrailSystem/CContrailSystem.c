#define _GNU_SOURCE  // pthread_setname_np
#include "CContrailSystem.h"

#if defined(__GLIBC__)
#include <malloc.h>
void ccontrail_release_free_memory(void) {
    // glibc raises both thresholds as big blocks are freed (up to 32 and 64 MiB), and `malloc_trim`
    // never shrinks a thread arena's free top: only a free into that arena does, once the top
    // exceeds the trim threshold. Fixed at 1 MiB, bigger blocks are mapped on their own and a thread
    // arena keeps at most 1 MiB free at its top.
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
    mallopt(M_TRIM_THRESHOLD, 1 << 20);
    malloc_trim(0);
}
long long ccontrail_allocated_bytes(void) {
    struct mallinfo2 info = mallinfo2();
    return (long long)(info.uordblks + info.hblkhd);
}
#else
void ccontrail_release_free_memory(void) {}
long long ccontrail_allocated_bytes(void) { return -1; }
#endif

#if defined(__linux__)
#include <pthread.h>
void ccontrail_name_current_thread(const char *name) { (void)pthread_setname_np(pthread_self(), name); }
#else
void ccontrail_name_current_thread(const char *name) { (void)name; }
#endif

#if defined(__x86_64__)
#include <cpuid.h>
#include <string.h>

int ccontrail_crc32c_available(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    return (c & bit_SSE4_2) != 0;
}

__attribute__((target("sse4.2")))
uint32_t ccontrail_crc32c_extend(uint32_t crc, const void *bytes, size_t count) {
    const unsigned char *p = bytes;
    uint64_t c = crc;
    while (count >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        c = __builtin_ia32_crc32di(c, word);
        p += 8;
        count -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (count > 0) {
        c32 = __builtin_ia32_crc32qi(c32, *p++);
        count--;
    }
    return c32;
}
#else
int ccontrail_crc32c_available(void) { return 0; }

uint32_t ccontrail_crc32c_extend(uint32_t crc, const void *bytes, size_t count) {
    (void)bytes;
    (void)count;
    return crc;
}
#endif

// Weak: defined only when the ThreadSanitizer runtime is linked (`swift test --sanitize=thread`).
extern void __tsan_acquire(void *address) __attribute__((weak));
extern void __tsan_release(void *address) __attribute__((weak));

int ccontrail_tsan_active(void) { return __tsan_acquire != 0; }

void ccontrail_tsan_acquire(void *address) {
    if (__tsan_acquire) __tsan_acquire(address);
}

void ccontrail_tsan_release(void *address) {
    if (__tsan_release) __tsan_release(address);
}

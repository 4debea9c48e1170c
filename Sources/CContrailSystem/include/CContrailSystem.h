#ifndef CCONTRAIL_SYSTEM_H
#define CCONTRAIL_SYSTEM_H
// Linux readiness APIs that Swift's Glibc module does not export.
#if defined(__linux__)
#include <sys/epoll.h>
#include <sys/eventfd.h>
#endif
#include <sys/resource.h>
#include <stddef.h>
#include <stdint.h>

/// 1 when this CPU has the CRC-32C instruction ccontrail_crc32c_extend uses (x86-64 SSE 4.2), else 0.
int ccontrail_crc32c_available(void);

/// Continues a CRC-32C over `count` bytes with the CPU's instruction: `crc` and the result are the
/// register value, not inverted (pass ~checksum, invert the result). Call only when
/// ccontrail_crc32c_available() returned 1; elsewhere it returns `crc` unchanged. O(count).
uint32_t ccontrail_crc32c_extend(uint32_t crc, const void *bytes, size_t count);

/// The soft RLIMIT_NOFILE, or -1 when unlimited or unknown.
static inline long long ccontrail_descriptor_limit(void) {
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return -1;
    return (long long)limit.rlim_cur;
}

/// Returns the allocator's free pages to the system: glibc's `malloc_trim(0)` (which the Glibc module
/// does not export), after fixing glibc's mmap and trim thresholds at 1 MiB so that a thread arena
/// gives back its free top on the next big free; nothing elsewhere.
void ccontrail_release_free_memory(void);

/// The bytes the allocator has handed out and not taken back (glibc's `mallinfo2().uordblks`, for
/// tests that account a structure's memory), -1 elsewhere.
long long ccontrail_allocated_bytes(void);

/// Names the calling thread: `pthread_setname_np`, which the Glibc module does not export (a GNU
/// extension). Linux keeps at most 15 bytes and refuses a longer name; nothing elsewhere.
void ccontrail_name_current_thread(const char *name);

/// ThreadSanitizer's happens-before annotations (`__tsan_acquire`/`__tsan_release`), for locks it
/// cannot see; no-ops, and `ccontrail_tsan_active()` false, unless the TSan runtime is linked.
int ccontrail_tsan_active(void);
void ccontrail_tsan_acquire(void *address);
void ccontrail_tsan_release(void *address);
#endif

#ifndef CCONTRAIL_SYSTEM_H
#define CCONTRAIL_SYSTEM_H
// Linux readiness APIs that Swift's Glibc module does not export.
#if defined(__linux__)
#include <sys/epoll.h>
#include <sys/eventfd.h>
#endif
#include <sys/resource.h>

/// The soft RLIMIT_NOFILE, or -1 when unlimited or unknown.
static inline long long ccontrail_descriptor_limit(void) {
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return -1;
    return (long long)limit.rlim_cur;
}
/// ThreadSanitizer's happens-before annotations (`__tsan_acquire`/`__tsan_release`), for locks it
/// cannot see; no-ops, and `ccontrail_tsan_active()` false, unless the TSan runtime is linked.
int ccontrail_tsan_active(void);
void ccontrail_tsan_acquire(void *address);
void ccontrail_tsan_release(void *address);
#endif

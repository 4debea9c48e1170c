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
#endif

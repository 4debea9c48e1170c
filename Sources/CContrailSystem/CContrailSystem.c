#include "CContrailSystem.h"

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

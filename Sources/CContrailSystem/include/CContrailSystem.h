#ifndef CCONTRAIL_SYSTEM_H
#define CCONTRAIL_SYSTEM_H
// Linux readiness APIs that Swift's Glibc module does not export.
#if defined(__linux__)
#include <sys/epoll.h>
#include <sys/eventfd.h>
#endif
#endif

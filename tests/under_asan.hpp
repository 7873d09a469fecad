#pragma once
// VIT_UNDER_ASAN is defined when the tests are built with AddressSanitizer
// (scripts/sanitize.sh, gcc or clang), for the few tests whose subject ASan
// replaces: the address-space limit, glibc's malloc.
#if defined(__SANITIZE_ADDRESS__)
#define VIT_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define VIT_UNDER_ASAN 1
#endif
#endif

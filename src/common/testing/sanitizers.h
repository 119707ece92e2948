// Whether this translation unit is built with ThreadSanitizer, for the few tests and shims
// that differ under it: GCC defines __SANITIZE_THREAD__, clang answers __has_feature.
#pragma once

#if defined(__SANITIZE_THREAD__)
#define KF_THREAD_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KF_THREAD_SANITIZER 1
#endif
#endif

namespace kf::testing {

#ifdef KF_THREAD_SANITIZER
inline constexpr bool kThreadSanitizer = true;
#else
inline constexpr bool kThreadSanitizer = false;
#endif

}  // namespace kf::testing

// ThreadSanitizer builds only (KF_TSAN, linked into every executable): makes absl's Mutex,
// CondVar and Notification visible to TSan.
//
// Debian's absl is a shared library built without -fsanitize=thread, so its Mutex never
// calls the __tsan_mutex_* hooks that absl calls when it is itself built with TSan: TSan would
// see no happens-before through any absl::Mutex and report every ABSL_GUARDED_BY member as a
// race. This file defines absl's out-of-line lock, unlock and wait entry points in the
// executable (exported with -rdynamic, so the absl and gRPC libraries' own calls reach them
// too); each tells TSan what absl's TSan build would tell it and forwards to the real function
// in the shared library (dlsym RTLD_NEXT). Memory accesses inside the real call (a Condition
// evaluated by whichever thread unlocks) are ignored, as absl's own annotations ignore them.
#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"

#if !defined(__SANITIZE_THREAD__) && defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define __SANITIZE_THREAD__ 1
#endif
#endif
#ifndef __SANITIZE_THREAD__
#error "tsan_absl_mutex.cc belongs in -fsanitize=thread builds only"
#endif

namespace {

#define KF_STR2(x) #x
#define KF_STR(x) KF_STR2(x)

// The real function `suffix` of absl's inline namespace, e.g. "5Mutex4LockEv" for Mutex::Lock().
void* Real(const char* suffix) {
  const char* ns = KF_STR(ABSL_OPTION_INLINE_NAMESPACE_NAME);
  std::string name = "_ZN4absl" + std::to_string(std::strlen(ns)) + ns + suffix;
  if (*suffix == 'K') name = "_ZNK4absl" + std::to_string(std::strlen(ns)) + ns + (suffix + 1);
  void* f = dlsym(RTLD_NEXT, name.c_str());
  if (f == nullptr) {
    std::fprintf(stderr, "tsan_absl_mutex: %s not found in the absl libraries\n", name.c_str());
    std::abort();
  }
  return f;
}

template <typename F>
F RealFn(const char* suffix) {
  return reinterpret_cast<F>(Real(suffix));
}

// What absl's Await and CondVar::Wait do to a held Mutex: release it, wait (with accesses
// ignored), reacquire it.
void PreWait(void* mu, unsigned flags) {
  __tsan_mutex_pre_unlock(mu, flags);
  __tsan_mutex_post_unlock(mu, flags);
  __tsan_mutex_pre_lock(mu, flags);
}
void PostWait(void* mu, unsigned flags) { __tsan_mutex_post_lock(mu, flags, 0); }

}  // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

// The analysis cannot see through the forwarding calls; the annotations on the declarations
// in mutex.h are what callers are checked against.
#define KF_FORWARD ABSL_NO_THREAD_SAFETY_ANALYSIS

Mutex::~Mutex() {
  static auto real = RealFn<void (*)(Mutex*)>("5MutexD1Ev");
  __tsan_mutex_destroy(this, 0);
  real(this);
}

void Mutex::Lock() KF_FORWARD {
  static auto real = RealFn<void (*)(Mutex*)>("5Mutex4LockEv");
  __tsan_mutex_pre_lock(this, 0);
  real(this);
  __tsan_mutex_post_lock(this, 0, 0);
}

void Mutex::ReaderLock() KF_FORWARD {
  static auto real = RealFn<void (*)(Mutex*)>("5Mutex10ReaderLockEv");
  __tsan_mutex_pre_lock(this, __tsan_mutex_read_lock);
  real(this);
  __tsan_mutex_post_lock(this, __tsan_mutex_read_lock, 0);
}

bool Mutex::TryLock() KF_FORWARD {
  static auto real = RealFn<bool (*)(Mutex*)>("5Mutex7TryLockEv");
  __tsan_mutex_pre_lock(this, __tsan_mutex_try_lock);
  bool locked = real(this);
  __tsan_mutex_post_lock(this, __tsan_mutex_try_lock | (locked ? 0 : __tsan_mutex_try_lock_failed),
                         0);
  return locked;
}

bool Mutex::ReaderTryLock() KF_FORWARD {
  static auto real = RealFn<bool (*)(Mutex*)>("5Mutex13ReaderTryLockEv");
  const unsigned flags = __tsan_mutex_read_lock | __tsan_mutex_try_lock;
  __tsan_mutex_pre_lock(this, flags);
  bool locked = real(this);
  __tsan_mutex_post_lock(this, flags | (locked ? 0 : __tsan_mutex_try_lock_failed), 0);
  return locked;
}

void Mutex::Unlock() KF_FORWARD {
  static auto real = RealFn<void (*)(Mutex*)>("5Mutex6UnlockEv");
  __tsan_mutex_pre_unlock(this, 0);
  real(this);
  __tsan_mutex_post_unlock(this, 0);
}

void Mutex::ReaderUnlock() KF_FORWARD {
  static auto real = RealFn<void (*)(Mutex*)>("5Mutex12ReaderUnlockEv");
  __tsan_mutex_pre_unlock(this, __tsan_mutex_read_lock);
  real(this);
  __tsan_mutex_post_unlock(this, __tsan_mutex_read_lock);
}

void Mutex::LockWhen(const Condition& cond) KF_FORWARD {
  static auto real =
      RealFn<void (*)(Mutex*, const Condition&)>("5Mutex8LockWhenERKNS0_9ConditionE");
  __tsan_mutex_pre_lock(this, 0);
  real(this, cond);
  __tsan_mutex_post_lock(this, 0, 0);
}

void Mutex::ReaderLockWhen(const Condition& cond) KF_FORWARD {
  static auto real =
      RealFn<void (*)(Mutex*, const Condition&)>("5Mutex14ReaderLockWhenERKNS0_9ConditionE");
  __tsan_mutex_pre_lock(this, __tsan_mutex_read_lock);
  real(this, cond);
  __tsan_mutex_post_lock(this, __tsan_mutex_read_lock, 0);
}

bool Mutex::LockWhenWithTimeout(const Condition& cond, Duration timeout) KF_FORWARD {
  static auto real = RealFn<bool (*)(Mutex*, const Condition&, Duration)>(
      "5Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  __tsan_mutex_pre_lock(this, 0);
  bool res = real(this, cond, timeout);
  __tsan_mutex_post_lock(this, 0, 0);
  return res;
}

bool Mutex::LockWhenWithDeadline(const Condition& cond, Time deadline) KF_FORWARD {
  static auto real = RealFn<bool (*)(Mutex*, const Condition&, Time)>(
      "5Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  __tsan_mutex_pre_lock(this, 0);
  bool res = real(this, cond, deadline);
  __tsan_mutex_post_lock(this, 0, 0);
  return res;
}

bool Mutex::ReaderLockWhenWithTimeout(const Condition& cond, Duration timeout) KF_FORWARD {
  static auto real = RealFn<bool (*)(Mutex*, const Condition&, Duration)>(
      "5Mutex25ReaderLockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  __tsan_mutex_pre_lock(this, __tsan_mutex_read_lock);
  bool res = real(this, cond, timeout);
  __tsan_mutex_post_lock(this, __tsan_mutex_read_lock, 0);
  return res;
}

bool Mutex::ReaderLockWhenWithDeadline(const Condition& cond, Time deadline) KF_FORWARD {
  static auto real = RealFn<bool (*)(Mutex*, const Condition&, Time)>(
      "5Mutex26ReaderLockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  __tsan_mutex_pre_lock(this, __tsan_mutex_read_lock);
  bool res = real(this, cond, deadline);
  __tsan_mutex_post_lock(this, __tsan_mutex_read_lock, 0);
  return res;
}

// Await is only ever called with the Mutex held exclusively in this code base; TSan reports a
// bad unlock if that changes.
void Mutex::Await(const Condition& cond) {
  static auto real = RealFn<void (*)(Mutex*, const Condition&)>("5Mutex5AwaitERKNS0_9ConditionE");
  PreWait(this, 0);
  real(this, cond);
  PostWait(this, 0);
}

bool Mutex::AwaitWithTimeout(const Condition& cond, Duration timeout) {
  static auto real = RealFn<bool (*)(Mutex*, const Condition&, Duration)>(
      "5Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  PreWait(this, 0);
  bool res = real(this, cond, timeout);
  PostWait(this, 0);
  return res;
}

bool Mutex::AwaitWithDeadline(const Condition& cond, Time deadline) {
  static auto real = RealFn<bool (*)(Mutex*, const Condition&, Time)>(
      "5Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  PreWait(this, 0);
  bool res = real(this, cond, deadline);
  PostWait(this, 0);
  return res;
}

void CondVar::Wait(Mutex* mu) {
  static auto real = RealFn<void (*)(CondVar*, Mutex*)>("7CondVar4WaitEPNS0_5MutexE");
  PreWait(mu, 0);
  real(this, mu);
  PostWait(mu, 0);
}

bool CondVar::WaitWithTimeout(Mutex* mu, Duration timeout) {
  static auto real = RealFn<bool (*)(CondVar*, Mutex*, Duration)>(
      "7CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE");
  PreWait(mu, 0);
  bool res = real(this, mu, timeout);
  PostWait(mu, 0);
  return res;
}

bool CondVar::WaitWithDeadline(Mutex* mu, Time deadline) {
  static auto real =
      RealFn<bool (*)(CondVar*, Mutex*, Time)>("7CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE");
  PreWait(mu, 0);
  bool res = real(this, mu, deadline);
  PostWait(mu, 0);
  return res;
}

static_assert(sizeof(Notification) == 2 * sizeof(Mutex), "Notification is {Mutex, atomic<bool>}");

// Notify happens before every wait that returns because of it and every HasBeenNotified()
// that returns true (an inline acquire load of the flag, sizeof(Mutex) into the object).
void Notification::Notify() {
  static auto real = RealFn<void (*)(Notification*)>("12Notification6NotifyEv");
  __tsan_release(this);
  __tsan_release(reinterpret_cast<char*>(this) + sizeof(Mutex));
  real(this);
}

void Notification::WaitForNotification() const {
  static auto real =
      RealFn<void (*)(const Notification*)>("K12Notification19WaitForNotificationEv");
  real(this);
  __tsan_acquire(const_cast<Notification*>(this));
}

bool Notification::WaitForNotificationWithTimeout(Duration timeout) const {
  static auto real = RealFn<bool (*)(const Notification*, Duration)>(
      "K12Notification30WaitForNotificationWithTimeoutENS0_8DurationE");
  bool res = real(this, timeout);
  __tsan_acquire(const_cast<Notification*>(this));
  return res;
}

bool Notification::WaitForNotificationWithDeadline(Time deadline) const {
  static auto real = RealFn<bool (*)(const Notification*, Time)>(
      "K12Notification31WaitForNotificationWithDeadlineENS0_4TimeE");
  bool res = real(this, deadline);
  __tsan_acquire(const_cast<Notification*>(this));
  return res;
}

ABSL_NAMESPACE_END
}  // namespace absl

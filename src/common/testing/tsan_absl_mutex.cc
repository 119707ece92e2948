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
// Only calls from this executable's code are annotated (see InExecutable); gRPC's own locking
// stays as invisible as the rest of its synchronization.
#include <dlfcn.h>
#include <link.h>
#include <sanitizer/tsan_interface.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "common/testing/sanitizers.h"

#ifndef KF_THREAD_SANITIZER
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

// Whether `pc` is in this executable's code. gRPC's own Mutexes (libgrpc calls these too) are
// left unannotated: the rest of gRPC's synchronization is invisible to TSan, so annotating only
// its locks would report races on the memory they live in.
bool InExecutable(const void* pc) {
  static const std::pair<uintptr_t, uintptr_t> text = [] {
    std::pair<uintptr_t, uintptr_t> r{0, 0};
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* data) {
          auto* r = static_cast<std::pair<uintptr_t, uintptr_t>*>(data);
          for (int i = 0; i < info->dlpi_phnum; ++i) {
            const ElfW(Phdr)& ph = info->dlpi_phdr[i];
            if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
              r->first = info->dlpi_addr + ph.p_vaddr;
              r->second = r->first + ph.p_memsz;
            }
          }
          return 1;  // the first object is the executable
        },
        &r);
    return r;
  }();
  const auto a = reinterpret_cast<uintptr_t>(pc);
  return a >= text.first && a < text.second;
}

// The real functions call each other (AwaitWithTimeout calls AwaitWithDeadline, Notify calls
// Lock) through the same exported symbols: only the outermost call on a thread annotates, and
// only if it came from this executable.
thread_local int t_depth = 0;
class Outer {
 public:
  explicit Outer(const void* caller) : outer_(t_depth++ == 0 && InExecutable(caller)) {}
  ~Outer() { --t_depth; }
  explicit operator bool() const { return outer_; }

 private:
  const bool outer_;
};

// The Mutexes this thread holds shared: Await and CondVar::Wait keep the mode they were held in.
thread_local std::vector<const void*> t_read_held;
void NoteReadLock(const void* mu) { t_read_held.push_back(mu); }
void NoteReadUnlock(const void* mu) {
  auto it = std::find(t_read_held.rbegin(), t_read_held.rend(), mu);
  if (it != t_read_held.rend()) t_read_held.erase(std::next(it).base());
}
unsigned HeldFlags(const void* mu) {
  return std::find(t_read_held.begin(), t_read_held.end(), mu) != t_read_held.end()
             ? __tsan_mutex_read_lock
             : 0;
}

// What absl's Await and CondVar::Wait do to a held Mutex: release it, wait (with accesses
// ignored), reacquire it in the same mode.
unsigned PreWait(void* mu) {
  const unsigned flags = HeldFlags(mu);
  __tsan_mutex_pre_unlock(mu, flags);
  __tsan_mutex_post_unlock(mu, flags);
  __tsan_mutex_pre_lock(mu, flags);
  return flags;
}
void PostWait(void* mu, unsigned flags) { __tsan_mutex_post_lock(mu, flags, 0); }

}  // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

// The analysis cannot see through the forwarding calls; the annotations on the declarations
// in mutex.h are what callers are checked against.
#define KF_FORWARD ABSL_NO_THREAD_SAFETY_ANALYSIS
// Where the forwarder was called from: evaluated in the forwarder itself, never inlined.
#define KF_CALLER __builtin_return_address(0)

Mutex::~Mutex() {
  static auto real = RealFn<void (*)(Mutex*)>("5MutexD1Ev");
  __tsan_mutex_destroy(this, 0);
  real(this);
}

// Lock and the LockWhen family: `flags` says shared or exclusive, `real` does the locking.
template <typename R, typename F>
R LockAnnotated(const void* caller, Mutex* mu, unsigned flags, F real) {
  Outer outer(caller);
  if (!outer) return real();
  __tsan_mutex_pre_lock(mu, flags);
  R res = real();
  __tsan_mutex_post_lock(mu, flags, 0);
  if (flags & __tsan_mutex_read_lock) NoteReadLock(mu);
  return res;
}

template <typename R, typename F>
R AwaitAnnotated(const void* caller, Mutex* mu, F real) {
  Outer outer(caller);
  if (!outer) return real();
  const unsigned flags = PreWait(mu);
  R res = real();
  PostWait(mu, flags);
  return res;
}

void Mutex::Lock() KF_FORWARD {
  static auto real = RealFn<void (*)(Mutex*)>("5Mutex4LockEv");
  LockAnnotated<bool>(KF_CALLER, this, 0, [&] { return real(this), true; });
}

void Mutex::ReaderLock() KF_FORWARD {
  static auto real = RealFn<void (*)(Mutex*)>("5Mutex10ReaderLockEv");
  LockAnnotated<bool>(KF_CALLER, this, __tsan_mutex_read_lock, [&] { return real(this), true; });
}

bool Mutex::TryLock() KF_FORWARD {
  static auto real = RealFn<bool (*)(Mutex*)>("5Mutex7TryLockEv");
  Outer outer(KF_CALLER);
  if (!outer) return real(this);
  __tsan_mutex_pre_lock(this, __tsan_mutex_try_lock);
  bool locked = real(this);
  __tsan_mutex_post_lock(this, __tsan_mutex_try_lock | (locked ? 0 : __tsan_mutex_try_lock_failed),
                         0);
  return locked;
}

bool Mutex::ReaderTryLock() KF_FORWARD {
  static auto real = RealFn<bool (*)(Mutex*)>("5Mutex13ReaderTryLockEv");
  Outer outer(KF_CALLER);
  if (!outer) return real(this);
  const unsigned flags = __tsan_mutex_read_lock | __tsan_mutex_try_lock;
  __tsan_mutex_pre_lock(this, flags);
  bool locked = real(this);
  __tsan_mutex_post_lock(this, flags | (locked ? 0 : __tsan_mutex_try_lock_failed), 0);
  if (locked) NoteReadLock(this);
  return locked;
}

void Mutex::Unlock() KF_FORWARD {
  static auto real = RealFn<void (*)(Mutex*)>("5Mutex6UnlockEv");
  Outer outer(KF_CALLER);
  if (!outer) return real(this);
  __tsan_mutex_pre_unlock(this, 0);
  real(this);
  __tsan_mutex_post_unlock(this, 0);
}

void Mutex::ReaderUnlock() KF_FORWARD {
  static auto real = RealFn<void (*)(Mutex*)>("5Mutex12ReaderUnlockEv");
  Outer outer(KF_CALLER);
  if (!outer) return real(this);
  NoteReadUnlock(this);
  __tsan_mutex_pre_unlock(this, __tsan_mutex_read_lock);
  real(this);
  __tsan_mutex_post_unlock(this, __tsan_mutex_read_lock);
}

void Mutex::LockWhen(const Condition& cond) KF_FORWARD {
  static auto real =
      RealFn<void (*)(Mutex*, const Condition&)>("5Mutex8LockWhenERKNS0_9ConditionE");
  LockAnnotated<bool>(KF_CALLER, this, 0, [&] { return real(this, cond), true; });
}

void Mutex::ReaderLockWhen(const Condition& cond) KF_FORWARD {
  static auto real =
      RealFn<void (*)(Mutex*, const Condition&)>("5Mutex14ReaderLockWhenERKNS0_9ConditionE");
  LockAnnotated<bool>(KF_CALLER, this, __tsan_mutex_read_lock,
                      [&] { return real(this, cond), true; });
}

bool Mutex::LockWhenWithTimeout(const Condition& cond, Duration timeout) KF_FORWARD {
  static auto real = RealFn<bool (*)(Mutex*, const Condition&, Duration)>(
      "5Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  return LockAnnotated<bool>(KF_CALLER, this, 0, [&] { return real(this, cond, timeout); });
}

bool Mutex::LockWhenWithDeadline(const Condition& cond, Time deadline) KF_FORWARD {
  static auto real = RealFn<bool (*)(Mutex*, const Condition&, Time)>(
      "5Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  return LockAnnotated<bool>(KF_CALLER, this, 0, [&] { return real(this, cond, deadline); });
}

bool Mutex::ReaderLockWhenWithTimeout(const Condition& cond, Duration timeout) KF_FORWARD {
  static auto real = RealFn<bool (*)(Mutex*, const Condition&, Duration)>(
      "5Mutex25ReaderLockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  return LockAnnotated<bool>(KF_CALLER, this, __tsan_mutex_read_lock,
                             [&] { return real(this, cond, timeout); });
}

bool Mutex::ReaderLockWhenWithDeadline(const Condition& cond, Time deadline) KF_FORWARD {
  static auto real = RealFn<bool (*)(Mutex*, const Condition&, Time)>(
      "5Mutex26ReaderLockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  return LockAnnotated<bool>(KF_CALLER, this, __tsan_mutex_read_lock,
                             [&] { return real(this, cond, deadline); });
}

void Mutex::Await(const Condition& cond) {
  static auto real = RealFn<void (*)(Mutex*, const Condition&)>("5Mutex5AwaitERKNS0_9ConditionE");
  AwaitAnnotated<bool>(KF_CALLER, this, [&] { return real(this, cond), true; });
}

bool Mutex::AwaitWithTimeout(const Condition& cond, Duration timeout) {
  static auto real = RealFn<bool (*)(Mutex*, const Condition&, Duration)>(
      "5Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  return AwaitAnnotated<bool>(KF_CALLER, this, [&] { return real(this, cond, timeout); });
}

bool Mutex::AwaitWithDeadline(const Condition& cond, Time deadline) {
  static auto real = RealFn<bool (*)(Mutex*, const Condition&, Time)>(
      "5Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  return AwaitAnnotated<bool>(KF_CALLER, this, [&] { return real(this, cond, deadline); });
}

void CondVar::Wait(Mutex* mu) {
  static auto real = RealFn<void (*)(CondVar*, Mutex*)>("7CondVar4WaitEPNS0_5MutexE");
  AwaitAnnotated<bool>(KF_CALLER, mu, [&] { return real(this, mu), true; });
}

bool CondVar::WaitWithTimeout(Mutex* mu, Duration timeout) {
  static auto real = RealFn<bool (*)(CondVar*, Mutex*, Duration)>(
      "7CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE");
  return AwaitAnnotated<bool>(KF_CALLER, mu, [&] { return real(this, mu, timeout); });
}

bool CondVar::WaitWithDeadline(Mutex* mu, Time deadline) {
  static auto real =
      RealFn<bool (*)(CondVar*, Mutex*, Time)>("7CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE");
  return AwaitAnnotated<bool>(KF_CALLER, mu, [&] { return real(this, mu, deadline); });
}

// Release unlocks through the exported Unlock, but from inside absl, where the caller check
// would leave it unannotated; annotate it here, for the Mutex it holds (its only member).
void ReleasableMutexLock::Release() KF_FORWARD {
  static auto real = RealFn<void (*)(ReleasableMutexLock*)>("19ReleasableMutexLock7ReleaseEv");
  Mutex* const mu = *reinterpret_cast<Mutex**>(this);
  Outer outer(KF_CALLER);
  if (outer) __tsan_mutex_pre_unlock(mu, 0);
  real(this);
  if (outer) __tsan_mutex_post_unlock(mu, 0);
}

static_assert(sizeof(ReleasableMutexLock) == sizeof(Mutex*), "ReleasableMutexLock is {Mutex*}");

static_assert(sizeof(Notification) == 2 * sizeof(Mutex), "Notification is {Mutex, atomic<bool>}");

// Notify happens before every wait that returns because of it and every HasBeenNotified()
// that returns true (an inline acquire load of the flag, sizeof(Mutex) into the object).
void Notification::Notify() {
  static auto real = RealFn<void (*)(Notification*)>("12Notification6NotifyEv");
  __tsan_release(this);
  __tsan_release(reinterpret_cast<char*>(this) + sizeof(Mutex));
  Outer nested(nullptr);  // the Mutex calls the real one makes are its own
  real(this);
}

void Notification::WaitForNotification() const {
  static auto real =
      RealFn<void (*)(const Notification*)>("K12Notification19WaitForNotificationEv");
  Outer nested(nullptr);  // the Mutex calls the real one makes are its own
  real(this);
  __tsan_acquire(const_cast<Notification*>(this));
}

bool Notification::WaitForNotificationWithTimeout(Duration timeout) const {
  static auto real = RealFn<bool (*)(const Notification*, Duration)>(
      "K12Notification30WaitForNotificationWithTimeoutENS0_8DurationE");
  Outer nested(nullptr);  // the Mutex calls the real one makes are its own
  bool res = real(this, timeout);
  __tsan_acquire(const_cast<Notification*>(this));
  return res;
}

bool Notification::WaitForNotificationWithDeadline(Time deadline) const {
  static auto real = RealFn<bool (*)(const Notification*, Time)>(
      "K12Notification31WaitForNotificationWithDeadlineENS0_4TimeE");
  Outer nested(nullptr);  // the Mutex calls the real one makes are its own
  bool res = real(this, deadline);
  __tsan_acquire(const_cast<Notification*>(this));
  return res;
}

ABSL_NAMESPACE_END
}  // namespace absl

// Named crash points: the places where dying is the worst case for recovery — between a
// flush's object writes and its checkpoint commit, between a commit and its garbage
// collection, inside a WAL truncation, while a restart loads segments — named so that a crash
// test can kill a real process exactly there (tests/cluster/search_crash_test.cc).
//
// Inert in the server: nothing installs a handler, and a pass costs one relaxed load. The test
// build of the server (tests/server/crash_hook_main.cc) installs one that SIGKILLs the process
// at the point and pass its environment names.
//
// Thread-safety: CrashPoint may be called from any thread; install the handler before starting
// any thread that passes a point.
#pragma once

#include <atomic>
#include <string_view>

namespace kf {

using CrashPointHandler = void (*)(std::string_view point);

inline std::atomic<CrashPointHandler> crash_point_handler{nullptr};

// Calls the installed handler, if any, with `point` ("<component>.<moment>").
inline void CrashPoint(std::string_view point) {
  if (CrashPointHandler handler = crash_point_handler.load(std::memory_order_relaxed)) {
    handler(point);
  }
}

}  // namespace kf

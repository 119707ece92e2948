// SharedBytes: a read-only view of bytes together with whatever keeps them alive — a string the
// bytes were read into, or a file mapping (fs::RandomAccessFile::Map). Views into `bytes` (a
// loaded sealed segment's columns) stay valid while any copy of `owner` is held, so an object
// can be read once and searched in place instead of copied again.
//
// Thread-safety: immutable; copies may be used from any thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace kf {

struct SharedBytes {
  std::string_view bytes;
  std::shared_ptr<const void> owner;
  // The bytes are a file's pages in the page cache, which the kernel may drop and read again
  // (not the process's own memory); false: they are in the heap.
  bool mapped = false;

  // `s`, moved to the heap (its data where the string allocated it: aligned to 16 unless it is
  // short enough to be stored inline).
  static SharedBytes Of(std::string s) {
    auto held = std::make_shared<const std::string>(std::move(s));
    return {.bytes = *held, .owner = held};
  }
};

}  // namespace kf

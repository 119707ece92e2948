// StoreUnderTest: builds each ObjectStore the contract tests run against, by name — "local"
// (a fresh directory), "fault" (FaultObjectStore, nothing armed, around a local store) and
// "s3" (S3ObjectStore on the binary's shared RGW, see rgw_process.h).
//
// Thread-safety: MakeStoreUnderTest is called from the test thread. Ownership: the struct
// owns the store and whatever it wraps; the directory of a local store is removed with it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "storage/object/object_store.h"

namespace kf::object::testing {

struct StoreUnderTest {
  StoreUnderTest() = default;
  StoreUnderTest(StoreUnderTest&& other) { *this = std::move(other); }
  StoreUnderTest& operator=(StoreUnderTest&&);
  ~StoreUnderTest();

  std::unique_ptr<ObjectStore> store;  // null when skipped or failed (see skip_reason)
  bool skip = false;
  std::string skip_reason;
  // What `store` wraps, kept alive with it.
  std::unique_ptr<ObjectStore> base;
  std::string dir;
};

class RgwProcess;
// The binary's one RGW, started on first call; null with the reason in `why_not` (prefixed
// "SKIP:" when the binaries are missing outside CI, i.e. the caller should skip, not fail).
RgwProcess* SharedRgw(std::string* why_not);

// The store kinds this build can test.
std::vector<std::string> StoreKinds();
StoreUnderTest MakeStoreUnderTest(const std::string& kind);

}  // namespace kf::object::testing

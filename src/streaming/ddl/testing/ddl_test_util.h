// Test helpers for the DDL module (header-only): a fixture with an embedded metadata store and
// a coordinator "in office", and a fake appender that behaves like the nodes' dedupe.
//
// Thread-safety: FakeAppender is thread-safe; the fixture is used by the test thread.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/testing/temp_dir.h"
#include "message/message_trace.h"
#include "storage/meta/embedded_meta_store.h"
#include "storage/meta/testing/fault_meta_store.h"
#include "streaming/cluster_meta.h"
#include "streaming/ddl/broadcast_appender.h"

namespace kf::streaming::ddl::testing {

// Appends into per-vchannel in-memory logs, deduplicating by `_ik` as a node does: a repeated
// key gets the original result and appends nothing.
class FakeAppender final : public BroadcastAppender {
 public:
  struct Call {
    MutableMessage message;
    trace::SpanContext parent;  // ctx's span context
  };
  // Decides a call's fate before it is applied: OK applies it; an error fails it unapplied.
  using Policy = std::function<absl::Status(const MutableMessage&)>;
  // Runs before each call is applied (e.g. to inspect the store).
  using Hook = std::function<void(const MutableMessage&)>;

  void set_policy(Policy p) {
    absl::MutexLock l(&mu_);
    policy_ = std::move(p);
  }
  void set_hook(Hook h) {
    absl::MutexLock l(&mu_);
    hook_ = std::move(h);
  }
  // Held: apply calls but keep their completions until Release (the ack is "in flight").
  void Hold(bool hold) {
    std::vector<std::pair<Done, absl::StatusOr<BroadcastAppendResult>>> release;
    {
      absl::MutexLock l(&mu_);
      hold_ = hold;
      if (!hold) release.swap(held_);
    }
    for (auto& [done, r] : release) std::move(done)(std::move(r));
  }
  // Waits until at least `n` calls were made in total.
  bool WaitCalls(size_t n, absl::Time deadline) const {
    absl::MutexLock l(&mu_);
    auto reached = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return calls_.size() >= n; };
    return mu_.AwaitWithDeadline(absl::Condition(&reached), deadline);
  }

  void AppendAsync(const trace::Context& ctx, MutableMessage message, absl::Time,
                   Done done) override {
    Hook hook;
    {
      absl::MutexLock l(&mu_);
      hook = hook_;
    }
    if (hook) hook(message);
    absl::StatusOr<BroadcastAppendResult> result = Apply(ctx, std::move(message));
    {
      absl::MutexLock l(&mu_);
      if (hold_) {
        held_.emplace_back(std::move(done), std::move(result));
        return;
      }
    }
    std::move(done)(std::move(result));
  }

  std::vector<Call> calls() const {
    absl::MutexLock l(&mu_);
    return calls_;
  }
  // The messages applied to `vchannel`, in order (duplicates excluded).
  std::vector<MutableMessage> log(const std::string& vchannel) const {
    absl::MutexLock l(&mu_);
    auto it = logs_.find(vchannel);
    return it == logs_.end() ? std::vector<MutableMessage>{} : it->second;
  }

 private:
  absl::StatusOr<BroadcastAppendResult> Apply(const trace::Context& ctx, MutableMessage m) {
    absl::MutexLock l(&mu_);
    calls_.push_back({m, ctx.span_context()});
    if (policy_) {
      absl::Status s = policy_(m);
      if (!s.ok()) return s;
    }
    const std::string vchannel(m.vchannel());
    const std::string ik(m.idempotency_key().value_or(""));
    auto& seen = results_[vchannel];
    if (auto it = seen.find(ik); it != seen.end()) return it->second;
    std::vector<MutableMessage>& log = logs_[vchannel];
    log.push_back(std::move(m));
    BroadcastAppendResult r{MessageId::Local(log.size()), TimeTick(1000 + log.size()),
                            MessageId::Local(log.size())};
    seen.emplace(ik, r);
    return r;
  }

  mutable absl::Mutex mu_;
  Policy policy_ ABSL_GUARDED_BY(mu_);
  Hook hook_ ABSL_GUARDED_BY(mu_);
  bool hold_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::pair<Done, absl::StatusOr<BroadcastAppendResult>>> held_ ABSL_GUARDED_BY(mu_);
  std::vector<Call> calls_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::vector<MutableMessage>> logs_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::map<std::string, BroadcastAppendResult>> results_ ABSL_GUARDED_BY(mu_);
};

// An embedded store in a fresh directory, wrapped in a FaultMetaStore, and helpers to play the
// coordinator's election.
class DdlTest : public ::testing::Test {
 protected:
  static constexpr absl::Duration kWait = absl::Seconds(20);  // only failures wait this long

  void SetUp() override {
    auto store = meta::EmbeddedMetaStore::Open(dir_.path(), {});
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    faulty_ = std::make_unique<meta::testing::FaultMetaStore>(store_.get());
    revision_ = TakeOffice();
  }
  void TearDown() override {
    faulty_.reset();
    store_.reset();
  }

  static absl::Time Deadline() { return absl::Now() + kWait; }

  // (Re-)creates the `coord` key, as a newly elected coordinator does; returns its
  // create_revision. Every earlier revision is deposed by this.
  int64_t TakeOffice() {
    EXPECT_TRUE(store_->Delete(keys_.coord(), Deadline()).ok());
    auto put = store_->Txn({meta::Compare::Absent(keys_.coord())},
                           {meta::Op::Put(keys_.coord(), "coordinator")}, {}, Deadline());
    EXPECT_TRUE(put.ok() && put->succeeded);
    return put.ok() ? put->revision : 0;
  }

  // Every key of the cluster except `coord`, with its value.
  std::map<std::string, std::string> Dump() const {
    std::map<std::string, std::string> out;
    auto range = store_->Range(keys_.root(), Deadline());
    EXPECT_TRUE(range.ok());
    if (!range.ok()) return out;
    for (const auto& kv : range->kvs) {
      if (kv.key != keys_.coord()) out[kv.key] = kv.value;
    }
    return out;
  }

  kf::testing::TempDir dir_{"ddl"};
  std::unique_ptr<meta::EmbeddedMetaStore> store_;
  std::unique_ptr<meta::testing::FaultMetaStore> faulty_;
  const ClusterKeys keys_{"kf"};
  int64_t revision_ = 0;
};

}  // namespace kf::streaming::ddl::testing

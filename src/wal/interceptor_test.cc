// The append interceptor chain (interceptor.h): first the chain alone (hook order, what an
// interceptor is told when a later one stops an append, the dispatch of ordinary appends), then
// through the WAL with interceptors added after the built-in ones: BeforeSequence in chain order,
// AfterDurable in WAL order, AfterAbandoned when the backend refuses, a later interceptor rejects
// or the entry fails to become durable, Finish once per run.
#include "wal/interceptor.h"

#include <unistd.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "common/errors.h"
#include "common/testing/temp_dir.h"
#include "gtest/gtest.h"
#include "message/builders.h"
#include "storage/tso/timestamp_allocator.h"
#include "wal/testing/memory_backend.h"
#include "wal/wal_impl.h"

namespace kf::wal {
namespace {

using testing::MemoryWalBackend;

constexpr uint32_t kAllHooks = AppendInterceptor::kAdmit | AppendInterceptor::kBeforeSequence |
                               AppendInterceptor::kAfterEnqueued |
                               AppendInterceptor::kAfterDurable |
                               AppendInterceptor::kAfterAbandoned | AppendInterceptor::kFinish;

// Records every hook it gets as "<name>.<hook> <label>", the label being the message's payload
// (remembered at Admit: the message may be gone by the later hooks). Rejects in Admit the
// payload `refuse`, in BeforeSequence the payload `veto`.
class Recorder final : public AppendInterceptor {
 public:
  Recorder(std::string name, std::vector<std::string>* log, absl::Mutex* mu,
           uint32_t hooks = kAllHooks, uint32_t ordinary_hooks = kAllHooks)
      : name_(std::move(name)), log_(log), mu_(mu), hooks_(hooks), ordinary_(ordinary_hooks) {}

  std::string refuse, veto;
  // AfterDurable's ids and whether it got the message, in call order.
  std::vector<MessageId> durable_ids;
  std::vector<bool> durable_with_message;
  // Finish: the size of each call and the results it saw.
  std::vector<size_t> finish_sizes;
  std::map<std::string, absl::Status> finished;

  uint32_t hooks() const override { return hooks_; }
  uint32_t ordinary_hooks() const override { return ordinary_; }

  size_t Admit(std::span<AppendContext> run) override {
    size_t stopped = 0;
    std::vector<std::string> labels;
    for (AppendContext& a : run) {
      if (a.stage != AppendContext::Stage::kAdmitting) continue;
      const std::string label = a.msg.payload();
      labels.push_back(label);
      absl::MutexLock lock(mu_);
      labels_[&a] = label;
      if (!refuse.empty() && label == refuse) {
        a.Reject(absl::InvalidArgumentError("refused by " + name_));
        ++stopped;
      }
    }
    Log("Admit", absl::StrJoin(labels, ","));
    return stopped;
  }
  absl::Status BeforeSequence(AppendContext& a, TimeTick) override {
    Log("BeforeSequence", Label(a));
    if (!veto.empty() && Label(a) == veto) return absl::FailedPreconditionError("vetoed");
    return absl::OkStatus();
  }
  void AfterEnqueued(AppendContext& a) override { Log("AfterEnqueued", Label(a)); }
  void AfterDurable(AppendContext& a, const ImmutableMessagePtr& message) override {
    Log("AfterDurable", Label(a));
    absl::MutexLock lock(mu_);
    durable_ids.push_back(a.id);
    durable_with_message.push_back(message != nullptr);
    if (message != nullptr) {
      EXPECT_EQ(message->id(), a.id);
      EXPECT_EQ(message->message().payload(), labels_[&a]);
    }
  }
  void AfterAbandoned(AppendContext& a, const absl::Status& cause) override {
    Log("AfterAbandoned", absl::StrCat(Label(a), " ", absl::StatusCodeToString(cause.code())));
  }
  void Finish(std::span<AppendContext* const> appends) override {
    std::vector<std::string> labels;
    for (AppendContext* a : appends) labels.push_back(Label(*a));
    Log("Finish", absl::StrJoin(labels, ","));
    absl::MutexLock lock(mu_);
    finish_sizes.push_back(appends.size());
    for (AppendContext* a : appends) {
      finished[labels_[a]] = a->result.status();
      labels_.erase(a);
    }
  }

 private:
  std::string Label(AppendContext& a) {
    absl::MutexLock lock(mu_);
    auto it = labels_.find(&a);
    return it == labels_.end() ? "?" : it->second;
  }
  void Log(const std::string& hook, const std::string& what) {
    absl::MutexLock lock(mu_);
    log_->push_back(absl::StrCat(name_, ".", hook, " ", what));
  }

  const std::string name_;
  std::vector<std::string>* const log_;
  absl::Mutex* const mu_;
  const uint32_t hooks_, ordinary_;
  std::map<const AppendContext*, std::string> labels_;  // guarded by *mu_
};

MutableMessage Insert(std::string payload) {
  MutableMessage m(MessageType::kInsert, std::move(payload));
  m.set_vchannel("kf-dml_0_v");
  return m;
}

// --- the chain alone ------------------------------------------------------------------------

class ChainTest : public ::testing::Test {
 protected:
  ChainTest() {
    chain_.Add(&a_);
    chain_.Add(&b_);
    chain_.Add(&c_);
  }
  // `payloads` as one run of ordinary appends.
  static std::vector<AppendContext> Run(const std::vector<std::string>& payloads) {
    std::vector<AppendContext> run(payloads.size());
    for (size_t i = 0; i < payloads.size(); ++i) run[i].msg = Insert(payloads[i]);
    return run;
  }
  std::vector<std::string> TakeLog() {
    absl::MutexLock lock(&mu_);
    return std::exchange(log_, {});
  }

  absl::Mutex mu_;
  std::vector<std::string> log_;
  Recorder a_{"A", &log_, &mu_}, b_{"B", &log_, &mu_}, c_{"C", &log_, &mu_};
  InterceptorChain chain_;
};

TEST_F(ChainTest, AdmitRunsInChainOrderAndWhatALaterOneStopsIsFinishedByTheEarlierOnes) {
  b_.refuse = "y";
  auto run = Run({"x", "y", "z"});
  EXPECT_EQ(chain_.Admit(run), 1u);
  EXPECT_EQ(TakeLog(), (std::vector<std::string>{"A.Admit x,y,z", "B.Admit x,y,z", "C.Admit x,z"}));
  EXPECT_EQ(run[1].stage, AppendContext::Stage::kRejected);
  EXPECT_EQ(run[1].admit_stop, 1);
  EXPECT_EQ(run[0].admit_stop, AppendContext::kPassed);
  // Finishing the stopped one: only A admitted it. The others: every interceptor, in reverse.
  AppendContext* stopped = &run[1];
  chain_.Finish(std::span(&stopped, 1));
  EXPECT_EQ(TakeLog(), (std::vector<std::string>{"A.Finish y"}));
  std::vector<AppendContext*> rest = {&run[0], &run[2]};
  chain_.Finish(rest);
  EXPECT_EQ(TakeLog(), (std::vector<std::string>{"C.Finish x,z", "B.Finish x,z", "A.Finish x,z"}));
}

TEST_F(ChainTest, ALaterBeforeSequenceRejectionAbandonsTheEarlierAdmissionsInReverse) {
  c_.veto = "z";
  auto run = Run({"x", "z"});
  ASSERT_EQ(chain_.Admit(run), 0u);
  TakeLog();
  EXPECT_TRUE(chain_.BeforeSequence(run[0], TimeTick(1)).ok());
  const absl::Status vetoed = chain_.BeforeSequence(run[1], TimeTick(2));
  EXPECT_EQ(vetoed.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(run[1].sequence_stop, 2);
  EXPECT_EQ(TakeLog(), (std::vector<std::string>{"A.BeforeSequence x", "B.BeforeSequence x",
                                                 "C.BeforeSequence x", "A.BeforeSequence z",
                                                 "B.BeforeSequence z", "C.BeforeSequence z",
                                                 "B.AfterAbandoned z FAILED_PRECONDITION",
                                                 "A.AfterAbandoned z FAILED_PRECONDITION"}));
  // The admitted one: enqueued and durable in chain order; abandoned (had it failed) in reverse.
  chain_.AfterEnqueued(run[0]);
  chain_.AfterDurable(run[0], nullptr);
  chain_.AfterAbandoned(run[0], absl::UnavailableError("lost"));
  EXPECT_EQ(TakeLog(),
            (std::vector<std::string>{
                "A.AfterEnqueued x", "B.AfterEnqueued x", "C.AfterEnqueued x", "A.AfterDurable x",
                "B.AfterDurable x", "C.AfterDurable x", "C.AfterAbandoned x UNAVAILABLE",
                "B.AfterAbandoned x UNAVAILABLE", "A.AfterAbandoned x UNAVAILABLE"}));
}

TEST(ChainDispatchTest, OrdinaryAppendsReachOnlyTheHooksTheyNeed) {
  absl::Mutex mu;
  std::vector<std::string> log;
  // T wants nothing of ordinary appends (as the txn manager).
  Recorder t("T", &log, &mu, kAllHooks, /*ordinary_hooks=*/0);
  Recorder all("U", &log, &mu);
  InterceptorChain chain;
  chain.Add(&t);
  chain.Add(&all);
  std::vector<AppendContext> plain(1), body(1);
  plain[0].msg = Insert("plain");
  body[0].msg = Insert("body");
  body[0].role = AppendRole::kBody;
  ASSERT_FALSE(body[0].ordinary());
  chain.Admit(plain);
  chain.Admit(body);
  ASSERT_TRUE(chain.BeforeSequence(plain[0], TimeTick(1)).ok());
  ASSERT_TRUE(chain.BeforeSequence(body[0], TimeTick(2)).ok());
  absl::MutexLock lock(&mu);
  EXPECT_EQ(log, (std::vector<std::string>{"U.Admit plain", "T.Admit body", "U.Admit body",
                                           "U.BeforeSequence plain", "T.BeforeSequence body",
                                           "U.BeforeSequence body"}));
}

// --- through the WAL ------------------------------------------------------------------------

class WalInterceptorTest : public ::testing::Test {
 protected:
  void SetUp() override { tso_ = *TimestampAllocator::Open(dir_.path() + "/tso", {}); }
  void TearDown() override {
    if (manual_ != nullptr) manual_->MakeDurable(1 << 20);
    if (wal_) wal_->Close();
  }

  // A WAL over a memory backend, E1 and E2 at the end of its chain; E1 wants every message.
  MemoryWalBackend* Open(bool auto_durable) {
    auto backend = std::make_unique<MemoryWalBackend>("kf-dml_0", Term(1), auto_durable);
    MemoryWalBackend* b = backend.get();
    if (!auto_durable) manual_ = b;
    wal_ =
        std::make_unique<WalImpl>(WalOptions{.tso = tso_.get(),
                                             .timetick_interval = absl::Hours(1),
                                             .initial_backoff = absl::Microseconds(1)},
                                  std::move(backend), std::vector<AppendInterceptor*>{&e1_, &e2_});
    EXPECT_TRUE(wal_->Recover().ok());
    return b;
  }

  // Appends `payloads` in one AppendBatch; the results, once all are in.
  struct Batch {
    std::vector<absl::StatusOr<AppendResult>> results;
    std::vector<std::unique_ptr<absl::Notification>> done;
    void Wait() {
      for (auto& d : done) d->WaitForNotification();
    }
  };
  std::unique_ptr<Batch> Submit(const std::vector<MutableMessage>& messages) {
    auto batch = std::make_unique<Batch>();
    std::vector<AppendRequest> requests;
    for (size_t i = 0; i < messages.size(); ++i) {
      batch->results.emplace_back(absl::UnknownError("pending"));
      batch->done.push_back(std::make_unique<absl::Notification>());
      requests.push_back({.ctx = {}, .msg = messages[i], .done = [b = batch.get(), i](auto r) {
                            b->results[i] = std::move(r);
                            b->done[i]->Notify();
                          }});
    }
    wal_->AppendBatch(std::move(requests));
    return batch;
  }
  // The hooks E1 and E2 got, cleared.
  std::vector<std::string> TakeLog() {
    absl::MutexLock lock(&mu_);
    return std::exchange(log_, {});
  }
  // The lines of `log` about `label` (the payload).
  static std::vector<std::string> About(const std::vector<std::string>& log,
                                        const std::string& label) {
    std::vector<std::string> out;
    for (const auto& line : log) {
      const std::string rest = line.substr(line.find(' ') + 1);
      if (rest == label || rest.starts_with(label + " ") || rest.starts_with(label + ",") ||
          rest.find("," + label) != std::string::npos) {
        out.push_back(line);
      }
    }
    return out;
  }

  kf::testing::TempDir dir_{"kf-walint"};
  std::unique_ptr<TimestampAllocator> tso_;
  absl::Mutex mu_;
  std::vector<std::string> log_;
  Recorder e1_{"E1", &log_, &mu_, kAllHooks | AppendInterceptor::kNeedsMessages};
  Recorder e2_{"E2", &log_, &mu_};
  std::unique_ptr<WalImpl> wal_;
  MemoryWalBackend* manual_ = nullptr;
};

TEST_F(WalInterceptorTest, HooksRunInChainOrderAndAfterDurableInWalOrder) {
  MemoryWalBackend* b = Open(/*auto_durable=*/false);
  auto batch = Submit({Insert("a"), Insert("b"), Insert("c")});
  absl::Notification single_done;
  wal_->Append({}, Insert("d"), [&](auto r) {
    EXPECT_TRUE(r.ok()) << r.status();
    single_done.Notify();
  });
  // Sequenced and enqueued, nothing durable yet.
  EXPECT_EQ(TakeLog(), (std::vector<std::string>{
                           "E1.Admit a,b,c",      "E2.Admit a,b,c",      "E1.BeforeSequence a",
                           "E2.BeforeSequence a", "E1.AfterEnqueued a",  "E2.AfterEnqueued a",
                           "E1.BeforeSequence b", "E2.BeforeSequence b", "E1.AfterEnqueued b",
                           "E2.AfterEnqueued b",  "E1.BeforeSequence c", "E2.BeforeSequence c",
                           "E1.AfterEnqueued c",  "E2.AfterEnqueued c",  "E1.Admit d",
                           "E2.Admit d",          "E1.BeforeSequence d", "E2.BeforeSequence d",
                           "E1.AfterEnqueued d",  "E2.AfterEnqueued d"}));
  b->MakeDurable(2);
  EXPECT_EQ(TakeLog(), (std::vector<std::string>{"E1.AfterDurable a", "E2.AfterDurable a",
                                                 "E1.AfterDurable b", "E2.AfterDurable b"}));
  b->MakeDurable(2);
  // The run is finished together once its last entry is durable: one Finish each, in reverse.
  EXPECT_EQ(TakeLog(),
            (std::vector<std::string>{"E1.AfterDurable c", "E2.AfterDurable c", "E2.Finish a,b,c",
                                      "E1.Finish a,b,c", "E1.AfterDurable d", "E2.AfterDurable d",
                                      "E2.Finish d", "E1.Finish d"}));
  batch->Wait();
  single_done.WaitForNotification();
  for (const auto& r : batch->results) EXPECT_TRUE(r.ok()) << r.status();
  absl::MutexLock lock(&mu_);
  ASSERT_EQ(e1_.durable_ids.size(), 4u);
  for (size_t i = 1; i < e1_.durable_ids.size(); ++i) {
    EXPECT_LT(e1_.durable_ids[i - 1], e1_.durable_ids[i]);
  }
  EXPECT_EQ(e1_.durable_ids, e2_.durable_ids);
  // E1 asked for the messages (kNeedsMessages): they are kept although nobody reads.
  EXPECT_EQ(e1_.durable_with_message, (std::vector<bool>(4, true)));
  EXPECT_EQ(e1_.finish_sizes, (std::vector<size_t>{3, 1}));
  EXPECT_TRUE(e1_.finished["a"].ok());
}

TEST_F(WalInterceptorTest, ABackendRefusalAbandonsEveryAdmissionAndARetryIsANewAttempt) {
  MemoryWalBackend* b = Open(/*auto_durable=*/true);
  b->FailNextAppends(1, absl::ResourceExhaustedError("queue full"));
  ASSERT_TRUE(wal_->AppendSync({}, Insert("retried")).ok());
  b->FailNextAppends(1, absl::InvalidArgumentError("too large"));
  EXPECT_EQ(wal_->AppendSync({}, Insert("refused")).status().code(),
            absl::StatusCode::kInvalidArgument);
  const auto log = TakeLog();
  EXPECT_EQ(About(log, "retried"),
            (std::vector<std::string>{
                "E1.Admit retried", "E2.Admit retried", "E1.BeforeSequence retried",
                "E2.BeforeSequence retried", "E2.AfterAbandoned retried RESOURCE_EXHAUSTED",
                "E1.AfterAbandoned retried RESOURCE_EXHAUSTED", "E1.BeforeSequence retried",
                "E2.BeforeSequence retried", "E1.AfterDurable retried", "E2.AfterDurable retried",
                "E1.AfterEnqueued retried", "E2.AfterEnqueued retried", "E2.Finish retried",
                "E1.Finish retried"}));
  EXPECT_EQ(
      About(log, "refused"),
      (std::vector<std::string>{
          "E1.Admit refused", "E2.Admit refused", "E1.BeforeSequence refused",
          "E2.BeforeSequence refused", "E2.AfterAbandoned refused INVALID_ARGUMENT",
          "E1.AfterAbandoned refused INVALID_ARGUMENT", "E2.Finish refused", "E1.Finish refused"}));
  absl::MutexLock lock(&mu_);
  EXPECT_EQ(e1_.finished["refused"].code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(WalInterceptorTest, ALaterRejectionAbandonsTheAdmissionsBeforeIt) {
  MemoryWalBackend* b = Open(/*auto_durable=*/true);
  e2_.veto = "veto";
  // Before sequencing: E1 (and the built-in txn manager, earlier still) admitted the body E2
  // vetoes, and are told; E2 is not.
  auto begin = wal_->AppendSync({}, NewBeginTxnMessage("kf-dml_0_v", 10000));
  ASSERT_TRUE(begin.ok()) << begin.status();
  MutableMessage body = Insert("veto");
  body.set_txn(*begin->txn);
  EXPECT_EQ(wal_->AppendSync({}, std::move(body)).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(wal_->txns().GetState(TxnId(begin->txn->txn_id())), TxnManager::State::kFailed);
  // In Admit: E1 admitted what E2 refuses, and finishes it; E2 does not.
  e2_.refuse = "refuse";
  EXPECT_EQ(wal_->AppendSync({}, Insert("refuse")).status().code(),
            absl::StatusCode::kInvalidArgument);
  const auto log = TakeLog();
  EXPECT_EQ(
      About(log, "veto"),
      (std::vector<std::string>{
          "E1.Admit veto", "E2.Admit veto", "E1.BeforeSequence veto", "E2.BeforeSequence veto",
          "E1.AfterAbandoned veto FAILED_PRECONDITION", "E2.Finish veto", "E1.Finish veto"}));
  EXPECT_EQ(About(log, "refuse"),
            (std::vector<std::string>{"E1.Admit refuse", "E2.Admit refuse", "E1.Finish refuse"}));
  EXPECT_EQ(b->DurableEntries().size(), 1u);  // the Begin only
}

TEST_F(WalInterceptorTest, AnEntryThatFailsToBecomeDurableIsAbandoned) {
  MemoryWalBackend* b = Open(/*auto_durable=*/false);
  absl::Notification done;
  wal_->Append({}, Insert("lost"), [&](auto r) {
    EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
    done.Notify();
  });
  b->FailPending(absl::InternalError("fdatasync: EIO"));
  done.WaitForNotification();
  EXPECT_EQ(
      About(TakeLog(), "lost"),
      (std::vector<std::string>{
          "E1.Admit lost", "E2.Admit lost", "E1.BeforeSequence lost", "E2.BeforeSequence lost",
          "E1.AfterEnqueued lost", "E2.AfterEnqueued lost", "E2.AfterAbandoned lost UNAVAILABLE",
          "E1.AfterAbandoned lost UNAVAILABLE", "E2.Finish lost", "E1.Finish lost"}));
}

}  // namespace
}  // namespace kf::wal

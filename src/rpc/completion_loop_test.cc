#include "rpc/completion_loop.h"

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "grpcpp/alarm.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"

namespace kf::rpc {
namespace {

// A server with no service and no port, only for its completion queue.
class CompletionLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    std::unique_ptr<grpc::ServerCompletionQueue> cq = builder.AddCompletionQueue();
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    loop_ = std::make_unique<CompletionLoop>(std::move(cq));
  }
  void TearDown() override {
    server_->Shutdown();
    server_->Wait();
    loop_->ShutdownAndJoin();
  }

  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<CompletionLoop> loop_;
};

// Records what runs, in order, and where.
struct Journal {
  absl::Mutex mu;
  std::vector<std::string> events;
  std::vector<std::thread::id> threads;
  void Add(std::string e) {
    absl::MutexLock l(&mu);
    events.push_back(std::move(e));
    threads.push_back(std::this_thread::get_id());
  }
};

class QueuingTag final : public CompletionLoop::Tag {
 public:
  QueuingTag(Journal* j, absl::Notification* done) : j_(j), done_(done) {}
  void Proceed(bool ok) override {
    j_->Add(ok ? "completion" : "completion failed");
    const bool queued = CompletionLoop::RunAfterCurrent([j = j_, done = done_] {
      j->Add("first");
      // Queued by a queued task: runs too, before the loop waits again.
      CompletionLoop::RunAfterCurrent([j, done] {
        j->Add("second");
        done->Notify();
      });
    });
    j_->Add(queued ? "queued" : "not queued");
  }

 private:
  Journal* const j_;
  absl::Notification* const done_;
};

TEST_F(CompletionLoopTest, RunAfterCurrentRunsOnTheLoopThreadOnceTheCompletionReturned) {
  Journal journal;
  absl::Notification done;
  QueuingTag tag(&journal, &done);
  grpc::Alarm alarm;
  alarm.Set(loop_->cq(), gpr_now(GPR_CLOCK_MONOTONIC), &tag);
  done.WaitForNotification();
  absl::MutexLock l(&journal.mu);
  EXPECT_EQ(journal.events, (std::vector<std::string>{"completion", "queued", "first", "second"}));
  for (const auto& id : journal.threads) EXPECT_EQ(id, journal.threads.front());
  EXPECT_NE(journal.threads.front(), std::this_thread::get_id());
}

TEST_F(CompletionLoopTest, RunAfterCurrentElsewhereLeavesTheTaskToTheCaller) {
  bool ran = false;
  absl::AnyInvocable<void()&&> task = [&ran] { ran = true; };
  EXPECT_FALSE(CompletionLoop::RunAfterCurrent(std::move(task)));
  ASSERT_TRUE(task);  // not moved from: the caller runs it some other way
  std::move(task)();
  EXPECT_TRUE(ran);
}

// A call whose last operation completes after the shutdown began, and whose reaction starts one
// more (as a cancelled stream sends its status): the queue must still take it.
class LateCall {
 public:
  LateCall(CompletionLoop* loop, Journal* j) : count_(loop), loop_(loop), j_(j) {
    first_.Set(loop->cq(),
               gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_millis(50, GPR_TIMESPAN)),
               &first_tag_);
  }

 private:
  void OnFirst(bool ok) {
    j_->Add(ok ? "last operation" : "last operation failed");
    second_.Set(loop_->cq(), gpr_now(GPR_CLOCK_MONOTONIC), &second_tag_);
  }
  void OnSecond(bool ok) {
    j_->Add(ok ? "status" : "status failed");
    delete this;
  }

  const CompletionLoop::CallCount count_;
  CompletionLoop* const loop_;
  Journal* const j_;
  grpc::Alarm first_, second_;
  MemberTag<LateCall, &LateCall::OnFirst> first_tag_{this};
  MemberTag<LateCall, &LateCall::OnSecond> second_tag_{this};
};

TEST_F(CompletionLoopTest, ShutdownWaitsForTheCallsLastOperations) {
  Journal journal;
  new LateCall(loop_.get(), &journal);
  server_->Shutdown();
  server_->Wait();
  loop_->ShutdownAndJoin();  // before the fix: the second Set aborted (the queue was shut down)
  absl::MutexLock l(&journal.mu);
  EXPECT_EQ(journal.events, (std::vector<std::string>{"last operation", "status"}));
}

}  // namespace
}  // namespace kf::rpc

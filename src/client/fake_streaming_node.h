// FakeStreamingNode: an in-process StreamingNode gRPC service on 127.0.0.1:<ephemeral> for the
// client library's tests. It appends into an in-memory log (deduplicating by `_ik`, as the WAL
// does), can fail streams and requests on cue, can answer out of order, and serves Consume from
// a scripted log.
//
// Thread-safety: configuration setters and accessors are thread-safe (one mutex). Test-only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/errors.h"
#include "grpcpp/server.h"
#include "kingfisher/client.h"
#include "kingfisher/v1/streaming.grpc.pb.h"
#include "message/message.h"
#include "message/message_id.h"

namespace kf::client::testing {

class FakeStreamingNode;

// A client of `node` with fast retries (1..10 ms backoff); max_attempts 0 = deadline only.
std::unique_ptr<kingfisher::Client> ConnectTo(const FakeStreamingNode& node, int max_attempts = 0);

// A per-request error as the server sends it (docs/semantics.md §3 code mapping).
kingfisher::v1::Error MakeWireError(StreamingCode code, std::string message = "injected");

// The message a recorded (one-entry) request carries, decoded; aborts on bytes the client library
// cannot have sent.
MutableMessage SentMessage(const kingfisher::v1::ProduceRequest& r);

class FakeStreamingNode final : public kingfisher::v1::StreamingNode::Service {
 public:
  // `listen` = "127.0.0.1:0" picks a free port; a fixed one lets a test "restart" the node on
  // the address a client already uses. `extra_services` (borrowed; they must outlive the node)
  // are served on the same port, e.g. FakeCollections' (fake_collections.h).
  explicit FakeStreamingNode(const std::string& listen = "127.0.0.1:0",
                             const std::vector<grpc::Service*>& extra_services = {});
  ~FakeStreamingNode() override;

  const std::string& endpoint() const { return endpoint_; }

  // --- Produce behaviour ---
  // Every message of a batched request is recorded, judged and answered (one response each) as
  // if it had come alone: produce_requests() and the injector see one-entry requests.
  //
  // The first `n` produce streams record the first request they get as appended (so a retry
  // is a duplicate) and then end with UNAVAILABLE without answering.
  void FailStreamsAfterAppend(int n);
  // Per-message verdict: return an Error to answer with it (nothing is appended). Runs on the
  // stream's handler thread without the node's lock: it may block to hold the stream.
  void SetErrorInjector(
      std::function<std::optional<kingfisher::v1::Error>(const kingfisher::v1::ProduceRequest&)> f);
  // Hold answers until `n` messages arrived on the stream, then answer them in reverse.
  void AnswerInReverseBatchesOf(int n);

  std::vector<kingfisher::v1::ProduceRequest> produce_requests() const;
  // The number of messages of each request as it arrived, in order.
  std::vector<int> batch_sizes() const;
  int produce_streams() const;
  // Messages appended (after deduplication), in order.
  std::vector<MutableMessage> appended() const;

  // --- Transactions, enforced as the WAL does (docs/semantics.md §3) ---
  // A BeginTxn gets txn id = its timetick (answered in ProduceResponse.txn); a body
  // (Insert/Delete with `_tx`) or a Commit/Rollback must name an active txn of the same
  // vchannel, else INVALID_TRANSACTION_STATE; an expired txn answers TRANSACTION_EXPIRED.
  // Rejected requests append nothing. Duplicates (`_ik`) get the original answer first.
  enum class TxnPhase { kActive, kCommitted, kRolledBack, kExpired };
  struct TxnRecord {
    std::string vchannel;
    TxnPhase phase = TxnPhase::kActive;
    std::vector<std::string> bodies;  // payloads, in append order
  };
  // Every active txn expires now (as if its keepalive passed).
  void ExpireTxns();
  std::map<int64_t, TxnRecord> txns() const;

  // --- Consume behaviour ---
  // The log served to consumers: message i has id Local(i + 1).
  void SetConsumeLog(std::vector<MutableMessage> log);
  // Inner messages of log entry `index` (a synthetic Txn); they get ids Local(1000 + j).
  void SetConsumeInner(size_t index, std::vector<MutableMessage> inner);
  // The first consume stream sends `n` messages and then ends with UNAVAILABLE.
  void BreakFirstConsumeStreamAfter(int n);
  std::vector<kingfisher::v1::ConsumeRequest::Create> consume_creates() const;

  grpc::Status Produce(grpc::ServerContext* ctx,
                       grpc::ServerReaderWriter<kingfisher::v1::ProduceResponse,
                                                kingfisher::v1::ProduceRequest>* stream) override;
  grpc::Status Consume(grpc::ServerContext* ctx,
                       grpc::ServerReaderWriter<kingfisher::v1::ConsumeResponse,
                                                kingfisher::v1::ConsumeRequest>* stream) override;

 private:
  kingfisher::v1::ProduceResult AppendLocked(const kingfisher::v1::ProduceRequest& req)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The txn verdict on a message about to be appended at `timetick`: an error, or the
  // TxnContext to answer with (txn_id 0 = not a txn message). Updates txns_ when admitted.
  std::variant<kingfisher::v1::Error, kingfisher::v1::TxnContext> AdmitTxnLocked(
      const MutableMessage& m, uint64_t timetick) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  std::unique_ptr<grpc::Server> server_;
  std::string endpoint_;

  mutable absl::Mutex mu_;
  int fail_streams_ ABSL_GUARDED_BY(mu_) = 0;
  int reverse_batch_ ABSL_GUARDED_BY(mu_) = 1;
  std::function<std::optional<kingfisher::v1::Error>(const kingfisher::v1::ProduceRequest&)>
      injector_ ABSL_GUARDED_BY(mu_);
  std::vector<kingfisher::v1::ProduceRequest> requests_ ABSL_GUARDED_BY(mu_);
  int streams_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<MutableMessage> appended_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, kingfisher::v1::ProduceResult> by_key_ ABSL_GUARDED_BY(mu_);
  std::vector<int> batch_sizes_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, TxnRecord> txns_ ABSL_GUARDED_BY(mu_);

  std::vector<MutableMessage> consume_log_ ABSL_GUARDED_BY(mu_);
  std::map<size_t, std::vector<MutableMessage>> inner_ ABSL_GUARDED_BY(mu_);
  int break_consume_after_ ABSL_GUARDED_BY(mu_) = -1;
  std::vector<kingfisher::v1::ConsumeRequest::Create> creates_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kf::client::testing

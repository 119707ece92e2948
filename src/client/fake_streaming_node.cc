#include "client/fake_streaming_node.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"

namespace kf::client::testing {

namespace v1 = kingfisher::v1;

std::unique_ptr<kingfisher::Client> ConnectTo(const FakeStreamingNode& node, int max_attempts) {
  kingfisher::ClientOptions o;
  o.endpoint = node.endpoint();
  o.retry.initial_backoff = std::chrono::milliseconds(1);
  o.retry.max_backoff = std::chrono::milliseconds(10);
  o.retry.max_attempts = max_attempts;
  auto c = kingfisher::Client::Connect(o);
  return c.ok() ? *std::move(c) : nullptr;
}

v1::Error MakeWireError(StreamingCode code, std::string message) {
  v1::Error e;
  e.set_grpc_code(static_cast<int>(ToStatusCode(code)));
  e.set_streaming_code(static_cast<int>(code));
  e.set_message(std::move(message));
  return e;
}

MutableMessage SentMessage(const v1::ProduceRequest& r) {
  if (r.entries_size() != 1) {
    std::fprintf(stderr, "a recorded ProduceRequest has %d entries, not 1\n", r.entries_size());
    std::abort();
  }
  absl::StatusOr<MutableMessage> m = MutableMessage::Decode(r.entries(0).message());
  if (!m.ok()) {
    std::fprintf(stderr, "undecodable ProduceRequest.message: %s\n", m.status().ToString().c_str());
    std::abort();
  }
  return *std::move(m);
}

FakeStreamingNode::FakeStreamingNode(const std::string& listen,
                                     const std::vector<grpc::Service*>& extra_services) {
  grpc::ServerBuilder b;
  int port = 0;
  b.AddListeningPort(listen, grpc::InsecureServerCredentials(), &port);
  b.RegisterService(this);
  for (grpc::Service* s : extra_services) b.RegisterService(s);
  server_ = b.BuildAndStart();
  endpoint_ = "127.0.0.1:" + std::to_string(port);
}

FakeStreamingNode::~FakeStreamingNode() {
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
}

void FakeStreamingNode::FailStreamsAfterAppend(int n) {
  absl::MutexLock l(&mu_);
  fail_streams_ = n;
}

void FakeStreamingNode::SetErrorInjector(
    std::function<std::optional<v1::Error>(const v1::ProduceRequest&)> f) {
  absl::MutexLock l(&mu_);
  injector_ = std::move(f);
}

void FakeStreamingNode::AnswerInReverseBatchesOf(int n) {
  absl::MutexLock l(&mu_);
  reverse_batch_ = n;
}

std::vector<v1::ProduceRequest> FakeStreamingNode::produce_requests() const {
  absl::MutexLock l(&mu_);
  return requests_;
}

std::vector<int> FakeStreamingNode::batch_sizes() const {
  absl::MutexLock l(&mu_);
  return batch_sizes_;
}

int FakeStreamingNode::produce_streams() const {
  absl::MutexLock l(&mu_);
  return streams_;
}

std::vector<MutableMessage> FakeStreamingNode::appended() const {
  absl::MutexLock l(&mu_);
  return appended_;
}

void FakeStreamingNode::ExpireTxns() {
  absl::MutexLock l(&mu_);
  for (auto& [id, t] : txns_) {
    if (t.phase == TxnPhase::kActive) t.phase = TxnPhase::kExpired;
  }
}

std::map<int64_t, FakeStreamingNode::TxnRecord> FakeStreamingNode::txns() const {
  absl::MutexLock l(&mu_);
  return txns_;
}

void FakeStreamingNode::SetConsumeLog(std::vector<MutableMessage> log) {
  absl::MutexLock l(&mu_);
  consume_log_ = std::move(log);
}

void FakeStreamingNode::SetConsumeInner(size_t index, std::vector<MutableMessage> inner) {
  absl::MutexLock l(&mu_);
  inner_[index] = std::move(inner);
}

void FakeStreamingNode::BreakFirstConsumeStreamAfter(int n) {
  absl::MutexLock l(&mu_);
  break_consume_after_ = n;
}

std::vector<v1::ConsumeRequest::Create> FakeStreamingNode::consume_creates() const {
  absl::MutexLock l(&mu_);
  return creates_;
}

v1::ProduceResult FakeStreamingNode::AppendLocked(const v1::ProduceRequest& req) {
  v1::ProduceResult r;
  r.set_id(req.entries(0).id());
  absl::StatusOr<MutableMessage> m = MutableMessage::Decode(req.entries(0).message());
  if (!m.ok()) {
    *r.mutable_error() = MakeWireError(StreamingCode::kInvalidArgument, m.status().ToString());
    return r;
  }
  const std::optional<std::string> ik =
      m->idempotency_key() ? std::optional<std::string>(*m->idempotency_key()) : std::nullopt;
  if (ik) {
    auto it = by_key_.find(*ik);
    if (it != by_key_.end()) {
      v1::ProduceResult dup = it->second;
      dup.set_id(req.entries(0).id());
      return dup;
    }
  }
  uint64_t offset = appended_.size() + 1;
  auto txn = AdmitTxnLocked(*m, 1000 + offset);
  if (auto* err = std::get_if<v1::Error>(&txn)) {
    *r.mutable_error() = *err;
    return r;
  }
  if (auto& ctx = std::get<v1::TxnContext>(txn); ctx.txn_id() != 0) *r.mutable_txn() = ctx;
  appended_.push_back(*std::move(m));
  r.set_message_id(MessageId::Local(offset).Encode());
  r.set_timetick(1000 + offset);
  r.set_last_confirmed(MessageId::Local(offset).Encode());
  r.set_term(1);
  if (ik) by_key_[*ik] = r;
  return r;
}

std::variant<v1::Error, v1::TxnContext> FakeStreamingNode::AdmitTxnLocked(const MutableMessage& m,
                                                                          uint64_t timetick) {
  auto txn = m.txn();
  const MessageType type = m.type();
  if (type == MessageType::kBeginTxn) {
    v1::TxnContext ctx;
    ctx.set_txn_id(static_cast<int64_t>(timetick));
    ctx.set_keepalive_ms(txn && txn->keepalive_ms() != 0 ? txn->keepalive_ms() : 10'000);
    txns_[ctx.txn_id()] = TxnRecord{std::string(m.vchannel()), TxnPhase::kActive, {}};
    return ctx;
  }
  if (!txn) {
    if (IsTxnControlType(type)) {
      return MakeWireError(StreamingCode::kInvalidArgument, "txn control message without _tx");
    }
    return v1::TxnContext();  // autocommit
  }
  auto it = txns_.find(txn->txn_id());
  if (it == txns_.end() || it->second.vchannel != m.vchannel()) {
    return MakeWireError(StreamingCode::kInvalidTransactionState, "unknown transaction");
  }
  TxnRecord& t = it->second;
  if (t.phase == TxnPhase::kExpired) {
    return MakeWireError(StreamingCode::kTransactionExpired, "transaction expired");
  }
  if (t.phase != TxnPhase::kActive) {
    return MakeWireError(StreamingCode::kInvalidTransactionState, "transaction is finished");
  }
  if (type == MessageType::kCommitTxn) {
    t.phase = TxnPhase::kCommitted;
  } else if (type == MessageType::kRollbackTxn) {
    t.phase = TxnPhase::kRolledBack;
  } else {
    t.bodies.push_back(m.payload());
  }
  v1::TxnContext ctx;
  ctx.set_txn_id(txn->txn_id());
  return ctx;
}

grpc::Status FakeStreamingNode::Produce(
    grpc::ServerContext* /*ctx*/,
    grpc::ServerReaderWriter<v1::ProduceResponse, v1::ProduceRequest>* stream) {
  bool fail_this;
  int reverse_batch;
  {
    absl::MutexLock l(&mu_);
    ++streams_;
    fail_this = fail_streams_ > 0;
    if (fail_this) --fail_streams_;
    reverse_batch = reverse_batch_;
  }
  std::vector<v1::ProduceResult> held;
  v1::ProduceRequest batch_req;
  while (stream->Read(&batch_req)) {
    {
      absl::MutexLock l(&mu_);
      batch_sizes_.push_back(batch_req.entries_size());
    }
    for (const v1::ProduceEntry& entry : batch_req.entries()) {
      // Recorded and judged one message at a time, as if each had come alone.
      v1::ProduceRequest req;
      req.set_pchannel(batch_req.pchannel());
      req.set_term(batch_req.term());
      *req.add_entries() = entry;
      v1::ProduceResult result;
      std::function<std::optional<v1::Error>(const v1::ProduceRequest&)> injector;
      {
        absl::MutexLock l(&mu_);
        requests_.push_back(req);
        injector = injector_;
      }
      // Outside mu_: an injector may block (holding this stream's answers) while the test
      // inspects the node.
      const std::optional<v1::Error> err = injector ? injector(req) : std::nullopt;
      {
        absl::MutexLock l(&mu_);
        if (err) {
          result.set_id(entry.id());
          *result.mutable_error() = *err;
        } else {
          result = AppendLocked(req);
        }
      }
      held.push_back(std::move(result));
    }
    if (fail_this) {
      // "Appended", but the answers are lost with the connection.
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "injected transport failure");
    }
    if (static_cast<int>(held.size()) >= reverse_batch) {
      for (auto it = held.rbegin(); it != held.rend(); ++it) {
        v1::ProduceResponse resp;
        *resp.add_results() = std::move(*it);
        stream->Write(resp);
      }
      held.clear();
    }
  }
  return grpc::Status::OK;
}

grpc::Status FakeStreamingNode::Consume(
    grpc::ServerContext* /*ctx*/,
    grpc::ServerReaderWriter<v1::ConsumeResponse, v1::ConsumeRequest>* stream) {
  v1::ConsumeRequest req;
  if (!stream->Read(&req) || !req.has_create()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "first request must be create");
  }
  std::vector<MutableMessage> log;
  std::map<size_t, std::vector<MutableMessage>> inner;
  int break_after;
  {
    absl::MutexLock l(&mu_);
    creates_.push_back(req.create());
    log = consume_log_;
    inner = inner_;
    break_after = break_consume_after_;
    break_consume_after_ = -1;
  }
  v1::ConsumeResponse created;
  created.set_created(true);
  stream->Write(created);
  // Resolve the policy against ids Local(1..n).
  size_t start = 0;
  const auto& p = req.create().policy();
  if (p.kind() == v1::DeliverPolicy::LATEST) {
    start = log.size();
  } else if (p.kind() != v1::DeliverPolicy::ALL) {
    auto id = MessageId::Decode(p.message_id());
    if (!id.ok()) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "bad policy id");
    start = id->entry() - 1 + (p.kind() == v1::DeliverPolicy::START_AFTER ? 1 : 0);
  }
  int sent = 0;
  for (size_t i = start; i < log.size(); ++i) {
    if (break_after >= 0 && sent == break_after) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "injected consume stream failure");
    }
    v1::ConsumeResponse r;
    v1::ConsumedMessage* m = r.mutable_batch()->add_messages();
    m->set_message_id(MessageId::Local(i + 1).Encode());
    log[i].EncodeTo(m->mutable_message());
    if (auto it = inner.find(i); it != inner.end()) {
      for (size_t j = 0; j < it->second.size(); ++j) {
        auto* in = m->add_inner();
        in->set_message_id(MessageId::Local(1000 + j).Encode());
        it->second[j].EncodeTo(in->mutable_message());
      }
    }
    if (!stream->Write(r)) return grpc::Status::OK;
    ++sent;
  }
  // Tail: nothing more; wait until the client goes away.
  while (stream->Read(&req)) {
  }
  return grpc::Status::OK;
}

}  // namespace kf::client::testing

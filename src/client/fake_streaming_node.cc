#include "client/fake_streaming_node.h"

#include <utility>

#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"

namespace kf::client::testing {

namespace v1 = kingfisher::v1;

FakeStreamingNode::FakeStreamingNode(const std::string& listen) {
  grpc::ServerBuilder b;
  int port = 0;
  b.AddListeningPort(listen, grpc::InsecureServerCredentials(), &port);
  b.RegisterService(this);
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

int FakeStreamingNode::produce_streams() const {
  absl::MutexLock l(&mu_);
  return streams_;
}

std::vector<v1::Message> FakeStreamingNode::appended() const {
  absl::MutexLock l(&mu_);
  return appended_;
}

void FakeStreamingNode::SetConsumeLog(std::vector<v1::Message> log) {
  absl::MutexLock l(&mu_);
  consume_log_ = std::move(log);
}

void FakeStreamingNode::SetConsumeInner(size_t index, std::vector<v1::Message> inner) {
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

v1::ProduceResponse FakeStreamingNode::AppendLocked(const v1::ProduceRequest& req) {
  const auto& props = req.message().properties();
  auto ik = props.find("_ik");
  if (ik != props.end()) {
    auto it = by_key_.find(ik->second);
    if (it != by_key_.end()) {
      v1::ProduceResponse dup = it->second;
      dup.set_request_id(req.request_id());
      return dup;
    }
  }
  appended_.push_back(req.message());
  uint64_t offset = appended_.size();
  v1::ProduceResponse r;
  r.set_request_id(req.request_id());
  r.set_message_id(MessageId::Local(offset).Encode());
  r.set_timetick(1000 + offset);
  r.set_last_confirmed(MessageId::Local(offset).Encode());
  r.set_term(1);
  if (ik != props.end()) by_key_[ik->second] = r;
  return r;
}

grpc::Status FakeStreamingNode::Produce(
    grpc::ServerContext* /*ctx*/,
    grpc::ServerReaderWriter<v1::ProduceResponse, v1::ProduceRequest>* stream) {
  bool fail_this;
  int batch;
  {
    absl::MutexLock l(&mu_);
    ++streams_;
    fail_this = fail_streams_ > 0;
    if (fail_this) --fail_streams_;
    batch = reverse_batch_;
  }
  std::vector<v1::ProduceResponse> held;
  v1::ProduceRequest req;
  while (stream->Read(&req)) {
    v1::ProduceResponse resp;
    {
      absl::MutexLock l(&mu_);
      requests_.push_back(req);
      std::optional<v1::Error> err;
      if (injector_) err = injector_(req);
      if (err) {
        resp.set_request_id(req.request_id());
        *resp.mutable_error() = *err;
      } else {
        resp = AppendLocked(req);
      }
    }
    if (fail_this) {
      // "Appended", but the answer is lost with the connection.
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "injected transport failure");
    }
    held.push_back(std::move(resp));
    if (static_cast<int>(held.size()) >= batch) {
      for (auto it = held.rbegin(); it != held.rend(); ++it) stream->Write(*it);
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
  std::vector<v1::Message> log;
  std::map<size_t, std::vector<v1::Message>> inner;
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
    r.mutable_message()->set_message_id(MessageId::Local(i + 1).Encode());
    *r.mutable_message()->mutable_message() = log[i];
    if (auto it = inner.find(i); it != inner.end()) {
      for (size_t j = 0; j < it->second.size(); ++j) {
        auto* in = r.mutable_message()->add_inner();
        in->set_message_id(MessageId::Local(1000 + j).Encode());
        *in->mutable_message() = it->second[j];
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

// Streaming methods served on the CompletionLoop (gRPC async API), behind reactors shaped like
// gRPC's callback reactors: a BidiReactor (bidirectional) or WriteReactor (server streaming)
// starts reads and writes from any thread, at most one of each in flight, and finishes the
// call once; its reactions (OnReadDone, OnWriteDone, OnCancel) run on the loop thread, and
// OnDone runs last, once the status is sent (or the call died), every operation completed
// and the call's end was seen. After OnDone the reactor must not touch the call.
//
// ServeBidi / ServeServerStream keep one call of a method armed: when it arrives, the next
// one is armed and `create` makes the call's reactor (on the loop thread; it may start
// operations or finish at once).
//
// Thread-safety: Start* and Finish from any thread. Ownership: a call owns its context and
// stream and frees itself after OnDone; the reactor owns itself (it is released in OnDone).
#pragma once

#include <functional>
#include <memory>
#include <type_traits>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/async_stream.h"
#include "grpcpp/support/byte_buffer.h"
#include "rpc/completion_loop.h"

namespace kf::rpc {

// What a reactor may do with its call (implemented by the call).
template <typename Request, typename Response>
class StreamOps {
 public:
  virtual void Read(Request* request) = 0;  // bidirectional streams only
  virtual void Write(const Response* response, grpc::WriteOptions options) = 0;
  virtual void WriteAndFinish(const Response* response, grpc::WriteOptions options,
                              const grpc::Status& status) = 0;
  virtual void Finish(const grpc::Status& status) = 0;

 protected:
  ~StreamOps() = default;
};

// The reactions of a streaming call.
class StreamReactor {
 public:
  virtual ~StreamReactor() = default;
  virtual void OnReadDone(bool /*ok*/) {}
  virtual void OnWriteDone(bool /*ok*/) {}
  virtual void OnCancel() {}
  virtual void OnDone() = 0;
};

template <typename Request, typename Response>
class BidiReactor : public StreamReactor {
 protected:
  explicit BidiReactor(StreamOps<Request, Response>* call) : call_(call) {}

  void StartRead(Request* request) { call_->Read(request); }
  void StartWrite(const Response* response, grpc::WriteOptions options = {}) {
    call_->Write(response, options);
  }
  void StartWriteAndFinish(const Response* response, grpc::WriteOptions options,
                           const grpc::Status& status) {
    call_->WriteAndFinish(response, options, status);
  }
  void Finish(const grpc::Status& status) { call_->Finish(status); }

 private:
  StreamOps<Request, Response>* const call_;
};

template <typename Request, typename Response>
class WriteReactor : public StreamReactor {
 protected:
  explicit WriteReactor(StreamOps<Request, Response>* call) : call_(call) {}

  void StartWrite(const Response* response, grpc::WriteOptions options = {}) {
    call_->Write(response, options);
  }
  void Finish(const grpc::Status& status) { call_->Finish(status); }

 private:
  StreamOps<Request, Response>* const call_;
};

// Raw methods (the handler parses and encodes the messages itself).
using ByteStreamOps = StreamOps<grpc::ByteBuffer, grpc::ByteBuffer>;
using ByteBidiReactor = BidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>;

namespace internal {

// Counts a call's operations in flight and says when the call is over.
class StreamCallState {
 public:
  void Begin() {
    absl::MutexLock l(&mu_);
    ++ops_;
  }
  // An operation completed (`finished`: the one that sent the status). True once: the call is
  // over.
  bool End(bool finished) {
    absl::MutexLock l(&mu_);
    --ops_;
    finished_ = finished_ || finished;
    return OverLocked();
  }
  // The call's end was seen (AsyncNotifyWhenDone). True once: the call is over.
  bool Ended() {
    absl::MutexLock l(&mu_);
    ended_ = true;
    return OverLocked();
  }

 private:
  bool OverLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (over_ || ops_ > 0 || !finished_ || !ended_) return false;
    over_ = true;
    return true;
  }

  absl::Mutex mu_;
  int ops_ ABSL_GUARDED_BY(mu_) = 0;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  bool over_ ABSL_GUARDED_BY(mu_) = false;
};

// One streaming call: bidirectional (`kBidi`, the request is unused) or server streaming.
template <typename Request, typename Response, bool kBidi>
class StreamCall final : public StreamOps<Request, Response> {
 public:
  using Stream = std::conditional_t<kBidi, grpc::ServerAsyncReaderWriter<Response, Request>,
                                    grpc::ServerAsyncWriter<Response>>;
  struct Method {
    CompletionLoop* loop;  // serves the method's calls
    // Arms a call: the AsyncService's RequestX for this method, completing `tag` on `cq`.
    std::function<void(grpc::ServerContext*, Request*, Stream*, grpc::ServerCompletionQueue* cq,
                       void* tag)>
        request;
    // The call's reactor; the request it is given is null for a bidirectional stream.
    std::function<StreamReactor*(grpc::ServerContext*, const Request*,
                                 StreamOps<Request, Response>*)>
        create;
  };

 private:
  void OnStarted(bool ok) {
    if (!ok) {  // the server is shutting down: nothing arrived, no end will be seen
      delete this;
      return;
    }
    new StreamCall(method_);
    reactor_ = method_->create(&context_, kBidi ? nullptr : &request_, this);
  }
  void OnRead(bool ok) {
    reactor_->OnReadDone(ok);
    if (state_.End(false)) Over();
  }
  void OnWrite(bool ok) {
    reactor_->OnWriteDone(ok);
    if (state_.End(false)) Over();
  }
  void OnFinished(bool /*ok*/) {
    if (state_.End(true)) Over();
  }
  void OnEnded(bool /*ok*/) {
    if (context_.IsCancelled()) reactor_->OnCancel();
    if (state_.Ended()) Over();
  }
  void Over() {
    reactor_->OnDone();
    delete this;
  }

 public:
  explicit StreamCall(std::shared_ptr<const Method> method) : method_(std::move(method)) {
    context_.AsyncNotifyWhenDone(&ended_);
    method_->request(&context_, &request_, &stream_, method_->loop->cq(), &started_);
  }

  void Read(Request* request) override {
    if constexpr (kBidi) {
      state_.Begin();
      stream_.Read(request, &read_);
    }
  }
  void Write(const Response* response, grpc::WriteOptions options) override {
    state_.Begin();
    stream_.Write(*response, options, &write_);
  }
  void WriteAndFinish(const Response* response, grpc::WriteOptions options,
                      const grpc::Status& status) override {
    state_.Begin();
    stream_.WriteAndFinish(*response, options, status, &finished_);
  }
  void Finish(const grpc::Status& status) override {
    state_.Begin();
    stream_.Finish(status, &finished_);
  }

 private:
  const std::shared_ptr<const Method> method_;
  const CompletionLoop::CallCount count_{method_->loop};  // before the call's members
  grpc::ServerContext context_;
  Request request_;
  Stream stream_{&context_};
  StreamReactor* reactor_ = nullptr;  // set when the call arrives, on the loop thread
  StreamCallState state_;
  MemberTag<StreamCall, &StreamCall::OnStarted> started_{this};
  MemberTag<StreamCall, &StreamCall::OnRead> read_{this};
  MemberTag<StreamCall, &StreamCall::OnWrite> write_{this};
  MemberTag<StreamCall, &StreamCall::OnFinished> finished_{this};
  MemberTag<StreamCall, &StreamCall::OnEnded> ended_{this};
};

}  // namespace internal

// Serves a bidirectional method (`request`: e.g. &Service::RequestProduce). Call after the
// server started.
template <typename Service, typename Base, typename Request, typename Response>
void ServeBidi(
    CompletionLoop* loop, Service* service,
    void (Base::*request)(grpc::ServerContext*, grpc::ServerAsyncReaderWriter<Response, Request>*,
                          grpc::CompletionQueue*, grpc::ServerCompletionQueue*, void*),
    std::type_identity_t<
        std::function<StreamReactor*(grpc::ServerContext*, StreamOps<Request, Response>*)>>
        create) {
  using Call = internal::StreamCall<Request, Response, true>;
  auto method = std::make_shared<const typename Call::Method>(typename Call::Method{
      loop,
      [service, request](grpc::ServerContext* context, Request*, typename Call::Stream* stream,
                         grpc::ServerCompletionQueue* cq, void* tag) {
        (static_cast<Base*>(service)->*request)(context, stream, cq, cq, tag);
      },
      [create = std::move(create)](grpc::ServerContext* context, const Request*,
                                   StreamOps<Request, Response>* call) {
        return create(context, call);
      }});
  new Call(std::move(method));
}

// Serves a server-streaming method (`request`: e.g. &Service::RequestWatchAssignments).
template <typename Service, typename Base, typename Request, typename Response>
void ServeServerStream(
    CompletionLoop* loop, Service* service,
    void (Base::*request)(grpc::ServerContext*, Request*, grpc::ServerAsyncWriter<Response>*,
                          grpc::CompletionQueue*, grpc::ServerCompletionQueue*, void*),
    std::type_identity_t<std::function<StreamReactor*(grpc::ServerContext*, const Request*,
                                                      StreamOps<Request, Response>*)>>
        create) {
  using Call = internal::StreamCall<Request, Response, false>;
  auto method = std::make_shared<const typename Call::Method>(typename Call::Method{
      loop,
      [service, request](grpc::ServerContext* context, Request* req, typename Call::Stream* stream,
                         grpc::ServerCompletionQueue* cq, void* tag) {
        (static_cast<Base*>(service)->*request)(context, req, stream, cq, cq, tag);
      },
      std::move(create)});
  new Call(std::move(method));
}

}  // namespace kf::rpc

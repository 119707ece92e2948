// Unary methods served on the CompletionLoop (gRPC async API). ServeUnary keeps one call of a
// method armed at all times: when a call arrives, the next one is armed and the handler runs
// on the loop thread with the request, the response to fill and a reactor to finish with.
// The handler must not wait (RunUnaryOnWorker hands waiting work to a pool); it or the work
// finishes the call once, from any thread, and the call frees itself when the status is sent.
//
// Thread-safety: UnaryReactor::Finish from any thread, once. Ownership: each call owns its
// context, request and response until it is finished; the handler must outlive the server.
#pragma once

#include <functional>
#include <memory>
#include <type_traits>
#include <utility>

#include "grpcpp/server_context.h"
#include "grpcpp/support/async_unary_call.h"
#include "rpc/completion_loop.h"

namespace kf::rpc {

class UnaryReactor {
 public:
  // Sends the response the handler filled when `status` is OK, `status` alone otherwise.
  virtual void Finish(const grpc::Status& status) = 0;

 protected:
  ~UnaryReactor() = default;
};

template <typename Request, typename Response>
using UnaryHandler =
    std::function<void(grpc::ServerContext*, const Request*, Response*, UnaryReactor*)>;

namespace internal {

template <typename Request, typename Response>
class UnaryCall final : public UnaryReactor {
 public:
  struct Method {
    CompletionLoop* loop;  // serves the method's calls
    // Arms a call: the AsyncService's RequestX for this method, completing `tag` on `cq`.
    std::function<void(grpc::ServerContext*, Request*, grpc::ServerAsyncResponseWriter<Response>*,
                       grpc::ServerCompletionQueue* cq, void* tag)>
        request;
    UnaryHandler<Request, Response> handler;
  };

 private:
  void OnStarted(bool ok) {
    if (!ok) {  // the server is shutting down: nothing arrived
      delete this;
      return;
    }
    new UnaryCall(method_);
    method_->handler(&context_, &request_, &response_, this);
  }
  void OnFinished(bool /*ok*/) { delete this; }

 public:
  explicit UnaryCall(std::shared_ptr<const Method> method) : method_(std::move(method)) {
    method_->request(&context_, &request_, &responder_, method_->loop->cq(), &started_);
  }

  void Finish(const grpc::Status& status) override {
    if (status.ok()) {
      responder_.Finish(response_, status, &finished_);
    } else {
      responder_.FinishWithError(status, &finished_);
    }
  }

 private:
  const std::shared_ptr<const Method> method_;
  const CompletionLoop::CallCount count_{method_->loop};  // before the call's members
  grpc::ServerContext context_;
  Request request_;
  Response response_;
  grpc::ServerAsyncResponseWriter<Response> responder_{&context_};
  MemberTag<UnaryCall, &UnaryCall::OnStarted> started_{this};
  MemberTag<UnaryCall, &UnaryCall::OnFinished> finished_{this};
};

}  // namespace internal

// Serves `service`'s unary method whose async request function is `request` (e.g.
// &Service::RequestGetStatus) with `handler`. Call after the server started.
template <typename Service, typename Base, typename Request, typename Response>
void ServeUnary(CompletionLoop* loop, Service* service,
                void (Base::*request)(grpc::ServerContext*, Request*,
                                      grpc::ServerAsyncResponseWriter<Response>*,
                                      grpc::CompletionQueue*, grpc::ServerCompletionQueue*, void*),
                std::type_identity_t<UnaryHandler<Request, Response>> handler) {
  using Call = internal::UnaryCall<Request, Response>;
  auto method = std::make_shared<const typename Call::Method>(typename Call::Method{
      loop,
      [service, request](grpc::ServerContext* context, Request* req,
                         grpc::ServerAsyncResponseWriter<Response>* responder,
                         grpc::ServerCompletionQueue* cq, void* tag) {
        (static_cast<Base*>(service)->*request)(context, req, responder, cq, cq, tag);
      },
      std::move(handler)});
  new Call(std::move(method));
}

// The same with a member function of the service as the handler.
template <typename Service, typename Base, typename Request, typename Response>
void ServeUnary(CompletionLoop* loop, Service* service,
                void (Base::*request)(grpc::ServerContext*, Request*,
                                      grpc::ServerAsyncResponseWriter<Response>*,
                                      grpc::CompletionQueue*, grpc::ServerCompletionQueue*, void*),
                void (Service::*handler)(grpc::ServerContext*, const Request*, Response*,
                                         UnaryReactor*)) {
  ServeUnary(loop, service, request,
             UnaryHandler<Request, Response>(
                 [service, handler](grpc::ServerContext* context, const Request* req,
                                    Response* response, UnaryReactor* reactor) {
                   (service->*handler)(context, req, response, reactor);
                 }));
}

}  // namespace kf::rpc

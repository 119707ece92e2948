// grpc_floor_server: the least a gRPC server can do for one message of tailing_bench's phase 1
// (grpc_floor.h drives it). One thread on one completion queue, as Kingfisher's kf-rpc loop
// is, serves two generic byte streams (no protobuf, no WAL, no tracing): every message read
// on /floor/Produce is written + fdatasynced to a preallocated file, answered on the same
// stream with 8 bytes and forwarded on /floor/Consume. Its CPU and context switches per
// message are the floor under Kingfisher's with the gRPC the build links; the difference to
// raw_server.h's floor is HTTP/2 and gRPC's own.
//
// Usage: grpc_floor_server FILE PREALLOCATE_BYTES
// Prints the loopback port it listens on as the first line of stdout, serves one producer
// and one consumer until the producer ends its stream, then exits 0.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "bench_util.h"
#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/grpcpp.h"

namespace {

using kf::bench::Die;

// What a completion is for; the tag is the Event itself.
enum Event : intptr_t {
  kAccepted0 = 1,  // the first requested call arrived
  kAccepted1,      // the second
  kProduceRead,
  kProduceWritten,
  kConsumeWritten,
  kProduceFinished,
  kConsumeFinished,
};
void* Tag(Event e) { return reinterpret_cast<void*>(e); }

struct Call {
  grpc::GenericServerContext context;
  grpc::GenericServerAsyncReaderWriter stream{&context};
};

// One stream's writes: gRPC takes one at a time, the rest wait here.
struct Writes {
  grpc::GenericServerAsyncReaderWriter* stream = nullptr;
  Event done;
  bool writing = false;
  std::deque<grpc::ByteBuffer> queued;

  void Write(grpc::ByteBuffer b) {
    if (writing) {
      queued.push_back(std::move(b));
      return;
    }
    writing = true;
    stream->Write(b, Tag(done));
  }
  void Written() {
    writing = false;
    if (queued.empty()) return;
    grpc::ByteBuffer next = std::move(queued.front());
    queued.pop_front();
    Write(std::move(next));
  }
};

class FloorServer {
 public:
  FloorServer(int file) : file_(file) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterAsyncGenericService(&service_);
    cq_ = builder.AddCompletionQueue();
    server_ = builder.BuildAndStart();
    if (server_ == nullptr || port_ == 0) Die("could not listen on loopback");
    service_.RequestCall(&calls_[0].context, &calls_[0].stream, cq_.get(), cq_.get(),
                         Tag(kAccepted0));
    service_.RequestCall(&calls_[1].context, &calls_[1].stream, cq_.get(), cq_.get(),
                         Tag(kAccepted1));
  }

  int port() const { return port_; }

  // Serves until the producer ends its stream and both calls are finished.
  void Run() {
    int finished = 0;
    void* tag;
    bool ok;
    while (finished < 2 && cq_->Next(&tag, &ok)) {
      switch (static_cast<Event>(reinterpret_cast<intptr_t>(tag))) {
        case kAccepted0:
          Accepted(&calls_[0], ok);
          break;
        case kAccepted1:
          Accepted(&calls_[1], ok);
          break;
        case kProduceRead:
          if (ok) {
            Serve();
          } else {  // the producer is done: end both streams
            produce_->stream.Finish(grpc::Status::OK, Tag(kProduceFinished));
            if (consume_ != nullptr) {
              consume_->stream.Finish(grpc::Status::OK, Tag(kConsumeFinished));
            } else {
              ++finished;
            }
          }
          break;
        case kProduceWritten:
          if (!ok) Die("the producer's stream broke");
          acks_.Written();
          break;
        case kConsumeWritten:
          if (!ok) Die("the consumer's stream broke");
          deliveries_.Written();
          break;
        case kProduceFinished:
        case kConsumeFinished:
          ++finished;
          break;
      }
    }
    server_->Shutdown();
    cq_->Shutdown();
    while (cq_->Next(&tag, &ok)) {
    }
  }

 private:
  void Accepted(Call* call, bool ok) {
    if (!ok) Die("a call was not accepted");
    if (call->context.method() == "/floor/Produce") {
      produce_ = call;
      acks_ = {.stream = &call->stream, .done = kProduceWritten};
      produce_->stream.Read(&request_, Tag(kProduceRead));
    } else if (call->context.method() == "/floor/Consume") {
      consume_ = call;
      deliveries_ = {.stream = &call->stream, .done = kConsumeWritten};
    } else {
      Die("unknown method " + call->context.method());
    }
  }

  // One message: durable, answered, forwarded (until the consumer's stream is there, only
  // answered: the driver warms up until its consumer sees messages), then the next read.
  void Serve() {
    std::vector<grpc::Slice> slices;
    if (!request_.Dump(&slices).ok()) Die("could not read a request");
    data_.clear();
    for (const grpc::Slice& s : slices) {
      data_.append(reinterpret_cast<const char*>(s.begin()), s.size());
    }
    if (::write(file_, data_.data(), data_.size()) != static_cast<ssize_t>(data_.size()) ||
        ::fdatasync(file_) != 0) {
      Die("write + fdatasync failed");
    }
    static constexpr char kAck[8] = {};
    grpc::Slice ack(kAck, sizeof(kAck));
    acks_.Write(grpc::ByteBuffer(&ack, 1));
    if (consume_ != nullptr) deliveries_.Write(request_);
    produce_->stream.Read(&request_, Tag(kProduceRead));
  }

  const int file_;
  int port_ = 0;
  grpc::AsyncGenericService service_;
  std::unique_ptr<grpc::ServerCompletionQueue> cq_;
  std::unique_ptr<grpc::Server> server_;
  Call calls_[2];
  Call* produce_ = nullptr;
  Call* consume_ = nullptr;
  Writes acks_, deliveries_;
  grpc::ByteBuffer request_;
  std::string data_;  // the request's bytes, copied out of gRPC's slices as a parser would
};

}  // namespace

int main(int argc, char** argv) {
  kf::bench::SetProgramName("grpc_floor_server");
  if (argc != 3) Die("usage: grpc_floor_server FILE PREALLOCATE_BYTES");
  const int file = kf::bench::OpenPreallocated(argv[1], std::strtoull(argv[2], nullptr, 10));
  FloorServer server(file);
  std::printf("%d\n", server.port());
  std::fflush(stdout);
  server.Run();
  ::close(file);
  return 0;
}

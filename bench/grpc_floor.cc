#include "grpc_floor.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "bench_util.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "process_stats.h"

extern char** environ;

namespace kf::bench {
namespace {

constexpr size_t kWarmUpMessages = 200;

// Distinct completion-queue tags; only their addresses matter.
char kStarted, kRead, kWritten, kWritesDone, kFinished;

// Waits for each of `tags` to complete once, in any order; false when one completed not ok.
bool Await(grpc::CompletionQueue& cq, std::initializer_list<void*> tags) {
  bool all_ok = true;
  for (size_t left = tags.size(); left > 0; --left) {
    void* tag;
    bool ok;
    if (!cq.Next(&tag, &ok)) Die("grpc floor: the completion queue shut down");
    if (std::find(tags.begin(), tags.end(), tag) == tags.end()) {
      Die("grpc floor: an unexpected completion");
    }
    all_ok = all_ok && ok;
  }
  return all_ok;
}

// The server process: started with its stdout on a pipe, from which its port is read.
struct FloorProcess {
  pid_t pid = -1;
  int port = 0;
};

FloorProcess Spawn(const std::string& bin_dir, const std::string& path, uint64_t preallocate) {
  const std::string binary = bin_dir + "/grpc_floor_server";
  const std::string bytes = std::to_string(preallocate);
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) Die("grpc floor: pipe");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  char* argv[] = {const_cast<char*>(binary.c_str()), const_cast<char*>(path.c_str()),
                  const_cast<char*>(bytes.c_str()), nullptr};
  FloorProcess p;
  const int err = ::posix_spawn(&p.pid, binary.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  if (err != 0) Die("grpc floor: cannot start " + binary + ": " + std::strerror(err));
  char line[32] = {};
  size_t got = 0;
  while (got < sizeof(line) - 1 && std::memchr(line, '\n', got) == nullptr) {
    const ssize_t r = ::read(out[0], line + got, sizeof(line) - 1 - got);
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  ::close(out[0]);
  p.port = std::atoi(line);
  if (p.port <= 0) Die("grpc floor: " + binary + " did not print its port");
  return p;
}

// The consumer: reads every forwarded message and records the latency of those from
// `measured_from` on (the sequence number travels in the first 8 bytes, the send time in the
// next 8).
class FloorConsumer {
 public:
  FloorConsumer(grpc::GenericStub& stub, std::atomic<uint64_t>* measured_from)
      : measured_from_(measured_from) {
    call_ = stub.PrepareCall(&context_, "/floor/Consume", &cq_);
    call_->StartCall(&kStarted);
    if (!Await(cq_, {&kStarted})) Die("grpc floor: the consume call did not start");
    thread_ = std::thread([this] { Run(); });
  }
  ~FloorConsumer() { thread_.join(); }

  // Blocks until message `seq` (or a later one) arrived.
  void WaitFor(uint64_t seq) {
    absl::MutexLock l(&mu_);
    while (next_ <= seq) arrived_.Wait(&mu_);
  }

  std::vector<double> TakeLatencies() {
    absl::MutexLock l(&mu_);
    return std::move(latencies_);
  }

 private:
  void Run() {
    grpc::ByteBuffer message;
    std::vector<grpc::Slice> slices;
    for (;;) {
      call_->Read(&message, &kRead);
      if (!Await(cq_, {&kRead})) break;  // the server ended the stream
      const int64_t now = NowNs();
      if (!message.Dump(&slices).ok()) Die("grpc floor: an unreadable message");
      char header[16];
      size_t got = 0;
      for (const grpc::Slice& s : slices) {
        const size_t n = std::min(s.size(), sizeof(header) - got);
        std::memcpy(header + got, s.begin(), n);
        got += n;
      }
      if (got < sizeof(header)) Die("grpc floor: a short message");
      uint64_t seq;
      int64_t sent;
      std::memcpy(&seq, header, sizeof(seq));
      std::memcpy(&sent, header + sizeof(seq), sizeof(sent));
      absl::MutexLock l(&mu_);
      if (seq >= measured_from_->load(std::memory_order_acquire)) {
        latencies_.push_back(static_cast<double>(now - sent) * 1e-9);
      }
      next_ = seq + 1;
      arrived_.Signal();
    }
    grpc::Status status;
    call_->Finish(&status, &kFinished);
    Await(cq_, {&kFinished});
  }

  std::atomic<uint64_t>* const measured_from_;
  grpc::ClientContext context_;
  grpc::CompletionQueue cq_;
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call_;
  std::thread thread_;
  absl::Mutex mu_;
  absl::CondVar arrived_;
  uint64_t next_ ABSL_GUARDED_BY(mu_) = 0;  // the sequence number after the last one arrived
  std::vector<double> latencies_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

RawServerResult GrpcFloorRoundTrips(const std::string& bin_dir, const std::string& path,
                                    size_t size, size_t messages, uint64_t preallocate) {
  if (size < 16) Die("grpc floor: messages of at least 16 bytes");
  const FloorProcess server = Spawn(bin_dir, path, preallocate);
  RawServerResult result;
  {
    auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(server.port),
                                       grpc::InsecureChannelCredentials());
    grpc::GenericStub stub(channel);
    std::atomic<uint64_t> measured_from{UINT64_MAX};
    FloorConsumer consumer(stub, &measured_from);

    grpc::ClientContext context;
    grpc::CompletionQueue cq;
    auto produce = stub.PrepareCall(&context, "/floor/Produce", &cq);
    produce->StartCall(&kStarted);
    if (!Await(cq, {&kStarted})) Die("grpc floor: the produce call did not start");
    // A read for the answer is always pending, as the client library's reader keeps one.
    grpc::ByteBuffer ack;
    produce->Read(&ack, &kRead);
    std::string message(size, 'm');
    double cpu0 = 0;
    uint64_t switches0 = 0;
    const uint64_t total = kWarmUpMessages + messages;
    for (uint64_t seq = 0; seq < total; ++seq) {
      if (seq == kWarmUpMessages) {
        consumer.WaitFor(0);  // the consume stream is served: the warm-up reached it
        measured_from.store(seq, std::memory_order_release);
        cpu0 = CpuSeconds(server.pid);
        switches0 = ContextSwitches(server.pid);
      }
      const int64_t now = NowNs();
      std::memcpy(message.data(), &seq, sizeof(seq));
      std::memcpy(message.data() + sizeof(seq), &now, sizeof(now));
      grpc::Slice slice(message.data(), message.size());
      produce->Write(grpc::ByteBuffer(&slice, 1), &kWritten);
      if (!Await(cq, {&kWritten, &kRead})) Die("grpc floor: the produce stream broke");
      produce->Read(&ack, &kRead);
    }
    consumer.WaitFor(total - 1);  // every measured message delivered
    const double n = static_cast<double>(messages);
    result.server_cpu_per_message = (CpuSeconds(server.pid) - cpu0) / n;
    result.server_switches_per_message =
        static_cast<double>(ContextSwitches(server.pid) - switches0) / n;
    produce->WritesDone(&kWritesDone);
    Await(cq, {&kWritesDone, &kRead});  // the pending read ends with the stream
    grpc::Status status;
    produce->Finish(&status, &kFinished);
    Await(cq, {&kFinished});
    result.latencies = consumer.TakeLatencies();
  }
  int status = 0;
  if (::waitpid(server.pid, &status, 0) != server.pid || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0) {
    Die("grpc floor: the server did not exit cleanly");
  }
  ::unlink(path.c_str());
  return result;
}

}  // namespace kf::bench

// peers_bench: the load generator of `make bench-peers` (bench/peers.sh) for the systems that
// have no benchmark tool of their own in Debian. Every system gets the same workload:
// --producers producers, each with one append in flight at a time (the next one once the last
// is acknowledged), --messages appends of --payload-bytes in all, acknowledged after the server
// made them durable. One line per run:
//   <system> producers=N messages=M seconds=S per_s=X p50_ms=A p99_ms=B
// Systems:
//   kingfisher  --endpoint HOST:PORT: Inserts to one vchannel (--vchannel; one WAL) through
//               ONE shared Producer of the public client library (it batches across the
//               producers).
//               --driver loop (default): one thread keeps --producers appends in flight with
//               AppendAsync, each callback starting that producer's next one, as
//               redis-benchmark's event loop keeps one request of each of its -c clients in
//               flight (no thread woken per acknowledgement). --driver threads: a thread per
//               producer calling AppendSync (printed as kingfisher-threads).
//   etcd        --endpoint http://HOST:PORT: Puts of distinct keys (Raft + its WAL fsync), a
//               thread per producer.
//   nats        --endpoint HOST:PORT: JetStream publishes to a file-storage stream (created
//               here), one connection per thread; the PubAck is the acknowledgement.
// Redis Streams is driven by redis-benchmark itself (bench/peers.sh).
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "bench_flags.h"
#include "bench_util.h"
#include "kingfisher/client.h"
#include "storage/meta/etcd_meta_store.h"

namespace {

using kf::bench::Clock;
using kf::bench::Die;
using kf::bench::Seconds;

struct Flags {
  std::string system;
  std::string endpoint;
  int producers = 1;
  uint64_t messages = 20000;
  size_t payload_bytes = 1024;
  int max_inflight_requests = kingfisher::BatchingOptions{}.max_inflight_requests;
  std::string driver = "loop";
  std::string vchannel = "kf-dml_0_peers";  // kingfisher: its pchannel is the WAL under load
};

// One thread's appends: `append(i)` must return once message i is acknowledged.
template <typename AppendFn>
std::vector<double> TimeAppends(uint64_t count, AppendFn append) {
  std::vector<double> lat;
  lat.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    const auto t0 = Clock::now();
    append(i);
    lat.push_back(Seconds(Clock::now() - t0));
  }
  return lat;
}

// The line of a run: `lat` holds each producer's latencies. The label is the system, and for
// Kingfisher its driver ("kingfisher-threads" for threads).
void Print(const Flags& f, const std::vector<std::vector<double>>& lat, double seconds) {
  std::vector<double> all;
  for (const auto& v : lat) all.insert(all.end(), v.begin(), v.end());
  const auto q = kf::bench::Summarize(all);
  const std::string label =
      f.system == "kingfisher" && f.driver == "threads" ? "kingfisher-threads" : f.system;
  std::printf("%s producers=%d messages=%zu seconds=%.3f per_s=%.0f p50_ms=%.3f p99_ms=%.3f\n",
              label.c_str(), f.producers, all.size(), seconds,
              static_cast<double>(all.size()) / seconds, q.p50 * 1e3, q.p99 * 1e3);
}

// Runs `per_thread(t, count)` on `producers` threads, prints the line.
template <typename PerThread>
void Run(const Flags& f, PerThread per_thread) {
  std::vector<std::vector<double>> lat(static_cast<size_t>(f.producers));
  std::vector<std::thread> threads;
  const uint64_t each = f.messages / static_cast<uint64_t>(f.producers);
  const auto t0 = Clock::now();
  for (int t = 0; t < f.producers; ++t) {
    threads.emplace_back([&, t] { lat[static_cast<size_t>(t)] = per_thread(t, each); });
  }
  for (auto& th : threads) th.join();
  Print(f, lat, Seconds(Clock::now() - t0));
}

void RunKingfisher(const Flags& f) {
  auto client = kingfisher::Client::Connect({.endpoint = f.endpoint});
  if (!client.ok()) Die(client.status().ToString());
  auto producer =
      (*client)->CreateProducer({.batching = {.max_inflight_requests = f.max_inflight_requests}});
  if (!producer.ok()) Die(producer.status().ToString());
  const std::string payload(f.payload_bytes, 'p');
  auto append = [&](uint64_t) {
    auto r = (*producer)->AppendSync(
        {.type = kingfisher::MessageType::kInsert, .vchannel = f.vchannel, .payload = payload});
    if (!r.ok()) Die("kingfisher append: " + r.status().ToString());
  };
  append(0);  // the stream and the route, warm
  if (f.driver == "threads") {
    Run(f, [&](int, uint64_t n) { return TimeAppends(n, append); });
    return;
  }
  // --driver loop: --producers appends in flight from this thread; each acknowledgement (on
  // the client's callback thread) records its latency and starts that producer's next append.
  const uint64_t each = f.messages / static_cast<uint64_t>(f.producers);
  std::vector<std::vector<double>> lat(static_cast<size_t>(f.producers));
  absl::Mutex mu;
  int running = f.producers;
  std::function<void(size_t)> next = [&](size_t p) {
    const auto t0 = Clock::now();
    (*producer)->AppendAsync(
        {.type = kingfisher::MessageType::kInsert, .vchannel = f.vchannel, .payload = payload},
        [&, p, t0](absl::StatusOr<kingfisher::AppendResult> r) {
          if (!r.ok()) Die("kingfisher append: " + r.status().ToString());
          lat[p].push_back(Seconds(Clock::now() - t0));
          if (lat[p].size() < each) return next(p);
          absl::MutexLock l(&mu);
          --running;
        });
  };
  const auto t0 = Clock::now();
  for (size_t p = 0; p < lat.size(); ++p) next(p);
  {
    absl::MutexLock l(&mu);
    mu.Await(absl::Condition(
        +[](int* n) { return *n == 0; }, &running));
  }
  Print(f, lat, Seconds(Clock::now() - t0));
}

void RunEtcd(const Flags& f) {
  auto store = kf::meta::EtcdMetaStore::Create({.endpoints = {f.endpoint}});
  if (!store.ok()) Die(store.status().ToString());
  const std::string value(f.payload_bytes, 'p');
  Run(f, [&](int t, uint64_t n) {
    return TimeAppends(n, [&](uint64_t i) {
      auto r =
          (*store)->Put(absl::StrCat("peers/", t, "/", i), value, absl::Now() + absl::Seconds(10));
      if (!r.ok()) Die("etcd put: " + r.status().ToString());
    });
  });
}

// A minimal NATS client: text protocol over one blocking TCP socket, enough for JetStream
// request/reply (docs.nats.io "client protocol").
class NatsConnection {
 public:
  explicit NatsConnection(const std::string& endpoint) {
    const size_t colon = endpoint.rfind(':');
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (colon == std::string::npos ||
        getaddrinfo(endpoint.substr(0, colon).c_str(), endpoint.substr(colon + 1).c_str(), &hints,
                    &found) != 0) {
      Die("nats: bad endpoint " + endpoint);
    }
    fd_ = socket(found->ai_family, found->ai_socktype, found->ai_protocol);
    if (fd_ < 0 || connect(fd_, found->ai_addr, found->ai_addrlen) != 0) {
      Die("nats: cannot connect to " + endpoint);
    }
    freeaddrinfo(found);
    ReadLine();  // INFO {...}
    static std::atomic<int> connections{0};
    inbox_ = absl::StrCat("_INBOX.peers.", connections.fetch_add(1), ".");  // replies to us only
    Send(absl::StrCat("CONNECT {\"verbose\":false,\"pedantic\":false,\"headers\":false}\r\nSUB ",
                      inbox_, "* 1\r\n"));
  }
  ~NatsConnection() { close(fd_); }

  // Publishes `payload` to `subject` with a reply subject and returns the reply's payload.
  std::string Request(const std::string& subject, const std::string& payload) {
    const std::string reply_to = absl::StrCat(inbox_, next_++);
    Send(
        absl::StrCat("PUB ", subject, " ", reply_to, " ", payload.size(), "\r\n", payload, "\r\n"));
    while (true) {
      const std::string line = ReadLine();
      if (line == "PING") {
        Send("PONG\r\n");
        continue;
      }
      if (line.rfind("-ERR", 0) == 0) Die("nats: " + line);
      if (line.rfind("MSG ", 0) != 0) continue;  // +OK, PONG, INFO
      size_t bytes = 0;
      if (!absl::SimpleAtoi(line.substr(line.rfind(' ') + 1), &bytes)) Die("nats: " + line);
      std::string body = ReadExactly(bytes + 2);
      body.resize(bytes);
      // "MSG <subject> <sid> <bytes>": the answer to this request, not a late one.
      if (line.compare(4, reply_to.size() + 1, reply_to + " ") != 0) continue;
      return body;
    }
  }

 private:
  void Send(const std::string& s) {
    for (size_t off = 0; off < s.size();) {
      const ssize_t n = write(fd_, s.data() + off, s.size() - off);
      if (n <= 0) Die("nats: write failed");
      off += static_cast<size_t>(n);
    }
  }
  bool Fill() {
    char buf[65536];
    const ssize_t n = read(fd_, buf, sizeof(buf));
    if (n <= 0) return false;
    in_.append(buf, static_cast<size_t>(n));
    return true;
  }
  std::string ReadLine() {
    size_t eol;
    while ((eol = in_.find("\r\n")) == std::string::npos) {
      if (!Fill()) Die("nats: connection closed");
    }
    std::string line = in_.substr(0, eol);
    in_.erase(0, eol + 2);
    return line;
  }
  std::string ReadExactly(size_t n) {
    while (in_.size() < n) {
      if (!Fill()) Die("nats: connection closed");
    }
    std::string out = in_.substr(0, n);
    in_.erase(0, n);
    return out;
  }

  int fd_ = -1;
  std::string inbox_;  // "_INBOX.peers.<connection>."
  std::string in_;
  uint64_t next_ = 0;
};

void RunNats(const Flags& f) {
  {
    NatsConnection admin(f.endpoint);
    const std::string reply = admin.Request(
        "$JS.API.STREAM.CREATE.PEERS",
        R"({"name":"PEERS","subjects":["peers.>"],"storage":"file","num_replicas":1})");
    if (reply.find("\"error\"") != std::string::npos &&
        reply.find("already in use") == std::string::npos) {
      Die("nats: stream create: " + reply);
    }
  }
  const std::string payload(f.payload_bytes, 'p');
  Run(f, [&](int t, uint64_t n) {
    NatsConnection c(f.endpoint);
    const std::string subject = absl::StrCat("peers.", t);
    return TimeAppends(n, [&](uint64_t) {
      const std::string ack = c.Request(subject, payload);
      if (ack.find("\"seq\"") == std::string::npos) Die("nats: publish: " + ack);
    });
  });
}

}  // namespace

int main(int argc, char** argv) {
  kf::bench::SetProgramName("peers_bench");
  Flags f;
  kf::bench::FlagSet flags(argv[0]);
  flags.Add("--system", &f.system, "NAME", "kingfisher, etcd or nats");
  flags.Add("--endpoint", &f.endpoint, "ADDR", "the server to load");
  flags.Add("--producers", &f.producers, "N", "threads, one append in flight each");
  flags.Add("--messages", &f.messages, "N", "appends in all");
  flags.Add("--payload-bytes", &f.payload_bytes, "B", "bytes per append");
  flags.Add("--max-inflight-requests", &f.max_inflight_requests, "N",
            "kingfisher: produce requests of the pchannel awaiting answers before coalescing");
  flags.Add("--driver", &f.driver, "threads|loop",
            "kingfisher: a thread per producer, or one thread keeping --producers in flight");
  flags.Add("--vchannel", &f.vchannel, "NAME", "kingfisher: the vchannel appended to");
  flags.Parse(argc, argv);
  if (f.driver != "threads" && f.driver != "loop") Die("--driver must be threads or loop");
  if (f.producers < 1 || f.endpoint.empty()) Die("--producers >= 1 and --endpoint are required");
  if (f.system == "kingfisher") {
    RunKingfisher(f);
  } else if (f.system == "etcd") {
    RunEtcd(f);
  } else if (f.system == "nats") {
    RunNats(f);
  } else {
    Die("--system must be kingfisher, etcd or nats");
  }
  return 0;
}

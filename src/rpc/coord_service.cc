#include "rpc/coord_service.h"

#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "common/errors.h"
#include "query/query_registry.h"
#include "streaming/cluster_meta.h"
#include "streaming/coord/tso_oracle.h"
#include "streaming/node/wal_registry.h"
#include "wire/status_convert.h"

namespace kf::rpc {

using kingfisher::v1::AssignmentSnapshot;

namespace {

// A stream that is refused at once (no view to watch).
class RefusedWatch final
    : public WriteReactor<kingfisher::v1::WatchAssignmentsRequest, AssignmentSnapshot> {
 public:
  RefusedWatch(StreamOps<kingfisher::v1::WatchAssignmentsRequest, AssignmentSnapshot>* call,
               const grpc::Status& status)
      : WriteReactor(call) {
    Finish(status);
  }
  void OnDone() override { delete this; }
};

// What this process holds of `pchannel` (GetStatus' `data`).
void FillData(const wal::Wal& wal, const query::QueryRegistry::PChannelStats* stats,
              kingfisher::v1::PChannelDataStatus* out) {
  if (auto bytes = wal.StoredBytes()) out->set_wal_bytes(*bytes);
  if (stats == nullptr) return;
  const query::ChannelFollower::CheckpointStats& c = stats->checkpoint;
  out->set_tsafe(stats->tsafe);
  out->set_checkpoint_timetick(stats->checkpoint_ts());
  if (auto lag = stats->checkpoint_lag_seconds()) out->set_checkpoint_lag_seconds(*lag);
  out->set_checkpoint_lag_messages(c.lag_messages());
  if (c.commits > 0) out->set_last_checkpoint_unix_ms(absl::ToUnixMillis(c.committed_at));
  const MessageId& replay_from =
      c.committed_replay_from.valid() ? c.committed_replay_from : c.loaded_replay_from;
  if (replay_from.valid()) out->set_replay_from(replay_from.ToText());
  if (c.truncated_before.valid()) out->set_truncated_below(c.truncated_before.ToText());
  if (!c.last_error.ok()) out->set_last_checkpoint_error(c.last_error.ToString());
  for (const query::QueryRegistry::ShardStats& s : stats->shards) {
    kingfisher::v1::ShardStatus* shard = out->add_shards();
    shard->set_vchannel(s.vchannel);
    shard->set_collection_id(s.collection_id);
    shard->set_rows(s.rows);
    shard->set_memory_bytes(s.memory_bytes);
    shard->set_sealed_segments(static_cast<uint32_t>(s.sealed_segments));
    shard->set_flushed_segments(static_cast<uint32_t>(s.flushed_segments));
  }
}

void Reply(UnaryReactor* reactor, const absl::Status& s) { reactor->Finish(wire::ToGrpcStatus(s)); }

}  // namespace

CoordService::CoordService(CoordServiceOptions options) : options_(options) {
  if (options_.oracle != nullptr) raises_ = std::make_unique<OracleRaiseQueue>(options_.oracle);
  if (options_.view != nullptr) {
    fan_out_ = std::jthread([this](std::stop_token stop) { FanOut(std::move(stop)); });
  }
}

CoordService::~CoordService() { BeginShutdown(); }

void CoordService::Serve(CompletionLoop* loop) {
  ServeUnary(loop, this, &CoordService::RequestGetStatus, &CoordService::HandleGetStatus);
  ServeServerStream(
      loop, this, &CoordService::RequestWatchAssignments,
      [this](grpc::ServerContext*, const kingfisher::v1::WatchAssignmentsRequest*,
             StreamOps<kingfisher::v1::WatchAssignmentsRequest, AssignmentSnapshot>* call) {
        return HandleWatchAssignments(call);
      });
  ServeUnary(loop, this, &CoordService::RequestAllocateTimestamps,
             &CoordService::HandleAllocateTimestamps);
}

void CoordService::HandleGetStatus(grpc::ServerContext* /*context*/,
                                   const kingfisher::v1::GetStatusRequest* /*request*/,
                                   kingfisher::v1::GetStatusResponse* response,
                                   UnaryReactor* reactor) {
  if (options_.view == nullptr) {
    return Reply(reactor,
                 absl::UnimplementedError("this server does not follow the cluster's assignments"));
  }
  // The pchannels this process serves.
  std::map<std::string, streaming::node::WalRegistry::PChannelInfo> served;
  if (options_.registry != nullptr) {
    for (auto& p : options_.registry->List()) served[p.pchannel] = std::move(p);
  }
  std::map<std::string, query::QueryRegistry::PChannelStats> stats;
  if (options_.queries != nullptr) {
    for (auto& p : options_.queries->Stats()) stats[p.pchannel] = std::move(p);
  }
  const std::shared_ptr<const streaming::AssignmentSnapshot> s = options_.view->Current();
  for (const auto& [id, n] : s->nodes) {
    auto* node = response->add_nodes();
    node->set_id(id);
    node->set_address(n.info.address());
    node->set_state(std::string(streaming::NodeStateName(n.info.state())));
  }
  for (const auto& [name, pc] : s->pchannels) {
    auto* p = response->add_pchannels();
    p->set_pchannel(name);
    p->set_node(pc.assignment.node());
    p->set_term(pc.assignment.term());
    p->set_state(std::string(streaming::PChannelStateName(pc.assignment.state())));
    auto it = served.find(name);
    if (it != served.end()) p->set_readers(it->second.readers);
    const bool serving = it != served.end() && it->second.term.value() == pc.assignment.term();
    const bool assigned_here = options_.node_id != 0 && pc.assignment.node() == options_.node_id &&
                               (pc.assignment.state() == kingfisher::v1::PCHANNEL_ASSIGNED ||
                                pc.assignment.state() == kingfisher::v1::PCHANNEL_ASSIGNING);
    if (assigned_here && !serving) {
      p->set_state("RECOVERING");
    }
    if (serving) {
      if (auto wal = options_.registry->Get(name); wal.ok()) {
        auto st = stats.find(name);
        FillData(**wal, st == stats.end() ? nullptr : &st->second, p->mutable_data());
      }
    }
  }
  return Reply(reactor, absl::OkStatus());
}

WatchAssignmentsStream::Snapshot CoordService::ToProto(
    const std::shared_ptr<const streaming::AssignmentSnapshot>& s) {
  {
    absl::MutexLock l(&mu_);
    if (latest_ != nullptr && latest_->version() == s->version) return latest_;
  }
  auto converted = std::make_shared<const AssignmentSnapshot>(s->ToProto());
  absl::MutexLock l(&mu_);
  if (latest_ == nullptr || latest_->version() < converted->version()) latest_ = converted;
  return converted;
}

StreamReactor* CoordService::HandleWatchAssignments(
    StreamOps<kingfisher::v1::WatchAssignmentsRequest, AssignmentSnapshot>* call) {
  if (options_.view == nullptr) {
    // UNIMPLEMENTED, not UNAVAILABLE: clients then route everything here (client/router.h)
    // instead of waiting for discovery that will never come.
    return new RefusedWatch(call,
                            grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                                         "this server does not follow the cluster's assignments"));
  }
  std::shared_ptr<WatchAssignmentsStream> stream =
      WatchAssignmentsStream::Create(call, [this](WatchAssignmentsStream* s) {
        absl::MutexLock l(&mu_);
        streams_.erase(s);
      });
  {
    absl::MutexLock l(&mu_);
    if (shutting_down_) {
      stream->End(wire::ToGrpcStatus(
          StreamingError(StreamingCode::kOnShutdown, "server is shutting down")));
      return stream.get();
    }
    streams_[stream.get()] = stream;
  }
  // Registered first: a newer version fanned out meanwhile reaches it too (Offer keeps the
  // newest).
  stream->Offer(ToProto(options_.view->Current()));
  return stream.get();
}

void CoordService::FanOut(std::stop_token stop) {
  int64_t version = options_.view->Current()->version;
  while (!stop.stop_requested()) {
    std::shared_ptr<const streaming::AssignmentSnapshot> s =
        options_.view->WaitNewer(version, absl::InfiniteFuture(), stop);
    if (s->version <= version) continue;  // woken by stop
    version = s->version;
    WatchAssignmentsStream::Snapshot proto = ToProto(s);
    std::vector<std::shared_ptr<WatchAssignmentsStream>> live;
    {
      absl::MutexLock l(&mu_);
      live.reserve(streams_.size());
      for (const auto& [raw, weak] : streams_) {
        if (auto strong = weak.lock()) live.push_back(std::move(strong));
      }
    }
    for (const auto& stream : live) stream->Offer(proto);
  }
}

void CoordService::HandleAllocateTimestamps(
    grpc::ServerContext* context, const kingfisher::v1::AllocateTimestampsRequest* request,
    kingfisher::v1::AllocateTimestampsResponse* response, UnaryReactor* reactor) {
  if (options_.oracle == nullptr) {
    return Reply(reactor, absl::UnavailableError("not the coordinator"));
  }
  if (request->count() == 0) {
    return Reply(reactor, absl::InvalidArgumentError("AllocateTimestamps: count must be >= 1"));
  }
  const TimeTick at_least(request->at_least());
  absl::StatusOr<std::optional<TimeTick>> first =
      options_.oracle->TryAllocateBatch(request->count(), at_least);
  if (!first.ok()) return Reply(reactor, Answer(first.status(), request->count(), response));
  if (first->has_value()) return Reply(reactor, Answer(**first, request->count(), response));
  // The oracle's mark must be raised first: a store call, made on the raise queue's thread
  // rather than on the loop that serves every call of this process.
  raises_->Add(request->count(), at_least, absl::FromChrono(context->deadline()),
               [reactor, response, count = request->count()](absl::StatusOr<TimeTick> first) {
                 Reply(reactor, Answer(first, count, response));
               });
}

absl::Status CoordService::Answer(const absl::StatusOr<TimeTick>& first, uint32_t count,
                                  kingfisher::v1::AllocateTimestampsResponse* response) {
  if (!first.ok()) {
    absl::Status s = first.status();
    // Deposed or not acting: retryable for the caller, which re-resolves the coordinator.
    if (absl::IsFailedPrecondition(s) || absl::IsUnavailable(s)) {
      s = absl::UnavailableError("not the coordinator: " + std::string(s.message()));
    } else if (absl::IsDeadlineExceeded(s)) {
      // The mark did not rise in time (its store is slow or away, or the caller's deadline
      // passed while it waited in the queue): retryable too, but this is still the coordinator.
      s = absl::UnavailableError("timestamps unavailable: " + std::string(s.message()));
    }
    return s;
  }
  response->set_first(first->value());
  response->set_count(count);
  return absl::OkStatus();
}

void CoordService::BeginShutdown() {
  if (raises_ != nullptr) raises_->Close();
  std::vector<std::shared_ptr<WatchAssignmentsStream>> live;
  {
    absl::MutexLock l(&mu_);
    shutting_down_ = true;
    for (const auto& [raw, weak] : streams_) {
      if (auto strong = weak.lock()) live.push_back(std::move(strong));
    }
  }
  if (fan_out_.joinable()) {
    fan_out_.request_stop();
    fan_out_.join();
  }
  const grpc::Status ending =
      wire::ToGrpcStatus(StreamingError(StreamingCode::kOnShutdown, "server is shutting down"));
  for (const auto& stream : live) stream->End(ending);
}

bool CoordService::WaitForStreams(absl::Time deadline) {
  absl::MutexLock l(&mu_);
  auto empty = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return streams_.empty(); };
  return mu_.AwaitWithDeadline(absl::Condition(&empty), deadline);
}

}  // namespace kf::rpc

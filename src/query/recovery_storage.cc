#include "query/recovery_storage.h"

#include <algorithm>
#include <atomic>
#include <random>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/absl_compat.h"
#include "common/crash_point.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "kingfisher/v1/checkpoint.pb.h"
#include "search/delete_log_format.h"
#include "search/growing_segment.h"
#include "search/sealed_segment_format.h"
#include "spdlog/spdlog.h"
#include "storage/fs/file_system.h"

namespace kf::query {
namespace {

constexpr uint32_t kCheckpointVersion = 1;

absl::Status WithKey(const absl::Status& s, std::string_view what, std::string_view key) {
  return WithContext(s, absl::StrCat(ToAbsl(what), " ", ToAbsl(key)));
}

std::string CheckpointKey(const RecoveryStorageOptions& options, std::string_view pchannel) {
  return absl::StrCat(options.meta_prefix, ToAbsl(pchannel));
}

absl::Status Corrupt(std::string_view key, std::string_view why) {
  return absl::DataLossError(absl::StrCat("checkpoint object ", ToAbsl(key), ": ", ToAbsl(why)));
}

// `bytes` of object `key` as a loaded segment keeps them: mapped from the spill dir if the store
// read them into the heap (RecoveryStorageOptions::spill_dir). If they cannot be (a full disk),
// they stay in the heap.
SharedBytes Spilled(const RecoveryStorageOptions& options, SharedBytes bytes,
                    std::string_view key) {
  if (bytes.mapped || options.spill_dir.empty()) return bytes;
  auto mapped = fs::DefaultFileSystem()->MapCopy(options.spill_dir, bytes.bytes);
  if (mapped.ok()) return *std::move(mapped);
  spdlog::warn("segment object {} stays in memory: {}", key, mapped.status().ToString());
  return bytes;
}

// The segment object `bytes` (named `key`) as a sealed segment whose chunks are views into
// them, counted in `account`; its indexes search with `indexer`'s options.
absl::StatusOr<std::pair<search::SealedSegmentMeta, std::unique_ptr<search::GrowingSegment>>>
SegmentOver(SharedBytes bytes, std::string_view key,
            const std::shared_ptr<search::IndexBuilder>& indexer,
            const std::shared_ptr<search::MemoryAccount>& account) {
  search::IndexOptions index;
  if (indexer != nullptr) index = indexer->options();
  auto decoded = search::DecodeSealedSegment(std::move(bytes), key, account, index);
  if (!decoded.ok()) return decoded.status();
  const search::SealedSegmentMeta& meta = decoded->meta;
  auto segment =
      search::GrowingSegment::FromChunks(std::move(decoded->chunks), meta.rows,
                                         search::SegmentOptions{.dim = meta.dim,
                                                                .metric = meta.metric,
                                                                .chunk_rows = meta.chunk_rows,
                                                                .indexer = indexer,
                                                                .account = account});
  if (!segment.ok()) return Corrupt(key, ToStd(segment.status().message()));
  return std::make_pair(meta, *std::move(segment));
}

// The flushed segment `f` of (shard, partition), loaded with its delete logs applied.
absl::StatusOr<std::shared_ptr<search::GrowingSegment>> LoadSegment(
    const RecoveryStorageOptions& options, const kingfisher::v1::ShardCheckpoint& shard,
    const kingfisher::v1::FlushedSegment& f, const ShardOptions& shard_options) {
  // Shared, not copied: the loaded chunks search the object's bytes in place (a local store's
  // file mapping, an S3 object's body).
  // The format checksums every part (DATA_LOSS naming the object): the store need not.
  auto bytes = options.objects->GetShared(f.object(), absl::Now() + options.io_timeout,
                                          object::ObjectStore::Checksum::kCaller);
  if (!bytes.ok()) return WithKey(bytes.status(), "reading segment object", f.object());
  auto loaded = SegmentOver(Spilled(options, *std::move(bytes), f.object()), f.object(),
                            shard_options.indexer, shard_options.account);
  if (!loaded.ok()) return loaded.status();
  auto& [meta, segment] = *loaded;
  if (meta.collection_id != shard.collection_id() || meta.vchannel != shard.vchannel() ||
      static_cast<uint64_t>(meta.segment_id) != f.id() || meta.dim != shard.dim() ||
      meta.rows != f.rows()) {
    return Corrupt(f.object(),
                   absl::StrCat("holds segment ", meta.segment_id, " of ", meta.vchannel, " (",
                                meta.rows, " rows), the checkpoint names segment ", f.id(), " of ",
                                shard.vchannel(), " (", f.rows(), " rows)"));
  }
  for (const std::string& key : f.delete_logs()) {
    auto log_bytes =
        options.objects->Get(key, object::ByteRange::All(), absl::Now() + options.io_timeout);
    if (!log_bytes.ok()) return WithKey(log_bytes.status(), "reading delete log", key);
    auto log = search::DecodeDeleteLog(*log_bytes, key);
    if (!log.ok()) return log.status();
    if (static_cast<uint64_t>(log->segment_id) != f.id()) {
      return Corrupt(key, absl::StrCat("is a delete log of segment ", log->segment_id,
                                       ", the checkpoint names it for segment ", f.id()));
    }
    for (const search::DeleteRecord& r : log->records) segment->Delete(r.pk, r.ts);
  }
  return std::shared_ptr<search::GrowingSegment>(std::move(segment));
}

}  // namespace

namespace {

// The checkpoint of `pchannel` as stored, and its key's mod revision; nullopt if absent.
absl::StatusOr<std::optional<std::pair<kingfisher::v1::PChannelCheckpoint, int64_t>>>
ReadCheckpoint(const RecoveryStorageOptions& options, std::string_view pchannel) {
  const std::string key = CheckpointKey(options, pchannel);
  auto got = options.meta->Get(key, absl::Now() + options.io_timeout);
  if (absl::IsNotFound(got.status())) return std::nullopt;
  if (!got.ok()) return WithKey(got.status(), "reading checkpoint", key);
  kingfisher::v1::PChannelCheckpoint c;
  if (!c.ParseFromString(got->kv.value) || c.version() != kCheckpointVersion ||
      c.pchannel() != pchannel) {
    return absl::DataLossError(absl::StrCat("checkpoint ", key, " does not parse as a version ",
                                            kCheckpointVersion, " checkpoint of ",
                                            ToAbsl(pchannel)));
  }
  return std::make_pair(std::move(c), got->kv.mod_revision);
}

}  // namespace

absl::StatusOr<std::optional<kingfisher::v1::WalState>> LoadWalState(
    const RecoveryStorageOptions& options, std::string_view pchannel) {
  auto read = ReadCheckpoint(options, pchannel);
  if (!read.ok()) return read.status();
  if (!read->has_value() || !(*read)->first.has_wal()) return std::nullopt;
  return (*read)->first.wal();
}

absl::StatusOr<int64_t> CheckpointRevision(const RecoveryStorageOptions& options,
                                           std::string_view pchannel) {
  const std::string key = CheckpointKey(options, pchannel);
  auto got = options.meta->Get(key, absl::Now() + options.io_timeout);
  if (absl::IsNotFound(got.status())) return 0;
  if (!got.ok()) return WithKey(got.status(), "reading checkpoint", key);
  return got->kv.mod_revision;
}

absl::StatusOr<std::optional<RecoveredChannel>> LoadCheckpoint(
    const RecoveryStorageOptions& options, std::string_view pchannel,
    const ShardOptions& shard_options, const std::function<bool()>& cancelled) {
  auto read = ReadCheckpoint(options, pchannel);
  if (!read.ok()) return read.status();
  if (!read->has_value()) return std::nullopt;
  const kingfisher::v1::PChannelCheckpoint& c = (*read)->first;
  const std::string key = CheckpointKey(options, pchannel);
  RecoveredChannel out;
  out.checkpoint_ts = c.checkpoint_ts();
  out.mod_revision = (*read)->second;
  out.wal = c.wal();
  if (!c.replay_from().empty()) {
    auto from = MessageId::Decode(c.replay_from());
    if (!from.ok()) {
      return absl::DataLossError(
          absl::StrCat("checkpoint ", key, ": replay_from: ", from.status().message()));
    }
    out.replay_from = *from;
  }
  // Every flushed segment, loaded by a few threads at once (reading, checking and copying an
  // object is CPU-bound once it is in the page cache). Not yet overlapped with the replay.
  struct Job {
    const kingfisher::v1::ShardCheckpoint* shard;
    const kingfisher::v1::FlushedSegment* segment;
    absl::StatusOr<std::shared_ptr<search::GrowingSegment>> loaded;
  };
  std::vector<Job> jobs;
  for (const kingfisher::v1::ShardCheckpoint& sc : c.shards()) {
    for (const kingfisher::v1::PartitionCheckpoint& pc : sc.partitions()) {
      for (const kingfisher::v1::FlushedSegment& f : pc.flushed()) {
        jobs.push_back({&sc, &f, absl::UnknownError("not loaded")});
      }
    }
  }
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < jobs.size();) {
      if (cancelled != nullptr && cancelled()) {
        jobs[i].loaded = absl::CancelledError(
            absl::StrCat("loading the checkpoint of ", ToAbsl(pchannel), ": no longer wanted"));
        continue;
      }
      jobs[i].loaded = LoadSegment(options, *jobs[i].shard, *jobs[i].segment, shard_options);
      CrashPoint("recovery.segment_loaded");
    }
  };
  {
    const size_t threads =
        std::min<size_t>(jobs.size(), std::max(1u, std::thread::hardware_concurrency()));
    std::vector<std::jthread> pool;
    for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
    work();
  }
  size_t done = 0;
  for (const kingfisher::v1::ShardCheckpoint& sc : c.shards()) {
    auto shard = std::make_shared<Shard>(sc.vchannel(),
                                         ShardSchema{.collection_id = sc.collection_id(),
                                                     .dim = sc.dim(),
                                                     .metric = MetricFromProto(sc.metric())},
                                         shard_options, SegmentStart{});
    std::vector<RestoredPartition> partitions;
    for (const kingfisher::v1::PartitionCheckpoint& pc : sc.partitions()) {
      RestoredPartition& p = partitions.emplace_back();
      p.name = pc.name();
      p.growing_id = pc.growing_id();
      for (const kingfisher::v1::FlushedSegment& f : pc.flushed()) {
        Job& job = jobs[done++];
        if (!job.loaded.ok()) return job.loaded.status();
        p.flushed.push_back(
            LoadedSegment{.id = f.id(),
                          .segment = *std::move(job.loaded),
                          .object = f.object(),
                          .delete_logs = {f.delete_logs().begin(), f.delete_logs().end()}});
        ++out.segments;
      }
    }
    shard->Restore(std::move(partitions), out.replay_from);
    out.shards.push_back(std::move(shard));
  }
  return out;
}

CheckpointWriter::CheckpointWriter(RecoveryStorageOptions options, std::string pchannel, Term term,
                                   int64_t mod_revision)
    : options_(std::move(options)),
      pchannel_(std::move(pchannel)),
      term_(term),
      tag_(absl::StrFormat("t%d-%08x", term.value(), std::random_device()())),
      mod_revision_(mod_revision) {
  thread_ = std::thread([this] { Run(); });
}

CheckpointWriter::~CheckpointWriter() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

bool CheckpointWriter::Submit(CheckpointPlan plan, Done done) {
  absl::MutexLock lock(&mu_);
  if (busy_ || stopping_) return false;
  busy_ = true;
  job_.emplace(std::move(plan), std::move(done));
  return true;
}

bool CheckpointWriter::busy() const {
  absl::MutexLock lock(&mu_);
  return busy_;
}

bool CheckpointWriter::fenced() const {
  absl::MutexLock lock(&mu_);
  return fenced_;
}

void CheckpointWriter::Run() {
  for (;;) {
    std::pair<CheckpointPlan, Done> job;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]()
                       ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || job_.has_value(); };
      mu_.Await(absl::Condition(&ready));
      if (!job_.has_value()) return;  // stopping, nothing queued
      job = *std::move(job_);
      job_.reset();
    }
    absl::Status s = Write(job.first);
    if (!s.ok()) garbage_possible_ = true;  // it may have written objects it did not commit
    std::move(job.second)(job.first, s);
    absl::MutexLock lock(&mu_);
    busy_ = false;
  }
}

std::string CheckpointWriter::ObjectKey(const kingfisher::v1::ShardCheckpoint& shard,
                                        const kingfisher::v1::PartitionCheckpoint& partition,
                                        uint64_t segment_id) const {
  // Ids are unique per partition (a ManualFlush opens every partition's next segment at its
  // own timetick), so the partition is part of the key.
  return absl::StrCat(ObjectPrefix(), shard.vchannel(), "/", partition.name(), "/", segment_id, ".",
                      tag_);
}

std::string CheckpointWriter::ObjectPrefix() const {
  return absl::StrCat(options_.object_prefix, "segments/", pchannel_, "/");
}

namespace {

// The term in an object name's writer tag ("<id>.t<term>-<random>...."); nullopt if none.
std::optional<int64_t> TermOfObject(std::string_view key) {
  const size_t slash = key.rfind('/');
  std::string_view name = key.substr(slash == std::string_view::npos ? 0 : slash + 1);
  const size_t dot = name.find(".t");
  if (dot == std::string_view::npos) return std::nullopt;
  name.remove_prefix(dot + 2);
  const size_t dash = name.find('-');
  int64_t term = 0;
  if (dash == std::string_view::npos || !absl::SimpleAtoi(ToAbsl(name.substr(0, dash)), &term)) {
    return std::nullopt;
  }
  return term;
}

}  // namespace

absl::flat_hash_set<std::string> ObjectsNamedBy(
    const kingfisher::v1::PChannelCheckpoint& checkpoint) {
  absl::flat_hash_set<std::string> named;
  for (const auto& shard : checkpoint.shards()) {
    for (const auto& partition : shard.partitions()) {
      for (const auto& segment : partition.flushed()) {
        named.insert(segment.object());
        named.insert(segment.delete_logs().begin(), segment.delete_logs().end());
      }
    }
  }
  return named;
}

bool CheckpointWriter::CollectGarbage(const absl::flat_hash_set<std::string>& named) {
  // Objects of this pchannel that the checkpoint just committed does not name were written by
  // a flush that never committed (a crash, a failed write), or belong to a dropped collection.
  // Only those of this term or an older one go: a newer owner's may be named by a checkpoint
  // committed after this one (this writer would then be fenced at its next commit).
  size_t deleted = 0;
  auto report = absl::MakeCleanup([&] {
    if (deleted > 0) {
      spdlog::info("garbage collection of {}: deleted {} objects no checkpoint names",
                   ObjectPrefix(), deleted);
    }
    deleted_objects_.fetch_add(deleted, std::memory_order_relaxed);
  });
  std::string after;
  for (;;) {
    auto page =
        options_.objects->List(ObjectPrefix(), after, 1000, absl::Now() + options_.io_timeout);
    if (!page.ok()) {
      spdlog::warn("garbage collection of {}: {}", ObjectPrefix(), page.status().ToString());
      return false;
    }
    for (const object::ObjectInfo& o : page->objects) {
      const std::optional<int64_t> term = TermOfObject(o.key);
      if (named.contains(o.key) || !term.has_value() || *term > term_.value()) continue;
      if (absl::Status s = options_.objects->Delete(o.key, absl::Now() + options_.io_timeout);
          !s.ok()) {
        spdlog::warn("garbage collection: deleting {}: {}", o.key, s.ToString());
        return false;
      }
      CrashPoint("checkpoint.orphan_deleted");
      ++deleted;
    }
    if (!page->truncated || page->objects.empty()) return true;
    after = page->objects.back().key;
  }
}

absl::Status CheckpointWriter::Write(CheckpointPlan& plan) {
  if (fenced()) {
    return StreamingError(StreamingCode::kChannelFenced,
                          absl::StrCat("another owner committed the checkpoint of ", pchannel_));
  }
  kingfisher::v1::PChannelCheckpoint c;
  c.set_version(kCheckpointVersion);
  c.set_pchannel(pchannel_);
  c.set_checkpoint_ts(plan.checkpoint_ts);
  if (plan.replay_from.valid()) c.set_replay_from(plan.replay_from.Encode());
  c.set_term(term_.value());
  c.set_written_unix_ms(absl::ToUnixMillis(absl::Now()));
  c.set_writer(tag_);
  if (plan.wal.has_value()) *c.mutable_wal() = *plan.wal;
  size_t objects_written = 0;
  // No longer than the interval either: a checkpoint is never late by more than one.
  const absl::Time index_deadline =
      absl::Now() + std::min(kIndexWait, options_.checkpoint_interval);
  for (auto& [shard, sp] : plan.shards) {
    kingfisher::v1::ShardCheckpoint& sc = sp.checkpoint;
    for (ShardCheckpointPlan::Segment& seg : sp.segments) {
      // Its full chunks were queued for indexing as they filled (oldest first, so later
      // arrivals do not delay them): their indexes go into the object, so a restart never scans
      // them exactly and the read-back copy can replace it. Polled, since the builder publishes
      // an index without telling anyone; bounded for the whole write.
      while (!seg.segment->FullChunksIndexed() && absl::Now() < index_deadline) {
        absl::SleepFor(absl::Milliseconds(5));
      }
      kingfisher::v1::PartitionCheckpoint* pc = sc.mutable_partitions(seg.partition);
      kingfisher::v1::FlushedSegment* f = pc->mutable_flushed(seg.flushed);
      search::SealedSegmentMeta meta{
          .collection_id = sc.collection_id(),
          .segment_id = static_cast<int64_t>(f->id()),
          .vchannel = sc.vchannel(),
          .partition = pc->name() == kDefaultPartition ? "" : pc->name(),
          .dim = sc.dim(),
          .metric = MetricFromProto(sc.metric()),
          .chunk_rows = static_cast<uint32_t>(seg.segment->options().chunk_rows)};
      // Indexes are only ever added: indexed now, the object will hold every index.
      const bool indexed = seg.segment->FullChunksIndexed();
      search::SegmentSnapshot snapshot = seg.segment->Snapshot();
      // The rows the plan counted: a sealed segment takes no more.
      auto bytes = search::EncodeSealedSegment(meta, snapshot);
      if (!bytes.ok()) return bytes.status();
      const std::string key = absl::StrCat(ObjectKey(sc, *pc, f->id()), ".seg");
      auto put = options_.objects->Put(key, *bytes, {}, absl::Now() + options_.io_timeout);
      if (!put.ok()) return WithKey(put.status(), "writing segment object", key);
      ++objects_written;
      CrashPoint("checkpoint.object_written");
      f->set_object(key);
      // A copy missing an index (a chunk not indexed in time, a failed build) is not read back:
      // nothing would build it, and it would be scanned exactly for good.
      if (indexed) seg.reloaded = ReadBack(key, *std::move(bytes), *seg.segment);
    }
    for (const ShardCheckpointPlan::DeleteLog& log : sp.delete_logs) {
      kingfisher::v1::PartitionCheckpoint* pc = sc.mutable_partitions(log.partition);
      kingfisher::v1::FlushedSegment* f = pc->mutable_flushed(log.flushed);
      auto bytes = search::EncodeDeleteLog(static_cast<int64_t>(f->id()), log.records);
      if (!bytes.ok()) return bytes.status();
      const std::string key =
          absl::StrCat(ObjectKey(sc, *pc, f->id()), ".del.", log.records.front().ts);
      auto put = options_.objects->Put(key, *bytes, {}, absl::Now() + options_.io_timeout);
      if (!put.ok()) return WithKey(put.status(), "writing delete log", key);
      ++objects_written;
      CrashPoint("checkpoint.object_written");
      f->add_delete_logs(key);
    }
    *c.add_shards() = sc;
  }

  if (objects_written > 0) CrashPoint("checkpoint.objects_written");
  RETURN_IF_ERROR(Commit(c.SerializeAsString()));
  CrashPoint("checkpoint.committed");
  // Orphans appear before this writer's first complete collection (a predecessor's), after
  // one of its writes failed, when its commit replaced another writer's, and once a commit stops
  // naming objects the one before named (a dropped collection or partition): only then is the
  // prefix listed — and every kCollectionBackstop regardless, for what none of these saw (a
  // PUT that failed here but was applied later).
  if (absl::Now() - last_collection_ >= kCollectionBackstop) garbage_possible_ = true;
  absl::flat_hash_set<std::string> named = ObjectsNamedBy(c);
  for (const std::string& key : named_) {
    if (!named.contains(key)) {
      garbage_possible_ = true;
      break;
    }
  }
  named_ = std::move(named);
  if (garbage_possible_) {
    garbage_possible_ = !CollectGarbage(named_);
    if (!garbage_possible_) last_collection_ = absl::Now();
  }
  return absl::OkStatus();
}

std::shared_ptr<search::GrowingSegment> CheckpointWriter::ReadBack(
    const std::string& key, std::string bytes, const search::GrowingSegment& segment) const {
  absl::StatusOr<SharedBytes> object =
      options_.objects->MapsObjects()
          ? options_.objects->GetShared(key, absl::Now() + options_.io_timeout,
                                        object::ObjectStore::Checksum::kCaller)
          : Spilled(options_, SharedBytes::Of(std::move(bytes)), key);
  if (object.ok()) {
    auto read =
        SegmentOver(*std::move(object), key, segment.options().indexer, segment.options().account);
    if (read.ok()) return std::move(read->second);
    object = read.status();
  }
  spdlog::warn("reading back segment object {}: {} (the segment stays in memory as it is)", key,
               object.status().ToString());
  return nullptr;
}

absl::Status CheckpointWriter::Commit(const std::string& value) {
  const std::string key = CheckpointKey(options_, pchannel_);
  const meta::Compare unchanged = mod_revision_ == 0
                                      ? meta::Compare::Absent(key)
                                      : meta::Compare::ModRevisionIs(key, mod_revision_);
  auto txn = options_.meta->Txn({unchanged}, {meta::Op::Put(key, value)}, {},
                                absl::Now() + options_.io_timeout);
  if (!txn.ok()) return WithKey(txn.status(), "committing checkpoint", key);
  if (!txn->succeeded) {
    // The key changed since this writer read or wrote it. Its own earlier commit may have been
    // applied although its call failed (the key names this writer), or an older owner that
    // had not yet noticed the move committed (a lower term; its WAL is fenced, so it can no
    // longer truncate): this owner's state is as valid, and it goes on from the new revision.
    // A newer owner's commit fences this writer.
    auto got = options_.meta->Get(key, absl::Now() + options_.io_timeout);
    if (!got.ok()) return WithKey(got.status(), "committing checkpoint", key);
    kingfisher::v1::PChannelCheckpoint stored;
    if (stored.ParseFromString(got->kv.value) &&
        (stored.writer() == tag_ || stored.term() < term_.value()) &&
        got->kv.mod_revision != mod_revision_) {
      mod_revision_ = got->kv.mod_revision;
      garbage_possible_ = true;  // the other writer's objects this commit replaces
      return Commit(value);
    }
    absl::MutexLock lock(&mu_);
    fenced_ = true;
    return StreamingError(StreamingCode::kChannelFenced,
                          absl::StrCat("checkpoint ", key, " was committed by another owner"));
  }
  mod_revision_ = txn->revision;
  return absl::OkStatus();
}

}  // namespace kf::query

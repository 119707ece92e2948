// Model-based tests of the WAL adaptor (docs/semantics.md §3): random seeded histories of appends,
// transactions (commit, rollback, expiry by a late body or by the timetick watermark, failure
// by an exclusive message), restarts, concurrent rounds and readers opened at random moments and
// positions are replayed against the real WalImpl over the in-memory backend and over the local
// disk backend, and every reader's deliveries are compared exactly with what a reference model
// says it must receive. A second test checks the LCMID contract for every acknowledged message.
//
// Reproduce a failure with the seed it prints: KF_MODEL_SEED=<seed> KF_MODEL_ITERATIONS=1.
// Run longer with KF_MODEL_ITERATIONS=<n> (seeds KF_MODEL_SEED, +1, ... ; default base below).
// Sequential steps are fully determined by the seed; the concurrent rounds' plans are, their
// interleavings are not (the model checks any interleaving's outcome for consistency).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "common/absl_compat.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "gtest/gtest.h"
#include "message/builders.h"
#include "storage/tso/timestamp_allocator.h"
#include "wal/backends/testing/backend_under_test.h"
#include "wal/txn/txn_message.h"
#include "wal/wal_impl.h"

namespace kf::wal {
namespace {

constexpr std::string_view kPchannel = "kf-dml_0";
constexpr int64_t kKeepaliveMs = 1000;
constexpr uint64_t kStartMs = 1'700'000'000'000;
// How long a drain waits for one more message. Once everything a reader may read is
// acknowledged, a short deadline is enough: durable messages are always readable at once.
constexpr absl::Duration kDrainWait = absl::Milliseconds(1);
constexpr uint64_t kDefaultBaseSeed = 20250601;

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v == nullptr || *v == '\0' ? fallback : std::atoi(v);
}

uint64_t BaseSeed() {
  const char* v = std::getenv("KF_MODEL_SEED");
  return v == nullptr || *v == '\0' ? kDefaultBaseSeed : std::strtoull(v, nullptr, 10);
}

using testing::BackendKind;
using testing::BackendName;

// What the histories exercised, printed after each test so a reader of the log can see the
// interesting cases actually happen.
struct Stats {
  int histories = 0, steps = 0, concurrent_rounds = 0, restarts = 0, committed = 0, rolled_back = 0,
      expired_by_request = 0, expired_by_watermark = 0, failed_by_exclusive = 0, rejected = 0,
      readers = 0, deliveries = 0, txn_deliveries = 0, either_predictions = 0;
  std::string ToString() const {
    return absl::StrCat(
        histories, " histories, ", steps, " steps, ", concurrent_rounds, " concurrent rounds, ",
        restarts, " restarts; txns: ", committed, " committed, ", rolled_back, " rolled back, ",
        expired_by_request, " expired by a late request, ", expired_by_watermark,
        " expired by the watermark, ", failed_by_exclusive, " failed by an exclusive message; ",
        rejected, " requests rejected; ", readers, " readers compared: ", deliveries,
        " deliveries (", txn_deliveries, " Txn); ", either_predictions, " boundary predictions");
  }
};
Stats g_stats;

// ---------------------------------------------------------------------------------------------
// The system under test: a WalImpl driven without its ticker (the test calls SyncTimeTick), over
// a backend that survives restarts (the memory log is shared with each reopened instance; the
// local log lives in a temp directory and is reopened at a higher term).

class WalUnderTest {
 public:
  WalUnderTest(BackendKind kind, const std::filesystem::path& dir, WalOptions options)
      : options_(std::move(options)),
        // Small segments: catch-up reads cross segment rolls.
        log_(kind, dir, std::string(kPchannel), /*segment_bytes=*/32 << 10) {}
  ~WalUnderTest() { Close(); }

  absl::Status Open() {
    ASSIGN_OR_RETURN(std::unique_ptr<WalBackend> backend, log_.Open(term_));
    wal_ = std::make_unique<WalImpl>(options_, std::move(backend));
    return wal_->Recover();
  }

  absl::Status Restart() {
    Close();
    term_ = Term(term_.value() + 1);
    return Open();
  }

  void Close() {
    if (wal_ != nullptr) wal_->Close();
    wal_.reset();
  }

  WalImpl& wal() { return *wal_; }

 private:
  const WalOptions options_;
  Term term_{1};
  testing::BackendUnderTest log_;
  std::unique_ptr<WalImpl> wal_;
};

// ---------------------------------------------------------------------------------------------
// Rendering: the model and the readers describe deliveries in the same words, so a mismatch is
// a readable line diff.

bool IsData(MessageType t) { return t == MessageType::kInsert || t == MessageType::kDelete; }

// Payloads are "<tag>|<filler>": the tag names the operation that produced the message.
std::string PayloadText(std::string_view payload) {
  const size_t bar = payload.find('|');
  return absl::StrCat(ToAbsl(payload.substr(0, bar)), "/", payload.size());
}

std::string Describe(MessageType type, const MessageId& id, TimeTick tt, std::string_view vc,
                     const MessageId& lc, std::string_view payload) {
  std::string s = absl::StrCat(ToAbsl(MessageTypeName(type)), " ", id.ToText(), " tt=", tt.value(),
                               " vc=", vc.empty() ? "-" : ToAbsl(vc), " lc=", lc.ToText());
  if (IsData(type)) absl::StrAppend(&s, " p=", PayloadText(payload));
  return s;
}

std::string DescribeInner(MessageType type, const MessageId& id, std::string_view payload) {
  std::string s = absl::StrCat(ToAbsl(MessageTypeName(type)), " ", id.ToText());
  if (IsData(type)) absl::StrAppend(&s, " p=", PayloadText(payload));
  return s;
}

std::string DescribeDelivered(const ImmutableMessage& m) {
  std::string s = Describe(m.type(), m.id(), m.timetick(), m.vchannel(), m.last_confirmed(),
                           m.message().payload());
  if (const TxnMessage* txn = AsTxnMessage(m)) {
    std::vector<std::string> inner;
    for (const auto& i : txn->inner()) {
      inner.push_back(DescribeInner(i->type(), i->id(), i->message().payload()));
    }
    absl::StrAppend(&s, " [", absl::StrJoin(inner, ", "), "]");
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// The reference model.

enum class TxnState { kActive, kCommitted, kRolledBack, kExpired, kFailed, kLost };

const char* TxnStateText(TxnState s) {
  switch (s) {
    case TxnState::kActive:
      return "active";
    case TxnState::kCommitted:
      return "committed";
    case TxnState::kRolledBack:
      return "rolled back";
    case TxnState::kExpired:
      return "expired";
    case TxnState::kFailed:
      return "failed";
    case TxnState::kLost:
      return "lost in a restart";
  }
  return "?";
}

// One acknowledged message.
struct Rec {
  MessageId id;
  TimeTick tt;
  MessageId lc;
  MessageType type = MessageType::kUnknown;
  std::string vc;
  std::string payload;
  int64_t txn = 0;  // 0 outside transactions
};

struct ModelTxn {
  int64_t id = 0;
  std::string vc;
  kingfisher::v1::TxnContext ctx;
  MessageId begin_id;
  TimeTick last_tt;  // the Begin's or the latest acknowledged body's timetick
  TxnState state = TxnState::kActive;
  bool earlier_owner = false;  // begun before a restart: the WAL no longer knows it
};

// What a reader may receive: a non-txn message, or a committed txn as one Txn at its commit.
struct Delivery {
  MessageId id;     // the delivered message's id (the CommitTxn's for a Txn)
  TimeTick tt;      // its timetick (the commit's for a Txn)
  MessageId start;  // a reader must start at or before this to receive it (the Begin for a Txn)
  std::string vc;
  MessageType type;
  std::string text;
};

struct ReaderSpec {
  DeliverPolicy::Kind kind = DeliverPolicy::Kind::kAll;
  MessageId id;                           // kStartFrom / kStartAfter
  std::optional<MessageId> latest_after;  // kLatest: the last acknowledged id when opened
  std::string vc;
  std::optional<TimeTick> gt, gte;
  std::vector<absl::flat_hash_set<MessageType>> types;
  std::string origin;  // how the test chose it (e.g. "resume from local:7")

  bool Covers(const MessageId& start) const {
    switch (kind) {
      case DeliverPolicy::Kind::kAll:
        return true;
      case DeliverPolicy::Kind::kLatest:
        return !latest_after.has_value() || start > *latest_after;
      case DeliverPolicy::Kind::kStartFrom:
        return start >= id;
      case DeliverPolicy::Kind::kStartAfter:
        return start > id;
    }
    return false;
  }

  bool Wants(const Delivery& d) const {
    if (!Covers(d.start)) return false;
    if (!vc.empty() && !d.vc.empty() && d.vc != vc) return false;
    if (gt && !(d.tt > *gt)) return false;
    if (gte && !(d.tt >= *gte)) return false;
    if (!IsSystemType(d.type)) {
      for (const auto& set : types) {
        if (!set.contains(d.type)) return false;
      }
    }
    return true;
  }

  ScanOptions ToScanOptions() const {
    ScanOptions o;
    o.policy.kind = kind;
    o.policy.id = id;
    o.vchannel = vc;
    if (gt) o.filter.AddTimeTickGT(*gt);
    if (gte) o.filter.AddTimeTickGTE(*gte);
    for (const auto& set : types) o.filter.AddTypes(set);
    return o;
  }

  std::string ToString() const {
    std::string s;
    switch (kind) {
      case DeliverPolicy::Kind::kAll:
        s = "All";
        break;
      case DeliverPolicy::Kind::kLatest:
        s = absl::StrCat("Latest(after ", latest_after ? latest_after->ToText() : "nothing", ")");
        break;
      case DeliverPolicy::Kind::kStartFrom:
        s = absl::StrCat("StartFrom(", id.ToText(), ")");
        break;
      case DeliverPolicy::Kind::kStartAfter:
        s = absl::StrCat("StartAfter(", id.ToText(), ")");
        break;
    }
    absl::StrAppend(&s, " vc=", vc.empty() ? "<pchannel>" : vc);
    if (gt) absl::StrAppend(&s, " TimeTickGT(", gt->value(), ")");
    if (gte) absl::StrAppend(&s, " TimeTickGTE(", gte->value(), ")");
    for (const auto& set : types) {
      std::vector<std::string> names;
      for (MessageType t : set) names.emplace_back(ToAbsl(MessageTypeName(t)));
      std::sort(names.begin(), names.end());
      absl::StrAppend(&s, " Types{", absl::StrJoin(names, ","), "}");
    }
    if (!origin.empty()) absl::StrAppend(&s, " [", origin, "]");
    return s;
  }
};

class Model {
 public:
  std::map<MessageId, Rec> recs;
  std::map<int64_t, ModelTxn> txns;

  static TimeTick Deadline(const ModelTxn& t) {
    return TimeTick(t.last_tt.value() + (static_cast<uint64_t>(kKeepaliveMs) << kLogicalBits));
  }

  // docs/semantics.md §1: the LCMID of a message stamped now is the Begin of the oldest transaction
  // that is still open (its later messages are yet to come), else the message itself.
  MessageId ExpectedLc(const MessageId& own) const {
    std::optional<MessageId> oldest;
    for (const auto& [id, t] : txns) {
      if (t.state == TxnState::kActive && t.begin_id < own && (!oldest || t.begin_id < *oldest)) {
        oldest = t.begin_id;
      }
    }
    return oldest.value_or(own);
  }

  // Everything a reader of the whole pchannel from the beginning must receive, in WAL order.
  std::vector<Delivery> Deliverable() const {
    std::map<int64_t, std::vector<const Rec*>> by_txn;
    for (const auto& [id, r] : recs) {
      if (r.txn != 0) by_txn[r.txn].push_back(&r);
    }
    std::vector<Delivery> out;
    for (const auto& [id, r] : recs) {
      if (r.txn == 0) {
        out.push_back(
            {r.id, r.tt, r.id, r.vc, r.type, Describe(r.type, r.id, r.tt, r.vc, r.lc, r.payload)});
        continue;
      }
      if (r.type != MessageType::kCommitTxn) continue;
      const ModelTxn& t = txns.at(r.txn);
      if (t.state != TxnState::kCommitted) continue;
      std::vector<std::string> inner;
      for (const Rec* i : by_txn[r.txn]) inner.push_back(DescribeInner(i->type, i->id, i->payload));
      std::string text = absl::StrCat(Describe(MessageType::kTxn, r.id, r.tt, r.vc, r.lc, ""), " [",
                                      absl::StrJoin(inner, ", "), "]");
      out.push_back({r.id, r.tt, t.begin_id, r.vc, MessageType::kTxn, std::move(text)});
    }
    return out;
  }

  std::vector<std::string> Expected(const ReaderSpec& spec) const {
    std::vector<std::string> out;
    for (const Delivery& d : Deliverable()) {
      if (spec.Wants(d)) out.push_back(d.text);
    }
    return out;
  }
};

// A readable diff of two delivery lists.
std::string Diff(const std::vector<std::string>& want, const std::vector<std::string>& got) {
  size_t first = 0;
  while (first < want.size() && first < got.size() && want[first] == got[first]) ++first;
  std::string s = absl::StrCat("expected ", want.size(), " deliveries, got ", got.size(),
                               "; first difference at #", first, "\n");
  auto window = [&](const std::vector<std::string>& v, std::string_view name) {
    absl::StrAppend(&s, "  ", ToAbsl(name), ":\n");
    const size_t from = first >= 3 ? first - 3 : 0;
    for (size_t i = from; i < v.size() && i < first + 6; ++i) {
      absl::StrAppend(&s, i == first ? "  > #" : "    #", i, " ", v[i], "\n");
    }
  };
  window(want, "expected");
  window(got, "delivered");
  std::multiset<std::string> w(want.begin(), want.end()), g(got.begin(), got.end());
  int shown = 0;
  for (const auto& x : want) {
    if (g.count(x) < w.count(x) && shown++ < 15) absl::StrAppend(&s, "  missing:    ", x, "\n");
  }
  shown = 0;
  for (const auto& x : got) {
    if (w.count(x) < g.count(x) && shown++ < 15) absl::StrAppend(&s, "  unexpected: ", x, "\n");
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// Readers.

struct Reader {
  ReaderSpec spec;
  std::unique_ptr<Scanner> scanner;
  std::vector<std::string> got;
  std::optional<TimeTick> last_tt;  // over everything delivered, TimeTicks included
  int ticks = 0;
  std::string error;
  bool resident = false;  // stays open until the history ends (or restarts)
};

// Reads until nothing more arrives within kDrainWait (DEADLINE_EXCEEDED). Call it once
// everything the reader may read is acknowledged (durable messages are always readable, so then
// DEADLINE_EXCEEDED means "the end"), or repeatedly while appends run. Returns false on an error
// (kept in r.error).
bool DrainReader(Reader& r) {
  for (;;) {
    absl::StatusOr<ImmutableMessagePtr> m = r.scanner->Next({}, absl::Now() + kDrainWait);
    if (absl::IsDeadlineExceeded(m.status())) return true;
    if (!m.ok()) {
      r.error = absl::StrCat("Next failed: ", m.status().ToString());
      return false;
    }
    const ImmutableMessage& msg = **m;
    if (r.last_tt && !(msg.timetick() > *r.last_tt)) {
      r.error = absl::StrCat("timetick did not increase: ", DescribeDelivered(msg),
                             " after tt=", r.last_tt->value());
      return false;
    }
    r.last_tt = msg.timetick();
    if (msg.type() == MessageType::kTimeTick) {
      ++r.ticks;
      continue;
    }
    r.got.push_back(DescribeDelivered(msg));
  }
}

// ---------------------------------------------------------------------------------------------
// One random history.

enum class Outcome { kOk, kExpired, kInvalidState, kOther };
// What the model predicts for a txn operation; kEither = OK or expired (the timetick may land
// on either side of the deadline).
enum class Want { kOk, kExpired, kInvalidState, kEither };

Outcome Classify(const absl::Status& s) {
  if (s.ok()) return Outcome::kOk;
  const StreamingCode c = GetStreamingCode(s);
  if (s.code() == absl::StatusCode::kAborted && c == StreamingCode::kTransactionExpired) {
    return Outcome::kExpired;
  }
  if (s.code() == absl::StatusCode::kFailedPrecondition &&
      c == StreamingCode::kInvalidTransactionState) {
    return Outcome::kInvalidState;
  }
  return Outcome::kOther;
}

const char* WantText(Want w) {
  switch (w) {
    case Want::kOk:
      return "OK";
    case Want::kExpired:
      return "TRANSACTION_EXPIRED";
    case Want::kInvalidState:
      return "INVALID_TRANSACTION_STATE";
    case Want::kEither:
      return "OK or TRANSACTION_EXPIRED";
  }
  return "?";
}

bool Matches(Outcome o, Want w) {
  switch (w) {
    case Want::kOk:
      return o == Outcome::kOk;
    case Want::kExpired:
      return o == Outcome::kExpired;
    case Want::kInvalidState:
      return o == Outcome::kInvalidState;
    case Want::kEither:
      return o == Outcome::kOk || o == Outcome::kExpired;
  }
  return false;
}

// An append issued asynchronously in a concurrent round.
struct Async {
  absl::Notification done;
  absl::StatusOr<AppendResult> result{absl::UnknownError("pending")};
  uint64_t ack_seq = 0;  // global order in which callbacks ran
};

struct RoundOp {
  enum class Kind { kAuto, kBegin, kBody, kCommit, kRollback, kDdl };
  Kind kind = Kind::kAuto;
  int64_t txn = 0;  // Begin: filled in from the result
  std::string vc;
  MessageType type = MessageType::kUnknown;
  std::string payload;
  std::shared_ptr<Async> out = std::make_shared<Async>();
};

struct HistoryOptions {
  bool readers = true;   // open, drain and compare random readers during the history
  bool resident = true;  // sometimes keep a resident reader (the buffer retains while one exists)
  int min_ops = 60;
  int max_ops = 150;
};

class History {
 public:
  History(BackendKind kind, uint64_t seed, std::filesystem::path dir)
      : kind_(kind), rng_(seed), dir_(std::move(dir)) {}
  ~History() {
    readers_.clear();
    if (wut_) wut_->Close();
  }

  const Model& model() const { return model_; }
  bool failed() const { return failed_; }
  WalImpl& wal() { return wut_->wal(); }

  void Run(const HistoryOptions& options) {
    options_ = options;
    Setup();
    const int ops = Uniform(options.min_ops, options.max_ops);
    ++g_stats.histories;
    for (int i = 0; i < ops && !failed_; ++i) {
      ++g_stats.steps;
      Step();
    }
    if (failed_) return;
    if (options.readers) {
      for (int i = 0, n = Uniform(1, 3); i < n && !failed_; ++i) OpenReader();
      FinishAllReaders();
    }
  }

  // Task 2: for every acknowledged message M, StartFrom(M.lcmid) + TimeTickGT(M.timetick)
  // yields exactly the committed deliveries after M (txns whole).
  void CheckLcmidResume() {
    const std::vector<Delivery> all = model_.Deliverable();
    for (const auto& [id, m] : model_.recs) {
      if (failed_) return;
      ReaderSpec spec;
      spec.kind = DeliverPolicy::Kind::kStartFrom;
      spec.id = m.lc;
      spec.gt = m.tt;
      if (!m.vc.empty() && Chance(0.3)) spec.vc = m.vc;
      spec.origin = absl::StrCat("resume after ", Describe(m.type, m.id, m.tt, m.vc, m.lc, ""));
      std::vector<std::string> want;
      for (const Delivery& d : all) {
        // Stated without the position rule: the LCMID must make every later delivery reachable.
        if (d.tt > m.tt && (spec.vc.empty() || d.vc.empty() || d.vc == spec.vc)) {
          want.push_back(d.text);
        }
      }
      Reader r;
      r.spec = spec;
      auto scanner = wal().Read(spec.ToScanOptions());
      if (!scanner.ok()) {
        return Fail(absl::StrCat("Read ", spec.ToString(), ": ", scanner.status().ToString()));
      }
      r.scanner = std::move(*scanner);
      if (!DrainReader(r)) return Fail(absl::StrCat("reader ", spec.ToString(), ": ", r.error));
      if (r.got != want) {
        return Fail(absl::StrCat("LCMID resume reader ", spec.ToString(), ": ", Diff(want, r.got)));
      }
      CountDeliveries(r);
    }
    FinishAllReaders();  // the resident reader, if any
  }

 private:
  // --- randomness -----------------------------------------------------------------------------
  int Uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool Chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[static_cast<size_t>(Uniform(0, static_cast<int>(v.size()) - 1))];
  }

  std::string NewPayload() {
    const int n = op_counter_++;
    return absl::StrCat("op", n, "|",
                        std::string(static_cast<size_t>(Uniform(0, 360)), 'a' + n % 26));
  }

  static void CountDeliveries(const Reader& r) {
    ++g_stats.readers;
    g_stats.deliveries += static_cast<int>(r.got.size());
    for (const auto& d : r.got) g_stats.txn_deliveries += d.rfind("Txn ", 0) == 0 ? 1 : 0;
  }

  // --- failure reporting ----------------------------------------------------------------------
  void Log(std::string line) { log_.push_back(std::move(line)); }
  void Fail(const std::string& what) {
    if (failed_) return;
    failed_ = true;
    std::string history;
    const size_t from = log_.size() > 150 ? log_.size() - 150 : 0;
    for (size_t i = from; i < log_.size(); ++i) absl::StrAppend(&history, "  ", log_[i], "\n");
    ADD_FAILURE() << what << "\nhistory (" << BackendName(kind_) << ", " << vcs_.size()
                  << " vchannels, buffer " << buffer_capacity_ << " B, last "
                  << (log_.size() - from) << " of " << log_.size() << " steps):\n"
                  << history;
  }

  // --- setup ----------------------------------------------------------------------------------
  void Setup() {
    const int nvc = Uniform(2, 3);
    for (int i = 0; i < nvc; ++i)
      // Raw vchannels: the model's DropCollections are opaque there (collection rules:
      // wal_collections_test.cc).
      vcs_.push_back(absl::StrCat(ToAbsl(kPchannel), "_m", 100 + i));
    TimestampAllocator::Options to;
    to.now_ms = [this] { return now_ms_.load(); };
    auto tso = TimestampAllocator::Open((dir_ / "tso").string(), to);
    if (!tso.ok()) return Fail(absl::StrCat("tso: ", tso.status().ToString()));
    tso_ = std::move(*tso);
    WalOptions o;
    o.pchannel = std::string(kPchannel);
    o.tso = tso_.get();
    // Small capacities force evictions (tailing readers fall back to catch-up); a short age
    // keepalive on the fake clock evicts everything on a keepalive-sized clock jump.
    static constexpr size_t kCapacities[] = {700, 2000, 6000, 1 << 20};
    buffer_capacity_ = kCapacities[Uniform(0, 3)];
    o.buffer.capacity_bytes = buffer_capacity_;
    o.buffer.keepalive = Chance(0.3) ? absl::Milliseconds(1500) : absl::Hours(1);
    o.buffer.clock = [this] { return absl::FromUnixMillis(static_cast<int64_t>(now_ms_.load())); };
    wut_ = std::make_unique<WalUnderTest>(kind_, dir_, std::move(o));
    if (absl::Status s = wut_->Open(); !s.ok()) return Fail(absl::StrCat("open: ", s.ToString()));
    resident_ = options_.resident && Chance(0.6);
    if (resident_) OpenResidentReader();
  }

  void Step() {
    const int r = Uniform(0, 99);
    if (r < 20) return Autocommit();
    if (r < 31) return Begin();
    if (r < 47) return Body();
    if (r < 54) return End(/*commit=*/true);
    if (r < 57) return End(/*commit=*/false);
    if (r < 60) return Exclusive();
    if (r < 69) return AdvanceClock();
    if (r < 77) return SyncTick();
    if (r < 85) return options_.readers ? OpenReader() : Autocommit();
    if (r < 88) return options_.readers ? FinishOneReader() : SyncTick();
    if (r < 94) return ConcurrentRound();
    if (r < 95) return Restart();
    return WrongTxnRequest();
  }

  // --- predictions ----------------------------------------------------------------------------
  // The timetick the next stamped message gets lies in [lo, hi]: the TSO clock decides the
  // physical part (the logical counter never overflows a millisecond here).
  TimeTick NextLo() {
    return TimeTick(
        std::max(ComposeTimeTick(now_ms_.load(), 0).value(), wal().LastTimeTick().value() + 1));
  }
  TimeTick NextHi() { return TimeTick(ComposeTimeTick(now_ms_.load() + 1, 0).value() - 1); }

  Want Predict(const ModelTxn& t) {
    // docs/semantics.md §3: txns do not survive a restart; a request naming one is told to
    // retry it whole.
    if (t.earlier_owner) return Want::kExpired;
    switch (t.state) {
      case TxnState::kActive: {
        // docs/semantics.md §3: a body (or commit) later than last activity + keepalive
        // expires the txn.
        const TimeTick deadline = Model::Deadline(t);
        if (NextLo() > deadline) return Want::kExpired;
        if (NextHi() <= deadline) return Want::kOk;
        return Want::kEither;
      }
      case TxnState::kExpired:
        return Want::kExpired;
      default:
        return Want::kInvalidState;
    }
  }

  // Checks an acknowledged sequential append and records it; false (after Fail) if wrong.
  bool Record(const AppendResult& r, MessageType type, const std::string& vc,
              const std::string& payload, int64_t txn, TimeTick lo, TimeTick hi) {
    const std::string what = Describe(type, r.id, r.timetick, vc, r.last_confirmed, payload);
    if (model_.recs.contains(r.id)) {
      Fail(absl::StrCat("id ", r.id.ToText(), " acknowledged twice: ", what));
      return false;
    }
    if (r.timetick < lo || r.timetick > hi) {
      Fail(absl::StrCat(what, ": timetick outside [", lo.value(), ", ", hi.value(),
                        "] (stamped from the TSO when appended)"));
      return false;
    }
    if (!model_.recs.empty() &&
        (model_.recs.rbegin()->first >= r.id || model_.recs.rbegin()->second.tt >= r.timetick)) {
      Fail(absl::StrCat(what, ": id and timetick must exceed the previous message's"));
      return false;
    }
    const MessageId want_lc = model_.ExpectedLc(r.id);
    if (r.last_confirmed != want_lc) {
      Fail(absl::StrCat(what, ": LCMID should be ", want_lc.ToText(),
                        " (the oldest active txn's Begin, else the message itself)"));
      return false;
    }
    model_.recs[r.id] = Rec{r.id, r.timetick, r.last_confirmed, type, vc, payload, txn};
    rec_ids_.push_back(r.id);
    Log(absl::StrCat("ok  ", what, txn != 0 ? absl::StrCat(" txn=", txn) : ""));
    return true;
  }

  // --- sequential operations ------------------------------------------------------------------
  void Autocommit() {
    const std::string vc = Pick(vcs_);
    const MessageType type = Chance(0.7) ? MessageType::kInsert : MessageType::kDelete;
    const std::string payload = NewPayload();
    MutableMessage m(type, payload);
    m.set_vchannel(vc);
    const TimeTick lo = NextLo(), hi = NextHi();
    auto r = wal().AppendSync({}, std::move(m));
    if (!r.ok()) return Fail(absl::StrCat("autocommit on ", vc, ": ", r.status().ToString()));
    Record(*r, type, vc, payload, 0, lo, hi);
  }

  void Begin() {
    const std::string vc = Pick(vcs_);
    const TimeTick lo = NextLo(), hi = NextHi();
    auto r = wal().AppendSync({}, NewBeginTxnMessage(vc, kKeepaliveMs));
    if (!r.ok()) return Fail(absl::StrCat("BeginTxn on ", vc, ": ", r.status().ToString()));
    if (!r->txn || r->txn->keepalive_ms() != kKeepaliveMs) {
      return Fail(absl::StrCat("BeginTxn result lacks the txn context / keepalive: ",
                               r->txn ? r->txn->DebugString() : "none"));
    }
    const int64_t id = r->txn->txn_id();
    if (model_.txns.contains(id)) return Fail(absl::StrCat("txn id ", id, " handed out twice"));
    if (!Record(*r, MessageType::kBeginTxn, vc, "", id, lo, hi)) return;
    model_.txns[id] = ModelTxn{id, vc, *r->txn, r->id, r->timetick, TxnState::kActive};
  }

  ModelTxn* PickTxn(bool prefer_active) {
    if (model_.txns.empty()) return nullptr;
    std::vector<ModelTxn*> active, all;
    for (auto& [id, t] : model_.txns) {
      all.push_back(&t);
      if (t.state == TxnState::kActive) active.push_back(&t);
    }
    if (prefer_active && !active.empty() && Chance(0.85)) return Pick(active);
    return Pick(all);
  }

  // Runs one txn request whose outcome the model predicts, applying `on_ok` to the model.
  void TxnRequest(ModelTxn& t, MutableMessage m, MessageType type, const std::string& payload,
                  std::string_view what, TxnState ok_state) {
    const Want want = Predict(t);
    const TimeTick lo = NextLo(), hi = NextHi();
    auto r = wal().AppendSync({}, std::move(m));
    const Outcome got = Classify(r.status());
    if (!Matches(got, want)) {
      return Fail(absl::StrCat(ToAbsl(what), " of txn ", t.id, " (", TxnStateText(t.state),
                               ", deadline ", Model::Deadline(t).value(), ", next tt in [",
                               lo.value(), ", ", hi.value(), "]): want ", WantText(want), ", got ",
                               r.status().ToString()));
    }
    if (want == Want::kEither) ++g_stats.either_predictions;
    if (got == Outcome::kExpired) {
      if (t.state == TxnState::kActive) {
        ++g_stats.expired_by_request;
        Log(absl::StrCat("exp ", ToAbsl(what), " of txn ", t.id, " -> txn expired"));
        t.state = TxnState::kExpired;
      } else {
        ++g_stats.rejected;
        Log(absl::StrCat("exp ", ToAbsl(what), " of txn ", t.id, " (", TxnStateText(t.state),
                         t.earlier_owner ? ", earlier owner)" : ")"));
      }
      return;
    }
    if (got == Outcome::kInvalidState) {
      ++g_stats.rejected;
      Log(absl::StrCat("rej ", ToAbsl(what), " of txn ", t.id, " (", TxnStateText(t.state), ")"));
      return;
    }
    // OK: the txn's state changes before the message's LCMID is stamped.
    t.state = ok_state;
    g_stats.committed += ok_state == TxnState::kCommitted ? 1 : 0;
    g_stats.rolled_back += ok_state == TxnState::kRolledBack ? 1 : 0;
    if (!Record(*r, type, t.vc, payload, t.id, lo, hi)) return;
    t.last_tt = r->timetick;
  }

  void Body() {
    ModelTxn* t = PickTxn(/*prefer_active=*/true);
    if (t == nullptr) return Begin();
    const MessageType type = Chance(0.7) ? MessageType::kInsert : MessageType::kDelete;
    const std::string payload = NewPayload();
    MutableMessage m(type, payload);
    m.set_vchannel(t->vc);
    m.set_txn(t->ctx);
    TxnRequest(*t, std::move(m), type, payload, "body", TxnState::kActive);
  }

  void End(bool commit) {
    ModelTxn* t = PickTxn(/*prefer_active=*/true);
    if (t == nullptr) return Begin();
    if (commit) {
      TxnRequest(*t, NewCommitTxnMessage(t->vc, TxnId(t->id)), MessageType::kCommitTxn, "",
                 "CommitTxn", TxnState::kCommitted);
    } else {
      TxnRequest(*t, NewRollbackTxnMessage(t->vc, TxnId(t->id)), MessageType::kRollbackTxn, "",
                 "RollbackTxn", TxnState::kRolledBack);
    }
  }

  // A request the WAL must refuse without harming anything: a body naming another vchannel than
  // its txn's, or a commit of a txn id never begun.
  void WrongTxnRequest() {
    ModelTxn* t = PickTxn(/*prefer_active=*/true);
    if (t == nullptr || vcs_.size() < 2 || Chance(0.3)) {
      // An id above every timetick: never begun (ids at or below the log's last timetick at
      // open may belong to an earlier owner and are TRANSACTION_EXPIRED instead).
      constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
      auto r = wal().AppendSync({}, NewCommitTxnMessage(vcs_[0], TxnId(kNever)));
      if (Classify(r.status()) != Outcome::kInvalidState) {
        return Fail(
            absl::StrCat("commit of a txn never begun: want INVALID_TRANSACTION_STATE, got ",
                         r.status().ToString()));
      }
      Log("rej CommitTxn of a txn never begun");
      return;
    }
    std::string other = t->vc;
    while (other == t->vc) other = Pick(vcs_);
    MutableMessage m(MessageType::kInsert, NewPayload());
    m.set_vchannel(other);
    m.set_txn(t->ctx);
    auto r = wal().AppendSync({}, std::move(m));
    // The vchannel check comes before the deadline check: an unexpired txn stays unharmed.
    const Want want =
        t->earlier_owner || t->state == TxnState::kExpired ? Want::kExpired : Want::kInvalidState;
    if (!Matches(Classify(r.status()), want)) {
      return Fail(absl::StrCat("body of txn ", t->id, " (", TxnStateText(t->state),
                               ") on the wrong vchannel ", other, ": want ", WantText(want),
                               ", got ", r.status().ToString()));
    }
    Log(absl::StrCat("rej body of txn ", t->id, " on the wrong vchannel ", other));
  }

  void Exclusive() {
    const std::string vc = Pick(vcs_);
    // docs/semantics.md §2: an exclusive message fails every active transaction on its vchannel.
    std::vector<int64_t> failed;
    for (auto& [id, t] : model_.txns) {
      if (t.state == TxnState::kActive && t.vc == vc) failed.push_back(id);
    }
    const TimeTick lo = NextLo(), hi = NextHi();
    auto r = wal().AppendSync({}, NewDropCollectionMessage(vc, 100));
    if (!r.ok()) return Fail(absl::StrCat("DropCollection on ", vc, ": ", r.status().ToString()));
    for (int64_t id : failed) model_.txns[id].state = TxnState::kFailed;
    g_stats.failed_by_exclusive += static_cast<int>(failed.size());
    if (!Record(*r, MessageType::kDropCollection, vc, "", 0, lo, hi)) return;
    if (!failed.empty()) Log(absl::StrCat("    -> failed txns ", absl::StrJoin(failed, ",")));
  }

  void AdvanceClock() {
    const uint64_t step = Chance(0.6) ? static_cast<uint64_t>(Uniform(1, 5))
                                      : static_cast<uint64_t>(kKeepaliveMs + Uniform(1, 400));
    now_ms_ += step;
    AvoidDeadlineMillisecond();
    Log(absl::StrCat("clk +", step, " ms -> ", now_ms_.load()));
  }

  // Keeps the clock off any active txn's deadline millisecond, where the outcome would hinge on
  // the logical counter: elsewhere the model predicts expiry exactly.
  void AvoidDeadlineMillisecond() {
    for (bool moved = true; moved;) {
      moved = false;
      for (const auto& [id, t] : model_.txns) {
        if (t.state == TxnState::kActive && PhysicalMs(Model::Deadline(t)) == now_ms_.load()) {
          ++now_ms_;
          moved = true;
        }
      }
    }
  }

  void SyncTick() {
    const TimeTick before = wal().LastTimeTick();
    const TimeTick lo = NextLo(), hi = NextHi();
    wal().SyncTimeTick();
    const TimeTick after = wal().LastTimeTick();
    if (after == before) {
      Log("tck (skipped: the previous tick is not durable yet)");
      return;
    }
    if (after < lo || after > hi) {
      return Fail(absl::StrCat("TimeTick stamped ", after.value(), " outside [", lo.value(), ", ",
                               hi.value(), "]"));
    }
    // docs/semantics.md §3: the watermark expires every txn whose keepalive passed with no body.
    std::vector<int64_t> expired;
    for (auto& [id, t] : model_.txns) {
      if (t.state == TxnState::kActive && Model::Deadline(t) < after) {
        t.state = TxnState::kExpired;
        expired.push_back(id);
        ++g_stats.expired_by_watermark;
      }
    }
    Log(absl::StrCat(
        "tck tt=", after.value(),
        expired.empty() ? "" : absl::StrCat(" -> expired txns ", absl::StrJoin(expired, ","))));
  }

  void Restart() {
    FinishAllReaders();
    if (failed_) return;
    if (absl::Status s = wut_->Restart(); !s.ok()) {
      return Fail(absl::StrCat("restart: ", s.ToString()));
    }
    // docs/semantics.md §3: transactions do not survive a reassignment; the new owner knows
    // none of them.
    for (auto& [id, t] : model_.txns) {
      t.earlier_owner = true;
      if (t.state == TxnState::kActive) t.state = TxnState::kLost;
    }
    // The recovered last timetick is the log's (a non-persisted tick's may have been higher;
    // the TSO, not this value, keeps later timeticks above it).
    if (!model_.recs.empty() && wal().LastTimeTick() < model_.recs.rbegin()->second.tt) {
      return Fail(absl::StrCat("after the restart LastTimeTick ", wal().LastTimeTick().value(),
                               " is below the last acknowledged message's timetick"));
    }
    ++g_stats.restarts;
    Log("rst restart at a higher term; active txns are lost");
    if (resident_) OpenResidentReader();
  }

  // --- readers --------------------------------------------------------------------------------
  // `allow_latest` false: a reader opened while appends are in flight, where the position
  // Latest resolves to is unknown.
  ReaderSpec RandomSpec(bool allow_latest = true) {
    ReaderSpec s;
    int k = rec_ids_.empty() ? Uniform(0, 1) : Uniform(0, 99);
    if (!allow_latest && (k == 1 || (k >= 25 && k < 40))) k = 0;
    bool resume = false;
    if (k == 0 || (k >= 2 && k < 25)) {
      s.kind = DeliverPolicy::Kind::kAll;
    } else if (k == 1 || (k >= 25 && k < 40)) {
      s.kind = DeliverPolicy::Kind::kLatest;
      if (!model_.recs.empty()) s.latest_after = model_.recs.rbegin()->first;
    } else if (k < 60) {
      s.kind = DeliverPolicy::Kind::kStartFrom;
      s.id = Pick(rec_ids_);
    } else if (k < 75) {
      s.kind = DeliverPolicy::Kind::kStartAfter;
      s.id = Pick(rec_ids_);
    } else {
      // The resume pattern: from a message's LCMID, skipping what it had already seen.
      const Rec& m = model_.recs.at(Pick(rec_ids_));
      s.kind = DeliverPolicy::Kind::kStartFrom;
      s.id = m.lc;
      s.gt = m.tt;
      s.origin = absl::StrCat("resume after ", m.id.ToText());
      resume = true;
    }
    if (Chance(0.5)) s.vc = Pick(vcs_);
    if (!resume && !rec_ids_.empty()) {
      if (Chance(0.2)) s.gt = model_.recs.at(Pick(rec_ids_)).tt;
      if (Chance(0.1)) s.gte = model_.recs.at(Pick(rec_ids_)).tt;
    }
    if (Chance(0.2)) {
      using T = MessageType;
      static const std::vector<absl::flat_hash_set<T>> kSets = {
          {T::kInsert}, {T::kDelete}, {T::kInsert, T::kDropCollection}, {T::kInsert, T::kDelete}};
      s.types.push_back(Pick(kSets));
    }
    return s;
  }

  void OpenReader() { OpenReaderWith(RandomSpec(), /*resident=*/false); }

  // A long-lived consumer of the whole pchannel, as a deployment usually has: while one is
  // open the write-ahead buffer retains messages, so later readers tail with it.
  void OpenResidentReader() {
    ReaderSpec spec;
    spec.kind = DeliverPolicy::Kind::kLatest;
    if (!model_.recs.empty()) spec.latest_after = model_.recs.rbegin()->first;
    spec.origin = "resident";
    OpenReaderWith(std::move(spec), /*resident=*/true);
  }

  void OpenReaderWith(ReaderSpec spec, bool resident) {
    if (readers_.size() >= 6) return FinishOneReader();
    auto r = std::make_unique<Reader>();
    r->spec = std::move(spec);
    r->resident = resident;
    auto scanner = wal().Read(r->spec.ToScanOptions());
    if (!scanner.ok()) {
      return Fail(absl::StrCat("Read ", r->spec.ToString(), ": ", scanner.status().ToString()));
    }
    r->scanner = std::move(*scanner);
    Log(absl::StrCat("rdr open #", reader_counter_, " ", r->spec.ToString()));
    r->spec.origin =
        absl::StrCat("#", reader_counter_++, r->spec.origin.empty() ? "" : " " + r->spec.origin);
    // Read what is there now (a reader that then tails sees the later appends and evictions).
    if (Chance(0.5) && !DrainReader(*r)) {
      return Fail(absl::StrCat("reader ", r->spec.ToString(), ": ", r->error));
    }
    readers_.push_back(std::move(r));
  }

  void FinishReader(Reader& r) {
    if (!r.error.empty() || !DrainReader(r)) {
      return Fail(absl::StrCat("reader ", r.spec.ToString(), ": ", r.error));
    }
    const std::vector<std::string> want = model_.Expected(r.spec);
    if (r.got != want) {
      return Fail(absl::StrCat("reader ", r.spec.ToString(), ": ", Diff(want, r.got)));
    }
    CountDeliveries(r);
    Log(absl::StrCat("rdr done ", r.spec.origin, ": ", r.got.size(), " deliveries, ", r.ticks,
                     " ticks"));
  }

  void FinishOneReader() {
    std::vector<size_t> candidates;
    for (size_t i = 0; i < readers_.size(); ++i) {
      if (!readers_[i]->resident) candidates.push_back(i);
    }
    if (candidates.empty()) return;
    const size_t i = Pick(candidates);
    FinishReader(*readers_[i]);
    readers_.erase(readers_.begin() + static_cast<std::ptrdiff_t>(i));
  }

  void FinishAllReaders() {
    for (auto& r : readers_) {
      if (failed_) break;
      FinishReader(*r);
    }
    readers_.clear();
  }

  // --- concurrent rounds ----------------------------------------------------------------------
  AppendRequest Request(MutableMessage m, std::shared_ptr<Async> out) {
    return {.ctx = {}, .msg = std::move(m), .done = [this, out](absl::StatusOr<AppendResult> r) {
              out->result = std::move(r);
              out->ack_seq = ack_counter_.fetch_add(1) + 1;
              out->done.Notify();
            }};
  }

  static MutableMessage Build(const RoundOp& op, const kingfisher::v1::TxnContext* ctx) {
    switch (op.kind) {
      case RoundOp::Kind::kAuto:
      case RoundOp::Kind::kBody: {
        MutableMessage m(op.type, op.payload);
        m.set_vchannel(op.vc);
        if (ctx != nullptr) m.set_txn(*ctx);
        return m;
      }
      case RoundOp::Kind::kBegin:
        return NewBeginTxnMessage(op.vc, kKeepaliveMs);
      case RoundOp::Kind::kCommit:
        return NewCommitTxnMessage(op.vc, TxnId(op.txn));
      case RoundOp::Kind::kRollback:
        return NewRollbackTxnMessage(op.vc, TxnId(op.txn));
      case RoundOp::Kind::kDdl:
        return NewDropCollectionMessage(op.vc, 100);
    }
    return MutableMessage();
  }

  RoundOp NewDataOp(RoundOp::Kind kind, const std::string& vc) {
    RoundOp op;
    op.kind = kind;
    op.vc = vc;
    op.type = Chance(0.7) ? MessageType::kInsert : MessageType::kDelete;
    op.payload = NewPayload();
    return op;
  }

  // A few threads append at once (autocommit, pipelined txns whose commit is sent while their
  // bodies are in flight, an exclusive message racing txns on its vchannel, bodies racing the
  // commit of an older txn), ticks are synced and a reader drains meanwhile. The clock stands
  // still, and only rounds in which no txn can expire run, so the outcome depends only on the
  // order the sequencer chose, which the acknowledged ids reveal.
  void ConcurrentRound() {
    for (const auto& [id, t] : model_.txns) {
      if (t.state == TxnState::kActive && PhysicalMs(Model::Deadline(t)) <= now_ms_.load()) {
        return SyncTick();  // settle the expired ones first
      }
    }
    const int writers = Uniform(2, 3);
    // Plan (deterministic from the seed): per thread a list of ops; kBody/kCommit/kRollback
    // with txn == 0 refer to the thread's own latest Begin.
    std::vector<std::vector<RoundOp>> plans(static_cast<size_t>(writers));
    std::vector<std::vector<RoundOp>> committers;  // threads committing an older txn
    std::vector<ModelTxn*> active;
    for (auto& [id, t] : model_.txns) {
      if (t.state == TxnState::kActive) active.push_back(&t);
    }
    for (auto& plan : plans) {
      const int role = Uniform(0, 3);
      if (role == 0) {
        for (int i = 0, n = Uniform(3, 12); i < n; ++i) {
          plan.push_back(NewDataOp(RoundOp::Kind::kAuto, Pick(vcs_)));
        }
      } else if (role == 1 || (role == 3 && active.empty())) {
        for (int k = 0, txns = Uniform(1, 2); k < txns; ++k) {
          RoundOp begin;
          begin.kind = RoundOp::Kind::kBegin;
          begin.vc = Pick(vcs_);
          plan.push_back(begin);
          for (int i = 0, n = Uniform(1, 4); i < n; ++i) {
            plan.push_back(NewDataOp(RoundOp::Kind::kBody, begin.vc));
          }
          RoundOp end;
          end.kind = Chance(0.8) ? RoundOp::Kind::kCommit : RoundOp::Kind::kRollback;
          end.vc = begin.vc;
          plan.push_back(end);
        }
      } else if (role == 2) {
        for (int i = 0, n = Uniform(0, 4); i < n; ++i) {
          plan.push_back(NewDataOp(RoundOp::Kind::kAuto, Pick(vcs_)));
        }
        RoundOp ddl;
        ddl.kind = RoundOp::Kind::kDdl;
        ddl.vc = Pick(vcs_);
        plan.push_back(ddl);
      } else {
        // Bodies of an older txn racing its commit from another thread (the commit is one more
        // plan appended below).
        ModelTxn* t = Pick(active);
        for (int i = 0, n = Uniform(2, 6); i < n; ++i) {
          RoundOp op = NewDataOp(RoundOp::Kind::kBody, t->vc);
          op.txn = t->id;
          plan.push_back(op);
        }
        RoundOp commit;
        commit.kind = RoundOp::Kind::kCommit;
        commit.vc = t->vc;
        commit.txn = t->id;
        committers.push_back({commit});
        std::erase(active, t);
      }
    }
    for (auto& plan : committers) plans.push_back(std::move(plan));
    const bool ticker = Chance(0.5);
    Reader* reader = nullptr;  // an open reader drained while the round runs
    if (!readers_.empty() && Chance(0.7)) reader = Pick(readers_).get();
    std::unique_ptr<Reader> fresh;  // a reader opened while the round runs
    if (options_.readers && !rec_ids_.empty() && Chance(0.4)) {
      fresh = std::make_unique<Reader>();
      fresh->spec = RandomSpec(/*allow_latest=*/false);
      fresh->spec.origin = absl::StrCat("#", reader_counter_++, " opened mid-round",
                                        fresh->spec.origin.empty() ? "" : " " + fresh->spec.origin);
    }
    {
      std::vector<std::string> shape;
      for (const auto& plan : plans) {
        std::vector<std::string> ops;
        for (const auto& op : plan) {
          static constexpr const char* kNames[] = {"auto",   "begin",    "body",
                                                   "commit", "rollback", "ddl"};
          ops.push_back(absl::StrCat(kNames[static_cast<int>(op.kind)], "@", op.vc,
                                     op.txn != 0 ? absl::StrCat("#", op.txn) : ""));
        }
        shape.push_back(absl::StrJoin(ops, " "));
      }
      Log(absl::StrCat("par round: {", absl::StrJoin(shape, "} {"), "}", ticker ? " + ticker" : "",
                       reader ? " + reader " + reader->spec.origin : "",
                       fresh ? " + new reader " + fresh->spec.ToString() : ""));
    }

    // Run.
    std::map<int64_t, kingfisher::v1::TxnContext> contexts;  // pre-existing txns
    for (const auto& [id, t] : model_.txns) contexts[id] = t.ctx;
    absl::Notification go;
    std::atomic<int> writers_left{static_cast<int>(plans.size())};
    std::vector<std::thread> threads;
    for (auto& plan : plans) {
      // Some threads hand their consecutive autocommit appends and pipelined bodies over in one
      // AppendBatch (bodies are not batchable: the WAL appends them alone, in their place).
      const bool batched = Chance(0.5);
      threads.emplace_back([&, plan_ptr = &plan, batched] {
        go.WaitForNotification();
        std::optional<kingfisher::v1::TxnContext> own;  // this thread's current txn
        std::vector<std::shared_ptr<Async>> inflight;
        std::vector<AppendRequest> batch;
        std::vector<std::shared_ptr<Async>> batch_autos;  // acknowledged before the next op
        auto flush = [&] {
          if (batch.empty()) return;
          wal().AppendBatch(std::exchange(batch, {}));
          for (auto& a : batch_autos) a->done.WaitForNotification();
          batch_autos.clear();
        };
        for (RoundOp& op : *plan_ptr) {
          if (op.kind != RoundOp::Kind::kAuto && op.kind != RoundOp::Kind::kBody) flush();
          const kingfisher::v1::TxnContext* ctx = nullptr;
          if (op.kind == RoundOp::Kind::kBody || op.kind == RoundOp::Kind::kCommit ||
              op.kind == RoundOp::Kind::kRollback) {
            if (op.txn == 0) {
              if (!own) break;  // its Begin failed (the model reports that)
              op.txn = own->txn_id();
            }
            if (op.kind == RoundOp::Kind::kBody) {
              ctx = own && own->txn_id() == op.txn ? &*own : &contexts.at(op.txn);
            }
          }
          if (batched && (op.kind == RoundOp::Kind::kAuto || op.kind == RoundOp::Kind::kBody)) {
            batch.push_back(Request(Build(op, ctx), op.out));
            (op.kind == RoundOp::Kind::kBody ? inflight : batch_autos).push_back(op.out);
            continue;
          }
          AppendRequest r = Request(Build(op, ctx), op.out);
          wal().Append(r.ctx, std::move(r.msg), std::move(r.done));
          if (op.kind == RoundOp::Kind::kBody) {
            inflight.push_back(op.out);  // pipelined: the commit goes out while bodies fly
            continue;
          }
          op.out->done.WaitForNotification();
          if (op.kind == RoundOp::Kind::kBegin) {
            own.reset();
            if (op.out->result.ok() && op.out->result->txn) {
              own = *op.out->result->txn;
              op.txn = own->txn_id();
            }
          }
        }
        flush();
        for (auto& a : inflight) a->done.WaitForNotification();
        writers_left.fetch_sub(1);
      });
    }
    if (ticker) {
      threads.emplace_back([&] {
        go.WaitForNotification();
        for (int i = 0; i < 3; ++i) {
          wal().SyncTimeTick();
          std::this_thread::yield();
        }
      });
    }
    if (reader != nullptr || fresh != nullptr) {
      threads.emplace_back([&] {
        go.WaitForNotification();
        if (fresh != nullptr) {
          std::this_thread::yield();  // let the writers start
          auto scanner = wal().Read(fresh->spec.ToScanOptions());
          if (!scanner.ok()) {
            fresh->error = absl::StrCat("Read: ", scanner.status().ToString());
            return;
          }
          fresh->scanner = std::move(*scanner);
        }
        while (writers_left.load() > 0) {
          if (reader != nullptr && !DrainReader(*reader)) return;
          if (fresh != nullptr && !DrainReader(*fresh)) return;
        }
      });
    }
    go.Notify();
    for (auto& th : threads) th.join();
    for (Reader* r : {reader, fresh.get()}) {
      if (r != nullptr && !r->error.empty()) {
        return Fail(absl::StrCat("reader ", r->spec.ToString(), " (concurrent): ", r->error));
      }
    }
    if (fresh != nullptr) readers_.push_back(std::move(fresh));
    ++g_stats.concurrent_rounds;
    ReconcileRound(plans);
  }

  // Checks a concurrent round's outcomes against each other and folds them into the model.
  void ReconcileRound(std::vector<std::vector<RoundOp>>& plans) {
    std::vector<const RoundOp*> ops;
    for (const auto& plan : plans) {
      for (const auto& op : plan) {
        if (op.out->done.HasBeenNotified()) ops.push_back(&op);
      }
    }
    auto describe = [](const RoundOp& op) {
      return absl::StrCat("op on ", op.vc, op.txn != 0 ? absl::StrCat(" txn ", op.txn) : "");
    };
    // Plain messages and Begins must all succeed.
    std::map<std::string, std::vector<MessageId>> ddl_ids;
    std::map<int64_t, const RoundOp*> begins;
    for (const RoundOp* op : ops) {
      if (op->kind != RoundOp::Kind::kAuto && op->kind != RoundOp::Kind::kDdl &&
          op->kind != RoundOp::Kind::kBegin) {
        continue;
      }
      if (!op->out->result.ok()) {
        return Fail(
            absl::StrCat("concurrent ", describe(*op), ": ", op->out->result.status().ToString()));
      }
      if (op->kind == RoundOp::Kind::kDdl) ddl_ids[op->vc].push_back(op->out->result->id);
      if (op->kind == RoundOp::Kind::kBegin) begins[op->txn] = op;
    }
    std::vector<Rec> adds;
    auto add = [&](const RoundOp& op, MessageType type, int64_t txn) {
      const AppendResult& r = *op.out->result;
      adds.push_back(Rec{r.id, r.timetick, r.last_confirmed, type, op.vc, op.payload, txn});
    };
    for (const RoundOp* op : ops) {
      if (op->kind == RoundOp::Kind::kAuto) add(*op, op->type, 0);
      if (op->kind == RoundOp::Kind::kDdl) add(*op, MessageType::kDropCollection, 0);
    }
    for (const auto& [id, op] : begins) {
      add(*op, MessageType::kBeginTxn, id);
      model_.txns[id] = ModelTxn{id,
                                 op->vc,
                                 *op->out->result->txn,
                                 op->out->result->id,
                                 op->out->result->timetick,
                                 TxnState::kActive};
    }
    // Every txn touched: its fate follows from where the sequencer put its commit and any
    // exclusive message on its vchannel.
    std::map<int64_t, std::vector<const RoundOp*>> by_txn;
    for (const RoundOp* op : ops) {
      if (op->kind == RoundOp::Kind::kBody || op->kind == RoundOp::Kind::kCommit ||
          op->kind == RoundOp::Kind::kRollback) {
        by_txn[op->txn].push_back(op);
      }
    }
    for (const auto& [id, txn_ops] : by_txn) {
      ModelTxn& t = model_.txns.at(id);
      std::optional<MessageId> ddl;  // the first exclusive message after the Begin
      for (const MessageId& d : ddl_ids[t.vc]) {
        if (d > t.begin_id && (!ddl || d < *ddl)) ddl = d;
      }
      const RoundOp* end = nullptr;
      for (const RoundOp* op : txn_ops) {
        if (op->kind != RoundOp::Kind::kBody) end = op;
      }
      if (end == nullptr) return Fail(absl::StrCat("txn ", id, ": its commit never ran"));
      std::optional<MessageId> end_id;
      if (end->out->result.ok()) {
        end_id = end->out->result->id;
        if (ddl && *ddl < *end_id) {
          return Fail(absl::StrCat("txn ", id, ": ",
                                   ToAbsl(MessageTypeName(Build(*end, nullptr).type())), " ",
                                   end_id->ToText(), " succeeded although DropCollection ",
                                   ddl->ToText(), " on ", t.vc, " came before it"));
        }
      } else if (Classify(end->out->result.status()) != Outcome::kInvalidState || !ddl) {
        return Fail(absl::StrCat(
            "txn ", id, ": end failed without cause: ", end->out->result.status().ToString()));
      }
      std::optional<MessageId> limit = end_id;
      if (ddl && (!limit || *ddl < *limit)) limit = ddl;
      for (const RoundOp* op : txn_ops) {
        if (op->kind != RoundOp::Kind::kBody) continue;
        if (op->out->result.ok()) {
          const MessageId bid = op->out->result->id;
          if (bid < t.begin_id || (limit && bid > *limit)) {
            return Fail(absl::StrCat("txn ", id, ": body ", bid.ToText(),
                                     " acknowledged outside its txn (begin ", t.begin_id.ToText(),
                                     ", end/fail at ", limit ? limit->ToText() : "-", ")"));
          }
          // docs/semantics.md §3: a commit is acknowledged only after its bodies are durable.
          if (end_id && end->kind == RoundOp::Kind::kCommit &&
              end->out->ack_seq < op->out->ack_seq) {
            return Fail(
                absl::StrCat("txn ", id, ": commit acknowledged before body ", bid.ToText()));
          }
          add(*op, op->type, id);
          t.last_tt = std::max(t.last_tt, op->out->result->timetick);
        } else if (Classify(op->out->result.status()) != Outcome::kInvalidState || !limit) {
          return Fail(absl::StrCat(
              "txn ", id, ": body failed without cause: ", op->out->result.status().ToString()));
        }
      }
      if (end_id) {
        add(*end,
            end->kind == RoundOp::Kind::kCommit ? MessageType::kCommitTxn
                                                : MessageType::kRollbackTxn,
            id);
        t.state =
            end->kind == RoundOp::Kind::kCommit ? TxnState::kCommitted : TxnState::kRolledBack;
      } else {
        t.state = TxnState::kFailed;
        ++g_stats.failed_by_exclusive;
      }
      g_stats.committed += t.state == TxnState::kCommitted ? 1 : 0;
      g_stats.rolled_back += t.state == TxnState::kRolledBack ? 1 : 0;
    }
    // Exclusive messages also fail active txns the round did not touch.
    for (auto& [id, t] : model_.txns) {
      if (t.state != TxnState::kActive) continue;
      for (const MessageId& d : ddl_ids[t.vc]) {
        if (d > t.begin_id && t.state == TxnState::kActive) {
          t.state = TxnState::kFailed;
          ++g_stats.failed_by_exclusive;
        }
      }
    }
    std::sort(adds.begin(), adds.end(), [](const Rec& a, const Rec& b) { return a.id < b.id; });
    for (size_t i = 0; i < adds.size(); ++i) {
      const Rec& r = adds[i];
      const std::string what = Describe(r.type, r.id, r.tt, r.vc, r.lc, r.payload);
      if (model_.recs.contains(r.id) || (i > 0 && adds[i - 1].id == r.id)) {
        return Fail(absl::StrCat("id acknowledged twice: ", what));
      }
      if ((i > 0 && adds[i - 1].tt >= r.tt) ||
          (!model_.recs.empty() &&
           (model_.recs.rbegin()->first >= r.id || model_.recs.rbegin()->second.tt >= r.tt))) {
        return Fail(absl::StrCat(what, ": ids and timeticks must increase together"));
      }
      // Concurrent LCMIDs are checked for shape here and for meaning by the LCMID test.
      bool lc_ok = r.lc == r.id;
      for (const auto& [id, t] : model_.txns) lc_ok = lc_ok || (r.lc == t.begin_id && r.lc < r.id);
      if (!lc_ok) return Fail(absl::StrCat(what, ": LCMID is neither itself nor an earlier Begin"));
    }
    for (Rec& r : adds) {
      Log(absl::StrCat("ok  ", Describe(r.type, r.id, r.tt, r.vc, r.lc, r.payload),
                       r.txn != 0 ? absl::StrCat(" txn=", r.txn) : "", " (concurrent)"));
      rec_ids_.push_back(r.id);
      model_.recs[r.id] = std::move(r);
    }
    for (const auto& [id, t] : model_.txns) {
      if (by_txn.contains(id) || begins.contains(id)) {
        Log(absl::StrCat("    txn ", id, " -> ", TxnStateText(t.state)));
      }
    }
  }

  const BackendKind kind_;
  std::mt19937_64 rng_;
  const std::filesystem::path dir_;
  HistoryOptions options_;
  std::atomic<uint64_t> now_ms_{kStartMs};
  std::unique_ptr<TimestampAllocator> tso_;
  std::unique_ptr<WalUnderTest> wut_;
  std::vector<std::string> vcs_;
  size_t buffer_capacity_ = 0;
  Model model_;
  std::vector<MessageId> rec_ids_;
  std::vector<std::unique_ptr<Reader>> readers_;
  bool resident_ = false;  // a resident reader is kept open
  int reader_counter_ = 0;
  int op_counter_ = 0;
  std::atomic<uint64_t> ack_counter_{0};
  std::vector<std::string> log_;
  bool failed_ = false;
};

// ---------------------------------------------------------------------------------------------

class WalModelTest : public ::testing::TestWithParam<BackendKind> {
 protected:
  std::filesystem::path TempDirFor(uint64_t seed) {
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::replace(name.begin(), name.end(), '/', '_');
    auto dir = std::filesystem::path(::testing::TempDir()) /
               absl::StrCat("kf-model-", ::getpid(), "-", name, "-", seed);
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir;
  }

  template <typename Body>
  void ForEachSeed(int default_iterations, Body body) {
    const int iterations = EnvInt("KF_MODEL_ITERATIONS", default_iterations);
    const uint64_t base = BaseSeed();
    g_stats = Stats();
    for (int i = 0; i < iterations; ++i) {
      const uint64_t seed = base + static_cast<uint64_t>(i);
      SCOPED_TRACE(absl::StrCat("seed ", seed, ", backend ", BackendName(GetParam()),
                                " (rerun: KF_MODEL_SEED=", seed, " KF_MODEL_ITERATIONS=1)"));
      const auto dir = TempDirFor(seed);
      const bool failed = body(seed, dir);
      std::filesystem::remove_all(dir);
      if (failed) break;
    }
    std::printf("[ model    ] seeds %llu..%llu: %s\n", static_cast<unsigned long long>(base),
                static_cast<unsigned long long>(base + static_cast<uint64_t>(iterations) - 1),
                g_stats.ToString().c_str());
  }
};

TEST_P(WalModelTest, ReadersReceiveExactlyWhatTheModelSays) {
  // Defaults keep the binary near 7 s: a local history pays an fdatasync per append.
  ForEachSeed(GetParam() == BackendKind::kMemory ? 12 : 6,
              [&](uint64_t seed, const std::filesystem::path& dir) {
                History h(GetParam(), seed, dir);
                h.Run({.readers = true});
                return h.failed();
              });
}

TEST_P(WalModelTest, ResumingFromAnyLcmidYieldsEveryLaterCommittedDelivery) {
  ForEachSeed(GetParam() == BackendKind::kMemory ? 6 : 3,
              [&](uint64_t seed, const std::filesystem::path& dir) {
                History h(GetParam(), seed, dir);
                h.Run({.readers = false});
                if (!h.failed()) h.CheckLcmidResume();
                return h.failed();
              });
}

INSTANTIATE_TEST_SUITE_P(Backends, WalModelTest,
                         ::testing::Values(BackendKind::kMemory, BackendKind::kLocal,
                                           BackendKind::kObjectStore, BackendKind::kQuorum),
                         [](const ::testing::TestParamInfo<BackendKind>& info) {
                           return BackendName(info.param);
                         });

}  // namespace
}  // namespace kf::wal

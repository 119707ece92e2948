#include "storage/meta/meta_log.h"

#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"
#include "common/coding.h"
#include "common/crc32c.h"
#include "common/status_macros.h"

namespace kf::meta {
namespace {

constexpr uint8_t kWritePut = 1;
constexpr uint8_t kWriteDelete = 2;

void PutString(std::string* dst, std::string_view s) {
  PutVarint64(dst, s.size());
  dst->append(s);
}

void PutSigned(std::string* dst, int64_t v) { PutVarint64(dst, static_cast<uint64_t>(v)); }

// A cursor over untrusted bytes: every getter fails (returns false) instead of reading past
// the end.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool Byte(uint8_t* v) {
    if (in_.empty()) return false;
    *v = static_cast<uint8_t>(in_.front());
    in_.remove_prefix(1);
    return true;
  }
  bool Signed(int64_t* v) {
    uint64_t u = 0;
    if (!GetVarint64(&in_, &u)) return false;
    *v = static_cast<int64_t>(u);
    return true;
  }
  bool Unsigned(uint64_t* v) { return GetVarint64(&in_, v); }
  bool String(std::string* s) {
    uint64_t n = 0;
    if (!GetVarint64(&in_, &n) || n > in_.size()) return false;
    s->assign(in_.data(), n);
    in_.remove_prefix(n);
    return true;
  }
  // A count of items that each take at least one byte: bounds allocations by the input size.
  bool Count(uint64_t* n) { return GetVarint64(&in_, n) && *n <= in_.size(); }
  bool empty() const { return in_.empty(); }

 private:
  std::string_view in_;
};

void EncodeWrites(std::string* out, const std::vector<Mutation::Write>& writes) {
  PutVarint64(out, writes.size());
  for (const Mutation::Write& w : writes) {
    out->push_back(static_cast<char>(w.is_delete ? kWriteDelete : kWritePut));
    PutString(out, w.key);
    if (!w.is_delete) {
      PutString(out, w.value);
      PutSigned(out, w.lease);
    }
  }
}

bool DecodeWrites(Reader* r, std::vector<Mutation::Write>* writes) {
  uint64_t n = 0;
  if (!r->Count(&n)) return false;
  writes->resize(n);
  for (Mutation::Write& w : *writes) {
    uint8_t type = 0;
    if (!r->Byte(&type) || (type != kWritePut && type != kWriteDelete)) return false;
    w.is_delete = type == kWriteDelete;
    if (!r->String(&w.key)) return false;
    if (!w.is_delete && (!r->String(&w.value) || !r->Signed(&w.lease))) return false;
  }
  return true;
}

absl::Status Corrupt(std::string_view what) {
  return absl::DataLossError(absl::StrCat("metadata store: ", ToAbsl(what)));
}

}  // namespace

std::string LogFileName(uint64_t seq) {
  char name[40];
  std::snprintf(name, sizeof(name), "meta-%012llu.log", static_cast<unsigned long long>(seq));
  return name;
}

std::string EncodeMutation(const Mutation& m) {
  std::string out;
  out.push_back(static_cast<char>(m.kind));
  switch (m.kind) {
    case Mutation::Kind::kWrite:
      PutSigned(&out, m.revision);
      EncodeWrites(&out, m.writes);
      break;
    case Mutation::Kind::kLeaseGrant:
      PutSigned(&out, m.lease);
      PutSigned(&out, m.ttl_ms);
      break;
    case Mutation::Kind::kLeaseRevoke:
      PutSigned(&out, m.lease);
      PutSigned(&out, m.revision);
      EncodeWrites(&out, m.writes);
      break;
  }
  return out;
}

absl::StatusOr<Mutation> DecodeMutation(std::string_view payload) {
  Reader r(payload);
  Mutation m;
  uint8_t kind = 0;
  bool ok = r.Byte(&kind);
  m.kind = static_cast<Mutation::Kind>(kind);
  if (ok && m.kind == Mutation::Kind::kWrite) {
    ok = r.Signed(&m.revision) && DecodeWrites(&r, &m.writes);
  } else if (ok && m.kind == Mutation::Kind::kLeaseGrant) {
    ok = r.Signed(&m.lease) && r.Signed(&m.ttl_ms);
  } else if (ok && m.kind == Mutation::Kind::kLeaseRevoke) {
    ok = r.Signed(&m.lease) && r.Signed(&m.revision) && DecodeWrites(&r, &m.writes);
  } else {
    ok = false;
  }
  if (!ok || !r.empty()) return Corrupt("malformed log record");
  return m;
}

std::string EncodeLogHeader(uint64_t seq) {
  std::string header;
  PutFixed32(&header, kLogMagic);
  PutFixed16(&header, kFormatVersion);
  PutFixed16(&header, 0);
  PutFixed64(&header, seq);
  return header;
}

std::string EncodeLogRecord(std::string_view payload) {
  std::string record;
  record.reserve(kRecordHeaderSize + payload.size());
  PutFixed32(&record, static_cast<uint32_t>(payload.size()));
  PutFixed32(&record, crc32c::Mask(crc32c::Value(payload)));
  record.append(payload);
  return record;
}

absl::StatusOr<ParsedLog> ParseMetaLog(std::string_view contents) {
  ParsedLog log;
  if (contents.size() < kLogHeaderSize) return log;  // creation never completed: empty
  if (DecodeFixed32(contents.data()) != kLogMagic) return Corrupt("bad log magic");
  if (DecodeFixed16(contents.data() + 4) != kFormatVersion) {
    return Corrupt("unsupported log version");
  }
  log.seq = DecodeFixed64(contents.data() + 8);
  size_t pos = kLogHeaderSize;
  log.valid_bytes = pos;
  while (pos < contents.size()) {
    const size_t left = contents.size() - pos;
    if (left < kRecordHeaderSize) break;  // torn record header
    const uint32_t length = DecodeFixed32(contents.data() + pos);
    const uint32_t crc = crc32c::Unmask(DecodeFixed32(contents.data() + pos + 4));
    if (length > left - kRecordHeaderSize) break;  // torn payload
    std::string_view payload = contents.substr(pos + kRecordHeaderSize, length);
    const size_t end = pos + kRecordHeaderSize + length;
    if (length == 0 || crc32c::Value(payload) != crc) {
      // The last record (or zero fill a crash left behind) is a torn write; anything after a
      // bad record means bytes that were once durable went bad.
      if (end == contents.size() ||
          contents.substr(pos).find_first_not_of('\0') == std::string_view::npos) {
        break;
      }
      return Corrupt(absl::StrCat("checksum mismatch in log record at offset ", pos));
    }
    ASSIGN_OR_RETURN(Mutation m, DecodeMutation(payload));
    log.mutations.push_back(std::move(m));
    pos = end;
    log.valid_bytes = pos;
  }
  return log;
}

std::string EncodeSnapshot(const Snapshot& s) {
  std::string out;
  PutFixed32(&out, kSnapshotMagic);
  PutFixed16(&out, kFormatVersion);
  PutFixed16(&out, 0);
  PutVarint64(&out, s.log_seq);
  PutSigned(&out, s.revision);
  PutSigned(&out, s.next_lease_id);
  PutVarint64(&out, s.leases.size());
  for (const auto& [id, lease] : s.leases) {
    PutSigned(&out, id);
    PutSigned(&out, lease.ttl_ms);
  }
  PutVarint64(&out, s.kvs.size());
  for (const KeyValue& kv : s.kvs) {
    PutString(&out, kv.key);
    PutString(&out, kv.value);
    PutSigned(&out, kv.create_revision);
    PutSigned(&out, kv.mod_revision);
    PutSigned(&out, kv.version);
    PutSigned(&out, kv.lease);
  }
  PutFixed32(&out, crc32c::Mask(crc32c::Value(out)));
  return out;
}

absl::StatusOr<Snapshot> DecodeSnapshot(std::string_view contents) {
  if (contents.size() < 12) return Corrupt("snapshot too short");
  const std::string_view body = contents.substr(0, contents.size() - 4);
  if (crc32c::Unmask(DecodeFixed32(body.data() + body.size())) != crc32c::Value(body)) {
    return Corrupt("snapshot checksum mismatch");
  }
  if (DecodeFixed32(body.data()) != kSnapshotMagic) return Corrupt("bad snapshot magic");
  if (DecodeFixed16(body.data() + 4) != kFormatVersion) {
    return Corrupt("unsupported snapshot version");
  }
  Reader r(body.substr(8));
  Snapshot s;
  uint64_t n = 0;
  bool ok =
      r.Unsigned(&s.log_seq) && r.Signed(&s.revision) && r.Signed(&s.next_lease_id) && r.Count(&n);
  for (uint64_t i = 0; ok && i < n; ++i) {
    LeaseId id = 0;
    KvState::Lease lease;
    ok = r.Signed(&id) && r.Signed(&lease.ttl_ms);
    s.leases[id] = std::move(lease);
  }
  ok = ok && r.Count(&n);
  for (uint64_t i = 0; ok && i < n; ++i) {
    KeyValue& kv = s.kvs.emplace_back();
    ok = r.String(&kv.key) && r.String(&kv.value) && r.Signed(&kv.create_revision) &&
         r.Signed(&kv.mod_revision) && r.Signed(&kv.version) && r.Signed(&kv.lease);
  }
  if (!ok || !r.empty()) return Corrupt("malformed snapshot");
  // Counters a replay would step past their range (what a KvState cannot have reached).
  bool in_range = s.revision >= 1 && s.revision < kMaxCounter && s.next_lease_id >= 1 &&
                  s.next_lease_id < kMaxCounter;
  for (const KeyValue& kv : s.kvs) {
    in_range = in_range && kv.version >= 0 && kv.version < kMaxCounter;
  }
  if (!in_range) return Corrupt("snapshot counters out of range");
  return s;
}

absl::StatusOr<std::unique_ptr<MetaLogWriter>> MetaLogWriter::Create(fs::FileSystem* fs,
                                                                     const std::string& dir,
                                                                     uint64_t seq) {
  ASSIGN_OR_RETURN(auto file, fs->OpenWritable(fs::JoinPath(dir, LogFileName(seq)),
                                               fs::OpenMode::kCreateExclusive));
  RETURN_IF_ERROR(file->Append(EncodeLogHeader(seq)));
  RETURN_IF_ERROR(file->Sync());
  RETURN_IF_ERROR(fs->SyncDir(dir));
  return std::unique_ptr<MetaLogWriter>(new MetaLogWriter(std::move(file), seq));
}

absl::StatusOr<std::unique_ptr<MetaLogWriter>> MetaLogWriter::Reopen(fs::FileSystem* fs,
                                                                     const std::string& path,
                                                                     uint64_t seq,
                                                                     uint64_t valid_bytes) {
  ASSIGN_OR_RETURN(auto file, fs->OpenWritable(path, fs::OpenMode::kAppendExisting));
  if (file->Size() != valid_bytes) {
    RETURN_IF_ERROR(file->Truncate(valid_bytes));
    RETURN_IF_ERROR(file->Sync());
  }
  return std::unique_ptr<MetaLogWriter>(new MetaLogWriter(std::move(file), seq));
}

absl::Status MetaLogWriter::AppendSync(const Mutation& m) {
  RETURN_IF_ERROR(error_);
  absl::Status s = file_->Append(EncodeLogRecord(EncodeMutation(m)));
  if (s.ok()) s = file_->Sync();
  if (!s.ok()) error_ = s;
  return s;
}

}  // namespace kf::meta

#include "storage/object/local_object_store.h"

#include <sys/statfs.h>

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/absl_compat.h"
#include "common/coding.h"
#include "common/crc32c.h"
#include "common/status_macros.h"

namespace kf::object {
namespace {

// The object file header (docs/object-store.md): magic "KFOB", u16 version, u16 header
// length, u64 payload length, u32 masked CRC32C of the payload, u32 masked CRC32C of the 20
// bytes before it. Little-endian.
constexpr uint32_t kMagic = 0x424f464b;  // "KFOB" on disk
constexpr uint16_t kVersion = 1;
constexpr size_t kHeaderSize = 24;
constexpr char kObjectSuffix = '~';

struct Header {
  uint64_t length = 0;
  uint32_t crc = 0;  // unmasked CRC32C of the payload
};

std::string EncodeHeader(const Header& h) {
  std::string out;
  PutFixed32(&out, kMagic);
  PutFixed16(&out, kVersion);
  PutFixed16(&out, kHeaderSize);
  PutFixed64(&out, h.length);
  PutFixed32(&out, crc32c::Mask(h.crc));
  PutFixed32(&out, crc32c::Mask(crc32c::Value(out)));
  return out;
}

absl::StatusOr<Header> DecodeHeader(std::string_view b, const std::string& path) {
  if (b.size() < kHeaderSize) {
    return absl::DataLossError(absl::StrCat("object file shorter than its header: ", path));
  }
  if (DecodeFixed32(b.data()) != kMagic || DecodeFixed16(b.data() + 4) != kVersion ||
      DecodeFixed16(b.data() + 6) != kHeaderSize ||
      crc32c::Unmask(DecodeFixed32(b.data() + 20)) != crc32c::Value(b.data(), 20)) {
    return absl::DataLossError(absl::StrCat("bad object header: ", path));
  }
  return Header{.length = DecodeFixed64(b.data() + 8),
                .crc = crc32c::Unmask(DecodeFixed32(b.data() + 16))};
}

std::string Etag(uint32_t crc) { return absl::StrFormat("%08x", crc); }

absl::Status CheckDeadline(absl::Time deadline) {
  if (absl::Now() >= deadline) return absl::DeadlineExceededError("object store deadline passed");
  return absl::OkStatus();
}

// An open object with a verified header and length.
struct OpenObject {
  std::unique_ptr<fs::RandomAccessFile> file;
  Header header;
};

absl::StatusOr<OpenObject> OpenAndCheck(fs::FileSystem* fs, const std::string& path) {
  ASSIGN_OR_RETURN(auto file, fs->OpenRandomAccess(path));
  char buf[kHeaderSize];
  ASSIGN_OR_RETURN(size_t n, file->ReadAt(0, kHeaderSize, buf));
  ASSIGN_OR_RETURN(Header header, DecodeHeader(std::string_view(buf, n), path));
  ASSIGN_OR_RETURN(uint64_t size, file->Size());
  if (size != kHeaderSize + header.length) {
    return absl::DataLossError(absl::StrCat("object file has ", size - kHeaderSize,
                                            " payload bytes, header says ", header.length, ": ",
                                            path));
  }
  return OpenObject{std::move(file), header};
}

}  // namespace

namespace {

// Whether `dir` is on a file system of this machine's own (statfs magic numbers, linux/magic.h):
// not one shared over a network or served by a user process.
bool OnLocalFileSystem(const std::string& dir) {
  struct statfs s;
  if (::statfs(dir.c_str(), &s) != 0) return false;
  switch (static_cast<uint32_t>(s.f_type)) {
    case 0x6969:      // NFS
    case 0x517B:      // SMB
    case 0xFF534D42:  // CIFS
    case 0xFE534D42:  // SMB2
    case 0x65735546:  // FUSE
    case 0x00C36400:  // CephFS
    case 0x01021997:  // 9P
    case 0x5346414F:  // AFS
    case 0x7461636F:  // OCFS2
    case 0x01161970:  // GFS2
      return false;
    default:
      return true;
  }
}

}  // namespace

struct LocalObjectStore::Walk {
  std::string_view prefix;
  std::string_view start_after;
  size_t limit = 0;
  ListResult* out = nullptr;
  bool done = false;
};

absl::StatusOr<std::unique_ptr<LocalObjectStore>> LocalObjectStore::Open(fs::FileSystem* fs,
                                                                         const std::string& root) {
  RETURN_IF_ERROR(fs->CreateDirs(root));
  std::random_device rd;
  const uint64_t nonce = (static_cast<uint64_t>(rd()) << 32) | rd();
  return std::unique_ptr<LocalObjectStore>(
      new LocalObjectStore(fs, root, nonce, OnLocalFileSystem(root)));
}

std::string LocalObjectStore::PathOf(std::string_view key) const {
  return absl::StrCat(fs::JoinPath(root_, key), std::string(1, kObjectSuffix));
}

absl::StatusOr<std::string> LocalObjectStore::Put(std::string_view key, std::string_view data,
                                                  const PutOptions& options, absl::Time deadline) {
  RETURN_IF_ERROR(ValidateKey(key));
  RETURN_IF_ERROR(CheckDeadline(deadline));
  const std::string path = PathOf(key);
  const std::string dir = fs::DirName(path);
  RETURN_IF_ERROR(fs_->CreateDirs(dir));
  const std::string tmp = absl::StrCat(fs::JoinPath(root_, key), "~tmp.", absl::Hex(nonce_), ".",
                                       temp_seq_.fetch_add(1, std::memory_order_relaxed));
  const Header header{.length = data.size(), .crc = crc32c::Value(data)};
  absl::Status s = [&]() -> absl::Status {
    ASSIGN_OR_RETURN(auto file, fs_->OpenWritable(tmp, fs::OpenMode::kCreateExclusive));
    RETURN_IF_ERROR(file->Append(EncodeHeader(header)));
    RETURN_IF_ERROR(file->Append(data));
    RETURN_IF_ERROR(file->Sync());
    RETURN_IF_ERROR(file->Close());
    // Past this point the object becomes visible: give up now if the caller already has.
    RETURN_IF_ERROR(CheckDeadline(deadline));
    return options.if_absent ? fs_->RenameFileNoReplace(tmp, path) : fs_->RenameFile(tmp, path);
  }();
  if (!s.ok()) {
    (void)fs_->RemoveFile(tmp);  // best effort; a leftover temp is never listed
    if (absl::IsAlreadyExists(s)) {
      return absl::AlreadyExistsError(absl::StrCat("object exists: ", ToAbsl(key)));
    }
    return s;
  }
  RETURN_IF_ERROR(fs_->SyncDir(dir));
  return Etag(header.crc);
}

absl::StatusOr<std::string> LocalObjectStore::Get(std::string_view key, const ByteRange& range,
                                                  absl::Time deadline) {
  RETURN_IF_ERROR(ValidateKey(key));
  RETURN_IF_ERROR(ValidateRange(range));
  RETURN_IF_ERROR(CheckDeadline(deadline));
  const std::string path = PathOf(key);
  ASSIGN_OR_RETURN(OpenObject obj, OpenAndCheck(fs_, path));
  uint64_t begin = 0, end = 0;
  RETURN_IF_ERROR(ResolveRange(range, obj.header.length, &begin, &end));
  std::string out(end - begin, '\0');
  ASSIGN_OR_RETURN(size_t n, obj.file->ReadAt(kHeaderSize + begin, out.size(), out.data()));
  if (n != out.size()) {
    return absl::DataLossError(absl::StrCat("short read of ", path, " (object shrank?)"));
  }
  if (range.kind() == ByteRange::Kind::kAll && crc32c::Value(out) != obj.header.crc) {
    return absl::DataLossError(absl::StrCat("object checksum mismatch: ", path));
  }
  return out;
}

absl::StatusOr<SharedBytes> LocalObjectStore::GetShared(std::string_view key, absl::Time deadline,
                                                        Checksum checksum) {
  if (!maps_) return ObjectStore::GetShared(key, deadline, checksum);
  RETURN_IF_ERROR(ValidateKey(key));
  RETURN_IF_ERROR(CheckDeadline(deadline));
  const std::string path = PathOf(key);
  ASSIGN_OR_RETURN(OpenObject obj, OpenAndCheck(fs_, path));
  absl::StatusOr<SharedBytes> file = obj.file->Map(kHeaderSize + obj.header.length);
  if (absl::IsUnimplemented(file.status())) return ObjectStore::GetShared(key, deadline, checksum);
  if (!file.ok()) return file.status();
  // An object file is written once (a temp file renamed into place) and only ever removed,
  // which a mapping survives: it never shrinks under the mapping.
  file->bytes.remove_prefix(kHeaderSize);
  if (checksum == Checksum::kStore && crc32c::Value(file->bytes) != obj.header.crc) {
    return absl::DataLossError(absl::StrCat("object checksum mismatch: ", path));
  }
  return file;
}

absl::StatusOr<ObjectInfo> LocalObjectStore::Head(std::string_view key, absl::Time deadline) {
  RETURN_IF_ERROR(ValidateKey(key));
  RETURN_IF_ERROR(CheckDeadline(deadline));
  ASSIGN_OR_RETURN(OpenObject obj, OpenAndCheck(fs_, PathOf(key)));
  return ObjectInfo{
      .key = std::string(key), .size = obj.header.length, .etag = Etag(obj.header.crc)};
}

absl::Status LocalObjectStore::Delete(std::string_view key, absl::Time deadline) {
  RETURN_IF_ERROR(ValidateKey(key));
  RETURN_IF_ERROR(CheckDeadline(deadline));
  const std::string path = PathOf(key);
  absl::Status s = fs_->RemoveFile(path);
  if (absl::IsNotFound(s)) return absl::OkStatus();
  RETURN_IF_ERROR(s);
  return fs_->SyncDir(fs::DirName(path));
}

absl::StatusOr<ListResult> LocalObjectStore::List(std::string_view prefix,
                                                  std::string_view start_after, size_t limit,
                                                  absl::Time deadline) {
  RETURN_IF_ERROR(ValidateList(prefix, start_after, limit));
  RETURN_IF_ERROR(CheckDeadline(deadline));
  ListResult result;
  Walk walk{.prefix = prefix, .start_after = start_after, .limit = limit, .out = &result};
  // Start in the deepest directory the prefix names; everything else cannot match.
  const size_t slash = prefix.rfind('/');
  const std::string dir_key =
      slash == std::string_view::npos ? "" : std::string(prefix.substr(0, slash + 1));
  RETURN_IF_ERROR(ListDir(dir_key, &walk));
  return result;
}

// Visits the directory of keys starting with `dir_key` ("" or ending in '/') in key order.
// A subdirectory "d" sorts as "d/", which is exactly where its keys fall among its siblings.
absl::Status LocalObjectStore::ListDir(const std::string& dir_key, Walk* walk) {
  auto children = fs_->GetChildren(fs::JoinPath(root_, dir_key));
  if (absl::IsNotFound(children.status())) return absl::OkStatus();
  RETURN_IF_ERROR(children.status());
  struct Entry {
    std::string key;  // object key, or the subdirectory's key prefix ("d/")
    bool is_dir;
  };
  std::vector<Entry> entries;
  for (const std::string& name : *children) {
    const size_t tilde = name.find(kObjectSuffix);
    if (tilde == std::string::npos) {
      entries.push_back({absl::StrCat(dir_key, name, "/"), true});
    } else if (tilde + 1 == name.size()) {
      entries.push_back({absl::StrCat(dir_key, name.substr(0, tilde)), false});
    }  // else a temp file
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.key < b.key; });
  for (const Entry& e : entries) {
    if (walk->done) return absl::OkStatus();
    if (e.is_dir) {
      if (!absl::StartsWith(e.key, ToAbsl(walk->prefix)) &&
          !absl::StartsWith(ToAbsl(walk->prefix), e.key)) {
        continue;
      }
      // Every key below sorts before start_after: skip the subtree.
      if (e.key < walk->start_after && !absl::StartsWith(ToAbsl(walk->start_after), e.key))
        continue;
      RETURN_IF_ERROR(ListDir(e.key, walk));
      continue;
    }
    if (!absl::StartsWith(e.key, ToAbsl(walk->prefix)) || e.key <= walk->start_after) continue;
    if (walk->out->objects.size() == walk->limit) {
      walk->out->truncated = true;
      walk->done = true;
      return absl::OkStatus();
    }
    auto size = fs_->GetFileSize(PathOf(e.key));
    if (absl::IsNotFound(size.status())) continue;  // deleted while we listed
    RETURN_IF_ERROR(size.status());
    if (*size < kHeaderSize) {
      return absl::DataLossError(absl::StrCat("object file shorter than its header: ", e.key));
    }
    walk->out->objects.push_back({.key = e.key, .size = *size - kHeaderSize});
  }
  return absl::OkStatus();
}

}  // namespace kf::object

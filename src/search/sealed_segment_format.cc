#include "search/sealed_segment_format.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <span>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"
#include "common/coding.h"
#include "common/crc32c.h"
#include "common/errors.h"
#include "search/ivf_index.h"

namespace kf::search {

// Columns are copied as the host lays them out; the format is little-endian.
static_assert(std::endian::native == std::endian::little);

namespace {

constexpr char kMagic[] = "KFSSEG01";  // 8 bytes, no terminator on disk
constexpr size_t kMagicSize = 8;
constexpr uint32_t kMaxDim = 32768;

template <typename T>
void PutArray(std::string* out, const T* values, size_t n) {
  out->append(reinterpret_cast<const char*>(values), n * sizeof(T));
}

// Zero bytes from `size` to the next multiple of 8.
size_t PaddingBytes(size_t size) { return (8 - size % 8) % 8; }

void PutPadding(std::string* out) { out->append(PaddingBytes(out->size()), '\0'); }

void PutString16(std::string* out, std::string_view s) {
  PutFixed16(out, static_cast<uint16_t>(s.size()));
  out->append(s);
}

// A bounded reader over untrusted bytes: every Get checks what is left first.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : in_(bytes), begin_(bytes.data()) {}
  size_t left() const { return in_.size(); }
  bool Bytes(size_t n, std::string_view* out) {
    if (n > in_.size()) return false;
    *out = in_.substr(0, n);
    in_.remove_prefix(n);
    return true;
  }
  template <typename T>
  bool Fixed(T* v) {
    if (in_.size() < sizeof(T)) return false;
    std::memcpy(v, in_.data(), sizeof(T));
    in_.remove_prefix(sizeof(T));
    return true;
  }
  bool String16(std::string* out) {
    uint16_t n;
    std::string_view s;
    if (!Fixed(&n) || !Bytes(n, &s)) return false;
    out->assign(s);
    return true;
  }
  // n values of T, in place: a view, never a copy. False when they are not all there or not
  // aligned for T (the format aligns every column for an object read into aligned memory).
  template <typename T>
  bool View(size_t n, std::span<const T>* out) {
    if (n > in_.size() / sizeof(T) || reinterpret_cast<uintptr_t>(in_.data()) % alignof(T) != 0) {
      return false;
    }
    *out = std::span<const T>(reinterpret_cast<const T*>(in_.data()), n);
    in_.remove_prefix(n * sizeof(T));
    return true;
  }
  // The zero bytes up to the next multiple of 8 from the start.
  bool Padding() {
    const size_t n = PaddingBytes(static_cast<size_t>(in_.data() - begin_));
    std::string_view pad;
    return Bytes(n, &pad) && pad == std::string_view("\0\0\0\0\0\0\0", n);
  }

 private:
  std::string_view in_;
  const char* const begin_;
};

// The body length of a chunk of `rows` rows with `nlist` lists; 0 (no body has that length)
// when a count is out of range.
uint64_t ChunkBodyBytes(uint64_t rows, uint64_t nlist, uint64_t dim) {
  if (rows > kMaxSegmentRows || nlist > rows || dim > kMaxDim) return 0;
  uint64_t n = 4 + 4 + rows * (8 + 8 + 8) + rows * dim * 4;
  if (nlist > 0) n += nlist * dim * 4 + (nlist + 1) * 4 + rows * 4;
  return n;
}

// Branch-free within a block, so that it vectorizes (a load checks every vector of a segment,
// right after its checksum): a float is finite unless its exponent bits are all ones.
bool AllFinite(const float* v, size_t n) {
  constexpr uint32_t kExponent = 0x7f800000u;
  constexpr size_t kBlock = 4096;
  for (size_t begin = 0; begin < n; begin += kBlock) {
    const size_t end = std::min(n, begin + kBlock);
    uint32_t infinite_or_nan = 0;
    for (size_t i = begin; i < end; ++i) {
      infinite_or_nan |=
          static_cast<uint32_t>((std::bit_cast<uint32_t>(v[i]) & kExponent) == kExponent);
    }
    if (infinite_or_nan != 0) return false;
  }
  return true;
}

}  // namespace

// Makes chunks over an object's columns (a friend of Chunk).
class SealedSegmentCodec {
 public:
  static std::shared_ptr<Chunk> ChunkOver(
      const SharedBytes& object, uint32_t dim, std::shared_ptr<MemoryAccount> account,
      std::span<const int64_t> pks, std::span<const uint64_t> inserted,
      std::span<const uint64_t> deleted, std::span<const float> vectors,
      std::unique_ptr<uint32_t[]> slot_of_row, size_t object_bytes) {
    const size_t rows = pks.size();
    std::shared_ptr<Chunk> c(new Chunk(rows, dim, std::move(account), object.owner, pks.data(),
                                       inserted.data(), vectors.data(), std::move(slot_of_row),
                                       object.mapped ? 0 : object_bytes));
    // previous_of_pk_ is written when the segment's pk index is built.
    for (size_t r = 0; r < rows; ++r) c->deleted_[r].store(deleted[r], std::memory_order_relaxed);
    return c;
  }
  static void Publish(Chunk& c, std::unique_ptr<IvfIndex> index) {
    c.PublishIndex(std::move(index));
  }
};

absl::StatusOr<std::string> EncodeSealedSegment(SealedSegmentMeta meta,
                                                const SegmentSnapshot& snapshot) {
  if (meta.dim == 0 || meta.dim > kMaxDim || meta.chunk_rows == 0 ||
      meta.chunk_rows != snapshot.chunk_rows || meta.vchannel.size() > UINT16_MAX ||
      meta.partition.size() > UINT16_MAX || snapshot.rows > kMaxSegmentRows) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sealed segment ", meta.segment_id, ": dim ", meta.dim, ", chunk rows ", meta.chunk_rows,
        " (snapshot ", snapshot.chunk_rows, "), ", snapshot.rows, " rows"));
  }
  const size_t chunks = (snapshot.rows + meta.chunk_rows - 1) / meta.chunk_rows;
  if (chunks > snapshot.chunks.size()) {
    return absl::InvalidArgumentError("sealed segment: the snapshot lacks chunks for its rows");
  }
  meta.rows = snapshot.rows;
  meta.min_ts = UINT64_MAX;
  meta.max_ts = 0;
  for (size_t i = 0; i < chunks; ++i) {
    for (size_t r = 0; r < snapshot.RowsIn(i); ++r) {
      meta.min_ts = std::min(meta.min_ts, snapshot.chunks[i]->inserted(r));
      meta.max_ts = std::max(meta.max_ts, snapshot.chunks[i]->inserted(r));
    }
  }
  if (meta.rows == 0) meta.min_ts = 0;

  std::string out;
  std::string body;
  PutFixed64(&body, static_cast<uint64_t>(meta.collection_id));
  PutFixed64(&body, static_cast<uint64_t>(meta.segment_id));
  PutFixed32(&body, meta.dim);
  body.push_back(static_cast<char>(meta.metric));
  body.append(3, '\0');
  PutFixed32(&body, meta.chunk_rows);
  PutFixed64(&body, meta.rows);
  PutFixed64(&body, meta.min_ts);
  PutFixed64(&body, meta.max_ts);
  PutFixed32(&body, static_cast<uint32_t>(chunks));
  PutString16(&body, meta.vchannel);
  PutString16(&body, meta.partition);
  out.append(kMagic, kMagicSize);
  PutFixed16(&out, kSealedSegmentVersion);
  PutFixed16(&out, 0);  // flags
  PutFixed32(&out, static_cast<uint32_t>(body.size()));
  out += body;
  PutFixed32(&out, crc32c::Mask(crc32c::Value(body)));
  PutPadding(&out);

  // A partial chunk's index (never built) or one over more rows than are sealed is left out.
  const auto index_of = [&](size_t i) -> const IvfIndex* {
    const IvfIndex* index = snapshot.chunks[i]->index();
    return index != nullptr && index->parts().list_rows.size() == snapshot.RowsIn(i) ? index
                                                                                     : nullptr;
  };
  // Exactly the object's size: a reader may keep these bytes (SharedBytes::Of), spare capacity
  // and all.
  size_t size = out.size();
  for (size_t i = 0; i < chunks; ++i) {
    const IvfIndex* index = index_of(i);
    size +=
        8 + ChunkBodyBytes(snapshot.RowsIn(i), index == nullptr ? 0 : index->nlist(), meta.dim) + 4;
    size += PaddingBytes(size);
  }
  out.reserve(size);
  for (size_t i = 0; i < chunks; ++i) {
    const Chunk& c = *snapshot.chunks[i];
    const size_t rows = snapshot.RowsIn(i);
    const IvfIndex* index = index_of(i);
    const size_t nlist = index == nullptr ? 0 : index->nlist();
    body.clear();
    body.reserve(ChunkBodyBytes(rows, nlist, meta.dim));
    PutFixed32(&body, static_cast<uint32_t>(rows));
    PutFixed32(&body, static_cast<uint32_t>(nlist));
    for (size_t r = 0; r < rows; ++r) PutFixed64(&body, static_cast<uint64_t>(c.pk(r)));
    for (size_t r = 0; r < rows; ++r) PutFixed64(&body, c.inserted(r));
    for (size_t r = 0; r < rows; ++r) PutFixed64(&body, c.deleted(r));
    if (index == nullptr) {
      for (size_t r = 0; r < rows; ++r) PutArray(&body, c.vector(r), meta.dim);
    } else {
      const IvfIndex::Parts parts = index->parts();
      PutArray(&body, parts.list_vectors.data(), parts.list_vectors.size());  // in list order
      PutArray(&body, parts.centroids.data(), parts.centroids.size());
      PutArray(&body, parts.list_begin.data(), parts.list_begin.size());
      PutArray(&body, parts.list_rows.data(), parts.list_rows.size());
    }
    PutFixed64(&out, body.size());
    out += body;
    PutFixed32(&out, crc32c::Mask(crc32c::Value(body)));
    PutPadding(&out);
  }
  return out;
}

absl::StatusOr<DecodedSealedSegment> DecodeSealedSegment(std::string_view bytes,
                                                         std::string_view object,
                                                         std::shared_ptr<MemoryAccount> account,
                                                         const IndexOptions& index_options) {
  return DecodeSealedSegment(SharedBytes::Of(std::string(bytes)), object, std::move(account),
                             index_options);
}

absl::StatusOr<DecodedSealedSegment> DecodeSealedSegment(SharedBytes bytes, std::string_view object,
                                                         std::shared_ptr<MemoryAccount> account,
                                                         const IndexOptions& index_options) {
  // The columns are viewed in place, aligned as the format aligns them from the object's
  // start: bytes read to an unaligned address are copied once first.
  if (reinterpret_cast<uintptr_t>(bytes.bytes.data()) % 8 != 0) {
    bytes = SharedBytes::Of(std::string(bytes.bytes));
  }
  auto corrupt = [&](std::string_view what) {
    return StreamingError(
        StreamingCode::kDataLoss,
        absl::StrCat("sealed segment object ", ToAbsl(object), ": ", ToAbsl(what)));
  };
  Reader in(bytes.bytes);
  std::string_view magic;
  uint16_t version, flags;
  uint32_t body_len, crc;
  if (!in.Bytes(kMagicSize, &magic) || magic != std::string_view(kMagic, kMagicSize)) {
    return corrupt("not a sealed segment (bad magic)");
  }
  if (!in.Fixed(&version) || !in.Fixed(&flags) || !in.Fixed(&body_len)) {
    return corrupt("truncated header");
  }
  if (version != kSealedSegmentVersion) {
    return corrupt(absl::StrCat("format version ", version, " (this build reads ",
                                kSealedSegmentVersion, ")"));
  }
  if (flags != 0) return corrupt(absl::StrCat("unknown flags ", flags));
  std::string_view body;
  if (!in.Bytes(body_len, &body) || !in.Fixed(&crc)) return corrupt("truncated header");
  if (crc32c::Unmask(crc) != crc32c::Value(body)) return corrupt("header checksum mismatch");
  if (!in.Padding()) return corrupt("truncated or non-zero padding after the header");

  DecodedSealedSegment out;
  SealedSegmentMeta& m = out.meta;
  Reader h(body);
  uint64_t collection_id, segment_id;
  uint8_t metric;
  std::string_view pad;
  uint32_t chunks;
  if (!h.Fixed(&collection_id) || !h.Fixed(&segment_id) || !h.Fixed(&m.dim) || !h.Fixed(&metric) ||
      !h.Bytes(3, &pad) || !h.Fixed(&m.chunk_rows) || !h.Fixed(&m.rows) || !h.Fixed(&m.min_ts) ||
      !h.Fixed(&m.max_ts) || !h.Fixed(&chunks) || !h.String16(&m.vchannel) ||
      !h.String16(&m.partition) || h.left() != 0) {
    return corrupt("malformed header");
  }
  m.collection_id = static_cast<int64_t>(collection_id);
  m.segment_id = static_cast<int64_t>(segment_id);
  if (metric > static_cast<uint8_t>(Metric::kCosine)) {
    return corrupt(absl::StrCat("unknown metric ", metric));
  }
  m.metric = static_cast<Metric>(metric);
  if (pad != std::string_view("\0\0\0", 3)) return corrupt("non-zero header padding");
  if (m.dim == 0 || m.dim > kMaxDim) return corrupt(absl::StrCat("dim ", m.dim));
  if (m.chunk_rows == 0 || m.rows > kMaxSegmentRows ||
      chunks != (m.rows + m.chunk_rows - 1) / m.chunk_rows) {
    return corrupt(absl::StrCat(m.rows, " rows in ", chunks, " chunks of ", m.chunk_rows));
  }
  uint64_t min_ts = UINT64_MAX, max_ts = 0;  // of the rows read
  for (uint32_t i = 0; i < chunks; ++i) {
    const auto at = [&](std::string_view what) {
      return corrupt(absl::StrCat("chunk ", i, ": ", ToAbsl(what)));
    };
    uint64_t len;
    std::string_view chunk_body;
    if (!in.Fixed(&len) || len > in.left() || !in.Bytes(len, &chunk_body) || !in.Fixed(&crc)) {
      return at("truncated");
    }
    if (crc32c::Unmask(crc) != crc32c::Value(chunk_body)) return at("checksum mismatch");
    if (!in.Padding()) return at("truncated or non-zero padding");
    Reader c(chunk_body);
    uint32_t rows, nlist;
    if (!c.Fixed(&rows) || !c.Fixed(&nlist)) return at("truncated");
    const uint64_t want_rows =
        std::min<uint64_t>(m.chunk_rows, m.rows - uint64_t{i} * m.chunk_rows);
    if (rows != want_rows) return at(absl::StrCat(rows, " rows, expected ", want_rows));
    if (ChunkBodyBytes(rows, nlist, m.dim) != len) {
      return at(absl::StrCat(len, " bytes do not hold ", rows, " rows and ", nlist, " lists"));
    }
    if (nlist > 0 && rows != m.chunk_rows) return at("an index on a partial chunk");
    std::span<const int64_t> pks;
    std::span<const uint64_t> inserted, deleted;
    std::span<const float> vectors, centroids;
    std::span<const uint32_t> list_begin, list_rows;
    if (!c.View(rows, &pks) || !c.View(rows, &inserted) || !c.View(rows, &deleted) ||
        !c.View(size_t{rows} * m.dim, &vectors) ||
        (nlist > 0 && (!c.View(size_t{nlist} * m.dim, &centroids) ||
                       !c.View(size_t{nlist} + 1, &list_begin) || !c.View(rows, &list_rows)))) {
      return at("truncated or misaligned");
    }
    // Inserts were checked finite; a search must never meet a NaN.
    if (!AllFinite(vectors.data(), vectors.size())) return at("a vector is not finite");
    if (!AllFinite(centroids.data(), centroids.size())) return at("a centroid is not finite");
    for (size_t r = 0; r < rows; ++r) {
      if (deleted[r] < inserted[r]) {
        return at(absl::StrCat("row ", r, " inserted at ", inserted[r], ", deleted before, at ",
                               deleted[r]));
      }
      min_ts = std::min(min_ts, inserted[r]);
      max_ts = std::max(max_ts, inserted[r]);
    }
    std::unique_ptr<IvfIndex> index;
    std::unique_ptr<uint32_t[]> slot_of_row;
    if (nlist > 0) {
      auto view = IvfIndex::View(rows, m.dim, m.metric, index_options,
                                 {.centroids = centroids,
                                  .list_begin = list_begin,
                                  .list_rows = list_rows,
                                  .list_vectors = vectors});
      if (!view.ok()) return at(std::string(view.status().message()));
      index = *std::move(view);
      // The vectors are in list order: where each row's is, and that every row has one.
      slot_of_row.reset(new uint32_t[rows]);
      std::fill_n(slot_of_row.get(), rows, kNoRow);
      for (uint32_t slot = 0; slot < rows; ++slot) {
        const uint32_t r = list_rows[slot];
        if (r >= rows || slot_of_row[r] != kNoRow) {
          return at(
              absl::StrCat("IVF lists name row ", r, " of ", rows, r >= rows ? "" : " twice"));
        }
        slot_of_row[r] = slot;
      }
    }
    std::shared_ptr<Chunk> chunk = SealedSegmentCodec::ChunkOver(
        bytes, m.dim, account, pks, inserted, deleted, vectors, std::move(slot_of_row), len);
    if (index != nullptr) SealedSegmentCodec::Publish(*chunk, std::move(index));
    out.chunks.push_back(std::move(chunk));
  }
  if (in.left() != 0) return corrupt(absl::StrCat(in.left(), " bytes after the last chunk"));
  if (m.rows > 0 && (min_ts != m.min_ts || max_ts != m.max_ts)) {
    return corrupt(absl::StrCat("rows inserted from ", min_ts, " to ", max_ts, ", header says ",
                                m.min_ts, " to ", m.max_ts));
  }
  if (m.rows == 0 && (m.min_ts != 0 || m.max_ts != 0)) return corrupt("timestamps without rows");
  return out;
}

}  // namespace kf::search

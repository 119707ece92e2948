#include "wal/backends/objectstore/writer_open.h"

#include <algorithm>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "wal/backends/objectstore/block_format.h"

namespace kf::wal::objectstore {
namespace {

absl::Time RequestDeadline(absl::Duration timeout, absl::Time deadline) {
  return std::min(deadline, absl::Now() + timeout);
}

// Step 1: claims the log for `term`.
absl::StatusOr<VersionedMeta> Claim(meta::MetaStore* meta, const Layout& layout, Term term,
                                    absl::Duration timeout, absl::Time deadline) {
  absl::BitGen bitgen;
  for (;;) {
    auto current = RetryUnavailable(deadline, [&] {
      return LoadMeta(meta, layout.meta_key(), RequestDeadline(timeout, deadline));
    });
    if (!current.ok()) return current.status();
    if (current->meta.term() > term.value()) {
      return FencedError(absl::StrCat("objectstore WAL ", layout.pchannel(), ": term ",
                                      current->meta.term(), " opened it, cannot open term ",
                                      term.value()));
    }
    kingfisher::v1::ObjectLogMeta next = current->meta;
    next.set_term(term.value());
    next.set_generation(next.generation() + 1);
    next.set_writer_nonce(absl::Uniform<uint64_t>(bitgen));
    auto cas = RetryUnavailable(deadline, [&] {
      return CasMeta(meta, layout.meta_key(), current->mod_revision, next,
                     RequestDeadline(timeout, deadline));
    });
    if (!cas.ok()) return cas.status();
    if (cas->has_value()) return **cas;
    // Someone else changed it first: decide again on what they wrote.
  }
}

}  // namespace

absl::StatusOr<SegmentView> FenceSegment(object::ObjectStore* store, const Layout& layout,
                                         uint64_t segment, Term term,
                                         absl::Duration request_timeout, absl::Time deadline) {
  SegmentView view{.id = segment, .sealed = true};
  // The contiguous run of data blocks from 0, up to a gap or a fence block.
  const std::string prefix = layout.SegmentPrefix(segment);
  std::string after;
  bool fenced = false;
  for (bool more = true, run = true; more && run;) {
    auto page = RetryUnavailable(deadline, [&] {
      return store->List(prefix, after, 1000, RequestDeadline(request_timeout, deadline));
    });
    if (!page.ok()) return page.status();
    for (const auto& o : page->objects) {
      const auto block = layout.BlockOfKey(segment, o.key);
      if (!block || *block != view.blocks) {
        run = false;
        break;
      }
      if (o.size <= kFenceBlockSize) {
        fenced = true;
        run = false;
        break;
      }
      view.block_bytes.push_back(o.size);
      ++view.blocks;
    }
    more = page->truncated;
    if (!page->objects.empty()) after = page->objects.back().key;
  }
  // Fence at the first missing index; a data block that lands there first extends the run.
  while (!fenced) {
    const std::string key = layout.BlockKey(segment, view.blocks);
    auto put = RetryUnavailable(deadline, [&] {
      return store->Put(key, EncodeFenceBlock(term, segment, view.blocks),
                        object::PutOptions{.if_absent = true},
                        RequestDeadline(request_timeout, deadline));
    });
    if (put.ok()) break;
    if (!absl::IsAlreadyExists(put.status())) return put.status();
    auto head = RetryUnavailable(
        deadline, [&] { return store->Head(key, RequestDeadline(request_timeout, deadline)); });
    if (!head.ok()) return head.status();
    if (head->size <= kFenceBlockSize) break;  // someone else fenced it (or our lost answer)
    view.block_bytes.push_back(head->size);
    ++view.blocks;
  }
  for (uint64_t b : view.block_bytes) view.bytes += b;
  if (view.blocks == 0) return view;
  // The last block tells where the segment's entries end.
  const uint64_t last = view.blocks - 1;
  const std::string key = layout.BlockKey(segment, last);
  auto bytes = RetryUnavailable(deadline, [&] {
    return store->Get(key, object::ByteRange::All(), RequestDeadline(request_timeout, deadline));
  });
  if (!bytes.ok()) return bytes.status();
  BlockHeader header;
  uint64_t count = 0;
  RETURN_IF_ERROR(DecodeBlock(*bytes, segment, last, key, &header,
                              [&](uint64_t, std::string_view) { ++count; }));
  view.end_entry = EntryOf(last, count);
  return view;
}

absl::StatusOr<RecoveredLog> OpenForWrite(object::ObjectStore* store, meta::MetaStore* meta,
                                          const Layout& layout, Term term,
                                          absl::Duration request_timeout, absl::Time deadline) {
  ASSIGN_OR_RETURN(VersionedMeta claimed, Claim(meta, layout, term, request_timeout, deadline));
  RecoveredLog out;
  kingfisher::v1::ObjectLogMeta next = claimed.meta;
  for (auto& seg : *next.mutable_segments()) {
    if (seg.sealed()) {
      out.segments.push_back(ViewOf(seg));
      continue;
    }
    ASSIGN_OR_RETURN(SegmentView view,
                     FenceSegment(store, layout, seg.id(), term, request_timeout, deadline));
    seg.set_sealed(true);
    seg.set_blocks(view.blocks);
    seg.set_end_entry(view.end_entry);
    seg.set_bytes(view.bytes);
    out.segments.push_back(std::move(view));
  }
  auto* open = next.add_segments();
  open->set_id(next.next_segment());
  open->set_term(term.value());
  open->set_created_unix_micros(absl::ToUnixMicros(absl::Now()));
  next.set_next_segment(next.next_segment() + 1);
  out.segments.push_back(SegmentView{.id = open->id()});
  auto cas = RetryUnavailable(deadline, [&] {
    return CasMeta(meta, layout.meta_key(), claimed.mod_revision, next,
                   RequestDeadline(request_timeout, deadline));
  });
  if (!cas.ok()) return cas.status();
  if (!cas->has_value()) {
    return FencedError(absl::StrCat("objectstore WAL ", layout.pchannel(),
                                    ": another writer opened it during recovery at term ",
                                    term.value()));
  }
  out.meta = **cas;
  return out;
}

}  // namespace kf::wal::objectstore

#include "wal/backends/local/writer_recovery.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "wal/backends/local/disk_view.h"
#include "wal/backends/local/layout.h"
#include "wal/backends/local/segment_reader.h"

namespace kf::wal::local {
namespace {

absl::Status Fenced(Term ours, Term theirs) {
  return FencedError(absl::StrCat("local WAL: cannot open at term ", ours.value(), ", term ",
                                  theirs.value(), " exists"));
}

absl::Status CheckNotFenced(const DiskView& view, Term term) {
  if (view.fence && *view.fence > term) return Fenced(term, *view.fence);
  for (const auto& f : view.segments) {
    if (f.term > term) return Fenced(term, f.term);
  }
  return absl::OkStatus();
}

// Seals `term_to_seal` at the valid end of its last segment `last`.
absl::StatusOr<SealRecord> Seal(fs::FileSystem* fs, const std::string& dir,
                                const SegmentFile& last) {
  const std::string path = fs::JoinPath(dir, last.name);
  {
    // fdatasync covers the inode: whatever the old writer wrote becomes durable before we
    // decide where its log ends.
    ASSIGN_OR_RETURN(auto w, fs->OpenWritable(path, fs::OpenMode::kAppendExisting));
    RETURN_IF_ERROR(w->Sync());
    RETURN_IF_ERROR(w->Close());
  }
  ASSIGN_OR_RETURN(auto file, fs->OpenRandomAccess(path));
  ASSIGN_OR_RETURN(uint64_t size, file->Size());
  ASSIGN_OR_RETURN(ScanResult scan, ScanSegment(file.get(), path, size, last.base));
  SealRecord rec;
  rec.sealed_term = last.term;
  rec.segment_base = last.base;
  rec.length = scan.valid_end;
  rec.end_offset = scan.end_offset;
  RETURN_IF_ERROR(fs::WriteFileAtomically(
      fs, fs::JoinPath(fs::JoinPath(dir, kSealDir), TermFileName(last.term)),
      EncodeSealRecord(rec)));
  return rec;
}

absl::Status DataLoss(std::string_view what) {
  return StreamingError(StreamingCode::kDataLoss, what);
}

}  // namespace

absl::StatusOr<RecoveredLog> RecoverForWrite(fs::FileSystem* fs, const std::string& dir,
                                             Term term) {
  const std::string fence_dir = fs::JoinPath(dir, kFenceDir);
  RETURN_IF_ERROR(fs->CreateDirs(fence_dir));
  RETURN_IF_ERROR(fs->CreateDirs(fs::JoinPath(dir, kSealDir)));

  // 1. Fence: durably record our term before looking at anyone's data.
  ASSIGN_OR_RETURN(DiskView view, LoadDiskView(fs, dir));
  RETURN_IF_ERROR(CheckNotFenced(view, term));
  if (!view.fence || *view.fence < term) {
    ASSIGN_OR_RETURN(auto f, fs->OpenWritable(fs::JoinPath(fence_dir, TermFileName(term)),
                                              fs::OpenMode::kCreateOrAppend));
    RETURN_IF_ERROR(f->Sync());
    RETURN_IF_ERROR(f->Close());
    RETURN_IF_ERROR(fs->SyncDir(fence_dir));
    // Everything an older writer acknowledged is on disk now (it checks the fence after each
    // fdatasync), so this listing sees it.
    ASSIGN_OR_RETURN(view, LoadDiskView(fs, dir));
    RETURN_IF_ERROR(CheckNotFenced(view, term));
  }

  // 2. Seal every older term that wrote segments and was not sealed yet.
  std::map<Term, SegmentFile> last_of_term;
  for (const auto& f : view.segments) last_of_term[f.term] = f;  // sorted by base
  for (const auto& [t, last] : last_of_term) {
    if (t >= term || view.seals.contains(t)) continue;
    ASSIGN_OR_RETURN(view.seals[t], Seal(fs, dir, last));
  }

  // 3. Which segments count; a fenced writer's late segments go.
  std::vector<SegmentFile> garbage;
  std::vector<EffectiveSegment> eff = ComputeEffective(view, &garbage);
  for (const auto& g : garbage) (void)fs->RemoveFile(fs::JoinPath(dir, g.name));

  auto state = std::make_shared<LogState>(fs, dir, /*read_only=*/false);
  RecoveredLog out;
  out.state = state;
  std::vector<std::shared_ptr<Segment>> segments;
  // End offset of the previous segment when known (sealed segments record it).
  bool prev_end_known = false;
  uint64_t prev_end = 0;
  for (size_t i = 0; i < eff.size(); ++i) {
    const EffectiveSegment& e = eff[i];
    const std::string path = fs::JoinPath(dir, e.file.name);
    if (prev_end_known && prev_end != e.file.base) {
      return DataLoss(absl::StrCat("local WAL: segment ", path, " starts at offset ", e.file.base,
                                   " but the previous segment ends at ", prev_end));
    }
    auto seg = std::make_shared<Segment>(e.file.name, path, e.file.base, e.file.term);
    const bool last = i + 1 == eff.size();
    prev_end_known = false;
    if (e.kind == EffectiveSegment::Kind::kCapped) {
      seg->limit = e.cap;
      prev_end = e.cap_end_offset;
      prev_end_known = true;
    } else {
      seg->limit = e.file.size;
    }
    if (last) {
      // 4. Recover the tail: validate every batch of the last segment.
      ASSIGN_OR_RETURN(auto file, fs->OpenRandomAccess(path));
      ASSIGN_OR_RETURN(ScanResult scan, ScanSegment(file.get(), path, seg->limit, seg->base));
      const bool own = e.kind == EffectiveSegment::Kind::kLive && e.file.term == term;
      if (scan.torn && !own) {
        return DataLoss(absl::StrCat("local WAL: damaged batch in sealed segment ", path,
                                     " at byte ", scan.valid_end));
      }
      if (e.kind == EffectiveSegment::Kind::kCapped && scan.end_offset != e.cap_end_offset) {
        return DataLoss(absl::StrCat("local WAL: sealed segment ", path, " ends at offset ",
                                     scan.end_offset, ", its seal says ", e.cap_end_offset));
      }
      if (!own && e.kind != EffectiveSegment::Kind::kCapped &&
          e.kind != EffectiveSegment::Kind::kFull) {
        return absl::InternalError("local WAL: unsealed segment of another term: " + path);
      }
      seg->limit = scan.valid_end;
      seg->index = std::move(scan.index);
      seg->indexed_pos = scan.valid_end;
      seg->indexed_offset = scan.end_offset;
      seg->file = std::move(file);
      out.init.next_offset = scan.end_offset;
      if (own) {
        // Our own term after a restart: cut a torn tail and keep appending here.
        ASSIGN_OR_RETURN(out.init.active, fs->OpenWritable(path, fs::OpenMode::kAppendExisting));
        if (scan.torn) {
          RETURN_IF_ERROR(out.init.active->Truncate(scan.valid_end));
          RETURN_IF_ERROR(out.init.active->Sync());
        }
        out.init.active_segment = seg;
      }
    }
    segments.push_back(std::move(seg));
  }

  // 5. A fresh segment for our term at the next offset.
  if (out.init.active == nullptr) {
    const std::string name = SegmentFileName(out.init.next_offset, term);
    const std::string path = fs::JoinPath(dir, name);
    ASSIGN_OR_RETURN(out.init.active, fs->OpenWritable(path, fs::OpenMode::kCreateExclusive));
    RETURN_IF_ERROR(fs->SyncDir(dir));
    auto seg = std::make_shared<Segment>(name, path, out.init.next_offset, term);
    out.init.active_segment = seg;
    segments.push_back(std::move(seg));
  }
  {
    absl::MutexLock l(&state->mu);
    state->segments = std::move(segments);
  }
  return out;
}

}  // namespace kf::wal::local

// AppendInterceptor and InterceptorChain: the steps the WAL adaptor runs around its sequencer
// for every append (docs/wal-internals.md). WalImpl wires one chain, in this order: the
// replicate rules (replicate_interceptor.h, docs/replication.md), the collection rules
// (collection_interceptor.h), the transaction manager (txn_interceptor.h), the
// broadcast and the `_ik` deduplication (idempotency_interceptor.h), the TimeTick logic
// (timetick_interceptor.h); later capabilities (e.g. a shard manager applying committed data to
// growing segments) join at its end.
//
// The hooks, in the order an append meets them:
//   Admit(run)                  appending thread, no lock, once per run of appends (a batch's
//                               run, or one), in chain order. May Reject an append or TakeOver
//                               its answer (a duplicate).
//   BeforeSequence(append, tt)  under the sequencer lock, per message and attempt, with the
//                               timetick it gets, in chain order. An error rejects the append.
//   AfterEnqueued(append)       under the sequencer lock, once the backend took the entry
//                               (`append.id` set), in chain order: state every later append
//                               must see (a DDL's effect, a Begin's id).
//   AfterDurable(append, msg)   on the backend's completion, per message in WAL order, once it
//                               is durable, in chain order. `msg` is the durable message when it
//                               was retained (a reader, or an interceptor with kNeedsMessages),
//                               else null (append.msg may be gone: read `msg`). A backend may
//                               complete an entry at once, before AfterEnqueued has run for it.
//   AfterAbandoned(append, why) the message BeforeSequence admitted will not be in the log (the
//                               backend refused it, a later interceptor rejected it) or may not
//                               be (it failed to become durable: the WAL is then broken). In
//                               reverse chain order, to the interceptors before the one that
//                               rejected.
//   Finish(appends)             the appends' outcome is final (`result`, OK or the error), just
//                               before their callbacks; once per run for those answered
//                               together. In reverse chain order, to the interceptors that
//                               admitted them (those before the one that stopped them in Admit).
// Pairs: every append an interceptor admits in Admit gets exactly one Finish; every attempt it
// admits in BeforeSequence gets exactly one AfterDurable or AfterAbandoned.
//
// Dispatch: each hook goes only to the interceptors that implement it (hooks()), and for an
// ordinary append (AppendContext::ordinary(): no txn role, not exclusive, not a TimeTick; what
// most traffic and every batch's run is) only to those that need it for one (ordinary_hooks()):
// an Insert passes the replicate and collection rules and the `_ik` table and nothing else
// (and, once durable, the replicate checkpoint's bookkeeping). A run is all
// ordinary or a run of one.
//
// Thread-safety: hooks run concurrently for different appends (Admit and BeforeSequence on
// appending threads, AfterDurable on the backend's completion, Finish on either), except that
// BeforeSequence and AfterEnqueued hold the sequencer lock; state touched only there may be
// guarded by it (Sequencer::mutex()). Hooks must be cheap: for an ordinary append they take no
// lock and allocate nothing per message (the `_ik` table's lock is taken once per run), and no
// hook calls into the WAL. The chain is built once, before any append, and never changes.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "common/hybrid_time.h"
#include "message/message.h"
#include "wal/append_context.h"

namespace kf::wal {

class AppendInterceptor {
 public:
  enum Hook : uint32_t {
    kAdmit = 1u << 0,
    kBeforeSequence = 1u << 1,
    kAfterEnqueued = 1u << 2,
    kAfterDurable = 1u << 3,
    kAfterAbandoned = 1u << 4,
    kFinish = 1u << 5,
    // AfterDurable needs every durable message, also when no reader tails the WAL.
    kNeedsMessages = 1u << 6,
  };

  virtual ~AppendInterceptor() = default;

  // The hooks this interceptor implements (a mask of Hook): the chain calls no other.
  virtual uint32_t hooks() const = 0;
  // Of those, the hooks an ordinary append needs (the chain skips the others for it).
  virtual uint32_t ordinary_hooks() const { return hooks(); }

  // `run`'s appends in request order; those not kAdmitting were stopped before this one: skip
  // them. Rejects with Reject(status), or answers a duplicate itself with TakeOver(cause), and
  // returns how many it stopped.
  virtual size_t Admit(std::span<AppendContext> /*run*/) { return 0; }
  virtual absl::Status BeforeSequence(AppendContext& /*append*/, TimeTick /*tt*/) {
    return absl::OkStatus();
  }
  virtual void AfterEnqueued(AppendContext& /*append*/) {}
  virtual void AfterDurable(AppendContext& /*append*/, const ImmutableMessagePtr& /*message*/) {}
  virtual void AfterAbandoned(AppendContext& /*append*/, const absl::Status& /*cause*/) {}
  virtual void Finish(std::span<AppendContext* const> /*appends*/) {}
};

// Runs the hooks of its interceptors, in the order they were added, each hook only on the
// interceptors that implement it. Borrows the interceptors.
class InterceptorChain {
 public:
  // Appends are handled in runs of up to this many without allocating.
  static constexpr size_t kInlineRun = 64;
  using Appends = absl::InlinedVector<AppendContext*, kInlineRun>;

  // Adds `interceptor` at the end of the chain (at most 254). Before any append.
  void Add(AppendInterceptor* interceptor);

  // Admit over `run`, whose appends are all kAdmitting; those stopped carry their stage (and
  // admit_stop) out, and are counted in the result. The caller finishes them (Finish) and
  // answers them.
  size_t Admit(std::span<AppendContext> run);
  // BeforeSequence for one attempt of `append`. An error stops at the interceptor that
  // returned it, after AfterAbandoned for those before it.
  absl::Status BeforeSequence(AppendContext& append, TimeTick tt);
  // The per-message hooks cost no call when nobody wants them (an ordinary append).
  void AfterEnqueued(AppendContext& append) {
    const Links& links = For(append).after_enqueued;
    if (!links.empty()) Dispatch(links, &AppendInterceptor::AfterEnqueued, append);
  }
  void AfterDurable(AppendContext& append, const ImmutableMessagePtr& message) {
    const Links& links = For(append).after_durable;
    if (!links.empty()) Dispatch(links, &AppendInterceptor::AfterDurable, append, message);
  }
  // For an attempt BeforeSequence admitted (to the interceptors before append.sequence_stop).
  void AfterAbandoned(AppendContext& append, const absl::Status& cause) {
    const Links& links = For(append).after_abandoned;
    if (!links.empty()) Abandon(links, append, cause);
  }
  // `all_admitted`: the caller knows every append passed every Admit hook (the backend took it).
  void Finish(std::span<AppendContext* const> appends, bool all_admitted = false);

  // Whether an interceptor needs every durable message (kNeedsMessages).
  bool needs_messages() const { return needs_messages_; }

 private:
  struct Link {
    AppendInterceptor* interceptor;
    uint8_t position;  // in the chain
  };
  using Links = std::vector<Link>;
  // Per hook, the interceptors to call, in chain order.
  struct Hooks {
    void Add(const Link& link, uint32_t hooks);
    Links admit, before_sequence, after_enqueued, after_durable, after_abandoned, finish;
  };
  const Hooks& For(const AppendContext& append) const {
    return append.ordinary() ? ordinary_ : all_;
  }
  template <typename Hook, typename... Args>
  static void Dispatch(const Links& links, Hook hook, AppendContext& append, const Args&... args) {
    for (const Link& link : links) (link.interceptor->*hook)(append, args...);
  }
  static void Abandon(const Links& links, AppendContext& append, const absl::Status& cause);
  // Finish when some of `appends` were stopped in Admit.
  static void FinishAdmitted(const Links& links, std::span<AppendContext* const> appends);

  uint8_t size_ = 0;
  bool needs_messages_ = false;
  Hooks all_, ordinary_;
};

}  // namespace kf::wal

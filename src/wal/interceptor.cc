#include "wal/interceptor.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "absl/base/optimization.h"

namespace kf::wal {

void InterceptorChain::Hooks::Add(const Link& link, uint32_t hooks) {
  if (hooks & AppendInterceptor::kAdmit) admit.push_back(link);
  if (hooks & AppendInterceptor::kBeforeSequence) before_sequence.push_back(link);
  if (hooks & AppendInterceptor::kAfterEnqueued) after_enqueued.push_back(link);
  if (hooks & AppendInterceptor::kAfterDurable) after_durable.push_back(link);
  if (hooks & AppendInterceptor::kAfterAbandoned) after_abandoned.push_back(link);
  if (hooks & AppendInterceptor::kFinish) finish.push_back(link);
}

void InterceptorChain::Add(AppendInterceptor* interceptor) {
  if (size_ == AppendContext::kPassed - 1) {
    std::fprintf(stderr, "FATAL: more than %d append interceptors\n", AppendContext::kPassed - 1);
    std::abort();
  }
  const Link link{interceptor, size_++};
  const uint32_t hooks = interceptor->hooks();
  all_.Add(link, hooks);
  ordinary_.Add(link, hooks & interceptor->ordinary_hooks());
  if (hooks & AppendInterceptor::kNeedsMessages) needs_messages_ = true;
}

size_t InterceptorChain::Admit(std::span<AppendContext> run) {
  if (run.empty()) return 0;
  size_t live = run.size(), stopped = 0;
  for (const Link& link : For(run.front()).admit) {
    const size_t now_stopped = link.interceptor->Admit(run);
    if (ABSL_PREDICT_TRUE(now_stopped == 0)) continue;
    // They leave the run here; the interceptors before this one finish them.
    for (AppendContext& a : run) {
      if (a.stage != AppendContext::Stage::kAdmitting && a.admit_stop == AppendContext::kPassed) {
        a.admit_stop = link.position;
      }
    }
    stopped += now_stopped;
    if (stopped == live) break;
  }
  return stopped;
}

absl::Status InterceptorChain::BeforeSequence(AppendContext& append, TimeTick tt) {
  append.sequence_stop = AppendContext::kPassed;
  for (const Link& link : For(append).before_sequence) {
    absl::Status admitted = link.interceptor->BeforeSequence(append, tt);
    if (ABSL_PREDICT_FALSE(!admitted.ok())) {
      append.sequence_stop = link.position;
      AfterAbandoned(append, admitted);
      return admitted;
    }
  }
  return absl::OkStatus();
}

void InterceptorChain::Abandon(const Links& links, AppendContext& append,
                               const absl::Status& cause) {
  for (auto it = links.rbegin(); it != links.rend(); ++it) {
    if (it->position < append.sequence_stop) it->interceptor->AfterAbandoned(append, cause);
  }
}

void InterceptorChain::Finish(std::span<AppendContext* const> appends, bool all_admitted) {
  if (appends.empty()) return;
  const Links& links = For(*appends.front()).finish;
  if (links.empty()) return;
  if (!all_admitted && !std::all_of(appends.begin(), appends.end(), [](const auto* a) {
        return a->admit_stop == AppendContext::kPassed;
      })) {
    return FinishAdmitted(links, appends);
  }
  for (auto it = links.rbegin(); it != links.rend(); ++it) it->interceptor->Finish(appends);
}

void InterceptorChain::FinishAdmitted(const Links& links, std::span<AppendContext* const> appends) {
  for (auto it = links.rbegin(); it != links.rend(); ++it) {
    Appends admitted;  // only what this interceptor admitted
    for (AppendContext* a : appends) {
      if (it->position < a->admit_stop) admitted.push_back(a);
    }
    if (!admitted.empty()) it->interceptor->Finish(admitted);
  }
}

}  // namespace kf::wal

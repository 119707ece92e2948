#include "logstore/service/logstore_server.h"

#include <pthread.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/backoff.h"
#include "common/listen_error.h"
#include "common/status_macros.h"
#include "format/segment_object.h"
#include "grpcpp/grpcpp.h"
#include "logstore/service/logstore_service.h"
#include "wire/credentials.h"

namespace kf::logstore {

absl::StatusOr<std::unique_ptr<LogStoreServer>> LogStoreServer::Start(
    LogStoreServerOptions options) {
  std::unique_ptr<LogStoreServer> s(new LogStoreServer());
  s->options_ = std::move(options);
  ASSIGN_OR_RETURN(s->store_,
                   SegmentStore::Open({.dir = s->options_.data_dir, .fs = s->options_.fs}));
  s->service_ = std::make_unique<LogStoreService>(s->store_.get());
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(s->options_.listen, wire::OrPlaintext(s->options_.credentials), &port);
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);  // common/listen_error.h
  builder.SetMaxReceiveMessageSize(static_cast<int>(s->options_.max_message_bytes));
  builder.SetMaxSendMessageSize(static_cast<int>(s->options_.max_message_bytes));
  builder.RegisterService(s->service_.get());
  s->server_ = builder.BuildAndStart();
  const std::string& listen = s->options_.listen;
  if (s->server_ == nullptr || port == 0) {
    int wanted = 0;
    (void)absl::SimpleAtoi(listen.substr(listen.rfind(':') + 1), &wanted);
    return ListenError("logstore", listen.substr(0, listen.rfind(':')), wanted);
  }
  s->address_ = absl::StrCat(listen.substr(0, listen.rfind(':')), ":", port);
  if (s->options_.object_store != nullptr) {
    s->uploader_ = std::jthread([raw = s.get()](std::stop_token stop) {
      pthread_setname_np(pthread_self(), "kf-ls-upload");
      raw->UploadLoop(stop);
    });
  }
  return s;
}

LogStoreServer::~LogStoreServer() { Shutdown(absl::ZeroDuration()); }

void LogStoreServer::Shutdown(absl::Duration grace) {
  absl::MutexLock l(&shutdown_mu_);
  if (shut_down_) return;
  shut_down_ = true;
  if (uploader_.joinable()) {
    uploader_.request_stop();
    uploader_.join();
  }
  if (server_ != nullptr) {
    server_->Shutdown(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(grace));
    server_->Wait();
  }
}

void LogStoreServer::UploadLoop(std::stop_token stop) {
  Backoff backoff(options_.upload_interval, absl::Seconds(30));
  while (SleepUnlessStopped(backoff.Next(), stop)) {
    if (UploadPending().ok()) backoff.Reset();
  }
}

absl::Status LogStoreServer::UploadPending() {
  if (options_.object_store == nullptr) return absl::OkStatus();
  absl::MutexLock l(&upload_mu_);
  absl::Status first;
  for (const auto& [key, end] : store_->PendingUploads()) {
    absl::Status s = UploadOne(key, end);
    if (!s.ok() && first.ok()) first = s;
  }
  return first;
}

absl::Status LogStoreServer::UploadOne(const SegmentKey& key, uint64_t end) {
  std::string object = format::BeginSegmentObject(end);
  uint64_t next = 0;
  while (next < end) {
    ASSIGN_OR_RETURN(auto r, store_->Read(key.log, key.segment, next, end, 1u << 20));
    if (r.entries.empty()) {
      return absl::InternalError(absl::StrCat("logstore: ", key.log, "/", key.segment,
                                              " has no entry ", next, " to upload"));
    }
    format::AppendSegmentBatch(&object, next, r.entries);
    next += r.entries.size();
  }
  const std::string object_key =
      format::SegmentObjectKey(options_.object_prefix, key.log, key.segment);
  // Every replica of the segment uploads the same entries; the first create wins.
  auto put = options_.object_store->Put(object_key, object, {.if_absent = true},
                                        absl::Now() + absl::Seconds(60));
  if (!put.ok() && !absl::IsAlreadyExists(put.status())) return put.status();
  return store_->MarkUploaded(key);
}

}  // namespace kf::logstore

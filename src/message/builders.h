// Constructors for the messages the client library and the coordinator produce. Each sets the
// type, the version, the vchannel and the type's payload/headers, nothing the WAL sets.
// Pure functions: thread-safe; no errors (inputs are trusted protos).
#pragma once

#include <cstdint>
#include <string>

#include "common/hybrid_time.h"
#include "common/strong_id.h"
#include "kingfisher/v1/message.pb.h"
#include "message/message.h"

namespace kf {

MutableMessage NewInsertMessage(std::string vchannel, const kingfisher::v1::InsertBatch& batch);
MutableMessage NewDeleteMessage(std::string vchannel, const kingfisher::v1::DeletePks& pks);
// Pchannel-level (no `_vc`), `_tt` set, empty payload.
MutableMessage NewTimeTickMessage(TimeTick t);
// `_tx` = {txn_id: 0 (assigned by the WAL), keepalive_ms}.
MutableMessage NewBeginTxnMessage(std::string vchannel, int64_t keepalive_ms);
// `_tx` = {txn_id}.
MutableMessage NewCommitTxnMessage(std::string vchannel, TxnId txn);
MutableMessage NewRollbackTxnMessage(std::string vchannel, TxnId txn);
MutableMessage NewCreateCollectionMessage(std::string vchannel,
                                          const kingfisher::v1::CollectionSchema& schema);
// Payload kingfisher.v1.DropCollection{collection_id}.
MutableMessage NewDropCollectionMessage(std::string vchannel, int64_t collection_id);
// A WAL-generated CreateSegment (docs/recovery-storage.md): payload
// kingfisher.v1.PartitionPayload{collection_id, partition} (the partition's name, "_default"
// included); the new segment's id is the message's timetick.
MutableMessage NewCreateSegmentMessage(std::string vchannel, int64_t collection_id,
                                       std::string partition);

}  // namespace kf

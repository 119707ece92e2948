#include "cli/render.h"

#include <cmath>

#include "cli/json_writer.h"

namespace kf::cli {
namespace {

void WriteConsumed(const kingfisher::ConsumedMessage& m, JsonWriter* w) {
  w->BeginObject();
  w->Key("message_id").String(m.id.ToText());
  w->Key("type").String(kingfisher::MessageTypeName(m.type));
  w->Key("timetick").String(std::to_string(m.timetick.value()));
  w->Key("vchannel").String(m.vchannel);
  w->Key("txn_id");
  if (auto txn = m.txn_id()) {
    w->String(std::to_string(txn->value()));
  } else {
    w->Null();
  }
  w->Key("rows");
  absl::StatusOr<kingfisher::Rows> rows = m.rows();  // an error for anything but an Insert
  if (rows.ok()) {
    w->Int(static_cast<int64_t>(rows->pks.size()));
  } else {
    w->Null();
  }
  w->Key("properties").BeginObject();
  for (const auto& [k, v] : m.properties) w->Key(k).String(v);
  w->EndObject();
  if (m.type == kingfisher::MessageType::kTxn) {
    w->Key("messages").BeginArray();
    for (const auto& inner : m.messages) WriteConsumed(inner, w);
    w->EndArray();
  }
  w->EndObject();
}

void WriteAckFields(const kingfisher::AppendResult& r, std::string_view vchannel, JsonWriter* w) {
  w->Key("message_id").String(r.id.ToText());
  w->Key("timetick").String(std::to_string(r.timetick.value()));
  w->Key("vchannel").String(vchannel);
  w->Key("txn_id");
  if (r.txn_id) {
    w->String(std::to_string(r.txn_id->value()));
  } else {
    w->Null();
  }
}

void OptionalPk(const int64_t* pk, JsonWriter* w) {
  if (pk == nullptr) {
    w->Null();
  } else {
    w->String(std::to_string(*pk));
  }
}

void WriteCollection(const kingfisher::CollectionInfo& c, JsonWriter* w) {
  w->BeginObject();
  w->Key("id").Int(c.id);
  w->Key("database").String(c.database);
  w->Key("name").String(c.name);
  w->Key("dim").Uint(c.dim);
  w->Key("metric").String(c.metric);
  w->Key("shards").Uint(c.shards);
  w->Key("vchannels").BeginArray();
  for (const auto& v : c.vchannels) w->String(v);
  w->EndArray();
  w->Key("state").String(c.state);
  w->Key("partitions").BeginArray();
  for (const auto& p : c.partitions) {
    w->BeginObject();
    w->Key("name").String(p.name);
    w->Key("state").String(p.state);
    w->EndObject();
  }
  w->EndArray();
  w->Key("create_time_ms").Int(c.create_time_ms);
  w->EndObject();
}

}  // namespace

std::string RenderAck(const kingfisher::AppendResult& r, std::string_view vchannel) {
  JsonWriter w;
  w.BeginObject();
  WriteAckFields(r, vchannel, &w);
  w.EndObject();
  return w.str();
}

std::string RenderRowsAck(const kingfisher::AppendResult& r, std::string_view vchannel,
                          const std::vector<int64_t>& pks) {
  JsonWriter w;
  w.BeginObject();
  WriteAckFields(r, vchannel, &w);
  w.Key("rows").Uint(pks.size());
  w.Key("first_pk");
  OptionalPk(pks.empty() ? nullptr : &pks.front(), &w);
  w.Key("last_pk");
  OptionalPk(pks.empty() ? nullptr : &pks.back(), &w);
  w.Key("pks");
  if (pks.size() <= kMaxListedPks) {
    w.BeginArray();
    for (int64_t pk : pks) w.String(std::to_string(pk));
    w.EndArray();
  } else {
    w.Null();
  }
  w.EndObject();
  return w.str();
}

std::string RenderSearchHits(size_t query, const std::vector<kingfisher::SearchHit>& hits,
                             kingfisher::TimeTick timestamp) {
  JsonWriter w;
  w.BeginObject();
  w.Key("query").Uint(query);
  w.Key("hits").BeginArray();
  for (const kingfisher::SearchHit& h : hits) {
    w.BeginObject();
    w.Key("pk").String(std::to_string(h.pk));
    w.Key("distance").Float(h.distance);
    w.EndObject();
  }
  w.EndArray();
  w.Key("timestamp").String(std::to_string(timestamp.value()));
  w.EndObject();
  return w.str();
}

std::string RenderRow(const kingfisher::Row& row, kingfisher::TimeTick timestamp) {
  JsonWriter w;
  w.BeginObject();
  w.Key("pk").String(std::to_string(row.pk));
  w.Key("vector").BeginArray();
  for (float x : row.vector) w.Float(x);
  w.EndArray();
  w.Key("timestamp").String(std::to_string(timestamp.value()));
  w.EndObject();
  return w.str();
}

std::string RenderConsumed(const kingfisher::ConsumedMessage& m) {
  JsonWriter w;
  WriteConsumed(m, &w);
  return w.str();
}

std::string RenderCollection(const kingfisher::CollectionInfo& c) {
  JsonWriter w;
  WriteCollection(c, &w);
  return w.str();
}

std::string RenderCollections(const std::vector<kingfisher::CollectionInfo>& cs) {
  JsonWriter w;
  w.BeginObject();
  w.Key("collections").BeginArray();
  for (const auto& c : cs) WriteCollection(c, &w);
  w.EndArray();
  w.EndObject();
  return w.str();
}

std::string RenderFlushed(std::string_view collection,
                          const std::vector<kingfisher::FlushedShard>& shards) {
  JsonWriter w;
  w.BeginObject();
  w.Key("collection").String(collection);
  w.Key("shards").BeginArray();
  for (const kingfisher::FlushedShard& f : shards) {
    w.BeginObject();
    w.Key("vchannel").String(f.vchannel);
    w.Key("flush_timetick").String(std::to_string(f.flush_timetick));
    w.Key("checkpoint_timetick").String(std::to_string(f.checkpoint_timetick));
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return w.str();
}

namespace {

// "data": what the answering server holds of a pchannel it serves.
void WriteData(const kingfisher::PChannelData& d, JsonWriter* w) {
  w->Key("data").BeginObject();
  w->Key("wal_bytes").Uint(d.wal_bytes);
  w->Key("tsafe").String(std::to_string(d.tsafe));
  w->Key("checkpoint_timetick").String(std::to_string(d.checkpoint_timetick));
  w->Key("checkpoint_lag_ms").Int(std::llround(d.checkpoint_lag_seconds * 1000));
  w->Key("checkpoint_lag_messages").Uint(d.checkpoint_lag_messages);
  w->Key("last_checkpoint_unix_ms").Int(d.last_checkpoint_unix_ms);
  w->Key("replay_from").String(d.replay_from);
  w->Key("truncated_below").String(d.truncated_below);
  if (!d.last_checkpoint_error.empty()) {
    w->Key("last_checkpoint_error").String(d.last_checkpoint_error);
  }
  w->Key("shards").BeginArray();
  for (const kingfisher::ShardStatus& s : d.shards) {
    w->BeginObject();
    w->Key("vchannel").String(s.vchannel);
    w->Key("collection_id").Int(s.collection_id);
    w->Key("rows").Uint(s.rows);
    w->Key("memory_bytes").Uint(s.memory_bytes);
    w->Key("sealed_segments").Uint(s.sealed_segments);
    w->Key("flushed_segments").Uint(s.flushed_segments);
    w->EndObject();
  }
  w->EndArray();
  w->EndObject();
}

}  // namespace

std::string RenderStatus(const kingfisher::ClusterStatus& s) {
  JsonWriter w;
  w.BeginObject();
  w.Key("nodes").BeginArray();
  for (const auto& n : s.nodes) {
    w.BeginObject();
    w.Key("id").Int(n.id);
    w.Key("address").String(n.address);
    w.Key("state").String(n.state);
    w.EndObject();
  }
  w.EndArray();
  w.Key("pchannels").BeginArray();
  for (const auto& p : s.pchannels) {
    w.BeginObject();
    w.Key("pchannel").String(p.pchannel);
    w.Key("node").Int(p.node);
    w.Key("term").Int(p.term);
    w.Key("state").String(p.state);
    if (p.data.has_value()) WriteData(*p.data, &w);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return w.str();
}

}  // namespace kf::cli

#include "cli/render.h"

#include "cli/json_writer.h"
#include "message/payload.h"

namespace kf::cli {
namespace {

void WriteConsumed(const kingfisher::ConsumedMessage& m, JsonWriter* w) {
  w->BeginObject();
  w->Key("message_id").String(m.id.ToText());
  w->Key("type").String(MessageTypeName(m.type));
  w->Key("timetick").String(std::to_string(m.timetick.value()));
  w->Key("vchannel").String(m.vchannel);
  w->Key("txn_id");
  if (auto txn = m.txn_id()) {
    w->String(std::to_string(txn->value()));
  } else {
    w->Null();
  }
  w->Key("rows");
  absl::StatusOr<kingfisher::v1::InsertBatch> batch =
      m.type == MessageType::kInsert ? DecodeInsertBatch(m.payload)
                                     : absl::StatusOr<kingfisher::v1::InsertBatch>(
                                           absl::InvalidArgumentError("not an insert"));
  if (batch.ok()) {
    w->Int(batch->pks_size());
  } else {
    w->Null();
  }
  w->Key("properties").BeginObject();
  for (const auto& [k, v] : m.properties) w->Key(k).String(v);
  w->EndObject();
  if (m.type == MessageType::kTxn) {
    w->Key("messages").BeginArray();
    for (const auto& inner : m.messages) WriteConsumed(inner, w);
    w->EndArray();
  }
  w->EndObject();
}

}  // namespace

std::string RenderAck(const kingfisher::AppendResult& r, std::string_view vchannel) {
  JsonWriter w;
  w.BeginObject();
  w.Key("message_id").String(r.id.ToText());
  w.Key("timetick").String(std::to_string(r.timetick.value()));
  w.Key("vchannel").String(vchannel);
  w.Key("txn_id");
  if (r.txn_id) {
    w.String(std::to_string(r.txn_id->value()));
  } else {
    w.Null();
  }
  w.EndObject();
  return w.str();
}

std::string RenderConsumed(const kingfisher::ConsumedMessage& m) {
  JsonWriter w;
  WriteConsumed(m, &w);
  return w.str();
}

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
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return w.str();
}

}  // namespace kf::cli

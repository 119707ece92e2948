#include "client/wire.h"

#include <string>

namespace kf::client {

void ToWire(const MutableMessage& m, kingfisher::v1::Message* out) {
  out->set_payload(m.payload());
  auto* props = out->mutable_properties();
  props->clear();
  for (const auto& [k, v] : m.properties()) (*props)[k] = v;
}

MutableMessage FromWire(const kingfisher::v1::Message& m) {
  MutableMessage out;
  *out.mutable_payload() = m.payload();
  for (const auto& [k, v] : m.properties()) out.SetProperty(k, v);
  return out;
}

}  // namespace kf::client

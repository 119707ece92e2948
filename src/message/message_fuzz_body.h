// The body of the message_fuzz libFuzzer target, shared with message_fuzz_test so that CI
// exercises it with GCC on hand-made nasty inputs.
//
// It drives every parser of untrusted bytes in this module (MutableMessage::Decode, MessageId
// Decode/FromText, the payload decoders, vchannel parsing) and checks their invariants:
// decode(encode(decode(x))) == decode(x), our codec agrees with protobuf on everything it
// accepts, accessors and validation never crash. A violated invariant aborts (the fuzzer
// reports it as a crash, the test dies). Thread-safe: no shared state.
#pragma once

#include <string_view>

namespace kf {

void RunMessageFuzzInput(std::string_view data);

}  // namespace kf

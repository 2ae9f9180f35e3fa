// The attributes a batch may hand to libnftnl: for each object kind, the
// element and each expression the encoder emits, which attribute ids libnftnl
// takes as plain data, with which value type and length (see attr-rules.cc for
// why each one). A batch naming anything else is refused before libnftnl sees
// it: libnftnl 1.2.4 asserts (exits the process) on a fixed-size attribute of
// the wrong length, copies fixed-size fields out of shorter buffers, and
// copies byte values into 64-byte fields without a bound.
#pragma once

#include <cstddef>
#include <cstdint>

#include "batch.h"

namespace knp {

struct AttrRule {
  uint16_t id;
  AttrType type;
  // Integers: ignored (the type fixes the length). Str: most bytes (no NUL).
  // Bytes: most bytes. StrArray: most bytes of the encoded array.
  uint32_t maxLen;
  // Ids (bits) that may not appear in the same attribute list: libnftnl
  // keeps them in one union, so the second would overwrite the first's
  // pointer, which libnftnl later frees or reads.
  uint64_t excludes = 0;
  // Netlink bytes per value byte beyond a plain attribute's (a concat
  // description turns each byte into a nested u32).
  uint8_t netlinkPerByte = 1;
};

struct AttrRules {
  const AttrRule* rules = nullptr;
  size_t count = 0;
  const char* what = "";  // for messages: "a table", "expression cmp"...

  // The rule for attribute `id`, or nullptr when it is not allowed here.
  const AttrRule* Find(uint16_t id) const {
    for (size_t i = 0; i < count; i++)
      if (rules[i].id == id) return &rules[i];
    return nullptr;
  }
};

// Attributes of a record's own list (an Elements record names its set with set attributes).
const AttrRules& ObjectAttrRules(ObjectKind kind);
const AttrRules& ElementAttrRules();
// Attributes of the expression `name`, or nullptr when the batch may not use it.
const AttrRules* ExpressionAttrRules(const uint8_t* name, size_t len);

// Upper bound of the netlink bytes one attribute becomes (header, nesting,
// NUL, padding); string arrays become one attribute per string.
inline size_t NetlinkAttrBound(const AttrRule& rule, uint32_t len) {
  if (rule.type == AttrType::StrArray) return 32 + size_t(len) * 4;
  return 24 + size_t(len) * rule.netlinkPerByte;
}

}  // namespace knp

// Reading one nf_tables table's own attributes (not its contents): whether it
// exists and its userdata, where our ownership mark lives. A GETTABLE request
// with libmnl; the whole-table listing (libnftnl-glue/list.h) would read every
// rule and element for what is one attribute.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace knp {

struct TableInfo {
  bool found = false;
  bool hasUserdata = false;
  std::vector<uint8_t> userdata;
  std::string error;  // empty on success (found or not)
  int errnum = 0;
};

void ReadTableInfo(const std::string& netnsPath, uint8_t family, const std::string& table, TableInfo* out);

}  // namespace knp

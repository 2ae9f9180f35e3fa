// Reads one table back from the kernel into a compact buffer for the JS side.
//
// Layout (integers little-endian):
//   header  u32 magic 'KNPL' (0x4c504e4b), u32 ruleset generation id
//   records u8 kind (ObjectKind), attrs, then for Rule: u16 expr count, each
//           { u8 name_len, name, attrs }; for Elements (one record per set,
//           attrs = the set's NFTNL_SET_NAME): u32 count, each { attrs }
//   end     u8 0
//   attrs   u16 count, each { u16 libnftnl attribute id, u8 type, u32 len, bytes }
// Values are libnftnl's raw attribute bytes (integers in host order, strings
// with their NUL), type Bytes, or StrArray for device lists.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace knp {

struct ListResult {
  bool found = false;
  std::vector<uint8_t> bytes;
  std::string error;
  int errorNumber = 0;
};

// Consistent against concurrent commits: the dump is retried while the
// ruleset generation changes underneath it.
// The elements of the sets named in `skipElements` are not read (their definitions are).
void ListTable(const std::string& netnsPath, uint32_t family, const std::string& table,
               const std::vector<std::string>& skipElements, ListResult* result);

// The ruleset generation id alone.
bool ReadGeneration(const std::string& netnsPath, uint32_t* generation, std::string* error, int* errorNumber);

}  // namespace knp

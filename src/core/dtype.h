// Data type and reduction-operator facts shared by the API checks, the
// planner, the kernels and the wire descriptors.
#pragma once

#include <cstddef>

#include "strata/strata.h"

namespace strata {

inline bool validDtype(int t) { return t >= 0 && t < strataNumTypes; }
inline bool validRedOp(int op) { return op >= 0 && op < strataNumOps; }

inline size_t dtypeSize(strataDataType_t t) {
  switch (t) {
    case strataInt8: case strataUint8: return 1;
    case strataFloat16: case strataBfloat16: return 2;
    case strataInt32: case strataUint32: case strataFloat32: return 4;
    case strataInt64: case strataUint64: case strataFloat64: return 8;
    default: return 0;
  }
}

inline const char* dtypeName(strataDataType_t t) {
  static const char* names[] = {"int8",  "uint8",   "int32",    "uint32",  "int64",
                                "uint64", "float16", "bfloat16", "float32", "float64"};
  return validDtype(t) ? names[t] : "invalid-dtype";
}

inline const char* redOpName(strataRedOp_t op) {
  static const char* names[] = {"sum", "prod", "max", "min", "avg"};
  return validRedOp(op) ? names[op] : "invalid-op";
}

}  // namespace strata

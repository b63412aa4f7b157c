// The group state of the calling thread (strataGroupStart/End, group.cc);
// requests themselves are in exec/request.h.
#pragma once

#include "exec/request.h"

namespace strata {

// Group state of the calling thread (strataGroupStart/End).
bool inGroup();
void enqueue(const Request& r);

}  // namespace strata

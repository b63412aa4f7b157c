// Runs a flat algorithm on a subset of ranks and on other buffers, as one
// stage of a hierarchical plan: the flat builder makes a plan for a team of
// `members.size()` ranks (its peers are team indices, its buffers kSend /
// kRecv / kScratch), and appendStage() copies its phases into the outer plan
// with peers mapped to global ranks and buffers rebound.
#pragma once

#include <vector>

#include "algo/plan.h"
#include "algo/ring_blocks.h"

namespace strata {

struct Rebind {
  Ref send;                // where the stage's kSend lives in the outer plan
  Ref recv;                // where its kRecv lives
  bool keepFinalize = false;  // whether the stage applies the operation's final step
};

using FlatBuilder = void (*)(const CollArgs&, Plan&);

// Builds `build` for this rank's place in `team` and appends it to `plan`.
// `args` gives count, root (a team index) and chunk; rank/nranks come from the team.
void appendStage(Plan& plan, FlatBuilder build, const Team& team, const CollArgs& args, const Rebind& bind);

// Reserves `bytes` of scratch for the outer plan; returns its Ref.
Ref reserveScratch(Plan& plan, size_t bytes);

}  // namespace strata

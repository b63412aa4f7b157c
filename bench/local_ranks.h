// Forks N local ranks of a benchmark, each bound to its own core (as
// mpirun binds) unless told otherwise, each with a communicator made from
// one unique id; returns the worst exit code.
#pragma once

#include <functional>

#include "strata/strata.h"

// body(rank, comm) runs in the child and returns its exit code.
int runLocalRanks(int nprocs, bool bind, const std::function<int(int rank, strataComm_t comm)>& body);

#include "bootstrap/slurm_rendezvous.h"

#include <cctype>
#include <cstdlib>

#include "core/error.h"

namespace strata {

std::string firstHostOfSlurmList(const std::string& hostlist) {
  // The first entry ends at a comma outside brackets.
  size_t end = 0;
  int depth = 0;
  for (; end < hostlist.size(); ++end) {
    char c = hostlist[end];
    if (c == '[') ++depth;
    else if (c == ']' && --depth < 0) return "";
    else if (c == ',' && depth == 0) break;
  }
  if (depth != 0) return "";
  const std::string entry = hostlist.substr(0, end);
  const size_t open = entry.find('[');
  if (open == std::string::npos) return entry;
  // "prefix[a-b,c]suffix": the first number of the range, zero padding kept.
  const size_t close = entry.find(']', open);
  size_t digits = open + 1;
  while (digits < close && std::isdigit(static_cast<unsigned char>(entry[digits]))) ++digits;
  if (open == 0 || digits == open + 1) return "";
  return entry.substr(0, open) + entry.substr(open + 1, digits - open - 1) + entry.substr(close + 1);
}

int slurmRendezvousPort(unsigned long long jobId, unsigned long long stepId) {
  return 17000 + int(jobId % 1000) * 15 + int(stepId % 15);
}

std::string slurmRendezvous(int rank) {
  const char* list = std::getenv("SLURM_STEP_NODELIST");
  if (!list) list = std::getenv("SLURM_JOB_NODELIST");
  const char* job = std::getenv("SLURM_JOB_ID");
  const char* step = std::getenv("SLURM_STEP_ID");
  if (!list || !job || !step) return "";
  const std::string host = firstHostOfSlurmList(list);
  if (host.empty())
    fail(strataInvalidUsage, "cannot read the first node of the Slurm node list '%s': set MASTER_ADDR and MASTER_PORT",
         list);
  const char* me = std::getenv("SLURMD_NODENAME");
  if (rank == 0 && me && host != me)
    fail(strataInvalidUsage,
         "under srun, rank 0 runs on %s, not on the step's first node %s (a task distribution other than block): "
         "set MASTER_ADDR to rank 0's host and MASTER_PORT",
         me, host.c_str());
  return host + ":" + std::to_string(slurmRendezvousPort(std::strtoull(job, nullptr, 10), std::strtoull(step, nullptr, 10)));
}

}  // namespace strata

// Where the ranks of an srun step meet when the user set no address
// (neither STRATA_COMM_ID nor MASTER_ADDR / MASTER_PORT): `srun -n 8
// strata-perf ...` works as it is. Every task derives the same answer from
// the step's variables alone: rank 0's node is the first of the step's node
// list (srun's default block distribution puts task 0 there), and the port
// comes from the job and step ids, so that two steps of one job, or two jobs
// sharing a node, do not meet at the same port.
#pragma once

#include <string>

namespace strata {

// The first host of a Slurm host list ("gpu[07-09,12],cpu1" -> "gpu07"), or ""
// when the text is not one.
std::string firstHostOfSlurmList(const std::string& hostlist);

// The rendezvous port of a job step: 17000 + (job % 1000) * 15 + step % 15,
// within 17000..31999 (below Linux's ephemeral ports, 32768 and up).
int slurmRendezvousPort(unsigned long long jobId, unsigned long long stepId);

// "host:port" for this step from SLURM_STEP_NODELIST (or SLURM_JOB_NODELIST),
// SLURM_JOB_ID and SLURM_STEP_ID; "" outside srun. Throws strataInvalidUsage
// when rank 0 (`rank`) finds itself on another node than the first listed
// (SLURMD_NODENAME), with a sentence saying to set MASTER_ADDR.
std::string slurmRendezvous(int rank);

}  // namespace strata

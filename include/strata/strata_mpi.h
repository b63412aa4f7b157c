/* strata_mpi.h: a strata communicator over the ranks of an MPI communicator.
 *
 *   MPI_Init(&argc, &argv);
 *   strataComm_t comm;
 *   strataCommInitMPI(&comm, MPI_COMM_WORLD);   // collective over the MPI communicator
 *
 * Rank 0 of `mpiComm` makes the unique id and broadcasts it with MPI_Bcast;
 * strata ranks are the MPI ranks. Header-only, so it compiles against
 * whichever MPI the application uses (Open MPI, MPICH, ...) and libstrata
 * itself does not depend on MPI. Every rank of `mpiComm` must call it. */
#ifndef STRATA_MPI_H
#define STRATA_MPI_H

#include <mpi.h>
#include <string.h>

#include "strata/strata.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Returns strataSystemError if MPI itself fails (under MPI's default error
 * handler it aborts first), and otherwise what strataGetUniqueId /
 * strataCommInitRank return, on every rank alike when rank 0 cannot make
 * the id. */
static inline strataResult_t strataCommInitMPI(strataComm_t* comm, MPI_Comm mpiComm) {
  int rank = 0, size = 0;
  if (comm == NULL) return strataInvalidArgument;
  *comm = NULL;
  if (MPI_Comm_rank(mpiComm, &rank) != MPI_SUCCESS || MPI_Comm_size(mpiComm, &size) != MPI_SUCCESS)
    return strataSystemError;
  /* Rank 0's result travels with the id, so a failure there fails every rank. */
  struct {
    int result;
    strataUniqueId id;
  } msg;
  memset(&msg, 0, sizeof(msg));
  if (rank == 0) msg.result = (int)strataGetUniqueId(&msg.id);
  if (MPI_Bcast(&msg, (int)sizeof(msg), MPI_BYTE, 0, mpiComm) != MPI_SUCCESS) return strataSystemError;
  if (msg.result != (int)strataSuccess) return (strataResult_t)msg.result;
  return strataCommInitRank(comm, size, msg.id, rank);
}

#ifdef __cplusplus
}
#endif

#endif /* STRATA_MPI_H */

/* strataCommInitMPI under mpirun: a communicator over MPI_COMM_WORLD and one
 * over each half of an MPI_Comm_split, each checked with an all-reduce of
 * random floats (a prime count) against a float64 sum of every rank's inputs,
 * which each rank regenerates from the ranks' seeds. Exit 0 on success. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "strata/strata_mpi.h"

#define COUNT 100003

static float input(int rank, int i) {
  unsigned x = (unsigned)(rank + 1) * 2654435761u ^ (unsigned)i * 40503u;
  x ^= x >> 13;
  x *= 0x5bd1e995u;
  x ^= x >> 15;
  return (float)(x % 2001) / 1000.0f - 1.0f; /* in [-1, 1], never all zero */
}

/* All-reduces over `mpiComm` through strata; returns the number of problems. */
static int check(MPI_Comm mpiComm, const char* what, int worldRank) {
  int rank, size, problems = 0, got = -1;
  MPI_Comm_rank(mpiComm, &rank);
  MPI_Comm_size(mpiComm, &size);
  strataComm_t comm;
  strataResult_t rc = strataCommInitMPI(&comm, mpiComm);
  if (rc != strataSuccess) {
    fprintf(stderr, "%s rank %d: strataCommInitMPI: %s\n", what, rank, strataGetLastError(NULL));
    return 1;
  }
  strataCommUserRank(comm, &got);
  if (got != rank) fprintf(stderr, "%s: strata rank %d != MPI rank %d\n", what, got, rank), ++problems;
  strataCommCount(comm, &got);
  if (got != size) fprintf(stderr, "%s: strata size %d != MPI size %d\n", what, got, size), ++problems;
  /* Members of this communicator, by world rank, so inputs can be regenerated. */
  int* members = malloc(sizeof(int) * (size_t)size);
  MPI_Allgather(&worldRank, 1, MPI_INT, members, 1, MPI_INT, mpiComm);
  float* in = malloc(sizeof(float) * COUNT);
  float* out = malloc(sizeof(float) * COUNT);
  for (int i = 0; i < COUNT; ++i) in[i] = input(worldRank, i);
  rc = strataAllReduce(in, out, COUNT, strataFloat32, strataSum, comm, NULL);
  if (rc != strataSuccess) {
    fprintf(stderr, "%s rank %d: all-reduce: %s\n", what, rank, strataGetLastError(comm));
    ++problems;
  } else {
    for (int i = 0; i < COUNT; ++i) {
      double ref = 0;
      for (int r = 0; r < size; ++r) ref += input(members[r], i);
      if (fabs(out[i] - ref) > 1e-5 * size) {
        if (problems++ < 3) fprintf(stderr, "%s rank %d: element %d is %g, expected %g\n", what, rank, i, out[i], ref);
      }
    }
  }
  strataCommDestroy(comm);
  free(members);
  free(in);
  free(out);
  return problems;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size, problems = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (strataCommInitMPI(NULL, MPI_COMM_WORLD) != strataInvalidArgument) {
    fprintf(stderr, "rank %d: a NULL communicator pointer was accepted\n", rank);
    ++problems;
  }
  problems += check(MPI_COMM_WORLD, "world", rank);
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
  problems += check(half, rank % 2 ? "odd ranks" : "even ranks", rank);
  MPI_Comm_free(&half);
  int total = 0;
  MPI_Allreduce(&problems, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("strataCommInitMPI on %d ranks: %d problems\n", size, total);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}

// mpi-perf: the Open MPI baseline with strata-perf's command line and table.
// Run with mpirun -np N (shared memory on one host; --mca btl tcp,self for TCP).
// Same sizes, definitions (algbw, busbw) and checking as strata-perf.
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "../perf_check.h"
#include "../perf_options.h"

namespace {

MPI_Datatype mpiType(strataDataType_t t) {
  switch (t) {
    case strataInt8: return MPI_INT8_T;
    case strataUint8: return MPI_UINT8_T;
    case strataInt32: return MPI_INT32_T;
    case strataUint32: return MPI_UINT32_T;
    case strataInt64: return MPI_INT64_T;
    case strataUint64: return MPI_UINT64_T;
    case strataFloat32: return MPI_FLOAT;
    case strataFloat64: return MPI_DOUBLE;
    default: return MPI_DATATYPE_NULL;
  }
}

MPI_Op mpiOp(strataRedOp_t op) {
  switch (op) {
    case strataSum: return MPI_SUM;
    case strataProd: return MPI_PROD;
    case strataMax: return MPI_MAX;
    case strataMin: return MPI_MIN;
    default: return MPI_OP_NULL;
  }
}

double busFactor(const std::string& c, int n) {
  if (c == "all_reduce") return 2.0 * (n - 1) / n;
  if (c == "reduce_scatter" || c == "all_gather" || c == "alltoall") return double(n - 1) / n;
  return 1.0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  PerfOptions o;
  if (!parsePerfOptions(argc, argv, &o)) {
    MPI_Finalize();
    return 2;
  }
  MPI_Datatype dt = mpiType(o.dtype);
  MPI_Op op = mpiOp(o.op);
  if (dt == MPI_DATATYPE_NULL || op == MPI_OP_NULL || o.collective == "sendrecv") {
    if (rank == 0)
      std::fprintf(stderr, "mpi-perf: %s / %s / %s is not available in MPI (no half/bfloat16 types, no avg op)\n",
                   o.collective.c_str(), dtypeLabel(o.dtype), opLabel(o.op));
    MPI_Finalize();
    return 2;
  }
  const std::string& c = o.collective;
  const size_t elem = elemBytes(o.dtype);
  bool blocked = c == "reduce_scatter" || c == "all_gather" || c == "alltoall";
  if (rank == 0) {
    std::printf("# mpi-perf %s: %d ranks, dtype %s, op %s, root %d, iters %d, warmup %d, check %d\n",
                c.c_str(), n, dtypeLabel(o.dtype), opLabel(o.op), o.root, o.iters, o.warmup, o.check);
    std::printf("# %12s %12s %8s %6s %5s %10s %8s %8s %7s\n", "size", "count", "type", "redop", "root",
                "time", "algbw", "busbw", "#wrong");
  }
  double busSum = 0;
  int rows = 0;
  for (size_t bytes = o.minBytes; bytes <= o.maxBytes;) {
    size_t count = bytes / elem / (blocked ? size_t(n) : 1);
    size_t total = blocked ? count * size_t(n) * elem : count * elem;
    size_t sendElems = (c == "reduce_scatter" || c == "alltoall") ? count * n : count;
    size_t recvElems = (c == "all_gather" || c == "alltoall") ? count * n : count;
    std::vector<char> send(sendElems * elem + 64), recv(recvElems * elem + 64);
    CheckSpec spec{c, o.dtype, o.op, rank, n, o.root, count};
    fillInput(spec, send.data(), sendElems);
    int ic = int(count);
    auto once = [&] {
      switch (o.coll) {
        case PerfColl::kAllReduce: MPI_Allreduce(send.data(), recv.data(), ic, dt, op, MPI_COMM_WORLD); break;
        case PerfColl::kReduceScatter:
          MPI_Reduce_scatter_block(send.data(), recv.data(), ic, dt, op, MPI_COMM_WORLD);
          break;
        case PerfColl::kAllGather: MPI_Allgather(send.data(), ic, dt, recv.data(), ic, dt, MPI_COMM_WORLD); break;
        case PerfColl::kBroadcast:
          if (rank == o.root) std::memcpy(recv.data(), send.data(), count * elem);
          MPI_Bcast(recv.data(), ic, dt, o.root, MPI_COMM_WORLD);
          break;
        case PerfColl::kReduce: MPI_Reduce(send.data(), recv.data(), ic, dt, op, o.root, MPI_COMM_WORLD); break;
        case PerfColl::kAllToAll: MPI_Alltoall(send.data(), ic, dt, recv.data(), ic, dt, MPI_COMM_WORLD); break;
        case PerfColl::kSendRecv: break;  // refused before the loop
      }
    };
    for (int i = 0; i < o.warmup; ++i) once();
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < o.iters; ++i) once();
    double us = (MPI_Wtime() - t0) * 1e6 / o.iters, slowest = 0;
    MPI_Allreduce(&us, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    long long wrong = 0, wrongAll = 0;
    for (int k = 0; k < o.check; ++k) {
      std::memset(recv.data(), 0, recv.size());
      once();
      wrong += (long long)countWrong(spec, recv.data());
    }
    MPI_Allreduce(&wrong, &wrongAll, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    double algbw = total / (slowest * 1e3), busbw = algbw * busFactor(c, n);
    busSum += busbw;
    ++rows;
    if (rank == 0)
      std::printf("  %12zu %12zu %8s %6s %5d %10.3f %8.3f %8.3f %7lld\n", total, count, dtypeLabel(o.dtype),
                  opLabel(o.op), o.root, slowest, algbw, busbw, o.check ? wrongAll : -1);
    size_t next = o.stepBytes ? bytes + o.stepBytes : size_t(double(bytes) * o.factor);
    bytes = next > bytes ? next : bytes + 1;
  }
  if (rank == 0) std::printf("# Avg bus bandwidth    : %.4f\n", rows ? busSum / rows : 0.0);
  MPI_Finalize();
  return 0;
}

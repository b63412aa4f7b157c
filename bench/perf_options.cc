#include "perf_options.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

const char* kDtypes[] = {"int8", "uint8", "int32", "uint32", "int64", "uint64",
                         "half", "bfloat16", "float", "double"};
const char* kOps[] = {"sum", "prod", "max", "min", "avg"};

void usage() {
  std::fprintf(stderr,
               "usage: strata-perf COLLECTIVE [-np N] [-b MIN] [-e MAX] [-f FACTOR] [-i STEP]\n"
               "                   [-n ITERS] [-w WARMUP] [-d DTYPE] [-o OP] [-r ROOT] [-c CHECK]\n"
               "                   [-J FILE] [-A ALGO,ALGO,... [-R ROUNDS] [-W CALLS]] [-G 0|1] [-M 0|1]\n"
               "  COLLECTIVE: all_reduce reduce_scatter all_gather broadcast reduce alltoall sendrecv\n"
               "  sizes accept K/M/G suffixes; DTYPE: int8 uint8 int32 uint32 int64 uint64 half\n"
               "  bfloat16 float double (or float32/float16/float64); OP: sum prod max min avg\n"
               "  -np N forks N local ranks; without it ranks come from mpirun (strataCommInitMPI),\n"
               "  or torchrun / srun (strataCommInitFromEnv).\n"
               "  -A compares algorithms (STRATA_ALGO names, auto = the cost model) in one launch:\n"
               "  a communicator each, ROUNDS alternating rounds per size (default 5), out-of-place,\n"
               "  median time per algorithm; -W CALLS: untimed calls before each round (default 0).\n"
               "  -G 1: buffers in CUDA device memory (device = local rank modulo the GPUs), each call\n"
               "  enqueued on a stream, the stream synchronised after the timed calls (as nccl-tests).\n"
               "  -M 1: host buffers from strataMemAlloc (ranks of a host read each other's in place).\n");
}

bool parseDtype(const char* s, strataDataType_t* out) {
  for (int i = 0; i < strataNumTypes; ++i)
    if (!std::strcmp(s, kDtypes[i])) return *out = strataDataType_t(i), true;
  if (!std::strcmp(s, "float32")) return *out = strataFloat32, true;
  if (!std::strcmp(s, "float16")) return *out = strataFloat16, true;
  if (!std::strcmp(s, "float64")) return *out = strataFloat64, true;
  if (!std::strcmp(s, "bf16")) return *out = strataBfloat16, true;
  return false;
}

}  // namespace

const char* dtypeLabel(strataDataType_t t) { return kDtypes[t]; }
const char* opLabel(strataRedOp_t op) { return kOps[op]; }
size_t elemBytes(strataDataType_t t) {
  static const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8};
  return sizes[t];
}

size_t parseSize(const std::string& text) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || v < 0) return 0;
  double mult = 1;
  if (*end == 'K' || *end == 'k') mult = 1024, ++end;
  else if (*end == 'M' || *end == 'm') mult = 1024.0 * 1024, ++end;
  else if (*end == 'G' || *end == 'g') mult = 1024.0 * 1024 * 1024, ++end;
  if (*end == 'B' || *end == 'b') ++end;
  if (*end != '\0') return 0;
  return size_t(v * mult);
}

bool parsePerfOptions(int argc, char** argv, PerfOptions* o) {
  if (argc < 2 || argv[1][0] == '-') {
    usage();
    return false;
  }
  o->collective = argv[1];
  static const char* known[] = {"all_reduce", "reduce_scatter", "all_gather", "broadcast",
                                "reduce", "alltoall", "sendrecv"};  // in PerfColl's order
  bool ok = false;
  for (size_t k = 0; k < sizeof(known) / sizeof(known[0]); ++k)
    if (o->collective == known[k]) {
      o->coll = PerfColl(k);
      ok = true;
    }
  if (!ok) {
    std::fprintf(stderr, "strata-perf: unknown collective '%s'\n", argv[1]);
    usage();
    return false;
  }
  for (int i = 2; i < argc; ++i) {
    std::string flag = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "strata-perf: %s needs a value\n", flag.c_str());
      return false;
    }
    const char* v = argv[++i];
    if (flag == "-np") o->nprocs = std::atoi(v);
    else if (flag == "-b") o->minBytes = parseSize(v);
    else if (flag == "-e") o->maxBytes = parseSize(v);
    else if (flag == "-f") o->factor = std::atof(v);
    else if (flag == "-i") o->stepBytes = parseSize(v);
    else if (flag == "-n") o->iters = std::atoi(v);
    else if (flag == "-w") o->warmup = std::atoi(v);
    else if (flag == "-r") o->root = std::atoi(v);
    else if (flag == "-c") o->check = std::atoi(v);
    else if (flag == "-J") o->jsonPath = v;
    else if (flag == "-R") o->rounds = std::atoi(v);
    else if (flag == "-W") o->roundWarmup = std::atoi(v);
    else if (flag == "-G") o->gpu = std::atoi(v);
    else if (flag == "-M") o->mapped = std::atoi(v);
    else if (flag == "-A") {
      std::string list = v;
      for (size_t at = 0; at <= list.size();) {
        size_t comma = list.find(',', at);
        if (comma == std::string::npos) comma = list.size();
        if (comma > at) o->algorithms.push_back(list.substr(at, comma - at));
        at = comma + 1;
      }
    }
    else if (flag == "-d") {
      if (!parseDtype(v, &o->dtype)) {
        std::fprintf(stderr, "strata-perf: unknown dtype '%s'\n", v);
        return false;
      }
    } else if (flag == "-o") {
      bool found = false;
      for (int k = 0; k < strataNumOps; ++k)
        if (!std::strcmp(v, kOps[k])) o->op = strataRedOp_t(k), found = true;
      if (!found) {
        std::fprintf(stderr, "strata-perf: unknown op '%s'\n", v);
        return false;
      }
    } else {
      std::fprintf(stderr, "strata-perf: unknown flag %s\n", flag.c_str());
      usage();
      return false;
    }
  }
  if (o->maxBytes < o->minBytes || o->iters < 1 || o->warmup < 0 || o->roundWarmup < 0 ||
      (o->factor <= 1 && o->stepBytes == 0) || o->rounds < 1) {
    std::fprintf(stderr, "strata-perf: need -b <= -e, -n >= 1, -w >= 0, -W >= 0, -R >= 1 and -f > 1 (or -i > 0)\n");
    return false;
  }
  return true;
}

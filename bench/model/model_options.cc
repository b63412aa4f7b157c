#include "model_options.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "algo/select.h"
#include "core/config.h"
#include "core/error.h"
#include "core/link_probe.h"

namespace strata {

namespace {

[[noreturn]] void die(const char* tool, const char* usage, const std::string& sentence) {
  std::fprintf(stderr, "%s: %s\n%s", tool, sentence.c_str(), usage);
  std::exit(2);
}

long parsePositive(const char* text, const char* tool, const char* usage, const std::string& flag) {
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || errno != 0 || v <= 0)
    die(tool, usage, format("%s takes a positive whole number, got '%s'", flag.c_str(), text));
  return v;
}

}  // namespace

std::vector<std::string> splitComma(const std::string& s) {
  std::vector<std::string> out;
  size_t at = 0;
  for (;;) {
    size_t c = s.find(',', at);
    out.push_back(s.substr(at, c == std::string::npos ? std::string::npos : c - at));
    if (c == std::string::npos) return out;
    at = c + 1;
  }
}

size_t parseSizeFlag(const char* text, const char* tool, const char* flag) {
  char* end = nullptr;
  double v = std::strtod(text, &end);
  if (end == text || v < 0) die(tool, "", format("%s takes a size such as 8, 64K or 1M, got '%s'", flag, text));
  switch (*end) {
    case 'K': case 'k': v *= 1024; ++end; break;
    case 'M': case 'm': v *= 1024 * 1024; ++end; break;
    case 'G': case 'g': v *= 1024.0 * 1024 * 1024; ++end; break;
    default: break;
  }
  if (*end == 'B' || *end == 'b') ++end;
  if (*end != '\0') die(tool, "", format("%s takes a size such as 8, 64K or 1M, got '%s'", flag, text));
  return size_t(v);
}

bool collFromName(const std::string& n, Coll* out) {
  struct Name { const char* name; Coll coll; };
  static const Name kNames[] = {{"all_reduce", Coll::kAllReduce}, {"reduce_scatter", Coll::kReduceScatter},
                                {"all_gather", Coll::kAllGather},  {"broadcast", Coll::kBroadcast},
                                {"reduce", Coll::kReduce},          {"alltoall", Coll::kAllToAll}};
  for (const Name& k : kNames)
    if (n == k.name) {
      *out = k.coll;
      return true;
    }
  return false;
}

void parseModelOptions(int argc, char** argv, const char* tool, const char* usage, ModelOptions& o,
                       const ExtraFlag& extra) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) die(tool, usage, format("%s needs a value", a.c_str()));
      return argv[++i];
    };
    try {
      if (a == "--coll") o.coll = next();
      else if (a == "--nodes") {
        o.nodes.clear();
        for (const std::string& tok : splitComma(next()))
          o.nodes.push_back(int(parsePositive(tok.c_str(), tool, usage, "--nodes")));
      } else if (a == "--per-node") o.perNode = int(parsePositive(next(), tool, usage, a));
      else if (a == "--intra") o.intra = parseLinkParams(next(), "--intra");
      else if (a == "--inter") {
        const int rails = o.inter.rails;  // --rails may come first
        o.inter = parseLinkParams(next(), "--inter");
        o.inter.rails = rails;
      } else if (a == "--rails") o.inter.rails = int(parsePositive(next(), tool, usage, a));
      else if (a == "--memory") {
        const char* v = next();
        o.memoryGbps = std::atof(v);
        if (!(o.memoryGbps > 0)) die(tool, usage, format("--memory takes GB/s above zero, got '%s'", v));
      } else if (a == "-b") o.minBytes = parseSizeFlag(next(), tool, "-b");
      else if (a == "-e") o.maxBytes = parseSizeFlag(next(), tool, "-e");
      else if (a == "-f") o.factor = size_t(parsePositive(next(), tool, usage, a));
      else if (a == "--chunk") o.chunk = parseSizeFlag(next(), tool, "--chunk");
      else if (a == "--topo") o.topoFile = next();
      else if (a == "--json") o.json = true;
      else if (extra && extra(a, next)) continue;
      else if (!a.empty() && a[0] != '-') o.coll = a;
      else die(tool, usage, format("unknown flag '%s'", a.c_str()));
    } catch (const Error& e) {
      die(tool, usage, e.what());
    }
  }
  Coll c;
  if (!collFromName(o.coll, &c))
    die(tool, usage, format("unknown collective '%s' (all_reduce, reduce_scatter, all_gather, broadcast, reduce, "
                            "alltoall)", o.coll.c_str()));
  if (o.factor < 2) o.factor = 2;
  if (o.minBytes > o.maxBytes) die(tool, usage, "-b is larger than -e");
  if (o.chunk == 0) die(tool, usage, "--chunk must be above zero");
  // As a run takes STRATA_CHUNK_BYTES: at most half of what a link buffers.
  o.chunk = pipelineSliceBytes(o.chunk, linkCapacityOf(Config{}));
}

Topology makeCluster(int nodes, int perNode, const ModelOptions& o) {
  std::vector<long long> ids;
  for (int m = 0; m < nodes; ++m)
    for (int i = 0; i < perNode; ++i) ids.push_back(m);
  Topology t = Topology::fromNodeIds(ids);
  t.intra = o.intra;
  t.inter = o.inter;
  t.memoryGbps = o.memoryGbps;
  t.linkBufferBytes = linkCapacityOf(Config{});  // as a run with the default settings has them
  return t;
}

}  // namespace strata

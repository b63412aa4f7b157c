// Column runs (teams.h): a column's ranks split into arithmetic progressions.
#include "algo/hierarchical/teams.h"

namespace strata {

std::vector<ColumnRun> columnRuns(const Topology& t) {
  std::vector<ColumnRun> out;
  const int columns = t.maxLocal();  // (a walk over the nodes)
  for (int j = 0; j < columns; ++j) {
    const std::vector<int> ranks = columnRanks(t, j);
    for (size_t i = 0; i < ranks.size();) {
      ColumnRun run;
      run.column = j;
      run.first = i;
      run.rank0 = ranks[i];
      size_t k = i + 1;
      if (k < ranks.size() && ranks[k] > ranks[i]) {
        run.rankStride = ranks[k] - ranks[i];
        while (k < ranks.size() && ranks[k] == ranks[i] + int(k - i) * run.rankStride) ++k;
      }
      run.count = k - i;
      out.push_back(run);
      i = k;
    }
  }
  return out;
}

}  // namespace strata

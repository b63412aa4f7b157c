// All-reduce of a sparse COO tensor, with gloo's semantics: every rank ends
// with the coalesced sum of all ranks' tensors, identical everywhere. Each
// rank coalesces its tensor, the ranks all-gather how many entries each has
// (with a check that the tensors agree in shape and dtype), then their
// indices and values padded to the largest count; every rank concatenates
// the entries in rank order and coalesces them, which sums duplicates in the
// same order on every rank.
#include <c10/util/Exception.h>

#include <functional>
#include <string>
#include <vector>

#include "backend.h"

namespace strata_torch {

namespace {

// What the ranks' tensors must agree on, folded into one number.
int64_t layoutKey(const at::Tensor& t) {
  size_t h = std::hash<int>()(int(t.scalar_type())) ^ (size_t(t.sparse_dim()) << 8);
  for (int64_t d : t.sizes()) h = h * 1000003u ^ std::hash<int64_t>()(d);
  return int64_t(h & 0x7fffffffffffffffull);
}

}  // namespace

OpSteps StrataBackend::sparseAllReduceSteps(const at::Tensor& t) {
  const strataDataType_t dtype = strataTypeOf(t.scalar_type(), "allreduce (sparse)");
  return OpSteps{nullptr, [=, this]() mutable {
                   at::Tensor mine = t.coalesce();
                   const int64_t sparseDim = mine.sparse_dim(), nnz = mine._nnz();
                   const auto i64 = at::TensorOptions().dtype(at::kLong);
                   at::Tensor header = at::tensor({nnz, layoutKey(mine)}, i64);
                   at::Tensor headers = at::empty({size_, 2}, i64);
                   check(strataAllGather(header.data_ptr(), headers.data_ptr(), 2, strataInt64, comm_, stream_),
                         "strataAllGather");
                   int64_t most = 0;
                   for (int r = 0; r < size_; ++r) {
                     TORCH_CHECK(headers[r][1].item<int64_t>() == header[1].item<int64_t>(),
                                 "strata allreduce (sparse): rank ", r, "'s tensor differs from rank ", rank_,
                                 "'s in size, sparse dimensions or dtype (", mine.sizes(), ", ", mine.scalar_type(),
                                 " here)");
                     most = std::max(most, headers[r][0].item<int64_t>());
                   }
                   at::Tensor values = mine._values().contiguous();
                   std::vector<int64_t> valueShape = values.sizes().vec();
                   valueShape[0] = most;
                   at::Tensor myIndices = at::zeros({sparseDim, most}, i64);
                   at::Tensor myValues = at::zeros(valueShape, values.options());
                   if (nnz) {
                     myIndices.narrow(1, 0, nnz).copy_(mine._indices());
                     myValues.narrow(0, 0, nnz).copy_(values);
                   }
                   at::Tensor allIndices = at::empty({size_, sparseDim, most}, i64);
                   std::vector<int64_t> allShape{size_};
                   allShape.insert(allShape.end(), valueShape.begin(), valueShape.end());
                   at::Tensor allValues = at::empty(allShape, values.options());
                   check(strataAllGather(myIndices.data_ptr(), allIndices.data_ptr(), size_t(myIndices.numel()),
                                         strataInt64, comm_, stream_),
                         "strataAllGather");
                   check(strataAllGather(myValues.data_ptr(), allValues.data_ptr(), size_t(myValues.numel()), dtype,
                                         comm_, stream_),
                         "strataAllGather");
                   std::vector<at::Tensor> indexParts, valueParts;
                   for (int r = 0; r < size_; ++r) {
                     const int64_t n = headers[r][0].item<int64_t>();
                     indexParts.push_back(allIndices[r].narrow(1, 0, n));
                     valueParts.push_back(allValues[r].narrow(0, 0, n));
                   }
                   at::Tensor sum = at::sparse_coo_tensor(at::cat(indexParts, 1), at::cat(valueParts, 0),
                                                          mine.sizes(), mine.options())
                                        .coalesce();
                   t.copy_(sum);
                 },
                 nullptr};
}

}  // namespace strata_torch

// Turning torch's arguments into strata's: dtypes, reduction operators,
// and tensors that strata can read and write as one contiguous buffer.
#pragma once

#include <ATen/ATen.h>
#include <strata/strata.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include <vector>

namespace strata_torch {

// strata's dtype for a torch dtype; bool travels as uint8. Raises for the others.
strataDataType_t strataTypeOf(at::ScalarType type, const char* method);

// A torch ReduceOp as strata performs it: bool SUM is MAX (logical or), bool
// PRODUCT is MIN (logical and); PREMUL_SUM multiplies the input by its factor
// first, then sums.
struct Reduction {
  strataRedOp_t op = strataSum;
  bool premultiply = false;
  double factor = 1.0;
  at::Tensor tensorFactor;  // defined when the factor is a tensor

  // The input, scaled by the factor when premultiplying (a new tensor).
  at::Tensor scaled(const at::Tensor& input) const;
};
Reduction reductionOf(const c10d::ReduceOp& op, at::ScalarType type, const char* method);

// Raises unless the tensor is a dense CPU or CUDA tensor.
void checkTensor(const at::Tensor& t, const char* method);
// Raises unless exactly one tensor was given; returns it, checked.
at::Tensor singleTensor(const std::vector<at::Tensor>& tensors, const char* method);
// Raises unless every tensor has the dtype and number of elements of the first.
void checkSameShape(const std::vector<at::Tensor>& tensors, const at::Tensor& like, const char* method,
                    const char* what);

// A tensor as a contiguous buffer: the tensor itself when contiguous, else a
// contiguous copy that writeBack() copies into the tensor after the operation.
struct Staged {
  at::Tensor user;
  at::Tensor buffer;

  explicit Staged(const at::Tensor& t) : user(t), buffer(t.is_contiguous() ? t : t.contiguous()) {}
  void* data() const { return buffer.data_ptr(); }
  size_t count() const { return size_t(buffer.numel()); }
  void writeBack() const {
    if (!buffer.is_same(user)) user.copy_(buffer);
  }
};

}  // namespace strata_torch

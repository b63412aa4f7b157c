#include "tensor_args.h"

#include <c10/util/Exception.h>

namespace strata_torch {

strataDataType_t strataTypeOf(at::ScalarType type, const char* method) {
  switch (type) {
    case at::kFloat: return strataFloat32;
    case at::kDouble: return strataFloat64;
    case at::kHalf: return strataFloat16;
    case at::kBFloat16: return strataBfloat16;
    case at::kChar: return strataInt8;
    case at::kByte: return strataUint8;
    case at::kBool: return strataUint8;
    case at::kInt: return strataInt32;
    case at::kLong: return strataInt64;
    case at::kUInt32: return strataUint32;
    case at::kUInt64: return strataUint64;
    default:
      TORCH_CHECK_TYPE(false, "strata ", method, ": tensors of dtype ", type,
                       " are not supported (float32, float16, bfloat16, float64, int8, uint8, int32, "
                       "int64, uint32, uint64 and bool are)");
  }
}

at::Tensor Reduction::scaled(const at::Tensor& input) const {
  if (tensorFactor.defined()) return input * tensorFactor.to(input.device(), input.scalar_type());
  return input * factor;
}

Reduction reductionOf(const c10d::ReduceOp& op, at::ScalarType type, const char* method) {
  const bool isBool = type == at::kBool;
  Reduction r;
  switch (op.op_) {
    case c10d::ReduceOp::SUM: r.op = isBool ? strataMax : strataSum; break;
    case c10d::ReduceOp::PRODUCT: r.op = isBool ? strataMin : strataProd; break;
    case c10d::ReduceOp::MIN: r.op = strataMin; break;
    case c10d::ReduceOp::MAX: r.op = strataMax; break;
    case c10d::ReduceOp::AVG:
      TORCH_CHECK_VALUE(!isBool, "strata ", method, ": ReduceOp.AVG is not defined for bool tensors");
      r.op = strataAvg;
      break;
    case c10d::ReduceOp::PREMUL_SUM: {
      TORCH_CHECK_VALUE(at::isFloatingType(type), "strata ", method,
                        ": PREMUL_SUM needs a floating-point tensor, got ", type);
      auto supplement = c10::dynamic_intrusive_pointer_cast<c10d::NCCLPreMulSumSupplement>(op.supplement_);
      TORCH_CHECK_VALUE(supplement, "strata ", method, ": PREMUL_SUM came without its factor");
      r.op = strataSum;
      r.premultiply = true;
      r.factor = supplement->double_factor;
      if (supplement->tensor_factor.defined()) r.tensorFactor = supplement->tensor_factor;
      break;
    }
    default:
      TORCH_CHECK_VALUE(false, "strata ", method,
                        ": this ReduceOp is not supported (SUM, PRODUCT, MIN, MAX, AVG and PREMUL_SUM are)");
  }
  return r;
}

void checkTensor(const at::Tensor& t, const char* method) {
  TORCH_CHECK_VALUE(t.defined(), "strata ", method, ": a tensor argument is undefined");
  TORCH_CHECK_VALUE(t.layout() == at::kStrided, "strata ", method, ": only dense tensors are supported, got ",
                    t.layout());
  TORCH_CHECK_VALUE(t.device().is_cpu() || t.device().is_cuda(), "strata ", method, ": tensors on ", t.device(),
                    " are not supported; strata takes CPU and CUDA tensors");
}

at::Tensor singleTensor(const std::vector<at::Tensor>& tensors, const char* method) {
  TORCH_CHECK_VALUE(tensors.size() == 1, "strata ", method, " takes exactly one tensor per call, got ",
                    tensors.size());
  checkTensor(tensors[0], method);
  return tensors[0];
}

void checkSameShape(const std::vector<at::Tensor>& tensors, const at::Tensor& like, const char* method,
                    const char* what) {
  for (const at::Tensor& t : tensors) {
    checkTensor(t, method);
    TORCH_CHECK_VALUE(t.scalar_type() == like.scalar_type(), "strata ", method, ": ", what, " has dtype ",
                      t.scalar_type(), " but the input has ", like.scalar_type());
    TORCH_CHECK_VALUE(t.numel() == like.numel(), "strata ", method, ": ", what, " has ", t.numel(),
                      " elements but the input has ", like.numel());
  }
}

}  // namespace strata_torch

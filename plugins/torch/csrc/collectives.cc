// StrataBackend's collectives and point-to-point operations: each checks its
// arguments here, on the caller's thread, and describes the operation as
// OpSteps (pack, strata calls, unpack) for the worker. Gather, scatter and
// the all-to-alls with lists or uneven splits are strata send/receive groups.
#include <c10/util/Exception.h>

#include "backend.h"

namespace strata_torch {

using c10d::OpType;
using c10d::Work;

namespace {

int64_t totalElements(const std::vector<at::Tensor>& ts) {
  int64_t n = 0;
  for (const at::Tensor& t : ts) n += t.numel();
  return n;
}

// One flat contiguous tensor holding `parts` end to end, and copies back.
at::Tensor packed(const std::vector<at::Tensor>& parts) {
  std::vector<at::Tensor> flat;
  for (const at::Tensor& t : parts) flat.push_back(t.reshape({-1}));
  return at::cat(flat);
}

void unpack(const at::Tensor& flat, const std::vector<at::Tensor>& parts) {
  int64_t offset = 0;
  for (const at::Tensor& t : parts) {
    t.copy_(flat.narrow(0, offset, t.numel()).view(t.sizes()));
    offset += t.numel();
  }
}

}  // namespace

c10::intrusive_ptr<Work> StrataBackend::broadcast(std::vector<at::Tensor>& tensors,
                                                  const c10d::BroadcastOptions& opts) {
  DeviceCall call(streams_, tensors, "broadcast");
  at::Tensor t = singleTensor(tensors, "broadcast");
  checkPeer(int(opts.rootRank), "broadcast", "root");
  auto dtype = strataTypeOf(t.scalar_type(), "broadcast");
  Staged s(t);
  int root = int(opts.rootRank);
  return submit(OpType::BROADCAST, {t}, {t},
                {OpSteps{nullptr,
                         [=, this] { check(strataBroadcast(s.data(), s.data(), s.count(), dtype, root, comm_, stream_),
                                     "strataBroadcast"); },
                         [=, this] { s.writeBack(); }}}, callerWaits(opts, 0), call);
}

OpSteps StrataBackend::allReduceSteps(const at::Tensor& t, const Reduction& r, strataDataType_t dtype) {
  Staged s(t);
  return OpSteps{[=, this] {
                   if (r.premultiply) s.buffer.copy_(r.scaled(s.buffer));
                 },
                 [=, this] { check(strataAllReduce(s.data(), s.data(), s.count(), dtype, r.op, comm_, stream_),
                             "strataAllReduce"); },
                 [=, this] { s.writeBack(); }};
}

c10::intrusive_ptr<Work> StrataBackend::allreduce(std::vector<at::Tensor>& tensors,
                                                  const c10d::AllreduceOptions& opts) {
  if (tensors.size() == 1 && tensors[0].defined() && tensors[0].layout() == at::kSparse) {
    TORCH_CHECK_VALUE(tensors[0].device().is_cpu(), "strata allreduce: sparse tensors must be on the CPU, got ",
                      tensors[0].device());
    TORCH_CHECK_VALUE(opts.reduceOp == c10d::ReduceOp::SUM,
                      "strata allreduce: sparse tensors are reduced by SUM only (as gloo does)");
    DeviceCall call(streams_, {}, "allreduce");
    return submit(OpType::ALLREDUCE, {tensors[0]}, {tensors[0]}, {sparseAllReduceSteps(tensors[0])}, callerWaits(opts, 0), call);
  }
  DeviceCall call(streams_, tensors, "allreduce");
  at::Tensor t = singleTensor(tensors, "allreduce");
  TORCH_CHECK_VALUE(!opts.sparseIndices.has_value(), "strata allreduce: sparse tensors are not supported");
  auto dtype = strataTypeOf(t.scalar_type(), "allreduce");
  Reduction r = reductionOf(opts.reduceOp, t.scalar_type(), "allreduce");
  return submit(OpType::ALLREDUCE, {t}, {t}, {allReduceSteps(t, r, dtype)}, callerWaits(opts, 0), call);
}

c10::intrusive_ptr<Work> StrataBackend::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                            const c10d::AllreduceCoalescedOptions& opts) {
  DeviceCall call(streams_, tensors, "allreduce_coalesced");
  TORCH_CHECK_VALUE(!tensors.empty(), "strata allreduce_coalesced: no tensors given");
  for (const at::Tensor& t : tensors) {
    checkTensor(t, "allreduce_coalesced");
    TORCH_CHECK_VALUE(t.scalar_type() == tensors[0].scalar_type(),
                      "strata allreduce_coalesced: all tensors must have one dtype, got ", tensors[0].scalar_type(),
                      " and ", t.scalar_type());
  }
  auto dtype = strataTypeOf(tensors[0].scalar_type(), "allreduce_coalesced");
  Reduction r = reductionOf(opts.reduceOp, tensors[0].scalar_type(), "allreduce_coalesced");
  // One strataAllReduce per tensor in one group: strata fuses them into one
  // collective over the tensors where they lie (src/fusion).
  std::vector<OpSteps> ops;
  for (const at::Tensor& t : tensors) ops.push_back(allReduceSteps(t, r, dtype));
  return submit(OpType::ALLREDUCE_COALESCED, tensors, tensors, std::move(ops), callerWaits(opts, 0), call);
}

c10::intrusive_ptr<Work> StrataBackend::reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) {
  DeviceCall call(streams_, tensors, "reduce");
  at::Tensor t = singleTensor(tensors, "reduce");
  checkPeer(int(opts.rootRank), "reduce", "root");
  auto dtype = strataTypeOf(t.scalar_type(), "reduce");
  Reduction r = reductionOf(opts.reduceOp, t.scalar_type(), "reduce");
  Staged s(t);
  int root = int(opts.rootRank);
  const bool isRoot = root == rank_;
  // Only the root's tensor changes; others send a scaled copy when premultiplying.
  auto send = std::make_shared<at::Tensor>();
  return submit(OpType::REDUCE, {t}, {t},
                {OpSteps{[=, this] { *send = r.premultiply ? r.scaled(s.buffer) : s.buffer; },
                         [=, this] {
                           check(strataReduce(send->data_ptr(), s.data(), s.count(), dtype, r.op, root, comm_,
                                              stream_),
                                 "strataReduce");
                         },
                         [=, this] {
                           if (isRoot) s.writeBack();
                         }}}, callerWaits(opts, 0), call);
}

c10::intrusive_ptr<Work> StrataBackend::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                  std::vector<at::Tensor>& inputs,
                                                  const c10d::AllgatherOptions& opts) {
  DeviceCall call(streams_, tensorsOf(outputs, inputs), "allgather");
  at::Tensor in = singleTensor(inputs, "allgather");
  TORCH_CHECK_VALUE(outputs.size() == 1 && outputs[0].size() == size_t(size_),
                    "strata allgather: expects one list of ", size_, " output tensors");
  checkSameShape(outputs[0], in, "allgather", "an output tensor");
  auto dtype = strataTypeOf(in.scalar_type(), "allgather");
  Staged s(in);
  std::vector<at::Tensor> outs = outputs[0];
  auto flat = std::make_shared<at::Tensor>();
  return submit(OpType::ALLGATHER, {in}, outs,
                {OpSteps{[=, this] { *flat = at::empty({int64_t(size_) * in.numel()}, in.options()); },
                         [=, this] {
                           check(strataAllGather(s.data(), flat->data_ptr(), s.count(), dtype, comm_, stream_),
                                 "strataAllGather");
                         },
                         [=, this] { unpack(*flat, outs); }}}, callerWaits(opts, 0), call);
}

OpSteps StrataBackend::allGatherSteps(const at::Tensor& output, const at::Tensor& input) {
  checkTensor(input, "allgather_into_tensor");
  checkTensor(output, "allgather_into_tensor");
  TORCH_CHECK_VALUE(output.scalar_type() == input.scalar_type(), "strata allgather_into_tensor: output dtype ",
                    output.scalar_type(), " differs from input dtype ", input.scalar_type());
  TORCH_CHECK_VALUE(output.numel() == input.numel() * size_, "strata allgather_into_tensor: the output has ",
                    output.numel(), " elements, expected ", size_, " x ", input.numel());
  auto dtype = strataTypeOf(input.scalar_type(), "allgather_into_tensor");
  Staged in(input), out(output);
  return OpSteps{nullptr,
                 [=, this] { check(strataAllGather(in.data(), out.data(), in.count(), dtype, comm_, stream_),
                             "strataAllGather"); },
                 [=, this] { out.writeBack(); }};
}

c10::intrusive_ptr<Work> StrataBackend::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                        const c10d::AllgatherOptions& opts) {
  DeviceCall call(streams_, tensorsOf(output, input), "allgather_into_tensor");
  return submit(OpType::_ALLGATHER_BASE, {input}, {output}, {allGatherSteps(output, input)}, callerWaits(opts, 0), call);
}

c10::intrusive_ptr<Work> StrataBackend::allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                        std::vector<at::Tensor>& inputs,
                                                                        const c10d::AllgatherOptions& opts) {
  DeviceCall call(streams_, tensorsOf(outputs, inputs), "allgather_into_tensor");
  TORCH_CHECK_VALUE(outputs.size() == inputs.size(), "strata allgather_into_tensor_coalesced: ", outputs.size(),
                    " outputs for ", inputs.size(), " inputs");
  std::vector<OpSteps> ops;
  for (size_t i = 0; i < inputs.size(); ++i) ops.push_back(allGatherSteps(outputs[i], inputs[i]));
  return submit(CoalescedOpTypes::kAllGather, inputs, outputs, std::move(ops), callerWaits(opts, 0), call);
}

c10::intrusive_ptr<Work> StrataBackend::allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                                            std::vector<at::Tensor>& inputs,
                                                            const c10d::AllgatherOptions& opts) {
  DeviceCall call(streams_, tensorsOf(outputs, inputs), "allgather_coalesced");
  TORCH_CHECK_VALUE(outputs.size() == size_t(size_), "strata allgather_coalesced: expects ", size_,
                    " output lists (one per rank), got ", outputs.size());
  for (const auto& list : outputs) {
    TORCH_CHECK_VALUE(list.size() == inputs.size(), "strata allgather_coalesced: each output list needs ",
                      inputs.size(), " tensors");
    for (size_t i = 0; i < inputs.size(); ++i) checkSameShape({list[i]}, inputs[i], "allgather_coalesced", "an output");
  }
  TORCH_CHECK_VALUE(!inputs.empty(), "strata allgather_coalesced: no tensors given");
  for (const at::Tensor& t : inputs)
    TORCH_CHECK_VALUE(t.scalar_type() == inputs[0].scalar_type(),
                      "strata allgather_coalesced: all tensors must have one dtype");
  // Rank r's inputs end to end form block r of one all-gather.
  auto dtype = strataTypeOf(inputs[0].scalar_type(), "allgather_coalesced");
  const int64_t per = totalElements(inputs);
  std::vector<at::Tensor> ins = inputs, outs;
  for (const auto& list : outputs) outs.insert(outs.end(), list.begin(), list.end());
  auto send = std::make_shared<at::Tensor>(), recv = std::make_shared<at::Tensor>();
  return submit(OpType::ALLGATHER_COALESCED, inputs, outs,
                {OpSteps{[=, this] {
                           *send = packed(ins);
                           *recv = at::empty({per * size_}, ins[0].options());
                         },
                         [=, this] {
                           check(strataAllGather(send->data_ptr(), recv->data_ptr(), size_t(per), dtype, comm_,
                                                 stream_),
                                 "strataAllGather");
                         },
                         [=, this] { unpack(*recv, outs); }}}, callerWaits(opts, 0), call);
}

c10::intrusive_ptr<Work> StrataBackend::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                               std::vector<at::Tensor>& inputs, const c10d::GatherOptions& opts) {
  DeviceCall call(streams_, tensorsOf(outputs, inputs), "gather");
  at::Tensor in = singleTensor(inputs, "gather");
  checkPeer(int(opts.rootRank), "gather", "root");
  const int root = int(opts.rootRank);
  std::vector<at::Tensor> outs;
  if (rank_ == root) {
    TORCH_CHECK_VALUE(outputs.size() == 1 && outputs[0].size() == size_t(size_), "strata gather: the root needs one list of ",
                      size_, " output tensors");
    checkSameShape(outputs[0], in, "gather", "an output tensor");
    outs = outputs[0];
  } else {
    TORCH_CHECK_VALUE(outputs.empty() || (outputs.size() == 1 && outputs[0].empty()),
                      "strata gather: only the root takes output tensors");
  }
  auto dtype = strataTypeOf(in.scalar_type(), "gather");
  Staged s(in);
  std::vector<Staged> staged;
  for (const at::Tensor& t : outs) staged.emplace_back(t);
  const int me = rank_, n = size_;
  return submit(OpType::GATHER, {in}, outs,
                {OpSteps{nullptr,
                         [=, this] {
                           check(strataGroupStart(), "strataGroupStart");
                           if (me != root) {
                             strataSend(s.data(), s.count(), dtype, root, comm_, stream_);
                           } else {
                             for (int p = 0; p < n; ++p)
                               if (p != root) strataRecv(staged[size_t(p)].data(), s.count(), dtype, p, comm_, stream_);
                           }
                           check(strataGroupEnd(), "gather (strataGroupEnd)");
                           if (me == root) staged[size_t(root)].buffer.copy_(s.buffer.view(staged[size_t(root)].buffer.sizes()));
                         },
                         [=, this] {
                           for (const Staged& o : staged) o.writeBack();
                         }}}, callerWaits(opts, 0), call);
}

c10::intrusive_ptr<Work> StrataBackend::scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ScatterOptions& opts) {
  DeviceCall call(streams_, tensorsOf(outputs, inputs), "scatter");
  at::Tensor out = singleTensor(outputs, "scatter");
  checkPeer(int(opts.rootRank), "scatter", "root");
  const int root = int(opts.rootRank);
  std::vector<at::Tensor> ins;
  if (rank_ == root) {
    TORCH_CHECK_VALUE(inputs.size() == 1 && inputs[0].size() == size_t(size_), "strata scatter: the root needs one list of ",
                      size_, " input tensors");
    checkSameShape(inputs[0], out, "scatter", "an input tensor");
    ins = inputs[0];
  } else {
    TORCH_CHECK_VALUE(inputs.empty() || (inputs.size() == 1 && inputs[0].empty()),
                      "strata scatter: only the root takes input tensors");
  }
  auto dtype = strataTypeOf(out.scalar_type(), "scatter");
  Staged s(out);
  std::vector<Staged> staged;
  for (const at::Tensor& t : ins) staged.emplace_back(t);
  const int me = rank_, n = size_;
  return submit(OpType::SCATTER, ins, {out},
                {OpSteps{nullptr,
                         [=, this] {
                           check(strataGroupStart(), "strataGroupStart");
                           if (me != root) {
                             strataRecv(s.data(), s.count(), dtype, root, comm_, stream_);
                           } else {
                             for (int p = 0; p < n; ++p)
                               if (p != root) strataSend(staged[size_t(p)].data(), s.count(), dtype, p, comm_, stream_);
                           }
                           check(strataGroupEnd(), "scatter (strataGroupEnd)");
                           if (me == root) s.buffer.copy_(staged[size_t(root)].buffer.view(s.buffer.sizes()));
                         },
                         [=, this] { s.writeBack(); }}}, callerWaits(opts, 0), call);
}

c10::intrusive_ptr<Work> StrataBackend::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                       std::vector<std::vector<at::Tensor>>& inputs,
                                                       const c10d::ReduceScatterOptions& opts) {
  DeviceCall call(streams_, tensorsOf(outputs, inputs), "reduce_scatter");
  at::Tensor out = singleTensor(outputs, "reduce_scatter");
  TORCH_CHECK_VALUE(inputs.size() == 1 && inputs[0].size() == size_t(size_),
                    "strata reduce_scatter: expects one list of ", size_, " input tensors");
  checkSameShape(inputs[0], out, "reduce_scatter", "an input tensor");
  auto dtype = strataTypeOf(out.scalar_type(), "reduce_scatter");
  Reduction r = reductionOf(opts.reduceOp, out.scalar_type(), "reduce_scatter");
  std::vector<at::Tensor> ins = inputs[0];
  Staged s(out);
  auto flat = std::make_shared<at::Tensor>();
  return submit(OpType::REDUCE_SCATTER, ins, {out},
                {OpSteps{[=, this] { *flat = r.premultiply ? r.scaled(packed(ins)) : packed(ins); },
                         [=, this] {
                           check(strataReduceScatter(flat->data_ptr(), s.data(), s.count(), dtype, r.op, comm_,
                                                     stream_),
                                 "strataReduceScatter");
                         },
                         [=, this] { s.writeBack(); }}}, callerWaits(opts, 0), call);
}

OpSteps StrataBackend::reduceScatterSteps(const at::Tensor& output, const at::Tensor& input, const Reduction& r) {
  checkTensor(input, "reduce_scatter_tensor");
  checkTensor(output, "reduce_scatter_tensor");
  TORCH_CHECK_VALUE(output.scalar_type() == input.scalar_type(), "strata reduce_scatter_tensor: output dtype ",
                    output.scalar_type(), " differs from input dtype ", input.scalar_type());
  TORCH_CHECK_VALUE(input.numel() == output.numel() * size_, "strata reduce_scatter_tensor: the input has ",
                    input.numel(), " elements, expected ", size_, " x ", output.numel());
  auto dtype = strataTypeOf(input.scalar_type(), "reduce_scatter_tensor");
  Staged in(input), out(output);
  auto send = std::make_shared<at::Tensor>();
  return OpSteps{[=, this] { *send = r.premultiply ? r.scaled(in.buffer) : in.buffer; },
                 [=, this] {
                   check(strataReduceScatter(send->data_ptr(), out.data(), out.count(), dtype, r.op, comm_, stream_),
                         "strataReduceScatter");
                 },
                 [=, this] { out.writeBack(); }};
}

c10::intrusive_ptr<Work> StrataBackend::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                             const c10d::ReduceScatterOptions& opts) {
  DeviceCall call(streams_, tensorsOf(output, input), "reduce_scatter_tensor");
  Reduction r = reductionOf(opts.reduceOp, input.scalar_type(), "reduce_scatter_tensor");
  return submit(OpType::_REDUCE_SCATTER_BASE, {input}, {output}, {reduceScatterSteps(output, input, r)}, callerWaits(opts, 0), call);
}

c10::intrusive_ptr<Work> StrataBackend::reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                        std::vector<at::Tensor>& inputs,
                                                                        const c10d::ReduceScatterOptions& opts) {
  DeviceCall call(streams_, tensorsOf(outputs, inputs), "reduce_scatter_tensor");
  TORCH_CHECK_VALUE(outputs.size() == inputs.size(), "strata reduce_scatter_tensor_coalesced: ", outputs.size(),
                    " outputs for ", inputs.size(), " inputs");
  std::vector<OpSteps> ops;
  for (size_t i = 0; i < inputs.size(); ++i)
    ops.push_back(reduceScatterSteps(outputs[i], inputs[i],
                                     reductionOf(opts.reduceOp, inputs[i].scalar_type(), "reduce_scatter_tensor")));
  return submit(CoalescedOpTypes::kReduceScatter, inputs, outputs, std::move(ops), callerWaits(opts, 0), call);
}

c10::intrusive_ptr<Work> StrataBackend::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                      std::vector<int64_t>& outputSplitSizes,
                                                      std::vector<int64_t>& inputSplitSizes,
                                                      const c10d::AllToAllOptions& opts) {
  DeviceCall call(streams_, tensorsOf(output, input), "all_to_all_single");
  checkTensor(input, "all_to_all_single");
  checkTensor(output, "all_to_all_single");
  TORCH_CHECK_VALUE(output.scalar_type() == input.scalar_type(), "strata all_to_all_single: output dtype ",
                    output.scalar_type(), " differs from input dtype ", input.scalar_type());
  auto dtype = strataTypeOf(input.scalar_type(), "all_to_all_single");
  Staged in(input), out(output);
  const int n = size_, me = rank_;
  if (outputSplitSizes.empty() && inputSplitSizes.empty()) {
    TORCH_CHECK_VALUE(input.numel() == output.numel() && input.numel() % n == 0,
                      "strata all_to_all_single: input and output need the same number of elements, divisible by ",
                      n, " (got ", input.numel(), " and ", output.numel(), ")");
    return submit(OpType::ALLTOALL_BASE, {input}, {output},
                  {OpSteps{nullptr,
                           [=, this] { check(strataAllToAll(in.data(), out.data(), in.count() / size_t(n), dtype, comm_,
                                                      stream_),
                                       "strataAllToAll"); },
                           [=, this] { out.writeBack(); }}}, callerWaits(opts, 0), call);
  }
  // Uneven splits along dim 0: one send and one receive per peer, in one group.
  auto splitsOf = [&](const std::vector<int64_t>& given, const at::Tensor& t, const char* which) {
    std::vector<int64_t> rows = given;
    if (rows.empty()) {
      TORCH_CHECK_VALUE(t.dim() > 0 && t.size(0) % n == 0, "strata all_to_all_single: the ", which,
                        " needs a first dimension divisible by ", n, " when its split sizes are not given");
      rows.assign(size_t(n), t.size(0) / n);
    }
    TORCH_CHECK_VALUE(rows.size() == size_t(n), "strata all_to_all_single: ", which, " split sizes has ",
                      rows.size(), " entries, expected ", n);
    int64_t sum = 0;
    for (int64_t r : rows) sum += r;
    TORCH_CHECK_VALUE(t.dim() > 0 && sum == t.size(0), "strata all_to_all_single: ", which,
                      " split sizes add up to ", sum, " but its first dimension is ", t.dim() ? t.size(0) : 0);
    return rows;
  };
  std::vector<int64_t> sendRows = splitsOf(inputSplitSizes, input, "input");
  std::vector<int64_t> recvRows = splitsOf(outputSplitSizes, output, "output");
  const int64_t inRow = input.size(0) ? input.numel() / input.size(0) : 0;
  const int64_t outRow = output.size(0) ? output.numel() / output.size(0) : 0;
  TORCH_CHECK_VALUE(inRow == outRow, "strata all_to_all_single: input rows have ", inRow,
                    " elements but output rows have ", outRow);
  TORCH_CHECK_VALUE(sendRows[size_t(me)] == recvRows[size_t(me)], "strata all_to_all_single: this rank sends itself ",
                    sendRows[size_t(me)], " rows but expects ", recvRows[size_t(me)]);
  const size_t esize = input.element_size();
  return submit(OpType::ALLTOALL_BASE, {input}, {output},
                {OpSteps{nullptr,
                         [=, this] {
                           auto* src = static_cast<char*>(in.data());
                           auto* dst = static_cast<char*>(out.data());
                           std::vector<size_t> sendOff(size_t(n), 0), recvOff(size_t(n), 0);
                           for (int p = 1; p < n; ++p) {
                             sendOff[size_t(p)] = sendOff[size_t(p - 1)] + size_t(sendRows[size_t(p - 1)] * inRow);
                             recvOff[size_t(p)] = recvOff[size_t(p - 1)] + size_t(recvRows[size_t(p - 1)] * inRow);
                           }
                           // This rank's own rows: a copy on the tensors' device (and stream).
                           const int64_t own = sendRows[size_t(me)] * inRow;
                           out.buffer.view({-1}).narrow(0, int64_t(recvOff[size_t(me)]), own)
                               .copy_(in.buffer.view({-1}).narrow(0, int64_t(sendOff[size_t(me)]), own));
                           check(strataGroupStart(), "strataGroupStart");
                           for (int p = 0; p < n; ++p) {
                             if (p == me) continue;
                             strataSend(src + sendOff[size_t(p)] * esize, size_t(sendRows[size_t(p)] * inRow), dtype,
                                        p, comm_, stream_);
                             strataRecv(dst + recvOff[size_t(p)] * esize, size_t(recvRows[size_t(p)] * inRow), dtype,
                                        p, comm_, stream_);
                           }
                           check(strataGroupEnd(), "all_to_all_single (strataGroupEnd)");
                         },
                         [=, this] { out.writeBack(); }}}, callerWaits(opts, 0), call);
}

c10::intrusive_ptr<Work> StrataBackend::alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                                 const c10d::AllToAllOptions& opts) {
  DeviceCall call(streams_, tensorsOf(outputs, inputs), "all_to_all");
  TORCH_CHECK_VALUE(outputs.size() == size_t(size_) && inputs.size() == size_t(size_),
                    "strata all_to_all: expects ", size_, " input and ", size_, " output tensors, got ",
                    inputs.size(), " and ", outputs.size());
  for (const at::Tensor& t : outputs) checkTensor(t, "all_to_all");
  for (size_t p = 0; p < inputs.size(); ++p) {
    checkTensor(inputs[p], "all_to_all");
    TORCH_CHECK_VALUE(inputs[p].scalar_type() == inputs[0].scalar_type() &&
                          outputs[p].scalar_type() == inputs[0].scalar_type(),
                      "strata all_to_all: all tensors must have one dtype");
  }
  auto dtype = strataTypeOf(inputs[0].scalar_type(), "all_to_all");
  std::vector<Staged> ins, outs;
  for (const at::Tensor& t : inputs) ins.emplace_back(t);
  for (const at::Tensor& t : outputs) outs.emplace_back(t);
  const int me = rank_, n = size_;
  TORCH_CHECK_VALUE(inputs[size_t(me)].numel() == outputs[size_t(me)].numel(),
                    "strata all_to_all: this rank's own input and output differ in size");
  return submit(OpType::ALLTOALL, inputs, outputs,
                {OpSteps{nullptr,
                         [=, this] {
                           outs[size_t(me)].buffer.copy_(ins[size_t(me)].buffer.view(outs[size_t(me)].buffer.sizes()));
                           check(strataGroupStart(), "strataGroupStart");
                           for (int p = 0; p < n; ++p) {
                             if (p == me) continue;
                             strataSend(ins[size_t(p)].data(), ins[size_t(p)].count(), dtype, p, comm_, stream_);
                             strataRecv(outs[size_t(p)].data(), outs[size_t(p)].count(), dtype, p, comm_, stream_);
                           }
                           check(strataGroupEnd(), "all_to_all (strataGroupEnd)");
                         },
                         [=, this] {
                           for (const Staged& o : outs) o.writeBack();
                         }}}, callerWaits(opts, 0), call);
}

c10::intrusive_ptr<Work> StrataBackend::send(std::vector<at::Tensor>& tensors, int dstRank, int tag) {
  DeviceCall call(streams_, tensors, "send");
  at::Tensor t = singleTensor(tensors, "send");
  checkPeer(dstRank, "send", "destination");
  TORCH_CHECK_VALUE(dstRank != rank_, "strata send: a rank cannot send to itself");
  auto dtype = strataTypeOf(t.scalar_type(), "send");
  Staged s(t);
  return submit(OpType::SEND, {t}, {t},
                {OpSteps{nullptr, [=, this] { check(strataSend(s.data(), s.count(), dtype, dstRank, comm_, stream_),
                                              "strataSend"); },
                         nullptr}},
                false, call);
}

c10::intrusive_ptr<Work> StrataBackend::recv(std::vector<at::Tensor>& tensors, int srcRank, int tag) {
  DeviceCall call(streams_, tensors, "recv");
  at::Tensor t = singleTensor(tensors, "recv");
  checkPeer(srcRank, "recv", "source");
  TORCH_CHECK_VALUE(srcRank != rank_, "strata recv: a rank cannot receive from itself");
  auto dtype = strataTypeOf(t.scalar_type(), "recv");
  Staged s(t);
  return submit(OpType::RECV, {t}, {t},
                {OpSteps{nullptr, [=, this] { check(strataRecv(s.data(), s.count(), dtype, srcRank, comm_, stream_),
                                              "strataRecv"); },
                         [=, this] { s.writeBack(); }}},
                false, call, srcRank);
}

c10::intrusive_ptr<Work> StrataBackend::recvAnysource(std::vector<at::Tensor>& tensors, int tag) {
  DeviceCall call(streams_, tensors, "recvAnysource");
  at::Tensor t = singleTensor(tensors, "recv");
  TORCH_CHECK_VALUE(!coalescing_, "strata recv: a receive from any rank (src=None) cannot be part of a "
                                  "coalesced batch; name the source rank");
  TORCH_CHECK_VALUE(t.device().is_cpu(), "strata recv: a receive from any rank (src=None) takes CPU tensors only "
                                         "(a device operation must know its sender when it is enqueued); name the "
                                         "source rank");
  auto dtype = strataTypeOf(t.scalar_type(), "recv");
  Staged s(t);
  auto source = std::make_shared<std::atomic<int>>(-1);
  auto work = submit(OpType::RECVANYSOURCE, {t}, {t},
                     {OpSteps{nullptr, [=, this] {
                                int from = -1;
                                check(strataRecvAny(s.data(), s.count(), dtype, &from, comm_, stream_),
                                      "strataRecvAny");
                                source->store(from);
                              },
                              [=, this] { s.writeBack(); }}},
                     false, call);
  static_cast<StrataWork*>(work.get())->useSourceCell(source);
  return work;
}

c10::intrusive_ptr<Work> StrataBackend::barrier(const c10d::BarrierOptions& opts) {
  DeviceCall call(streams_, {}, "barrier");
  return submit(OpType::BARRIER, {}, {},
                {OpSteps{nullptr, [=, this] { check(strataBarrier(comm_, stream_), "strataBarrier"); }, nullptr}},
                callerWaits(opts, 0), call);
}

}  // namespace strata_torch

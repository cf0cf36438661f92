// defines: triax::ModelKind, triax::OptimizerKind, triax::Recompute, triax::LrDecay,
//          triax::ScheduleKind, triax::Activation, triax::Hierarchical, triax::Backend,
//          triax::Precision, triax::Bf16Matmul, triax::Numerics, triax::ShardLevel, triax::Device,
//          triax::ContextMode, triax::FreezeCriterion, triax::DpMode, triax::ServerPlacement,
//          triax::ServerApply,
//          triax::choice_names, triax::choice_name,
//          triax::parse_choice
//
// Every closed choice of the YAML as an enum, decided once when the file is read: the schema
// (config_schema.cpp) parses the spelling into the enum and writes it back, and the rest of the
// code compares enums, never strings. choice_names<E>() is the one list of spellings, in enum
// order; messages print a choice with operator<< (its YAML spelling).
#pragma once

#include <ostream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace triax {

enum class ModelKind { kMlp, kGpt, kLlama };         ///< model.arch: mlp | gpt | llama
enum class Activation { kGelu, kGeluTanh };          ///< model.activation (GPT)
enum class OptimizerKind { kSgd, kAdamW };           ///< train.optimizer: sgd | adamw
enum class Recompute { kNone, kFull, kSelective };   ///< train.recompute
enum class LrDecay { kConstant, kCosine, kLinear };  ///< train.lr_decay
enum class ScheduleKind { kGpipe, k1F1B, kInterleaved, kZbh1, kZbv };  ///< schedule.name
enum class Hierarchical { kAuto, kTrue, kLeader, kFalse };             ///< ddp.hierarchical
enum class Backend { kAuto, kMpi, kTcp };                              ///< comm.backend
enum class Precision { kFp32, kBf16 };                ///< train.precision, ddp.reduce_dtype
enum class Bf16Matmul { kAuto, kNative, kEmulated };  ///< train.bf16_matmul
enum class Numerics { kFast, kLayoutInvariant };      ///< train.numerics
/// ddp.shard: what the data-parallel ranks split (ZeRO's stages), each level including the ones
/// before it: AdamW's state (1), the gradients (2), the parameters (3).
enum class ShardLevel { kNone, kOptimizer, kGradients, kParameters };
enum class Device { kCpu, kCuda };  ///< run.device
/// parallel.context_mode: how attention sees the positions other cp ranks hold (parallel/cp).
enum class ContextMode { kRing, kAllToAll };
/// freeze.criterion: how the freeze algorithm picks the layers that stop learning (train/freeze.h).
enum class FreezeCriterion { kGradientNorm, kProgressive };
/// ddp.mode: how the data-parallel replicas meet: an all-reduce among themselves, or parameter
/// servers they push gradients to and pull weights from (train/param_server.h).
enum class DpMode { kAllReduce, kParameterServer };
/// parameter_server.placement: servers on ranks of their own, or on the workers themselves.
enum class ServerPlacement { kDedicated, kColocated };
/// parameter_server.apply: what an asynchronous server's update takes — one step's pushes from
/// every worker (the synchronous update, on weights up to S steps stale), or each push alone;
/// auto: push when asynchronous at one model position, else step.
enum class ServerApply { kAuto, kStep, kPush };

/// True for the enums above (the ones with YAML spellings).
template <typename E>
using IsChoice = std::disjunction<
    std::is_same<E, ModelKind>, std::is_same<E, Activation>, std::is_same<E, OptimizerKind>,
    std::is_same<E, Recompute>, std::is_same<E, LrDecay>, std::is_same<E, ScheduleKind>,
    std::is_same<E, Hierarchical>, std::is_same<E, Backend>, std::is_same<E, Precision>,
    std::is_same<E, Bf16Matmul>, std::is_same<E, Numerics>, std::is_same<E, ShardLevel>,
    std::is_same<E, Device>, std::is_same<E, ContextMode>, std::is_same<E, FreezeCriterion>,
    std::is_same<E, DpMode>, std::is_same<E, ServerPlacement>, std::is_same<E, ServerApply>>;

/// The YAML spellings of E's values, in enum order ("gpipe", "1f1b", "interleaved").
template <typename E>
const std::vector<std::string>& choice_names();

template <typename E>
const std::string& choice_name(E value) {
  return choice_names<E>().at(static_cast<size_t>(value));
}

/// The value spelled `text`; false (and `out` untouched) when it is none of them.
template <typename E>
bool parse_choice(const std::string& text, E* out) {
  const auto& names = choice_names<E>();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == text) {
      *out = static_cast<E>(i);
      return true;
    }
  }
  return false;
}

/// The value spelled `text`; throws std::invalid_argument naming the valid spellings (tests,
/// benchmarks and command lines that take a choice outside the YAML).
template <typename E>
E choice_from(const std::string& text) {
  E value{};
  if (!parse_choice(text, &value)) {
    std::string valid;
    for (const auto& name : choice_names<E>()) valid += (valid.empty() ? "" : ", ") + name;
    throw std::invalid_argument("'" + text + "' is not a valid choice (valid: " + valid + ")");
  }
  return value;
}

template <typename E, typename = std::enable_if_t<IsChoice<E>::value>>
std::ostream& operator<<(std::ostream& out, E value) {
  return out << choice_name(value);
}

}  // namespace triax

#include "core/config_choices.h"

namespace triax {

#define TRIAX_CHOICE_NAMES(E, ...)                            \
  template <>                                                 \
  const std::vector<std::string>& choice_names<E>() {         \
    static const std::vector<std::string> names{__VA_ARGS__}; \
    return names;                                             \
  }

TRIAX_CHOICE_NAMES(ModelKind, "mlp", "gpt", "llama")
TRIAX_CHOICE_NAMES(Activation, "gelu", "gelu_tanh")
TRIAX_CHOICE_NAMES(OptimizerKind, "sgd", "adamw")
TRIAX_CHOICE_NAMES(Recompute, "none", "full", "selective")
TRIAX_CHOICE_NAMES(LrDecay, "constant", "cosine", "linear")
TRIAX_CHOICE_NAMES(ScheduleKind, "gpipe", "1f1b", "interleaved", "zbh1", "zbv")
TRIAX_CHOICE_NAMES(Hierarchical, "auto", "true", "leader", "false")
TRIAX_CHOICE_NAMES(Backend, "auto", "mpi", "tcp")
TRIAX_CHOICE_NAMES(Precision, "fp32", "bf16")
TRIAX_CHOICE_NAMES(Bf16Matmul, "auto", "native", "emulated")
TRIAX_CHOICE_NAMES(Numerics, "fast", "layout_invariant")
TRIAX_CHOICE_NAMES(ShardLevel, "none", "optimizer", "gradients", "parameters")
TRIAX_CHOICE_NAMES(Device, "cpu", "cuda")
TRIAX_CHOICE_NAMES(ContextMode, "ring", "all_to_all")
TRIAX_CHOICE_NAMES(FreezeCriterion, "gradient_norm", "progressive")
TRIAX_CHOICE_NAMES(DpMode, "allreduce", "parameter_server")
TRIAX_CHOICE_NAMES(ServerPlacement, "dedicated", "colocated")
TRIAX_CHOICE_NAMES(ServerApply, "auto", "step", "push")

#undef TRIAX_CHOICE_NAMES

}  // namespace triax

// defines: triax::StateName
//
// The one place that spells the names of tensors in checkpoints:
//   c<chunk>/<parameter>           a parameter of the rank's model chunk <chunk>, as trained
//   c<chunk>/<parameter>@<state>   its optimizer state: exp_avg, exp_avg_sq, step (AdamW) or
//                                  momentum (SGD)
//   rng/c<chunk>/<stream>          a dropout stream's position (dropout_shared, dropout_tp_local)
// A full-model state (checkpoint/convert: every shard merged) uses the same names without the
// chunk: "<parameter>" and "<parameter>@<state>". Parameters are named by global layer index
// (`layer3.fc.weight`), so a name does not depend on the stage that holds it.
#pragma once

#include <string>

namespace triax {

struct StateName {
  static constexpr int kNoChunk = -1;  ///< a full-model name

  int chunk = kNoChunk;
  std::string parameter;  ///< or the stream, for an RNG state
  std::string state;      ///< "" for the parameter itself
  bool rng = false;       ///< a dropout stream position

  static StateName of_parameter(int chunk, std::string parameter, std::string state = "");
  static StateName of_rng(int chunk, std::string stream);

  /// Parses any of the forms above; throws Error naming `name` when it is none of them.
  static StateName parse(const std::string& name);
  std::string str() const;

  bool is_optimizer_state() const { return !rng && !state.empty(); }
  /// The same name with another chunk (kNoChunk: the full-model form).
  StateName in_chunk(int new_chunk) const;
};

}  // namespace triax

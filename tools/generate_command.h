// defines: triax::run_generate, triax::greedy_continuation
//
// `triax generate CHECKPOINT --prompt TEXT [--tokens N] [--tokenizer PATH] [--ids]`: the
// checkpoint's whole model on this one process (tp and pp shards joined, as `export` does),
// greedy decoding from the prompt: each new token is the argmax of the last position's logits
// over the last seq_len tokens (no KV cache). Greedy so that a continuation can be compared token
// for token with another implementation's (tests/interop/hf_reference.py `greedy`).
#pragma once

#include <cstdint>
#include <vector>

#include "checkpoint/convert.h"
#include "tools/cli_args.h"

namespace triax {

/// `prompt` followed by `count` greedy tokens of the model in `state`.
std::vector<int64_t> greedy_continuation(const FullModelState& state,
                                         const std::vector<int64_t>& prompt, int64_t count);

int run_generate(const CliArgs& args);

}  // namespace triax

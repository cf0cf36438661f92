// defines: triax::generate_text
//
// Continues a prompt with the trained GPT wherever its parts live. Each new token is one
// forward-only pipeline pass over the last seq_len tokens (right-padded: causal attention makes
// the padding invisible to the position read), on a batch of one; the last stage's tp ranks
// gather the full vocabulary's logits and pick the same token (greedy, or top-k from the same
// seeded generator), which the last pipeline rank broadcasts to the others. No KV cache: the
// models here are small and samples short, and it keeps the path the same as training's.
// The prompt is encoded and the result decoded by the run's tokenizer (data.tokenizer).
// A collective: every rank calls it and every rank returns the same text.
#pragma once

#include <string>

#include "core/config.h"
#include "parallel/parallel_context.h"
#include "tokenizer/tokenizer.h"
#include "train/trainer.h"

namespace triax {

/// `sample.prompt` followed by `sample.tokens` generated tokens, as text.
/// The trainer's model must be a language model (ModelChunk::logits).
std::string generate_text(Trainer& trainer, ParallelContext& context, const Config& config,
                          const Tokenizer& tokenizer);

/// Bytes a terminal shows safely: printable ASCII, valid UTF-8 beyond it, newline and tab kept;
/// other bytes as \xNN.
std::string printable(const std::string& text);

}  // namespace triax

#include "tokenizer/sentencepiece_model.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include "core/error.h"
#include "core/strings.h"

namespace triax {

SentencePieceModel::SentencePieceModel(const std::string& path)
    : path_(path), processor_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {
  const auto status = processor_->Load(path);
  if (!status.ok()) {
    throw ConfigError(str(path, ": not a SentencePiece model (", status.ToString(), ")"));
  }
}

SentencePieceModel::~SentencePieceModel() = default;

std::string SentencePieceModel::describe() const {
  return str("SentencePiece (", path_, ", ", vocab_size(), " pieces)");
}

std::vector<int32_t> SentencePieceModel::encode(const std::string& text, bool) const {
  std::vector<int> ids;
  const auto status = processor_->Encode(text, &ids);
  if (!status.ok()) throw Error(str(path_, ": encode failed: ", status.ToString()));
  return std::vector<int32_t>(ids.begin(), ids.end());
}

std::string SentencePieceModel::decode(const std::vector<int32_t>& ids) const {
  std::string text;
  const auto status = processor_->Decode(std::vector<int>(ids.begin(), ids.end()), &text);
  if (!status.ok()) throw Error(str(path_, ": decode failed: ", status.ToString()));
  return text;
}

int64_t SentencePieceModel::vocab_size() const {
  return processor_->GetPieceSize();
}
int32_t SentencePieceModel::bos_id() const {
  return processor_->bos_id();
}
int32_t SentencePieceModel::eos_id() const {
  return processor_->eos_id();
}

std::string train_sentencepiece(const SentencePieceTraining& t) {
  if (t.inputs.empty()) throw ConfigError("tokenizer train: no input files");
  if (t.model_type != "bpe" && t.model_type != "unigram") {
    throw ConfigError(str("--model-type ", t.model_type, " (valid: bpe, unigram)"));
  }
  const std::string args =
      str("--input=", join(t.inputs, ","), " --model_prefix=", t.out_prefix,
          " --vocab_size=", t.vocab_size, " --model_type=", t.model_type,
          " --byte_fallback=true --split_digits=true --normalization_rule_name=identity",
          " --add_dummy_prefix=true --unk_id=0 --bos_id=1 --eos_id=2 --pad_id=-1",
          " --character_coverage=0.99995 --input_sentence_size=", t.max_sentences,
          " --shuffle_input_sentence=true --max_sentence_length=16384 --minloglevel=2",
          " --num_threads=2");
  const auto status = sentencepiece::SentencePieceTrainer::Train(args);
  if (!status.ok()) {
    throw ConfigError(str("tokenizer train: SentencePiece refused: ", status.ToString()));
  }
  return t.out_prefix + ".model";
}

}  // namespace triax

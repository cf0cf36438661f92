#include "tokenizer/sentencepiece_model.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include "core/error.h"
#include "core/strings.h"

namespace triax {
namespace {

// libtriax_sentencepiece (sentencepiece_shim.cpp), opened once, locally and deep-bound.
struct Shim {
  void* (*load)(const char*, char*, size_t) = nullptr;
  void (*free_model)(void*) = nullptr;
  int (*encode)(void*, const char*, size_t, int**, size_t*) = nullptr;
  int (*decode)(void*, const int*, size_t, char**, size_t*) = nullptr;
  void (*release)(void*) = nullptr;
  int (*size)(void*) = nullptr;
  int (*bos)(void*) = nullptr;
  int (*eos)(void*) = nullptr;
};

template <typename F>
void bind(void* library, const char* name, F& function) {
  function = reinterpret_cast<F>(::dlsym(library, name));
  if (function == nullptr) throw Error(str(TRIAX_SENTENCEPIECE_SHIM, ": no symbol ", name));
}

const Shim& shim() {
  static Shim s;
  static std::once_flag once;
  std::call_once(once, [] {
    void* library = ::dlopen(TRIAX_SENTENCEPIECE_SHIM, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (library == nullptr) {
      throw Error(str("SentencePiece: cannot open ", TRIAX_SENTENCEPIECE_SHIM, " (", ::dlerror(),
                      "; rebuild with tools/setup.sh build)"));
    }
    bind(library, "triax_spm_load", s.load);
    bind(library, "triax_spm_free", s.free_model);
    bind(library, "triax_spm_encode", s.encode);
    bind(library, "triax_spm_decode", s.decode);
    bind(library, "triax_spm_release", s.release);
    bind(library, "triax_spm_size", s.size);
    bind(library, "triax_spm_bos", s.bos);
    bind(library, "triax_spm_eos", s.eos);
  });
  return s;
}

}  // namespace

SentencePieceModel::SentencePieceModel(const std::string& path) : path_(path) {
  char error[512] = {0};
  handle_ = shim().load(path.c_str(), error, sizeof error);
  if (handle_ == nullptr) {
    throw ConfigError(str(path, ": not a SentencePiece model (", error, ")"));
  }
}

SentencePieceModel::~SentencePieceModel() {
  if (handle_ != nullptr) shim().free_model(handle_);
}

std::string SentencePieceModel::describe() const {
  return str("SentencePiece (", path_, ", ", vocab_size(), " pieces)");
}

std::vector<int32_t> SentencePieceModel::encode(const std::string& text, bool) const {
  int* ids = nullptr;
  size_t count = 0;
  if (shim().encode(handle_, text.data(), text.size(), &ids, &count) != 0) {
    throw Error(str(path_, ": SentencePiece could not encode the text"));
  }
  std::vector<int32_t> out(ids, ids + count);
  shim().release(ids);
  return out;
}

std::string SentencePieceModel::decode(const std::vector<int32_t>& ids) const {
  const std::vector<int> in(ids.begin(), ids.end());
  char* text = nullptr;
  size_t length = 0;
  if (shim().decode(handle_, in.data(), in.size(), &text, &length) != 0) {
    throw Error(str(path_, ": SentencePiece could not decode the ids"));
  }
  std::string out(text, length);
  shim().release(text);
  return out;
}

int64_t SentencePieceModel::vocab_size() const {
  return shim().size(handle_);
}
int32_t SentencePieceModel::bos_id() const {
  return shim().bos(handle_);
}
int32_t SentencePieceModel::eos_id() const {
  return shim().eos(handle_);
}

std::string train_sentencepiece(const SentencePieceTraining& t) {
  if (t.inputs.empty()) throw ConfigError("tokenizer train: no input files");
  if (t.model_type != "bpe" && t.model_type != "unigram") {
    throw ConfigError(str("--model-type ", t.model_type, " (valid: bpe, unigram)"));
  }
  // Debian's spm_train, in its own process: the trainer logs through iostreams, which a
  // deep-bound library cannot share with this process (see sentencepiece_shim.cpp).
  const std::string command =
      str("spm_train --input='", join(t.inputs, ","), "' --model_prefix='", t.out_prefix,
          "' --vocab_size=", t.vocab_size, " --model_type=", t.model_type,
          " --byte_fallback=true --split_digits=true --normalization_rule_name=identity",
          " --remove_extra_whitespaces=false --allow_whitespace_only_pieces=true",
          " --add_dummy_prefix=true --unk_id=0 --bos_id=1 --eos_id=2 --pad_id=-1",
          " --character_coverage=0.99995 --input_sentence_size=", t.max_sentences,
          " --shuffle_input_sentence=true --max_sentence_length=16384 --minloglevel=2",
          " --num_threads=2 > '", t.out_prefix, ".log' 2>&1");
  if (std::system(command.c_str()) != 0) {
    throw ConfigError(str("tokenizer train: spm_train failed (apt-get install sentencepiece); its ",
                          "output: ", t.out_prefix, ".log"));
  }
  return t.out_prefix + ".model";
}

}  // namespace triax

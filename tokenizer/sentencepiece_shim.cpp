// The one place that links libsentencepiece, as a separate shared object with a C interface,
// opened at first use with dlopen(RTLD_LOCAL | RTLD_DEEPBIND) by sentencepiece_model.cpp.
// Why: Debian's libsentencepiece carries its own copy of protobuf and exports it; linked into a
// process that also loads LibTorch's libprotobuf.so.32, the two copies interpose each other and
// the process crashes during static initialisation. Opened locally and deep-bound, each keeps
// its own. (Training runs Debian's spm_train instead: the trainer logs through iostreams, and a
// deep-bound library would reach libstdc++'s unconstructed copies of std::cerr.)
#include <sentencepiece_processor.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

void copy_error(const std::string& message, char* error, size_t size) {
  if (error == nullptr || size == 0) return;
  std::strncpy(error, message.c_str(), size - 1);
  error[size - 1] = '\0';
}

}  // namespace

extern "C" {

void* triax_spm_load(const char* path, char* error, size_t error_size) {
  auto* processor = new sentencepiece::SentencePieceProcessor();
  const auto status = processor->Load(path);
  if (!status.ok()) {
    copy_error(status.ToString(), error, error_size);
    delete processor;
    return nullptr;
  }
  return processor;
}

void triax_spm_free(void* handle) {
  delete static_cast<sentencepiece::SentencePieceProcessor*>(handle);
}

int triax_spm_encode(void* handle, const char* text, size_t length, int** ids, size_t* count) {
  std::vector<int> out;
  const auto status = static_cast<sentencepiece::SentencePieceProcessor*>(handle)->Encode(
      std::string(text, length), &out);
  if (!status.ok()) return 1;
  *count = out.size();
  *ids = static_cast<int*>(std::malloc(sizeof(int) * (out.empty() ? 1 : out.size())));
  std::memcpy(*ids, out.data(), sizeof(int) * out.size());
  return 0;
}

int triax_spm_decode(void* handle, const int* ids, size_t count, char** text, size_t* length) {
  std::string out;
  const auto status = static_cast<sentencepiece::SentencePieceProcessor*>(handle)->Decode(
      std::vector<int>(ids, ids + count), &out);
  if (!status.ok()) return 1;
  *length = out.size();
  *text = static_cast<char*>(std::malloc(out.empty() ? 1 : out.size()));
  std::memcpy(*text, out.data(), out.size());
  return 0;
}

void triax_spm_release(void* memory) {
  std::free(memory);
}

int triax_spm_size(void* handle) {
  return static_cast<sentencepiece::SentencePieceProcessor*>(handle)->GetPieceSize();
}
int triax_spm_bos(void* handle) {
  return static_cast<sentencepiece::SentencePieceProcessor*>(handle)->bos_id();
}
int triax_spm_eos(void* handle) {
  return static_cast<sentencepiece::SentencePieceProcessor*>(handle)->eos_id();
}

}  // extern "C"

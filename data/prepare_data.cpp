#include "data/prepare_data.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "data/token_file.h"
#include "tokenizer/tokenizer.h"

namespace triax {
namespace {

namespace fs = std::filesystem;

constexpr size_t kBlockBytes = 4096;

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(str(path.string(), ": cannot read"));
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The text files named by `inputs` (a folder: every regular file below it, sorted); symbolic
// links are listed in `skipped`.
std::vector<fs::path> list_files(const std::vector<std::string>& inputs,
                                 std::vector<std::string>& skipped) {
  std::vector<fs::path> files;
  for (const std::string& input : inputs) {
    const fs::path path(input);
    if (fs::is_directory(path)) {
      std::vector<fs::path> found;
      for (const auto& entry : fs::recursive_directory_iterator(path)) {
        if (entry.is_symlink()) {
          skipped.push_back(entry.path().string() + " (symbolic link)");
        } else if (entry.is_regular_file()) {
          found.push_back(entry.path());
        }
      }
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::is_regular_file(path)) {
      files.push_back(path);
    } else {
      throw Error(str(input,
                      ": no such file or folder (prepare-data reads text files, or "
                      "folders of them)"));
    }
  }
  return files;
}

// The files' text, one after the other, with where each document starts (binary files are
// skipped).
struct Corpus {
  std::string text;
  std::vector<size_t> document_starts;  // offsets in `text`, then text.size()
};

Corpus read_corpus(const std::vector<fs::path>& files, PreparedData& result) {
  Corpus corpus;
  for (const fs::path& file : files) {
    const std::string content = read_all(file);
    if (content.find('\0') != std::string::npos) {
      result.skipped.push_back(file.string() + " (binary: has NUL bytes)");
      continue;
    }
    corpus.document_starts.push_back(corpus.text.size());
    corpus.text += content;
    ++result.files;
  }
  corpus.document_starts.push_back(corpus.text.size());
  return corpus;
}

// Blocks of ~4 KiB ending at a line end, over the whole text (as before tokenizers, so the
// byte-level files are unchanged).
std::vector<std::pair<size_t, size_t>> line_blocks(const std::string& text) {
  std::vector<std::pair<size_t, size_t>> blocks;
  for (size_t begin = 0; begin < text.size();) {
    size_t end = std::min(text.size(), begin + kBlockBytes);
    const size_t newline = text.find('\n', end);
    end = end == text.size() ? end : (newline == std::string::npos ? text.size() : newline + 1);
    blocks.emplace_back(begin, end);
    begin = end;
  }
  return blocks;
}

// A block's ids: its text cut at document starts, each document's first piece after bos, each
// document's last piece before eos.
std::vector<uint32_t> tokenize_block(const Corpus& corpus, std::pair<size_t, size_t> block,
                                     const Tokenizer& tokenizer) {
  const std::vector<size_t>& starts = corpus.document_starts;
  std::vector<uint32_t> ids;
  const auto [begin, end] = block;
  auto doc = std::upper_bound(starts.begin(), starts.end(), begin) - 1;
  for (size_t at = begin; at < end; ++doc) {
    const size_t stop = std::min(end, *(doc + 1));
    if (at == *doc && tokenizer.bos_id() >= 0) {
      ids.push_back(static_cast<uint32_t>(tokenizer.bos_id()));
    }
    for (int32_t id : tokenizer.encode(corpus.text.substr(at, stop - at))) {
      ids.push_back(static_cast<uint32_t>(id));
    }
    if (stop == *(doc + 1) && tokenizer.eos_id() >= 0) {
      ids.push_back(static_cast<uint32_t>(tokenizer.eos_id()));
    }
    at = stop;
  }
  return ids;
}

// Every block tokenized on `threads` threads, each taking the next block; the first error is
// rethrown.
std::vector<std::vector<uint32_t>> tokenize_blocks(
    const Corpus& corpus, const std::vector<std::pair<size_t, size_t>>& blocks,
    const Tokenizer& tokenizer, int threads) {
  std::vector<std::vector<uint32_t>> tokenized(blocks.size());
  std::atomic<size_t> next{0};
  std::vector<std::thread> workers;
  std::exception_ptr failure;
  std::mutex failure_mutex;
  for (int t = 0; t < std::max(1, threads); ++t) {
    workers.emplace_back([&] {
      try {
        for (size_t k = next++; k < blocks.size(); k = next++) {
          tokenized[k] = tokenize_block(corpus, blocks[k], tokenizer);
        }
      } catch (...) {
        std::lock_guard<std::mutex> lock(failure_mutex);
        failure = std::current_exception();
        next = blocks.size();
      }
    });
  }
  for (auto& w : workers) w.join();
  if (failure) std::rethrow_exception(failure);
  return tokenized;
}

}  // namespace

PreparedData prepare_text_data(const std::vector<std::string>& inputs, const std::string& out_dir,
                               double val_fraction, const Tokenizer& tokenizer, int threads) {
  PreparedData result;
  const Corpus corpus = read_corpus(list_files(inputs, result.skipped), result);
  result.bytes = static_cast<int64_t>(corpus.text.size());
  if (corpus.text.size() < 2) {
    throw Error(str("prepare-data: no text in ", join(inputs, ", "),
                    result.skipped.empty() ? "" : " (every file was skipped)"));
  }
  const std::vector<std::pair<size_t, size_t>> blocks = line_blocks(corpus.text);
  const auto start = std::chrono::steady_clock::now();
  const std::vector<std::vector<uint32_t>> tokenized =
      tokenize_blocks(corpus, blocks, tokenizer, threads);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Every 1/val_fraction-th block is held out.
  std::vector<uint32_t> train, val;
  for (size_t block = 0; block < blocks.size(); ++block) {
    const bool held_out = std::floor((block + 1) * val_fraction) > std::floor(block * val_fraction);
    auto& out = held_out ? val : train;
    out.insert(out.end(), tokenized[block].begin(), tokenized[block].end());
  }
  result.vocab = tokenizer.vocab_size();
  fs::create_directories(out_dir);
  write_token_file(out_dir + "/train.tok", train, result.vocab);
  write_token_file(out_dir + "/val.tok", val, result.vocab);
  result.train_tokens = static_cast<int64_t>(train.size());
  result.val_tokens = static_cast<int64_t>(val.size());
  return result;
}

}  // namespace triax

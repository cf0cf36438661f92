#include "data/prepare_data.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/error.h"
#include "data/token_file.h"

namespace triax {
namespace {

namespace fs = std::filesystem;

constexpr size_t kBlockBytes = 4096;

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(str(path.string(), ": cannot read"));
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

PreparedData prepare_text_data(const std::vector<std::string>& inputs, const std::string& out_dir,
                               double val_fraction) {
  PreparedData result;
  std::vector<fs::path> files;
  for (const std::string& input : inputs) {
    const fs::path path(input);
    if (fs::is_directory(path)) {
      std::vector<fs::path> found;
      for (const auto& entry : fs::recursive_directory_iterator(path)) {
        if (entry.is_symlink()) {
          result.skipped.push_back(entry.path().string() + " (symbolic link)");
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
  std::string text;
  for (const fs::path& file : files) {
    const std::string content = read_all(file);
    if (content.find('\0') != std::string::npos) {
      result.skipped.push_back(file.string() + " (binary: has NUL bytes)");
      continue;
    }
    text += content;
    ++result.files;
  }
  if (text.size() < 2) {
    throw Error(str("prepare-data: no text in ", join(inputs, ", "),
                    result.skipped.empty() ? "" : " (every file was skipped)"));
  }
  std::vector<uint16_t> train, val;
  for (size_t begin = 0, block = 0; begin < text.size(); ++block) {
    size_t end = std::min(text.size(), begin + kBlockBytes);
    const size_t newline = text.find('\n', end);
    end = end == text.size() ? end : (newline == std::string::npos ? text.size() : newline + 1);
    const bool held_out = std::floor((block + 1) * val_fraction) > std::floor(block * val_fraction);
    auto& out = held_out ? val : train;
    for (size_t i = begin; i < end; ++i) out.push_back(static_cast<unsigned char>(text[i]));
    begin = end;
  }
  fs::create_directories(out_dir);
  write_token_file(out_dir + "/train.tok", train, 256);
  write_token_file(out_dir + "/val.tok", val, 256);
  result.train_tokens = static_cast<int64_t>(train.size());
  result.val_tokens = static_cast<int64_t>(val.size());
  return result;
}

}  // namespace triax

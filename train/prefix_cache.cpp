#include "train/prefix_cache.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <utility>

#include "core/crc32.h"
#include "core/error.h"
#include "core/log.h"
#include "core/run_paths.h"
#include "core/strings.h"
#include "models/model_spec.h"
#include "parallel/comm/gather_text.h"

namespace triax {
namespace {

// Whole reads and writes at an offset (pread/pwrite may return short counts).
bool read_at(int fd, void* data, int64_t bytes, int64_t offset) {
  auto* out = static_cast<char*>(data);
  while (bytes > 0) {
    const ssize_t got = ::pread(fd, out, static_cast<size_t>(bytes), offset);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;  // past the end: a slot never written
    out += got;
    bytes -= got;
    offset += got;
  }
  return true;
}

bool write_at(int fd, const void* data, int64_t bytes, int64_t offset) {
  const auto* in = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t put = ::pwrite(fd, in, static_cast<size_t>(bytes), offset);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return false;
    in += put;
    bytes -= put;
    offset += put;
  }
  return true;
}

std::string crc_text(uint32_t crc) {
  char text[9];
  std::snprintf(text, sizeof(text), "%08x", crc);
  return text;
}

// Row i of the token ids a row was computed from (int64 [n, s], contiguous on the CPU).
uint32_t tokens_crc(const torch::Tensor& tokens, int64_t i) {
  const int64_t s = tokens.size(1);
  return crc32_of(tokens.data_ptr<int64_t>() + i * s, static_cast<size_t>(s) * sizeof(int64_t));
}

}  // namespace

FilePrefixCache::FilePrefixCache(std::string path, int64_t layers, std::vector<int64_t> row_shape,
                                 torch::ScalarType dtype, std::vector<Communicator*> agree)
    : path_(std::move(path)),
      layers_(layers),
      row_shape_(std::move(row_shape)),
      dtype_(dtype),
      row_bytes_(static_cast<int64_t>(c10::elementSize(dtype))),
      agree_(std::move(agree)) {
  for (const int64_t d : row_shape_) row_bytes_ *= d;
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error(str("cannot open the prefix cache ", path_, ": ", std::strerror(errno)));
}

FilePrefixCache::~FilePrefixCache() {
  if (fd_ >= 0) ::close(fd_);
}

torch::Tensor FilePrefixCache::fetch(const torch::Tensor& samples, const torch::Tensor& inputs,
                                     torch::Tensor* hidden) {
  const int64_t n = samples.size(0);
  const torch::Tensor ids = samples.to(torch::kLong).contiguous();
  const torch::Tensor tokens = inputs.to(torch::kCPU).to(torch::kLong).contiguous();
  std::vector<int64_t> shape{n};
  shape.insert(shape.end(), row_shape_.begin(), row_shape_.end());
  *hidden = torch::empty(shape, torch::TensorOptions().dtype(dtype_));
  torch::Tensor hit = torch::zeros({n}, torch::kInt);
  int* hit_of = hit.data_ptr<int>();
  const int64_t* sample_of = ids.data_ptr<int64_t>();
  auto* data = static_cast<char*>(hidden->data_ptr());
  for (int64_t i = 0; i < n; ++i) {
    const int64_t sample = sample_of[i];
    const int64_t offset = sample * record_bytes();
    Header header{};
    if (!read_at(fd_, &header, sizeof(header), offset)) continue;
    if (header.tag != static_cast<uint64_t>(sample) + 1) continue;
    if (header.tokens_crc != tokens_crc(tokens, i)) continue;
    char* row = data + i * row_bytes_;
    if (!read_at(fd_, row, row_bytes_, offset + static_cast<int64_t>(sizeof(header)))) continue;
    if (crc32_of(row, static_cast<size_t>(row_bytes_)) != header.row_crc) continue;
    hit_of[i] = 1;
  }
  // Every rank computing these rows must run the prefix for the same ones (its layers talk).
  for (Communicator* group : agree_) {
    if (group->size() > 1) group->all_reduce(hit, ReduceOp::kMin);
  }
  const int64_t hits = hit.sum().item<int64_t>();
  hits_ += hits;
  misses_ += n - hits;
  return hit.to(torch::kBool);
}

void FilePrefixCache::store(const torch::Tensor& samples, const torch::Tensor& inputs,
                            const torch::Tensor& hidden) {
  if (!writable_) return;
  if (hidden.scalar_type() != dtype_) {
    log::warn(triax::str("prefix cache ", path_, ": rows of ", hidden.scalar_type(), ", not ",
                         dtype_, "; no more rows are kept (those kept are still read)"));
    writable_ = false;
    return;
  }
  const torch::Tensor ids = samples.to(torch::kLong).contiguous();
  const torch::Tensor tokens = inputs.to(torch::kCPU).to(torch::kLong).contiguous();
  const torch::Tensor rows = hidden.detach().to(torch::kCPU).contiguous();
  TRIAX_CHECK(rows.numel() == ids.size(0) * (row_bytes_ / rows.element_size()),
              "prefix cache rows of ", rows.sizes(), " for ", ids.size(0), " samples of ",
              row_bytes_, " bytes");
  const auto* data = static_cast<const char*>(rows.data_ptr());
  const int64_t* sample_of = ids.data_ptr<int64_t>();
  for (int64_t i = 0; i < ids.size(0); ++i) {
    const int64_t sample = sample_of[i];
    const int64_t offset = sample * record_bytes();
    const char* row = data + i * row_bytes_;
    const Header header{static_cast<uint64_t>(sample) + 1,
                        crc32_of(row, static_cast<size_t>(row_bytes_)), tokens_crc(tokens, i)};
    // The row before its header: a reader that sees the header sees the row (or a CRC miss).
    if (!write_at(fd_, row, row_bytes_, offset + static_cast<int64_t>(sizeof(header))) ||
        !write_at(fd_, &header, sizeof(header), offset)) {
      log::warn(str("prefix cache ", path_, ": cannot write sample ", sample, " (",
                    std::strerror(errno), "); no more rows are kept (those kept are still read)"));
      writable_ = false;
      return;
    }
  }
}

bool prefix_cache_wanted(const RunPlan& plan, int64_t step) {
  const Config& c = plan.config;
  const int64_t per_epoch = plan.data.steps_per_epoch;
  return c.freeze.cache && c.train.frozen_layers > 0 && RunPaths(c.run.dir).enabled() &&
         model_spec(c.model.arch).data == DataSource::kTokenFiles && per_epoch > 0 &&
         (plan.data.total_steps - 1) / per_epoch > step / per_epoch;
}

std::unique_ptr<FilePrefixCache> open_prefix_cache(const RunPlan& plan, ParallelContext& context,
                                                   int64_t step, int64_t layers,
                                                   const std::vector<torch::Tensor>& parameters) {
  const Config& c = plan.config;
  if (!prefix_cache_wanted(plan, step)) {
    if (c.freeze.cache && c.train.frozen_layers > 0 && RunPaths(c.run.dir).enabled()) {
      log::info("AutoCache off: no later epoch would read the rows (train.epochs)");
    }
    return nullptr;
  }
  const std::string dir = RunPaths(c.run.dir).prefix_cache();
  const std::vector<int64_t> row(plan.activation_shape.begin() + 1, plan.activation_shape.end());
  int64_t row_bytes = static_cast<int64_t>(sizeof(float));
  for (const int64_t d : row) row_bytes *= d;
  const double file_bytes =
      static_cast<double>(plan.data.train_samples) * static_cast<double>(row_bytes + 16);
  std::unique_ptr<FilePrefixCache> cache;
  std::string name, failure;
  if (context.pp_rank() == 0) {
    uint32_t weights = 0;
    for (const torch::Tensor& t : parameters) {
      const torch::Tensor bytes = t.detach().to(torch::kCPU).contiguous();
      weights ^=
          crc32_of(bytes.data_ptr(), static_cast<size_t>(bytes.numel() * bytes.element_size()));
      weights = weights * 16777619u + static_cast<uint32_t>(bytes.numel());  // order matters
    }
    // What else decides a row's bits: the model's keys and the arithmetic.
    std::string settings;
    const ModelKeys keys = model_spec(c.model.arch).model_keys(c.model);
    for (const auto& [key, value] : keys.entries()) {
      settings += key + "=" + value + ";";
    }
    settings += str(c.train.precision, c.train.bf16_matmul, c.train.param_dtype, c.train.numerics,
                    c.train.micro_batch_invariant, c.run.device, c.parallel.context_mode,
                    c.parallel.sequence);
    name =
        str("layers", layers, "-tp", context.tp_rank(), "of", context.tp_size(), "-cp",
            context.cp_rank(), "of", context.cp_size(), "-", join(row, "x"), "-", crc_text(weights),
            "-", crc_text(crc32_of(settings.data(), settings.size())), ".rows");
    try {
      std::filesystem::create_directories(dir);
      const double available = static_cast<double>(std::filesystem::space(dir).available);
      if (2 * file_bytes > available) {
        throw Error(str(dir, " has ", fixed(available / 1048576.0, 0), " MiB free; the rows of ",
                        plan.data.train_samples, " samples may take ",
                        fixed(file_bytes / 1048576.0, 0),
                        " MiB, and AutoCache keeps twice that free (freeze.cache: false "
                        "silences this)"));
      }
      cache = std::make_unique<FilePrefixCache>(
          dir + "/" + name, layers, row, torch::kFloat,
          std::vector<Communicator*>{&context.tp(), &context.cp()});
    } catch (const std::exception& e) {
      failure = e.what();
    }
  }
  // One verdict for all: a rank without its cache would run the prefix where its peers do not.
  torch::Tensor opened = torch::tensor({failure.empty() ? 1 : 0}, torch::kInt);
  context.world().all_reduce(opened, ReduceOp::kMin);
  const std::vector<std::string> names = all_gather_text(context.world(), name);
  if (!failure.empty()) log::warn(str("AutoCache off: ", failure));
  if (opened.item<int>() == 0) {
    log::info("AutoCache off: a rank could not open its prefix cache (its warning says why)");
    return nullptr;
  }
  if (context.rank() == 0) {
    const std::set<std::string> used(names.begin(), names.end());
    std::error_code ignored;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ignored)) {
      if (used.count(entry.path().filename().string()) == 0) {
        std::filesystem::remove(entry.path(), ignored);
      }
    }
    log::info(str("AutoCache: the first stage keeps the output of its ", layers,
                  " frozen layer(s) per training sample in ", dir, "/ (up to ",
                  fixed(file_bytes / 1048576.0, 0),
                  " MiB a tensor/context position) and runs "
                  "them only for samples it has not seen since"));
  }
  return cache;
}

}  // namespace triax

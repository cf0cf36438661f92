// defines: triax::FilePrefixCache, triax::prefix_cache_wanted, triax::open_prefix_cache
//
// AutoCache's rows (models/prefix_cache.h): the frozen prefix's output per training sample, in
// one file per (tensor, context) position under run.dir/autocache/, record i at offset
// i x (header + row). A file rather than this process's memory because the distributed sampler
// deals a sample to a different dp rank every epoch: every dp replica of a position reads and
// writes the same rows (on one node the page cache is the shared memory; a row is written when
// computed, so the sparse file grows with the samples seen, up to samples x row bytes: opening
// refuses a disk with less than twice that free). A record carries
// its sample, the CRC of the tokens it was computed from and of its bytes: a row from other
// tokens, a torn write or an empty (sparse) slot reads as a miss, and the ranks computing the
// same rows agree on the misses (a MIN over tensor and context parallel) before running the
// prefix for them. The file's name holds the cached layer count, the position, the row's shape,
// a CRC of the parameters the rows depend on and one of the settings that change their bits
// (the model's keys, precision, numerics, device, context mode), so a grown prefix, other weights
// or other arithmetic never read old rows; opening the cache removes every other file there.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/prefix_cache.h"
#include "parallel/parallel_context.h"
#include "train/run_plan.h"

namespace triax {

class FilePrefixCache : public PrefixCache {
 public:
  /// Rows of `row_shape` and `dtype` after `layers` layers, in `path` (opened for reading and
  /// writing, created if absent: throws Error naming it on failure). `agree`: the groups whose
  /// ranks compute the same rows (those of size 1 are skipped).
  /// Each row is [row_shape] of `dtype`; a record is a 16-byte header and the row.
  FilePrefixCache(std::string path, int64_t layers, std::vector<int64_t> row_shape,
                  torch::ScalarType dtype, std::vector<Communicator*> agree);
  ~FilePrefixCache() override;
  FilePrefixCache(const FilePrefixCache&) = delete;
  FilePrefixCache& operator=(const FilePrefixCache&) = delete;

  int64_t layers() const override { return layers_; }
  torch::Tensor fetch(const torch::Tensor& samples, const torch::Tensor& inputs,
                      torch::Tensor* hidden) override;
  void store(const torch::Tensor& samples, const torch::Tensor& inputs,
             const torch::Tensor& hidden) override;

  const std::string& path() const { return path_; }
  /// Rows this rank took from the cache, and computed, since it opened.
  int64_t hits() const { return hits_; }
  int64_t misses() const { return misses_; }

 private:
  struct Header {
    uint64_t tag;         ///< sample + 1 (0: an empty slot of the sparse file)
    uint32_t row_crc;     ///< of the row's bytes
    uint32_t tokens_crc;  ///< of the token ids it was computed from
  };
  int64_t record_bytes() const { return static_cast<int64_t>(sizeof(Header)) + row_bytes_; }

  std::string path_;
  int64_t layers_;
  std::vector<int64_t> row_shape_;
  torch::ScalarType dtype_;
  int64_t row_bytes_;
  std::vector<Communicator*> agree_;
  int fd_ = -1;
  bool writable_ = true;  ///< false after a failed write (warned once): the rows are recomputed
  int64_t hits_ = 0;
  int64_t misses_ = 0;
};

/// Whether `plan` caches its frozen prefix from step `step` (steps done) on: freeze.cache, layers
/// frozen, a run.dir, token data, and a later epoch to read the rows in.
bool prefix_cache_wanted(const RunPlan& plan, int64_t step);

/// This rank's cache when prefix_cache_wanted and it holds the first stage (else null): rows
/// after `layers` layers (Trainer::prefix_layers), computed from `parameters`
/// (Trainer::prefix_parameters). Collective over the world: rank 0 removes the files no rank
/// uses and says what is cached; if any rank cannot open its file (or its disk lacks the room)
/// no rank caches (each says why).
std::unique_ptr<FilePrefixCache> open_prefix_cache(const RunPlan& plan, ParallelContext& context,
                                                   int64_t step, int64_t layers,
                                                   const std::vector<torch::Tensor>& parameters);

}  // namespace triax

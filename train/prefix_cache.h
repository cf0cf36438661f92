// defines: triax::FilePrefixCache, triax::prefix_cache_wanted, triax::open_prefix_cache
//
// AutoCache's rows (models/prefix_cache.h): the frozen prefix's output per training sample, in
// one file per (tensor, context) position under run.dir/autocache/, record i at offset
// i x (header + row). A file rather than this process's memory because the distributed sampler
// deals a sample to a different dp rank every epoch: every dp replica of a position reads and
// writes the same rows (on one node the page cache is the shared memory; the rows are written
// once, when first computed, so the file is no larger than the samples seen). A record carries
// its sample, the CRC of the tokens it was computed from and of its bytes: a row from other
// tokens, a torn write or an empty (sparse) slot reads as a miss, and the ranks computing the
// same rows agree on the misses (a MIN over tensor and context parallel) before running the
// prefix for them. The file's name holds the frozen-layer count, the position and a CRC of the
// frozen parameters, so a grown prefix or other weights never read old rows; opening the cache
// removes every other file there.
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

/// Whether `plan` caches its frozen prefix: freeze.cache, layers frozen, a run.dir and token
/// data.
bool prefix_cache_wanted(const RunPlan& plan);

/// This rank's cache when prefix_cache_wanted and it holds the first stage (else null), after
/// `frozen` parameters (this rank's frozen tensors: their CRC names the file). Collective over
/// the world: rank 0 removes the files no rank uses; if any rank cannot open its file no rank
/// caches (each says why).
std::unique_ptr<FilePrefixCache> open_prefix_cache(const RunPlan& plan, ParallelContext& context,
                                                   const std::vector<torch::Tensor>& frozen);

}  // namespace triax

// The counting allocator sees every CPU tensor allocated after install(): live bytes go up by a
// tensor's size and back down when it is freed, and the peak remembers the high water mark.
// The op profile names the ops a stretch of code ran, with their call counts.
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <algorithm>

#include "core/op_profile.h"
#include "core/tensor_memory.h"

using namespace triax;

TEST_CASE("TensorMemory counts live and peak tensor bytes", "[memory]") {
  TensorMemory::install();
  REQUIRE(TensorMemory::installed());
  const int64_t before = TensorMemory::live();
  TensorMemory::reset_peak();
  {
    const torch::Tensor a = torch::empty({1000}, torch::kFloat);  // 4000 bytes
    CHECK(TensorMemory::live() - before == 4000);
    {
      const torch::Tensor b = torch::empty({250}, torch::kDouble);  // 2000 bytes
      CHECK(TensorMemory::live() - before == 6000);
    }
    CHECK(TensorMemory::live() - before == 4000);
  }
  CHECK(TensorMemory::live() == before);
  CHECK(TensorMemory::peak() - before == 6000);
  TensorMemory::reset_peak();
  CHECK(TensorMemory::peak() == TensorMemory::live());
}

TEST_CASE("OpProfile totals the ops that ran", "[profile]") {
  const torch::Tensor a = torch::randn({16, 16});
  OpProfile profile;
  for (int i = 0; i < 3; ++i) (void)torch::mm(a, a);
  const std::vector<OpTotal> ops = profile.stop();
  const auto mm =
      std::find_if(ops.begin(), ops.end(), [](const OpTotal& op) { return op.name == "aten::mm"; });
  REQUIRE(mm != ops.end());
  CHECK(mm->calls == 3);
  CHECK(mm->total_us >= mm->self_us);
  CHECK(mm->self_us > 0);
  const std::string table = format_op_table(ops, 5, 3, 1000.0);
  CHECK(table.find("aten::mm") != std::string::npos);
  CHECK(table.find("(all ops)") != std::string::npos);
}

#include "parallel/comm/gather_text.h"

namespace triax {

std::vector<std::string> all_gather_text(Communicator& comm, const std::string& text) {
  const torch::Tensor lengths =
      comm.all_gather(torch::tensor({static_cast<int64_t>(text.size())}, torch::kLong));
  const int64_t longest = lengths.max().item<int64_t>();
  torch::Tensor mine = torch::zeros({1, std::max<int64_t>(longest, 1)}, torch::kByte);
  std::copy(text.begin(), text.end(), mine.data_ptr<uint8_t>());
  const torch::Tensor all = comm.all_gather(mine);
  std::vector<std::string> out;
  for (int r = 0; r < comm.size(); ++r) {
    const auto* bytes = all[r].data_ptr<uint8_t>();
    out.emplace_back(reinterpret_cast<const char*>(bytes),
                     static_cast<size_t>(lengths[r].item<int64_t>()));
  }
  return out;
}

}  // namespace triax

#include "interop/hf_folder.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/strings.h"

namespace triax {

namespace fs = std::filesystem;

HfFolder::HfFolder(const std::string& dir) : dir_(dir) {
  const fs::path single = fs::path(dir) / "model.safetensors";
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  if (fs::exists(index)) {
    nlohmann::json j;
    try {
      std::ifstream in(index);
      j = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
      throw ConfigError(str(index.string(), ": not JSON: ", e.what()));
    }
    if (!j.contains("weight_map") || !j["weight_map"].is_object()) {
      throw ConfigError(str(index.string(), ": no weight_map object"));
    }
    std::map<std::string, std::shared_ptr<SafetensorsMap>> opened;
    for (const auto& [name, file] : j["weight_map"].items()) {
      const std::string f = file.get<std::string>();
      auto& map = opened[f];
      if (!map) {
        if (!fs::exists(fs::path(dir) / f)) {
          throw ConfigError(str(index.string(), ": ", name, " is in ", f, ", which is missing"));
        }
        map = std::make_shared<SafetensorsMap>((fs::path(dir) / f).string());
      }
      if (!map->contains(name)) {
        throw ConfigError(str(index.string(), ": ", name, " is not in ", f));
      }
      files_[name] = map;
    }
  } else if (fs::exists(single)) {
    auto map = std::make_shared<SafetensorsMap>(single.string());
    for (const std::string& name : map->names()) files_[name] = map;
  } else {
    throw ConfigError(str(dir, ": neither model.safetensors nor model.safetensors.index.json"));
  }
}

std::vector<std::string> HfFolder::names() const {
  std::vector<std::string> out;
  for (const auto& item : files_) out.push_back(item.first);
  return out;
}

const TensorInfo& HfFolder::info(const std::string& name) const {
  const auto it = files_.find(name);
  if (it == files_.end()) throw ConfigError(str(dir_, ": no tensor ", name));
  return it->second->info(name);
}

torch::Tensor HfFolder::as_float(const std::string& name) const {
  const auto it = files_.find(name);
  if (it == files_.end()) throw ConfigError(str(dir_, ": no tensor ", name));
  return it->second->as_float(name);
}

void HfFolder::release(const std::string& name) const {
  const auto it = files_.find(name);
  if (it != files_.end()) it->second->release(name);
}

}  // namespace triax

// The precompiled header shared by every triax target: LibTorch is most of each file's compile
// time, so it is parsed once per build instead of once per file.
#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

// `triax reshard`, `triax export` (a full-model file or --hf) and `triax import` (either).
#include "tools/commands/command.h"

#include <cstdio>
#include <filesystem>

#include "checkpoint/convert.h"
#include "checkpoint/location.h"
#include "checkpoint/resume.h"
#include "core/error.h"
#include "core/heap_reuse.h"
#include "core/strings.h"
#include "interop/full_model_file.h"
#include "interop/hf_export.h"
#include "interop/hf_import.h"

namespace triax {

int run_convert(const CliArgs& args, int* /*argc*/, char*** /*argv*/) {
  return_freed_heap();  // a model streams through: hold only what is still in use
  const std::string& source = args.inputs[0];
  if (args.command == "import" && std::filesystem::is_directory(source)) {
    const Config base = args.base_config.empty() ? parse_config("{}", args.overrides, "--set")
                                                 : load_config(args.base_config, args.overrides);
    const HfImport imported =
        import_hf(source, base, args.tensor, args.pipeline, args.chunks, args.out);
    std::printf(
        "imported %s (%s, %lld tensors) -> %s (tp %d, pp %d)\n"
        "train it: mpirun -np N build/triax train %s --resume %s\n",
        source.c_str(), imported.hf.architecture.c_str(), static_cast<long long>(imported.tensors),
        imported.checkpoint_dir.c_str(), args.tensor, args.pipeline, imported.config_path.c_str(),
        args.out.c_str());
    return 0;
  }
  if (args.command == "import") {
    const FullModelState state = import_full_model(source);
    const std::string dir =
        write_sharded_checkpoint(state, args.tensor, args.pipeline, args.chunks, args.out);
    std::printf(
        "imported %s: %zu parameters -> %s (tp %d, pp %d); train from it with --resume %s\n",
        source.c_str(), state.tensors.size(), dir.c_str(), args.tensor, args.pipeline, dir.c_str());
    return 0;
  }
  const Manifest manifest = open_checkpoint(source, source);
  FullModelState state = read_full_state(manifest);
  if (args.command == "export" && args.hf) {
    const HfExport exported =
        export_hf(state, args.out, args.dtype, static_cast<int64_t>(args.max_shard_mb) << 20);
    std::printf("exported %s (step %lld) -> %s: %lld tensors, %d file(s), %.1f MiB %s\n",
                manifest.dir.c_str(), static_cast<long long>(state.step), args.out.c_str(),
                static_cast<long long>(exported.tensors), exported.files,
                static_cast<double>(exported.bytes) / (1 << 20), args.dtype.c_str());
    return 0;
  }
  if (args.command == "export") {
    export_full_model(state, args.out);
    std::printf("exported %s (step %lld) -> %s\n", manifest.dir.c_str(),
                static_cast<long long>(state.step), args.out.c_str());
    return 0;
  }
  // Writing a step folder starts by removing it: it must not be the one we read from.
  const std::filesystem::path target =
      std::filesystem::weakly_canonical(std::filesystem::path(args.out) / step_folder(state.step));
  if (target == std::filesystem::weakly_canonical(manifest.dir)) {
    throw ConfigError(str("reshard --out ", args.out, ": would overwrite the source checkpoint ",
                          manifest.dir, " (valid: another folder)"));
  }
  if (!args.schedule.empty()) {
    parse_choice(args.schedule, &state.config.schedule.name);  // checked by the argument parser
  }
  const std::string dir =
      write_sharded_checkpoint(state, args.tensor, args.pipeline, args.chunks, args.out);
  std::printf("resharded %s (tp %lld, pp %lld) -> %s (tp %d, pp %d, %d chunk(s) per rank)\n",
              manifest.dir.c_str(), static_cast<long long>(manifest.tensor),
              static_cast<long long>(manifest.pipeline), dir.c_str(), args.tensor, args.pipeline,
              args.chunks);
  return 0;
}

}  // namespace triax

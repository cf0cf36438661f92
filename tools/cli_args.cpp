#include "tools/cli_args.h"

#include "core/config_choices.h"

#include <cstdlib>

#include "core/error.h"

namespace triax {
namespace {

const std::vector<std::string> kCommands = {
    "train",  "config",    "prepare-data", "plot", "flight",  "reshard", "export",
    "import", "tokenizer", "generate",     "help", "version", "plan",    "calibrate"};
const std::vector<std::string> kOptions = {
    "--set",      "--world",        "--describe", "--markdown",        "--out",
    "--help",     "--val-fraction", "--resume",   "--tensor",          "--pipeline",
    "--chunks",   "--config",       "--hf",       "--dtype",           "--max-shard-mb",
    "--schedule", "--nodes",        "--profile",  "--memory-per-rank", "--top",
    "--csv",      "--rank",         "--groups"};

int parse_size(const std::string& option, const std::string& text) {
  char* end = nullptr;
  const long n = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || n < 1 || n > (1 << 20)) {
    throw ConfigError(str(option, ": '", text, "' is not a positive integer"));
  }
  return static_cast<int>(n);
}

double parse_fraction(const std::string& option, const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(value >= 0.0 && value < 1.0)) {
    throw ConfigError(str(option, ": '", text, "' is not a fraction (valid: 0 <= f < 1)"));
  }
  return value;
}

// "8589934592", "8GiB", "512MiB", "2G": bytes.
double parse_bytes(const std::string& option, const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  const std::string unit = end ? end : "";
  double scale = 0;
  if (unit.empty() || unit == "B") scale = 1;
  if (unit == "K" || unit == "KiB") scale = 1024.0;
  if (unit == "M" || unit == "MiB") scale = 1024.0 * 1024;
  if (unit == "G" || unit == "GiB") scale = 1024.0 * 1024 * 1024;
  if (text.empty() || end == text.c_str() || scale == 0 || !(value > 0)) {
    throw ConfigError(str(option, ": '", text,
                          "' is not a size (valid: bytes, or a number with K, M, G or KiB, MiB, "
                          "GiB: 8GiB)"));
  }
  return value * scale;
}

}  // namespace

std::string usage() {
  return "usage: triax COMMAND [ARGS]\n"
         "\n"
         "commands:\n"
         "  train CONFIG [--set key=value ...] [--resume DIR|latest|auto]\n"
         "                                        train the model CONFIG describes; launch it "
         "with\n"
         "                                        mpirun -np N, srun --mpi=pmi2 or torchrun\n"
         "                                        (dp = N / (tensor * pipeline))\n"
         "  config CONFIG [--set key=value ...] [--world N]\n"
         "                                        validate CONFIG, print it resolved and, with\n"
         "                                        --world, the rank layout for N ranks\n"
         "  config --describe [--markdown]        list every configuration key with its default\n"
         "  prepare-data INPUT... --out DIR [--val-fraction F] [--tokenizer PATH] [--threads N]\n"
         "                                        turn text files (or folders of them) into the\n"
         "                                        token files DIR/train.tok, val.tok (bytes, or\n"
         "                                        the ids of a tokenizer file or folder)\n"
         "  tokenizer train INPUT... --vocab N --out PREFIX [--model-type bpe|unigram]\n"
         "                                        train a SentencePiece tokenizer (PREFIX.model)\n"
         "  tokenizer encode|decode PATH [--pattern gpt2|llama3|qwen2]\n"
         "                                        text on stdin -> ids on stdout, or back\n"
         "  generate CHECKPOINT --prompt TEXT [--tokens N] [--tokenizer PATH] [--ids]\n"
         "                                        greedy continuation on one process (or\n"
         "                                        --prompt-ids 1,2,3 instead of text)\n"
         "  plot RUN_DIR [--out PNG]              draw RUN_DIR/metrics.jsonl's loss curves\n"
         "  flight RUN_DIR                        after a timeout or failure: which rank is\n"
         "                                        behind and where the job is stuck\n"
         "  reshard SRC --tensor T --pipeline P [--chunks V] [--schedule NAME] --out DST\n"
         "                                        rewrite a checkpoint for another tp/pp layout\n"
         "                                        (and schedule: zbv places chunks in a V)\n"
         "  export SRC --out FILE.safetensors     the whole model in one file (full names)\n"
         "  export SRC --hf --out DIR [--dtype fp32|bf16] [--max-shard-mb N]\n"
         "                                        a Hugging Face folder (config.json, "
         "safetensors)\n"
         "  import FILE --tensor T --pipeline P [--chunks V] --out DST\n"
         "                                        a full-model file as a checkpoint (step 0)\n"
         "  import HF_DIR --tensor T --pipeline P --out DST [--config YAML] [--set key=value]\n"
         "                                        a Hugging Face folder as a checkpoint (step 0)\n"
         "                                        and DST/config.yaml to train it with\n"
         "  calibrate CONFIG [--out FILE] [--set key=value ...]\n"
         "                                        measure layer, link and optimizer times for\n"
         "                                        CONFIG's model on the ranks it is launched on\n"
         "                                        (mpirun -np N); writes a profile (default\n"
         "                                        run.dir/profile.yaml or profile.yaml)\n"
         "  plan CONFIG --world N [--nodes K] [--memory-per-rank BYTES] [--profile FILE]\n"
         "       [--top N] [--csv] [--rank R [--groups]]\n"
         "                                        every valid layout ranked by predicted step\n"
         "                                        time and memory; --rank R: a dry run of one\n"
         "                                        rank of the configured layout\n"
         "  version                               print the version\n"
         "  help                                  print this help\n"
         "\n"
         "--set section.key=value overrides one YAML key (the value is YAML: --set "
         "model.mlp_hidden=[512,256]).\n"
         "Example: mpirun -np 8 build/triax train configs/gpt-fortunes.yaml --set train.steps=50\n";
}

CliArgs parse_cli_args(const std::vector<std::string>& argv) {
  CliArgs args;
  if (argv.empty() || argv[0] == "-h" || argv[0] == "--help") {
    args.command = "help";
    return args;
  }
  args.command = argv[0];
  if (std::find(kCommands.begin(), kCommands.end(), args.command) == kCommands.end()) {
    const std::string hint = closest(args.command, kCommands);
    throw ConfigError(str("unknown command '", args.command, "'",
                          hint.empty() ? "" : str(" (did you mean '", hint, "'?)"),
                          "; commands: ", join(kCommands, ", "), " (see triax --help)"));
  }
  const bool takes_config = args.command == "train" || args.command == "config" ||
                            args.command == "plan" || args.command == "calibrate";
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    const auto value = [&](const std::string& option) -> std::string {
      if (i + 1 >= argv.size()) throw ConfigError(str(option, " needs a value"));
      return argv[++i];
    };
    if (arg == "--set") {
      args.overrides.push_back(value(arg));
    } else if (arg.rfind("--set=", 0) == 0) {
      args.overrides.push_back(arg.substr(6));
    } else if (arg == "--world") {
      const std::string text = value(arg);
      char* end = nullptr;
      const long n = std::strtol(text.c_str(), &end, 10);
      if (text.empty() || *end != '\0' || n < 1 || n > (1 << 24)) {
        throw ConfigError(str("--world: '", text, "' is not a positive integer"));
      }
      args.world = static_cast<int>(n);
    } else if (arg == "--nodes") {
      args.nodes = parse_size(arg, value(arg));
    } else if (arg == "--profile") {
      args.profile = value(arg);
    } else if (arg == "--memory-per-rank") {
      args.memory_per_rank = parse_bytes(arg, value(arg));
    } else if (arg == "--top") {
      const std::string text = value(arg);
      args.top = text == "0" ? 0 : parse_size(arg, text);
    } else if (arg == "--csv") {
      args.csv = true;
    } else if (arg == "--rank") {
      const std::string text = value(arg);
      args.rank = text == "0" ? 0 : parse_size(arg, text);
    } else if (arg == "--groups") {
      args.groups = true;
    } else if (arg == "--describe") {
      args.describe = true;
    } else if (arg == "--markdown") {
      args.markdown = true;
    } else if (arg == "--out") {
      args.out = value(arg);
    } else if (arg == "--tensor" || arg == "--pipeline" || arg == "--chunks") {
      const int n = parse_size(arg, value(arg));
      (arg == "--tensor" ? args.tensor : arg == "--pipeline" ? args.pipeline : args.chunks) = n;
    } else if (arg == "--config") {
      args.base_config = value(arg);
    } else if (arg == "--schedule") {
      args.schedule = value(arg);
      ScheduleKind kind;
      if (!parse_choice(args.schedule, &kind)) {
        throw ConfigError(str("--schedule: '", args.schedule,
                              "' (valid: ", join(choice_names<ScheduleKind>(), ", "), ")"));
      }
    } else if (arg == "--hf") {
      args.hf = true;
    } else if (arg == "--dtype") {
      args.dtype = value(arg);
      if (args.dtype != "fp32" && args.dtype != "bf16") {
        throw ConfigError(str("--dtype: '", args.dtype, "' (valid: fp32, bf16)"));
      }
    } else if (arg == "--max-shard-mb") {
      args.max_shard_mb = parse_size(arg, value(arg));
    } else if (arg == "--tokenizer") {
      args.tokenizer = value(arg);
    } else if (arg == "--threads") {
      args.threads = parse_size(arg, value(arg));
    } else if (arg == "--pattern") {
      args.pattern = value(arg);
    } else if (arg == "--vocab") {
      args.vocab_size = parse_size(arg, value(arg));
    } else if (arg == "--model-type") {
      args.model_type = value(arg);
    } else if (arg == "--prompt") {
      args.prompt = value(arg);
    } else if (arg == "--prompt-ids") {
      args.prompt_ids = value(arg);
    } else if (arg == "--tokens") {
      args.tokens = parse_size(arg, value(arg));
    } else if (arg == "--ids") {
      args.print_ids = true;
    } else if (arg == "--resume") {
      args.resume = value(arg);
    } else if (arg == "--val-fraction") {
      args.val_fraction = parse_fraction(arg, value(arg));
    } else if (arg == "--help" || arg == "-h") {
      args.command = "help";
    } else if (arg.rfind("-", 0) == 0) {
      const std::string hint = closest(arg, kOptions);
      throw ConfigError(str("unknown option '", arg, "'",
                            hint.empty() ? "" : str(" (did you mean '", hint, "'?)"),
                            " (see triax --help)"));
    } else if (!takes_config) {
      args.inputs.push_back(arg);
    } else if (args.config_path.empty()) {
      args.config_path = arg;
    } else {
      throw ConfigError(str("unexpected argument '", arg, "': ", args.command,
                            " takes one CONFIG file (did you forget --set?)"));
    }
  }
  const bool needs_config = args.command == "train" || args.command == "plan" ||
                            args.command == "calibrate" ||
                            (args.command == "config" && !args.describe);
  if (needs_config && args.config_path.empty()) {
    throw ConfigError(str("triax ", args.command, " needs a CONFIG file, e.g. triax ", args.command,
                          " configs/gpt-fortunes.yaml"));
  }
  if (args.command == "plan" && args.world == 0) {
    throw ConfigError(str("triax plan needs --world N (the ranks to plan for), e.g. triax plan ",
                          args.config_path, " --world 8"));
  }
  if (args.rank >= 0 && args.rank >= args.world) {
    throw ConfigError(str("--rank ", args.rank, ": not a rank of --world ", args.world,
                          " (valid: 0 .. ", args.world - 1, ")"));
  }
  if (args.command == "prepare-data" && (args.inputs.empty() || args.out.empty())) {
    throw ConfigError(
        "triax prepare-data needs text files or folders and --out DIR, e.g. triax prepare-data "
        "/usr/share/games/fortunes --out runs/tokens/fortunes");
  }
  if ((args.command == "reshard" || args.command == "import") &&
      (args.inputs.size() != 1 || args.out.empty() || args.tensor == 0 || args.pipeline == 0)) {
    throw ConfigError(
        str("triax ", args.command, " needs ",
            args.command == "reshard" ? "SRC_CHECKPOINT" : "FULL_MODEL.safetensors or HF_DIR",
            " --tensor T --pipeline P --out DST_DIR"));
  }
  if (args.command == "export" && (args.inputs.size() != 1 || args.out.empty())) {
    throw ConfigError(
        "triax export needs SRC_CHECKPOINT --out FULL_MODEL.safetensors (or --hf --out DIR)");
  }
  if (args.command == "tokenizer") {
    const std::string action = args.inputs.empty() ? "" : args.inputs[0];
    if (action == "train" && (args.inputs.size() < 2 || args.out.empty())) {
      throw ConfigError("triax tokenizer train needs INPUT... --out PREFIX [--vocab N]");
    }
    if ((action == "encode" || action == "decode") && args.inputs.size() != 2) {
      throw ConfigError(str("triax tokenizer ", action, " needs one tokenizer PATH"));
    }
    if (action != "train" && action != "encode" && action != "decode") {
      throw ConfigError(str("triax tokenizer '", action, "' (valid: train, encode, decode)"));
    }
  }
  if (args.command == "generate" &&
      (args.inputs.size() != 1 || (args.prompt.empty() && args.prompt_ids.empty()))) {
    throw ConfigError("triax generate needs CHECKPOINT and --prompt TEXT (or --prompt-ids 1,2,3)");
  }
  if ((args.command == "plot" || args.command == "flight") && args.inputs.size() != 1) {
    throw ConfigError(
        str("triax ", args.command, " needs one RUN_DIR (the run.dir of a training run)"));
  }
  return args;
}

}  // namespace triax

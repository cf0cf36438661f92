#include "tools/cli_args.h"

#include "core/config_choices.h"

#include <cstdlib>

#include "core/error.h"

namespace triax {
namespace {

int parse_size(const std::string& option, const std::string& text, long most = 1 << 20) {
  char* end = nullptr;
  const long n = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || n < 1 || n > most) {
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

// A count where 0 means "none" or "all" (--top, --rank).
int parse_count_or_zero(const std::string& option, const std::string& text) {
  return text == "0" ? 0 : parse_size(option, text);
}

using Setter = void (*)(CliArgs& args, const std::string& option, const std::string& value);

// One option: its name, whether a value follows it, and what it sets (the option's name comes
// along for messages).
struct CliOption {
  const char* name;
  bool takes_value;
  Setter set;
};

const std::vector<CliOption>& cli_options() {
  using A = CliArgs;
  using S = const std::string&;
  static const std::vector<CliOption> options = {
      {"--set", true, [](A& a, S, S v) { a.overrides.push_back(v); }},
      {"--world", true, [](A& a, S o, S v) { a.world = parse_size(o, v, 1 << 24); }},
      {"--describe", false, [](A& a, S, S) { a.describe = true; }},
      {"--markdown", false, [](A& a, S, S) { a.markdown = true; }},
      {"--out", true, [](A& a, S, S v) { a.out = v; }},
      {"--val-fraction", true, [](A& a, S o, S v) { a.val_fraction = parse_fraction(o, v); }},
      {"--resume", true, [](A& a, S, S v) { a.resume = v; }},
      {"--tensor", true, [](A& a, S o, S v) { a.tensor = parse_size(o, v); }},
      {"--pipeline", true, [](A& a, S o, S v) { a.pipeline = parse_size(o, v); }},
      {"--chunks", true, [](A& a, S o, S v) { a.chunks = parse_size(o, v); }},
      {"--schedule", true,
       [](A& a, S, S v) {
         ScheduleKind kind;
         if (!parse_choice(v, &kind)) {
           throw ConfigError(str("--schedule: '", v,
                                 "' (valid: ", join(choice_names<ScheduleKind>(), ", "), ")"));
         }
         a.schedule = v;
       }},
      {"--config", true, [](A& a, S, S v) { a.base_config = v; }},
      {"--hf", false, [](A& a, S, S) { a.hf = true; }},
      {"--dtype", true,
       [](A& a, S, S v) {
         if (v != "fp32" && v != "bf16") {
           throw ConfigError(str("--dtype: '", v, "' (valid: fp32, bf16)"));
         }
         a.dtype = v;
       }},
      {"--max-shard-mb", true, [](A& a, S o, S v) { a.max_shard_mb = parse_size(o, v); }},
      {"--tokenizer", true, [](A& a, S, S v) { a.tokenizer = v; }},
      {"--threads", true, [](A& a, S o, S v) { a.threads = parse_size(o, v); }},
      {"--pattern", true, [](A& a, S, S v) { a.pattern = v; }},
      {"--vocab", true, [](A& a, S o, S v) { a.vocab_size = parse_size(o, v); }},
      {"--model-type", true, [](A& a, S, S v) { a.model_type = v; }},
      {"--prompt", true, [](A& a, S, S v) { a.prompt = v; }},
      {"--prompt-ids", true, [](A& a, S, S v) { a.prompt_ids = v; }},
      {"--tokens", true, [](A& a, S o, S v) { a.tokens = parse_size(o, v); }},
      {"--ids", false, [](A& a, S, S) { a.print_ids = true; }},
      {"--nodes", true, [](A& a, S o, S v) { a.nodes = parse_size(o, v), a.nodes_given = true; }},
      {"--device", true, [](A& a, S, S v) { a.device = v; }},
      {"--gpus-per-node", true, [](A& a, S o, S v) { a.gpus_per_node = parse_size(o, v); }},
      {"--explain", true, [](A& a, S o, S v) { a.explain = parse_size(o, v); }},
      {"--profile", true, [](A& a, S, S v) { a.profile = v; }},
      {"--memory-per-rank", true, [](A& a, S o, S v) { a.memory_per_rank = parse_bytes(o, v); }},
      {"--top", true, [](A& a, S o, S v) { a.top = parse_count_or_zero(o, v); }},
      {"--csv", false, [](A& a, S, S) { a.csv = true; }},
      {"--rank", true, [](A& a, S o, S v) { a.rank = parse_count_or_zero(o, v); }},
      {"--groups", false, [](A& a, S, S) { a.groups = true; }},
      {"--help", false, [](A& a, S, S) { a.command = "help"; }},
      {"-h", false, [](A& a, S, S) { a.command = "help"; }},
  };
  return options;
}

const CliOption* find_option(const std::string& name) {
  for (const CliOption& option : cli_options()) {
    if (name == option.name) return &option;
  }
  return nullptr;
}

// What a command needs beyond its options' own rules; each throws ConfigError naming it.
void needs_config(const CliArgs& a) {
  if (a.config_path.empty()) {
    throw ConfigError(str("triax ", a.command, " needs a CONFIG file, e.g. triax ", a.command,
                          " configs/gpt-fortunes.yaml"));
  }
}

void check_config(const CliArgs& a) {
  if (!a.describe) needs_config(a);
}

void check_plan(const CliArgs& a) {
  needs_config(a);
  if (a.world == 0) {
    throw ConfigError(str("triax plan needs --world N (the ranks to plan for), e.g. triax plan ",
                          a.config_path, " --world 8"));
  }
}

void check_prepare_data(const CliArgs& a) {
  if (a.inputs.empty() || a.out.empty()) {
    throw ConfigError(
        "triax prepare-data needs text files or folders and --out DIR, e.g. triax prepare-data "
        "/usr/share/games/fortunes --out runs/tokens/fortunes");
  }
}

void check_layout_conversion(const CliArgs& a) {
  if (a.inputs.size() != 1 || a.out.empty() || a.tensor == 0 || a.pipeline == 0) {
    throw ConfigError(
        str("triax ", a.command, " needs ",
            a.command == "reshard" ? "SRC_CHECKPOINT" : "FULL_MODEL.safetensors or HF_DIR",
            " --tensor T --pipeline P --out DST_DIR"));
  }
}

void check_export(const CliArgs& a) {
  if (a.inputs.size() != 1 || a.out.empty()) {
    throw ConfigError(
        "triax export needs SRC_CHECKPOINT --out FULL_MODEL.safetensors (or --hf --out DIR)");
  }
}

void check_tokenizer(const CliArgs& a) {
  const std::string action = a.inputs.empty() ? "" : a.inputs[0];
  if (action == "train" && (a.inputs.size() < 2 || a.out.empty())) {
    throw ConfigError("triax tokenizer train needs INPUT... --out PREFIX [--vocab N]");
  }
  if ((action == "encode" || action == "decode") && a.inputs.size() != 2) {
    throw ConfigError(str("triax tokenizer ", action, " needs one tokenizer PATH"));
  }
  if (action != "train" && action != "encode" && action != "decode") {
    throw ConfigError(str("triax tokenizer '", action, "' (valid: train, encode, decode)"));
  }
}

void check_generate(const CliArgs& a) {
  if (a.inputs.size() != 1 || (a.prompt.empty() && a.prompt_ids.empty())) {
    throw ConfigError("triax generate needs CHECKPOINT and --prompt TEXT (or --prompt-ids 1,2,3)");
  }
}

void check_run_dir(const CliArgs& a) {
  if (a.inputs.size() != 1) {
    throw ConfigError(
        str("triax ", a.command, " needs one RUN_DIR (the run.dir of a training run)"));
  }
}

void nothing(const CliArgs& /*args*/) {}

// One command: its name, its lines in --help, whether its positional argument is one CONFIG
// file (else a list of inputs), and what it needs.
struct CliCommand {
  const char* name;
  const char* usage;
  bool takes_config;
  void (*check)(const CliArgs& args);
};

const std::vector<CliCommand>& cli_commands() {
  static const std::vector<CliCommand> commands = {
      {"train",
       "  train CONFIG [--set key=value ...] [--resume DIR|latest|auto]\n"
       "                                        train the model CONFIG describes; launch it with\n"
       "                                        mpirun -np N, srun --mpi=pmi2 or torchrun\n"
       "                                        (dp = N / (context * tensor * pipeline))\n",
       true, needs_config},
      {"config",
       "  config CONFIG [--set key=value ...] [--world N]\n"
       "                                        validate CONFIG, print it resolved and, with\n"
       "                                        --world, the rank layout for N ranks\n"
       "  config --describe [--markdown]        list every configuration key with its default\n",
       true, check_config},
      {"prepare-data",
       "  prepare-data INPUT... --out DIR [--val-fraction F] [--tokenizer PATH] [--threads N]\n"
       "                                        turn text files (or folders of them) into the\n"
       "                                        token files DIR/train.tok, val.tok (bytes, or\n"
       "                                        the ids of a tokenizer file or folder)\n",
       false, check_prepare_data},
      {"tokenizer",
       "  tokenizer train INPUT... --vocab N --out PREFIX [--model-type bpe|unigram]\n"
       "                                        train a SentencePiece tokenizer (PREFIX.model)\n"
       "  tokenizer encode|decode PATH [--pattern gpt2|llama3|qwen2]\n"
       "                                        text on stdin -> ids on stdout, or back\n",
       false, check_tokenizer},
      {"generate",
       "  generate CHECKPOINT --prompt TEXT [--tokens N] [--tokenizer PATH] [--ids]\n"
       "                                        greedy continuation on one process (or\n"
       "                                        --prompt-ids 1,2,3 instead of text)\n",
       false, check_generate},
      {"plot", "  plot RUN_DIR [--out PNG]              draw RUN_DIR/metrics.jsonl's loss curves\n",
       false, check_run_dir},
      {"flight",
       "  flight RUN_DIR                        after a timeout or failure: which rank is\n"
       "                                        behind and where the job is stuck\n",
       false, check_run_dir},
      {"reshard",
       "  reshard SRC --tensor T --pipeline P [--chunks V] [--schedule NAME] --out DST\n"
       "                                        rewrite a checkpoint for another tp/pp layout\n"
       "                                        (and schedule: zbv places chunks in a V)\n",
       false, check_layout_conversion},
      {"export",
       "  export SRC --out FILE.safetensors     the whole model in one file (full names)\n"
       "  export SRC --hf --out DIR [--dtype fp32|bf16] [--max-shard-mb N]\n"
       "                                        a Hugging Face folder (config.json, safetensors)\n",
       false, check_export},
      {"import",
       "  import FILE --tensor T --pipeline P [--chunks V] --out DST\n"
       "                                        a full-model file as a checkpoint (step 0)\n"
       "  import HF_DIR --tensor T --pipeline P --out DST [--config YAML] [--set key=value]\n"
       "                                        a Hugging Face folder as a checkpoint (step 0)\n"
       "                                        and DST/config.yaml to train it with\n",
       false, check_layout_conversion},
      {"calibrate",
       "  calibrate CONFIG [--out FILE] [--set key=value ...]\n"
       "                                        measure layer, link and optimizer times for\n"
       "                                        CONFIG's model on the ranks it is launched on\n"
       "                                        (mpirun -np N); writes a profile (default\n"
       "                                        run.dir/profile.yaml or profile.yaml)\n",
       true, needs_config},
      {"plan",
       "  plan CONFIG --world N [--nodes K] [--memory-per-rank BYTES] [--profile FILE]\n"
       "       [--device NAME|FILE [--gpus-per-node G]] [--top N] [--csv] [--explain ROW]\n"
       "       [--rank R [--groups]]\n"
       "                                        every valid layout ranked by predicted step\n"
       "                                        time and memory; --device: for a GPU cluster\n"
       "                                        (a100-40gb, a100-80gb, h100, h200, b200, or a\n"
       "                                        device file); --explain ROW: the arithmetic of\n"
       "                                        one row; --rank R: a dry run of one rank of the\n"
       "                                        configured layout\n",
       true, check_plan},
      {"version", "  version                               print the version\n", false, nothing},
      {"help", "  help                                  print this help\n", false, nothing},
  };
  return commands;
}

const CliCommand* find_command(const std::string& name) {
  for (const CliCommand& command : cli_commands()) {
    if (name == command.name) return &command;
  }
  return nullptr;
}

template <typename Table>
std::vector<std::string> names_of(const Table& table) {
  std::vector<std::string> names;
  for (const auto& item : table) names.push_back(item.name);
  return names;
}

}  // namespace

std::string usage() {
  std::string text = "usage: triax COMMAND [ARGS]\n\ncommands:\n";
  for (const CliCommand& command : cli_commands()) text += command.usage;
  return text +
         "\n"
         "--set section.key=value overrides one YAML key (the value is YAML: --set "
         "model.mlp_hidden=[512,256]).\n"
         "Example: mpirun -np 8 build/triax train configs/gpt-fortunes.yaml --set "
         "train.steps=50\n";
}

CliArgs parse_cli_args(const std::vector<std::string>& argv) {
  CliArgs args;
  if (argv.empty() || argv[0] == "-h" || argv[0] == "--help") {
    args.command = "help";
    return args;
  }
  args.command = argv[0];
  const CliCommand* command = find_command(args.command);
  if (!command) {
    const std::vector<std::string> names = names_of(cli_commands());
    const std::string hint = closest(args.command, names);
    throw ConfigError(str("unknown command '", args.command, "'",
                          hint.empty() ? "" : str(" (did you mean '", hint, "'?)"),
                          "; commands: ", join(names, ", "), " (see triax --help)"));
  }
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    const bool inline_set = arg.rfind("--set=", 0) == 0;
    const CliOption* option = find_option(inline_set ? "--set" : arg);
    if (option) {
      std::string value;
      if (inline_set) {
        value = arg.substr(6);
      } else if (option->takes_value) {
        if (i + 1 >= argv.size()) throw ConfigError(str(arg, " needs a value"));
        value = argv[++i];
      }
      option->set(args, option->name, value);
    } else if (arg.rfind("-", 0) == 0) {
      const std::string hint = closest(arg, names_of(cli_options()));
      throw ConfigError(str("unknown option '", arg, "'",
                            hint.empty() ? "" : str(" (did you mean '", hint, "'?)"),
                            " (see triax --help)"));
    } else if (!command->takes_config) {
      args.inputs.push_back(arg);
    } else if (args.config_path.empty()) {
      args.config_path = arg;
    } else {
      throw ConfigError(str("unexpected argument '", arg, "': ", args.command,
                            " takes one CONFIG file (did you forget --set?)"));
    }
  }
  if (args.command != "help") command->check(args);  // --help anywhere: help
  if (args.rank >= 0 && args.rank >= args.world) {
    throw ConfigError(str("--rank ", args.rank, ": not a rank of --world ", args.world,
                          " (valid: 0 .. ", args.world - 1, ")"));
  }
  return args;
}

}  // namespace triax

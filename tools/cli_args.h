// defines: triax::CliArgs, triax::parse_cli_args
//
// The command line: `triax COMMAND [ARGS]` (see usage()). Kept apart from main so that it can be
// tested, and so that every mistake names the argument.
#pragma once

#include <string>
#include <vector>

namespace triax {

struct CliArgs {
  std::string command;  ///< train, config, prepare-data, plot, reshard, export, import, tokenizer,
                        ///< generate, help, version
  std::string config_path;             ///< train/config: the YAML file
  std::vector<std::string> overrides;  ///< --set key=value, in order
  int world = 0;                       ///< --world N (config): layout for N ranks; 0 = launch's
  bool describe = false;               ///< --describe (config): list every key
  bool markdown = false;               ///< --markdown (config --describe): as a Markdown table
  std::vector<std::string>
      inputs;  ///< prepare-data: text files or folders; plot: RUN_DIR; reshard/export/import: SRC;
               ///< tokenizer: ACTION and its paths; generate: CHECKPOINT
  std::string out;                 ///< --out: prepare-data's folder, plot's PNG
  double val_fraction = 0.05;      ///< --val-fraction (prepare-data)
  std::string resume;              ///< --resume DIR|latest (train): continue a checkpoint
  int tensor = 0;                  ///< --tensor T (reshard, import)
  int pipeline = 0;                ///< --pipeline P (reshard, import)
  int chunks = 1;                  ///< --chunks V (reshard, import): chunks per pipeline rank
  std::string schedule;            ///< --schedule NAME (reshard): the schedule the copy is for
  std::string base_config;         ///< --config YAML (import of a Hugging Face folder): the rest
  bool hf = false;                 ///< --hf (export): a Hugging Face folder
  std::string dtype = "fp32";      ///< --dtype fp32|bf16 (export --hf)
  int max_shard_mb = 0;            ///< --max-shard-mb N (export --hf): 0 = one file
  std::string tokenizer;           ///< --tokenizer PATH (prepare-data, generate)
  int threads = 0;                 ///< --threads N (prepare-data): 0 = every core
  std::string pattern = "llama3";  ///< --pattern gpt2|llama3|qwen2: a tiktoken file's
  int vocab_size = 8000;           ///< --vocab N (tokenizer train)
  std::string model_type = "bpe";  ///< --model-type bpe|unigram (tokenizer train)
  std::string prompt;              ///< --prompt TEXT (generate)
  std::string prompt_ids;          ///< --prompt-ids 1,2,3 (generate): ids instead of text
  int tokens = 50;                 ///< --tokens N (generate): tokens to add
  bool print_ids = false;          ///< --ids (generate): print the ids too
  int nodes = 1;                   ///< --nodes K (plan): ranks in K equal consecutive blocks
  bool nodes_given = false;        ///< --nodes was given (else --device's nodes decide)
  std::string device;              ///< --device NAME|FILE (plan): a GPU to plan for
  int gpus_per_node = 0;           ///< --gpus-per-node G (plan --device): 0 = the device's
  int explain = 0;                 ///< --explain ROW (plan): one row's arithmetic; 0 = none
  std::string profile;             ///< --profile FILE (plan): a `triax calibrate` profile
  double memory_per_rank = 0;      ///< --memory-per-rank BYTES (plan): 0 = no limit
  int top = 10;                    ///< --top N (plan): rows shown; 0 = all
  bool csv = false;                ///< --csv (plan): every row as CSV
  int rank = -1;                   ///< --rank R (plan): dry run of rank R; -1 = none
  bool groups = false;             ///< --groups (plan --rank): the full group table
};

/// Throws ConfigError (with a "did you mean") on an unknown subcommand or option.
CliArgs parse_cli_args(const std::vector<std::string>& argv);

/// The text of `triax --help`.
std::string usage();

}  // namespace triax

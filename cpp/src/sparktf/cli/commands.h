// Internal to the CLI: subcommand registration. Commands report failure by
// throwing CLI::RuntimeError(exit_code) after printing to stderr.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "sparktf/common/status.h"

namespace sparktf::cli {

void AddRecordsCommands(CLI::App* records);
void AddClusterCommands(CLI::App* app);
void AddStatusCommand(CLI::App* app);

struct ConvertOptions {
  std::vector<std::string> inputs;
  std::string format = "auto";  // csv | jsonl | auto (by extension)
  std::string output_dir;
  std::string prefix = "part";
  int shards = 1;
  std::string compression;
  std::string schema;  // "name:dtype,..." overrides inference per column
  char delimiter = ',';
};

// Converts CSV (with a header row) or JSON lines into TFRecord shards of
// tf.train.Example. Prints a summary to stdout.
Status Convert(const ConvertOptions& options);

}  // namespace sparktf::cli

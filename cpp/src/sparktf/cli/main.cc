// sparktf: the command-line tool. `sparktf records ...` reads, checks and
// converts TFRecord files; later: `launch` and `status`.
#include <CLI/CLI.hpp>

#include "sparktf/cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"sparktf: distributed TensorFlow on Spark (native tools)"};
  app.require_subcommand(1);
  CLI::App* records =
      app.add_subcommand("records", "Read, check and convert TFRecord files");
  records->require_subcommand(1);
  sparktf::cli::AddRecordsCommands(records);
  sparktf::cli::AddClusterCommands(&app);
  CLI11_PARSE(app, argc, argv);
  return 0;
}

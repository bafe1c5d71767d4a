// sparktf: the command-line tool. `sparktf records ...` reads, checks and
// converts TFRecord files; later: `launch` and `status`.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "sparktf/cli/commands.h"

namespace {

// Commands written in Python (`sparktf tensorboard ARGS`, `sparktf pack ARGS`) run
// `python -m sparktf.COMMAND ARGS` with the interpreter of the environment this binary
// was installed into ($SPARKTF_PYTHON overrides it).
bool IsPythonCommand(const std::string& name) { return name == "tensorboard" || name == "pack"; }

int RunPythonCommand(int argc, char** argv) {
  std::string python = "python3";
  if (const char* env = std::getenv("SPARKTF_PYTHON")) {
    python = env;
  } else {
    std::error_code ec;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec && std::filesystem::exists(self.parent_path() / "python", ec)) {
      python = (self.parent_path() / "python").string();  // a virtual environment's bin/
    }
  }
  std::string module = "sparktf." + std::string(argv[1]);
  std::vector<char*> args{python.data(), const_cast<char*>("-m"), module.data()};
  for (int i = 2; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  ::execvp(python.c_str(), args.data());
  std::cerr << "sparktf: " << argv[1] << ": cannot run " << python << ": " << std::strerror(errno)
            << "\n";
  return 127;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && IsPythonCommand(argv[1])) return RunPythonCommand(argc, argv);
  CLI::App app{"sparktf: distributed TensorFlow on Spark (native tools)"};
  app.require_subcommand(1);
  CLI::App* records =
      app.add_subcommand("records", "Read, check and convert TFRecord files");
  records->require_subcommand(1);
  sparktf::cli::AddRecordsCommands(records);
  sparktf::cli::AddClusterCommands(&app);
  sparktf::cli::AddStatusCommand(&app);
  app.add_subcommand("tensorboard",
                     "TensorBoard for logdirs on hdfs://, s3:// or local disks "
                     "(python -m sparktf.tensorboard; its options pass through)");
  app.add_subcommand("pack",
                     "This virtual environment as an archive for spark-submit --archives "
                     "(python -m sparktf.pack; -h for its options)");
  CLI11_PARSE(app, argc, argv);
  return 0;
}

// Fuzzes the URI helpers of the filesystem seam and Glob's pattern walk (over an
// in-memory filesystem): no crash, no out-of-bounds access, and the invariants that
// callers rely on.
#include <cstdint>
#include <string>

#include "sparktf/fs/file_system.h"
#include "sparktf/fs/testutil_internal.h"

namespace {

std::shared_ptr<sparktf::testing::MemoryFileSystem> MemFs() {
  static auto fs = [] {
    auto f = std::make_shared<sparktf::testing::MemoryFileSystem>();
    for (const char* k : {"mem://b/d/part-0", "mem://b/d/part-1", "mem://b/d/sub/x",
                          "mem:///root/a", "mem://b/_temporary/0/part-0"}) {
      f->Put(k, "data");
    }
    sparktf::FileSystemRegistry::Default().Register(
        "mem", [f](const std::string&) -> sparktf::Result<std::shared_ptr<sparktf::FileSystem>> {
          return std::shared_ptr<sparktf::FileSystem>(f);
        });
    return f;
  }();
  return fs;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sparktf;
  MemFs();
  const std::string input(reinterpret_cast<const char*>(data), size);
  auto parts = ParseUri(input);
  if (parts.ok() && !parts->scheme.empty()) {
    // A parsed URI keeps its scheme and authority when joined and taken apart again.
    const std::string joined = JoinUri(input, "child");
    auto again = ParseUri(joined);
    if (!again.ok() || again->scheme != parts->scheme || again->authority != parts->authority) {
      __builtin_trap();
    }
    if (UriBaseName(joined) != "child") __builtin_trap();
  }
  (void)UriParent(input);
  (void)UriBaseName(input);
  (void)HasGlobChars(input);
  // Globs over the fake filesystem: every match must exist.
  const std::string pattern = "mem://b/" + input.substr(0, 64);
  auto matches = Glob(pattern);
  if (matches.ok()) {
    for (const auto& m : *matches) {
      auto exists = PathExists(m);
      if (!exists.ok() || !*exists) __builtin_trap();
    }
  }
  return 0;
}

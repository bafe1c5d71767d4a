// The filesystem seam (sparktf/fs/) for Python: sparktf.fs and the dfutil committer.
// Every call releases the GIL while it talks to a store.
#include <optional>

#include "bindings.h"
#include "sparktf/fs/file_system.h"
#include "sparktf/fs/hdfs_file_system_internal.h"
#include "sparktf/fs/output_committer.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

namespace sparktf::python {
namespace {

template <typename F>
auto Unlocked(F&& f) {
  auto r = [&] {
    nb::gil_scoped_release release;
    return f();
  }();
  if constexpr (std::is_same_v<decltype(r), Status>) {
    ThrowIfError(r);
  } else {
    return ValueOrThrow(std::move(r));
  }
}

using InfoTuple = std::tuple<std::string, int64_t, int64_t, bool>;
InfoTuple ToTuple(const FileInfo& i) { return {i.uri, i.size, i.mtime_ms, i.is_dir}; }

class PyInputFile {
 public:
  explicit PyInputFile(const std::string& uri)
      : file_(Unlocked([&] { return OpenInputFile(uri); })) {}
  nb::bytes Read(int64_t n) {
    std::string buf = ReadInto(n, [&](char* dst, size_t k) { return Live()->Read(dst, k); });
    return nb::bytes(buf.data(), buf.size());
  }
  nb::bytes ReadAt(uint64_t offset, int64_t n) {
    std::string buf =
        ReadInto(n, [&](char* dst, size_t k) { return Live()->ReadAt(offset, dst, k); });
    return nb::bytes(buf.data(), buf.size());
  }
  void Seek(uint64_t pos) {
    Unlocked([&] { return Live()->Seek(pos); });
  }
  int64_t Size() { return Live()->Size(); }
  void Close() { file_.reset(); }

 private:
  RandomAccessFile* Live() {
    if (!file_) throw StatusError(Status::InvalidArgument("file is closed"));
    return file_.get();
  }
  // Reads up to n bytes (all that is left when n < 0), looping over short reads.
  template <typename ReadFn>
  std::string ReadInto(int64_t n, ReadFn&& read) {
    const int64_t size = Live()->Size();
    const size_t want = n >= 0 ? static_cast<size_t>(n) : static_cast<size_t>(size);
    std::string buf(want, '\0');
    size_t done = 0;
    Status st;
    {
      nb::gil_scoped_release release;
      while (done < want) {
        Result<size_t> got = read(buf.data() + done, want - done);
        if (!got.ok()) {
          st = got.status();
          break;
        }
        if (*got == 0) break;
        done += *got;
        if (n >= 0) break;  // one read, like io.RawIOBase.read
      }
    }
    ThrowIfError(st);
    buf.resize(done);
    return buf;
  }
  std::unique_ptr<RandomAccessFile> file_;
};

class PyOutputFile {
 public:
  explicit PyOutputFile(const std::string& uri)
      : file_(Unlocked([&] { return OpenOutputFile(uri); })) {}
  void Write(nb::bytes data) {
    const std::string_view view(data.c_str(), data.size());
    Unlocked([&] { return Live()->Write(view); });
  }
  void Close() {
    if (!file_) return;
    Unlocked([&] { return file_->Close(); });
    file_.reset();
  }
  void Abort() {
    if (!file_) return;
    Unlocked([&] { return file_->Abort(); });
    file_.reset();
  }

 private:
  WritableFile* Live() {
    if (!file_) throw StatusError(Status::InvalidArgument("file is closed"));
    return file_.get();
  }
  std::unique_ptr<WritableFile> file_;
};

}  // namespace

void InitFs(nb::module_& m) {
  m.def("fs_stat", [](const std::string& uri) {
    return ToTuple(Unlocked([&] { return StatPath(uri); }));
  });
  m.def("fs_exists",
        [](const std::string& uri) { return Unlocked([&] { return PathExists(uri); }); });
  m.def("fs_list", [](const std::string& uri) {
    std::vector<InfoTuple> out;
    for (const auto& i : Unlocked([&] { return ListDir(uri); })) out.push_back(ToTuple(i));
    return out;
  });
  m.def("fs_glob",
        [](const std::string& pattern) { return Unlocked([&] { return Glob(pattern); }); });
  m.def("fs_mkdirs", [](const std::string& uri) { Unlocked([&] { return MakeDirs(uri); }); });
  m.def(
      "fs_delete",
      [](const std::string& uri, bool recursive) {
        Unlocked([&] { return DeletePath(uri, recursive); });
      },
      nb::arg("uri"), nb::arg("recursive") = false);
  m.def("fs_rename", [](const std::string& from, const std::string& to) {
    Unlocked([&] { return RenamePath(from, to); });
  });
  m.def("fs_schemes", [] { return FileSystemRegistry::Default().Schemes(); });
  m.def("hadoop_default_fs", [] {
    nb::gil_scoped_release release;
    return HadoopDefaultFs();
  });

  nb::class_<PyInputFile>(m, "InputFile")
      .def(nb::init<const std::string&>(), nb::arg("uri"))
      .def("read", &PyInputFile::Read, nb::arg("n") = -1)
      .def("read_at", &PyInputFile::ReadAt, nb::arg("offset"), nb::arg("n"))
      .def("seek", &PyInputFile::Seek)
      .def("size", &PyInputFile::Size)
      .def("close", &PyInputFile::Close);
  nb::class_<PyOutputFile>(m, "OutputFile")
      .def(nb::init<const std::string&>(), nb::arg("uri"))
      .def("write", &PyOutputFile::Write)
      .def("close", &PyOutputFile::Close)
      .def("abort", &PyOutputFile::Abort);

  nb::class_<OutputCommitter>(m, "OutputCommitter")
      .def_static(
          "make",
          [](const std::string& dir, const std::string& job_id, const std::string& mode) {
            WriteMode wm = ValueOrThrow(ParseWriteMode(mode));
            return ValueOrThrow(OutputCommitter::Make(dir, job_id, wm));
          },
          nb::arg("output_dir"), nb::arg("job_id"), nb::arg("mode") = "error")
      .def("setup_job",
           [](OutputCommitter& c) { Unlocked([&] { return c.SetupJob(); }); })
      .def("commit_job",
           [](OutputCommitter& c, const std::vector<std::string>& files) {
             return Unlocked([&] { return c.CommitJob(files); });
           })
      .def("abort_job", [](OutputCommitter& c) { Unlocked([&] { return c.AbortJob(); }); })
      .def_static("task_attempt_uri", &OutputCommitter::TaskAttemptUri, nb::arg("output_dir"),
                  nb::arg("job_id"), nb::arg("partition"), nb::arg("attempt"), nb::arg("name"))
      .def_prop_ro("output_dir", &OutputCommitter::output_dir)
      .def_prop_ro("job_dir", &OutputCommitter::job_dir);
}

}  // namespace sparktf::python

#include "sparktf/fs/output_committer.h"

#include <set>

#include "sparktf/fs/file_system.h"

namespace sparktf {
namespace {

constexpr const char* kTemporary = "_temporary";
constexpr const char* kLiveJobMarker = "_job-live";

std::string JobDir(const std::string& output_dir, const std::string& job_id) {
  return JoinUri(JoinUri(output_dir, kTemporary), job_id);
}

constexpr std::string_view kAttemptPrefix = "attempt-";

// "attempt-<partition>-<attempt>.<name>": digits before the first '.', so the final
// name is what follows it.
std::string AttemptFileName(int64_t partition, int64_t attempt, const std::string& name) {
  return std::string(kAttemptPrefix) + std::to_string(partition) + "-" +
         std::to_string(attempt) + "." + name;
}

// The final name of an attempt file, or "" if `file_name` is not one.
std::string FinalName(std::string_view file_name) {
  if (!file_name.starts_with(kAttemptPrefix)) return "";
  const size_t dot = file_name.find('.');
  return dot == std::string_view::npos ? "" : std::string(file_name.substr(dot + 1));
}

// An attempt's file that, once complete, deletes itself if its job is over: on stores
// without directories a writer that outlived its job's abort could otherwise leave it.
class TaskAttemptFile final : public WritableFile {
 public:
  TaskAttemptFile(std::unique_ptr<WritableFile> file, std::string marker)
      : file_(std::move(file)), marker_(std::move(marker)) {}
  Status Write(std::string_view data) override { return file_->Write(data); }
  Status Flush() override { return file_->Flush(); }
  Status Close() override {
    RETURN_NOT_OK(file_->Close());
    Result<bool> live = PathExists(marker_);
    if (live.ok() && *live) return Status::OK();
    (void)DeletePath(name(), /*recursive=*/false);
    if (!live.ok()) return live.status().WithContext("write " + name() + " (deleted)");
    return Status::Aborted("write " + name() +
                           ": its job ended (committed or aborted) while it was written; "
                           "the file was deleted");
  }
  Status Abort() override { return file_->Abort(); }
  const std::string& name() const override { return file_->name(); }

 private:
  std::unique_ptr<WritableFile> file_;
  std::string marker_;
};

Status IgnoreNotFound(Status st) {
  return st.code() == StatusCode::kNotFound ? Status::OK() : st;
}

bool IsVisible(std::string_view name) {
  return !name.empty() && name[0] != '_' && name[0] != '.';
}

}  // namespace

Result<WriteMode> ParseWriteMode(const std::string& mode) {
  if (mode == "error" || mode == "errorifexists" || mode.empty()) {
    return WriteMode::kErrorIfExists;
  }
  if (mode == "overwrite") return WriteMode::kOverwrite;
  return Status::InvalidArgument("unknown write mode '" + mode +
                                 "' (expected 'error' or 'overwrite')");
}

Result<OutputCommitter> OutputCommitter::Make(std::string output_dir, std::string job_id,
                                              WriteMode mode) {
  if (job_id.empty() || job_id.find('/') != std::string::npos) {
    return Status::InvalidArgument("job id must be a non-empty name, got '" + job_id + "'");
  }
  RETURN_NOT_OK(ParseUri(output_dir).status());
  return OutputCommitter(std::move(output_dir), std::move(job_id), mode);
}

std::string OutputCommitter::job_dir() const { return JobDir(output_dir_, job_id_); }

std::string OutputCommitter::TaskAttemptUri(const std::string& output_dir,
                                            const std::string& job_id, int64_t partition,
                                            int64_t attempt, const std::string& name) {
  return JoinUri(JobDir(output_dir, job_id), AttemptFileName(partition, attempt, name));
}

Result<std::unique_ptr<WritableFile>> OutputCommitter::OpenTaskAttemptFile(
    const std::string& output_dir, const std::string& job_id, int64_t partition,
    int64_t attempt, const std::string& name) {
  if (name.empty() || name.find('/') != std::string::npos) {
    return Status::InvalidArgument("task attempt file name must be a plain name, got '" +
                                   name + "'");
  }
  const std::string job = JobDir(output_dir, job_id);
  const std::string uri = TaskAttemptUri(output_dir, job_id, partition, attempt, name);
  const std::string marker = JoinUri(job, kLiveJobMarker);
  const Status over = Status::Aborted("write " + uri + ": job " + job_id + " of " +
                                      output_dir + " is over (committed or aborted)");
  ASSIGN_OR_RETURN(bool live, PathExists(marker));
  if (!live) return over;
  auto file = OpenOutputFile(uri, WriteOptions{.create_parents = false});
  if (file.status().code() == StatusCode::kNotFound) return over;  // the directory went
  RETURN_NOT_OK(file.status());
  return std::unique_ptr<WritableFile>(
      std::make_unique<TaskAttemptFile>(std::move(*file), marker));
}

Status OutputCommitter::SetupJob() {
  auto info = StatPath(output_dir_);
  if (info.ok()) {
    if (!info->is_dir) {
      return Status::AlreadyExists("write " + output_dir_ + ": exists and is a file");
    }
    if (mode_ == WriteMode::kErrorIfExists) {
      ASSIGN_OR_RETURN(auto entries, ListDir(output_dir_));
      for (const auto& e : entries) {
        if (IsVisible(UriBaseName(e.uri))) {
          return Status::AlreadyExists(
              "write " + output_dir_ + ": the directory already holds output (" +
              std::string(UriBaseName(e.uri)) + "); pass mode='overwrite' to replace it");
        }
      }
    }
  } else if (info.status().code() != StatusCode::kNotFound) {
    return info.status().WithContext("write " + output_dir_);
  }
  RETURN_NOT_OK(MakeDirs(job_dir()));
  ASSIGN_OR_RETURN(auto marker, OpenOutputFile(JoinUri(job_dir(), kLiveJobMarker)));
  return marker->Close();
}

Result<std::vector<std::string>> OutputCommitter::CommitJob(
    const std::vector<std::string>& attempt_files) {
  const std::string prefix = JoinUri(job_dir(), "");
  std::set<std::string> names;
  std::vector<std::string> finals;
  for (const auto& f : attempt_files) {
    if (!f.starts_with(prefix)) {
      return Status::InvalidArgument(f + " is not a file of job " + job_id_ + " under " +
                                     prefix);
    }
    const std::string name = FinalName(UriBaseName(f));
    if (name.empty() || UriParent(f) != job_dir()) {
      return Status::InvalidArgument(f + " is not a task attempt file of job " + job_id_);
    }
    if (!names.insert(name).second) {
      return Status::InvalidArgument("two tasks of job " + job_id_ + " wrote " + name);
    }
    finals.push_back(JoinUri(output_dir_, name));
  }
  if (mode_ == WriteMode::kOverwrite) {
    // What an earlier write left and this one does not replace goes first.
    ASSIGN_OR_RETURN(auto entries, ListDir(output_dir_));
    for (const auto& e : entries) {
      const std::string name(UriBaseName(e.uri));
      if ((IsVisible(name) || name == "_SUCCESS") && !names.count(name)) {
        RETURN_NOT_OK(DeletePath(e.uri, /*recursive=*/true));
      }
    }
  }
  for (size_t i = 0; i < attempt_files.size(); ++i) {
    Status st = RenamePath(attempt_files[i], finals[i]);
    if (!st.ok()) {
      for (size_t j = 0; j < i; ++j) (void)DeletePath(finals[j], false);
      (void)AbortJob();
      return st.WithContext("commit job " + job_id_ + " to " + output_dir_ +
                            " (no output was left)");
    }
  }
  {
    ASSIGN_OR_RETURN(auto marker, OpenOutputFile(JoinUri(output_dir_, "_SUCCESS")));
    RETURN_NOT_OK(marker->Close());
  }
  RETURN_NOT_OK(AbortJob());
  return finals;
}

Status OutputCommitter::AbortJob() {
  // The marker first: an attempt file completed after the deletion below listed the
  // directory then finds it gone and deletes itself.
  RETURN_NOT_OK(IgnoreNotFound(DeletePath(JoinUri(job_dir(), kLiveJobMarker), false)));
  // All of _temporary, as Hadoop's committer cleans up: what attempts of earlier jobs
  // left when their process was killed goes too.
  return IgnoreNotFound(DeletePath(JoinUri(output_dir_, kTemporary), /*recursive=*/true));
}

}  // namespace sparktf

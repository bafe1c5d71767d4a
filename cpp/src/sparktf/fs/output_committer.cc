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

std::string AttemptDir(const std::string& output_dir, const std::string& job_id,
                       int64_t partition, int64_t attempt) {
  return JoinUri(JobDir(output_dir, job_id),
                 "attempt-" + std::to_string(partition) + "-" + std::to_string(attempt));
}

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
  return JoinUri(AttemptDir(output_dir, job_id, partition, attempt), name);
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
    const std::string name(UriBaseName(f));
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
  // All of _temporary, as Hadoop's committer cleans up: attempts of earlier jobs that
  // finished after their job failed go too. (One that finishes after this still writes
  // only below _temporary, which readers skip.)
  Status st = DeletePath(JoinUri(output_dir_, kTemporary), /*recursive=*/true);
  return IgnoreNotFound(std::move(st));
}

Status OutputCommitter::AbortTaskAttempt(const std::string& output_dir,
                                         const std::string& job_id, int64_t partition,
                                         int64_t attempt) {
  RETURN_NOT_OK(IgnoreNotFound(
      DeletePath(AttemptDir(output_dir, job_id, partition, attempt), /*recursive=*/true)));
  const std::string job = JobDir(output_dir, job_id);
  ASSIGN_OR_RETURN(bool live, PathExists(JoinUri(job, kLiveJobMarker)));
  if (live) return Status::OK();  // the driver's commit or abort removes the rest
  RETURN_NOT_OK(IgnoreNotFound(DeletePath(job, /*recursive=*/true)));
  // Not recursive: a later job writing the same directory may have begun. Failing on a
  // non-empty directory is the expected outcome then.
  (void)DeletePath(JoinUri(output_dir, kTemporary), /*recursive=*/false);
  return Status::OK();
}

}  // namespace sparktf

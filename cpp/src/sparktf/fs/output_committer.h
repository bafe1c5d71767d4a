// Job-level commit of an output directory that many tasks write, on any filesystem of
// the seam: the protocol of Hadoop's FileOutputCommitter, driven by one process (the
// Spark driver). A failed or retried task never leaves a duplicate or partial file
// visible, and a failed job leaves no output at all.
//
//   driver:  committer = OutputCommitter::Make(dir, job_id, mode); committer.SetupJob()
//   task:    write TaskAttemptUri(dir, job_id, partition, attempt, name) (any number of
//            attempts, each file committed on its own by WritableFile::Close)
//   driver:  CommitJob(files of the attempts Spark reports as successful)
//            or AbortJob() when the job failed
//   task:    AbortTaskAttempt(...) when the attempt fails, after aborting its files
//
// CommitJob moves each winning file to <dir>/<name>, writes <dir>/_SUCCESS and removes
// <dir>/_temporary (as Hadoop's committer does: one job writes a directory at a time); if a move fails, it removes the files it already moved
// and the temporary directory, and returns the error. Readers skip "_" and "." names,
// so until CommitJob nothing of the job is visible to them.
//
// A failed attempt's writer can outlive its Spark task (the Python worker finishes after
// the JVM reported the failure), so it may create its directory after AbortJob removed
// _temporary. SetupJob therefore leaves a marker in the job directory that only the end
// of the job removes; AbortTaskAttempt, run by the attempt itself after it aborted its
// files, removes its directory and, when the marker is gone, the job's directory and an
// empty _temporary. Whichever of the two runs last, nothing of a failed job is left
// (unless the attempt's process is killed before its clean-up; the next job's commit
// then removes it).
//
// Not thread-safe; one driver drives one job.
#pragma once

#include <string>
#include <vector>

#include "sparktf/common/result.h"

namespace sparktf {

enum class WriteMode {
  kErrorIfExists,  // refuse an output directory that already holds visible files
  kOverwrite,      // replace what is there, at commit
};

Result<WriteMode> ParseWriteMode(const std::string& mode);  // "error"/"overwrite"

class OutputCommitter {
 public:
  static Result<OutputCommitter> Make(std::string output_dir, std::string job_id,
                                      WriteMode mode);

  // Checks the mode against what is there; creates <dir>/_temporary/<job_id> and its
  // live-job marker.
  Status SetupJob();
  // Where attempt `attempt` of task `partition` writes the file `name`.
  static std::string TaskAttemptUri(const std::string& output_dir, const std::string& job_id,
                                    int64_t partition, int64_t attempt,
                                    const std::string& name);
  // `attempt_files`: URIs from TaskAttemptUri of this job, one per successful task.
  // Returns the final URIs, in the order given.
  Result<std::vector<std::string>> CommitJob(const std::vector<std::string>& attempt_files);
  // Removes <dir>/_temporary; nothing visible was written before CommitJob.
  Status AbortJob();
  // Run by a failed task attempt after it aborted its files: removes the attempt's
  // directory, and when the job is over (its marker gone) the job's directory and
  // _temporary if that is then empty. Errors other than NotFound are returned.
  static Status AbortTaskAttempt(const std::string& output_dir, const std::string& job_id,
                                 int64_t partition, int64_t attempt);

  const std::string& output_dir() const { return output_dir_; }
  std::string job_dir() const;

 private:
  OutputCommitter(std::string output_dir, std::string job_id, WriteMode mode)
      : output_dir_(std::move(output_dir)), job_id_(std::move(job_id)), mode_(mode) {}

  std::string output_dir_;
  std::string job_id_;
  WriteMode mode_;
};

}  // namespace sparktf

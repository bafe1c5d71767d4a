// Job-level commit of an output directory that many tasks write, on any filesystem of
// the seam: the protocol of Hadoop's FileOutputCommitter, driven by one process (the
// Spark driver). A failed or retried task never leaves a duplicate or partial file
// visible, and a failed job leaves no output at all.
//
//   driver:  committer = OutputCommitter::Make(dir, job_id, mode); committer.SetupJob()
//   task:    OpenTaskAttemptFile(dir, job_id, partition, attempt, name), write, Close()
//            (Abort() when the attempt fails); any number of attempts per task
//   driver:  CommitJob(TaskAttemptUri(...) of the attempts Spark reports as successful)
//            or AbortJob() when the job failed
//
// CommitJob moves each winning file to <dir>/<name>, writes <dir>/_SUCCESS and removes
// <dir>/_temporary (as Hadoop's committer does: one job writes a directory at a time);
// if a move fails, it removes the files it already moved and the temporary directory,
// and returns the error. Readers skip "_" and "." names, so until CommitJob nothing of
// the job is visible to them.
//
// An attempt can outlive its job: Spark reports a task failed or killed while its
// Python worker still writes, and may kill that worker at any moment. So that nothing
// of an aborted job is ever left, whatever the order and wherever a writer dies:
//  - attempt files lie directly in the job's directory and are created without parent
//    directories: once AbortJob removed the directory, no attempt can create anything
//    below it (a file that was open when it went is gone with it);
//  - on stores without directories (S3), an attempt file checks, after it is complete,
//    that the job's live marker (made by SetupJob) still exists, and deletes itself if
//    not; AbortJob removes the marker before anything else, so an object completed
//    after AbortJob listed the directory always sees the marker gone;
//  - an object whose upload never completes is never visible.
//
// Not thread-safe; one driver drives one job.
#pragma once

#include <string>
#include <vector>

#include "sparktf/common/result.h"
#include "sparktf/fs/file_system.h"

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
  // Where attempt `attempt` of task `partition` writes the file `name` (a plain name,
  // no '/').
  static std::string TaskAttemptUri(const std::string& output_dir, const std::string& job_id,
                                    int64_t partition, int64_t attempt,
                                    const std::string& name);
  // Creates the file at TaskAttemptUri(...). Aborted when the job is over (committed
  // or aborted), at the open or at Close(); see above.
  static Result<std::unique_ptr<WritableFile>> OpenTaskAttemptFile(
      const std::string& output_dir, const std::string& job_id, int64_t partition,
      int64_t attempt, const std::string& name);
  // `attempt_files`: URIs from TaskAttemptUri of this job, one per successful task.
  // Returns the final URIs, in the order given.
  Result<std::vector<std::string>> CommitJob(const std::vector<std::string>& attempt_files);
  // Removes the live marker, then <dir>/_temporary; nothing visible was written before
  // CommitJob.
  Status AbortJob();

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

// C ABI of the Rust library in remote_ffi/ (hdfs-native for hdfs://, object_store for
// s3://). Internal to fs/: only hdfs_file_system.cc and s3_file_system.cc include it.
//
// Every function that can fail returns a sparktf StatusCode number (0 = OK) and, on
// failure, sets *err to a message to free with stf_string_free. Calls block, bounded by
// the timeout given at open. Handles are not thread-safe, except StfFs, which may be
// shared. Handles made before fork() must not be used in the child.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

struct StfFs;
struct StfListing;
struct StfReader;
struct StfWriter;

struct StfFileInfo {
  int64_t size;
  int64_t mtime_ms;
  uint8_t is_dir;
};

void stf_string_free(char* s);

int32_t stf_hdfs_open(const char* url, const char* const* keys, const char* const* values,
                      size_t n, uint64_t timeout_ms, StfFs** out, char** err);
int32_t stf_s3_open(const char* bucket, const char* const* keys, const char* const* values,
                    size_t n, uint64_t timeout_ms, StfFs** out, char** err);
void stf_fs_free(StfFs* fs);

int32_t stf_fs_stat(StfFs* fs, const char* path, StfFileInfo* info, char** err);
int32_t stf_fs_list(StfFs* fs, const char* path, StfListing** out, char** err);
size_t stf_listing_size(const StfListing* l);
const char* stf_listing_entry(const StfListing* l, size_t i, StfFileInfo* info);
void stf_listing_free(StfListing* l);
int32_t stf_fs_mkdirs(StfFs* fs, const char* path, char** err);
int32_t stf_fs_delete(StfFs* fs, const char* path, uint8_t recursive, char** err);
int32_t stf_fs_rename(StfFs* fs, const char* src, const char* dst, uint8_t overwrite,
                      char** err);

int32_t stf_reader_open(StfFs* fs, const char* path, StfReader** out, uint64_t* size,
                        char** err);
int32_t stf_reader_read(StfReader* r, uint8_t* dst, size_t n, size_t* got, char** err);
int32_t stf_reader_read_at(StfReader* r, uint64_t offset, uint8_t* dst, size_t n,
                           size_t* got, char** err);
int32_t stf_reader_seek(StfReader* r, uint64_t offset, char** err);
uint64_t stf_reader_size(const StfReader* r);
void stf_reader_free(StfReader* r);

// create_parents: make missing parent directories (HDFS; S3 has none).
int32_t stf_writer_open(StfFs* fs, const char* path, uint8_t create_parents, StfWriter** out,
                        char** err);
int32_t stf_writer_write(StfWriter* w, const uint8_t* data, size_t n, char** err);
int32_t stf_writer_sync(StfWriter* w, char** err);
int32_t stf_writer_commit(StfWriter* w, char** err);
int32_t stf_writer_abort(StfWriter* w, char** err);
void stf_writer_free(StfWriter* w);

// Strings to free with stf_string_free.
char* stf_hdfs_describe(const char* url);
char* stf_hadoop_default_fs();

}  // extern "C"

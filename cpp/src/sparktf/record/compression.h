// TFRecord compression: none, GZIP or ZLIB (zlib streams, as TensorFlow writes).
#pragma once

#include <memory>
#include <string_view>

#include "sparktf/common/io.h"

namespace sparktf {

enum class Compression { kNone, kGzip, kZlib };

// Accepts "", "none", "gzip", "zlib" in any case (TensorFlow's spellings:
// "" / "GZIP" / "ZLIB"). Anything else is InvalidArgument.
Result<Compression> ParseCompression(std::string_view name);
std::string_view CompressionName(Compression c);

// Guesses from a file name: ".gz"/".gzip" -> GZIP, ".zlib"/".zz" -> ZLIB, else none.
Compression CompressionFromPath(std::string_view path);

// Decompresses `base` as it is read. Size() is -1 and Seek fails. A corrupt or
// truncated stream is DataLoss naming the stream; a stream that is not of the
// given kind at all says so and suggests another compression.
std::unique_ptr<InputStream> MakeInflateStream(std::unique_ptr<InputStream> base,
                                               Compression kind);

// Compresses into `base`; Close() writes the stream trailer and closes `base`.
// level: zlib's 0..9, or -1 for its default (what TensorFlow uses).
Result<std::unique_ptr<OutputStream>> MakeDeflateStream(
    std::unique_ptr<OutputStream> base, Compression kind, int level = -1);

}  // namespace sparktf

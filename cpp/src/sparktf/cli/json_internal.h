// Internal to the CLI: Examples as JSON.
#pragma once

#include <nlohmann/json.hpp>

#include "sparktf/record/example.h"

namespace sparktf::cli {

// {"name": {"int64": [..]} | {"float": [..]} | {"bytes": [..]} | null}. Floats print
// in their shortest float32 form; NaN and infinities as "NaN", "Infinity",
// "-Infinity"; bytes that are not UTF-8 as {"base64": "..."}.
nlohmann::json FeatureMapToJson(const FeatureMap& features);
nlohmann::json FeatureToJson(const Feature& f);
bool IsValidUtf8(std::string_view s);

}  // namespace sparktf::cli

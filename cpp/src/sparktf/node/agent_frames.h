// How a node agent reads the coordinator's frames, in one place (fuzzed by
// agent_frames_fuzz.cc): what a frame asks, and what of the cluster spec goes into the TF
// process's environment. Peers' JSON is read with typed defaults, never trusted.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "sparktf/cluster/protocol.h"
#include "sparktf/common/result.h"

namespace sparktf::node {

struct CoordinatorRequest {
  enum class Kind { kIgnore, kClusterSpec, kAbort, kStop };
  Kind kind = Kind::kIgnore;
  nlohmann::json spec;  // kClusterSpec: a JSON object
  std::string reason;   // kAbort: why ("" when the frame does not say)
};

// InvalidArgument for a CLUSTER_SPEC whose payload is not a JSON object; frames an agent
// does not act on are kIgnore.
Result<CoordinatorRequest> ReadCoordinatorFrame(const cluster::Frame& frame);

// TF_CONFIG and SPARKTF_CLUSTER_INFO for the TF process, from a cluster spec.
std::map<std::string, std::string> SpecEnvironment(const nlohmann::json& spec);

// Whether this node runs TensorBoard: the chief (the coordinator decides who that is).
bool IsTensorBoardNode(const nlohmann::json& spec);

}  // namespace sparktf::node

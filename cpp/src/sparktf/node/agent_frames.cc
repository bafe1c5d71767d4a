#include "sparktf/node/agent_frames.h"

#include "sparktf/common/json_internal.h"

namespace sparktf::node {

using cluster::MessageType;
using json = nlohmann::json;

Result<CoordinatorRequest> ReadCoordinatorFrame(const cluster::Frame& frame) {
  CoordinatorRequest r;
  switch (frame.type) {
    case MessageType::kClusterSpec:
      r.spec = json::parse(frame.payload, nullptr, false);
      if (!r.spec.is_object()) {
        return Status::InvalidArgument("unreadable cluster spec from the coordinator");
      }
      r.kind = CoordinatorRequest::Kind::kClusterSpec;
      break;
    case MessageType::kAbort:
      r.kind = CoordinatorRequest::Kind::kAbort;
      r.reason = JsonGetOr(json::parse(frame.payload, nullptr, false), "reason", std::string());
      break;
    case MessageType::kStop:
      r.kind = CoordinatorRequest::Kind::kStop;
      break;
    default:
      break;
  }
  return r;
}

std::map<std::string, std::string> SpecEnvironment(const json& spec) {
  return {{"TF_CONFIG", JsonGetOr(spec, "tf_config", std::string())},
          {"SPARKTF_CLUSTER_INFO", spec.dump(-1, ' ', false, json::error_handler_t::replace)}};
}

bool IsTensorBoardNode(const json& spec) { return JsonGetOr(spec, "is_chief", false); }

}  // namespace sparktf::node

#include "sparktf/cluster/tensorflow_roles.h"

#include <nlohmann/json.hpp>

namespace sparktf::cluster {

using json = nlohmann::json;

std::vector<Role> AssignTensorFlowRoles(int num_nodes, const RoleOptions& options) {
  std::vector<Role> roles(static_cast<size_t>(std::max(num_nodes, 0)));
  int workers = 0;
  bool chief = options.master_node.empty(), evaluator = !options.eval_node;
  for (int i = 0; i < num_nodes; ++i) {
    Role& r = roles[i];
    if (i < options.num_ps) {
      r.job_name = "ps";
      r.task_index = i;
    } else if (!chief) {
      r.job_name = options.master_node;
      r.task_index = 0;
      chief = true;
    } else if (!evaluator) {
      r.job_name = "evaluator";
      r.task_index = 0;
      evaluator = true;
    } else {
      r.job_name = "worker";
      r.task_index = workers++;
    }
    r.worker_num = i;
  }
  const bool has_chief = !options.master_node.empty();
  const bool parameter_servers = options.num_ps > 0 && has_chief;
  for (Role& r : roles) {
    const bool is_master = r.job_name == "chief" || r.job_name == "master";
    r.is_chief = is_master || (!has_chief && r.job_name == "worker" && r.task_index == 0);
    r.fed = is_master || r.job_name == "worker";
    if (r.fed) r.feed_index = is_master ? 0 : r.task_index + (has_chief ? 1 : 0);
    r.serves_until_stopped = r.job_name == "ps" || r.job_name == "evaluator" ||
                             (r.job_name == "worker" && parameter_servers);
  }
  return roles;
}

TensorFlowClusterInfo::TensorFlowClusterInfo(const std::vector<Role>& roles,
                                             const std::vector<std::string>& addresses) {
  json spec = json::object();
  for (size_t i = 0; i < roles.size() && i < addresses.size(); ++i) {
    spec[roles[i].job_name].push_back(addresses[i]);
  }
  spec_ = spec.dump();
  for (const char* job : {"worker", "chief", "master"}) {
    if (spec.contains(job)) num_workers_ += static_cast<int>(spec[job].size());
  }
  spec.erase("evaluator");
  tf_cluster_ = spec.dump();
}

std::string TensorFlowClusterInfo::NodeInfo(const Role& role, int executor_id, int num_nodes,
                                            int generation) const {
  const std::string task = json{{"type", role.job_name}, {"index", role.task_index}}.dump();
  const std::string tf_config =
      R"({"cluster":)" + tf_cluster_ + R"(,"environment":"cloud","task":)" + task + "}";
  const json small = {{"job_name", role.job_name},    {"task_index", role.task_index},
                      {"worker_num", role.worker_num}, {"executor_id", executor_id},
                      {"num_workers", num_workers_},   {"num_nodes", num_nodes},
                      {"is_chief", role.is_chief},     {"fed", role.fed},
                      {"feed_index", role.feed_index}, {"generation", generation},
                      {"tf_config", tf_config}};
  // {"cluster_spec": <spec>, ...small's fields}: the spec is spliced in, not re-serialized.
  std::string out = small.dump();
  out.replace(0, 1, R"({"cluster_spec":)" + spec_ + ",");
  return out;
}

}  // namespace sparktf::cluster

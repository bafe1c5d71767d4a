// TensorFlow's view of a cluster: role names and their order (TFoS's: ps, then the
// chief/master, then the evaluator, then workers, by executor id), the cluster spec and
// TF_CONFIG, and the rules that every other part reads instead of deriving them again:
// who is the chief, which nodes Spark feeds and in what order, which nodes serve until
// told to stop. The one place for framework specifics; an adapter for another framework
// (torchrun's variables, JAX's coordinator) would sit beside it with the same shape.
#pragma once

#include <string>
#include <vector>

namespace sparktf::cluster {

struct RoleOptions {
  int num_ps = 0;
  std::string master_node;  // "", "chief" or "master"
  bool eval_node = false;
};

struct Role {
  std::string job_name;  // "ps", "chief"/"master", "evaluator" or "worker"
  int task_index = -1;   // index within its job
  int worker_num = -1;   // position in role order (TFoS's worker_num)
  // Writes exports and summaries: the chief/master, or worker 0 when there is none.
  bool is_chief = false;
  // Takes part in training and is fed by Spark in InputMode.SPARK (not ps, evaluator).
  bool fed = false;
  // Position among the fed nodes, chief first (-1 if not fed): which share of the data
  // (files, partitions) this node gets.
  int feed_index = -1;
  // Serves until the coordinator stops it: ps and evaluator, and with
  // ParameterServerStrategy (ps nodes and a chief) the workers, which the chief drives.
  bool serves_until_stopped = false;
};

// The roles of `num_nodes` nodes, in executor-id order. Precondition: the options leave
// at least one worker or a chief (the coordinator checks this before it starts).
std::vector<Role> AssignTensorFlowRoles(int num_nodes, const RoleOptions& options);

// What every node is told once the cluster is formed (its CLUSTER_SPEC payload): the
// cluster spec {"job": ["host:port", ...]}, its role and the rules above, its TF_CONFIG
// and the cluster's generation (0, then 1 after the first restart, ...). Made once per
// cluster; the parts all nodes share are serialized once, so that telling N nodes costs
// O(N) and not O(N^2) (each payload carries the whole spec twice, as TF_CONFIG wants).
class TensorFlowClusterInfo {
 public:
  // `addresses` in executor-id order, one per role.
  TensorFlowClusterInfo(const std::vector<Role>& roles,
                        const std::vector<std::string>& addresses);

  // The cluster spec (JSON object).
  const std::string& spec() const { return spec_; }
  std::string NodeInfo(const Role& role, int executor_id, int num_nodes,
                       int generation) const;

 private:
  std::string spec_;        // {"job": [...]}
  std::string tf_cluster_;  // the same without the evaluator, which TensorFlow wants apart
  int num_workers_ = 0;     // workers plus the chief/master
};

}  // namespace sparktf::cluster

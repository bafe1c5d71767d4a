#include "bindings.h"

NB_MODULE(_native, m) {
  m.doc() = "sparktf native core (internal: use the sparktf package)";
  sparktf::python::InitErrors(m);
  sparktf::python::InitRecords(m);
  sparktf::python::InitCluster(m);
  sparktf::python::InitFeed(m);
  sparktf::python::InitFeedService(m);
  sparktf::python::InitFs(m);
}

// Hadoop's own minicluster (a NameNode and N DataNodes from hadoop-client-minicluster,
// and with --nodemanagers M > 0 a YARN ResourceManager and M NodeManagers) in one JVM on
// loopback, for sparktf's tests and benchmarks. Run by scripts/minicluster.py with Java's
// single-file source launcher; not a part of sparktf itself.
//
// It writes core-site.xml and hdfs-site.xml (and yarn-site.xml) for clients into
// --conf-dir, then cluster.json (the addresses) once everything is up, and serves
// one-line commands on a
// loopback control port (its number is in cluster.json):
//   status | stop-datanode I | restart-datanode I | stop-namenode | restart-namenode |
//   shutdown
// Each answers one line, "ok ..." or "error ...". The JVM exits after shutdown, or when
// its standard input closes (the parent died; not with --watch-stdin false, which
// `minicluster.py start` uses to leave it running), so nothing is left running.

import java.io.BufferedReader;
import java.io.File;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.server.namenode.FSNamesystem;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.MiniYARNCluster;

public class MiniCluster {
  private static MiniDFSCluster cluster;
  private static MiniYARNCluster yarn;
  private static final Map<Integer, MiniDFSCluster.DataNodeProperties> stopped = new HashMap<>();

  public static void main(String[] args) {
    try {
      run(args);
    } catch (Throwable e) {  // HDFS threads would keep a half-started JVM running
      e.printStackTrace();
      System.err.println("minicluster: failed to start: " + e);
      shutdownAndExit(1);
    }
  }

  private static void run(String[] args) throws Exception {
    Map<String, String> opts = new HashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) opts.put(args[i].replaceFirst("^--", ""), args[i + 1]);
    File confDir = new File(opts.get("conf-dir"));
    File dataDir = new File(opts.get("data-dir"));
    int datanodes = Integer.parseInt(opts.getOrDefault("datanodes", "2"));
    int nnPort = Integer.parseInt(opts.getOrDefault("namenode-port", "0"));
    long blockSize = Long.parseLong(opts.getOrDefault("block-size", String.valueOf(8L << 20)));

    Configuration conf = new Configuration();
    conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, dataDir.getAbsolutePath());
    conf.setLong("dfs.blocksize", blockSize);
    conf.setInt("dfs.replication", Math.min(2, datanodes));
    conf.setBoolean("dfs.permissions.enabled", true);
    conf.set("dfs.namenode.rpc-bind-host", "127.0.0.1");
    conf.set("dfs.namenode.http-address", "127.0.0.1:0");
    conf.set("dfs.datanode.address", "127.0.0.1:0");
    conf.set("dfs.datanode.http.address", "127.0.0.1:0");
    conf.set("dfs.datanode.ipc.address", "127.0.0.1:0");
    // A stopped DataNode is declared dead quickly, so that writes avoid it.
    conf.setInt("dfs.heartbeat.interval", 1);
    conf.setInt("dfs.namenode.heartbeat.recheck-interval", 2000);

    cluster = new MiniDFSCluster.Builder(conf)
        .numDataNodes(datanodes)
        .nameNodePort(nnPort)
        .format(true)
        .build();
    cluster.waitActive();
    String nn = "127.0.0.1:" + cluster.getNameNodePort();

    // World-writable /tmp and /user, as on a real cluster; the rest belongs to the
    // superuser (whoever runs this JVM).
    FileSystem fs = cluster.getFileSystem();
    for (String d : new String[] {"/tmp", "/user"}) {
      fs.mkdirs(new Path(d));
      fs.setPermission(new Path(d), new FsPermission((short) 01777));
    }

    confDir.mkdirs();
    writeSite(new File(confDir, "core-site.xml"), Map.of("fs.defaultFS", "hdfs://" + nn));
    writeSite(new File(confDir, "hdfs-site.xml"), Map.of(
        "dfs.replication", String.valueOf(Math.min(2, datanodes)),
        "dfs.blocksize", String.valueOf(blockSize),
        "dfs.client.socket-timeout", "10000"));

    int nodemanagers = Integer.parseInt(opts.getOrDefault("nodemanagers", "0"));
    String yarnJson = "";
    if (nodemanagers > 0) {
      yarnJson = startYarn(conf, confDir, nodemanagers,
                           Integer.parseInt(opts.getOrDefault("nodemanager-memory-mb", "6144")),
                           Boolean.parseBoolean(opts.getOrDefault("pmem-check", "true")),
                           Integer.parseInt(opts.getOrDefault("gpus-per-nodemanager", "0")));
    }

    ServerSocket control = new ServerSocket(0, 8, InetAddress.getByName("127.0.0.1"));
    String json = "{\"namenode\": \"" + nn + "\", \"namenode_http\": \"127.0.0.1:"
        + cluster.getNameNode().getHttpAddress().getPort() + "\", \"datanodes\": " + datanodes
        + yarnJson + ", \"control_port\": " + control.getLocalPort() + ", \"pid\": "
        + ProcessHandle.current().pid() + "}\n";
    File tmp = new File(confDir, "cluster.json.tmp");
    Files.writeString(tmp.toPath(), json);
    Files.move(tmp.toPath(), new File(confDir, "cluster.json").toPath(),
               java.nio.file.StandardCopyOption.ATOMIC_MOVE);
    System.out.println("ready " + json.trim());
    System.out.flush();

    if (!Boolean.parseBoolean(opts.getOrDefault("watch-stdin", "true"))) {
      serve(control);
      return;
    }
    Thread watchdog = new Thread(() -> {
      try {
        while (System.in.read() >= 0) { }
      } catch (Exception ignored) { }
      System.err.println("minicluster: standard input closed; shutting down");
      shutdownAndExit(0);
    });
    watchdog.setDaemon(true);
    watchdog.start();
    serve(control);
  }

  // A ResourceManager (FIFO scheduler: memory is what is scheduled, vcores are not
  // enforced) and `nodemanagers` NodeManagers on this host, sized for a small machine.
  // Writes yarn-site.xml with what a client needs: the ResourceManager's addresses, and
  // none of the test-only settings MiniYARNCluster adds (such as StaticMapping).
  // With gpusPerNode > 0 the cluster declares the resource type yarn.io/gpu and each
  // NodeManager offers that many, as a plain countable resource (no GPU plugin, so no
  // devices and no isolation), scheduled by the Capacity Scheduler with the
  // DominantResourceCalculator, as GPU clusters are.
  // Returns cluster.json's YARN fields.
  private static String startYarn(Configuration hdfsConf, File confDir, int nodemanagers,
                                  int nmMemoryMb, boolean pmemCheck, int gpusPerNode)
      throws Exception {
    YarnConfiguration conf = new YarnConfiguration(hdfsConf);
    conf.set("fs.defaultFS", hdfsConf.get("fs.defaultFS", "hdfs://127.0.0.1:"
                                          + cluster.getNameNodePort()));
    conf.set(YarnConfiguration.RM_SCHEDULER,
             "org.apache.hadoop.yarn.server.resourcemanager.scheduler.fifo.FifoScheduler");
    conf.setInt(YarnConfiguration.NM_PMEM_MB, nmMemoryMb);
    conf.setInt(YarnConfiguration.NM_VCORES, 8);
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_MB, 128);
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MAXIMUM_ALLOCATION_MB, nmMemoryMb);
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MAXIMUM_ALLOCATION_VCORES, 8);
    conf.setBoolean(YarnConfiguration.NM_PMEM_CHECK_ENABLED, pmemCheck);
    conf.setBoolean(YarnConfiguration.NM_VMEM_CHECK_ENABLED, false);
    // Without cgroups the polling check above is what enforces a container's memory, but
    // ContainersMonitorImpl.checkLimit skips it while yarn.nodemanager.resource.memory.enforced
    // (cgroup-based strict enforcement, default true) is on: a container 2x over its limit
    // then runs on. Clusters that rely on the polling check turn it off, as here.
    conf.setBoolean(YarnConfiguration.NM_MEMORY_RESOURCE_ENFORCED, !pmemCheck);
    conf.setLong(YarnConfiguration.NM_CONTAINER_MON_INTERVAL_MS, 1000);
    conf.setInt(YarnConfiguration.DEBUG_NM_DELETE_DELAY_SEC, 0);
    conf.setFloat(YarnConfiguration.NM_MAX_PER_DISK_UTILIZATION_PERCENTAGE, 99.9f);
    conf.setBoolean(YarnConfiguration.YARN_MINICLUSTER_FIXED_PORTS, false);
    // Otherwise MiniYARNCluster turns the NodeManagers' memory checks off.
    conf.setBoolean(YarnConfiguration.YARN_MINICLUSTER_CONTROL_RESOURCE_MONITORING, true);
    if (gpusPerNode > 0) {
      conf.set(YarnConfiguration.RESOURCE_TYPES, "yarn.io/gpu");
      conf.set(YarnConfiguration.NM_RESOURCES_PREFIX + "yarn.io/gpu",
               String.valueOf(gpusPerNode));
      org.apache.hadoop.yarn.util.resource.ResourceUtils.resetResourceTypes(conf);
      // The FIFO scheduler's DefaultResourceCalculator drops every resource but memory from
      // requests; GPU clusters schedule with the Capacity Scheduler's
      // DominantResourceCalculator. Its configuration is read from capacity-scheduler.xml
      // on the classpath, so one is written next to the data and put there.
      File csDir = new File(confDir.getAbsoluteFile().getParentFile(), "capacity-scheduler");
      csDir.mkdirs();
      writeSite(new File(csDir, "capacity-scheduler.xml"), Map.of(
          "yarn.scheduler.capacity.root.queues", "default",
          "yarn.scheduler.capacity.root.default.capacity", "100",
          "yarn.scheduler.capacity.root.default.maximum-capacity", "100",
          "yarn.scheduler.capacity.maximum-am-resource-percent", "0.5",
          "yarn.scheduler.capacity.resource-calculator",
          "org.apache.hadoop.yarn.util.resource.DominantResourceCalculator"));
      ClassLoader withCs = new java.net.URLClassLoader(
          new java.net.URL[] {csDir.toURI().toURL()}, conf.getClassLoader());
      Thread.currentThread().setContextClassLoader(withCs);
      conf.setClassLoader(withCs);
      conf.set(YarnConfiguration.RM_SCHEDULER,
               "org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CapacityScheduler");
    }
    yarn = new MiniYARNCluster("sparktf-yarn", nodemanagers, 1, 1);
    yarn.init(conf);
    yarn.start();
    if (!yarn.waitForNodeManagersToConnect(60000)) {
      throw new IllegalStateException("NodeManagers did not connect within 60 s");
    }
    Configuration live = yarn.getConfig();
    Map<String, String> site = new HashMap<>();
    for (String k : new String[] {YarnConfiguration.RM_ADDRESS,
                                  YarnConfiguration.RM_SCHEDULER_ADDRESS,
                                  YarnConfiguration.RM_RESOURCE_TRACKER_ADDRESS,
                                  YarnConfiguration.RM_ADMIN_ADDRESS,
                                  YarnConfiguration.RM_WEBAPP_ADDRESS}) {
      site.put(k, live.get(k));
    }
    site.put(YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_MB, "128");
    site.put(YarnConfiguration.RM_SCHEDULER_MAXIMUM_ALLOCATION_MB, String.valueOf(nmMemoryMb));
    if (gpusPerNode > 0) site.put(YarnConfiguration.RESOURCE_TYPES, "yarn.io/gpu");
    writeSite(new File(confDir, "yarn-site.xml"), site);
    return ", \"resourcemanager\": \"" + live.get(YarnConfiguration.RM_ADDRESS)
        + "\", \"resourcemanager_webapp\": \"" + live.get(YarnConfiguration.RM_WEBAPP_ADDRESS)
        + "\", \"nodemanagers\": " + nodemanagers;
  }

  private static void serve(ServerSocket control) throws Exception {
    while (true) {
      try (Socket s = control.accept();
           BufferedReader in = new BufferedReader(
               new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8));
           PrintWriter out = new PrintWriter(s.getOutputStream(), true)) {
        String line = in.readLine();
        if (line == null) continue;
        String reply;
        try {
          reply = handle(line.trim().split("\\s+"));
        } catch (Exception e) {
          reply = "error " + e.toString().replace('\n', ' ');
        }
        out.println(reply);
        if (line.trim().equals("shutdown")) {
          s.close();
          shutdownAndExit(0);
        }
      }
    }
  }

  private static synchronized String handle(String[] cmd) throws Exception {
    switch (cmd[0]) {
      case "status":
        return "ok datanodes_running=" + (cluster.getDataNodes().size());
      case "stop-datanode": {
        int i = Integer.parseInt(cmd[1]);
        if (stopped.containsKey(i)) return "error datanode " + i + " is already stopped";
        // Indexes shift as DataNodes stop; name them by their original index.
        int live = 0;
        for (int k = 0; k < i; k++) if (!stopped.containsKey(k)) live++;
        stopped.put(i, cluster.stopDataNode(live));
        return "ok stopped datanode " + i;
      }
      case "restart-datanode": {
        int i = Integer.parseInt(cmd[1]);
        MiniDFSCluster.DataNodeProperties p = stopped.remove(i);
        if (p == null) return "error datanode " + i + " is not stopped";
        cluster.restartDataNode(p, true);
        cluster.waitActive();
        // Registered is not serving: until its block report the NameNode lists none of
        // its replicas, and a reader would be given the other DataNodes only.
        cluster.triggerBlockReports();
        long deadline = System.nanoTime() + 30_000_000_000L;
        FSNamesystem ns = cluster.getNamesystem();
        while (ns.getLowRedundancyBlocks() + ns.getMissingBlocksCount() > 0) {
          if (System.nanoTime() > deadline) {
            return "error datanode " + i + " restarted but " + ns.getLowRedundancyBlocks()
                + " blocks are still short of replicas after 30 s";
          }
          Thread.sleep(100);
        }
        return "ok restarted datanode " + i;
      }
      case "stop-namenode":
        cluster.shutdownNameNode(0);
        return "ok stopped namenode";
      case "restart-namenode":
        cluster.restartNameNode(0, true);
        return "ok restarted namenode";
      case "shutdown":
        return "ok shutting down";
      default:
        return "error unknown command " + cmd[0];
    }
  }

  // Stops YARN and HDFS, for at most SHUTDOWN_GRACE_MS (MiniYARNCluster's stop can take
  // longer than the caller's 30 s, its data is removed at the next start anyway), then
  // halts the JVM.
  private static final long SHUTDOWN_GRACE_MS = 10_000;

  private static void shutdownAndExit(int status) {
    Thread stopper = new Thread(() -> {
      try {
        synchronized (MiniCluster.class) {
          if (yarn != null) yarn.stop();
          if (cluster != null) cluster.shutdown(true);
        }
      } catch (Exception e) {
        System.err.println("minicluster: shutdown: " + e);
      }
    }, "minicluster-shutdown");
    stopper.setDaemon(true);
    stopper.start();
    try {
      stopper.join(SHUTDOWN_GRACE_MS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (stopper.isAlive()) {
      System.err.println("minicluster: not stopped within " + SHUTDOWN_GRACE_MS
          + " ms; halting");
    }
    Runtime.getRuntime().halt(status);
  }

  private static void writeSite(File f, Map<String, String> props) throws Exception {
    StringBuilder sb = new StringBuilder("<?xml version=\"1.0\"?>\n<configuration>\n");
    List<String> keys = new ArrayList<>(props.keySet());
    java.util.Collections.sort(keys);
    for (String k : keys) {
      sb.append("  <property><name>").append(k).append("</name><value>")
        .append(props.get(k)).append("</value></property>\n");
    }
    sb.append("</configuration>\n");
    try (OutputStream o = new FileOutputStream(f)) {
      o.write(sb.toString().getBytes(StandardCharsets.UTF_8));
    }
  }
}

package io.sparktf;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/**
 * The native side of the JVM feeder (libsparktf_jni.so, packed into this jar): one
 * DataFrame partition's feed to its node (sparktf/node/feed_task.h). Not thread-safe per
 * handle; each task has its own.
 */
final class NativeFeed {
  private NativeFeed() {}

  /** The partition's feed, its node chosen now; a handle for the other calls. */
  static native long open(String jobJson, int partition);

  /**
   * Pushes one record batch, given as its Arrow tree in preorder (see JvmFeeder.describe);
   * returns the rows pushed, fewer once the node stopped reading.
   */
  static native long push(long handle, String[] formats, String[] names, long[] nodes,
                          long[] buffers);

  static native void finish(long handle);

  /** The node reads no more (its map_fun returned): the rest is skipped. */
  static native boolean stopped(long handle);

  /** Fed through shared memory (the node is on this host), not TCP. */
  static native boolean local(long handle);

  static native int feedIndex(long handle);

  /**
   * This task's thread runs at SCHED_BATCH while it feeds, and so do the JVM's JIT
   * compilers while any task feeds (the job's feeder_sched, sparktf/node/feed_task.h).
   */
  static native boolean yielded(long handle);

  static native void close(long handle);

  private static boolean loaded = false;

  /**
   * Loads the library once per JVM: from the system property sparktf.jni.library or the
   * environment variable SPARKTF_JNI_LIBRARY if set, else from this jar.
   */
  static synchronized void load() {
    if (loaded) return;
    String path = System.getProperty("sparktf.jni.library", System.getenv("SPARKTF_JNI_LIBRARY"));
    if (path == null || path.isEmpty()) path = extract().toString();
    System.load(path);
    loaded = true;
  }

  private static Path extract() {
    String resource = "/io/sparktf/native/libsparktf_jni.so";
    try (InputStream in = NativeFeed.class.getResourceAsStream(resource)) {
      if (in == null) {
        throw new SparktfException("Internal: " + resource + " is not in sparktf's jar "
            + "(scripts/build_jvm.sh packs it)");
      }
      Path file = Files.createTempFile("libsparktf_jni", ".so");
      file.toFile().deleteOnExit();
      Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
      return file;
    } catch (IOException e) {
      throw new SparktfException("IOError: extracting " + resource + ": " + e);
    }
  }
}

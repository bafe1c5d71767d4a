package io.sparktf;

/** An error of sparktf's native core: "StatusCode: message" (docs/protocol.md names the codes). */
public final class SparktfException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public SparktfException(String message) {
    super(message);
  }
}

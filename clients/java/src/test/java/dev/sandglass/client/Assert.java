package dev.sandglass.client;

import java.util.Objects;

/** The few assertions the tests need (no JUnit: the client and its tests have no dependency). */
final class Assert {
  private Assert() {}

  /** A test step that may throw anything. */
  @FunctionalInterface
  interface Step {
    void run() throws Exception;
  }

  static void assertEquals(Object expected, Object actual) {
    assertEquals(expected, actual, "");
  }

  static void assertEquals(Object expected, Object actual, String what) {
    if (!Objects.equals(expected, actual))
      throw new AssertionError((what.isEmpty() ? "" : what + ": ") + "expected <" + expected + "> (" + type(expected) + "), got <" + actual + "> (" + type(actual) + ")");
  }

  static void assertTrue(boolean condition, String what) {
    if (!condition) throw new AssertionError("expected: " + what);
  }

  /** Runs {@code step}, which must throw a {@code type}; answers it for further checks. */
  static <T extends Throwable> T assertThrows(Class<T> type, Step step) {
    try {
      step.run();
    } catch (Throwable thrown) {
      if (type.isInstance(thrown)) return type.cast(thrown);
      throw new AssertionError("expected a " + type.getSimpleName() + ", got " + thrown, thrown);
    }
    throw new AssertionError("expected a " + type.getSimpleName() + ", nothing was thrown");
  }

  private static String type(Object value) {
    return value == null ? "null" : value.getClass().getSimpleName();
  }
}

package dev.sandglass.client;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;

/**
 * The tests' runner: {@code java -cp <classes> dev.sandglass.client.TestMain [unit|all]}. Runs every
 * {@link Test} method of the test classes (a new instance for each), prints one line per test, and
 * exits with 1 when any failed. {@code unit} runs the tests that need no service; {@code all} (the
 * default) also the ones against the service named by {@code SANDGLASS_URL} and {@code
 * SANDGLASS_TOKEN}, which then must be set.
 */
public final class TestMain {
  private static final List<Class<?>> UNIT = List.of(JsonTest.class, PathSegmentTest.class, WebhookVerifierTest.class, ErrorMappingTest.class, RequestTest.class);
  private static final List<Class<?>> SERVICE = List.of(ProducerTest.class, ConsumerTest.class, ConsumerLoopTest.class);

  private TestMain() {}

  /**
   * @param args {@code unit} or {@code all} (default), optionally followed by a test name filter
   */
  public static void main(String[] args) {
    String mode = args.length > 0 ? args[0] : "all";
    String filter = args.length > 1 ? args[1] : "";
    List<Class<?>> classes = new ArrayList<>(UNIT);
    if (mode.equals("all")) {
      if (System.getenv("SANDGLASS_URL") == null) {
        System.out.println("FAIL: SANDGLASS_URL is not set: the service tests need a running sandglass serve (or run with `unit`)");
        System.exit(1);
      }
      classes.addAll(SERVICE);
    }
    List<String> failures = new ArrayList<>();
    int passed = 0;
    for (Class<?> type : classes) {
      Method[] methods = type.getDeclaredMethods();
      Arrays.sort(methods, Comparator.comparing(Method::getName));
      for (Method method : methods) {
        if (!method.isAnnotationPresent(Test.class)) continue;
        String name = type.getSimpleName() + "." + method.getName();
        if (!name.contains(filter)) continue;
        long started = System.nanoTime();
        try {
          method.setAccessible(true);
          method.invoke(type.getDeclaredConstructor().newInstance());
          passed++;
          System.out.printf("ok   %s (%d ms)%n", name, (System.nanoTime() - started) / 1_000_000);
        } catch (InvocationTargetException e) {
          failures.add(name);
          System.out.printf("FAIL %s (%d ms)%n", name, (System.nanoTime() - started) / 1_000_000);
          e.getCause().printStackTrace(System.out);
        } catch (ReflectiveOperationException e) {
          failures.add(name);
          System.out.println("FAIL " + name + ": cannot run it: " + e);
        }
      }
    }
    System.out.printf("%d passed, %d failed%s%n", passed, failures.size(), failures.isEmpty() ? "" : ": " + String.join(", ", failures));
    System.exit(failures.isEmpty() && passed > 0 ? 0 : 1);
  }
}

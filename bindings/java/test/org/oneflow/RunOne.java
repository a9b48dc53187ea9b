package org.oneflow;

import org.junit.runner.JUnitCore;
import org.junit.runner.Request;
import org.junit.runner.Result;
import org.junit.runner.notification.Failure;

/** Runs one JUnit 4 class, or one of its test methods: RunOne CLASS [METHOD]. Exit status 0 when all passed. */
public final class RunOne {
  private RunOne() {}

  public static void main(String[] args) throws Exception {
    Class<?> c = Class.forName(args[0]);
    Request r = args.length > 1 ? Request.method(c, args[1]) : Request.aClass(c);
    long t0 = System.nanoTime();
    Result result = new JUnitCore().run(r);
    for (Failure f : result.getFailures()) {
      System.out.println("FAILED " + f.getTestHeader() + ": " + f.getMessage());
      System.out.println(f.getTrace());
    }
    System.out.printf("%s%s: %d run, %d failed, %.2f s%n", args[0], args.length > 1 ? "#" + args[1] : "",
        result.getRunCount(), result.getFailureCount(), (System.nanoTime() - t0) * 1e-9);
    // No System.exit: an exception out of main makes the launcher exit with status 1.
    if (!result.wasSuccessful() || result.getRunCount() == 0) throw new AssertionError("tests failed");
  }
}

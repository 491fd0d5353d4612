package dev.sandglass.client;

import static dev.sandglass.client.Assert.assertEquals;
import static dev.sandglass.client.Assert.assertThrows;
import static dev.sandglass.client.Assert.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/** The consumer loop: ack on return, fail on exception, lease extension, graceful stop. */
public final class ConsumerLoopTest {
  private final SandglassClient client = Service.client();

  /** Waits (generously: the machine may be busy) until the latch opens, or fails. */
  private static void await(CountDownLatch latch, String what) throws InterruptedException {
    assertTrue(latch.await(60, TimeUnit.SECONDS), what);
  }

  @Test
  public void acksOnReturnAndRetriesOnException() throws Exception {
    String queue = Service.queue("loop");
    for (int i = 0; i < 6; i++) client.add(queue, Map.of("n", (long) i), AddOptions.none().id("job " + i));
    Map<String, AtomicInteger> attempts = new ConcurrentHashMap<>();
    CountDownLatch done = new CountDownLatch(6);
    JobHandler handler =
        job -> {
          int attempt = attempts.computeIfAbsent(job.id(), id -> new AtomicInteger()).incrementAndGet();
          assertEquals(attempt, job.attempt(), "attempt of " + job.id());
          if (job.id().equals("job 3") && attempt == 1) throw new IllegalStateException("first attempt fails");
          done.countDown();
          return Map.of("handled", job.id());
        };
    try (ConsumerLoop loop = client.consume(queue, handler, ConsumerOptions.defaults().withConcurrency(3).withWait(Duration.ofSeconds(5)).withRetryDelay(Duration.ofMillis(100)))) {
      await(done, "every job handled");
      assertTrue(loop.isRunning(), "running until stopped");
    }
    assertEquals(2, attempts.get("job 3").get(), "the failed job was retried once");
    for (int i = 0; i < 6; i++) {
      if (i != 3) assertEquals(1, attempts.get("job " + i).get(), "job " + i + " ran once");
      String id = "job " + i;
      assertThrows(NotFoundException.class, () -> client.get(queue, id));
    }
  }

  @Test
  public void failJobExceptionDeadLettersOrDelays() throws Exception {
    String queue = Service.queue("planned");
    client.add(queue, "x", AddOptions.none().id("to-dead"));
    client.add(queue, "y", AddOptions.none().id("later"));
    CountDownLatch both = new CountDownLatch(2);
    try (ConsumerLoop loop =
        client.consume(
            queue,
            job -> {
              both.countDown();
              throw job.id().equals("to-dead") ? FailJobException.dead("unusable") : FailJobException.retryAfter("later", Duration.ofHours(1));
            },
            ConsumerOptions.defaults().withConcurrency(2).withWait(Duration.ofSeconds(2)))) {
      await(both, "both handled");
      assertTrue(loop.isRunning(), "running until closed");
    }
    assertEquals("dead", client.get(queue, "to-dead").state());
    JobInfo later = client.get(queue, "later");
    assertEquals("delayed", later.state());
    assertTrue(later.dueAt() > System.currentTimeMillis() + 3_000_000, "due in about an hour");
  }

  @Test
  public void extendsTheLeaseOfALongHandler() throws Exception {
    String queue = Service.queue("lease");
    client.add(queue, "slow", AddOptions.none().id("slow"));
    List<Integer> attempts = new CopyOnWriteArrayList<>();
    CountDownLatch finished = new CountDownLatch(1);
    // A 600 ms lease, a handler of 2.5 s: without extension the job would be reaped and run again.
    try (ConsumerLoop loop =
        client.consume(
            queue,
            job -> {
              attempts.add(job.attempt());
              Thread.sleep(2_500);
              finished.countDown();
              return null;
            },
            ConsumerOptions.defaults().withConcurrency(2).withLease(Duration.ofMillis(600)).withWait(Duration.ofSeconds(1)))) {
      await(finished, "the slow job finished");
      assertTrue(loop.isRunning(), "running until closed");
      // Room for a redelivery to show up, had the lease been lost.
      Thread.sleep(1_000);
    }
    assertEquals(List.of(1), attempts, "one delivery");
    assertThrows(NotFoundException.class, () -> client.get(queue, "slow"));
  }

  @Test
  public void stopEndsALongPollAndLetsRunningHandlersFinish() throws Exception {
    String queue = Service.queue("stop");
    CountDownLatch started = new CountDownLatch(1);
    Set<String> finished = ConcurrentHashMap.newKeySet();
    ConsumerLoop loop =
        client.consume(
            queue,
            job -> {
              started.countDown();
              Thread.sleep(1_500);
              finished.add(job.id());
              return null;
            },
            // Two threads: one runs the job, the other waits in a 60 s long poll that stop must end.
            ConsumerOptions.defaults().withConcurrency(2).withWait(Duration.ofSeconds(60)));
    client.add(queue, "x", AddOptions.none().id("running"));
    await(started, "the handler started");
    assertTrue(loop.stop(Duration.ofSeconds(30)), "stopped within the timeout, the long poll aborted");
    assertEquals(Set.of("running"), finished, "the running handler finished");
    assertThrows(NotFoundException.class, () -> client.get(queue, "running"));
    assertTrue(!loop.isRunning(), "stopped");
    // Nothing claims after the stop.
    client.add(queue, "y", AddOptions.none().id("after"));
    Thread.sleep(500);
    assertEquals("ready", client.get(queue, "after").state());
  }

  @Test
  public void failsAJobWhoseResultHasNoJsonForm() throws Exception {
    String queue = Service.queue("result");
    client.add(queue, "x", AddOptions.none().id("r").maxAttempts(1));
    CountDownLatch ran = new CountDownLatch(1);
    ConsumerLoop loop =
        client.consume(
            queue,
            job -> {
              ran.countDown();
              return new Object(); // no JSON form
            },
            ConsumerOptions.defaults().withWait(Duration.ofSeconds(2)));
    try {
      await(ran, "the handler ran");
    } finally {
      assertTrue(loop.stop(Duration.ofSeconds(30)), "stopped");
    }
    JobInfo dead = client.get(queue, "r");
    assertEquals("dead", dead.state(), "failed at once, out of attempts");
    assertTrue(dead.lastError().contains("no JSON form"), dead.lastError());
  }

  @Test
  public void stopPastItsTimeoutHandsTheRunningJobBack() throws Exception {
    String queue = Service.queue("timeout");
    client.add(queue, "x", AddOptions.none().id("stuck"));
    CountDownLatch started = new CountDownLatch(1);
    ConsumerLoop loop =
        client.consume(
            queue,
            job -> {
              started.countDown();
              Thread.sleep(120_000); // far beyond the stop's timeout
              return null;
            },
            ConsumerOptions.defaults().withWait(Duration.ofSeconds(2)));
    await(started, "the handler started");
    assertTrue(!loop.stop(Duration.ofMillis(300)), "not finished within the timeout");
    // Handed back at once (retryDelayMs 0), not after its 30 s lease.
    JobInfo job = client.get(queue, "stuck");
    assertTrue(!job.state().equals("active"), "no longer held: " + job.state());
    assertTrue(job.dueAt() < System.currentTimeMillis() + 10_000, "due again now, not after the lease: " + job);
    assertTrue(job.lastError().contains("the consumer stopped"), job.lastError());
  }

  @Test
  public void claimsSeveralJobsAtOnceAndHandsBackThoseNotStartedAtStop() throws Exception {
    String queue = Service.queue("batch");
    List<BulkJob> jobs = new java.util.ArrayList<>();
    for (int i = 0; i < 8; i++) jobs.add(BulkJob.of(i, AddOptions.none().id("b" + i)));
    client.addBulk(queue, jobs);
    Set<String> handled = ConcurrentHashMap.newKeySet();
    CountDownLatch first = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    // One thread, all 8 claimed at once: the first handler blocks until the stop has begun.
    ConsumerLoop loop =
        client.consume(
            queue,
            job -> {
              handled.add(job.id());
              first.countDown();
              release.await();
              return null;
            },
            ConsumerOptions.defaults().withMaxPerClaim(8).withWait(Duration.ofSeconds(2)));
    await(first, "the first job started");
    Thread stopper = new Thread(() -> loop.stop(Duration.ofSeconds(30)));
    stopper.start();
    while (loop.isRunning()) Thread.sleep(10);
    release.countDown();
    stopper.join();
    assertEquals(1, handled.size(), "only the job already running was run: " + handled);
    String ran = handled.iterator().next();
    assertThrows(NotFoundException.class, () -> client.get(queue, ran));
    int handedBack = 0;
    for (int i = 0; i < 8; i++) {
      if (("b" + i).equals(ran)) continue;
      JobInfo back = client.get(queue, "b" + i);
      assertTrue(!back.state().equals("active"), "b" + i + " is not held: " + back.state());
      // Claimed with the first (the usual case): handed back with why; else never claimed at all.
      if ("the consumer stopped before the job started".equals(back.lastError())) handedBack++;
      else assertEquals(0, back.attempts(), "b" + i + " never delivered");
    }
    assertTrue(handedBack > 0, "the claimed jobs not started were handed back");
    // A loop with several jobs per claim runs them all.
    String other = Service.queue("batch-all");
    client.addBulk(other, jobs);
    CountDownLatch all = new CountDownLatch(8);
    ConsumerLoop batch =
        client.consume(other, job -> {
          all.countDown();
          return null;
        }, ConsumerOptions.defaults().withConcurrency(2).withMaxPerClaim(5).withWait(Duration.ofSeconds(2)));
    try {
      await(all, "all 8 handled");
    } finally {
      assertTrue(batch.stop(Duration.ofSeconds(30)), "stopped");
    }
  }
}

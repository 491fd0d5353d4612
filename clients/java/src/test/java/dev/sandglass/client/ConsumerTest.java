package dev.sandglass.client;

import static dev.sandglass.client.Assert.assertEquals;
import static dev.sandglass.client.Assert.assertThrows;
import static dev.sandglass.client.Assert.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;

/** claim, ack, fail, extend against the real service. */
public final class ConsumerTest {
  private final SandglassClient client = Service.client();

  private PulledJob claimOne(String queue, long waitMs) {
    List<PulledJob> jobs = client.claim(queue, new ClaimOptions(1, 30_000L, waitMs));
    assertEquals(1, jobs.size(), "one job claimed");
    return jobs.get(0);
  }

  @Test
  public void claimsAcksAndRefusesAStaleToken() {
    String queue = Service.queue("claim");
    client.add(queue, Map.of("n", 1L), AddOptions.none().id(ProducerTest.AWKWARD_ID));
    PulledJob first = claimOne(queue, 0);
    assertEquals(ProducerTest.AWKWARD_ID, first.id());
    assertEquals(queue, first.queue());
    assertEquals(Map.of("n", 1L), first.payload());
    assertEquals(1, first.attempt());
    assertTrue(!first.toString().contains("token"), "toString hides the fencing token: " + first);
    assertEquals("active", client.get(queue, first.id()).state());
    JobRunningException running = assertThrows(JobRunningException.class, () -> client.cancel(queue, first.id()));
    assertTrue(running instanceof ConflictException, "a running job is a conflict");
    assertThrows(JobRunningException.class, () -> client.reschedule(queue, first.id(), When.delay("1h")));

    FailResult failed = client.fail(queue, first.id(), first.token(), FailOptions.retryAfter("boom", Duration.ZERO));
    assertEquals("retried", failed.result());
    assertTrue(failed.retryAt() != null, "retryAt is set");
    PulledJob second = claimOne(queue, 5_000);
    assertEquals(2, second.attempt());
    assertEquals("boom", client.get(queue, second.id()).lastError());
    StaleTokenException stale = assertThrows(StaleTokenException.class, () -> client.ack(queue, second.id(), first.token()));
    assertEquals(409, stale.status());
    assertEquals("STALE_TOKEN", stale.code());
    assertThrows(StaleTokenException.class, () -> client.extend(queue, second.id(), first.token(), null));
    ExtendResult extended = client.extend(queue, second.id(), second.token(), 60_000L);
    assertEquals("extended", extended.result());
    assertTrue(extended.leaseUntilAt() > second.leaseUntilAt(), "the lease moved on");
    assertEquals("acked", client.ack(queue, second.id(), second.token(), Map.of("closed", true)));
    assertThrows(NotFoundException.class, () -> client.get(queue, second.id()));
  }

  @Test
  public void failsADeadJob() {
    String queue = Service.queue("dead");
    client.add(queue, "x", AddOptions.none().id("d"));
    PulledJob job = claimOne(queue, 0);
    assertEquals("dead", client.fail(queue, "d", job.token(), FailOptions.dead("no use")).result());
    JobInfo dead = client.get(queue, "d");
    assertEquals("dead", dead.state());
    assertEquals("no use", dead.lastError());
    assertTrue(dead.deadAt() != null, "deadAt is set");
  }

  @Test
  public void longPollAnswersWhenAJobFallsDueAndNeverBefore() {
    String queue = Service.queue("poll");
    assertEquals(List.of(), client.claim(queue, new ClaimOptions(null, null, 0L)));
    client.add(queue, "soon", AddOptions.none().id("soon").delayMs(700));
    PulledJob job = claimOne(queue, 10_000);
    // The claim's instant on the Redis clock is leaseUntilAt - leaseMs; never before dueAt.
    assertTrue(job.leaseUntilAt() - 30_000 >= job.dueAt(), "claimed at or after its due time: " + job);
    client.ack(queue, job.id(), job.token());
  }

  @Test
  public void refusesClaimOptionsOutOfBounds() {
    assertThrows(ValidationException.class, () -> client.claim(Service.queue("bounds"), new ClaimOptions(0, null, null)));
    assertThrows(ValidationException.class, () -> client.claim(Service.queue("bounds"), new ClaimOptions(1, 10L, null)));
  }
}

package dev.sandglass.client;

import static dev.sandglass.client.Assert.assertEquals;
import static dev.sandglass.client.Assert.assertThrows;
import static dev.sandglass.client.Assert.assertTrue;

import java.math.BigInteger;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** add, addBulk, get, cancel, reschedule against the real service. */
public final class ProducerTest {
  /** Every character class a path breaks on: '/', space, '+', '%', non-ASCII. */
  static final String AWKWARD_ID = "order/42 a+b%c Zürich";

  private final SandglassClient client = Service.client();

  @Test
  public void addsGetsAndCancelsAJobWithAnAwkwardId() {
    String queue = Service.queue("awkward");
    Map<String, Object> payload = new LinkedHashMap<>();
    payload.put("orderId", "9007199254740993");
    payload.put("note", "заказ \"42\" \\ 🚀\n");
    payload.put("items", List.of(1L, 2L, Map.of("nested", true)));
    payload.put("none", null);
    String id = client.add(queue, payload, AddOptions.none().id(AWKWARD_ID).delay(Duration.ofMinutes(30)).maxAttempts(5).group("shop 42/eu+1"));
    assertEquals(AWKWARD_ID, id);
    JobInfo job = client.get(queue, AWKWARD_ID);
    assertEquals(AWKWARD_ID, job.id());
    assertEquals(payload, job.payload(), "the payload comes back as sent");
    assertEquals("delayed", job.state());
    assertEquals(5, job.maxAttempts());
    assertEquals("shop 42/eu+1", job.group());
    assertEquals(0, job.attempts());
    // A '+' is a plus: the id with a space in its place names no job.
    assertThrows(NotFoundException.class, () -> client.get(queue, "order/42 a b%c Zürich"));
    assertEquals("cancelled", client.cancel(queue, AWKWARD_ID));
    NotFoundException gone = assertThrows(NotFoundException.class, () -> client.get(queue, AWKWARD_ID));
    assertEquals(404, gone.status());
    assertEquals("NOT_FOUND", gone.code());
    assertThrows(NotFoundException.class, () -> client.cancel(queue, AWKWARD_ID));
  }

  @Test
  public void addIsIdempotentById() {
    String queue = Service.queue("idempotent");
    assertEquals("order:1", client.add(queue, Map.of("v", 1L), AddOptions.none().id("order:1").delay("1h")));
    assertEquals("order:1", client.add(queue, Map.of("v", 2L), AddOptions.none().id("order:1").delay("1h")));
    assertEquals(Map.of("v", 1L), client.get(queue, "order:1").payload(), "kept");
    client.add(queue, Map.of("v", 3L), AddOptions.none().id("order:1").delay("1h").ifExists(IfExists.REPLACE));
    assertEquals(Map.of("v", 3L), client.get(queue, "order:1").payload(), "replaced");
  }

  @Test
  public void addsWithEveryOption() {
    String queue = Service.queue("options");
    Instant at = Instant.now().plus(Duration.ofDays(1));
    client.add(
        queue,
        "a string payload",
        AddOptions.none()
            .id("all")
            .at(at)
            .backoff(Backoff.exponential(1000, 60_000L, 0.5))
            .expireAfter(Duration.ofHours(1))
            .onExpire(OnExpire.DROP));
    JobInfo job = client.get(queue, "all");
    assertEquals(at.toEpochMilli(), job.dueAt());
    assertEquals("a string payload", job.payload());
    assertTrue(job.expiresAt() != null && job.expiresAt() == at.toEpochMilli() + 3_600_000, "expiresAt: " + job.expiresAt());
    client.add(queue, Json.raw("{\"raw\":[1,2.5,\"x\"]}"), AddOptions.none().id("raw").at("2030-01-01T00:00:00Z").backoff(Backoff.fixed(10)));
    assertEquals("{\"raw\":[1,2.5,\"x\"]}", Json.write(client.get(queue, "raw").payload()));
    assertEquals(1893456000000L, client.get(queue, "raw").dueAt());
    String generated = client.add(queue, null);
    assertTrue(!generated.isEmpty(), "a generated id");
    assertEquals(null, client.get(queue, generated).payload());
  }

  @Test
  public void addsInBulk() {
    String queue = Service.queue("bulk");
    List<String> ids =
        client.addBulk(
            queue,
            List.of(
                BulkJob.of(Map.of("n", 1L), AddOptions.none().id("b/1 +").delay("1h")),
                BulkJob.of(Map.of("n", 2L), AddOptions.none().id("b/2 %").delayMs(3_600_000)),
                BulkJob.of(List.of("three"))));
    assertEquals(3, ids.size());
    assertEquals(List.of("b/1 +", "b/2 %"), ids.subList(0, 2));
    assertEquals(Map.of("n", 2L), client.get(queue, "b/2 %").payload());
    assertEquals(List.of("three"), client.get(queue, ids.get(2)).payload());
    client.addBulk(queue, List.of(BulkJob.of("new", AddOptions.none().id("b/1 +").delay("1h"))), IfExists.REPLACE);
    assertEquals("new", client.get(queue, "b/1 +").payload());
    assertThrows(IllegalArgumentException.class, () -> BulkJob.of("x", AddOptions.none().ifExists(IfExists.KEEP)));
    // One bad entry refuses them all.
    ValidationException bad =
        assertThrows(ValidationException.class, () -> client.addBulk(queue, List.of(BulkJob.of("ok", AddOptions.none().id("c1")), BulkJob.of("x", AddOptions.none().maxAttempts(0)))));
    assertEquals(400, bad.status());
    assertThrows(NotFoundException.class, () -> client.get(queue, "c1"));
  }

  @Test
  public void reschedules() {
    String queue = Service.queue("reschedule");
    client.add(queue, 1L, AddOptions.none().id("r 1").delay("1h"));
    assertEquals("rescheduled", client.reschedule(queue, "r 1", When.at(Instant.ofEpochMilli(1_900_000_000_000L))));
    assertEquals(1_900_000_000_000L, client.get(queue, "r 1").dueAt());
    long before = client.get(queue, "r 1").dueAt();
    assertEquals("rescheduled", client.reschedule(queue, "r 1", When.delay(Duration.ofMinutes(5))));
    assertTrue(client.get(queue, "r 1").dueAt() < before, "moved earlier");
    assertEquals("rescheduled", client.reschedule(queue, "r 1", When.delay("2h")));
    assertEquals("rescheduled", client.reschedule(queue, "r 1", When.at("2031-01-01T00:00:00Z")));
    assertThrows(NotFoundException.class, () -> client.reschedule(queue, "no such job", When.delay("1h")));
  }

  @Test
  public void refusesIntegersJsonWouldChange() {
    String queue = Service.queue("bigint");
    ValidationException e =
        assertThrows(ValidationException.class, () -> client.add(queue, Map.of("orderId", new BigInteger("9007199254740993")), AddOptions.none().id("big")));
    assertEquals("VALIDATION", e.code());
    assertTrue(e.getMessage().contains("payload.orderId"), "names the path: " + e.getMessage());
    assertThrows(NotFoundException.class, () -> client.get(queue, "big"));
    // As a string, it is kept exactly.
    client.add(queue, Map.of("orderId", "9007199254740993"), AddOptions.none().id("big"));
    assertEquals(Map.of("orderId", "9007199254740993"), client.get(queue, "big").payload());
  }

  @Test
  public void mapsValidationErrors() {
    ValidationException e = assertThrows(ValidationException.class, () -> client.add("bad name", 1L));
    assertEquals(400, e.status());
    assertThrows(ValidationException.class, () -> client.add(Service.queue("v"), 1L, AddOptions.none().delay("soon")));
  }

  @Test
  public void neverShowsTheToken() {
    String token = Service.token();
    assertTrue(token != null && token.length() >= 8, "the tests run with a token");
    SandglassClient.Builder builder = SandglassClient.builder(Service.url()).token(token);
    assertTrue(!builder.toString().contains(token), "builder: " + builder);
    assertTrue(!client.toString().contains(token), "client: " + client);
    SandglassClient wrong = SandglassClient.builder(Service.url()).token(token + "-wrong").build();
    UnauthorizedException refused = assertThrows(UnauthorizedException.class, () -> wrong.add(Service.queue("auth"), 1L));
    assertEquals(401, refused.status());
    assertTrue(!refused.getMessage().contains(token) && !refused.toString().contains(token), "message: " + refused.getMessage());
    assertThrows(UnauthorizedException.class, () -> SandglassClient.builder(Service.url()).build().get("q", "x"));
    // No answer at all (nothing listens on port 9 of loopback): the message has no token either.
    SandglassClient nowhere = SandglassClient.builder("http://127.0.0.1:9").token(token).build();
    SandglassException down = assertThrows(SandglassException.class, () -> nowhere.get("q", "x"));
    assertEquals(SandglassException.CONNECTION_FAILED, down.code());
    assertEquals(0, down.status());
    assertTrue(!down.getMessage().contains(token) && !String.valueOf(down.getCause()).contains(token), "message: " + down.getMessage());
  }
}

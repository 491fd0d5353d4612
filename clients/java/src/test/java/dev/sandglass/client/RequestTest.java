package dev.sandglass.client;

import static dev.sandglass.client.Assert.assertEquals;
import static dev.sandglass.client.Assert.assertThrows;
import static dev.sandglass.client.Assert.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;

/** What the client puts on the wire, seen by a fake service: paths, headers, bodies, timeouts. */
public final class RequestTest {
  private static final String TOKEN = "unit-test-token-4f1c9a";

  @Test
  public void sendsIdsAsPercentEncodedSegmentsAndTheTokenAsABearerHeader() throws Exception {
    try (FakeService fake = new FakeService()) {
      SandglassClient client = SandglassClient.builder(fake.url() + "/").token(TOKEN).build();
      fake.answer(200, "{\"result\":\"cancelled\"}", 0);
      client.cancel("orders", "order/42 a+b%c Zürich");
      FakeService.Received cancel = fake.last();
      assertEquals("DELETE", cancel.method());
      assertEquals("/v1/queues/orders/jobs/order%2F42%20a%2Bb%25c%20Z%C3%BCrich", cancel.rawPath());
      assertEquals("Bearer " + TOKEN, cancel.authorization());

      fake.answer(201, "{\"id\":\"order:42\"}", 0);
      client.add("orders", Map.of("orderId", 42), AddOptions.none().id("order:42").delay("30m").maxAttempts(3));
      FakeService.Received add = fake.last();
      assertEquals("/v1/queues/orders/jobs", add.rawPath());
      assertEquals("application/json", add.contentType());
      assertEquals("{\"payload\":{\"orderId\":42},\"id\":\"order:42\",\"delay\":\"30m\",\"maxAttempts\":3}", add.body());

      fake.answer(200, "{\"result\":\"retried\",\"retryAt\":1}", 0);
      client.fail("orders", "a b", "12", new FailOptions("x".repeat(5000), 250L, null));
      Map<?, ?> fail = (Map<?, ?>) Json.parse(fake.last().body());
      assertEquals(4096, ((String) fail.get("error")).length(), "error cut to the service's limit");
      assertEquals(250L, fail.get("retryDelayMs"));
      assertEquals("/v1/queues/orders/jobs/a%20b/fail", fake.last().rawPath());

      fake.answer(200, "{\"jobs\":[]}", 0);
      client.claim("orders", ClaimOptions.defaults());
      assertEquals("{}", fake.last().body(), "unset claim options are not sent");
    }
  }

  @Test
  public void sendsNoAuthorizationWithoutAToken() throws Exception {
    try (FakeService fake = new FakeService()) {
      fake.answer(201, "{\"ids\":[\"a\",\"b\"]}", 0);
      List<String> ids = SandglassClient.builder(fake.url()).build().addBulk("q", List.of(BulkJob.of(1), BulkJob.of(2)), IfExists.REPLACE);
      assertEquals(List.of("a", "b"), ids);
      assertEquals(null, fake.last().authorization());
      assertEquals("{\"jobs\":[{\"payload\":1},{\"payload\":2}],\"ifExists\":\"replace\"}", fake.last().body());
    }
  }

  @Test
  public void givesALongPollMoreTimeThanItsWait() throws Exception {
    try (FakeService fake = new FakeService()) {
      // The default request timeout is 300 ms, the claim's waitMs 1000: its answer after 1.2 s arrives.
      SandglassClient client = SandglassClient.builder(fake.url()).token(TOKEN).requestTimeout(Duration.ofMillis(300)).build();
      fake.answer(200, "{\"jobs\":[]}", 1_200);
      assertEquals(List.of(), client.claim("q", new ClaimOptions(1, null, 1_000L)));
      // Other requests keep the request timeout.
      SandglassException timedOut = assertThrows(SandglassException.class, () -> client.get("q", "x"));
      assertEquals(SandglassException.CONNECTION_FAILED, timedOut.code());
      assertTrue(timedOut.getMessage().contains("HttpTimeoutException"), timedOut.getMessage());
      assertTrue(!timedOut.getMessage().contains(TOKEN), "no token in the message");
    }
  }

  @Test
  public void reportsAnswersThatAreNotTheApis() throws Exception {
    try (FakeService fake = new FakeService()) {
      SandglassClient client = SandglassClient.builder(fake.url()).token(TOKEN).build();
      fake.answer(502, "<html>bad gateway</html>", 0);
      SandglassException proxy = assertThrows(SandglassException.class, () -> client.get("q", "x"));
      assertEquals("HTTP_502", proxy.code());
      fake.answer(200, "{\"id\":1}", 0);
      assertEquals("UNEXPECTED_ANSWER", assertThrows(SandglassException.class, () -> client.add("q", 1)).code());
      fake.answer(403, "{\"error\":{\"code\":\"FORBIDDEN_SCOPE\",\"message\":\"the token has no scope for this route\"}}", 0);
      ForbiddenScopeException scope = assertThrows(ForbiddenScopeException.class, () -> client.cancel("q", "x"));
      assertEquals(403, scope.status());
      assertTrue(!scope.getMessage().contains(TOKEN), "no token in the message");
    }
  }

  @Test
  public void refusesConsumerOptionsOutOfBounds() {
    assertThrows(IllegalArgumentException.class, () -> ConsumerOptions.defaults().withConcurrency(0));
    assertThrows(IllegalArgumentException.class, () -> ConsumerOptions.defaults().withWait(Duration.ofSeconds(61)));
    assertThrows(IllegalArgumentException.class, () -> ConsumerOptions.defaults().withLease(Duration.ofMillis(100)));
    assertEquals(2_000L, ConsumerOptions.defaults().withLease(Duration.ofSeconds(6)).extendEveryMs());
  }
}

package dev.sandglass.client;

import java.net.http.HttpClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;

/**
 * The client of a {@code sandglass serve}: the producer routes (add, addBulk, get, cancel,
 * reschedule) and the pull consumer routes (claim, ack, fail, extend), named as the HTTP API names
 * them, and {@link #consume} for a consumer loop. Thread-safe; make one per service and share it.
 *
 * <pre>{@code
 * SandglassClient client = SandglassClient.builder("http://127.0.0.1:8080").token(System.getenv("SANDGLASS_TOKEN")).build();
 * client.add("order-timeout", Map.of("orderId", 42), AddOptions.none().id("order:42").delay("30m"));
 * }</pre>
 *
 * <p>Every method throws a {@link SandglassException} (unchecked) for an error answer, of the
 * subclass of its code ({@link NotFoundException}, {@link ValidationException}, ...), or of code
 * {@link SandglassException#CONNECTION_FAILED} when no answer came.
 */
public final class SandglassClient {
  /** Added to a long poll's {@code waitMs} for its request timeout: the answer may come at waitMs. */
  static final Duration LONG_POLL_MARGIN = Duration.ofSeconds(10);

  private final Transport transport;

  private SandglassClient(Transport transport) {
    this.transport = transport;
  }

  /**
   * @param baseUrl the service's URL, e.g. {@code http://127.0.0.1:8080}
   * @return a builder
   */
  public static Builder builder(String baseUrl) {
    return new Builder(baseUrl);
  }

  /** Settings of a client: the URL, the token, timeouts, or an HttpClient of your own. */
  public static final class Builder {
    private final String baseUrl;
    private String token;
    private Duration requestTimeout = Duration.ofSeconds(30);
    private Duration connectTimeout = Duration.ofSeconds(10);
    private HttpClient httpClient;

    private Builder(String baseUrl) {
      this.baseUrl = Objects.requireNonNull(baseUrl, "baseUrl");
    }

    /**
     * @param token the service's bearer token ({@code SANDGLASS_TOKEN}); null or empty: none
     * @return this builder
     */
    public Builder token(String token) {
      this.token = token;
      return this;
    }

    /**
     * @param requestTimeout the longest wait for an answer (default 30 s); a claim's long poll gets
     *     its {@code waitMs} plus 10 s instead
     * @return this builder
     */
    public Builder requestTimeout(Duration requestTimeout) {
      this.requestTimeout = Objects.requireNonNull(requestTimeout);
      return this;
    }

    /**
     * @param connectTimeout the longest wait for a connection (default 10 s; ignored with {@link #httpClient})
     * @return this builder
     */
    public Builder connectTimeout(Duration connectTimeout) {
      this.connectTimeout = Objects.requireNonNull(connectTimeout);
      return this;
    }

    /**
     * @param httpClient the HttpClient to send with (a proxy, TLS settings, an executor); default:
     *     a new HTTP/1.1 client
     * @return this builder
     */
    public Builder httpClient(HttpClient httpClient) {
      this.httpClient = Objects.requireNonNull(httpClient);
      return this;
    }

    /**
     * @return the client
     */
    public SandglassClient build() {
      // HTTP/1.1: the service speaks it, and an h2c upgrade attempt would only cost a round trip.
      HttpClient http =
          httpClient != null ? httpClient : HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(connectTimeout).build();
      return new SandglassClient(new Transport(http, baseUrl, token, requestTimeout));
    }

    /** Without the token. */
    @Override
    public String toString() {
      return "SandglassClient.Builder[baseUrl=" + baseUrl + ", token=" + (token == null || token.isEmpty() ? "none" : "set") + "]";
    }
  }

  // -- producers ------------------------------------------------------------------------------

  /**
   * {@code POST /v1/queues/{queue}/jobs}: adds a job due now with a generated id.
   *
   * @param queue the queue's name
   * @param payload a Map/List/String/Number/Boolean/null tree, a record, or {@link Json#raw}
   * @return the job's id
   */
  public String add(String queue, Object payload) {
    return add(queue, payload, AddOptions.none());
  }

  /**
   * {@code POST /v1/queues/{queue}/jobs}: adds a job. Idempotent by id: an id that exists answers
   * that id and changes nothing (unless {@code ifExists} is {@code REPLACE}).
   *
   * @param queue the queue's name
   * @param payload a Map/List/String/Number/Boolean/null tree, a record, or {@link Json#raw}
   * @param options delay or at, id, ifExists, maxAttempts, backoff, expireAfter, onExpire, group
   * @return the job's id
   */
  public String add(String queue, Object payload, AddOptions options) {
    Object answer = transport.call("POST", queuePath(queue) + "/jobs", options.body(payload));
    return Fields.of(answer, "add answer").string("id");
  }

  /**
   * {@code POST /v1/queues/{queue}/jobs:bulk}: adds up to 1,000 jobs in one request; one bad
   * entry refuses them all and nothing is written.
   *
   * @param queue the queue's name
   * @param jobs the jobs
   * @return their ids, in order
   */
  public List<String> addBulk(String queue, List<BulkJob> jobs) {
    return addBulk(queue, jobs, null);
  }

  /**
   * {@code POST /v1/queues/{queue}/jobs:bulk} with an {@code ifExists} for all the jobs.
   *
   * @param queue the queue's name
   * @param jobs the jobs
   * @param ifExists what adding an id that exists does; null: the default ({@code keep})
   * @return their ids, in order
   */
  public List<String> addBulk(String queue, List<BulkJob> jobs, IfExists ifExists) {
    List<Object> entries = new ArrayList<>(jobs.size());
    for (BulkJob job : jobs) entries.add(job.toJson());
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("jobs", entries);
    if (ifExists != null) body.put("ifExists", ifExists.wire());
    Object answer = transport.call("POST", queuePath(queue) + "/jobs:bulk", body);
    List<String> ids = new ArrayList<>();
    for (Object id : Fields.of(answer, "addBulk answer").list("ids")) ids.add((String) id);
    return ids;
  }

  /**
   * {@code GET /v1/queues/{queue}/jobs/{id}}.
   *
   * @param queue the queue's name
   * @param id the job id
   * @return the job
   * @throws NotFoundException when there is no such job (never added, completed or cancelled)
   */
  public JobInfo get(String queue, String id) {
    return JobInfo.from(transport.call("GET", jobPath(queue, id), null));
  }

  /**
   * {@code DELETE /v1/queues/{queue}/jobs/{id}}.
   *
   * @param queue the queue's name
   * @param id the job id
   * @return {@code cancelled}
   * @throws NotFoundException when there is no such job
   * @throws JobRunningException when a consumer holds it (it is not interrupted)
   */
  public String cancel(String queue, String id) {
    return Fields.of(transport.call("DELETE", jobPath(queue, id), null), "cancel answer").string("result");
  }

  /**
   * {@code POST /v1/queues/{queue}/jobs/{id}/reschedule}; a dead job is revived with fresh attempts.
   *
   * @param queue the queue's name
   * @param id the job id
   * @param when the new due time: {@link When#delay} or {@link When#at}
   * @return {@code rescheduled}
   * @throws NotFoundException when there is no such job
   * @throws JobRunningException when a consumer holds it
   */
  public String reschedule(String queue, String id, When when) {
    return Fields.of(transport.call("POST", jobPath(queue, id) + "/reschedule", when.toJson()), "reschedule answer").string("result");
  }

  // -- pull consumers --------------------------------------------------------------------------

  /**
   * {@code POST /v1/queues/{queue}/claim}: claims due jobs under a lease, waiting up to {@code
   * waitMs} for one (the request's timeout is {@code waitMs} plus 10 s).
   *
   * @param queue the queue's name
   * @param options max, leaseMs, waitMs
   * @return the jobs claimed, possibly none
   */
  public List<PulledJob> claim(String queue, ClaimOptions options) {
    return claimed(Transport.join(claimRequest(queue, options)));
  }

  /**
   * Sends a claim without waiting; cancelling the future aborts the long poll (HttpClient closes the
   * connection, and the service hands back any job it claimed in that instant). The consumer loop's stop.
   */
  CompletableFuture<Object> claimRequest(String queue, ClaimOptions options) {
    Duration timeout = Duration.ofMillis(options.waitMs() == null ? 0 : options.waitMs()).plus(LONG_POLL_MARGIN);
    return transport.send("POST", queuePath(queue) + "/claim", options.toJson(), timeout);
  }

  /** The jobs of a claim's answer. */
  static List<PulledJob> claimed(Object answer) {
    List<PulledJob> jobs = new ArrayList<>();
    for (Object job : Fields.of(answer, "claim answer").list("jobs")) jobs.add(PulledJob.from(job));
    return jobs;
  }

  /**
   * {@code POST /v1/queues/{queue}/jobs/{id}/ack}: the job is done.
   *
   * @param queue the queue's name
   * @param id the job id
   * @param token the claim's fencing token
   * @return {@code acked}
   * @throws StaleTokenException when the token no longer holds the lease
   */
  public String ack(String queue, String id, String token) {
    return sendAck(queue, id, Map.of("token", token));
  }

  /**
   * {@code POST /v1/queues/{queue}/jobs/{id}/ack} with the handler's result, kept with the
   * completed job while the queue keeps completed jobs.
   *
   * @param queue the queue's name
   * @param id the job id
   * @param token the claim's fencing token
   * @param result any JSON value (a tree, a record, or {@link Json#raw}); null is sent as JSON null
   * @return {@code acked}
   * @throws StaleTokenException when the token no longer holds the lease
   */
  public String ack(String queue, String id, String token, Object result) {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("token", token);
    body.put("result", result);
    return sendAck(queue, id, body);
  }

  private String sendAck(String queue, String id, Map<String, Object> body) {
    return Fields.of(transport.call("POST", jobPath(queue, id) + "/ack", body), "ack answer").string("result");
  }

  /**
   * {@code POST /v1/queues/{queue}/jobs/{id}/fail}: retried after {@code retryDelayMs} or the
   * backoff, or dead-lettered when out of attempts or with {@code dead}.
   *
   * @param queue the queue's name
   * @param id the job id
   * @param token the claim's fencing token
   * @param options error, retryDelayMs, dead
   * @return {@code retried} (with {@code retryAt}) or {@code dead}
   * @throws StaleTokenException when the token no longer holds the lease
   */
  public FailResult fail(String queue, String id, String token, FailOptions options) {
    return FailResult.from(transport.call("POST", jobPath(queue, id) + "/fail", options.toJson(token)));
  }

  /**
   * {@code POST /v1/queues/{queue}/jobs/{id}/extend}: the lease now ends {@code leaseMs} from now.
   *
   * @param queue the queue's name
   * @param id the job id
   * @param token the claim's fencing token
   * @param leaseMs the new lease, 200-86,400,000 ms; null: the service's default (30 s)
   * @return {@code extended} and the lease's new end
   * @throws StaleTokenException when the token no longer holds the lease
   */
  public ExtendResult extend(String queue, String id, String token, Long leaseMs) {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("token", token);
    if (leaseMs != null) body.put("leaseMs", leaseMs);
    return ExtendResult.from(transport.call("POST", jobPath(queue, id) + "/extend", body));
  }

  /**
   * Starts a consumer loop on {@code queue}: claims with a long poll, runs {@code handler}, acks on
   * return and fails on an exception, extending the lease while the handler runs.
   *
   * @param queue the queue's name
   * @param handler what to do with each job
   * @param options concurrency, lease, long poll, retry delay
   * @return the running loop; {@link ConsumerLoop#close()} or {@link ConsumerLoop#stop(Duration)} stops it
   */
  public ConsumerLoop consume(String queue, JobHandler handler, ConsumerOptions options) {
    return ConsumerLoop.start(this, queue, handler, options);
  }

  private static String queuePath(String queue) {
    return "/v1/queues/" + PathSegment.encode(queue);
  }

  private static String jobPath(String queue, String id) {
    return queuePath(queue) + "/jobs/" + PathSegment.encode(id);
  }

  /** Without the token. */
  @Override
  public String toString() {
    return "SandglassClient[" + transport + "]";
  }
}

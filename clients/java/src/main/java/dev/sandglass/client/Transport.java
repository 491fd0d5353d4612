package dev.sandglass.client;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/**
 * Sends one JSON request and turns the answer into a JSON tree or a {@link SandglassException}.
 * Holds the bearer token and never shows it: not in {@link #toString()}, not in any message.
 */
final class Transport {
  private final HttpClient http;
  private final String baseUrl;
  private final String authorization;
  private final Duration requestTimeout;

  Transport(HttpClient http, String baseUrl, String token, Duration requestTimeout) {
    this.http = http;
    // "http://host:8080/" and "http://host:8080" name the same service.
    this.baseUrl = baseUrl.endsWith("/") ? baseUrl.substring(0, baseUrl.length() - 1) : baseUrl;
    this.authorization = token == null || token.isEmpty() ? null : "Bearer " + token;
    this.requestTimeout = requestTimeout;
  }

  String baseUrl() {
    return baseUrl;
  }

  /** A request with the client's default timeout, waited for. */
  Object call(String method, String path, Object body) {
    return join(send(method, path, body, requestTimeout));
  }

  /**
   * Sends a request; the future completes with the answer's JSON tree, or exceptionally with a
   * {@link SandglassException}. Cancelling the future aborts the request (HttpClient closes the
   * connection), which is how a consumer ends its long poll at stop.
   */
  CompletableFuture<Object> send(String method, String path, Object body, Duration timeout) {
    HttpRequest.Builder request =
        HttpRequest.newBuilder(URI.create(baseUrl + path)).timeout(timeout).header("Accept", "application/json");
    if (authorization != null) request.header("Authorization", authorization);
    if (body == null) {
      request.method(method, HttpRequest.BodyPublishers.noBody());
    } else {
      request.header("Content-Type", "application/json");
      request.method(method, HttpRequest.BodyPublishers.ofString(Json.write(body), StandardCharsets.UTF_8));
    }
    return http.sendAsync(request.build(), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8))
        .handle(
            (response, failure) -> {
              if (failure != null) throw new CompletionException(transportFailure(method, path, failure));
              if (response.statusCode() >= 400) throw new CompletionException(ErrorMapping.toException(response.statusCode(), response.body()));
              try {
                return Json.parse(response.body());
              } catch (JsonException e) {
                throw new CompletionException(
                    new SandglassException(response.statusCode(), "UNEXPECTED_ANSWER", "the answer is not JSON: " + e.getMessage()));
              }
            });
  }

  /** Waits for a sent request; an interrupt aborts it and keeps the thread's interrupt flag. */
  static Object join(CompletableFuture<Object> future) {
    try {
      return future.get();
    } catch (InterruptedException e) {
      future.cancel(true);
      Thread.currentThread().interrupt();
      throw new SandglassException("interrupted while waiting for the answer", e);
    } catch (ExecutionException e) {
      throw unwrap(e.getCause());
    } catch (CancellationException e) {
      throw new SandglassException("the request was cancelled", e);
    }
  }

  static RuntimeException unwrap(Throwable failure) {
    Throwable cause = failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
    if (cause instanceof RuntimeException runtime) return runtime;
    return new SandglassException(String.valueOf(cause), cause);
  }

  private static SandglassException transportFailure(String method, String path, Throwable failure) {
    Throwable cause = failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
    if (cause instanceof SandglassException sandglass) return sandglass;
    String what = cause instanceof IOException ? cause.getClass().getSimpleName() : String.valueOf(cause);
    String detail = cause.getMessage() == null ? "" : ": " + cause.getMessage();
    return new SandglassException(method + " " + path + " got no answer (" + what + detail + ")", cause);
  }

  @Override
  public String toString() {
    return "Transport[baseUrl=" + baseUrl + ", token=" + (authorization == null ? "none" : "set") + "]";
  }
}

package dev.sandglass.client;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A stand-in for the service on a local port (the JDK's own HTTP server): records what the client
 * sends, byte for byte, and answers what a test says. For what the real service cannot show, such
 * as the raw path received or an answer slower than a request timeout.
 */
final class FakeService implements AutoCloseable {
  /** One request as received. */
  record Received(String method, String rawPath, String authorization, String contentType, String body) {}

  /** The answer to give. */
  record Answer(int status, String body, long delayMs) {}

  private final HttpServer server;
  final List<Received> received = new CopyOnWriteArrayList<>();
  private volatile Answer answer = new Answer(200, "{}", 0);

  FakeService() throws IOException {
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext(
        "/",
        exchange -> {
          String body = new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
          received.add(
              new Received(
                  exchange.getRequestMethod(),
                  exchange.getRequestURI().getRawPath(),
                  exchange.getRequestHeaders().getFirst("Authorization"),
                  exchange.getRequestHeaders().getFirst("Content-Type"),
                  body));
          Answer now = answer;
          try {
            Thread.sleep(now.delayMs());
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
          byte[] bytes = now.body().getBytes(StandardCharsets.UTF_8);
          exchange.getResponseHeaders().set("Content-Type", "application/json");
          exchange.sendResponseHeaders(now.status(), bytes.length == 0 ? -1 : bytes.length);
          try (OutputStream out = exchange.getResponseBody()) {
            out.write(bytes);
          }
        });
    server.setExecutor(java.util.concurrent.Executors.newCachedThreadPool());
    server.start();
  }

  void answer(int status, String body, long delayMs) {
    answer = new Answer(status, body, delayMs);
  }

  String url() {
    return "http://127.0.0.1:" + server.getAddress().getPort();
  }

  Received last() {
    return received.get(received.size() - 1);
  }

  @Override
  public void close() {
    server.stop(0);
  }
}

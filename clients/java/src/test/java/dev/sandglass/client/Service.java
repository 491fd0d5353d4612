package dev.sandglass.client;

import java.util.UUID;

/** The service under test: {@code SANDGLASS_URL} and {@code SANDGLASS_TOKEN}, and a fresh queue per test. */
final class Service {
  private Service() {}

  static String url() {
    return System.getenv("SANDGLASS_URL");
  }

  static String token() {
    return System.getenv("SANDGLASS_TOKEN");
  }

  static SandglassClient client() {
    return SandglassClient.builder(url()).token(token()).build();
  }

  /** A queue no other test uses, so tests cannot see each other's jobs. */
  static String queue(String what) {
    return "java-" + what + "-" + UUID.randomUUID().toString().substring(0, 8);
  }
}

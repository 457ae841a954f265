package org.gpuvectors.cuda;

/**
 * The graph part of {@link GpuConfig}. Each field is validated here; {@code withX} returns a copy with one field
 * changed (tests move a bound to reach a path; production takes {@link #defaults()}).
 */
public record GraphConfig() {

  private static final GraphConfig DEFAULTS = new GraphConfig();

  public static GraphConfig defaults() {
    return DEFAULTS;
  }
}

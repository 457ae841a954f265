package org.gpuvectors.cuda;

/**
 * The ivf part of {@link GpuConfig}. Each field is validated here; {@code withX} returns a copy with one field
 * changed (tests move a bound to reach a path; production takes {@link #defaults()}).
 */
public record IvfConfig() {

  private static final IvfConfig DEFAULTS = new IvfConfig();

  public static IvfConfig defaults() {
    return DEFAULTS;
  }
}

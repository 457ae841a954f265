package org.gpuvectors.cuda;

/**
 * The flat part of {@link GpuConfig}. Each field is validated here; {@code withX} returns a copy with one field
 * changed (tests move a bound to reach a path; production takes {@link #defaults()}).
 */
public record FlatConfig() {

  private static final FlatConfig DEFAULTS = new FlatConfig();

  public static FlatConfig defaults() {
    return DEFAULTS;
  }
}

package org.gpuvectors.cuda;

/**
 * The select part of {@link GpuConfig}. Each field is validated here; {@code withX} returns a copy with one field
 * changed (tests move a bound to reach a path; production takes {@link #defaults()}).
 */
public record SelectConfig() {

  private static final SelectConfig DEFAULTS = new SelectConfig();

  public static SelectConfig defaults() {
    return DEFAULTS;
  }
}

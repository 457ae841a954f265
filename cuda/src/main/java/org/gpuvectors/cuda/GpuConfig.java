package org.gpuvectors.cuda;

import java.nio.file.Path;
import java.util.Objects;

/**
 * How a {@code GpuDevice} searches: the tuning of the GPU runtime, immutable, fixed when the device is opened
 * ({@code GpuDevice#open(int, GpuConfig)}) and read by every index and pass on that device through {@code
 * GpuDevice#config()}. One part per concern, each a record that validates its own fields.
 *
 * <p>Why a value per device rather than system properties: a captured CUDA graph cannot see a flag change, a test
 * that flips a global leaks into every other test of the JVM, and an Elasticsearch node wants its choices in its own
 * settings. Tests open a device with the configuration they need; production opens one with the node's settings.
 * Only choices that remain real choices live here: where a newer path won its measurements the older one is gone.
 *
 * @param kernelFile a single fatbin file loaded instead of the kernels built into the jar, or null (the default): for
 *     kernel experiments on a GPU machine, variants compiled there with nvcc (cuda/bench/kselect-variants.sh); never
 *     for production use
 */
public record GpuConfig(PassConfig pass, FlatConfig flat, IvfConfig ivf, GraphConfig graph, SelectConfig select,
                        Path kernelFile) {

  private static final GpuConfig DEFAULTS =
      new GpuConfig(PassConfig.defaults(), FlatConfig.defaults(), IvfConfig.defaults(), GraphConfig.defaults(),
          SelectConfig.defaults(), null);

  public GpuConfig {
    Objects.requireNonNull(pass, "pass");
    Objects.requireNonNull(flat, "flat");
    Objects.requireNonNull(ivf, "ivf");
    Objects.requireNonNull(graph, "graph");
    Objects.requireNonNull(select, "select");
  }

  /** The production defaults. */
  public static GpuConfig defaults() {
    return DEFAULTS;
  }

  public static Builder builder() {
    return new Builder(DEFAULTS);
  }

  /** A builder that starts from this configuration. */
  public Builder toBuilder() {
    return new Builder(this);
  }

  /** Builds a {@link GpuConfig} part by part; parts not set keep the configuration it started from. */
  public static final class Builder {
    private PassConfig pass;
    private FlatConfig flat;
    private IvfConfig ivf;
    private GraphConfig graph;
    private SelectConfig select;
    private Path kernelFile;

    private Builder(GpuConfig from) {
      this.pass = from.pass;
      this.flat = from.flat;
      this.ivf = from.ivf;
      this.graph = from.graph;
      this.select = from.select;
      this.kernelFile = from.kernelFile;
    }

    public Builder pass(PassConfig value) {
      this.pass = value;
      return this;
    }

    public Builder flat(FlatConfig value) {
      this.flat = value;
      return this;
    }

    public Builder ivf(IvfConfig value) {
      this.ivf = value;
      return this;
    }

    public Builder graph(GraphConfig value) {
      this.graph = value;
      return this;
    }

    public Builder select(SelectConfig value) {
      this.select = value;
      return this;
    }

    public Builder kernelFile(Path value) {
      this.kernelFile = value;
      return this;
    }

    public GpuConfig build() {
      return new GpuConfig(pass, flat, ivf, graph, select, kernelFile);
    }
  }
}

package org.gpuvectors.codec.gpu;

import java.util.Locale;

/** Why a search ran on the CPU instead of the GPU; counted per reason in {@link GpuSearchStats}. */
public enum FallbackReason {
  /** No usable GPU in this process (no driver, no device, kernels not built...): see the service's reason. */
  NO_GPU("no usable GPU"),
  /** The GPU path is switched off (mode {@code false}, or turned off at run time). */
  GPU_OFF("GPU path switched off"),
  /** A sticky CUDA error poisoned the context earlier: the GPU path stays off until the node restarts. */
  GPU_FAILED("GPU failed earlier (sticky CUDA error); GPU path off"),
  /** The collector asks for more than the GPU k-selection serves. */
  K_TOO_LARGE("k larger than the GPU k-selection serves"),
  /**
   * An IVF search probes more lists than the GPU's coarse step selects ({@link GpuSearchService#MAX_GPU_PROBES}): a
   * mapping's large {@code nprobe}, or a selective filter that widens the probe to most lists of a large segment.
   */
  PROBES_TOO_MANY("more IVF lists to probe than the GPU's coarse step selects"),
  /** The collector may visit fewer vectors than the segment accepts: Lucene expects an early exit. */
  VISIT_LIMIT("visit limit below the accepted vectors"),
  /** The segment field alone is larger than the GPU memory budget. */
  SEGMENT_OVER_BUDGET("segment larger than the GPU memory budget"),
  /** The budget is taken by segment fields that searches are using right now. */
  BUDGET_IN_USE("GPU memory budget held by segments in use"),
  /**
   * The budget is held by segment fields searched at least as often: evicting them would trade one upload for
   * another on the next searches ({@link Admission}).
   */
  NOT_ADMITTED("GPU memory budget held by segments searched at least as often"),
  /**
   * The segment field is resident in another form than the search was prepared for ({@link ResidentForm}: an ivf_pq
   * field's codes with or without its raw vectors, a flat field whole or as its compact copy): two first searches of
   * the field chose differently while it uploaded.
   */
  OTHER_FORM_RESIDENT("segment field resident in another form than the search was prepared for"),
  /**
   * A flat float field resident as its compact copy returned candidates that could not be proven to hold the exact
   * top k (distances too close for the copy's rounding): the CPU searched the query exactly.
   */
  UNCERTIFIED_CANDIDATES("compact copy's candidates not proven to hold the exact top k"),
  /** The device ran out of memory (an upload or a search's temporaries). */
  DEVICE_OUT_OF_MEMORY("GPU out of memory"),
  /** A CUDA or cuBLAS call failed without poisoning the context. */
  CUDA_ERROR("CUDA error"),
  /** The service is closed (the node is shutting down). */
  CLOSED("GPU search service closed");

  private final String description;

  FallbackReason(String description) {
    this.description = description;
  }

  /** Whether the field did not fit the memory budget (too large, or the budget held by others). */
  public boolean outOfBudget() {
    return this == SEGMENT_OVER_BUDGET || this == BUDGET_IN_USE || this == NOT_ADMITTED;
  }

  /** A sentence for logs. */
  public String description() {
    return description;
  }

  /** The name in stats output ({@code no_gpu}, {@code k_too_large}, ...). */
  public String key() {
    return name().toLowerCase(Locale.ROOT);
  }
}

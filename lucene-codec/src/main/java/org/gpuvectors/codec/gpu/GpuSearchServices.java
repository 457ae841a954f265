package org.gpuvectors.codec.gpu;

/**
 * Where the codec's readers find their {@link GpuSearchService}.
 *
 * <p>Why a holder at all: Lucene creates our readers through SPI ({@code KnnVectorsFormat.forName}
 * from the per-field format attribute, under the segment's own codec name), so no constructor
 * argument can reach them. The host installs the service it owns: the Elasticsearch plugin makes one
 * per node in {@code createComponents}, installs it, and closes it with the node. Plain Lucene users
 * install their own ({@link GpuSearchService#create} with {@link GpuSearchService.Settings#builder()}), or get one
 * with the default settings made on first use ({@link GpuSearchService.Settings#defaults()}), closed by {@link
 * #closeDefault()}.
 */
public final class GpuSearchServices {

  private static GpuSearchService installed;
  private static GpuSearchService fallbackDefault;

  private GpuSearchServices() {}

  /** The service searches use now: the installed one, else the default (created on first use). */
  public static synchronized GpuSearchService current() {
    if (installed != null) {
      return installed;
    }
    if (fallbackDefault == null) {
      fallbackDefault = GpuSearchService.create(GpuSearchService.Settings.defaults());
    }
    return fallbackDefault;
  }

  /** Makes {@code service} the one searches use; its owner closes it (after {@link #uninstall}). */
  public static synchronized void install(GpuSearchService service) {
    installed = service;
  }

  /** Stops handing out {@code service} (if it is the installed one). */
  public static synchronized void uninstall(GpuSearchService service) {
    if (installed == service) {
      installed = null;
    }
  }

  /** Closes the default service, if one was made; a later {@link #current()} makes a new one. */
  public static synchronized void closeDefault() {
    if (fallbackDefault != null) {
      fallbackDefault.close();
      fallbackDefault = null;
    }
  }

  /** Frees a closing segment's fields in every service that may hold them, creating none. */
  public static void releaseSegment(Object segment) {
    GpuSearchService a;
    GpuSearchService b;
    synchronized (GpuSearchServices.class) {
      a = installed;
      b = fallbackDefault;
    }
    if (a != null) {
      a.releaseSegment(segment);
    }
    if (b != null && b != a) {
      b.releaseSegment(segment);
    }
  }
}

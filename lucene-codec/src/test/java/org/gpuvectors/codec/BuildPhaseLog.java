package org.gpuvectors.codec;

import java.util.ArrayList;
import java.util.List;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.logging.SimpleFormatter;

/**
 * For the benchmarks and tests: collects the writer's per-build lines (one per graph or IVF build at a
 * flush or merge, with its phases: {@code GpuVectorsWriter#logBuild}) while open, small builds included
 * (FINE), through java.util.logging, where {@link System.Logger} goes outside Elasticsearch.
 */
final class BuildPhaseLog implements AutoCloseable {

  private final Logger logger = Logger.getLogger(GpuVectorsWriter.class.getName());
  private final Level previousLevel = logger.getLevel();
  private final List<String> lines = new ArrayList<>();
  private final Handler handler =
      new Handler() {
        private final SimpleFormatter formatter = new SimpleFormatter();

        @Override
        public void publish(LogRecord record) {
          synchronized (lines) {
            lines.add(formatter.formatMessage(record));
          }
        }

        @Override
        public void flush() {}

        @Override
        public void close() {}
      };

  BuildPhaseLog() {
    logger.setLevel(Level.FINE);
    logger.addHandler(handler);
  }

  /** The lines so far. */
  List<String> lines() {
    synchronized (lines) {
      return List.copyOf(lines);
    }
  }

  @Override
  public void close() {
    logger.removeHandler(handler);
    logger.setLevel(previousLevel);
  }
}

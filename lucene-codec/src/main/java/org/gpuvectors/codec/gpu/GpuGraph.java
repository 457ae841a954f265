package org.gpuvectors.codec.gpu;

import org.apache.lucene.util.IOSupplier;

/**
 * A segment field's graph as the GPU service uploads it: the fixed out-degree (sizes the upload
 * before anything is read), the adjacency ({@code size * degree} ordinals, row-major, read when the
 * field is uploaded) and the entry points.
 */
public record GpuGraph(int degree, IOSupplier<int[]> adjacency, int[] seeds) implements GpuStructure {}

/**
 * The {@code graph} index type: its build ({@link org.gpuvectors.codec.graph.GraphBuilder}, and from the merged
 * segments' graphs {@link org.gpuvectors.codec.graph.GraphMerge}), its on-disk part and its CPU search ({@link
 * org.gpuvectors.codec.graph.BeamSearch}).
 *
 * <p>The on-disk part is a pair with matching names, as the IVF types' are: the graph as built writes it ({@link
 * org.gpuvectors.codec.graph.GraphLayout#writeTo}), the graph as read from the file reads it back, checks it and
 * searches it ({@link org.gpuvectors.codec.graph.GraphField#read}). The byte layout is documented in {@code
 * GpuVectorsFormat}.
 */
package org.gpuvectors.codec.graph;

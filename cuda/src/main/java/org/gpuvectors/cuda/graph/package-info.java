/**
 * The graph index on the device: {@link org.gpuvectors.cuda.graph.GpuGraphIndex}, its walk (alone, or as one table
 * launch of a pass's small walks) and the mirror of its kernel's parameter struct.
 */
package org.gpuvectors.cuda.graph;

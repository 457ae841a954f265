/**
 * The GPU steps of index builds at flush and merge: nearest-centroid assignment for k-means and product-quantizer
 * encoding ({@link org.gpuvectors.cuda.build.GpuAssignment}), rank-based pruning of k-NN graphs, reverse links and
 * farthest-first entry points, each with the mirror of its kernel's parameter struct. They use the device and the
 * flat index's brute force; nothing searched at query time uses them.
 */
package org.gpuvectors.cuda.build;

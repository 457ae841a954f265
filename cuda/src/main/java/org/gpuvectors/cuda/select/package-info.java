/**
 * k-selection on the device: the k best of rows of candidates ({@link org.gpuvectors.cuda.select.KSelect}), and
 * chunk lists then their merge ({@link org.gpuvectors.cuda.select.ChunkedSelection}). Knows no index or pass.
 */
package org.gpuvectors.cuda.select;

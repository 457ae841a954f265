package org.gpuvectors.codec.gpu;

import org.apache.lucene.util.IOSupplier;
import org.gpuvectors.cuda.IvfLists;

/**
 * The inverted lists of a segment field, as the GPU service needs them: their number (to size the
 * upload before reading anything) and the lists themselves (read when the field is uploaded).
 */
public record GpuIvf(int nlist, IOSupplier<IvfLists> lists) {}

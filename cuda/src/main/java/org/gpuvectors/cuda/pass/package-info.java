/**
 * One GPU search pass over the groups of many segments ({@link org.gpuvectors.cuda.pass.BatchSearch}): the inputs'
 * layout and upload, the lanes, the captured passes and the counters. It reaches the index types only through the
 * interfaces it declares: {@link org.gpuvectors.cuda.pass.ResidentIndex} and the table launches several small groups
 * share ({@link org.gpuvectors.cuda.pass.ScanTable}, {@link org.gpuvectors.cuda.pass.SharedSelection}, {@link
 * org.gpuvectors.cuda.pass.WalkTable}).
 */
package org.gpuvectors.cuda.pass;

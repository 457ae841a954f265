package org.gpuvectors.cuda.pass;


/**
 * What a device's captured search passes ({@link PassGraph}) did since it opened and what they hold now: passes
 * captured as graphs, passes that launched a kept graph, shapes refused (their capture failed, or the graph was too
 * large to keep), graphs kept, and the device bytes those hold ({@link PassGraphs#stats}).
 */
public record PassGraphStats(long captures, long launches, long refusals, int graphs, long bytes) {}

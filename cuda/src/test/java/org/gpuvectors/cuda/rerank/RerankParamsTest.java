package org.gpuvectors.cuda.rerank;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;
import org.gpuvectors.cuda.IvfConfig;

/** How {@link RerankParams#exactParts} spreads a batch's re-rank over blocks (no GPU needed). */
class RerankParamsTest {

  private static int parts(int queries, int candidates, int sms) {
    RerankParams p = new RerankParams();
    p.numQueries = queries;
    p.candidates = candidates;
    return p.exactParts(sms);
  }

  @Test
  void fewQueriesSpreadTheirCandidatesOverBlocks() {
    assertEquals(25, parts(1, 400, 132), "one query: 400 candidates in blocks of at least 16");
    assertEquals(66, parts(8, 2048, 132), "eight queries: about four blocks per multiprocessor in all");
    assertEquals(1, parts(1, 10, 132), "fewer candidates than a block takes: one block");
  }

  @Test
  void theConfigurationKnowsTheKernelsSelectLimit() {
    assertEquals(RerankParams.SELECT_MAX_CANDIDATES, IvfConfig.MAX_FUSED_SELECT_CANDIDATES);
  }

  @Test
  void largeBatchesKeepABlockPerQuery() {
    assertEquals(1, parts(10_000, 400, 132));
    assertEquals(1, parts(528, 400, 132));
    assertEquals(2, parts(264, 400, 132));
  }
}

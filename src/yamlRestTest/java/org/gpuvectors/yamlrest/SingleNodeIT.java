package org.gpuvectors.yamlrest;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * Base of the Java integration tests: one Elasticsearch node (with the plugin, unless
 * {@code -Dtests.plugin.zip=none}) started before the class and stopped after it, and a client for it.
 */
abstract class SingleNodeIT {

    static EsNode node;
    static RestClient client;

    @BeforeAll
    static void startNode() throws Exception {
        YamlRestIT.assumeRunByFailsafe();
        node = EsNode.fromSystemProperties();
        node.start();
        client = new RestClient(node.baseUri());
    }

    @AfterAll
    static void stopNode() {
        if (node != null) {
            node.close();
            node = null;
        }
    }

    /** Whether the node runs without our plugin (a check of the harness alone). */
    static boolean vanillaNode() {
        return "none".equals(EsNode.prop("tests.plugin.zip", ""));
    }
}

package org.gpuvectors.plugin;

import org.elasticsearch.cluster.metadata.ProjectMetadata;
import org.elasticsearch.common.compress.CompressedXContent;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.common.xcontent.XContentHelper;
import org.elasticsearch.index.IndexMode;
import org.elasticsearch.index.IndexSettingProvider;
import org.elasticsearch.index.IndexVersion;
import org.elasticsearch.xcontent.XContentType;

import java.time.Instant;
import java.util.Collection;
import java.util.List;
import java.util.Map;

/**
 * Turns {@link GpuVectorsSettings#INDEX_ENABLED} on for indices created with a {@code gpu_vector} field in
 * their mappings (the create-index request or matching templates), so users never set it by hand.
 */
final class GpuVectorsIndexSettingProvider implements IndexSettingProvider {

    @Override
    public void provideAdditionalSettings(
        String indexName,
        String dataStreamName,
        IndexMode templateIndexMode,
        ProjectMetadata projectMetadata,
        Instant resolvedAt,
        Settings indexTemplateAndCreateRequestSettings,
        List<CompressedXContent> combinedTemplateMappings,
        IndexVersion indexVersion,
        Settings.Builder additionalSettings
    ) {
        if (indexTemplateAndCreateRequestSettings.hasValue(GpuVectorsSettings.INDEX_ENABLED.getKey())) {
            return; // explicit user choice; the mapper refuses gpu_vector fields if it is false
        }
        for (CompressedXContent mapping : combinedTemplateMappings) {
            Map<String, Object> map = XContentHelper.convertToMap(mapping.uncompressed(), false, XContentType.JSON).v2();
            if (declaresGpuVector(map)) {
                additionalSettings.put(GpuVectorsSettings.INDEX_ENABLED.getKey(), true);
                return;
            }
        }
    }

    /** Whether a mapping (any nesting: types, properties, fields, dynamic templates) declares a gpu_vector field. */
    static boolean declaresGpuVector(Object node) {
        if (node instanceof Map<?, ?> map) {
            if (GpuVectorFieldMapper.CONTENT_TYPE.equals(map.get("type"))) {
                return true;
            }
            for (Object child : map.values()) {
                if (declaresGpuVector(child)) {
                    return true;
                }
            }
        } else if (node instanceof Collection<?> list) {
            for (Object child : list) {
                if (declaresGpuVector(child)) {
                    return true;
                }
            }
        }
        return false;
    }
}

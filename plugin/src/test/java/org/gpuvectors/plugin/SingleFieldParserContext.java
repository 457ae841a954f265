package org.gpuvectors.plugin;

import org.apache.lucene.util.BytesRef;
import org.elasticsearch.cluster.metadata.IndexMetadata;
import org.elasticsearch.common.bytes.BytesArray;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.index.IndexSettings;
import org.elasticsearch.index.IndexVersion;
import org.elasticsearch.index.mapper.ContentPath;
import org.elasticsearch.index.mapper.DocumentParserContext;
import org.elasticsearch.index.mapper.FieldMapper;
import org.elasticsearch.index.mapper.LuceneDocument;
import org.elasticsearch.index.IndexMode;
import org.elasticsearch.index.mapper.Mapping;
import org.elasticsearch.index.mapper.MappingLookup;
import org.elasticsearch.index.mapper.MetadataFieldMapper;
import org.elasticsearch.index.mapper.ProvidedIdFieldMapper;
import org.elasticsearch.index.mapper.MappingParserContext;
import org.elasticsearch.index.mapper.ObjectMapper;
import org.elasticsearch.index.mapper.SourceToParse;
import org.elasticsearch.xcontent.XContentParser;
import org.elasticsearch.xcontent.XContentParserConfiguration;
import org.elasticsearch.xcontent.XContentType;
import org.elasticsearch.xcontent.json.JsonXContent;

import java.io.IOException;
import java.util.List;
import java.util.Map;

/**
 * A document parser context holding one field's value, so that a field mapper's {@code parse} runs as in a node (the
 * Elasticsearch test framework, whose {@code TestDocumentParserContext} does the same, is not a dependency here).
 */
final class SingleFieldParserContext extends DocumentParserContext {

    private final XContentParser parser;
    private final LuceneDocument doc = new LuceneDocument();
    private final ContentPath path = new ContentPath();

    /** An empty mapping but for the {@code _id} mapper, which names the document in error messages. */
    private static final MappingLookup LOOKUP = MappingLookup.fromMappers(
        new Mapping(Mapping.EMPTY.getRoot(), new MetadataFieldMapper[] { ProvidedIdFieldMapper.DOCUMENT_ID }, Map.of()),
        List.of(),
        List.of(),
        IndexMode.STANDARD
    );

    private SingleFieldParserContext(MappingParserContext mappingParserContext, SourceToParse source, XContentParser parser) {
        super(LOOKUP, mappingParserContext, source, LOOKUP.getMapping().getRoot(), ObjectMapper.Dynamic.TRUE);
        this.parser = parser;
    }

    /** Parses {@code {"<field>": <valueJson>}} with {@code mapper} and returns the context holding the Lucene document. */
    static SingleFieldParserContext parse(FieldMapper mapper, String valueJson) throws IOException {
        String json = "{\"" + mapper.leafName() + "\":" + valueJson + "}";
        XContentParser parser = JsonXContent.jsonXContent.createParser(XContentParserConfiguration.EMPTY, json);
        parser.nextToken(); // START_OBJECT
        parser.nextToken(); // FIELD_NAME
        parser.nextToken(); // the value
        SingleFieldParserContext context = new SingleFieldParserContext(
            mappingParserContext(),
            new SourceToParse("1", new BytesArray(json), XContentType.JSON),
            parser
        );
        mapper.parse(context);
        return context;
    }

    /** A mapping parser context of a new index (the current version), for {@code Builder.parse}. */
    static MappingParserContext mappingParserContext() {
        IndexVersion version = IndexVersion.current();
        Settings settings = Settings.builder()
            .put(IndexMetadata.SETTING_VERSION_CREATED, version.id())
            .put(IndexMetadata.SETTING_NUMBER_OF_SHARDS, 1)
            .put(IndexMetadata.SETTING_NUMBER_OF_REPLICAS, 0)
            .build();
        IndexSettings indexSettings = new IndexSettings(IndexMetadata.builder("test").settings(settings).build(), Settings.EMPTY);
        return new MappingParserContext(null, null, null, version, null, null, null, null, indexSettings, null, List.of());
    }

    @Override
    public Iterable<LuceneDocument> nonRootDocuments() {
        return List.of();
    }

    @Override
    public List<LuceneDocument> luceneDocumentsInShardIndexOrder() {
        return List.of(doc);
    }

    @Override
    public ContentPath path() {
        return path;
    }

    @Override
    public XContentParser parser() {
        return parser;
    }

    @Override
    public LuceneDocument rootDoc() {
        return doc;
    }

    @Override
    public LuceneDocument doc() {
        return doc;
    }

    @Override
    protected void addDoc(LuceneDocument doc) {
        throw new UnsupportedOperationException("one document");
    }

    @Override
    public BytesRef getTsid() {
        return null;
    }
}

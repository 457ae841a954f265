package org.gpuvectors.architecture;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.domain.JavaField;
import com.tngtech.archunit.core.domain.JavaModifier;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.lang.ArchCondition;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.lang.ConditionEvents;
import com.tngtech.archunit.lang.SimpleConditionEvent;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.Set;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.fields;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.Architectures.layeredArchitecture;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

/**
 * The house rules of the main code of all three modules (the plugin's test classpath holds them all), checked on
 * their compiled classes: dependencies point one way (plugin -> codec -> cuda), no package cycles, configuration
 * reaches the code as typed values (Elasticsearch settings, {@code GpuSearchService.Settings}, {@code GpuConfig})
 * rather than JVM system properties, and no mutable static state beyond the documented holders of process-wide
 * resources.
 */
class ArchitectureTest {

    private static JavaClasses main;

    @BeforeAll
    static void importMainClasses() {
        // the codec and cuda modules arrive as directories (mvn test) or as jars (mvn verify): both count
        main = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .importPackages("org.gpuvectors");
        // the plugin's, the codec's and the cuda module's classes, or the rules would pass on nothing
        for (String pkg : Set.of("org.gpuvectors.plugin", "org.gpuvectors.codec", "org.gpuvectors.cuda")) {
            if (main.stream().noneMatch(c -> c.getPackageName().equals(pkg))) {
                throw new AssertionError("no main classes of " + pkg + " were imported");
            }
        }
    }

    @Test
    void theGpuModuleKnowsNeitherTheCodecNorThePlugin() {
        noClasses().that().resideInAPackage("org.gpuvectors.cuda..")
            .should().dependOnClassesThat().resideInAnyPackage("org.gpuvectors.codec..", "org.gpuvectors.plugin..")
            .because("the GPU module executes; the codec decides (plugin -> codec -> cuda)")
            .check(main);
    }

    @Test
    void theCodecDoesNotKnowThePlugin() {
        noClasses().that().resideInAPackage("org.gpuvectors.codec..")
            .should().dependOnClassesThat().resideInAPackage("org.gpuvectors.plugin..")
            .because("the codec must be usable from plain Lucene, without Elasticsearch")
            .check(main);
    }

    @Test
    void theCodecDoesNotKnowElasticsearch() {
        noClasses().that().resideInAnyPackage("org.gpuvectors.codec..", "org.gpuvectors.cuda..")
            .should().dependOnClassesThat().resideInAPackage("org.elasticsearch..")
            .check(main);
    }

    @Test
    void theRuntimeIsAtTheBottomOfTheGpuModule() {
        noClasses().that().resideInAPackage("org.gpuvectors.cuda.runtime..")
            .should().dependOnClassesThat().resideOutsideOfPackages("org.gpuvectors.cuda.runtime..", "java..", "jcuda..")
            .because("the driver, memory, streams, kernel images and cuBLAS serve every part of the GPU module and know"
                + " none of them")
            .check(main);
    }

    /**
     * The GPU module's packages in their order, each knowing only those below it: the API and configuration the codec
     * passes in (the root package), the device, k-selection, the re-rank, the search pass, then the index types, flat
     * under IVF (whose coarse step is a flat index) under the graph (whose entry points an IVF probe finds). The pass
     * reaches the index types only through the interfaces it declares (ResidentIndex, ScanTable, SharedSelection,
     * WalkTable); the GPU build steps stand beside the indexes and use the flat one.
     */
    @Test
    void theGpuModulesPackagesAreLayered() {
        layeredArchitecture().consideringOnlyDependenciesInLayers()
            .layer("Runtime").definedBy("org.gpuvectors.cuda.runtime..")
            .layer("Api").definedBy("org.gpuvectors.cuda")
            .layer("Device").definedBy("org.gpuvectors.cuda.device..")
            .layer("Select").definedBy("org.gpuvectors.cuda.select..")
            .layer("Rerank").definedBy("org.gpuvectors.cuda.rerank..")
            .layer("Pass").definedBy("org.gpuvectors.cuda.pass..")
            .layer("Flat").definedBy("org.gpuvectors.cuda.flat..")
            .layer("Ivf").definedBy("org.gpuvectors.cuda.ivf..")
            .layer("Graph").definedBy("org.gpuvectors.cuda.graph..")
            .layer("Build").definedBy("org.gpuvectors.cuda.build..")
            .whereLayer("Runtime").mayNotAccessAnyLayer()
            .whereLayer("Api").mayOnlyAccessLayers("Runtime")
            .whereLayer("Device").mayOnlyAccessLayers("Runtime", "Api")
            .whereLayer("Select").mayOnlyAccessLayers("Runtime", "Api", "Device")
            .whereLayer("Rerank").mayOnlyAccessLayers("Runtime", "Api", "Device", "Select")
            .whereLayer("Pass").mayOnlyAccessLayers("Runtime", "Api", "Device", "Select", "Rerank")
            .whereLayer("Flat").mayOnlyAccessLayers("Runtime", "Api", "Device", "Select", "Rerank", "Pass")
            .whereLayer("Ivf").mayOnlyAccessLayers("Runtime", "Api", "Device", "Select", "Rerank", "Pass", "Flat")
            .whereLayer("Graph").mayOnlyAccessLayers("Runtime", "Api", "Device", "Select", "Rerank", "Pass", "Flat",
                "Ivf")
            .whereLayer("Build").mayOnlyAccessLayers("Runtime", "Api", "Device", "Select", "Rerank", "Pass", "Flat")
            .because("the device owns resources, the pass runs what the index types enqueue, and each package can be"
                + " read knowing only those below it")
            .check(main);
    }

    @Test
    void theCodecsCpuPackagesDoNotReachIntoTheGpuRuntime() {
        noClasses().that().resideInAnyPackage(
                "org.gpuvectors.codec", "org.gpuvectors.codec.graph", "org.gpuvectors.codec.ivf", "org.gpuvectors.codec.index")
            .should().dependOnClassesThat().resideInAPackage("org.gpuvectors.cuda.runtime..")
            .because("only the GPU glue (codec.gpu) talks to the device; the CPU index code runs without one")
            .check(main);
    }

    @Test
    void theCodecsIndexTypesKnowNothingOfTheGpuModule() {
        noClasses().that().resideInAnyPackage(
                "org.gpuvectors.codec.graph", "org.gpuvectors.codec.ivf", "org.gpuvectors.codec.index")
            .should().dependOnClassesThat().resideInAPackage("org.gpuvectors.cuda..")
            .because("search policy (metric, filter rule, probes, re-rank depth) is the codec's; codec.gpu maps it "
                + "to what the GPU module executes")
            .check(main);
    }

    @Test
    void noPackageCycles() {
        slices().matching("org.gpuvectors.(**)").should().beFreeOfCycles().check(main);
    }

    @Test
    void noJvmSwitches() {
        ArchRule rule = noClasses()
            .should().callMethod(System.class, "getProperty", String.class)
            .orShould().callMethod(System.class, "getProperty", String.class, String.class)
            .orShould().callMethod(Integer.class, "getInteger", String.class)
            .orShould().callMethod(Integer.class, "getInteger", String.class, int.class)
            .orShould().callMethod(Integer.class, "getInteger", String.class, Integer.class)
            .orShould().callMethod(Long.class, "getLong", String.class)
            .orShould().callMethod(Long.class, "getLong", String.class, long.class)
            .orShould().callMethod(Boolean.class, "getBoolean", String.class)
            .because("configuration is typed: Elasticsearch settings for the plugin, GpuSearchService.Settings and"
                + " GpuConfig (builders) for plain Lucene; a JVM switch is global, invisible to a captured CUDA graph"
                + " and leaks between tests");
        rule.check(main);
    }

    /**
     * Static fields that may change after class initialisation: only the holders of process-wide resources whose
     * owners are documented (the service the host installs, the loaded cuBLAS library, the probed GPUs, the driver's
     * one cuInit per process).
     */
    private static final Set<String> PROCESS_WIDE_HOLDERS = Set.of(
        "org.gpuvectors.cuda.runtime.Driver.initialized",
        "org.gpuvectors.codec.gpu.GpuSearchServices.installed",
        "org.gpuvectors.codec.gpu.GpuSearchServices.fallbackDefault",
        "org.gpuvectors.cuda.runtime.Cublas.instance",
        "org.gpuvectors.cuda.GpuAvailability.instance"
    );

    @Test
    void noMutableStatics() {
        ArchCondition<JavaField> beFinalOrAHolder = new ArchCondition<>("be final or a documented process-wide holder") {
            @Override
            public void check(JavaField field, ConditionEvents events) {
                String name = field.getOwner().getName() + "." + field.getName();
                boolean ok = field.getModifiers().contains(JavaModifier.FINAL) || PROCESS_WIDE_HOLDERS.contains(name);
                events.add(new SimpleConditionEvent(field, ok, name + " is a mutable static"));
            }
        };
        fields().that().areStatic().and().areDeclaredInClassesThat().resideInAPackage("org.gpuvectors..")
            .and().doNotHaveModifier(JavaModifier.SYNTHETIC)
            .should(beFinalOrAHolder)
            .because("tuning is per instance (GpuConfig) and counters belong to the device or index that counts")
            .check(main);
    }
}

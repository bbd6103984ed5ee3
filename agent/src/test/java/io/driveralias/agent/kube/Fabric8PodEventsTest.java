package io.driveralias.agent.kube;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.core.ContainerRef;
import io.driveralias.agent.core.DriverLoad;
import io.driveralias.agent.testing.DriverLoads;
import io.driveralias.agent.repair.RepairReport;
import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesCrudDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.mockwebserver.Context;
import io.fabric8.mockwebserver.MockWebServer;
import io.fabric8.mockwebserver.http.RecordedRequest;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Events as the API server stores them: fabric8's mock server in CRUD mode. */
@Timeout(60)
class Fabric8PodEventsTest {

    private static final Duration WAIT = Duration.ofSeconds(20);
    private static final Instant START = Instant.parse("2024-05-01T10:00:00.250Z");
    private static final String NODE = "gpu-node-7";

    private KubernetesMockServer server;
    private KubernetesClient reader;
    private final FakeRepairMetrics metrics = new FakeRepairMetrics();
    private final MutableClock clock = new MutableClock(START);
    private Fabric8PodEvents events;

    @BeforeEach
    void startServer() {
        server = new KubernetesMockServer(new Context(), new MockWebServer(), new HashMap<>(),
                new KubernetesCrudDispatcher(), false);
        server.init();
        reader = KubernetesClients.build(config(), Duration.ofSeconds(5));
    }

    @AfterEach
    void stopServer() {
        if (events != null) {
            events.close();
        }
        reader.close();
        server.destroy();
    }

    private Config config() {
        return new ConfigBuilder(Config.empty()).withAutoConfigure(false).withMasterUrl(server.url("/"))
                .withNamespace("default").build();
    }

    private void start(Fabric8PodEvents.Settings settings) {
        events = Fabric8PodEvents.start(KubernetesClients.build(config(), Duration.ofSeconds(5)), NODE, metrics,
                clock, settings);
    }

    private List<Event> stored(String namespace) {
        List<Event> list = new ArrayList<>(reader.v1().events().inNamespace(namespace).list().getItems());
        list.sort(Comparator.comparing(e -> e.getMetadata().getName()));
        return list;
    }

    private List<String> requestLines() throws InterruptedException {
        List<String> lines = new ArrayList<>();
        RecordedRequest r;
        while ((r = server.takeRequest(10, TimeUnit.MILLISECONDS)) != null) {
            lines.add(r.getMethod() + " " + r.getPath());
        }
        return lines;
    }

    @Test
    void aRepairBecomesANormalEventOnThePodAndItsContainer() throws Exception {
        start(Fabric8PodEvents.Settings.DEFAULTS);
        ContainerRef container = Reports.container("ml", "trainer-0", "pytorch");

        events.repaired(container, Reports.repaired());
        metrics.awaitEventsTotal(1, WAIT);

        assertThat(metrics.events("sent")).isEqualTo(1);
        List<Event> stored = stored("ml");
        assertThat(stored).hasSize(1);
        Event e = stored.getFirst();
        assertThat(e.getMetadata().getNamespace()).isEqualTo("ml");
        assertThat(e.getMetadata().getName()).startsWith("trainer-0.");
        assertThat(e.getInvolvedObject().getKind()).isEqualTo("Pod");
        assertThat(e.getInvolvedObject().getApiVersion()).isEqualTo("v1");
        assertThat(e.getInvolvedObject().getNamespace()).isEqualTo("ml");
        assertThat(e.getInvolvedObject().getName()).isEqualTo("trainer-0");
        assertThat(e.getInvolvedObject().getUid()).isEqualTo("uid-ml-trainer-0");
        assertThat(e.getInvolvedObject().getFieldPath()).isEqualTo("spec.containers{pytorch}");
        assertThat(e.getType()).isEqualTo("Normal");
        assertThat(e.getReason()).isEqualTo("DriverAliasesRepaired");
        assertThat(e.getMessage()).contains("libcuda.so.1 -> libcuda.so.535.104.05",
                "libnvidia-ml.so.1 -> libnvidia-ml.so.535.104.05");
        assertThat(e.getSource().getComponent()).isEqualTo("driver-alias-agent");
        assertThat(e.getSource().getHost()).isEqualTo(NODE);
        assertThat(e.getReportingComponent()).isEqualTo("driver-alias-agent");
        assertThat(e.getReportingInstance()).isEqualTo(NODE);
        assertThat(e.getCount()).isEqualTo(1);
        assertThat(e.getFirstTimestamp()).isEqualTo("2024-05-01T10:00:00Z");
        assertThat(e.getLastTimestamp()).isEqualTo("2024-05-01T10:00:00Z");
    }

    @Test
    void aFailureBecomesAWarningThatSaysWhatToDo() throws Exception {
        start(Fabric8PodEvents.Settings.DEFAULTS);

        events.failed(Reports.container("ml", "notebook", "jupyter"), Reports.readOnly());
        metrics.awaitEventsTotal(1, WAIT);

        Event e = stored("ml").getFirst();
        assertThat(e.getType()).isEqualTo("Warning");
        assertThat(e.getReason()).isEqualTo("DriverAliasRepairFailed");
        assertThat(e.getMessage()).contains("read_only: the container's root filesystem is read-only: mount the"
                + " driver with its aliases or make the library directory writable");
        assertThat(e.getInvolvedObject().getFieldPath()).isEqualTo("spec.containers{jupyter}");
    }

    /** What an ML engineer reads in kubectl describe pod: which file wins over the node's driver, and what to change. */
    @Test
    void anImagesOwnDriverCopyBecomesAWarningThatNamesItAndTheNodesDriver() throws Exception {
        start(Fabric8PodEvents.Settings.DEFAULTS);

        events.driverLoad(Reports.container("ml", "train-0", "trainer"),
                DriverLoads.imageCopy());
        metrics.awaitEventsTotal(1, WAIT);

        Event e = stored("ml").getFirst();
        assertThat(e.getType()).isEqualTo("Warning");
        assertThat(e.getReason()).isEqualTo("DriverAliasDriverMismatch");
        assertThat(e.getMessage()).startsWith("The image's own libcuda.so.1 (470.256.02) is loaded instead of the node's driver"
                + " 535.104.05 (/usr/local/lib/libcuda.so.470.256.02, through its /etc/ld.so.cache).")
                .contains("remove the driver's libraries from the image");
        assertThat(e.getInvolvedObject().getFieldPath()).isEqualTo("spec.containers{trainer}");
    }

    @Test
    void forwardCompatibilityInUseIsNormalAndTheNodesOwnDriverIsNoNews() throws Exception {
        start(Fabric8PodEvents.Settings.DEFAULTS);

        events.driverLoad(Reports.container("ml", "plain", "c"),
                DriverLoads.libcuda(DriverLoad.Source.NODE, "/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05", "535.104.05", Optional.empty()));
        events.driverLoad(Reports.container("ml", "compat", "c"), DriverLoads.libcuda(DriverLoad.Source.COMPAT,
                "/usr/local/cuda-12.9/compat/libcuda.so.575.57.08", "575.57.08",
                Optional.of(new DriverLoad.Compat("/usr/local/cuda-12.9/compat", Optional.of("12.9"), List.of(535, 575), true))));
        metrics.awaitEventsTotal(1, WAIT);

        List<Event> stored = stored("ml");
        assertThat(stored).extracting(Event::getReason).containsExactly("DriverAliasForwardCompatibility");
        assertThat(stored.getFirst().getType()).isEqualTo("Normal");
        assertThat(stored.getFirst().getInvolvedObject().getName()).isEqualTo("compat");
        assertThat(stored.getFirst().getMessage()).startsWith("CUDA forward compatibility: the image's libcuda.so.1 (575.57.08,"
                + " CUDA 12.9, enabled by NVIDIA's hook) is loaded over the node's driver 535.104.05");
    }

    @Test
    void repeatsPatchTheCountOfTheSameObject() throws Exception {
        start(Fabric8PodEvents.Settings.DEFAULTS);
        ContainerRef container = Reports.container("ml", "trainer-0", "pytorch");

        events.failed(container, Reports.readOnly());
        metrics.awaitEventsTotal(1, WAIT);
        String name = stored("ml").getFirst().getMetadata().getName();

        clock.advance(Duration.ofSeconds(30));
        events.failed(container, Reports.readOnly());
        metrics.awaitEventsTotal(2, WAIT);
        assertThat(stored("ml")).singleElement().satisfies(e -> {
            assertThat(e.getMetadata().getName()).isEqualTo(name);
            assertThat(e.getCount()).isEqualTo(2);
            assertThat(e.getFirstTimestamp()).isEqualTo("2024-05-01T10:00:00Z");
            assertThat(e.getLastTimestamp()).isEqualTo("2024-05-01T10:00:30Z");
        });

        clock.advance(Duration.ofSeconds(30));
        events.failed(container, Reports.readOnly());
        metrics.awaitEventsTotal(3, WAIT);
        assertThat(stored("ml")).singleElement().satisfies(e -> {
            assertThat(e.getMetadata().getName()).isEqualTo(name);
            assertThat(e.getCount()).isEqualTo(3);
            assertThat(e.getLastTimestamp()).isEqualTo("2024-05-01T10:01:00Z");
        });
        assertThat(metrics.events("sent")).isEqualTo(3);
        // what the ClusterRole grants, and nothing else: one create, then patches by name
        // (the only GETs are this test's own lists of the collection)
        assertThat(requestLines().stream().filter(l -> !l.equals("GET /api/v1/namespaces/ml/events"))).containsExactly(
                "POST /api/v1/namespaces/ml/events",
                "PATCH /api/v1/namespaces/ml/events/" + name,
                "PATCH /api/v1/namespaces/ml/events/" + name);
    }

    @Test
    void differentMessagesContainersOrPodsAreDifferentObjects() throws Exception {
        start(Fabric8PodEvents.Settings.DEFAULTS);

        events.repaired(Reports.container("ml", "trainer-0", "pytorch"), Reports.repaired());
        events.repaired(Reports.container("ml", "trainer-0", "pytorch"), Reports.repairedMany(3));
        events.repaired(Reports.container("ml", "trainer-0", "sidecar"), Reports.repaired());
        events.repaired(Reports.container("ml", "trainer-1", "pytorch"), Reports.repaired());
        events.failed(Reports.container("ml", "trainer-0", "pytorch"), Reports.readOnly());
        metrics.awaitEventsTotal(5, WAIT);

        assertThat(metrics.events("sent")).isEqualTo(5);
        assertThat(stored("ml")).hasSize(5).allSatisfy(e -> assertThat(e.getCount()).isEqualTo(1));
    }

    @Test
    void aRepeatAfterTheWindowStartsANewObject() throws Exception {
        start(Fabric8PodEvents.Settings.DEFAULTS);
        ContainerRef container = Reports.container("ml", "trainer-0", "pytorch");

        events.repaired(container, Reports.repaired());
        metrics.awaitEventsTotal(1, WAIT);
        clock.advance(Fabric8PodEvents.Settings.DEFAULTS.aggregationWindow().plusSeconds(1));
        events.repaired(container, Reports.repaired());
        metrics.awaitEventsTotal(2, WAIT);

        assertThat(stored("ml")).hasSize(2).allSatisfy(e -> assertThat(e.getCount()).isEqualTo(1));
    }

    @Test
    void aRepeatOfAnEventTheServerNoLongerHasCreatesItAgain() throws Exception {
        start(Fabric8PodEvents.Settings.DEFAULTS);
        ContainerRef container = Reports.container("ml", "trainer-0", "pytorch");
        events.failed(container, Reports.readOnly());
        metrics.awaitEventsTotal(1, WAIT);
        // the API server's event TTL (1 h by default) removed it
        reader.v1().events().inNamespace("ml").delete();

        clock.advance(Duration.ofMinutes(1));
        events.failed(container, Reports.readOnly());
        metrics.awaitEventsTotal(2, WAIT);

        assertThat(metrics.events("sent")).isEqualTo(2);
        assertThat(stored("ml")).singleElement().satisfies(e -> {
            assertThat(e.getCount()).isEqualTo(1);
            assertThat(e.getFirstTimestamp()).isEqualTo("2024-05-01T10:01:00Z");
        });
    }

    @Test
    void eachPodGetsABurstThenOneEventPerRefillInterval() throws Exception {
        start(Fabric8PodEvents.Settings.DEFAULTS.withRateLimit(5, Duration.ofMinutes(5)));
        ContainerRef noisy = Reports.container("ml", "crashloop", "pytorch");
        ContainerRef quiet = Reports.container("ml", "steady", "pytorch");

        for (int i = 0; i < 8; i++) {
            events.failed(noisy, Reports.readOnly());
        }
        events.failed(quiet, Reports.readOnly());
        metrics.awaitEventsTotal(9, WAIT);

        assertThat(metrics.events("sent")).isEqualTo(6);
        assertThat(metrics.events("dropped")).isEqualTo(3);
        assertThat(count("crashloop")).isEqualTo(5);
        assertThat(count("steady")).isEqualTo(1);

        clock.advance(Duration.ofMinutes(4));
        events.failed(noisy, Reports.readOnly());
        metrics.awaitEventsTotal(10, WAIT);
        assertThat(metrics.events("dropped")).isEqualTo(4);

        clock.advance(Duration.ofMinutes(1));
        events.failed(noisy, Reports.readOnly());
        events.failed(noisy, Reports.readOnly());
        metrics.awaitEventsTotal(12, WAIT);
        assertThat(metrics.events("sent")).isEqualTo(7);
        assertThat(metrics.events("dropped")).isEqualTo(5);
        assertThat(count("crashloop")).isEqualTo(6);
    }

    private int count(String pod) {
        return stored("ml").stream().filter(e -> e.getInvolvedObject().getName().equals(pod))
                .mapToInt(Event::getCount).sum();
    }

    @Test
    void aContainerWithoutAPodOrARepairWithoutLinksSendsNothing() throws Exception {
        start(Fabric8PodEvents.Settings.DEFAULTS);

        events.repaired(Reports.withoutPod("plain-docker"), Reports.repaired());
        events.failed(Reports.withoutPod("plain-docker"), Reports.readOnly());
        // a "repair" that changed nothing is not worth an Event either
        events.repaired(Reports.container("ml", "healthy", "main"),
                new RepairReport(Optional.of(Reports.V), List.of(), List.of()));
        events.repaired(Reports.container("ml", "trainer-0", "pytorch"), Reports.repaired());
        metrics.awaitEventsTotal(1, WAIT);
        events.close();

        assertThat(metrics.eventsTotal()).isEqualTo(1);
        assertThat(metrics.events("sent")).isEqualTo(1);
        assertThat(requestLines()).containsExactly("POST /api/v1/namespaces/ml/events");
    }

    @Test
    void closeSendsWhatIsQueuedThenRefusesMore() throws Exception {
        start(Fabric8PodEvents.Settings.DEFAULTS);
        for (int i = 0; i < 3; i++) {
            events.repaired(Reports.container("ml", "pod-" + i, "main"), Reports.repaired());
        }

        events.close();
        events.repaired(Reports.container("ml", "late", "main"), Reports.repaired());

        assertThat(metrics.events("sent")).isEqualTo(3);
        assertThat(metrics.events("dropped")).isEqualTo(1);
        assertThat(stored("ml")).hasSize(3);
    }
}

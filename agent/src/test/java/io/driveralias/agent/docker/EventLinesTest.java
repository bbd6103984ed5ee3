package io.driveralias.agent.docker;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.live.ContainerRuntime;
import io.driveralias.agent.live.ContainerRuntime.Action;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class EventLinesTest {

    private static final String START = "{\"status\":\"start\",\"id\":\"c1\",\"from\":\"busybox\",\"Type\":\"container\","
            + "\"Action\":\"start\",\"Actor\":{\"ID\":\"c1\",\"Attributes\":{\"image\":\"busybox\",\"name\":\"x\"}},"
            + "\"scope\":\"local\",\"time\":1700000000,\"timeNano\":1700000000000000042}\n";

    private static List<ContainerRuntime.Event> all(InputStream in) throws IOException {
        EventLines lines = new EventLines(in);
        List<ContainerRuntime.Event> events = new ArrayList<>();
        for (Optional<ContainerRuntime.Event> e = lines.next(); e.isPresent(); e = lines.next()) {
            events.add(e.get());
        }
        return events;
    }

    private static InputStream text(String s) {
        return new ByteArrayInputStream(s.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void readsIdActionAndTheResumePointOfEachLine() throws IOException {
        assertThat(all(text(START + START.replace("c1", "c2").replace("start", "die"))))
                .containsExactly(new ContainerRuntime.Event("c1", Action.STARTED, "start", "1700000000.000000042"),
                        new ContainerRuntime.Event("c2", Action.EXITED, "die", "1700000000.000000042"));
    }

    @Test
    void oldDaemonsWithoutActorOrNanosecondsStillGiveTheEvent() throws IOException {
        assertThat(all(text("{\"status\":\"create\",\"id\":\"c9\",\"time\":1600000000}\n")))
                .containsExactly(new ContainerRuntime.Event("c9", Action.CREATED, "create", "1600000000"));
    }

    @Test
    void otherTypesBlankAndBrokenLinesAreSkipped() throws IOException {
        String stream = "\n{\"Type\":\"network\",\"Action\":\"connect\",\"Actor\":{\"ID\":\"n1\"}}\nnot json\n[1,2]\n"
                + "{\"Action\":5,\"id\":\"c3\"}\n" + START;
        assertThat(all(text(stream))).extracting(ContainerRuntime.Event::containerId).containsExactly("c1");
    }

    @Test
    void aLineOverTheBoundIsCutButItsHeadStillCounts() throws IOException {
        String labels = "\"l\":\"" + "x".repeat(3 * EventLines.MAX_LINE) + "\"";
        String huge = START.replace("\"name\":\"x\"", labels).replace("c1", "big");
        List<ContainerRuntime.Event> events = all(text(huge + START));
        // The head names the container and the action; the time came after the labels: unknown.
        assertThat(events).containsExactly(new ContainerRuntime.Event("big", Action.STARTED, "start", ""),
                new ContainerRuntime.Event("c1", Action.STARTED, "start", "1700000000.000000042"));
    }

    @Test
    void aLastLineWithoutNewlineAndReadsInSmallPiecesWork() throws IOException {
        byte[] bytes = (START + START.strip()).getBytes(StandardCharsets.UTF_8);
        InputStream dribble = new InputStream() {
            int at;

            @Override
            public int read() {
                return at < bytes.length ? bytes[at++] & 0xff : -1;
            }

            @Override
            public int read(byte[] b, int off, int len) {
                if (at >= bytes.length) {
                    return -1;
                }
                b[off] = bytes[at++];
                return 1;
            }
        };
        assertThat(all(dribble)).hasSize(2);
    }
}

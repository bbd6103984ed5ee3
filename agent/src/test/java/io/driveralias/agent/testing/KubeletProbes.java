package io.driveralias.agent.testing;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * The kubelet's liveness and readiness probes on an agent, {@code /healthz} then {@code /readyz}
 * every 200 ms on a thread of their own, until closed: what each answered and in how long. A
 * probe without an answer within a second counts as failed (the DaemonSet's probes allow 3 s, and
 * fail the pod after 3 in a row).
 */
public final class KubeletProbes implements AutoCloseable {

    /** One probe: its path, its status (-1: no answer within a second) and its time. */
    public record Answer(String path, int status, long millis) {
    }

    private final List<Answer> answers = Collections.synchronizedList(new ArrayList<>());
    private final Thread thread;
    private volatile boolean stopped;

    public KubeletProbes(AgentProcess agent) {
        thread = Thread.ofPlatform().name("kubelet-probes").daemon().start(() -> {
            while (!stopped) {
                for (String path : List.of("/healthz", "/readyz")) {
                    long begun = System.nanoTime();
                    int status = agent.probe(path);
                    answers.add(new Answer(path, status, (System.nanoTime() - begun) / 1_000_000));
                }
                try {
                    Thread.sleep(200);
                } catch (InterruptedException e) {
                    return;
                }
            }
        });
    }

    /** Every probe so far. */
    public List<Answer> answers() {
        synchronized (answers) {
            return List.copyOf(answers);
        }
    }

    /** The probes that were not a 200: no answer within a second, or another status. */
    public List<Answer> failed() {
        return answers().stream().filter(a -> a.status() != 200).toList();
    }

    /** For a test's printed figures: how many, how many answered 200, the slowest. */
    public String summary() {
        List<Answer> all = answers();
        long slowest = all.stream().mapToLong(Answer::millis).max().orElse(0);
        return String.format("%d of %d probes answered 200 within 1 s (slowest %d ms)", all.size() - failed().size(), all.size(),
                slowest);
    }

    /** Stops probing, after the probe under way. */
    @Override
    public void close() {
        stopped = true;
        try {
            thread.join(5000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}

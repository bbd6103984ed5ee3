package io.driveralias.agent.testing;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * The kubelet's liveness and readiness probes on an agent, {@code /healthz} then {@code /readyz}
 * every 200 ms on a thread of their own, until closed: what each answered and in how long. Each
 * probe is what the kubelet's HTTP probe is, a new connection and one {@code GET}, given the
 * DaemonSet's probe timeout (a probe without its answer by then fails, and three failures in a row
 * restart the agent or take it out of service). A raw socket, not the JDK's HTTP client, so that
 * the time is the agent's and not a client's start on a busy test JVM.
 */
public final class KubeletProbes implements AutoCloseable {

    /** One probe: its path, its status (-1: no answer within the timeout) and its time. */
    public record Answer(String path, int status, long millis) {
    }

    private final int port;
    private final Duration timeout;
    private final List<Answer> answers = Collections.synchronizedList(new ArrayList<>());
    private final Thread thread;
    private volatile boolean stopped;

    /** Probes {@code agent} with the shipped DaemonSet's probe timeout. */
    public KubeletProbes(AgentProcess agent) {
        this.port = agent.port();
        this.timeout = DaemonSetAgent.load().probeTimeout();
        thread = Thread.ofPlatform().name("kubelet-probes").daemon().start(() -> {
            while (!stopped) {
                for (String path : List.of("/healthz", "/readyz")) {
                    long begun = System.nanoTime();
                    int status = get(path);
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

    /** One probe: the status of the answer's first line, or -1 when none came within the timeout. */
    private int get(String path) {
        long deadline = System.nanoTime() + timeout.toNanos();
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress("127.0.0.1", port), (int) timeout.toMillis());
            socket.getOutputStream().write(("GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + port + "\r\nUser-Agent: kube-probe/1.31"
                    + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            InputStream in = socket.getInputStream();
            StringBuilder line = new StringBuilder();
            while (line.length() < 64) {
                long left = (deadline - System.nanoTime()) / 1_000_000;
                if (left <= 0) {
                    return -1;
                }
                socket.setSoTimeout((int) left);
                int c = in.read();
                if (c < 0 || c == '\n') {
                    break;
                }
                line.append((char) c);
            }
            String[] parts = line.toString().split(" ");
            return parts.length >= 2 && parts[0].startsWith("HTTP/") ? Integer.parseInt(parts[1]) : -1;
        } catch (IOException | NumberFormatException e) {
            return -1;
        }
    }

    /** Every probe so far. */
    public List<Answer> answers() {
        synchronized (answers) {
            return List.copyOf(answers);
        }
    }

    /** The probes that were not a 200: no answer within the timeout, or another status. */
    public List<Answer> failed() {
        return answers().stream().filter(a -> a.status() != 200).toList();
    }

    /** For a test's printed figures: how many, how many answered 200, the slowest. */
    public String summary() {
        List<Answer> all = answers();
        long slowest = all.stream().mapToLong(Answer::millis).max().orElse(0);
        return String.format("%d of %d probes answered 200 within the DaemonSet's %d s (slowest %d ms)", all.size() - failed().size(),
                all.size(), timeout.toSeconds(), slowest);
    }

    /** Stops probing, after the probe under way. */
    @Override
    public void close() {
        stopped = true;
        try {
            thread.join(timeout.toMillis() * 2 + 1000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}

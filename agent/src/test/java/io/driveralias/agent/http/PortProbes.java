package io.driveralias.agent.http;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;

/**
 * The metrics port's well-behaved clients under a {@link PortFlood}: the kubelet's probes and
 * Prometheus' scrapes, each a new connection from an address of its own, timed from connect to
 * the last byte of the answer. The measurements are collected and summed up.
 */
public final class PortProbes {

    /** One request: the status answered (-1 for none), how long it took, and how long its connect and TLS handshake took. */
    public record Answer(String what, int status, long nanos, String error, long connectNanos, long handshakeNanos) {
        public double millis() {
            return nanos / 1e6;
        }
    }

    private final int port;
    private final SSLContext tls;
    private final List<Answer> answers = new ArrayList<>();

    /** Clients of {@code port}; over TLS (trusting the server's CA) when {@code tls} is not null. */
    public PortProbes(int port, SSLContext tls) {
        this.port = port;
        this.tls = tls;
    }

    /** GET {@code path} from {@code from}, with an {@code Authorization} header if not null; gives up after {@code timeoutMillis}. */
    public Answer get(String from, String path, String authorization, int timeoutMillis) {
        long start = System.nanoTime();
        long connected = 0;
        long handshaken = 0;
        Answer a;
        try (Socket raw = new Socket()) {
            raw.bind(new InetSocketAddress(from, 0));
            raw.setTcpNoDelay(true); // as the kubelet's and Prometheus' Go clients
            raw.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), timeoutMillis);
            connected = System.nanoTime();
            raw.setSoTimeout(timeoutMillis);
            Socket s = raw;
            if (tls != null) {
                SSLSocket ssl = (SSLSocket) tls.getSocketFactory().createSocket(raw, "127.0.0.1", port, true);
                ssl.startHandshake();
                s = ssl;
            }
            handshaken = System.nanoTime();
            String request = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    + (authorization == null ? "" : "Authorization: " + authorization + "\r\n") + "\r\n";
            s.getOutputStream().write(request.getBytes(StandardCharsets.US_ASCII));
            String answer = new String(s.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
            int status = answer.startsWith("HTTP/1.1 ") && answer.length() >= 12 ? Integer.parseInt(answer.substring(9, 12)) : -1;
            a = new Answer(path, status, System.nanoTime() - start, status < 0 ? "no answer (" + answer.length() + " bytes)" : null,
                    connected - start, handshaken - connected);
        } catch (SocketTimeoutException e) {
            a = new Answer(path, -1, System.nanoTime() - start, "timed out", phase(start, connected), phase(connected, handshaken));
        } catch (IOException e) {
            a = new Answer(path, -1, System.nanoTime() - start, e.toString(), phase(start, connected), phase(connected, handshaken));
        }
        synchronized (answers) {
            answers.add(a);
        }
        return a;
    }

    private static long phase(long from, long to) {
        return from == 0 || to == 0 ? -1 : to - from;
    }

    /** Every answer to {@code path} so far. */
    public List<Answer> answers(String path) {
        synchronized (answers) {
            return answers.stream().filter(a -> a.what().equals(path)).toList();
        }
    }

    /** "n of m 200, p50 x ms, max y ms" for {@code path}, and what went wrong if anything did. */
    public String summary(String path) {
        List<Answer> of = answers(path);
        long ok = of.stream().filter(a -> a.status() == 200).count();
        double[] millis = of.stream().mapToDouble(Answer::millis).sorted().toArray();
        String errors = of.stream().filter(a -> a.status() != 200).map(a -> a.status() + " " + a.error()).distinct()
                .limit(5).toList().toString();
        String slowest = of.stream().max(java.util.Comparator.comparingLong(Answer::nanos))
                .map(a -> String.format(" (the slowest: connect %.1f ms, TLS handshake %.1f ms)", a.connectNanos() / 1e6,
                        a.handshakeNanos() / 1e6)).orElse("");
        return String.format("%s %d of %d answered 200, p50 %.1f ms, max %.1f ms%s%s", path, ok, of.size(),
                millis.length == 0 ? 0 : millis[millis.length / 2], millis.length == 0 ? 0 : millis[millis.length - 1], slowest,
                ok == of.size() ? "" : ", failures " + errors);
    }
}

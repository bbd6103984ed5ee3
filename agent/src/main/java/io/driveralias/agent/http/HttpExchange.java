package io.driveralias.agent.http;

import io.driveralias.agent.webconfig.WebSecurity;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * One connection's request and answer: the request head read within its bounds, answers
 * written whole with the headers the web configuration adds, then a half-close and a short
 * drain. Over TLS the socket is the TLS one, and the handshake happens in the first read of
 * the head, under the head's deadline.
 */
final class HttpExchange {

    static final String TEXT = "text/plain; charset=utf-8";

    /** A request line and its headers; {@link #parse} gives null for anything but HTTP/1.x. */
    record Request(String method, String path, String[] lines) {

        static Request parse(byte[] head) {
            String[] lines = new String(head, StandardCharsets.ISO_8859_1).split("\r\n");
            if (lines.length == 0) {
                return null; // a head of blank lines alone ("\r\n\r\n" splits into nothing)
            }
            String[] requestLine = lines[0].split(" ");
            if (requestLine.length != 3 || !requestLine[2].startsWith("HTTP/1.")) {
                return null;
            }
            String target = requestLine[1];
            int query = target.indexOf('?');
            return new Request(requestLine[0], query < 0 ? target : target.substring(0, query), lines);
        }

        /** The value of the header {@code name} (lower case), or null. */
        String header(String name) {
            return HttpExchange.header(lines, name);
        }
    }
    /** A probe's or a scrape's head is a few hundred bytes; the buffer grows to the cap only for more. */
    private static final int FIRST_READ = 512;
    /**
     * What {@link #linger} reads is thrown away, so every connection drains into this one
     * buffer: concurrent writes into it are harmless, and a flood of lingering connections costs
     * no 4 KiB each (the heap is 32 MiB).
     */
    private static final byte[] SINK = new byte[4096];

    private final Socket socket;
    private final WebSecurity.Snapshot web;

    HttpExchange(Socket socket, WebSecurity.Snapshot web) {
        this.socket = socket;
        this.web = web;
    }

    Socket socket() {
        return socket;
    }

    WebSecurity.Snapshot web() {
        return web;
    }

    /**
     * The request line and headers, or null; reads stop at the deadline and the size cap. Each
     * read is scanned once, so a client dribbling bytes costs no more than one sending them at
     * once, and the buffer grows with what arrived: an idle connection holds a small one.
     * {@code deadline} is a {@link System#nanoTime()}.
     */
    byte[] readHead(long deadline, int maxBytes) throws IOException {
        InputStream in = socket.getInputStream();
        byte[] head = new byte[Math.min(FIRST_READ, maxBytes)];
        int length = 0;
        while (length < maxBytes) {
            if (length == head.length) {
                head = Arrays.copyOf(head, Math.min(2 * head.length, maxBytes));
            }
            long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
            if (left <= 0) {
                return null;
            }
            socket.setSoTimeout((int) Math.min(left, Integer.MAX_VALUE));
            int n;
            try {
                n = in.read(head, length, head.length - length);
            } catch (SocketTimeoutException e) {
                return null;
            }
            if (n < 0) {
                return null;
            }
            int from = Math.max(0, length - 3);
            length += n;
            int end = endOfHead(head, from, length);
            if (end >= 0) {
                return Arrays.copyOf(head, end + 2);
            }
        }
        sendText("GET", 431, "request header too large");
        linger();
        return null;
    }

    void sendText(String method, int code, String line, String... headerPairs) throws IOException {
        send(method, code, TEXT, (line + "\n").getBytes(StandardCharsets.UTF_8), headerPairs);
    }

    /** Writes the whole answer and half-closes: the client sees its end. {@code headerPairs}: name, value, name, value... */
    void send(String method, int code, String contentType, byte[] body, String... headerPairs) throws IOException {
        StringBuilder h = new StringBuilder(256).append("HTTP/1.1 ").append(code).append(' ').append(reason(code))
                .append("\r\nContent-Type: ").append(contentType)
                .append("\r\nCache-Control: no-store\r\nConnection: close\r\nContent-Length: ").append(body.length);
        for (int i = 0; i + 1 < headerPairs.length; i += 2) {
            h.append("\r\n").append(headerPairs[i]).append(": ").append(headerPairs[i + 1]);
        }
        for (Map.Entry<String, String> e : web.headers().entrySet()) {
            h.append("\r\n").append(e.getKey()).append(": ").append(e.getValue());
        }
        OutputStream out = socket.getOutputStream();
        out.write(h.append("\r\n\r\n").toString().getBytes(StandardCharsets.ISO_8859_1));
        if (!method.equals("HEAD")) {
            out.write(body);
        }
        out.flush();
        socket.shutdownOutput();
    }

    /**
     * Drains briefly after the answer: closing with unread request bytes (a POST body) would
     * reset the connection and could destroy the answer before the client reads it.
     */
    void linger() throws IOException {
        socket.setSoTimeout(1000);
        InputStream in = socket.getInputStream();
        try {
            for (int total = 0, n; total < 65536 && (n = in.read(SINK)) >= 0; ) {
                total += n;
            }
        } catch (SocketTimeoutException e) {
            // the client keeps its side open: close ours anyway
        }
    }

    /** The value of the header {@code name} (lower case), or null. */
    static String header(String[] lines, String name) {
        for (int i = 1; i < lines.length; i++) {
            int colon = lines[i].indexOf(':');
            if (colon > 0 && lines[i].substring(0, colon).trim().toLowerCase(Locale.ROOT).equals(name)) {
                return lines[i].substring(colon + 1).trim();
            }
        }
        return null;
    }

    private static String reason(int code) {
        return switch (code) {
            case 200 -> "OK";
            case 400 -> "Bad Request";
            case 401 -> "Unauthorized";
            case 404 -> "Not Found";
            case 405 -> "Method Not Allowed";
            case 429 -> "Too Many Requests";
            case 431 -> "Request Header Fields Too Large";
            case 500 -> "Internal Server Error";
            default -> "Service Unavailable";
        };
    }

    /** Where the blank line that ends the head starts, or -1. */
    private static int endOfHead(byte[] b, int from, int to) {
        for (int i = from; i + 3 < to; i++) {
            if (b[i] == '\r' && b[i + 1] == '\n' && b[i + 2] == '\r' && b[i + 3] == '\n') {
                return i;
            }
        }
        return -1;
    }
}

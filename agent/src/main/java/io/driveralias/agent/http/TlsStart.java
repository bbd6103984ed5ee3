package io.driveralias.agent.http;

import io.driveralias.agent.webconfig.ServerTls;
import java.io.IOException;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLSocket;

/**
 * The TLS side of a new connection: its first bytes, then the handshake in a turn of its
 * address ({@link HandshakeTurns}) and within a deadline of its own. TLS costs memory (records,
 * handshake state) only once the client has sent something and has its turn: an idle connection
 * stays a bare socket, and one waiting for its turn holds its first bytes and no more, however
 * many there are (the heap is 32 MiB).
 */
final class TlsStart {

    /**
     * A TLS handshake, the wait for its address's turn included: a client on a busy node
     * handshakes in well under a second; one that stalls after its ClientHello holds a turn of
     * its address this long at most.
     */
    static final Duration HANDSHAKE_DEADLINE = Duration.ofSeconds(5);
    /** A TLS record header and the start of a ClientHello; the rest is read by the TLS socket. */
    private static final int FIRST_TLS_READ = 512;

    private final HandshakeTurns handshakes = new HandshakeTurns();
    /** Cuts a handshake at its deadline: the socket's timeout bounds each read, not the handshake. */
    private final ScheduledExecutorService deadlines;

    TlsStart(ScheduledExecutorService deadlines) {
        this.deadlines = deadlines;
    }

    /**
     * The TLS socket over the connection accepted at {@code accepted} (a {@link System#nanoTime()}),
     * handshaken within {@link #HANDSHAKE_DEADLINE} and {@code headDeadline}; null if the client
     * sent nothing, or the handshake did not happen in time. {@code busy}: its address held many
     * connections when it was accepted (see {@link HandshakeTurns}).
     */
    SSLSocket handshake(Connection connection, ServerTls tls, long accepted, long headDeadline, boolean busy) throws IOException {
        byte[] first = firstBytes(connection.socket(), headDeadline);
        if (first == null) {
            return null;
        }
        return handshake(connection, tls, first, Math.min(headDeadline, accepted + HANDSHAKE_DEADLINE.toNanos()), busy);
    }

    /**
     * The TLS handshake over the connection whose first bytes were {@code first}, in a turn of
     * its address ({@link HandshakeTurns}) and within {@code deadline} (its own, shorter than the
     * head's), the wait for the turn included; null if it did not happen. The TLS state (record
     * buffers, handshake context) is made only in that turn: connections waiting for it cost
     * their first bytes and no more.
     */
    private SSLSocket handshake(Connection connection, ServerTls tls, byte[] first, long deadline, boolean busy) throws IOException {
        if (!connection.waiting()) {
            return null;
        }
        HandshakeTurns.Turn turn;
        try {
            turn = handshakes.await(connection.socket().getInetAddress(), busy, deadline);
        } catch (InterruptedException evicted) {
            return null;
        } finally {
            connection.doneWaiting();
        }
        if (turn == null) {
            return null;
        }
        try {
            long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
            if (left <= 0) {
                return null;
            }
            SSLSocket ssl = tls.wrap(connection.socket(), first);
            ssl.setSoTimeout((int) Math.min(left, Integer.MAX_VALUE));
            // A client that dribbles a byte a second keeps each read under its timeout: closing the
            // connection at the deadline ends the handshake, and the turn it holds, whatever it sends
            // (one held 9 s and more of a 5 s deadline).
            ScheduledFuture<?> cut = deadlines.schedule(connection::close, left, TimeUnit.MILLISECONDS);
            try {
                ssl.startHandshake();
            } finally {
                cut.cancel(false);
            }
            return connection.isClosed() ? null : ssl;
        } finally {
            turn.end();
        }
    }

    /** What the client sent first (the start of a TLS ClientHello), or null at the deadline or the end. */
    private static byte[] firstBytes(Socket raw, long deadline) throws IOException {
        long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
        if (left <= 0) {
            return null;
        }
        raw.setSoTimeout((int) Math.min(left, Integer.MAX_VALUE));
        byte[] first = new byte[FIRST_TLS_READ];
        int n;
        try {
            n = raw.getInputStream().read(first);
        } catch (SocketTimeoutException e) {
            return null;
        }
        return n <= 0 ? null : Arrays.copyOf(first, n);
    }
}

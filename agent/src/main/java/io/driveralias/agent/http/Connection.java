package io.driveralias.agent.http;

import java.io.Closeable;
import java.io.IOException;
import java.net.Socket;

/**
 * One accepted connection, as {@link ConnectionSlots} evicts it: closing it closes the socket,
 * which ends any read or write on it, and interrupts its thread if that is waiting for its turn
 * (a TLS handshake of its address, a password check), so that an evicted connection stops
 * waiting at once instead of at its deadline: a flood that is evicted as fast as it connects
 * leaves no waiting threads behind.
 */
final class Connection implements Closeable {

    private final Socket socket;
    private Thread waiter;
    private boolean closed;

    Connection(Socket socket) {
        this.socket = socket;
    }

    Socket socket() {
        return socket;
    }

    /**
     * The calling thread is about to wait for a turn; false if the connection is closed already.
     * Call {@link #doneWaiting} after.
     */
    synchronized boolean waiting() {
        if (closed) {
            return false;
        }
        waiter = Thread.currentThread();
        return true;
    }

    /** The wait is over; clears an interrupt that came too late to matter. */
    synchronized void doneWaiting() {
        waiter = null;
        Thread.interrupted();
    }

    /** Whether it was closed (evicted, or cut at a deadline). */
    synchronized boolean isClosed() {
        return closed;
    }

    @Override
    public void close() {
        try {
            socket.close();
        } catch (IOException ignored) {
            // already closed
        }
        synchronized (this) {
            closed = true;
            if (waiter != null) {
                waiter.interrupt(); // under the lock: doneWaiting either comes after and clears it, or has happened
            }
        }
    }
}

package io.driveralias.agent.nri;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * A plugin of the tests at a name and index of their own ({@link NriPlugin}'s are the agent's, fixed),
 * on the same session code as the agent's plugin: one connection, served until {@link #close};
 * no reconnecting. The benchmark puts such plugins around the one it measures (the runtime calls
 * them in index order, one after another) and one that answers at once in its place.
 */
public final class IndexedNriPlugin implements AutoCloseable {

    private final SocketChannel channel;
    private final NriSession session;
    private final Thread reading;
    /** The reading thread's id in the kernel, once it runs. */
    private volatile long readingTid;
    private final ThreadPoolExecutor calls;
    private final ScheduledThreadPoolExecutor timer;

    private IndexedNriPlugin(SocketChannel channel, NriSession session, ThreadPoolExecutor calls, ScheduledThreadPoolExecutor timer) {
        this.channel = channel;
        this.session = session;
        this.calls = calls;
        this.timer = timer;
        this.reading = new Thread(() -> {
            readingTid = currentThreadId();
            session.serve();
        }, "nri-test-plugin");
        this.reading.setDaemon(true);
    }

    /**
     * Connects to {@code socket}, registers as {@code index}-{@code name} and waits until the runtime
     * has configured the plugin.
     *
     * @param index two digits: the runtime calls plugins in ascending index order
     */
    public static IndexedNriPlugin connect(Path socket, String name, String index, NriHandler handler, Duration patience)
            throws IOException {
        SocketChannel channel = SocketChannel.open(StandardProtocolFamily.UNIX);
        channel.connect(UnixDomainSocketAddress.of(socket));
        ThreadPoolExecutor calls = new ThreadPoolExecutor(2, 2, 0, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), task -> {
            Thread t = new Thread(task, "nri-test-call");
            t.setDaemon(true);
            return t;
        });
        calls.prestartAllCoreThreads();
        ScheduledThreadPoolExecutor timer = new ScheduledThreadPoolExecutor(1);
        NriSession.Setup setup = new NriSession.Setup(name, index, handler, new StartDeadline(StartDeadline.DEFAULT_BUDGET), calls,
                new Semaphore(2), 2, timer);
        MuxReader reader = new MuxReader(channel, ByteBuffer.allocateDirect(64 << 10), ByteBuffer.allocateDirect(MuxReader.MAX_MESSAGE),
                ByteBuffer.allocate(64 << 10));
        IndexedNriPlugin plugin = new IndexedNriPlugin(channel, new NriSession(channel, reader, setup), calls, timer);
        plugin.reading.start();
        long deadline = System.nanoTime() + patience.toNanos();
        while (!plugin.session.configured()) {
            if (System.nanoTime() > deadline || !plugin.reading.isAlive()) {
                plugin.close();
                throw new IOException("the runtime on " + socket + " did not configure plugin " + index + "-" + name + " within "
                        + patience.toMillis() + " ms");
            }
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                plugin.close();
                throw new IOException("interrupted", e);
            }
        }
        return plugin;
    }

    /**
     * The kernel's id of the thread that reads the runtime's calls and answers those its handler
     * does not want (a benchmark weighs it as a pod would be weighed).
     */
    public long readingThreadId() {
        if (readingTid == 0) {
            throw new IllegalStateException("the reading thread has not started");
        }
        return readingTid;
    }

    private static long currentThreadId() {
        try {
            // "/proc/thread-self" -> "<pid>/task/<tid>"
            return Long.parseLong(Files.readSymbolicLink(Path.of("/proc/thread-self")).getFileName().toString());
        } catch (IOException | NumberFormatException e) {
            return -1;
        }
    }

    /** Ends the connection: the runtime drops the plugin. */
    @Override
    public void close() {
        session.end("closed by the test");
        try {
            channel.close();
            reading.join(Duration.ofSeconds(2));
        } catch (IOException e) {
            // closing anyway
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        calls.shutdownNow();
        timer.shutdownNow();
    }
}

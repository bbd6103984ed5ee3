package io.driveralias.agent.nri;

/**
 * What the agent does with what the runtime tells its NRI plugin ({@link NriPlugin}). The plugin
 * owns the socket, the protocol and the deadlines; the handler sees pods and containers only.
 *
 * <p>Threads: {@link #connected}, {@link #disconnected}, {@link #synchronize}, {@link #createContainer},
 * {@link #wantsStart}, {@link #answeredAtOnce} and {@link #notServed} run on the plugin's one reading thread, in the order the runtime sent things,
 * and hold the runtime (and, since NRI serializes its calls node-wide, every pod start on the node)
 * while they run: they must return at once (queue the work). {@link #startContainer} runs on one
 * of the plugin's call threads, at most as many at once as the plugin was built with.
 */
public interface NriHandler {

    /** The runtime took the plugin (RegisterPlugin, then Configure); once per connection. */
    void connected(NriRuntimeInfo runtime);

    /** The connection that {@link #connected} announced is gone; the plugin connects again on its own. */
    void disconnected(String why);

    /**
     * The pods and containers the runtime has, when the plugin (re)connects; containers with their
     * pids. Possibly in several parts, the last marked.
     */
    void synchronize(NriSync part);

    /**
     * A container is being created: described as the runtime will store it (no process yet; a
     * plugin called after this one may still adjust it). The answer, sent when this returns, never
     * adjusts anything.
     */
    default void createContainer(NriPod pod, NriContainer container) {
    }

    /**
     * Whether a starting container needs {@link #startContainer} at all. Asked on the reading thread
     * before a call thread is woken, so it must return at once, and decide only (what follows from
     * a false goes in {@link #answeredAtOnce}); false: the runtime is answered from the reading
     * thread (the common case, a container that asks for no GPU, costs no thread switch inside
     * every pod's start).
     */
    default boolean wantsStart(NriPod pod, NriContainer container) {
        return true;
    }

    /**
     * A start {@link #wantsStart} did not want, once the runtime has its answer: the bookkeeping that
     * need not hold that pod's start, nor (NRI's lock being node-wide) every other pod's.
     */
    default void answeredAtOnce(NriPod pod, NriContainer container) {
    }

    /**
     * A container is starting: its process exists and its root is mounted, before its first
     * instruction. The runtime waits for the answer, which the plugin sends when this returns or
     * when {@link StartCall#deadlineNanos()} passes, whichever comes first; past the deadline the
     * container may start while this still runs ({@link StartCall#answered()} then says so). The
     * answer is always a success, whatever happens here, an exception included.
     */
    void startContainer(NriPod pod, NriContainer container, StartCall call);

    /**
     * A container whose start {@link #wantsStart} wanted started while every call thread was busy
     * (handlers past their deadline): the runtime has been answered without the handler, and the
     * container starts now.
     */
    void notServed(NriPod pod, NriContainer container, String why);
}

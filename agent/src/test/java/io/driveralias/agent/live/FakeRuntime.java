package io.driveralias.agent.live;

import io.driveralias.agent.core.ContainerInfo;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.function.UnaryOperator;

/**
 * A container runtime for unit tests: containers and events are injected, calls are recorded.
 * An event stream ends when the test breaks it ({@link #breakStream()}), as a restarted
 * daemon's would. Events are named as Docker names them ({@code create}, {@code start}, ...).
 */
final class FakeRuntime implements ContainerRuntime {

    /** Marks the end of one subscription in the event queue. */
    private static final Event END = new Event("", Action.REMOVED, "", "");
    private static final Map<String, Action> ACTIONS = Map.of("create", Action.CREATED, "start", Action.STARTED,
            "die", Action.EXITED, "destroy", Action.REMOVED, "task-create", Action.PROCESS_CREATED);

    private final String name;

    private final Map<String, ContainerInfo> containers = new LinkedHashMap<>();
    private final Map<String, Integer> inspects = new HashMap<>();
    /** What becomes of a container after its n-th inspect: the race of a container that changes under the agent. */
    private final Map<String, Map<Integer, UnaryOperator<ContainerInfo>>> afterInspect = new HashMap<>();
    private final List<Optional<String>> subscriptions = new ArrayList<>();
    private final BlockingQueue<Event> events = new LinkedBlockingQueue<>();
    private final java.util.Set<String> hidden = new java.util.HashSet<>();
    private int lists;
    private int peeks;
    private boolean unreachable;
    /** How many more describes of a container fail as a call that timed out would. */
    private final Map<String, Integer> failingDescribes = new HashMap<>();
    private volatile boolean answersPing = true;

    synchronized void put(ContainerInfo info) {
        containers.put(info.id(), info);
    }

    /** The runtime's list leaves it out, while describing it still says it runs (a stale list). */
    synchronized void hideFromList(String id) {
        hidden.add(id);
    }

    synchronized void remove(String id) {
        containers.remove(id);
    }

    /** After the {@code n}-th inspect of {@code id}, the container becomes what {@code change} makes it (null: removed). */
    synchronized void afterInspect(String id, int n, UnaryOperator<ContainerInfo> change) {
        afterInspect.computeIfAbsent(id, k -> new HashMap<>()).put(n, change);
    }

    FakeRuntime() {
        this("docker");
    }

    FakeRuntime(String name) {
        this.name = name;
    }

    void emit(String id, String action, String time) {
        events.add(new Event(id, ACTIONS.get(action), action, time));
    }

    /** The current subscription ends; the agent's stream reconnects. */
    void breakStream() {
        events.add(END);
    }

    /** The next {@code n} describes of {@code id} fail (a call past its deadline), the runtime otherwise fine. */
    synchronized void failDescribes(String id, int n) {
        failingDescribes.put(id, n);
    }

    synchronized void unreachable(boolean down) {
        unreachable = down;
    }

    void answersPing(boolean answers) {
        answersPing = answers;
    }

    synchronized int inspects(String id) {
        return inspects.getOrDefault(id, 0);
    }

    synchronized int lists() {
        return lists;
    }

    synchronized List<Optional<String>> subscriptions() {
        return List.copyOf(subscriptions);
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public String endpoint() {
        return "fake://" + name;
    }

    @Override
    public synchronized String connect() throws ContainerRuntimeException {
        requireReachable();
        return "API 1.43";
    }

    @Override
    public boolean ping() {
        return answersPing;
    }

    @Override
    public synchronized ContainerInfo describe(String id) throws ContainerRuntimeException {
        requireReachable();
        int n = inspects.merge(id, 1, Integer::sum);
        int failing = failingDescribes.getOrDefault(id, 0);
        if (failing > 0) {
            failingDescribes.put(id, failing - 1);
            throw new ContainerRuntimeException.Unreachable("deadline exceeded", null);
        }
        ContainerInfo info = containers.get(id);
        UnaryOperator<ContainerInfo> change = afterInspect.getOrDefault(id, Map.of()).get(n);
        if (change != null && info != null) {
            ContainerInfo next = change.apply(info);
            if (next == null) {
                containers.remove(id);
            } else {
                containers.put(id, next);
            }
        }
        if (info == null) {
            throw new ContainerRuntimeException.NoSuchContainer(id);
        }
        return info;
    }

    /** The container as created, from the list (not counted as an inspect): never blocked by a start. */
    @Override
    public synchronized Optional<ContainerInfo> peekCreated(String id) throws ContainerRuntimeException {
        requireReachable();
        peeks++;
        return Optional.ofNullable(containers.get(id)).filter(c -> !c.running() && c.startedAt().isEmpty());
    }

    synchronized int peeks() {
        return peeks;
    }

    @Override
    public synchronized boolean runsPod(String podUid) throws ContainerRuntimeException {
        requireReachable();
        return containers.values().stream().anyMatch(c -> podUid.equals(c.labels().get("io.kubernetes.pod.uid")));
    }

    /** Lists wait on this latch (outside the fake's lock) until a test opens it: a reconcile held in its list. */
    private volatile java.util.concurrent.CountDownLatch listGate = new java.util.concurrent.CountDownLatch(0);
    private final java.util.concurrent.atomic.AtomicInteger listsWaiting = new java.util.concurrent.atomic.AtomicInteger();

    /** From now, every list waits until the returned latch is counted down. */
    java.util.concurrent.CountDownLatch holdLists() {
        listGate = new java.util.concurrent.CountDownLatch(1);
        return listGate;
    }

    int listsWaiting() {
        return listsWaiting.get();
    }

    @Override
    public List<String> runningContainerIds() throws ContainerRuntimeException {
        listsWaiting.incrementAndGet();
        try {
            listGate.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ContainerRuntimeException("interrupted");
        } finally {
            listsWaiting.decrementAndGet();
        }
        return list();
    }

    private synchronized List<String> list() throws ContainerRuntimeException {
        requireReachable();
        lists++;
        return containers.values().stream().filter(ContainerInfo::running).map(ContainerInfo::id)
                .filter(id -> !hidden.contains(id)).toList();
    }

    @Override
    public synchronized EventStream events(Optional<String> since) throws ContainerRuntimeException {
        requireReachable();
        subscriptions.add(since);
        return new EventStream() {
            private volatile boolean closed;

            @Override
            public Optional<Event> next() throws ContainerRuntimeException {
                try {
                    while (!closed) {
                        Event e = events.poll(20, java.util.concurrent.TimeUnit.MILLISECONDS);
                        if (e != null) {
                            return e == END ? Optional.empty() : Optional.of(e);
                        }
                    }
                    return Optional.empty();
                } catch (InterruptedException ex) {
                    Thread.currentThread().interrupt();
                    throw new ContainerRuntimeException.Unreachable("interrupted", ex);
                }
            }

            @Override
            public void close() {
                closed = true;
            }
        };
    }

    private void requireReachable() throws ContainerRuntimeException {
        if (unreachable) {
            throw new ContainerRuntimeException.Unreachable("connection refused", null);
        }
    }

    @Override
    public void close() {
    }
}

package io.driveralias.agent.live;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * Which containers workers (and NRI's starts) hold, and how: the rule that no two of them ever
 * write one container, while a start never waits for its own create's reading. A create reads
 * (describes) its container first; a start that comes meanwhile is held beside it, and the create
 * then may not write ({@link #claimWrite}). Anything else holds its container alone. Not
 * thread-safe: {@link RepairQueue} calls it under its lock.
 */
final class ContainerHolds {

    /** What holds a container: a start, a create still reading (a start may go beside it), or anything writing. */
    private enum Holder { START, CREATE_READING, WRITING }

    private final Map<RepairQueue.Key, Holder> held = new HashMap<>();
    /** Containers whose start was held while their create was still reading. */
    private final Set<RepairQueue.Key> startsBeside = new HashSet<>();

    boolean held(RepairQueue.Key key) {
        return held.containsKey(key);
    }

    /** Whether a start may be held now: its container is free, or its create only reads and no other start is beside it. */
    boolean startMayHold(RepairQueue.Key key) {
        return !held(key) || (held.get(key) == Holder.CREATE_READING && !startsBeside.contains(key));
    }

    void holdStart(RepairQueue.Key key) {
        if (held(key)) {
            startsBeside.add(key);
        } else {
            held.put(key, Holder.START);
        }
    }

    void releaseStart(RepairQueue.Key key) {
        if (!startsBeside.remove(key)) {
            held.remove(key);
        }
    }

    /** Anything but a start, taken: a create holds its container as reading, the rest as writing. */
    void holdOther(RepairQueue.Key key, boolean create) {
        held.put(key, create ? Holder.CREATE_READING : Holder.WRITING);
    }

    /** The end of {@link #holdOther}: a start held beside this create holds the container on its own now. */
    void releaseOther(RepairQueue.Key key) {
        held.remove(key);
        if (startsBeside.remove(key)) {
            held.put(key, Holder.START);
        }
    }

    /** A create about to write: false when its start was held meanwhile (that start then writes), else now its alone. */
    boolean claimWrite(RepairQueue.Key key) {
        if (startsBeside.contains(key)) {
            return false;
        }
        held.put(key, Holder.WRITING);
        return true;
    }

    boolean any() {
        return !held.isEmpty();
    }
}

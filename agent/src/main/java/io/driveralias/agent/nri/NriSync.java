package io.driveralias.agent.nri;

import java.util.List;

/**
 * One part of a Synchronize: the pods and containers the runtime has, as it sends them when the
 * plugin (re)connects. A runtime with more than one message can hold splits them; {@code last}
 * marks the final part, after which the plugin's view is complete.
 *
 * @param dropped pods and containers beyond what one message may hand over (a runtime that sends
 *                thousands in one part): they are not in the lists; a full reconcile finds them
 */
public record NriSync(List<NriPod> pods, List<NriContainer> containers, boolean last, int dropped) {

    public NriSync {
        pods = List.copyOf(pods);
        containers = List.copyOf(containers);
    }
}

package io.driveralias.agent.bench;

import io.driveralias.agent.testing.BusyNode;
import io.driveralias.agent.testing.CpuHog;
import io.driveralias.agent.testing.DaemonSetAgent;
import io.driveralias.agent.testing.PodCgroup;

/**
 * Where a benchmark runs the agent and its busy loops. {@code agentCpuRequest} ≥ 0: the agent in
 * a pod's CPU cgroup weighted as the kubelet weighs that request in millicores, and each busy loop
 * in a pod of its own requesting {@code loopCpuRequest}: the weights a node gives them, where on a
 * test machine all processes share one cgroup. Below 0: all in the benchmark's cgroup, each of the
 * agent's threads then weighing as much as a loop.
 *
 * <p>By default the DaemonSet's own request and loops of a whole CPU each, as on a GPU node whose
 * training pods keep every core busy; {@code -Dbench.agentCpuRequest=M} measures another request,
 * {@code -1} the shared cgroup of the runs before 2026-12-03; {@code -Dbench.hogCpuRequest=M}
 * weighs the loops. The ITs' {@link BusyNode} is these defaults.
 */
record PodWeights(int agentCpuRequest, int loopCpuRequest) {

    /** Everything in the benchmark's own cgroup. */
    static final PodWeights SHARED = new PodWeights(-1, -1);

    static PodWeights fromSystemProperties() {
        int agent = Integer.getInteger("bench.agentCpuRequest", DaemonSetAgent.load().cpuRequestMillicores());
        return agent < 0 ? SHARED : new PodWeights(agent, Integer.getInteger("bench.hogCpuRequest", BusyNode.LOOP_REQUEST));
    }

    boolean agentInPod() {
        return agentCpuRequest >= 0;
    }

    /** A cgroup for the agent's processes, weighted as its request; null where they share the benchmark's. */
    PodCgroup agentPod(String name) {
        return agentInPod() ? PodCgroup.create(name).cpuRequest(agentCpuRequest) : null;
    }

    /** Busy loops at {@code nice}, each in a pod of its own where the agent has one; null for {@code nice} below 0 (none). */
    CpuHog loops(int nice) {
        return nice < 0 ? null : new CpuHog(nice, loopCpuRequest);
    }

    /** The busy loops at {@code nice}, as a report names them. */
    String describeLoops(int nice) {
        return CpuHog.describe(nice, loopCpuRequest);
    }

    /** Where the agent runs, as a report names it. */
    String agentPlace() {
        return agentInPod() ? "the agent in a pod's CPU cgroup requesting " + agentCpuRequest + "m"
                : "the agent in the benchmark's own cgroup";
    }
}

package io.driveralias.agent.testing;

/**
 * A GPU node whose pods keep every core busy, around one running agent, for as long as it is
 * open: a busy loop on each core, each in a pod's CPU cgroup requesting a whole CPU (a training
 * job's data loaders), and the agent in a cgroup weighted as the DaemonSet's CPU request. In one
 * cgroup with the loops, each of the agent's threads would weigh as much as a loop, a weight no
 * node gives it, so a first-instruction result measured that way says nothing of the shipped
 * request. Closing stops the loops and moves the agent back to the caller's cgroup.
 */
public final class BusyNode implements AutoCloseable {

    /** Each busy loop's pod request, in millicores. */
    public static final int LOOP_REQUEST = 1000;

    private final int agentRequest;
    private final PodCgroup agentPod;
    private final CpuHog loops;

    private BusyNode(int agentRequest, PodCgroup agentPod, CpuHog loops) {
        this.agentRequest = agentRequest;
        this.agentPod = agentPod;
        this.loops = loops;
    }

    /** The agent process {@code agentPid} weighted as the shipped DaemonSet's CPU request, and the loops started. */
    public static BusyNode around(long agentPid) {
        int request = DaemonSetAgent.load().cpuRequestMillicores();
        PodCgroup pod = PodCgroup.create("daa-busy-node-agent-" + agentPid).cpuRequest(request).add(agentPid);
        try {
            return new BusyNode(request, pod, new CpuHog(0, LOOP_REQUEST));
        } catch (RuntimeException e) {
            pod.close();
            throw e;
        }
    }

    /** The conditions, for a test's printed figures. */
    public String describe() {
        return describe(agentRequest);
    }

    /** The conditions a node made now would have, for figures printed after it is closed. */
    public static String describeShipped() {
        return describe(DaemonSetAgent.load().cpuRequestMillicores());
    }

    private static String describe(int agentRequest) {
        return CpuHog.describe(0, LOOP_REQUEST) + ", the agent requesting " + agentRequest + "m";
    }

    @Override
    public void close() {
        try {
            loops.close();
        } finally {
            agentPod.close();
        }
    }
}

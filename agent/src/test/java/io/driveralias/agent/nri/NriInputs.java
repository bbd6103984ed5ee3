package io.driveralias.agent.nri;

import io.driveralias.agent.testing.nri.Container;
import io.driveralias.agent.testing.nri.LinuxContainer;
import io.driveralias.agent.testing.nri.LinuxDevice;
import io.driveralias.agent.testing.nri.LinuxNamespace;
import io.driveralias.agent.testing.nri.Mount;
import io.driveralias.agent.testing.nri.PodSandbox;

/** Pods and containers as a CRI runtime hands them to NRI plugins, for the plugin's tests. */
public final class NriInputs {

    private NriInputs() {
    }

    public static PodSandbox pod(String name) {
        return PodSandbox.newBuilder().setId("sandbox-" + name).setName(name).setUid("uid-" + name).setNamespace("default")
                .putLabels("io.kubernetes.pod.name", name).putLabels("io.kubernetes.pod.namespace", "default")
                .putLabels("app", name).putAnnotations("kubernetes.io/config.source", "api").setRuntimeHandler("nvidia")
                .addIps("10.0.0.7").build();
    }

    /** A GPU container as the kubelet and the NVIDIA device plugin leave it, with the runtime's own mounts. */
    public static Container.Builder gpuContainer(String id, PodSandbox pod, int pid) {
        return Container.newBuilder().setId(id).setPodSandboxId(pod.getId()).setName("main").setState(1).setPid(pid)
                .putLabels("io.kubernetes.container.name", "main").putLabels("io.kubernetes.pod.name", pod.getName())
                .putLabels("io.kubernetes.pod.namespace", pod.getNamespace()).putLabels("io.kubernetes.pod.uid", pod.getUid())
                .putLabels("team", "ml")
                .putAnnotations("io.kubernetes.cri.container-type", "container")
                .putAnnotations("io.kubernetes.cri.sandbox-name", pod.getName())
                .putAnnotations("cdi.k8s.io/nvidia-device-plugin_uuid", "nvidia.com/gpu=GPU-1234")
                .putAnnotations("io.kubernetes.container.hash", "1234abcd")
                .addArgs("python3").addArgs("train.py")
                .addEnv("PATH=/usr/local/bin:/usr/bin:/bin").addEnv("NVIDIA_VISIBLE_DEVICES=GPU-1234")
                .addEnv("NVIDIA_DRIVER_CAPABILITIES=compute,utility").addEnv("HOSTNAME=" + pod.getName())
                .addMounts(Mount.newBuilder().setDestination("/proc").setType("proc").setSource("proc")
                        .addOptions("nosuid").addOptions("noexec"))
                .addMounts(Mount.newBuilder().setDestination("/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05")
                        .setType("bind").setSource("/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05").addOptions("ro")
                        .addOptions("nosuid").addOptions("rbind"))
                .addMounts(Mount.newBuilder().setDestination("/etc/hosts").setSource("/var/lib/kubelet/pods/x/etc-hosts")
                        .addOptions("rbind").addOptions("rprivate").addOptions("rw"))
                .addMounts(Mount.newBuilder().setDestination("/dev/shm").setType("tmpfs").setSource("shm").addOptions("size=65536k"))
                .setLinux(LinuxContainer.newBuilder()
                        .addNamespaces(LinuxNamespace.newBuilder().setType("pid"))
                        .addDevices(LinuxDevice.newBuilder().setPath("/dev/nvidiactl").setType("c").setMajor(195).setMinor(255))
                        .addDevices(LinuxDevice.newBuilder().setPath("/dev/nvidia0").setType("c").setMajor(195))
                        .setCgroupsPath("kubepods-besteffort.slice"));
    }

    /** A container with nothing of a GPU. */
    public static Container.Builder plainContainer(String id, PodSandbox pod, int pid) {
        return Container.newBuilder().setId(id).setPodSandboxId(pod.getId()).setName("web").setState(1).setPid(pid)
                .putLabels("io.kubernetes.container.name", "web").addEnv("PATH=/usr/bin:/bin")
                .addMounts(Mount.newBuilder().setDestination("/proc").setType("proc").setSource("proc"));
    }
}

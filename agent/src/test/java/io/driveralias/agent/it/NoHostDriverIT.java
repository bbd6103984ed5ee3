package io.driveralias.agent.it;

import static io.driveralias.agent.it.RealContainers.LIB_DIR;
import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.metrics.Promtool;
import io.driveralias.agent.metrics.RepoFiles;
import io.driveralias.agent.testing.AgentProcess;
import io.driveralias.agent.testing.DockerHarness;
import io.driveralias.agent.testing.Processes;
import io.driveralias.agent.testing.RealDriver;
import io.driveralias.agent.testing.SharedEngines;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.ResourceLock;

/**
 * The platform's own case with the driver one directory away from where the agent looks: NVIDIA's
 * real driver files bind-mounted into a container with {@code NVIDIA_VISIBLE_DEVICES=all}, no GPU
 * runtime, and the agent's {@code --host-lib-dir} an empty directory. The container asks for a GPU
 * only by signs; the agent writes nothing into it, and says loudly that the node's driver is not
 * found: the counter the alert reads rises, {@code check} exits 1 naming where it looked, and
 * DriverAliasNoHostDriver fires in promtool on the series this agent exposed.
 */
@Timeout(300)
@ResourceLock(SharedEngines.DOCKER)
class NoHostDriverIT {

    @TempDir
    Path dir;

    final DockerHarness docker = DockerHarness.get();
    final List<String> started = new ArrayList<>();

    @AfterEach
    void remove() {
        docker.removeContainers(started);
    }

    @Test
    void signsOfAGpuOnANodeWhoseDriverIsNotFoundAreLoud() throws Exception {
        Path empty = Files.createDirectories(dir.resolve("lib"));
        String[] args = {"--host-lib-dir", empty.toString(), "--kubernetes", "off", "--ldconfig", "cache"};
        try (AgentProcess agent = AgentProcess.start(docker, args)) {
            agent.awaitLog("first reconcile", Duration.ofSeconds(30));
            double before = agent.metric("driver_alias_unmatched_driver_files_total");
            List<String> run = new ArrayList<>(List.of("run", "-d", "-e", "NVIDIA_VISIBLE_DEVICES=all"));
            run.addAll(RealDriver.mounts(LIB_DIR));
            run.addAll(List.of(RealDriver.debianImage(docker), "sleep", "600"));
            String id = docker.run(run.toArray(String[]::new));
            started.add(id);

            agent.await("the container's driver files counted", Duration.ofSeconds(30),
                    () -> agent.metric("driver_alias_unmatched_driver_files_total") > before);
            double after = agent.metric("driver_alias_unmatched_driver_files_total");
            double files = agent.metric("driver_alias_host_driver_files");
            assertThat(files).isZero();
            assertThat(docker.tryRun("exec", id, "test", "-e", LIB_DIR + "/libcuda.so.1").exitCode())
                    .as("signs alone: nothing written").isNotZero();

            List<String> cmd = new ArrayList<>(List.of(AgentProcess.java(), "-jar", AgentProcess.jar().toString(), "check",
                    "--docker-host", docker.host()));
            cmd.addAll(List.of(args));
            Processes.Result check = Processes.run(cmd);
            assertThat(check.exitCode()).as(check.output()).isEqualTo(1);
            assertThat(check.output()).contains(id.substring(0, 12))
                    .contains("a GPU container, and the agent finds no driver files on the host: not repairable")
                    .contains("no NVIDIA driver files on this host in [/usr/lib/x86_64-linux-gnu, ")
                    .contains(", " + empty + "], while 1 GPU container(s) run");

            Path test = dir.resolve("fed.test.yaml");
            Files.writeString(test, promtoolCase(before, after, files));
            Promtool.Result result = Promtool.run(dir, null, "test", "rules", test.toString());
            assertThat(result.succeeded()).as(result.output()).isTrue();
        }
    }

    /** The rules fed the agent's own values: the counter before the container, then after, and the files it found. */
    private static String promtoolCase(double before, double after, double files) {
        String labels = "{job=\"driver-alias-agent\",instance=\"gpu-1:9470\"}";
        return "rule_files:\n  - " + RepoFiles.path("k8s/alerts/driver-alias-agent.rules.yaml") + "\n"
                + "evaluation_interval: 1m\n"
                + "tests:\n"
                + "  - interval: 1m\n"
                + "    input_series:\n"
                + "      - series: 'driver_alias_host_driver_files" + labels + "'\n"
                + "        values: '" + (long) files + "x20'\n"
                + "      - series: 'driver_alias_unmatched_driver_files_total" + labels + "'\n"
                + "        values: '" + (long) before + " " + (long) after + "x19'\n"
                + "    alert_rule_test:\n"
                + "      - eval_time: 13m\n"
                + "        alertname: DriverAliasNoHostDriver\n"
                + "        exp_alerts:\n"
                + "          - exp_labels: {severity: warning, job: driver-alias-agent, instance: \"gpu-1:9470\"}\n"
                + "            exp_annotations:\n"
                + "              summary: driver-alias-agent on gpu-1:9470 finds no NVIDIA driver files on the host\n"
                + "              description: >-\n"
                + "                The agent on gpu-1:9470 has found none of the NVIDIA driver's files in the host's\n"
                + "                library directories for 10 minutes, while GPU containers run there. It can create no\n"
                + "                alias for them: the driver is installed where the agent does not look (--host-lib-dir),\n"
                + "                or not installed at all.\n"
                + "              runbook_url: https://github.com/driver-alias/driver-alias-agent/blob/main/docs/runbook.md"
                + "#driveraliasnohostdriver\n";
    }
}

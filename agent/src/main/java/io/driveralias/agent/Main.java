package io.driveralias.agent;

import io.driveralias.agent.cli.ExitCodes;
import io.driveralias.agent.cli.RootRepairCommand;
import io.driveralias.agent.config.AgentConfig;
import io.driveralias.agent.config.ConfigException;
import io.driveralias.agent.config.ConfigParser;
import java.io.PrintStream;
import java.util.List;
import java.util.Map;

/** Composition root: parse the configuration, build the command, run it. Nothing else. */
public final class Main {

    private Main() {
    }

    public static void main(String[] args) {
        System.exit(run(List.of(args), System.getenv(), System.out, System.err));
    }

    static int run(List<String> args, Map<String, String> env, PrintStream out, PrintStream err) {
        if (args.contains("--help") || args.contains("-h")) {
            out.print(ConfigParser.usage());
            return ExitCodes.HEALTHY;
        }
        AgentConfig config;
        try {
            config = ConfigParser.parse(args, env);
        } catch (ConfigException e) {
            err.println("driver-alias-agent: " + e.getMessage());
            return ExitCodes.USAGE;
        }
        if (config.root().isPresent()) {
            return new RootRepairCommand(config, out, err).run();
        }
        err.println("driver-alias-agent: '" + config.command().name().toLowerCase() + "' needs Docker: not built yet");
        return ExitCodes.USAGE;
    }
}

package io.driveralias.agent.config;

import io.driveralias.agent.config.ConfigParser.Option;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * What was given for each option, looked up as flag, then environment, then default, and the
 * command line's other words (the command, container ids). Apart from {@link ConfigParser}
 * because this precedence is the one rule every option follows, while the parser checks what
 * each option's value means.
 */
final class OptionValues {

    private final Map<String, List<String>> flags;
    private final Map<String, String> env;
    private final List<String> positional;

    private OptionValues(Map<String, List<String>> flags, Map<String, String> env, List<String> positional) {
        this.flags = flags;
        this.env = env;
        this.positional = positional;
    }

    /** Reads the command line: each {@code --option} of the table, once unless it repeats; the other words in order. */
    static OptionValues read(List<String> args, Map<String, String> env) throws ConfigException {
        Map<String, List<String>> flags = new LinkedHashMap<>();
        List<String> positional = new ArrayList<>();
        for (int i = 0; i < args.size(); i++) {
            String arg = args.get(i);
            if (!arg.startsWith("--")) {
                positional.add(arg);
                continue;
            }
            String name = arg.substring(2);
            String value = null;
            int eq = name.indexOf('=');
            if (eq >= 0) {
                value = name.substring(eq + 1);
                name = name.substring(0, eq);
            }
            String given = name;
            Option option = OptionTable.find(name).orElseThrow(
                    () -> new ConfigException("unknown option --" + given + " (--help lists them)"));
            if (value == null) {
                if (option.flag()) {
                    value = "true";
                } else if (i + 1 < args.size()) {
                    value = args.get(++i);
                } else {
                    throw new ConfigException("--" + name + " needs a value");
                }
            }
            List<String> values = flags.computeIfAbsent(name, k -> new ArrayList<>());
            if (!values.isEmpty() && !option.repeatable()) {
                throw new ConfigException("--" + name + " given twice");
            }
            values.add(value);
        }
        return new OptionValues(flags, env, positional);
    }

    /** The words that are not options: the command, then its container ids. */
    List<String> positional() {
        return positional;
    }

    Optional<String> optional(String name) {
        return explicit(name).or(() -> Optional.ofNullable(OptionTable.option(name).defaultValue()));
    }

    /** Flag or environment, without the default. */
    Optional<String> explicit(String name) {
        List<String> given = flags.get(name);
        if (given != null) {
            return Optional.of(given.getFirst());
        }
        String fromEnv = env.get(OptionTable.option(name).environmentVariable());
        return fromEnv == null || fromEnv.isBlank() ? Optional.empty() : Optional.of(fromEnv.trim());
    }

    String single(String name) {
        return optional(name).orElseThrow();
    }

    List<String> list(String name) {
        List<String> given = flags.get(name);
        if (given != null) {
            return List.copyOf(given);
        }
        String fromEnv = env.get(OptionTable.option(name).environmentVariable());
        if (fromEnv == null || fromEnv.isBlank()) {
            return List.of();
        }
        return List.of(fromEnv.trim().split("\\s*,\\s*"));
    }

    boolean bool(String name) throws ConfigException {
        String value = single(name).toLowerCase(Locale.ROOT);
        return switch (value) {
            case "true", "1", "yes", "on" -> true;
            case "false", "0", "no", "off" -> false;
            default -> throw new ConfigException("--" + name + " is true or false, got " + value);
        };
    }
}

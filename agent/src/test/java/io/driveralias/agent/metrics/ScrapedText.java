package io.driveralias.agent.metrics;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** The Prometheus text format (0.0.4) read back: the declared types and every sample. */
public record ScrapedText(Map<String, String> types, List<Sample> samples) {

    public record Sample(String name, Map<String, String> labels, double value) {
    }

    public static ScrapedText parse(String text) {
        Map<String, String> types = new LinkedHashMap<>();
        List<Sample> samples = new ArrayList<>();
        for (String line : text.split("\n")) {
            if (line.startsWith("# TYPE ")) {
                String[] parts = line.split(" ");
                types.put(parts[2], parts[3]);
            } else if (!line.isBlank() && !line.startsWith("#")) {
                samples.add(sample(line));
            }
        }
        return new ScrapedText(types, samples);
    }

    public List<Sample> samples(String name) {
        return samples.stream().filter(s -> s.name().equals(name)).toList();
    }

    /** The one sample of {@code name} whose labels include {@code labels}. */
    public Optional<Sample> sample(String name, Map<String, String> labels) {
        return samples(name).stream().filter(s -> s.labels().entrySet().containsAll(labels.entrySet())).findFirst();
    }

    public double value(String name, Map<String, String> labels) {
        return sample(name, labels).orElseThrow(() -> new AssertionError("no sample " + name + labels)).value();
    }

    private static Sample sample(String line) {
        int brace = line.indexOf('{');
        int space = line.lastIndexOf(' ');
        if (brace < 0 || brace > line.indexOf(' ')) {
            return new Sample(line.substring(0, line.indexOf(' ')), Map.of(), Double.parseDouble(line.substring(space + 1)));
        }
        Map<String, String> labels = new HashMap<>();
        int i = brace + 1;
        while (line.charAt(i) != '}') {
            int eq = line.indexOf('=', i);
            String key = line.substring(i, eq);
            StringBuilder value = new StringBuilder();
            int j = eq + 2;
            for (; line.charAt(j) != '"'; j++) {
                char c = line.charAt(j);
                if (c == '\\') {
                    char escaped = line.charAt(++j);
                    value.append(escaped == 'n' ? '\n' : escaped);
                } else {
                    value.append(c);
                }
            }
            labels.put(key, value.toString());
            i = line.charAt(j + 1) == ',' ? j + 2 : j + 1;
        }
        return new Sample(line.substring(0, brace), labels, Double.parseDouble(line.substring(space + 1)));
    }
}

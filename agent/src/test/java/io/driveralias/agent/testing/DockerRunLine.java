package io.driveralias.agent.testing;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A {@code docker run} command line as the documentation prints it, split into words the way a
 * POSIX shell would (single and double quotes, backslash escapes and line continuations; no
 * variables, globs or substitutions, which the documented lines do not use).
 */
public record DockerRunLine(List<String> words) {

    /** The one {@code docker run} line in the fenced block that follows {@code <!-- marker... -->}. */
    public static DockerRunLine fromMarkdown(String markdown, String marker) {
        Matcher m = Pattern.compile("<!-- " + Pattern.quote(marker) + "[^\\n]*-->\\s*\\n```\\w*\\n(.*?)\\n```",
                Pattern.DOTALL).matcher(markdown);
        if (!m.find()) {
            throw new AssertionError("no fenced block after <!-- " + marker + " -->");
        }
        return parse(m.group(1));
    }

    /** The first {@code docker run ...} in a systemd unit's {@code ExecStart=}. */
    public static DockerRunLine fromUnit(String unit) {
        Matcher m = Pattern.compile("(?m)^ExecStart=(\\S*docker run .*)$").matcher(unit);
        if (!m.find()) {
            throw new AssertionError("no ExecStart=... docker run in the unit");
        }
        return parse(m.group(1));
    }

    public static DockerRunLine parse(String text) {
        List<String> words = new ArrayList<>();
        StringBuilder word = new StringBuilder();
        boolean inWord = false;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c == '\\' && i + 1 < text.length()) {
                char next = text.charAt(++i);
                if (next != '\n') { // a continuation joins lines
                    word.append(next);
                    inWord = true;
                }
            } else if (c == '\'') {
                int end = text.indexOf('\'', i + 1);
                word.append(text, i + 1, end);
                i = end;
                inWord = true;
            } else if (c == '"') {
                int end = i + 1;
                while (text.charAt(end) != '"') {
                    if (text.charAt(end) == '\\') {
                        end++;
                    }
                    word.append(text.charAt(end++));
                }
                i = end;
                inWord = true;
            } else if (Character.isWhitespace(c)) {
                if (inWord) {
                    words.add(word.toString());
                    word.setLength(0);
                    inWord = false;
                }
            } else {
                word.append(c);
                inWord = true;
            }
        }
        if (inWord) {
            words.add(word.toString());
        }
        if (words.size() < 3 || !words.get(0).endsWith("docker") || !words.get(1).equals("run")) {
            throw new AssertionError("not a docker run line: " + words);
        }
        return new DockerRunLine(List.copyOf(words));
    }

    /** Options between {@code run} and the image, each with its value where it takes one. */
    public List<List<String>> options() {
        List<List<String>> options = new ArrayList<>();
        for (int i = 2; i < imageIndex(); i++) {
            String w = words.get(i);
            if (takesValue(w) && !w.contains("=")) {
                options.add(List.of(w, words.get(++i)));
            } else {
                options.add(List.of(w));
            }
        }
        return options;
    }

    public String image() {
        return words.get(imageIndex());
    }

    /** The arguments after the image: the agent's command. */
    public List<String> arguments() {
        return words.subList(imageIndex() + 1, words.size());
    }

    private int imageIndex() {
        for (int i = 2; i < words.size(); i++) {
            String w = words.get(i);
            if (!w.startsWith("-")) {
                return i;
            }
            if (takesValue(w) && !w.contains("=")) {
                i++;
            }
        }
        throw new AssertionError("no image in " + words);
    }

    /** The docker run options these lines use that take a value; a flag not known here fails. */
    private static boolean takesValue(String option) {
        String name = option.contains("=") ? option.substring(0, option.indexOf('=')) : option;
        return switch (name) {
            case "--name", "--restart", "--pid", "--user", "--cap-drop", "--cap-add", "--security-opt", "--tmpfs",
                 "--memory", "--mount", "--publish", "-p", "--env", "-e", "-v", "--volume", "--network", "--label" -> true;
            case "-d", "--detach", "--rm", "--read-only", "-it", "-i", "-t" -> false;
            default -> throw new AssertionError("docker run option " + option + ": unknown to DockerRunLine");
        };
    }
}

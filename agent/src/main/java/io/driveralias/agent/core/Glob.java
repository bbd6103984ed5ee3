package io.driveralias.agent.core;

import java.util.regex.Pattern;

/**
 * Image name globs for {@code --include-image} / {@code --exclude-image}: {@code *} matches any
 * run of characters (slashes and colons included, so {@code nvcr.io/*} covers a whole
 * registry), {@code ?} one character; everything else is literal.
 */
public final class Glob {

    private final String text;
    private final Pattern pattern;

    public Glob(String text) {
        this.text = text;
        StringBuilder regex = new StringBuilder();
        for (char c : text.toCharArray()) {
            switch (c) {
                case '*' -> regex.append(".*");
                case '?' -> regex.append('.');
                default -> regex.append(Pattern.quote(String.valueOf(c)));
            }
        }
        this.pattern = Pattern.compile(regex.toString(), Pattern.DOTALL);
    }

    public boolean matches(String value) {
        return pattern.matcher(value).matches();
    }

    @Override
    public String toString() {
        return text;
    }
}

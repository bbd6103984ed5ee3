package io.driveralias.agent.docker;

import java.time.Instant;
import java.time.LocalDate;
import java.time.YearMonth;
import java.time.format.DateTimeParseException;
import java.util.Optional;

/** Docker's times as its answers write them, read in every inspect without a formatter where they can be. */
final class DockerTime {

    /** Docker's zero time for "never started". */
    private static final String ZERO_TIME = "0001-01-01T00:00:00Z";

    private DockerTime() {
    }

    /** Docker's time ({@code StartedAt}, {@code Created}); none for Docker's zero ("never") or any text that is no time. */
    static Optional<Instant> parse(String text) {
        if (text.isEmpty() || text.equals(ZERO_TIME)) {
            return Optional.empty();
        }
        Instant fast = utc(text);
        if (fast != null) {
            return Optional.of(fast);
        }
        try {
            return Optional.of(Instant.parse(text));
        } catch (DateTimeParseException e) {
            return Optional.empty();
        }
    }

    /**
     * Docker's own shape, {@code 2024-05-02T09:14:07.345678901Z} (RFC 3339 in UTC, 0 to 9
     * fraction digits), read without a formatter: one answer in every inspect. Null for any
     * other text, which {@link Instant#parse} then reads (or refuses) as before.
     */
    private static Instant utc(String t) {
        int n = t.length();
        if (n < 20 || n > 30 || t.charAt(4) != '-' || t.charAt(7) != '-' || t.charAt(10) != 'T' || t.charAt(13) != ':'
                || t.charAt(16) != ':' || t.charAt(n - 1) != 'Z' || (n > 20 && (t.charAt(19) != '.' || n == 21))) {
            return null;
        }
        int year = digits(t, 0, 4);
        int month = digits(t, 5, 7);
        int day = digits(t, 8, 10);
        int hour = digits(t, 11, 13);
        int minute = digits(t, 14, 16);
        int second = digits(t, 17, 19);
        int fraction = n > 20 ? digits(t, 20, n - 1) : 0;
        if (year < 0 || month < 1 || month > 12 || day < 1 || day > YearMonth.of(year, month).lengthOfMonth()
                || hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59 || fraction < 0) {
            return null;
        }
        long nanos = fraction;
        for (int digitsRead = Math.max(0, n - 21); digitsRead < 9; digitsRead++) {
            nanos *= 10;
        }
        long days = LocalDate.of(year, month, day).toEpochDay();
        return Instant.ofEpochSecond(days * 86_400 + hour * 3_600L + minute * 60L + second, nanos);
    }

    /** The decimal number in {@code [from, to)}, or -1 if anything there is not an ASCII digit. */
    private static int digits(String t, int from, int to) {
        int value = 0;
        for (int i = from; i < to; i++) {
            char c = t.charAt(i);
            if (c < '0' || c > '9') {
                return -1;
            }
            value = value * 10 + (c - '0');
        }
        return value;
    }
}

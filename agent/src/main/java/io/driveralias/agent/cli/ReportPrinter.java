package io.driveralias.agent.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.driveralias.agent.core.ActionKind;
import io.driveralias.agent.core.FailureReason;
import io.driveralias.agent.repair.LinkResult;
import io.driveralias.agent.repair.LinkStatus;
import io.driveralias.agent.repair.LoaderCache;
import io.driveralias.agent.repair.Problem;
import io.driveralias.agent.repair.RepairReport;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Prints reports for people (one line per link) or for machines (JSON). */
public final class ReportPrinter {

    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    private final PrintStream out;
    private final boolean checkOnly;

    /** {@code checkOnly}: a planned link is reported as "missing" rather than "would create". */
    public ReportPrinter(PrintStream out, boolean checkOnly) {
        this.out = out;
        this.checkOnly = checkOnly;
    }

    public void text(RepairReport report) {
        for (LinkResult link : report.links()) {
            out.println(line(link));
        }
        for (Problem p : report.problems()) {
            out.printf("%-13s %s: %s: %s%n", "problem", p.path(), p.reason().label(), p.message());
        }
        cacheLine(report.loaderCache()).ifPresent(out::println);
        out.println(summary(report));
    }

    private String line(LinkResult link) {
        var a = link.action();
        String arrow = a.path() + " -> " + a.target();
        return switch (link.status()) {
            case APPLIED -> a.kind() == ActionKind.REPLACE
                    ? String.format("%-13s %s (was: %s)", "replaced", arrow, a.detail())
                    : String.format("%-13s %s", "created", arrow);
            case PLANNED -> String.format("%-13s %s (%s)",
                    checkOnly ? "missing" : a.kind() == ActionKind.REPLACE ? "would replace" : "would create",
                    arrow, a.detail());
            case UNCHANGED -> a.kind() == ActionKind.SKIP
                    ? String.format("%-13s %s (%s)", "no alias", a.path(), a.detail())
                    : String.format("%-13s %s", "ok", arrow);
            case FAILED -> String.format("%-13s %s: %s: %s",
                    link.reason() == FailureReason.CONFLICT ? "conflict" : "failed",
                    arrow, link.reason().label(), link.message());
        };
    }

    private java.util.Optional<String> cacheLine(LoaderCache.Status status) {
        String what = switch (status) {
            case NO_CACHE -> "none in this root (the loader searches its default directories)";
            case CURRENT -> "lists every alias";
            case UPDATED -> "aliases added";
            case WOULD_UPDATE -> checkOnly ? "aliases missing" : "would add the aliases";
            case NOT_CHECKED, FAILED -> null;
        };
        return java.util.Optional.ofNullable(what).map(w -> String.format("%-13s %s: %s", "ld.so.cache",
                "/etc/ld.so.cache", w));
    }

    static String summary(RepairReport report) {
        if (!report.hasDriver()) {
            return report.problems().isEmpty() ? "no driver files found" : "no usable driver files found";
        }
        long ok = report.links().stream().filter(l -> l.status() == LinkStatus.UNCHANGED
                && l.action().kind() == ActionKind.KEEP).count();
        long planned = report.links().stream().filter(l -> l.status() == LinkStatus.PLANNED).count();
        long failed = report.links().stream().filter(l -> l.status() == LinkStatus.FAILED).count();
        return String.format("driver %s: %d created, %d replaced, %d ok, %d %s, %d failed, %d problems",
                report.driverVersion().orElseThrow(), report.count(ActionKind.CREATE), report.count(ActionKind.REPLACE),
                ok, planned, "missing", failed, report.problems().size());
    }

    /** The report as a JSON-ready map; {@code extra} (container id, name, ...) comes first. */
    public static Map<String, Object> toMap(RepairReport report, Map<String, Object> extra) {
        Map<String, Object> m = new LinkedHashMap<>(extra);
        m.put("driverVersion", report.driverVersion().orElse(null));
        m.put("outcome", report.outcome().label());
        m.put("healthy", report.healthy());
        m.put("loaderCache", report.loaderCache().name().toLowerCase());
        List<Map<String, Object>> links = new ArrayList<>();
        for (LinkResult l : report.links()) {
            Map<String, Object> link = new LinkedHashMap<>();
            link.put("path", l.action().path());
            link.put("target", l.action().target());
            link.put("action", l.action().kind().name().toLowerCase());
            link.put("status", l.status().name().toLowerCase());
            link.put("detail", l.action().detail());
            if (l.reason() != null) {
                link.put("reason", l.reason().label());
                link.put("message", l.message());
            }
            links.add(link);
        }
        m.put("links", links);
        List<Map<String, Object>> problems = new ArrayList<>();
        for (Problem p : report.problems()) {
            problems.add(Map.of("path", p.path(), "reason", p.reason().label(), "message", p.message()));
        }
        m.put("problems", problems);
        return m;
    }

    public void json(Object value) {
        try {
            out.println(JSON.writeValueAsString(value));
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalStateException("cannot write JSON", e);
        }
    }
}

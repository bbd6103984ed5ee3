package io.driveralias.agent.kube;

import io.driveralias.agent.metrics.RepoFiles;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * An overlay as a page of the documentation prints it, laid out as an operator would: each of its
 * files is a fenced block after {@code <!-- overlay NAME: FILE -->}, written into
 * {@code my-overlay/}, next to a copy of this checkout's {@code k8s/} in
 * {@code driver-alias-agent/k8s/}. The overlay's first {@code resources:} entry names a variant of that copy;
 * the test picks which one, and its patches name the objects in that variant's namespace, as the
 * page's reader would write them.
 */
final class DocumentedOverlay {

    private static final Pattern BASE = Pattern.compile("(?m)^(\\s+- \\.\\./driver-alias-agent/k8s/)\\S+");

    private DocumentedOverlay() {
    }

    /** Writes overlay {@code name} of {@code doc} on top of {@code variant}; returns its directory. */
    static Path write(Path tmp, String doc, String name, String variant) {
        Path checkout = copyOfK8s(tmp);
        Path overlay = tmp.resolve("my-overlay");
        Matcher block = Pattern.compile("<!-- overlay " + Pattern.quote(name) + ": (\\S+) -->\\s*\\n```\\w*\\n(.*?)\\n```",
                Pattern.DOTALL).matcher(RepoFiles.read(doc));
        int files = 0;
        try {
            Files.createDirectories(overlay);
            while (block.find()) {
                String text = block.group(2) + "\n";
                if (block.group(1).equals("kustomization.yaml")) {
                    Matcher base = BASE.matcher(text);
                    if (!base.find()) {
                        throw new AssertionError(doc + ": overlay " + name + " has no ../driver-alias-agent/k8s/... base");
                    }
                    text = base.replaceFirst(Matcher.quoteReplacement(base.group(1) + variant));
                } else {
                    text = text.replace("namespace: driver-alias\n", "namespace: " + Manifests.namespaceOf(variant) + "\n");
                }
                Files.writeString(overlay.resolve(block.group(1)), text);
                files++;
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        if (files == 0 || !Files.exists(overlay.resolve("kustomization.yaml"))) {
            throw new AssertionError(doc + " has no <!-- overlay " + name + ": kustomization.yaml --> block");
        }
        return overlay;
    }

    /**
     * The fenced block after {@code <!-- patch NAME -->} in {@code doc}, its objects in
     * {@code variant}'s namespace: a file the page tells the reader to add to an overlay.
     */
    static String patch(String doc, String name, String variant) {
        return block(doc, "patch", name).replace("namespace: driver-alias\n",
                "namespace: " + Manifests.namespaceOf(variant) + "\n") + "\n";
    }

    /**
     * Writes the page's {@code <!-- patch NAME -->} into {@code overlay} and lists it under the
     * overlay's {@code patches:}, as the page tells its reader to.
     */
    static void addPatch(Path overlay, String doc, String name, String variant) {
        try {
            Files.writeString(overlay.resolve(name), patch(doc, name, variant));
            Path kustomization = overlay.resolve("kustomization.yaml");
            String text = Files.readString(kustomization);
            if (!text.contains("\npatches:\n")) {
                throw new AssertionError(doc + ": the overlay in " + overlay + " has no patches: to add " + name + " to");
            }
            Files.writeString(kustomization, text.replace("\npatches:\n", "\npatches:\n  - path: " + name + "\n"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The fenced block after {@code <!-- values NAME -->} in {@code doc}: the Helm values the page gives. */
    static String values(String doc, String name) {
        return block(doc, "values", name) + "\n";
    }

    private static String block(String doc, String kind, String name) {
        Matcher block = Pattern.compile("<!-- " + kind + " " + Pattern.quote(name) + " -->\\s*\\n```\\w*\\n(.*?)\\n```",
                Pattern.DOTALL).matcher(RepoFiles.read(doc));
        if (!block.find()) {
            throw new AssertionError(doc + " has no <!-- " + kind + " " + name + " --> block");
        }
        return block.group(1);
    }

    /** {@code tmp/driver-alias-agent/k8s}, a copy of the checkout's, to change or build on. */
    static Path copyOfK8s(Path tmp) {
        return copy(Manifests.directory(), tmp.resolve("driver-alias-agent/k8s"));
    }

    /** A directory of the checkout copied to {@code target}, unless a copy is there already. */
    static Path copy(Path source, Path target) {
        if (Files.isDirectory(target)) {
            return target;
        }
        try (Stream<Path> files = Files.walk(source)) {
            for (Path file : files.toList()) {
                Path copy = target.resolve(source.relativize(file).toString());
                if (Files.isDirectory(file)) {
                    Files.createDirectories(copy);
                } else {
                    Files.copy(file, copy, StandardCopyOption.COPY_ATTRIBUTES);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return target;
    }
}

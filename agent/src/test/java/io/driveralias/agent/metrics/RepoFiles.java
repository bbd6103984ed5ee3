package io.driveralias.agent.metrics;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/** Files of the repository (manifests, dashboard, README), wherever the build runs from. */
public final class RepoFiles {

    private RepoFiles() {
    }

    /** The repository's top directory: the first one up from the working directory with k8s/ and agent/. */
    public static Path root() {
        Path dir = Path.of("").toAbsolutePath();
        for (Path d = dir; d != null; d = d.getParent()) {
            if (Files.isDirectory(d.resolve("k8s")) && Files.isDirectory(d.resolve("agent"))) {
                return d;
            }
        }
        throw new IllegalStateException("no repository root (with k8s/ and agent/) above " + dir);
    }

    public static Path path(String relative) {
        return root().resolve(relative);
    }

    /** The parent pom's {@code <version>}: the release every artifact (jar, image, manifests) carries. */
    public static String projectVersion() {
        try {
            var factory = javax.xml.parsers.DocumentBuilderFactory.newInstance();
            factory.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
            var project = factory.newDocumentBuilder().parse(path("pom.xml").toFile()).getDocumentElement();
            for (var n = project.getFirstChild(); n != null; n = n.getNextSibling()) {
                if (n.getNodeName().equals("version")) {
                    return n.getTextContent().trim();
                }
            }
            throw new IllegalStateException("no <version> in pom.xml");
        } catch (javax.xml.parsers.ParserConfigurationException | org.xml.sax.SAXException e) {
            throw new IllegalStateException(e);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public static String read(String relative) {
        try {
            return Files.readString(path(relative), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}

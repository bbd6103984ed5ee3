package io.driveralias.agent.build;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.lang.classfile.ClassFile;
import java.lang.classfile.ClassModel;
import java.lang.classfile.constantpool.ClassEntry;
import java.lang.classfile.constantpool.PoolEntry;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The agent's packages depend on each other in one direction only: the core below, the
 * adapters (docker, kube, metrics) above the ports they implement, the composition root on
 * top. Read from the compiled classes' constant pools, so every reference counts.
 */
class PackageCyclesTest {

    private static final String ROOT = "io/driveralias/agent";

    @Test
    void thereAreNoPackageCycles() throws IOException {
        Map<String, Set<String>> graph = dependencies(Path.of("target/classes"));
        assertThat(graph).as("compiled classes found").containsKeys("core", "live", "docker");

        assertThat(cycles(graph)).as("package cycles").isEmpty();
    }

    @Test
    void theCoreDependsOnNoOtherPackage() throws IOException {
        assertThat(dependencies(Path.of("target/classes")).get("core")).isEmpty();
    }

    /** Package (relative to the agent's root) to the packages its classes refer to. */
    static Map<String, Set<String>> dependencies(Path classes) throws IOException {
        Map<String, Set<String>> graph = new TreeMap<>();
        try (Stream<Path> files = Files.walk(classes.resolve(ROOT))) {
            for (Path file : files.filter(f -> f.toString().endsWith(".class")).toList()) {
                ClassModel model = ClassFile.of().parse(file);
                String from = packageOf(model.thisClass().asInternalName());
                Set<String> to = graph.computeIfAbsent(from, k -> new TreeSet<>());
                for (PoolEntry entry : model.constantPool()) {
                    if (entry instanceof ClassEntry c) {
                        String name = c.asInternalName().replaceFirst("^\\[*L?", "");
                        if (name.startsWith(ROOT + "/")) {
                            String target = packageOf(name);
                            if (!target.equals(from)) {
                                to.add(target);
                            }
                        }
                    }
                }
            }
        }
        return graph;
    }

    private static String packageOf(String internalName) {
        String rest = internalName.substring(ROOT.length());
        int slash = rest.lastIndexOf('/');
        return slash <= 0 ? "(root)" : rest.substring(1, slash).replace('/', '.');
    }

    /** The strongly connected components of more than one package (Tarjan). */
    static List<Set<String>> cycles(Map<String, Set<String>> graph) {
        Map<String, Integer> index = new HashMap<>();
        Map<String, Integer> low = new HashMap<>();
        Deque<String> stack = new ArrayDeque<>();
        Set<String> onStack = new TreeSet<>();
        List<Set<String>> found = new ArrayList<>();
        int[] counter = {0};
        for (String node : graph.keySet()) {
            if (!index.containsKey(node)) {
                connect(node, graph, index, low, stack, onStack, found, counter);
            }
        }
        return found;
    }

    private static void connect(String node, Map<String, Set<String>> graph, Map<String, Integer> index,
                                Map<String, Integer> low, Deque<String> stack, Set<String> onStack,
                                List<Set<String>> found, int[] counter) {
        index.put(node, counter[0]);
        low.put(node, counter[0]++);
        stack.push(node);
        onStack.add(node);
        for (String next : graph.getOrDefault(node, Set.of())) {
            if (!index.containsKey(next)) {
                connect(next, graph, index, low, stack, onStack, found, counter);
                low.put(node, Math.min(low.get(node), low.get(next)));
            } else if (onStack.contains(next)) {
                low.put(node, Math.min(low.get(node), index.get(next)));
            }
        }
        if (low.get(node).equals(index.get(node))) {
            Set<String> component = new TreeSet<>();
            String member;
            do {
                member = stack.pop();
                onStack.remove(member);
                component.add(member);
            } while (!member.equals(node));
            if (component.size() > 1) {
                found.add(component);
            }
        }
    }

    @Test
    void theCheckFindsACycleWhenThereIsOne() {
        Map<String, Set<String>> graph = Map.of("a", Set.of("b"), "b", Set.of("c"), "c", Set.of("a"), "d", Set.of("a"));
        assertThat(cycles(new TreeMap<>(graph))).containsExactly(new TreeSet<>(Set.of("a", "b", "c")));
    }
}

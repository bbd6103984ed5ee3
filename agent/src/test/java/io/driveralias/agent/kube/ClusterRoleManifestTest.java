package io.driveralias.agent.kube;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.rbac.ClusterRole;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.FieldSource;

/**
 * The agent may write Events and nothing else: pods come from Docker labels, the node from the
 * downward API. In every install, kustomize's and the chart's.
 */
class ClusterRoleManifestTest {

    static final List<String> INSTALLS = Manifests.INSTALLS;

    @ParameterizedTest
    @FieldSource("INSTALLS")
    void onlyCreateAndPatchOnCoreEvents(String install) throws Exception {
        ClusterRole role = Manifests.only(Manifests.render(install), "ClusterRole", ClusterRole.class);

        assertThat(role.getAggregationRule()).isNull();
        assertThat(role.getRules()).singleElement().satisfies(rule -> {
            assertThat(rule.getApiGroups()).containsExactly("");
            assertThat(rule.getResources()).containsExactly("events");
            assertThat(rule.getVerbs()).containsExactlyInAnyOrder("create", "patch");
            assertThat(rule.getResourceNames()).isNullOrEmpty();
            assertThat(rule.getNonResourceURLs()).isNullOrEmpty();
        });
    }
}

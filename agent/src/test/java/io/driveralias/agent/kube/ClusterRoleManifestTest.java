package io.driveralias.agent.kube;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.rbac.ClusterRole;
import org.junit.jupiter.api.Test;

/** The agent may write Events and nothing else: pods come from Docker labels, the node from the downward API. */
class ClusterRoleManifestTest {

    @Test
    void onlyCreateAndPatchOnCoreEvents() throws Exception {
        ClusterRole role = Manifests.only(Manifests.render("base"), "ClusterRole", ClusterRole.class);

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

{{/*
Every object of this chart is one of k8s/'s files, the kustomize install's own objects: Helm reads
nothing outside the chart's directory, so files/k8s holds copies of them, byte for byte
(k8s/alerts/sync-manifests.sh makes them; HelmChartTest fails while one differs). The templates
load a file and change only what a value asks for, so that the DaemonSet, the rules and the
dashboard are written once, in k8s/.

The names stay k8s/'s whatever the release is called: one agent per node is all a cluster can
use, and a second release then fails at install (its ClusterRole belongs to the first) instead
of running two agents on every GPU node.
*/}}

{{/*
The labels Helm's tools look for, on every object's metadata; never on the pod template or a
selector, so that a new chart version rolls no pod by itself.
*/}}
{{- define "driver-alias-agent.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name | trunc 63 | quote }}
app.kubernetes.io/version: {{ .Chart.AppVersion | trunc 63 | quote }}
{{- end -}}

{{/*
One file of k8s/ (its path under files/k8s) as YAML: in the release's namespace if it is a
namespaced object, with Helm's labels added. Call as (list $ "base/040-daemonset.yaml"), and
parse it back with fromYaml to change it.
*/}}
{{- define "driver-alias-agent.object" -}}
{{- $root := index . 0 -}}
{{- $object := include "driver-alias-agent.file" . | fromYaml -}}
{{- if hasKey $object.metadata "namespace" -}}
{{- $_ := set $object.metadata "namespace" $root.Release.Namespace -}}
{{- end -}}
{{- $labels := include "driver-alias-agent.labels" $root | fromYaml -}}
{{- $_ := set $object.metadata "labels" (merge $labels ($object.metadata.labels | default dict)) -}}
{{- toYaml $object -}}
{{- end -}}

{{/* A file of files/k8s as it is, parsed and written back; fails on a missing or broken copy. */}}
{{- define "driver-alias-agent.file" -}}
{{- $path := printf "files/k8s/%s" (index . 1) -}}
{{- $object := (index . 0).Files.Get $path | fromYaml -}}
{{- if or (not $object) (hasKey $object "Error") (not (hasKey $object "metadata")) -}}
{{- fail (printf "%s is missing or not one object (%v): run k8s/alerts/sync-manifests.sh" $path (get $object "Error" | default "empty")) -}}
{{- end -}}
{{- toYaml $object -}}
{{- end -}}

{{/*
A node path as the agent sees it: the DaemonSet mounts the node's /run at /host/run (/var/run is
/run on every systemd node) and its /var/lib at /var/lib.
*/}}
{{- define "driver-alias-agent.podPath" -}}
{{- $path := clean . -}}
{{- if hasPrefix "/var/run/" $path -}}
{{- $path = trimPrefix "/var" $path -}}
{{- end -}}
{{- if hasPrefix "/run/" $path -}}
/host{{ $path }}
{{- else if hasPrefix "/var/lib/" $path -}}
{{ $path }}
{{- else -}}
{{- fail (printf "%s is not under /run, /var/run or /var/lib, the node's directories the DaemonSet mounts" .) -}}
{{- end -}}
{{- end -}}

{{/* The pods' priority class: the value, else the shipped DaemonSet's. */}}
{{- define "driver-alias-agent.priorityClassName" -}}
{{- $daemonSet := include "driver-alias-agent.file" (list . "base/040-daemonset.yaml") | fromYaml -}}
{{- .Values.priorityClassName | default $daemonSet.spec.template.spec.priorityClassName -}}
{{- end -}}

{{/* Whether a web configuration is on: the chart's own Secret or one of yours. */}}
{{- define "driver-alias-agent.webConfigSecret" -}}
{{- $web := .Values.webConfig -}}
{{- if and $web.config $web.existingSecret -}}
{{- fail "webConfig: set config or existingSecret, not both" -}}
{{- end -}}
{{- if $web.existingSecret -}}
{{ $web.existingSecret }}
{{- else if $web.config -}}
driver-alias-agent-web-config
{{- end -}}
{{- end -}}

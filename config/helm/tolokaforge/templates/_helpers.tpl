{{/* The image reference of the manager and of every runner/dbservice pod. */}}
{{- define "tolokaforge.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/*
A ClusterRole kept in config/rbac (files/ links there, so `make manifests`
changes the chart too), named with the release's prefix.
*/}}
{{- define "tolokaforge.clusterRole" -}}
{{- $role := .root.Files.Get .file | fromYaml -}}
{{- $name := trimPrefix "tolokaforge-" $role.metadata.name -}}
{{- $_ := set $role.metadata "name" (printf "%s-%s" .root.Release.Name $name) -}}
{{ toYaml $role }}
{{- end -}}

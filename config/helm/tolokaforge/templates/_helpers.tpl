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

{{/* The Secret holding the runners' scraper token (key "token"). */}}
{{- define "tolokaforge.metricsReaderSecret" -}}
{{ .Values.metrics.runners.existingSecret | default (printf "%s-metrics-reader" .Release.Name) }}
{{- end -}}

{{/* A label map as a k=v,k=v selector flag value. */}}
{{- define "tolokaforge.labelSelector" -}}
{{- $pairs := list -}}
{{- range $k, $v := . -}}
{{- $pairs = append $pairs (printf "%s=%s" $k $v) -}}
{{- end -}}
{{ join "," $pairs }}
{{- end -}}

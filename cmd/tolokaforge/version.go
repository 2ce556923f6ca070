package main

// version is the release version: the image tag (`make image`), the chart's
// appVersion and `tolokaforge version` all come from this line (hack/image
// reads it). A build may still override it with -ldflags "-X main.version=...".
var version = "v0.1.0"

package main

// client-go's auth-provider plugins, linked as kubectl links them (cmd/kubectl/kubectl.go
// imports this package "to initialize client auth plugins"): a kubeconfig user with
// `auth-provider: oidc` works here as it does with kubectl, and one naming the removed azure or
// gcp providers gets client-go's message saying what replaced them (kubelogin,
// gke-gcloud-auth-plugin) instead of "no Auth Provider found". exec plugins need no import.
import _ "k8s.io/client-go/plugin/pkg/client/auth"

//go:build tools

// Package main pins the dependencies the helpers build on until each is imported for real.
package main

import (
	_ "github.com/coredns/caddy/caddyfile"
	_ "github.com/fatih/color"
	_ "github.com/miekg/dns"
	_ "github.com/spf13/cobra"
	_ "github.com/stretchr/testify/require"
	_ "k8s.io/cli-runtime/pkg/genericclioptions"
	_ "k8s.io/cli-runtime/pkg/genericiooptions"
	_ "k8s.io/client-go/kubernetes/fake"
	_ "k8s.io/client-go/dynamic/fake"
	_ "k8s.io/client-go/tools/remotecommand"
	_ "k8s.io/kubectl/pkg/cmd/util"
	_ "sigs.k8s.io/yaml"
)
